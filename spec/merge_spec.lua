local merge = require "fluence.merge"

describe("fluence.merge", function()
  it("merges by name; later providers override; provenance per attribute", function()
    local r = assert(merge.merge{
      { provider = "file", backends = {
          { name = "b", attrs = { cost_usd = 2, status = "ONLINE" } },
          { name = "a", attrs = { cost_usd = 1 } } } },
      { provider = "braket-live", backends = {
          { name = "b", attrs = { status = "OFFLINE", queue_size = 4 } },
          { name = "c", attrs = { queue_size = 1 } } } },
    })
    assert.are.same({ "a", "b", "c" }, { r[1].name, r[2].name, r[3].name })
    assert.are.same({ cost_usd = 2, status = "OFFLINE", queue_size = 4 }, r[2].attrs)
    assert.are.same({ cost_usd = "file", status = "braket-live", queue_size = "braket-live" }, r[2].source)
    assert.are.same({ queue_size = "braket-live" }, r[3].source)
  end)

  it("keeps backends without attributes", function()
    local r = assert(merge.merge{ { provider = "configmap", backends = { { name = "x" } } } })
    assert.are.same({}, r[1].attrs)
  end)

  it("names the provider and backend of malformed results", function()
    local cases = {
      { { provider = "p", backends = 3 }, 'provider "p" returned number instead of a list of backends' },
      { { provider = "p", backends = { { attrs = {} } } }, 'provider "p": backend #1 has no name' },
      { { provider = "p", backends = { { name = "" } } }, 'provider "p": backend #1 has no name' },
      { { provider = "p", backends = { "x" } }, 'provider "p": backend #1 is a string, not a table' },
      { { provider = "p", backends = { { name = "n", attrs = { x = {} } } } },
        'provider "p": backend "n": attribute "x" must be a string, number or boolean' },
      { { provider = "p", backends = { { name = "n", attrs = { x = 0 / 0 } } } },
        'provider "p": backend "n": attribute "x" is not a finite number' },
      { { provider = "p", backends = { { name = "n", attrs = { [1] = 2 } } } },
        'provider "p": backend "n": attribute names must be strings' },
    }
    for _, c in ipairs(cases) do
      local r, err = merge.merge{ c[1] }
      assert.is_nil(r)
      assert.are.equal(c[2], err)
    end
  end)

  it("takes a trusted provider's attrs as they are, and copies one before another provider adds to it", function()
    local shared = { cost_usd = 1, status = "ONLINE" }
    local own = { cost_usd = 3 }
    local r = assert(merge.merge{
      { provider = "file", trusted = true, backends = {
          { name = "a", attrs = shared }, { name = "b", attrs = shared }, { name = "c", attrs = own } } },
      { provider = "live", backends = { { name = "a", attrs = { status = "OFFLINE" } },
                                        { name = "a", attrs = { queue_size = 2 } } } },
      { provider = "file2", trusted = true, backends = { { name = "c", attrs = { cost_usd = 4 } } } },
    })
    local by = {}
    for _, b in ipairs(r) do by[b.name] = b end
    assert.are.same({ cost_usd = 1, status = "OFFLINE", queue_size = 2 }, by.a.attrs)
    assert.are.same({ cost_usd = 1, status = "ONLINE" }, by.b.attrs)
    assert.are.same({ cost_usd = 4 }, by.c.attrs)
    assert.are.same({ cost_usd = "file", status = "live", queue_size = "live" }, by.a.source)
    assert.are.same({ cost_usd = "file", status = "file" }, by.b.source)
    assert.are.same({ cost_usd = "file2" }, by.c.source)
    -- what the providers returned is untouched
    assert.are.same({ cost_usd = 1, status = "ONLINE" }, shared)
    assert.are.same({ cost_usd = 3 }, own)
    -- an untrusted provider's tables are always copied
    local mine = { cost_usd = 5 }
    local r2 = assert(merge.merge{ { provider = "user", backends = { { name = "u", attrs = mine } } } })
    assert.are_not.equal(mine, r2[1].attrs)
    assert.are.same(mine, r2[1].attrs)
  end)

  it("merges 10,000 backends quickly", function()
    local list = {}
    for i = 1, 10000 do list[i] = { name = ("b%05d"):format(i), attrs = { cost_usd = i, memory_gb = i % 7 } } end
    local t0 = os.clock()
    local r = assert(merge.merge{ { provider = "a", backends = list }, { provider = "b", backends = list } })
    assert.are.equal(10000, #r)
    assert.is_true(os.clock() - t0 < 1)
  end)
end)
