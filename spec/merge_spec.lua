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

  it("shares a source table among a trusted provider's backends of one shape of names, and only those", function()
    local function attrs(n, first)
      local t = {}
      for i = 1, n do t[("k%02d"):format(i)] = first + i end
      return t
    end
    local big1, big2 = attrs(20, 0), attrs(20, 100)        -- more names than a shape keeps by address
    local reordered = {}
    reordered.memory_gb, reordered.cost_usd = 1, 2
    local backends = {
      { name = "a", attrs = { cost_usd = 1, memory_gb = 2 } },
      { name = "b", attrs = { cost_usd = 3, memory_gb = 4 } },
      { name = "c", attrs = reordered },
      { name = "d", attrs = { cost_usd = 5, region = "x" } },
      { name = "e", attrs = big1 },
      { name = "f", attrs = big2 },
      { name = "g", attrs = attrs(19, 0) },
    }
    for i = 1, 12 do                                       -- more shapes than the merge keeps
      backends[#backends + 1] = { name = ("z%02d"):format(i), attrs = { ["only" .. i] = i } }
    end
    local r = assert(merge.merge{
      { provider = "file", trusted = true, backends = backends },
      { provider = "live", backends = { { name = "b", attrs = { queue_size = 7 } } } },
    })
    local by = {}
    for _, x in ipairs(r) do by[x.name] = x end
    local function names_of(t)
      local s = {}
      for k, v in pairs(t) do s[k] = v end
      return s
    end
    for _, x in ipairs(r) do                               -- every name's provider, no other
      local want = {}
      for k in pairs(x.attrs) do want[k] = (x.name == "b" and k == "queue_size") and "live" or "file" end
      assert.are.same(want, names_of(x.source))
    end
    assert.are.equal(by.a.source, by.c.source)             -- the same names, set in another order
    assert.are_not.equal(by.a.source, by.d.source)         -- as many names, others
    assert.are.equal(by.e.source, by.f.source)             -- 20 names: compared one by one
    assert.are_not.equal(by.e.source, by.g.source)
    assert.are_not.equal(by.a.source, by.b.source)         -- b's was copied before live wrote to it
    assert.are.same({ cost_usd = "file", memory_gb = "file" }, names_of(by.a.source))
    assert.are.same({ cost_usd = 3, memory_gb = 4, queue_size = 7 }, by.b.attrs)
    assert.are.same({ cost_usd = 1, memory_gb = 2 }, by.a.attrs)
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
