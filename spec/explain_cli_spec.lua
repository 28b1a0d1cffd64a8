-- `fluence explain`: the table and the JSON.
local cli = require "support.cli"
local json = require "fluence.json"

local EX = cli.root .. "/examples"

describe("fluence explain", function()
  local env = { HOME = "/nonexistent", NO_COLOR = "1" }

  it("shows every backend, the attributes the policy reads with their provider, and each stage", function()
    local r = cli.run{ "explain", "-f", EX .. "/quickstart/job.yaml", "--attributes",
                       EX .. "/quickstart/attributes.yaml", "--offline", env = env }
    assert.are.equal(0, r.code, r.err)
    assert.matches("Pod/training-leader  (", r.out, 1, true)
    assert.matches("BACKEND +COST_USD +MEMORY_GB +1:require:min_memory_gb=24 +2:min%-cost", r.out)
    assert.matches("gpu%-t4 +0%.35 %(file%) +16 %(file%) +dropped: memory_gb 16", r.out)
    assert.matches("gpu%-l4 +0%.8 %(file%) +24 %(file%) +kept +#1", r.out)
    assert.matches("chosen: gpu-l4\n", r.out, 1, true)
    assert.is_nil(r.out:find("\27[", 1, true))      -- NO_COLOR / not a terminal
  end)

  it("gives scripts the same in JSON", function()
    local r = cli.run{ "explain", "-f", EX .. "/quickstart/job.yaml", "--attributes",
                       EX .. "/quickstart/attributes.yaml", "--offline", "-o", "json", env = env }
    assert.are.equal(0, r.code, r.err)
    local doc = json.decode(r.out)
    local o = doc.objects[1]
    assert.are.equal("gpu-l4", o.chosen)
    assert.are.same({ "pool", "require:min_memory_gb=24", "min-cost" }, o.stages)
    for _, b in ipairs(o.backends) do
      if b.name == "gpu-t4" then
        assert.are.equal("dropped", b.stages[2].state)
        assert.are.equal("file", b.attrs.cost_usd.provider)
      end
    end
  end)

  it("explains a failure and exits 1", function()
    local dir = cli.tmpdir()
    local job = cli.write(dir .. "/job.yaml", cli.POD:format("require:memory_gb>=100"))
    local r = cli.run{ "explain", "-f", job, "--attributes", EX .. "/quickstart/attributes.yaml", "--offline",
                       env = env }
    cli.cleanup()
    assert.are.equal(1, r.code)
    assert.matches("failed: ", r.out, 1, true)
    assert.matches("eliminated all candidates", r.out, 1, true)
  end)
end)
