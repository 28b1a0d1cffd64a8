-- ro.getter: attr(b, key) is b.attrs[key] as a plugin holding the view b
-- reads it, in one C call; whatever that call does not take (not a view, a
-- backend with a metatable, attrs not a table) is the fallback's, so the
-- answers and the errors are the ones `b.attrs[key]` gives.
local readonly = require "fluence.readonly"

describe("fluence.readonly getter", function()
  local ro, attr, fallbacks
  before_each(function()
    ro = readonly.new()
    fallbacks = 0
    attr = ro.getter(function(b, key)
      fallbacks = fallbacks + 1
      return b.attrs[key]
    end)
  end)

  it("reads a view's attributes in C, table values as their views", function()
    local inner = { x = 1 }
    local b = { name = "a", attrs = { cost_usd = 2.5, status = "ONLINE", nested = inner } }
    local v = ro.view(b)
    assert.are.equal(2.5, attr(v, "cost_usd"))
    assert.are.equal("ONLINE", attr(v, "status"))
    assert.is_nil(attr(v, "missing"))
    assert.is_nil(attr(v, nil))
    local n = attr(v, "nested")
    assert.is_true(ro.is_view(n))
    assert.are.equal(inner, ro.unwrap(n))
    assert.are.equal(v.attrs.nested, n)          -- one view per table, either way
    assert.are.equal(0, fallbacks)
  end)

  it("the same answers as b.attrs[key] through the views", function()
    local b = ro.view{ name = "a", attrs = setmetatable({ a = 1 }, { __index = function(_, k) return k .. "!" end }) }
    for _, k in ipairs{ "a", "b", "zz" } do assert.are.equal(b.attrs[k], attr(b, k)) end
    assert.are.equal(0, fallbacks)
  end)

  it("leaves to the fallback what is not a view of a plain backend with an attrs table", function()
    assert.are.equal(3, attr({ attrs = { x = 3 } }, "x"))                 -- not a view
    assert.are.equal(1, fallbacks)
    local meta = ro.view(setmetatable({ attrs = { x = 4 } }, {}))
    assert.are.equal(4, attr(meta, "x"))                                   -- a backend with a metatable
    assert.are.equal(2, fallbacks)
    local e1 = select(2, pcall(function() return ro.view{ name = "n" }.attrs.x end))
    local ok, e2 = pcall(attr, ro.view{ name = "n" }, "x")                -- no attrs: the fallback's error
    assert.is_false(ok)
    assert.are.equal(3, fallbacks)
    assert.are.equal(e1:gsub("^[^:]*:%d+: ", ""), e2:gsub("^[^:]*:%d+: ", ""))
    assert.has_error(function() attr("text", "x") end)
    assert.has_error(function() ro.getter("not a function") end)
  end)

  it("never writes through: the view stays read-only", function()
    local b = ro.view{ attrs = { t = { 1 } } }
    local t = attr(b, "t")
    assert.has_error(function() t[1] = 2 end)
  end)
end)
