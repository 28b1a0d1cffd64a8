-- Host helpers for the price providers (providers/azure-prices.lua,
-- aws-prices.lua, gcp-prices.lua), handed to them as ctx.api.prices: which
-- backends to price, the on-disk cache with its rules, and fetching many
-- paged answers at once with retries.  docs/pricing.md says what users see.
--
--   prices.targets(backends, cloud, how) -> { {key, instance_type, region, names, attrs}, ... }
--       the backends whose attributes carry cloud = CLOUD, instance_type and
--       region (strings), one target per (instance_type, region), but for
--       those whose how.fills attribute (price_per_hour ...) a provider other
--       than how.by gave already (a user's own price stands); how.want(b)
--       may skip more
--   prices.book(provider, options) -> book      (options: ctx.options)
--       book:get(key, fresh_for) -> entry | nil   entry = {value, fetched, age, fresh}
--       book:put(key, value) -> entry              (cached; a write failure is a note)
--       book:fallback(entry, why) -> entry | nil   a stale entry when a fetch
--                                                  failed, with a note giving its age
--       book:note(text [, run]), book.notes (what to tell the user; run: about
--       the whole run), book.offline, book.ttl, book.spot_ttl
--   prices.fetch(jobs, opts)   every job's request at once (http.request_many),
--       its next pages as they come, retrying throttling and server errors:
--       job = { request = {...} } -> job.value (done) | job.error (message)
--       opts.page(job, resp) -> "done", value | "next", request | nil, message
--       opts.error_of(resp) -> type, message   (an answer that is not 200)
--       opts.retryable(resp, type) -> bool     (besides 429 and 5xx)
--       opts.sign(request, job) -> request     (called for every attempt)
--       opts.redact(text) -> text              (before a message leaves)
--       opts.attempts (3), opts.backoff (0.2 s), opts.timeout (10 s),
--       opts.max_pages (100), opts.max_body (32 MiB), opts.total (the whole
--       fetch, pages and retries, ends by then: 60 s, or six times
--       --request-timeout), opts.options (ctx.options: --request-timeout
--       also caps each call and the waits between retries)
--
-- Rules the providers share (and the specs hold them to):
--   * a fresh cached price is used without asking; --offline uses any cached
--     price (saying how old when it is past its TTL) and never the network;
--   * when a fetch fails a cached price of any age is used, with a note
--     giving its age; without one the backend gets no price and a note;
--   * a cache file that cannot be read is a note, never an error;
--   * a 429 or 5xx is retried (at most opts.attempts calls), after the
--     server's Retry-After (or x-ms-ratelimit-*-retry-after) when it gives
--     one, capped at 5 s; the total wait stays within --request-timeout
--     when given.
local price_cache = require "fluence.price_cache"
local sys = require "fluence.sys"

local M = {}

M.MAX_WAIT = 5                       -- seconds, one retry's wait at most
M.TOTAL = 60                         -- seconds, a whole fetch (pages, retries) at most,
M.TOTAL_TIMEOUTS = 6                 -- or six times --request-timeout when given

local function str(v) return type(v) == "string" and v ~= "" and v or nil end

function M.targets(backends, cloud, how)
  how = how or {}
  local out, by = {}, {}
  for _, b in ipairs(backends or {}) do
    local a = b.attrs or {}
    local c, it, region = str(a.cloud), str(a.instance_type), str(a.region)
    local given = how.fills and a[how.fills] ~= nil and (b.source or {})[how.fills] ~= how.by
    if c and c:lower() == cloud and it and region and not given and (not how.want or how.want(b)) then
      local key = it .. "@" .. region
      local t = by[key]
      if not t then
        t = { key = key, instance_type = it, region = region, names = {}, attrs = a }
        by[key] = t
        out[#out + 1] = t
      end
      t.names[#t.names + 1] = b.name
    end
  end
  return out
end

-- Plain data only (numbers, strings, booleans, tables of them, 6 deep): what
-- a sandboxed provider hands the cache is copied raw, never through its
-- metamethods.
local function plain(v, depth)
  local t = type(v)
  if t == "number" then return v == v and v > -math.huge and v < math.huge and v or nil end
  if t == "string" or t == "boolean" then return v end
  if t ~= "table" or depth > 6 then return nil end
  local out = {}
  for k, x in next, v do
    if type(k) == "string" or math.type(k) == "integer" then out[k] = plain(x, depth + 1) end
  end
  return out
end

local Book = {}
Book.__index = Book

function M.book(provider, options)
  options = options or {}
  local ttl, spot_ttl = price_cache.ttl()
  return setmetatable({ provider = provider, offline = options.offline and true or false,
                        ttl = ttl, spot_ttl = spot_ttl, dir = price_cache.dir(), notes = {},
                        said = {} }, Book)
end

-- run: a fact about the whole run (no credentials, what a price leaves
-- out), said once on stderr rather than after every object
function Book:note(text, run)
  if not self.said[text] then
    self.said[text] = true
    text = self.provider .. ": " .. text
    self.notes[#self.notes + 1] = run and { text = text, run = true } or text
  end
end

function Book:get(key, fresh_for)
  if not self.dir then return nil end
  local e, why = price_cache.get(self.dir, self.provider, key, sys.now())
  if why then self:note(why, true) end
  if e then e.fresh = e.age < (fresh_for or self.ttl) end
  return e
end

function Book:put(key, value)
  local now = math.floor(sys.now())          -- whole seconds: an age, not a timing
  value = plain(value, 1) or {}
  if self.dir then
    local ok, err = price_cache.put(self.dir, self.provider, key, value, now)
    if not ok then self:note(("cannot write the price cache (%s); prices will be fetched again"):format(err), true) end
  end
  return { value = value, fetched = now, age = 0, fresh = true }
end

-- The entry to use when a fetch failed (why) or --offline left it stale.
function Book:fallback(entry, what, why)
  local cost = require "fluence.cost"
  if entry then
    self:note(("%s: using the cached price, %s old (%s)"):format(what, cost.age(entry.age), why))
    return entry
  end
  self:note(("%s: no price (%s)"):format(what, why))
  return nil
end

-- One retry's wait: the server's (Retry-After and the like), else nothing
-- (the caller's backoff decides).
local function server_wait(resp)
  local h = resp.headers or {}
  local best
  for k, v in pairs(h) do
    if k == "retry-after" or (k:match("^x%-ms%-ratelimit%-.*retry%-after$")) then
      local n = tonumber(v)
      if n and n >= 0 and (not best or n > best) then best = n end
    end
  end
  return best
end

local function one_line(s, redact)
  s = tostring(s or ""):match("^[^\r\n]*")
  if #s > 240 then s = s:sub(1, 240) .. "..." end
  if redact then s = redact(s) end
  return s
end

-- --request-timeout in seconds, or nil when not given (read by the retry
-- policy's own parser, not through the Kubernetes client: a price fetch
-- need not load it)
local function request_timeout(options)
  local v = options and options["request-timeout"]
  if v == nil then return nil end
  return (require("fluence.retry").parse_timeout(v))
end

-- http: { request_many = fn(reqs, opts) }, sleep(attempt, base, cap, at_least)
function M.fetcher(http, sleep)
  return function(jobs, opts)
    local limit = request_timeout(opts.options)
    local attempts = math.max(1, math.floor(opts.attempts or 3))
    local timeout = opts.timeout or 10
    if limit and limit > 0 then timeout = math.min(timeout, limit) end
    local max_pages = opts.max_pages or 100
    local redact = opts.redact
    local waited, budget = 0, (limit and limit > 0) and limit or math.huge
    -- the whole fetch, every page and retry, ends by a deadline: a server
    -- answering each of 100 pages just before the timeout must not hold a
    -- selection for 1000 s
    local total = opts.total or (limit and limit > 0 and limit * M.TOTAL_TIMEOUTS) or M.TOTAL
    local deadline = sys.monotonic() + total
    local pcall_ = require("fluence.sandbox").pcall
    local pending = {}
    for _, j in ipairs(jobs) do
      j.pages, j.tries = 0, 0
      pending[#pending + 1] = j
    end
    local round = 0
    while #pending > 0 do
      round = round + 1
      local left = deadline - sys.monotonic()
      if left <= 0 then
        for _, j in ipairs(pending) do
          j.error = ("gave up after %s s (%d pages read)"):format(total, j.pages)
        end
        break
      end
      local reqs, sending = {}, {}
      for _, j in ipairs(pending) do
        local r = {}
        for k, v in next, j.request do r[k] = v end
        r.timeout = math.min(r.timeout or timeout, left)
        r.connect_timeout = math.min(r.connect_timeout or 5, r.timeout)
        r.max_body = r.max_body or opts.max_body or 32 * 1024 * 1024
        local ok, signed = true, r
        if opts.sign then ok, signed = pcall_(opts.sign, r, j) end
        if ok and type(signed) == "table" then
          reqs[#reqs + 1] = signed
          sending[#sending + 1] = j
        else
          j.error = "cannot sign the request: " .. one_line(signed, redact)
        end
      end
      pending = sending
      local resps = #reqs > 0 and http.request_many(reqs, { max_parallel = math.min(#reqs, 16) }) or {}
      local again, wait = {}, 0
      for i, j in ipairs(pending) do
        local r = resps[i] or { error = "no answer" }
        j.tries = j.tries + 1
        local retry, message = false, nil
        if r.error and sys.monotonic() >= deadline - 0.01 then
          message = ("gave up after %s s (%d pages read)"):format(total, j.pages)
        elseif r.error then
          message = "request failed: " .. one_line(r.error, redact)
          retry = not tostring(r.error):lower():find("timed? ?out")
        elseif r.status == 200 then
          local ok, what, v = require("fluence.sandbox").pcall(opts.page, j, r)
          if not ok then
            message = one_line(what, redact)
          elseif what == "done" then
            j.value = v
          elseif what == "next" then
            j.pages = j.pages + 1
            if j.pages >= max_pages then
              message = ("more than %d pages: stopped"):format(max_pages)
            else
              j.request, j.tries = v, 0
              again[#again + 1] = j
            end
          else
            message = one_line(v or "unreadable answer", redact)
          end
        else
          local ok, etype, msg = pcall_(opts.error_of, r)
          if not ok then etype, msg = "Error", nil end
          message = ("%s: %s (HTTP %d)"):format(one_line(etype, redact), one_line(msg or "no message", redact),
                                               r.status)
          retry = r.status == 429 or r.status >= 500 or (opts.retryable and opts.retryable(r, etype)) or false
          local sw = server_wait(r)
          if retry and sw and sw > wait then wait = sw end
        end
        if message then
          if retry and j.tries < attempts then
            again[#again + 1] = j
          else
            j.error = message .. (j.tries > 1 and (" (after %d attempts)"):format(j.tries) or "")
          end
        end
      end
      pending = again
      local retrying = false
      for _, j in ipairs(pending) do if j.tries > 0 then retrying = true end end
      if retrying then
        wait = math.min(wait, M.MAX_WAIT, math.max(0, budget - waited))
        if waited >= budget then
          for _, j in ipairs(pending) do
            j.error = j.error or "gave up: --request-timeout spent waiting to retry"
          end
          break
        end
        waited = waited + (sleep(round, opts.backoff or 0.2, M.MAX_WAIT, wait) or 0)
      end
    end
  end
end

return M
