-- What a provider reaches outside fluence, stood in for in tests: HTTP, the
-- environment, files, AWS credentials and the cluster's offerings.  The
-- overrides replace fields of the provider API (fluence.provider_api), the
-- only way a provider reaches the network, so the provider's real code runs
-- and a test never leaves the machine.
--
--   local s = stubs.new{ http = {[url] = answer, ...} | {{url =, ...}, ...},
--                        env = {NAME = value}, files = {[path] = text},
--                        base = DIR, own = {[path] = true}, offerings = text | nil,
--                        where = "FILE" }
--   s.api         overrides for provider_api.new{ overrides = s.api }
--   s.requests    every request asked for: {method =, url =, headers =, body =}
--   s.warnings    what api.warn said (tests keep stderr quiet)
--   s.clusters    a stand-in for the selection's clusters source (offerings)
--   s:check()     raises "unstubbed HTTP request: GET URL ..." when a request
--                 had no stub (even if the provider caught the failure)
--
-- An answer is a table { status = 200, body = text | table (sent as JSON),
-- headers = {}, error = "reason" (a network failure instead) }, a string
-- (the body, status 200), or a function(request) returning one of those.
-- A URL matches a stub exactly, else a stub written without a query string
-- matches it with any query.  api.env sees only `env`; api.read_file reads
-- `files`, else the real file, relative paths against `base` (the test
-- file's directory) except the paths in `own` (files fluence itself was
-- given, already resolved: the attribute files); AWS credentials come from `env` alone (never ~/.aws)
-- and retries do not sleep.
local sys = require "fluence.sys"
local json = require "fluence.json"

local stubs = {}

local HINT = "a test never reaches the network: give this URL an answer in http"

-- The stubs as a URL -> answer map (a list of {url =, ...} is accepted too).
local function answers(http, where)
  local map = {}
  for k, v in pairs(http or {}) do
    if type(k) == "number" then
      if type(v) ~= "table" or type(v.url) ~= "string" then
        error(("%s: http[%d]: expected {url = ..., status =, body =}"):format(where, k), 0)
      end
      map[v.url] = v
    elseif type(k) == "string" then
      map[k] = v
    else
      error(("%s: http: keys must be URLs"):format(where), 0)
    end
  end
  return map
end

local function lower_keys(t)
  local out = {}
  for k, v in pairs(t or {}) do out[tostring(k):lower()] = tostring(v) end
  return out
end

-- A copy of what the provider asked (headers as given), for functions and
-- for s.requests.
local function request_copy(req)
  local headers = {}
  local h = req.headers
  if type(h) == "table" then
    for k, v in pairs(h) do
      if type(k) == "number" then
        local name, value = tostring(v):match("^([^:]+):%s*(.*)$")
        if name then headers[name] = value end
      else
        headers[k] = v
      end
    end
  end
  return { method = req.method or "GET", url = req.url, headers = headers, body = req.body }
end

-- The response for one answer: resp | nil, network error.
local function respond(answer, req, where)
  if type(answer) == "function" then
    local r, e = answer(req)
    if r == nil then return nil, tostring(e or ("no answer from the stub for " .. req.url)) end
    answer = r
  end
  if type(answer) == "string" then answer = { body = answer } end
  if type(answer) ~= "table" then
    error(("%s: the stub for %s must be a table {status =, body =}, a string or a function, not %s")
          :format(where, req.url, type(answer)), 0)
  end
  if answer.error ~= nil then return nil, tostring(answer.error) end
  local status = answer.status == nil and 200 or tonumber(answer.status)
  if not status or status ~= math.floor(status) or status < 100 or status > 999 then
    error(("%s: the stub for %s: status must be an HTTP status code, not %s")
          :format(where, req.url, tostring(answer.status)), 0)
  end
  local body = answer.body
  if type(body) == "table" then body = json.encode(body)
  elseif body == nil then body = ""
  else body = tostring(body) end
  return { status = math.tointeger(status), body = body, headers = lower_keys(answer.headers), time = 0 }
