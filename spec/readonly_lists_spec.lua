-- fluence.readonly's stage lists (ro.inputs, ro.collect): a stage's index
-- is keyed by the views alone, so a list handed back that holds a backend
-- itself, or a backend and its view, is found through the view cache.
local readonly = require "fluence.readonly"

local function pool_of(...)
  local pool = {}
  for i, n in ipairs{ ... } do pool[i] = { name = n, attrs = { x = i } } end
  return pool
end

-- collect(out, pool, input, index [, reasons]) -> next_pool, changed, next_input, next_index | nil, why
-- plus the kept names, this stage's and the run's dropped reasons
local function collect(ro, out, pool, input, index, reasons)
  local kept, dropped, all = {}, {}, {}
  local np, changed, ni, nx = ro.collect(out, pool, input, index, kept, reasons, "default", dropped, all)
  return { np = np, changed = changed, ni = ni, nx = nx, kept = kept, dropped = dropped, all = all }
end

describe("fluence.readonly stage lists", function()
  it("views in, views of the same backends out, the dropped with their reasons", function()
    local ro = readonly.new()
    local pool = pool_of("a", "b", "c")
    local input, index = ro.inputs(pool)
    assert.is_true(ro.is_view(input[1]))
    assert.are.equal(pool[2], ro.unwrap(input[2]))
    local r = collect(ro, { input[3], input[1] }, pool, input, index, { b = "too slow" })
    assert.are.same({ "c", "a" }, r.kept)
    assert.are.equal(pool[3], r.np[1])
    assert.are.equal(input[3], r.ni[1])
    assert.is_true(r.changed)
    assert.are.same({ b = "too slow" }, r.dropped)
    -- the next stage's index knows the carried views
    local r2 = collect(ro, { r.ni[2] }, r.np, r.ni, r.nx)
    assert.are.same({ "a" }, r2.kept)
    assert.are.same({ c = "default" }, r2.dropped)
  end)

  it("finds a backend handed back itself, not as its view", function()
    local ro = readonly.new()
    local pool = pool_of("a", "b", "c")
    local input, index = ro.inputs(pool)
    local r = collect(ro, { pool[2], input[3] }, pool, input, index)
    assert.are.same({ "b", "c" }, r.kept)
    assert.are.equal(input[2], r.ni[1])
    assert.is_false(r.changed)
    assert.are.same({ a = "default" }, r.dropped)
    -- and in the next stage too, through the carried views
    local r2 = collect(ro, { r.np[2] }, r.np, r.ni, r.nx)
    assert.are.same({ "c" }, r2.kept)
  end)

  it("a backend and its view are the same backend: twice", function()
    local ro = readonly.new()
    local pool = pool_of("a", "b")
    local input, index = ro.inputs(pool)
    assert.are.same({ nil, "twice" }, { ro.collect({ pool[1], input[1] }, pool, input, index, {}, nil, "d", {}, {}) })
    assert.are.same({ nil, "twice" }, { ro.collect({ input[2], pool[2] }, pool, input, index, {}, nil, "d", {}, {}) })
  end)

  it("a table that has a view but is not in the input is foreign", function()
    local ro = readonly.new()
    local pool = pool_of("a", "b")
    local input, index = ro.inputs(pool)
    local attrs_view = input[1].attrs            -- a view, of a table not in the pool
    assert.are.same({ nil, "foreign" }, { ro.collect({ attrs_view }, pool, input, index, {}, nil, "d", {}, {}) })
    assert.are.same({ nil, "foreign" }, { ro.collect({ pool[1].attrs }, pool, input, index, {}, nil, "d", {}, {}) })
    assert.are.same({ nil, "foreign" }, { ro.collect({ { name = "a" } }, pool, input, index, {}, nil, "d", {}, {}) })
    assert.are.same({ nil, "foreign" }, { ro.collect({ "a" }, pool, input, index, {}, nil, "d", {}, {}) })
  end)

  it("a pool holding one backend twice: its last position", function()
    local ro = readonly.new()
    local pool = pool_of("a", "b")
    pool[3] = pool[1]
    local input, index = ro.inputs(pool)
    assert.are.equal(input[1], input[3])
    local r = collect(ro, { input[1] }, pool, input, index)
    assert.are.same({ "a" }, r.kept)
    assert.are.same({ b = "default" }, r.dropped)
  end)

  it("many backends: every one found, views or backends", function()
    local ro = readonly.new()
    local names = {}
    for i = 1, 5000 do names[i] = ("b%05d"):format(i) end
    local pool = pool_of(table.unpack(names))
    local input, index = ro.inputs(pool)
    local out = {}
    for i = 5000, 1, -1 do out[#out + 1] = i % 2 == 0 and input[i] or pool[i] end
    local r = collect(ro, out, pool, input, index)
    assert.are.equal(5000, #r.kept)
    assert.are.equal("b05000", r.kept[1])
    assert.are.equal("b00001", r.kept[5000])
    assert.is_true(r.changed)
    assert.are.same({}, r.dropped)
  end)
end)
