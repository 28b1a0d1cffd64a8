-- The built-in spec runner of `fluence test`: busted's structure (describe,
-- hooks in busted's order, pending, finally) and luassert's assertions as
-- plugin specs use them, each file in its own environment; failures name
-- the spec line that was running.
local cli = require "support.cli"
local tree = require "support.tree"

-- Under FLUENCE_VALGRIND only the first run is checked: the runner is Lua,
-- the C it reaches is what every other run reaches too.
local checked = false
local function run(files, ...)
  local dir = tree.make(files)
  local args = { "test", ..., cwd = dir }
  if checked then args.valgrind = false end
  checked = true
  return cli.run(args), dir
end

local lines = cli.lines

describe("fluence test's spec runner", function()
  teardown(function() cli.cleanup() end)

  it("runs hooks in busted's order, setup and teardown once per block, finally after the test", function()
    local r = run{ ["order_spec.lua"] = [[
local log = {}
describe("outer", function()
  setup(function() log[#log + 1] = "setup" end)
  teardown(function() log[#log + 1] = "teardown" end)
  before_each(function() log[#log + 1] = "before outer" end)
  after_each(function() log[#log + 1] = "after outer" end)
  describe("inner", function()
    before_each(function() log[#log + 1] = "before inner" end)
    after_each(function() log[#log + 1] = "after inner" end)
    it("one", function()
      finally(function() log[#log + 1] = "finally" end)
      log[#log + 1] = "one"
    end)
  end)
  it("two", function() log[#log + 1] = "two" end)
end)
describe("check", function()
  it("saw it all", function()
    assert.are.same({ "setup", "before outer", "before inner", "one", "after inner", "after outer", "finally",
                      "before outer", "two", "after outer", "teardown" }, log)
  end)
end)
]] }
    assert.are.equal("3 passed, 0 failed\n", r.out)
  end)

  it("names nested tests like busted, reports pending ones, and the line of the failing assertion", function()
    local r = run{ ["names_spec.lua"] = [[
local function helper(v)
  assert.is_true(v)
end
describe("a", function()
  context("b", function()
    it("c", function()
      helper(false)
    end)
  end)
  pending("later")
  it("no body yet")
  it("pending inside", function() pending("not yet") end)
end)
]] }
    assert.are.equal(1, r.code)
    assert.are.same({ "names_spec.lua:2: a b c: expected true, got false",
                      "names_spec.lua:10: a later: pending",
                      "names_spec.lua:11: a no body yet: pending",
                      "names_spec.lua:12: a pending inside: pending: not yet",
                      "0 passed, 1 failed" }, lines(r.out))
  end)

  it("has luassert's assertions, chains and negations, with one-line messages", function()
    local specs = {
      'assert.are.equal(1, 1); assert.equals("a", "a"); assert.is_not.equal(1, 2); assert.are_not.equals(1, 2)',
      'assert.are.same({ a = { 1, 2 } }, { a = { 1, 2 } }); assert.is_not.same({ 1 }, { 2 })',
      'assert.is_true(true); assert.is_false(false); assert.truthy(0); assert.falsy(nil); assert.is_nil(nil)',
      'assert.is_not_nil(1); assert.not_nil(1); assert.is_table({}); assert.is_string("s"); assert.is_number(1)',
      'assert.matches("^a%d$", "a1"); assert.does_not.match("b", "a"); assert.near(1, 1.05, 0.1)',
      'assert.has_error(function() error("boom") end, "boom"); assert.has_no.errors(function() end)',
      'assert.has_error(function() error({ code = 1 }) end, { code = 1 }); assert.error(function() error("x") end)',
      'assert.error_matches(function() error("file.lua:3: bad thing") end, "bad %a+")',
      'assert(true, "fine"); assert.is_boolean(false); assert.is_function(print)',
      -- failures, each one line
      'assert.are.equal("b", "a")',
      'assert.are.same({ x = { 1, 2 } }, { x = { 1, 3 } })',
      'assert.is_nil(5, "the count")',
      'assert.has_no.errors(function() error("oops", 0) end)',
      'assert.error_matches(function() end, "x")',
      'assert.is_not.equal(1, 1)',
      'assert(false, "plain assert")',
      'assert.is_spied(1)',
      'spy.on({}, "x")',
    }
    local src = {}
    for i, s in ipairs(specs) do src[#src + 1] = ('it("%d", function() %s end)'):format(i, s) end
    local r = run{ ["asserts_spec.lua"] = table.concat(src, "\n") .. "\n" }
    assert.are.equal(1, r.code)
    local l = lines(r.out)
    assert.are.same({
      'asserts_spec.lua:10: 10: expected "b", got "a"',
      "asserts_spec.lua:11: 11: expected { x = { 1, 2 } }, got { x = { 1, 3 } } (first difference at x[2]: 3, not 2)",
      "asserts_spec.lua:12: 12: the count: expected nil, got 5",
      "asserts_spec.lua:13: 13: expected no error, got: oops",
      'asserts_spec.lua:14: 14: expected an error matching "x", none was raised',
      "asserts_spec.lua:15: 15: expected a value other than 1",
      "asserts_spec.lua:16: 16: plain assert",
    }, { table.unpack(l, 1, 7) })
    assert.truthy(l[8]:find("^asserts_spec.lua:17: 17: assert.is_spied: not available in fluence test's built%-in runner %(it has "), l[8])
    assert.truthy(l[9]:find("^asserts_spec.lua:18: 18: spy, stub, mock and match are not part of fluence test's built%-in runner"), l[9])
    assert.are.equal("9 passed, 9 failed", l[10])
  end)

  it("gives each file its own globals, and finds modules beside the spec", function()
    local r = run{
      ["a_spec.lua"] = 'shared = 1\nlocal h = require("helper")\nit("sets", function() assert.are.equal(2, h.two()) end)\n',
      ["b_spec.lua"] = 'it("does not see a\'s global", function() assert.is_nil(shared) end)\n',
      ["helper.lua"] = "return { two = function() return 2 end }\n",
    }
    assert.are.equal("2 passed, 0 failed\n", r.out)
  end)

  it("fails the tests of a block whose setup fails, and goes on", function()
    local r = run{ ["setup_spec.lua"] = [[
describe("broken", function()
  setup(function() error("no fixture") end)
  it("x", function() end)
end)
it("fine", function() end)
]] }
    assert.are.same({ "setup_spec.lua:3: broken x: setup failed: setup_spec.lua:2: no fixture", "1 passed, 1 failed" },
                    lines(r.out))
  end)
end)
