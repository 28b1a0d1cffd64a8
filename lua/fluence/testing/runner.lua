-- `fluence test`'s built-in spec runner: runs *_spec.lua files written for
-- busted, in process, with no busted installed.  It provides busted's
-- structure -- describe / context / insulate / expose, it / test / spec,
-- pending, before_each / after_each, setup / teardown (and lazy_ / strict_
-- forms), finally -- and the assertions of fluence.testing.assert.  Specs
-- that need more of busted (spies, stubs, mocks, async) run under busted
-- itself after `make install` (docs/testing-plugins.md).
--
--   runner.load(path, src) -> file | nil, message   runs the file's body, which
--                                                    declares its tests
--   runner.run(file, report)   report{ file =, line =, name =, status = "pass" | "fail" | "pending",
--                                      message =, time = }  once per test, in order
--
-- Each file runs in an environment of its own over _G (its globals do not
-- reach the next file); modules it requires, other than fluence's own, are
-- forgotten after it (as busted's insulation does); `require` also finds
-- modules beside the spec.  A failure's line is the spec file's line that
-- was running (the assertion, or the call that raised).
local sys = require "fluence.sys"
local A = require "fluence.testing.assert"

local runner = {}

local function message_of(e)
  if A.is_failure(e) then return e.message end
  if type(e) == "table" and type(e.message) == "string" then return e.message end
  return tostring(e)
end

local NOT_HERE = "spy, stub, mock and match are not part of fluence test's built-in runner: " ..
                 "stand in for HTTP, files and the environment with fluence.testing, or run this spec " ..
                 "with busted (docs/testing-plugins.md)"
local unavailable = setmetatable({}, {
  __index = function() error(NOT_HERE, 2) end,
  __call = function() error(NOT_HERE, 2) end,
})

local function new_block(name, parent)
  return { name = name, parent = parent, items = {}, before_each = {}, after_each = {}, setup = {},
           teardown = {} }
end

-- The line of the spec file running at the error (or at the caller).
local function spec_line(chunk, from)
  for level = from, 80 do
    local info = debug.getinfo(level, "Sl")
    if not info then break end
    if info.source == chunk then return info.currentline end
  end
end

-- fn() with `require` finding modules beside the spec first, and forgetting
-- afterwards the modules it loaded (fluence's own and LPeg stay: their
-- state, such as the sandbox's read-only views, is shared).
local function insulated(path, fn)
  local dir = path:match("^(.*)/[^/]*$") or "."
  local saved_path = package.path
  local before = {}
  for k in pairs(package.loaded) do before[k] = true end
  package.path = dir .. "/?.lua;" .. dir .. "/?/init.lua;" .. saved_path
  local r = table.pack(pcall(fn))
  package.path = saved_path
  for k in pairs(package.loaded) do
    if not before[k] and not k:match("^fluence%.") and k ~= "lpeg" then package.loaded[k] = nil end
  end
  if not r[1] then error(r[2], 0) end
  return table.unpack(r, 2, r.n)
end

function runner.load(path, src)
  return insulated(path, function() return runner.collect(path, src) end)
end

function runner.collect(path, src)
  local chunk = "@" .. path
  local file = { path = path, root = new_block(nil, nil), tests = 0 }
  local current = file.root
  local running = false
  local env = setmetatable({}, { __index = _G })

  local function line_here() return spec_line(chunk, 3) or 0 end
  local function block(name, fn)
    if running then error("describe() inside a running test", 2) end
    local b = new_block(tostring(name), current)
    b.line = line_here()
    current.items[#current.items + 1] = { block = b }
    if type(fn) == "function" then
      local outer = current
      current = b
      fn()
      current = outer
    end
  end
  local function test(name, fn)
    if running then error("it() inside a running test", 2) end
    local item = { name = tostring(name), fn = fn, line = line_here() }
    if type(fn) ~= "function" then item.pending = true end
    current.items[#current.items + 1] = item
    file.tests = file.tests + 1
  end
  local function pending(name)
    if running then
      error(setmetatable({ pending = tostring(name or "pending") }, { __tostring = function(e) return e.pending end }), 0)
    end
    current.items[#current.items + 1] = { name = tostring(name), pending = true, line = line_here() }
    file.tests = file.tests + 1
  end
  local function hook(kind)
    return function(fn)
      if running then error(kind .. "() inside a running test", 2) end
      local list = current[kind]
      list[#list + 1] = fn
    end
  end
  env.describe, env.context, env.insulate, env.expose = block, block, block, block
  env.it, env.test, env.spec = test, test, test
  env.pending = pending
  env.before_each, env.after_each = hook("before_each"), hook("after_each")
  env.setup, env.lazy_setup, env.strict_setup = hook("setup"), hook("setup"), hook("setup")
  env.teardown, env.lazy_teardown, env.strict_teardown = hook("teardown"), hook("teardown"), hook("teardown")
  env.finally = function(fn)
    if not file.finally then error("finally() outside a running test", 2) end
    file.finally[#file.finally + 1] = fn
  end
  env.assert = A.assert
  env.spy, env.stub, env.mock, env.match = unavailable, unavailable, unavailable, unavailable
  env.randomize = function() end
  file.set_running = function(v) running = v end

  local fn, err = load(src, chunk, "t", env)
  if not fn then return nil, require("fluence.lua_syntax").locate(path, src, err) end
  local ok, e = xpcall(fn, function(x)
    -- one line: require's list of the places it searched is noise here
    local msg = message_of(x):match("^[^\n]*"):gsub(":$", "")
    if msg:sub(1, #path + 1) == path .. ":" then return msg end
    local line = spec_line(chunk, 2)
    return ("%s:%s: %s"):format(path, line or "?", msg)
  end)
  if not ok then return nil, e end
  return file
end

-- Does this block (or one inside it) hold a test?
local function has_tests(b)
  for _, it in ipairs(b.items) do
    if it.block then
      if has_tests(it.block) then return true end
    else
      return true
    end
  end
  return false
end

function runner.run(file, report)
  return insulated(file.path, function() return runner.execute(file, report) end)
end

function runner.execute(file, report)
  local chunk = "@" .. file.path
  local function call(fn)
    local where
    local ok, e = xpcall(fn, function(x)
      where = spec_line(chunk, 2)
      return x
    end)
    if ok then return true end
    if type(e) == "table" and e.pending and getmetatable(e) and not A.is_failure(e) then
      return false, e.pending, nil, true
    end
    local msg = message_of(e)
    -- "PATH:LINE: msg" from error(): the line goes to the report instead
    local at, rest = msg:match("^([^\n]-:%d+): (.*)$")
    if at and at:sub(1, #file.path + 1) == file.path .. ":" then
      where = tonumber(at:match(":(%d+)$")) or where
      msg = rest
    end
    return false, msg, where
  end

  local function names(b, leaf)
    local parts = { leaf }
    while b and b.name do
      table.insert(parts, 1, b.name)
      b = b.parent
    end
    return table.concat(parts, " ")
  end

  local function chain(b, kind, outer_first)
    local list = {}
    while b do
      for i = #b[kind], 1, -1 do table.insert(list, 1, b[kind][i]) end
      b = b.parent
    end
    if not outer_first then
      local r = {}
      for i = #list, 1, -1 do r[#r + 1] = list[i] end
      list = r
    end
    return list
  end

  local function run_test(b, item, setup_error)
    local r = { file = file.path, line = item.line, name = names(b, item.name), status = "pass" }
    local t0 = sys.monotonic()
    if item.pending then
      r.status = "pending"
    elseif setup_error then
      r.status, r.message = "fail", "setup failed: " .. setup_error
    else
      local first              -- the first failure: later ones are its consequences
      local function step(fn)
        local ok, msg, line, is_pending = call(fn)
        if not ok and not first then first = { message = msg, line = line, pending = is_pending } end
        return ok
      end
      file.finally = {}
      file.set_running(true)
      local ready = true
      for _, h in ipairs(chain(b, "before_each", true)) do
        if not step(h) then ready = false break end
      end
      if ready then step(item.fn) end
      for _, h in ipairs(chain(b, "after_each", false)) do step(h) end   -- always, as busted
      for _, f in ipairs(file.finally) do step(f) end
      file.set_running(false)
      file.finally = nil
      if first then
        r.status = first.pending and "pending" or "fail"
        r.message, r.line = first.message, first.line or item.line
      end
    end
    r.time = sys.monotonic() - t0
    report(r)
  end

  local function run_block(b, inherited)
    if not has_tests(b) then return end
    local setup_error = inherited
    if not setup_error then
      for _, h in ipairs(b.setup) do
        local ok, msg, line = call(h)
        if not ok then setup_error = ("%s:%s: %s"):format(file.path, line or b.line or "?", msg) break end
      end
    end
    for _, item in ipairs(b.items) do
      if item.block then run_block(item.block, setup_error) else run_test(b, item, setup_error) end
    end
    if not setup_error then
      for _, h in ipairs(b.teardown) do
        local ok, msg, line = call(h)
        if not ok then
          report{ file = file.path, line = line or b.line or 0, name = names(b, "teardown"), status = "fail",
                  message = msg, time = 0 }
        end
      end
    end
  end

  run_block(file.root)
end

return runner
