-- Sandboxes for plugin code (policies and providers).
--
--   sandbox.env([extra])            -> a fresh environment: safe base functions,
--                                      copies of string/table/math/utf8, and the
--                                      fields of `extra` (e.g. {api = ...})
--   sandbox.readonly(t)             -> a read-only view of t (nested tables too)
--   sandbox.unwrap(v)               -> the table behind a read-only view (or v)
--   sandbox.call(fn, how, ...)      -> true, results... | false, message
--       how: { kind = "policy", name = "min", file = ORIGIN, phase = "stage",
--              budget = N, trusted = bool } (or just a budget, or nil); a
--       call past its time limit raises an INPUT error instead of returning
--       (see below); trusted (the built-ins) skips the hard stop's watchdog
--   sandbox.set_time_limit(text, source) / sandbox.time_limit() -> seconds
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
-- * Every call also runs under a wall-clock limit (--plugin-timeout,
--   FLUENCE_PLUGIN_TIMEOUT, default 5 s; core/timelimit.c), which the hook
--   checks too, so a pure-Lua loop stops on time whatever the budget.  Time
--   inside one C call does not tick the hook, so the C loops a plugin can
--   make long check the deadline themselves: string.find/match/gmatch/gsub
--   (core/guard_string.c) and table.insert/remove/move (core/guard_table.c),
--   installed process-wide below: the string metatable's __index is the
--   global string table, so ("s"):find() reaches them too.  string.rep is
--   capped.  Everything else a plugin can call in C is linear in data the
--   budget let it build (format, pack, concat, upper, utf8.*, table.concat
--   ...) or calls back into Lua (sort comparators, gsub functions,
--   metamethods), where the hook runs; the rare rest (say, sorting huge
--   equal strings) meets the hard stop of the fluence program, which ends
--   the run one second after the deadline (for plugins from files; the
--   compiled-in built-ins are trusted not to need it).
--   Network waits made for a provider (fluence.provider_api) pause the clock:
--   they have their own timeouts.
--   A call past its limit does not return: it raises an INPUT error naming
--   the plugin, its file and line, the phase and how to raise the limit, so
--   the whole run stops (exit 3) rather than each object waiting again.
local sandbox = {}

-- sandbox.on_line(source, line), when set, sees every line a plugin runs
-- (fluence test --coverage); nil otherwise, and then costs nothing.
sandbox.on_line = nil

local STEP = 1000                      -- instructions between hook ticks
sandbox.DEFAULT_BUDGET = 50000000      -- ~0.1-0.5 s of Lua on a laptop
local REP_LIMIT = 16 * 1024 * 1024     -- bytes string.rep may build

local pack, unpack = table.pack, table.unpack
local dsethook, dgethook, dgetinfo = debug.sethook, debug.gethook, debug.getinfo
local raw_pcall, raw_xpcall, raw_error = pcall, xpcall, error
local raw_getmetatable, raw_setmetatable, raw_rawset = getmetatable, setmetatable, rawset
local dgetmetatable = debug.getmetatable
local timelimit = require "fluence.timelimit"
local tl_enter, tl_leave, tl_expired = timelimit.enter, timelimit.leave, timelimit.expired

sandbox.DEFAULT_SECONDS = 5
local HINT = "raise it with --plugin-timeout SECONDS or FLUENCE_PLUGIN_TIMEOUT"

-- The deadline-checking pattern and table functions, for everyone: the same
-- results as the standard ones, which install() returns (for the specs).
require("fluence.guard_string").install(string)
require("fluence.guard_table").install(table)

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
-- the pipeline's per-stage lists of views, made and read back in C
sandbox.stage_inputs, sandbox.stage_collect = ro.inputs, ro.collect
-- attr(b, key): b.attrs[key] for a plugin holding the view b, in one C call
-- (no metamethods, no view of the attrs table); the rare rest as written
sandbox.attr = ro.getter(function(b, key) return b.attrs[key] end)

-- Metatables of error objects the host makes (errors.lua, the pipeline's
-- markers): call() passes those through; any other non-string error a plugin
-- raises becomes a plain message.
local trusted = setmetatable({}, { __mode = "k" })
function sandbox.trust_error_mt(mt) trusted[mt] = true end
-- the host's structured errors (errors.lua) pass only as they were made
local is_host_error
do
  local ok, errors = pcall(require, "fluence.errors")
  is_host_error = ok and errors.is or function() return false end
