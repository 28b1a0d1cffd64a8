-- The assertions of `fluence test`'s built-in spec runner: the part of
-- busted's luassert that plugin specs use, with the same names and chains
-- (assert.are.equal, assert.is_not.same, assert.has_no.errors ...), and
-- one-line failure messages.
--
--   assert(v [, msg])                     assert.equal / equals (expected, actual)
--   assert.same(expected, actual)         deep equality; the message names the first difference
--   assert.is_true / is_false / truthy / falsy / is_nil
--   assert.is_table / is_string / is_number / is_boolean / is_function
--   assert.matches(pattern, s [, init, plain])   assert.near(expected, actual, tolerance)
--   assert.has_error(fn [, err])          err: the message without its "FILE:LINE: "
--   assert.error_matches(fn, pattern [, init, plain])   likewise without it
--   assert.fail([msg])
-- Words in a chain: is are was has have does do (ignored), not / no (negate).
-- Every assertion takes an optional message as its last argument.
-- A failure raises { message = ... } with the assertion's own metatable
-- (assert.is_failure tells it from other errors).
local A = {}

local Failure = { __tostring = function(e) return e.message end }
function A.is_failure(e) return getmetatable(e) == Failure end

local function failure(msg, extra)
  if extra ~= nil then msg = tostring(extra) .. ": " .. msg end
  error(setmetatable({ message = msg }, Failure), 0)
end

