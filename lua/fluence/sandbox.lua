-- Sandboxes for plugin code (policies and providers).
--
--   sandbox.env([extra])            -> a fresh environment: safe base functions,
--                                      copies of string/table/math/utf8, and the
--                                      fields of `extra` (e.g. {api = ...})
--   sandbox.readonly(t)             -> a read-only view of t (nested tables too)
--   sandbox.unwrap(v)               -> the table behind a read-only view (or v)
--   sandbox.call(fn, budget, ...)   -> true, results... | false, message
--
-- Why these pieces:
-- * Environments hold no io, os, require, load, loadfile, dofile, debug,
--   package, collectgarbage, print or string.dump; getmetatable("") returns nil
--   so the process-wide string metatable cannot be tampered with; rawset
--   refuses read-only views.
-- * Plugin code is bounded by an instruction-count hook.  Hooks belong to one
--   coroutine in Lua 5.4, so call() sets it on the running thread (and the
--   sandbox's coroutine.create copies it onto threads the plugin makes),
--   restoring whatever hook was there before.  Once the budget is spent every
--   later hook tick raises again and the sandbox's pcall/xpcall re-raise, so a
--   plugin cannot catch the error and keep looping.
-- * C functions (string.find with a pathological pattern, string.rep) do not
--   tick the hook; string.rep is capped, patterns are a documented limit.
local sandbox = {}

local STEP = 1000                      -- instructions between hook ticks
sandbox.DEFAULT_BUDGET = 50000000      -- ~0.1-0.5 s of Lua on a laptop
local REP_LIMIT = 16 * 1024 * 1024     -- bytes string.rep may build

local pack, unpack = table.pack, table.unpack
local dsethook, dgethook, dgetinfo = debug.sethook, debug.gethook, debug.getinfo
local raw_pcall, raw_xpcall, raw_error = pcall, xpcall, error
local raw_getmetatable, raw_setmetatable, raw_rawset = getmetatable, setmetatable, rawset
local dgetmetatable = debug.getmetatable

-- Read-only views (core/readonly.c): v[k] is t[k] with tables as their own
-- views, writes are errors, #, pairs and ipairs work, the metatable is
-- hidden, and one table always has the same view (identity survives
-- wrapping).  In C with one shared metatable: a view is a single empty
-- table, which keeps pipelines over thousands of backends fast.
local ro = require("fluence.readonly").new()
local readonly = ro.view
sandbox.readonly = readonly
sandbox.unwrap = ro.unwrap
sandbox.is_readonly = ro.is_view

-- Metatables of error objects the host makes (errors.lua, the pipeline's
-- markers): call() passes those through; any other non-string error a plugin
-- raises becomes a plain message.
local trusted = setmetatable({}, { __mode = "k" })
function sandbox.trust_error_mt(mt) trusted[mt] = true end
do
  local ok, errors = pcall(require, "fluence.errors")
  if ok then trusted[getmetatable(errors.new("INTERNAL", ""))] = true end
end

-- The budget currently being charged (nil outside call()).
local current

local function exceeded_check()
  if current and current.exceeded then raw_error(current.exceeded, 0) end
end

-- Where the budget ran out: the innermost plugin frame, skipping the host's
-- own Lua (this file, lua/fluence/*.lua helpers a plugin called into).
local function where()
  local fallback
  for level = 3, 60 do
    local info = dgetinfo(level, "Sl")
    if not info then break end
    if info.what ~= "C" and info.source:sub(1, 1) == "@" then
      local here = info.source:sub(2) .. ":" .. (info.currentline or 0) .. ": "
      if not info.source:find("lua/fluence/[%w_]+%.lua$") then return here end
      fallback = fallback or here
    end
  end
  return fallback or ""
end

local function copy(t, drop)
  local c = {}
  for k, v in pairs(t) do
    if not (drop and drop[k]) then c[k] = v end
  end
  return c
end

local function safe_pcall(f, ...)
  local r = pack(raw_pcall(f, ...))
  exceeded_check()
  return unpack(r, 1, r.n)
end

local function safe_xpcall(f, h, ...)
  local r = pack(raw_xpcall(f, h, ...))
  exceeded_check()
  return unpack(r, 1, r.n)
end

-- Coroutines inherit the running thread's hook, so a plugin cannot escape the
-- budget by looping inside a coroutine.
local function make_coroutine()
  local co = copy(coroutine)
  function co.create(f)
    local th = coroutine.create(f)
    local h, m, c = dgethook()
    if h then dsethook(th, h, m, c) end
    return th
  end
  function co.wrap(f)
    local th = co.create(f)
    return function(...)
      local r = pack(coroutine.resume(th, ...))
      if not r[1] then raw_error(r[2], 0) end
      return unpack(r, 2, r.n)
    end
  end
  function co.resume(th, ...)
    local r = pack(coroutine.resume(th, ...))
    exceeded_check()
    return unpack(r, 1, r.n)
  end
  return co
end

function sandbox.env(extra)
  local str = copy(string, { dump = true })
  local rep = string.rep
  function str.rep(s, n, sep)
    local len = #tostring(s) + (sep and #tostring(sep) or 0)
    if type(n) == "number" and n > 0 and len * n > REP_LIMIT then
      raw_error("string.rep: result too large", 2)
    end
    return rep(s, n, sep)
  end
  local env = {
    assert = assert, error = error, ipairs = ipairs, next = next, pairs = pairs,
    select = select, tonumber = tonumber, tostring = tostring, type = type,
    rawequal = rawequal, rawlen = rawlen, rawget = rawget,
    pcall = safe_pcall, xpcall = safe_xpcall,
    _VERSION = _VERSION,
    string = str, table = copy(table), math = copy(math), utf8 = copy(utf8),
    coroutine = make_coroutine(),
  }
  function env.rawset(t, k, v)
    if sandbox.is_readonly(t) then raw_error("attempt to modify a read-only table", 2) end
    return raw_rawset(t, k, v)
  end
  function env.getmetatable(o)
    if type(o) == "string" then return nil end
    return raw_getmetatable(o)
  end
  function env.setmetatable(t, mt)
    if sandbox.is_readonly(t) then raw_error("cannot change a protected metatable", 2) end
    -- a finalizer would run plugin code at any time, outside any budget
    if type(mt) == "table" and rawget(mt, "__gc") ~= nil then
      raw_error("__gc metamethods are not allowed in plugins", 2)
    end
    return raw_setmetatable(t, mt)
  end
  env._G = env
  for k, v in pairs(extra or {}) do env[k] = readonly(v) end
  return env
end

-- call(fn, budget, ...) runs fn(...) under an instruction budget on the
-- running thread.  Returns true, results... or false, message; a spent budget
-- gives "FILE:LINE: instruction budget of N exceeded (endless loop?)" naming
-- the plugin line that was running.
function sandbox.call(fn, budget, ...)
  budget = budget or sandbox.DEFAULT_BUDGET
  local state = { ticks = 0, limit = math.max(1, budget // STEP) }
  local function hook()
    state.ticks = state.ticks + 1
    if state.ticks > state.limit then
      if not state.exceeded then
        state.exceeded = where() ..
          ("instruction budget of %d exceeded (endless loop?)"):format(budget)
      end
      raw_error(state.exceeded, 0)
    end
  end
  local th = coroutine.running()
  local oh, om, oc = dgethook(th)
  local outer = current
  current = state
  dsethook(th, hook, "", STEP)
  local r = pack(raw_pcall(fn, ...))
  if type(oh) == "function" then dsethook(th, oh, om, oc) else dsethook(th) end
  current = outer
  if state.exceeded then return false, state.exceeded end
  if not r[1] and type(r[2]) ~= "string" and not trusted[dgetmetatable(r[2]) or false] then
    -- a plugin's error object could run its code (__tostring ...) later,
    -- outside the budget: keep only what it is
    return false, ("error object (%s)"):format(type(r[2]))
  end
  return unpack(r, 1, r.n)
end

return sandbox