end

-- The budget currently being charged (nil outside call()).
local current

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
sandbox.where = where

-- The call ran out of time: remember where (the first place that noticed,
-- or the "FILE:LINE: " a C check put in its message) and raise again.  Every
-- later hook tick and every sandboxed pcall raises too, so the plugin cannot
-- catch it and carry on.
local function note_timeout(state, err, here)
  if state.timeout then return end
  local s = type(err) == "string" and err or ""
  state.timeout = s:match("^([^\n]-:%d+: )time limit exceeded") or (here and where()) or ""
  state.timeout_in = s:match("time limit exceeded in ([%w_.]+)$")
end

local function timed_out(err)
  note_timeout(current, err, true)
  raw_error(current.timeout .. "time limit exceeded", 0)
end

local function exceeded_check(err)
  if not current then return end
  if current.exceeded then raw_error(current.exceeded, 0) end
  if current.timeout or tl_expired() then timed_out(err) end
end

-- A shallow copy (raw) without drop's keys, made in C at its final size:
-- each plugin's environment copies about a hundred library entries.
local copy = require("fluence.tablecopy").copy

local function safe_pcall(f, ...)
  local r = pack(raw_pcall(f, ...))
  exceeded_check(r[2])
  return unpack(r, 1, r.n)
end

-- pcall for host helpers that call back into a plugin (fluence.prices): an
-- error is caught, but not a spent budget or time limit
sandbox.pcall = safe_pcall

local function safe_xpcall(f, h, ...)
  local r = pack(raw_xpcall(f, h, ...))
  exceeded_check()
  return unpack(r, 1, r.n)
end

-- Each env() gets its own copies of the library tables, made as it is
-- called (a plugin may change its own copy); the functions it adds are made
-- once and shared, but for coroutine.wrap, which calls its environment's
-- coroutine.create.

-- Coroutines inherit the running thread's hook, so a plugin cannot escape the
-- budget by looping inside a coroutine.
local function co_create(f)
  local th = coroutine.create(f)
  local h, m, c = dgethook()
  if h then dsethook(th, h, m, c) end
  return th
end
local function co_resume(th, ...)
  local r = pack(coroutine.resume(th, ...))
  exceeded_check(r[2])
  return unpack(r, 1, r.n)
end

local function make_coroutine()
  local co = copy(coroutine)
  co.create, co.resume = co_create, co_resume
  function co.wrap(f)
    local th = co.create(f)
    return function(...)
      local r = pack(coroutine.resume(th, ...))
      if not r[1] then raw_error(r[2], 0) end
      return unpack(r, 2, r.n)
    end
  end
  return co
end

local rep = string.rep
local function str_rep(s, n, sep)
  local len = #tostring(s) + (sep and #tostring(sep) or 0)
  if type(n) == "number" and n > 0 and len * n > REP_LIMIT then
    raw_error("string.rep: result too large", 2)
  end
  return rep(s, n, sep)
end
local NO_DUMP = { dump = true }

local BASE = {
  assert = assert, error = error, ipairs = ipairs, next = next, pairs = pairs,
  select = select, tonumber = tonumber, tostring = tostring, type = type,
  rawequal = rawequal, rawlen = rawlen, rawget = rawget,
  pcall = safe_pcall, xpcall = safe_xpcall,
  _VERSION = _VERSION,
}
function BASE.rawset(t, k, v)
  if sandbox.is_readonly(t) then raw_error("attempt to modify a read-only table", 2) end
  return raw_rawset(t, k, v)
end
function BASE.getmetatable(o)
  if type(o) == "string" then return nil end
  return raw_getmetatable(o)
end
function BASE.setmetatable(t, mt)
  if sandbox.is_readonly(t) then raw_error("cannot change a protected metatable", 2) end
  -- a finalizer would run plugin code at any time, outside any budget
  if type(mt) == "table" and rawget(mt, "__gc") ~= nil then
    raw_error("__gc metamethods are not allowed in plugins", 2)
  end
  return raw_setmetatable(t, mt)
end

function sandbox.env(extra)
  local env = copy(BASE)
  local str = copy(string, NO_DUMP)
  str.rep = str_rep
  env.string, env.table, env.math, env.utf8 = str, copy(table), copy(math), copy(utf8)
  env.coroutine = make_coroutine()
  env._G = env
  for k, v in pairs(extra or {}) do env[k] = readonly(v) end
  return env
end

