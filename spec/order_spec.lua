-- fluence.order (core/order.c): pipeline.sort_by's numbers sorted in C must
-- come out exactly as the Lua sort (stable, by key, ties in input order)
-- would have them; whatever C cannot promise that for, it leaves alone.
local order = require "fluence.order"

-- the Lua sort sort_by falls back to
local function lua_sort_by(list, keys, descending)
  local idx = {}
  for i = 1, #keys do idx[i] = i end
  table.sort(idx, function(a, b)
    local ka, kb = keys[a], keys[b]
    if ka ~= kb then
      if descending then return ka > kb end
      return ka < kb
    end
    return a < b
  end)
  local out = {}
  for i, j in ipairs(idx) do out[i] = list[j] end
  return out
end

describe("order.by_keys", function()
  it("sorts as the Lua sort does: ties in order, integers and floats, both directions", function()
    local seed = 5
    local function rand(m)
      seed = (seed * 1103515245 + 12345) % 2147483648
      return (seed >> 15) % m + 1
    end
    for round = 1, 300 do
      local n = rand(60) - 1
      local list, keys = {}, {}
      for i = 1, n do
        list[i] = { id = i }
        local k = rand(9) - 5
        if rand(3) == 1 then k = k + 0.5 elseif rand(4) == 1 then k = k * 1.0 end
        if rand(20) == 1 then k = -math.huge elseif rand(20) == 1 then k = math.huge end
        keys[i] = k
      end
      for _, desc in ipairs{ false, true } do
        local expect = lua_sort_by(list, keys, desc)
        local got = {}
        for i = 1, n do got[i] = list[i] end
        assert.is_true(order.by_keys(got, keys, n, desc))
        for i = 1, n do assert.are.equal(expect[i], got[i], ("round %d, %s, position %d"):format(round, tostring(desc), i)) end
      end
    end
  end)

  it("leaves alone what it cannot sort as Lua would", function()
    local function untouched(list, keys)
      local copy = { table.unpack(list) }
      assert.is_false(order.by_keys(list, keys, #keys))
      assert.are.same(copy, list)
    end
    untouched({ "a", "b" }, { 2, "x" })                         -- not a number
    untouched({ "a", "b" }, { 0 / 0, 1 })                       -- NaN
    untouched({ "a", "b" }, { math.maxinteger, 1.5 })           -- too large to compare as a double
    untouched(setmetatable({ "a", "b" }, {}), { 2, 1 })         -- the plugin's metatable
  end)
end)

describe("order.names_sorted", function()
  it("tells a list strictly sorted by name, in Lua's string order", function()
    local function b(n) return { name = n } end
    assert.is_true(order.names_sorted{})
    assert.is_true(order.names_sorted{ b "a", b "a\0b", b "ab", b "b" })
    assert.is_false(order.names_sorted{ b "a", b "a" })                  -- equal: a stable sort matters
    assert.is_false(order.names_sorted{ b "b", b "a" })
    assert.is_false(order.names_sorted{ b "a", { name = 5 } })
    assert.is_false(order.names_sorted{ b "a", setmetatable(b "b", {}) })
  end)
end)
