-- The API a provider plugin receives as ctx.api: decoding, HTTP, environment,
-- files, logging, and (when available) the cluster's offerings and AWS.
-- Providers run sandboxed; this table is all they can reach, so everything
-- here must be safe to hand to a user's script.
--
--   api.yaml.decode(text, name) / api.yaml.decode_all / api.json.decode / api.json.encode
--   api.catalog.decode(text, name) -> backend records of an attribute file in
--                        the Go client's format (lua/fluence/catalog.lua)
--   api.catalog.latest({ records, ... }) -> one record per name, the last
--                        given, where the name first appeared
--   api.http.request(req) / api.http.request_many(reqs, opts)     (see core/http.c)
--   api.http.url_shown(url)  -- url without userinfo, query or fragment, for
--                               a message (passwords and tokens stay out)
--   api.http.budget() -> b   -- the time of one request with its retries:
--                               --request-timeout (lua/fluence/retry.lua,
--                               the retry policy of fluence's own requests):
--                               b:left(), b:attempt(limit), b:gave_up(...)
--   api.env(name) -> string | nil
--   api.locate(name, text, line, col, msg) -> "name:line:col: msg" + source line + caret
--   api.read_file(path [, {regular = true}]) -> text | nil, err  (sys.read_file
--                        within the 64 MiB of any file; regular: a regular
--                        file only, never waited on, as for credentials)
--   api.now() -> seconds; api.monotonic() -> seconds
--   api.log(fmt, ...)    -- stderr, only with -v (never log secrets); -vv also
--                           shows every HTTP request's method, URL without
--                           query, status and time
--   api.warn(fmt, ...)   -- stderr, always
--   api.cluster.offerings() -> offerings | nil, err   (set by the selection; nil offline)
--   api.aws              -- fluence.aws (credentials chain, SigV4) when built in
--   api.cost             -- the cost model's units and formulas (lua/fluence/cost.lua)
--   api.prices           -- for price providers: targets, the price cache, paged
--                           fetches with retries (lua/fluence/prices.lua)
--   api.xml              -- a bounded XML reader (lua/fluence/xml.lua)
--
-- new{ overrides = {http =, env =, read_file =, aws = ...} } replaces those
-- fields: fluence.testing stands in for the network, the environment and
-- files there, so a provider under test runs its real code path.
--
-- Waiting on the network (api.http.*, api.cluster.offerings, api.aws.backoff)
-- does not count against the plugin's time limit (fluence.timelimit): those
-- waits have their own timeouts, and a provider asking a slow cloud API is
-- not a runaway.
local sys = require "fluence.sys"
-- read-only views (core/readonly.c): providers cannot replace what other
-- providers use
local sandbox = require "fluence.sandbox"
local readonly = sandbox.readonly

local M = {}

-- f, with the plugin's clock stopped while it runs.  A message f raises
-- without a place (a C check: "http request: timeout must be ...") gets the
-- plugin's line that called it.
local timelimit = require "fluence.timelimit"
local function waiting(f)
  return function(...)
    timelimit.pause()
    local r = table.pack(pcall(f, ...))
    timelimit.resume()
    if not r[1] then
      local e = r[2]
      if type(e) == "string" and not e:match("^[^\n]-:%d+: ") then e = sandbox.where() .. e end
      error(e, 0)
    end
    return table.unpack(r, 2, r.n)
  end
end

local function copy(mod, names)
  local t = {}
  for _, n in ipairs(names) do t[n] = mod[n] end
  return t
end

-- new{cluster = {offerings = fn}, request_timeout = --request-timeout}
--   -> api  (verbosity: fluence.log)
function M.new(opts)
  opts = opts or {}
  local function say(fmt, ...)
    local msg = select("#", ...) > 0 and fmt:format(...) or fmt
    require("fluence.progress").erase()      -- a warning replaces the progress line
    sys.write(2, "fluence: " .. sys.escape(tostring(msg)) .. "\n")   -- one line, escaped
  end
  local yaml, json, http = require "fluence.yaml", require "fluence.json", require "fluence.http"
  local logger = require "fluence.log"
  -- -vv shows each request's method, URL (http.url_shown: no userinfo, no
  -- query: they may carry passwords and tokens), status and time; never
  -- headers or bodies
  local function show(req, resp)
    local url = http.url_shown(tostring(req.url or ""))
    if resp.error then logger.v(2, "HTTP %s %s: %s", req.method or "GET", url, resp.error)
    else logger.v(2, "HTTP %s %s -> %d (%.0f ms)", req.method or "GET", url, resp.status, (resp.time or 0) * 1000) end
  end
  local request, request_many = waiting(http.request), waiting(http.request_many)
  local logged_http = {
    request = function(req)
      local r, err = request(req)
      show(req, r or { error = err })
      return r, err
    end,
    request_many = function(reqs, o)
      local rs = request_many(reqs, o)
      for i, r in ipairs(rs) do show(reqs[i], r) end
      return rs
    end,
    url_shown = http.url_shown,
    -- the retry policy (fluence.retry) loads when a provider first asks
    budget = function()
      local retry = require "fluence.retry"
      return retry.budget(retry.parse_timeout(opts.request_timeout))
    end,
  }
  local cluster = {}
  for k, v in pairs(opts.cluster or {}) do cluster[k] = type(v) == "function" and waiting(v) or v end
  local api = {
    yaml = copy(yaml, { "decode", "decode_all", "marks", "null" }),
    catalog = { decode = require("fluence.catalog").decode, latest = require("fluence.catalog").latest },
    json = copy(json, { "decode", "encode", "null", "array", "object", "is_array" }),
    http = logged_http,
    env = sys.getenv,
    locate = sys.locate,
    -- the one reader (core/readfile.c) at its one limit: a plugin may ask
    -- for a regular file only, not for a larger limit
    read_file = function(path, o)
      return sys.read_file(path, type(o) == "table" and o.regular and { regular = true } or nil)
    end,
    now = sys.now,
    monotonic = sys.monotonic,
    log = function(fmt, ...) logger.v(1, fmt, ...) end,
    warn = say,
    cluster = cluster,
  }
  -- fluence.aws loads libcrypto: only when a provider first reaches for it
  local aws, backoff
  api.aws = setmetatable({}, {
    __index = function(_, k)
      aws = aws or require "fluence.aws"
      if k == "backoff" then           -- a retry's wait is the network's, too
        backoff = backoff or waiting(aws.backoff)
        return backoff
      end
      return aws[k]
    end,
  })
  -- the cost model, the price helpers and the XML reader load when a
  -- provider first reaches for them: runs without prices never do
  local function lazy(load)
    local mod
    return setmetatable({}, { __index = function(_, k)
      mod = mod or load()
      return mod[k]
    end })
  end
  api.cost = lazy(function()
    local c = require "fluence.cost"
    return { PRICES = c.PRICES, UNIT = c.UNIT, per_task = c.per_task, workload = c.workload, estimate = c.estimate,
             parse_duration = c.parse_duration, age = c.age }
  end)
  api.xml = lazy(function()
    local x = require "fluence.xml"
    return { decode = x.decode, child = x.child, children = x.children, text = x.text }
  end)
  api.prices = lazy(function()
    local p = require "fluence.prices"
    local sleep = waiting(function(...) return require("fluence.aws").backoff(...) end)
    return { targets = p.targets, book = p.book,
             fetch = p.fetcher(api.http, sleep) }
  end)
  for k, v in pairs(opts.overrides or {}) do api[k] = v end
  return readonly(api)        -- deep: api.yaml, api.aws ... are views too
end

return M