end

function stubs.new(o)
  o = o or {}
  local where = o.where or "test"
  local map = answers(o.http, where)
  local env = {}
  for k, v in pairs(o.env or {}) do env[tostring(k)] = tostring(v) end
  local files = o.files or {}
  local base = o.base or "."
  local own = o.own or {}
  local s = { requests = {}, warnings = {}, unstubbed = {} }

  local function find(url)
    local a = map[url]
    if a == nil then a = map[(url:gsub("%?.*$", ""))] end
    return a
  end

  local function one(req)
    if type(req) ~= "table" or type(req.url) ~= "string" then error("http request without url", 2) end
    local copy = request_copy(req)
    s.requests[#s.requests + 1] = copy
    local answer = find(req.url)
    if answer == nil then
      local line = ("%s %s"):format(copy.method, req.url)
      s.unstubbed[#s.unstubbed + 1] = line
      error(("unstubbed HTTP request: %s (%s)"):format(line, HINT), 0)
    end
    return respond(answer, copy, where)
  end

  local http = {
    request = function(req) return one(req) end,
    request_many = function(reqs)
      local out = {}
      for i, req in ipairs(reqs) do
        local r, err = one(req)
        out[i] = r or { error = err }
      end
      return out
    end,
    url_shown = require("fluence.http").url_shown,   -- no I/O: the real one
    budget = function() return require("fluence.retry").budget(30) end,   -- answers are instant: the default
  }

  local function getenv(name) return env[name] end

  local function read_file(path, o)
    path = tostring(path)
    if files[path] ~= nil then return tostring(files[path]) end
    local real = path
    if path:sub(1, 1) ~= "/" and base ~= "." and not own[path] then real = base .. "/" .. path end
    local text, err = sys.read_file(real, type(o) == "table" and o.regular and { regular = true } or nil)
    if not text then return nil, err end
    return text
  end

  -- fluence.aws, but credentials from `env` only and retries without sleeping
  local aws
  local aws_view = setmetatable({}, { __index = function(_, k)
    aws = aws or require "fluence.aws"
    if k == "credentials" then
      return function(opts)
        opts = opts or {}
        return aws.credentials{ env = getenv, profile = opts.profile, home = "/nonexistent/fluence-test-home" }
      end
    elseif k == "backoff" then
      return function() return 0 end
    end
    return aws[k]
  end })

  local parsed, why
  if o.offerings ~= nil then
    local offerings = require "fluence.offerings"
    local text = o.offerings
    if type(text) == "table" then text = json.encode(text) end
    local p, err = offerings.parse(tostring(text), where .. ": offerings")
    if not p then error(err, 0) end
    parsed = p
  else
    why = "offline: the cluster's offerings were not consulted"
  end
  local function get_offerings()
    if parsed then return parsed end
    return nil, why
  end

  s.api = {
    http = http, env = getenv, read_file = read_file, aws = aws_view,
    warn = function(fmt, ...)
      s.warnings[#s.warnings + 1] = select("#", ...) > 0 and fmt:format(...) or tostring(fmt)
    end,
    log = function() end,
    cluster = { offerings = get_offerings },
  }

  -- The selection's clusters source (see selection.lua): one cluster, the
  -- offerings given, no nodes (fits keeps every backend without a graph).
  local cluster = { context = "test", offerings = parsed,
                    nodes_error = { message = "a test has no live cluster (give graph = FILE)" } }
  s.clusters = {
    want_graph = false,
    open = function() return { list = { cluster }, many = false } end,
    load = function() end,
    offerings = get_offerings,
  }

  function s.check()
    if #s.unstubbed > 0 then
      error(("unstubbed HTTP request: %s (%s)"):format(s.unstubbed[1], HINT), 0)
    end
  end
  return s
end

return stubs