-- A value on one line, at most ~100 characters.
local function show(v, depth)
  depth = depth or 0
  local tv = type(v)
  if tv == "string" then
    local s = ("%q"):format(v):gsub("\\\n", "\\n")
    if #s > 100 then s = s:sub(1, 97) .. '..."' end
    return s
  elseif tv ~= "table" then
    return tostring(v)
  end
  local mt = getmetatable(v)
  if mt and mt.__tostring then return tostring(v) end
  if depth > 2 then return "{...}" end
  local keys = {}
  for k in pairs(v) do keys[#keys + 1] = k end
  table.sort(keys, function(a, b)
    local ta, tb = type(a), type(b)
    if ta ~= tb then return ta < tb end
    if ta == "number" or ta == "string" then return a < b end
    return tostring(a) < tostring(b)
  end)
  local parts, n = {}, #v
  for _, k in ipairs(keys) do
    local item
    if math.type(k) == "integer" and k >= 1 and k <= n then item = show(v[k], depth + 1)
    elseif type(k) == "string" and k:match("^[%a_][%w_]*$") then item = k .. " = " .. show(v[k], depth + 1)
    else item = "[" .. show(k, depth + 1) .. "] = " .. show(v[k], depth + 1) end
    parts[#parts + 1] = item
  end
  local s = "{ " .. table.concat(parts, ", ") .. " }"
  if #parts == 0 then s = "{}" end
  if #s > 120 then s = s:sub(1, 116) .. " ...}" end
  return s
end
A.show = show

local function key_path(path, k)
  if type(k) == "string" and k:match("^[%a_][%w_]*$") then return path .. "." .. k end
  return path .. "[" .. show(k) .. "]"
end

-- nil when a and b are deeply equal, else the path and both values there.
local function differs(a, b, path, seen)
  if a == b then return nil end
  if type(a) ~= "table" or type(b) ~= "table" then return path, a, b end
  seen = seen or {}
  if seen[a] == b then return nil end
  seen[a] = b
  for k, v in pairs(a) do
    local p, x, y = differs(v, b[k], key_path(path, k), seen)
    if p then return p, x, y end
  end
  for k, v in pairs(b) do
    if a[k] == nil then return key_path(path, k), nil, v end
  end
  return nil
end

local function error_message(e)
  if type(e) == "table" and type(e.message) == "string" then return e.message end
  return tostring(e)
end

-- Each: function(neg, ...) -> ok, message (the message says what was
-- expected; the caller words the negation).
local checks = {}

function checks.equal(expected, actual)
  return expected == actual, ("expected %s, got %s"):format(show(expected), show(actual)),
         ("expected a value other than %s"):format(show(expected)), 3
end
checks.equals = checks.equal

function checks.same(expected, actual)
  local path, x, y = differs(expected, actual, "")
  local msg = ("expected %s, got %s"):format(show(expected), show(actual))
  if path and path ~= "" then
    msg = msg .. (" (first difference at %s: %s, not %s)"):format(path:gsub("^%.", ""), show(y), show(x))
  end
  return path == nil, msg,
         ("expected something other than %s"):format(show(expected)), 3
end

local function is(want, label)
  return function(v)
    return want(v), ("expected %s, got %s"):format(label, show(v)), ("expected anything but %s"):format(label), 2
  end
end
checks["true"] = is(function(v) return v == true end, "true")
checks["false"] = is(function(v) return v == false end, "false")
checks.truthy = is(function(v) return not not v end, "a truthy value")
checks.falsy = is(function(v) return not v end, "a falsy value (nil or false)")
checks["nil"] = is(function(v) return v == nil end, "nil")
for _, ty in ipairs{ "table", "string", "number", "boolean", "function", "userdata", "thread" } do
  checks[ty] = is(function(v) return type(v) == ty end, "a " .. ty)
end

function checks.matches(pattern, s, init, plain)
  if type(s) ~= "string" then
    return false, ("expected a string matching %s, got %s"):format(show(pattern), show(s)), nil, 5
  end
  local ok = s:find(pattern, init, plain) ~= nil
  return ok, ("expected %s to match %s"):format(show(s), show(pattern)),
         ("expected %s not to match %s"):format(show(s), show(pattern)), 5
end
checks.match = checks.matches

function checks.near(expected, actual, tolerance)
  local ok = type(actual) == "number" and math.abs(expected - actual) <= tolerance
  return ok, ("expected %s +/- %s, got %s"):format(show(expected), show(tolerance), show(actual)),
         ("expected a value farther than %s from %s, got %s"):format(show(tolerance), show(expected), show(actual)), 4
end

function checks.error(fn, expected)
  if type(fn) ~= "function" then return false, "expected a function to call, got " .. show(fn), nil, 3 end
  local ok, e = pcall(fn)
  if ok then return false, "expected an error, none was raised", nil, 3 end
  if expected == nil then return true, "", ("expected no error, got: %s"):format(error_message(e)), 3 end
  local got = e
  if type(e) == "string" and type(expected) == "string" then got = e:gsub("^[^\n]-:%d+: ", "", 1) end
  if type(e) == "table" and type(expected) == "string" then got = error_message(e) end
  local same = got == expected or (type(got) == "table" and differs(expected, got, "") == nil)
  return same, ("expected the error %s, got %s"):format(show(expected), show(got)),
         ("expected an error other than %s"):format(show(expected)), 3
end
checks.errors = checks.error

function checks.error_matches(fn, pattern, init, plain)
  if type(fn) ~= "function" then return false, "expected a function to call, got " .. show(fn), nil, 5 end
  local ok, e = pcall(fn)
  if ok then return false, ("expected an error matching %s, none was raised"):format(show(pattern)), nil, 5 end
  local msg = error_message(e)
  if type(e) == "string" then msg = msg:gsub("^.-:%d+: ", "", 1) end   -- as luassert: without "FILE:LINE: "
  return msg:find(pattern, init, plain) ~= nil,
         ("expected an error matching %s, got %s"):format(show(pattern), show(msg)),
         ("expected an error not matching %s, got %s"):format(show(pattern), show(msg)), 5
end

function checks.fail(msg)
  return false, msg ~= nil and tostring(msg) or "failed", "", 2
end

local NAMES = {}
for k in pairs(checks) do NAMES[#NAMES + 1] = k end
table.sort(NAMES)

local MODIFIERS = { is = true, are = true, was = true, has = true, have = true, does = true, ["do"] = true,
                    to = true, be = true }

local function run(name, neg, ...)
  local check = checks[name]
  local ok, msg, negmsg, nargs = check(...)
  local extra = nil
  if select("#", ...) >= nargs then extra = (select(nargs, ...)) end
  if neg then
    if ok then failure(negmsg or ("expected not: " .. msg), extra) end
  elseif not ok then
    failure(msg, extra)
  end
  return ...
end

local function chain(neg)
  return setmetatable({}, {
    __index = function(_, key)
      local n, words = neg, {}
      for w in tostring(key):gmatch("[^_]+") do
        if w == "not" or w == "no" then n = not n
        elseif not MODIFIERS[w] then words[#words + 1] = w end
      end
      if #words == 0 then return chain(n) end
      local name = table.concat(words, "_")
      if name == "errors" or name == "error" or name == "has_error" then name = "error" end
      if not checks[name] then
        error(("assert.%s: not available in fluence test's built-in runner (it has %s; " ..
               "run the spec with busted for the rest: docs/testing-plugins.md)")
              :format(tostring(key), table.concat(NAMES, ", ")), 2)
      end
      return function(...) return run(name, n, ...) end
    end,
    __call = function(_, v, msg, ...)
      if not v then failure(msg ~= nil and tostring(msg) or "assertion failed!") end
      return v, msg, ...
    end,
  })
end

A.assert = chain(false)

return A
