-- fluence.tablecopy, which makes the copies of the libraries every plugin's
-- sandbox environment holds (lua/fluence/sandbox.lua).
local copy = require("fluence.tablecopy").copy

describe("fluence.tablecopy", function()
  it("copies every key and value into a new table", function()
    local t = { 1, 2, 3, a = "x", [true] = false, [2.5] = "f" }
    local c = copy(t)
    assert.are_not.equal(t, c)
    assert.are.same(t, c)
    c.a = "changed"
    assert.are.equal("x", t.a)
  end)

  it("leaves out the keys set in drop", function()
    assert.are.same({ b = 2 }, copy({ a = 1, b = 2, c = 3 }, { a = true, c = 1 }))
    assert.are.same({ a = 1, c = 3 }, copy({ a = 1, c = 3 }, { a = false }))
  end)

  it("copies raw: no __pairs, no __index, no metatable", function()
    local t = setmetatable({ a = 1 }, { __index = { b = 2 }, __pairs = function() error("called") end })
    local c = copy(t)
    assert.are.same({ a = 1 }, c)
    assert.is_nil(getmetatable(c))
  end)

  it("copies a library as the Lua loop did", function()
    local want = {}
    for k, v in pairs(string) do if k ~= "dump" then want[k] = v end end
    assert.are.same(want, copy(string, { dump = true }))
    assert.are.same({}, copy({}))
  end)

  it("refuses what is not a table", function()
    assert.has_error(function() copy("x") end)
    assert.has_error(function() copy(nil) end)
  end)
end)