-- The time limit of every plugin call, in seconds (0: none): --plugin-timeout
-- (set_time_limit, from the command line), else FLUENCE_PLUGIN_TIMEOUT, else
-- DEFAULT_SECONDS.
local seconds

local function parse_seconds(text, source)
  local n = tonumber(text)
  if type(text) == "string" and text:match("^%s*[%d.]+%s*$") and n and n >= 0 and n < math.huge then
    return n
  end
  local errors = require "fluence.errors"
  errors.raise("USAGE", "%s: %q is not a number of seconds (a number >= 0; 0 means no limit)", source, tostring(text))
end

function sandbox.set_time_limit(text, source)
  seconds = parse_seconds(tostring(text), source or "time limit")
end

function sandbox.time_limit()
  if not seconds then
    local env = os.getenv("FLUENCE_PLUGIN_TIMEOUT")
    seconds = (env and env ~= "") and parse_seconds(env, "FLUENCE_PLUGIN_TIMEOUT") or sandbox.DEFAULT_SECONDS
  end
  return seconds
end

local function num(n)
  if n == math.floor(n) and n < 1e15 then return ("%d"):format(n) end
  return ("%g"):format(n)
end

-- 'policy "min" (stage)', from call()'s `how` (core/timelimit.c words the
-- hard stop's message the same way).
local function label(how)
  if not how then return "plugin call" end
  return ('%s "%s" (%s)'):format(how.kind or "plugin", how.name or "?", how.phase or "call")
end

local function timeout_error(how, limit, state)
  local loc = state.timeout
  if not loc or loc == "" then loc = how and how.file and (how.file .. ": ") or "" end
  local errors = require "fluence.errors"
  errors.raise("INPUT", "%s%s: time limit of %s s exceeded%s; %s", loc, label(how), num(limit),
               state.timeout_in and (" in " .. state.timeout_in) or "", HINT)
end

-- call(fn, how, ...) runs fn(...) under an instruction budget on the running
-- thread and under the time limit.  how = { kind =, name =, file =, phase =,
-- budget = } describes the call for messages (a number is just a budget).
-- Returns true, results... or false, message; a spent budget gives
-- "FILE:LINE: instruction budget of N exceeded (endless loop?)" naming the
-- plugin line that was running.  A call past its time limit raises an INPUT
-- error: "FILE:LINE: policy "x" (stage): time limit of 5 s exceeded[ in
-- string.find]; raise it with ...".
function sandbox.call(fn, how, ...)
  local budget
  if type(how) == "table" then budget = how.budget else budget, how = how, nil end
  budget = budget or sandbox.DEFAULT_BUDGET
  local limit = sandbox.time_limit()
  local state = { ticks = 0, limit = math.max(1, budget // STEP) }
  local function hook()
    local n = state.ticks + 1
    state.ticks = n
    if n > state.limit then
      if not state.exceeded then
        state.exceeded = where() ..
          ("instruction budget of %d exceeded (endless loop?)"):format(budget)
      end
      raw_error(state.exceeded, 0)
    end
    if state.timeout or tl_expired() then timed_out() end
  end
  local th = coroutine.running()
  local oh, om, oc = dgethook(th)
  local outer = current
  current = state
  tl_enter(limit, how)
  local on_line = sandbox.on_line
  if on_line then        -- `fluence test --coverage`: line events too (testing/coverage.lua)
    dsethook(th, function(ev, line)
      if ev == "line" then on_line(dgetinfo(2, "S").source, line) else hook() end
    end, "l", STEP)
  else
    dsethook(th, hook, "", STEP)
  end
  local r = pack(raw_pcall(fn, ...))
  if type(oh) == "function" then dsethook(th, oh, om, oc) else dsethook(th) end
  if not r[1] and not state.timeout and tl_expired() then
    -- stopped by a C check (its message says where), or failing late anyway
    note_timeout(state, r[2], false)
  end
  tl_leave()
  current = outer
  if state.timeout then timeout_error(how, limit, state) end
  if state.exceeded then return false, state.exceeded end
  if not r[1] and type(r[2]) ~= "string" and not trusted[dgetmetatable(r[2]) or false] and
     not is_host_error(r[2]) then
    -- a plugin's error object could run its code (__tostring ...) later,
    -- outside the budget: keep only what it is
    return false, ("error object (%s)"):format(type(r[2]))
  end
  return unpack(r, 1, r.n)
end

return sandbox
