-- Specs for providers/gpu-pricing.lua: `fluence test examples`.  The
-- catalog is given as a file the provider reads (files =), or the real
-- one in ../gpu-catalog (paths a provider reads are relative to this spec).
local t = require("fluence.testing")

local CATALOG = [[
# a comment
name,instance_type,accelerator,gpu_count,memory_gb,region,on_demand_hourly,spot_hourly
gpu-l4,g6.xlarge,L4,1,24,us-east-1,0.805,0.32
gpu-big,p5.48xlarge,H100,8,80,us-east-1,98.32,
]]

describe("gpu-pricing", function()
  it("turns each catalog row into a backend", function()
    local backends, notes = t.provider("gpu-pricing", { env = { FLUENCE_GPU_CATALOG = "catalog.csv" },
                                                          files = { ["catalog.csv"] = CATALOG } })
    assert.are.same({}, notes)
    assert.are.same({ "gpu-l4", "gpu-big" }, { backends[1].name, backends[2].name })
    assert.are.same({ cost_usd = 0.805, spot_cost_usd = 0.32, gpu_count = 1, memory_gb = 24, total_memory_gb = 24,
                      accelerator = "L4", instance_type = "g6.xlarge", region = "us-east-1" }, backends[1].attrs)
    assert.is_nil(backends[2].attrs.spot_cost_usd)            -- a blank spot price: no spot offer
    assert.are.equal(640, backends[2].attrs.total_memory_gb)
  end)

  it("reads the example catalog", function()
    local backends = t.provider("gpu-pricing", { env = { FLUENCE_GPU_CATALOG = "../gpu-catalog/catalog.csv" } })
    assert.are.equal(5, #backends)
  end)

  it("finds ~/.fluence/gpu-catalog.csv without the variable", function()
    local backends = t.provider("gpu-pricing", { env = { HOME = "/home/me" },
                                                 files = { ["/home/me/.fluence/gpu-catalog.csv"] = CATALOG } })
    assert.are.equal(2, #backends)
  end)

  it("names the file and line of a bad price", function()
    local bad = CATALOG:gsub("0%.805", "cheap")
    local ok, err = pcall(t.provider, "gpu-pricing", { env = { FLUENCE_GPU_CATALOG = "catalog.csv" },
                                                       files = { ["catalog.csv"] = bad } })
    assert.is_false(ok)
    assert.matches('catalog.csv:3: on_demand_hourly: "cheap" is not a number', err, 1, true)
  end)

  it("says how to point it at a catalog when there is none", function()
    assert.error_matches(function() t.provider("gpu-pricing", { env = { FLUENCE_GPU_CATALOG = "missing.csv" } }) end,
                         "(set FLUENCE_GPU_CATALOG)", 1, true)
  end)
end)
