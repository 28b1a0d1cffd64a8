-- Specs for policies/gang-budget.lua: `fluence test examples/user-policy`
-- (the policy is found in ../policies, this test's project).
local t = require("fluence.testing")

describe("gang-budget", function()
  local gpus = {
    { name = "gpu-a100", attrs = { cost_usd = 3.2, throughput = 312 } },
    { name = "gpu-l4", attrs = { cost_usd = 0.8, throughput = 121 } },
    { name = "gpu-t4", attrs = { cost_usd = 0.35, throughput = 65 } },
    { name = "unpriced", attrs = { throughput = 1000 } },
  }

  it("keeps the backends the whole gang can afford, in their order", function()
    local r = t.rank("gang-budget:4", gpus, { pods = 4 })
    assert.are.same({ "gpu-l4", "gpu-t4" }, r.order)
    assert.are.equal("4 pods x 3.2 = 12.8, over the budget of 4", r.dropped["gpu-a100"])
    assert.are.equal('no attribute "cost_usd"', r.dropped.unpriced)
  end)

  it("counts the pods of the request: one pod affords more", function()
    local r = t.rank("gang-budget:4", gpus, { pods = 1 })
    assert.are.same({ "gpu-a100", "gpu-l4", "gpu-t4" }, r.order)
  end)

  it("leaves the ranking to the next stage", function()
    assert.are.equal("gpu-l4", t.rank("gang-budget:4,max-throughput", gpus, { pods = 4 }).chosen)
    assert.are.equal("gpu-t4", t.rank("gang-budget:4,min-cost", gpus, { pods = 4 }).chosen)
  end)

  it("fails the selection when nothing is affordable", function()
    local r = t.rank("gang-budget:1", gpus, { pods = 4 })
    assert.is_nil(r.chosen)
    assert.matches("eliminated all candidates", r.error)
  end)

  it("rejects a budget that is not a non-negative number, at the argument", function()
    assert.error_matches(function() t.rank("gang-budget:-1", gpus) end, "takes one non-negative number", 1, true)
    -- the message points at the argument: column 13 of the policy text
    local ok, err = pcall(t.rank, "gang-budget:cheap", gpus)
    assert.is_false(ok)
    assert.matches("^policy:1:13: gang%-budget takes one non%-negative number", err)
  end)
end)
