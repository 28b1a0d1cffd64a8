-- The cost model (lua/fluence/cost.lua): units, the workload's duration,
-- estimates, the Go client's rule where inputs say nothing of time, and the
-- refusal to compare a figure without a unit with an hourly estimate.
local cost = require "fluence.cost"
local merge = require "fluence.merge"
local pipeline = require "fluence.pipeline"
local plugins = require "fluence.plugins"
local cli = require "support.cli"

local function near(a, b) return math.abs(a - b) < 1e-9 end

describe("cost.parse_duration", function()
  it("reads seconds and Go-style durations", function()
    assert.are.equal(3600, cost.parse_duration("3600"))
    assert.are.equal(5400, cost.parse_duration("90m"))
    assert.are.equal(5400, cost.parse_duration("1h30m"))
    assert.are.equal(9000, cost.parse_duration("2.5h"))
    assert.are.equal(45, cost.parse_duration(" 45s "))
    assert.are.equal(1.5, cost.parse_duration("1.5"))
  end)

  it("refuses what is not a positive duration", function()
    for _, bad in ipairs{ "", "0", "-5m", "1d", "h", "5 m", "1h30", "abc", "1e3", "0s", "nan" } do
      local v, err = cost.parse_duration(bad)
      assert.is_nil(v, bad)
      assert.matches("is not a duration", err)
    end
  end)
end)

describe("cost.workload", function()
  it("takes the duration the request carries, else one hour", function()
    local w = cost.workload{ pods = 4, shots = 10, pod = { gpu = 2 }, duration = { seconds = 1800, from = "annotation" } }
    assert.are.same({ pods = 4, gpus = 2, shots = 10, seconds = 1800, from = "annotation", stated = true }, w)
    w = cost.workload{ pods = 1, pod = { gpu = 0 } }
    assert.are.same({ pods = 1, gpus = 1, shots = 1000, seconds = 3600, from = "default", stated = false }, w)
    assert.is_false(cost.workload{ duration = { seconds = 60, from = "deadline" } }.stated)
  end)
end)

describe("cost.estimate", function()
  local w1 = cost.workload{}
  it("prices a quantum task: fee + shots x per-shot price", function()
    local usd, basis, hours = cost.estimate({ cost_per_task = 0.3, cost_per_shot = 0.00145 }, w1)
    assert.is_true(near(usd, 0.3 + 1000 * 0.00145))
    assert.are.equal("0.3 USD/task + 1000 shots x 0.00145 USD/shot", basis)
    assert.is_nil(hours)                               -- not scaled: comparable with stated figures
  end)

  it("keeps the Go client's 0.05 x cost_per_minute when the workload states no duration", function()
    local usd, _, hours = cost.estimate({ cost_per_minute = 0.075 }, w1)
    assert.is_true(near(usd, 0.05 * 0.075))
    assert.is_nil(hours)
    -- a deadline is not the time a simulation runs: still the Go rule
    usd = cost.estimate({ cost_per_minute = 0.075 }, cost.workload{ duration = { seconds = 7200, from = "deadline" } })
    assert.is_true(near(usd, 0.05 * 0.075))
  end)

  it("prices a simulator per minute of a stated duration (3 s at least)", function()
    local w = cost.workload{ duration = { seconds = 600, from = "annotation" } }
    local usd, basis, hours = cost.estimate({ cost_per_minute = 0.075 }, w)
    assert.is_true(near(usd, 10 * 0.075))
    assert.matches("0.075 USD/minute x 10 min", basis, 1, true)
    assert.is_true(near(hours, 10 / 60))
    usd = cost.estimate({ cost_per_minute = 0.075 }, cost.workload{ duration = { seconds = 1, from = "annotation" } })
    assert.is_true(near(usd, 0.05 * 0.075))
  end)

  it("prices an instance by the hour, x pods x hours", function()
    local w = cost.workload{ pods = 3, duration = { seconds = 5400, from = "annotation" } }
    local usd, basis, hours = cost.estimate({ price_per_hour = 2 }, w)
    assert.is_true(near(usd, 2 * 3 * 1.5))
    assert.are.equal("2 USD/hour x 3 pods x 1.5 h (the duration annotation)", basis)
    assert.are.equal(4.5, hours)
    usd, basis = cost.estimate({ price_per_hour = 0.55 }, w1)
    assert.are.equal(0.55, usd)
    assert.are.equal("0.55 USD/hour x 1 pod x 1 h (no duration given: one hour)", basis)
  end)

  it("prices a GPU by the GPU-hour, x GPUs per pod (at least 1)", function()
    local w = cost.workload{ pods = 2, pod = { gpu = 4 }, duration = { seconds = 1800, from = "deadline" } }
    local usd, basis = cost.estimate({ price_per_gpu_hour = 3 }, w)
    assert.is_true(near(usd, 3 * 4 * 2 * 0.5))
    assert.matches("4 GPUs x 2 pods x 0.5 h (the object's activeDeadlineSeconds)", basis, 1, true)
  end)

  it("adds GPUs priced apart to their host's price", function()
    local w = cost.workload{ pods = 2, pod = { gpu = 2 } }
    local usd, basis = cost.estimate({ price_per_hour = 1, price_per_gpu_hour = 3 }, w)
    assert.is_true(near(usd, (1 + 3 * 2) * 2))
    assert.are.equal("(1 USD/hour + 3 USD/GPU-hour x 2 GPUs) x 2 pods x 1 h (no duration given: one hour)", basis)
    -- spot only when every part has a spot price
    assert.is_nil(cost.estimate({ price_per_hour = 1, price_per_gpu_hour = 3, spot_price_per_gpu_hour = 1 }, w, true))
    usd = cost.estimate({ price_per_hour = 1, spot_price_per_hour = 0.3, price_per_gpu_hour = 3,
                          spot_price_per_gpu_hour = 1 }, w, true)
    assert.is_true(near(usd, (0.3 + 1 * 2) * 2))
  end)

  it("prices spot from spot prices only", function()
    local a = { price_per_hour = 4, spot_price_per_hour = 1 }
    assert.are.equal(1, (cost.estimate(a, w1, true)))
    assert.is_nil(cost.estimate({ cost_per_task = 1 }, w1, true))
  end)

  it("has nothing to estimate without a price", function()
    assert.is_nil(cost.estimate({ memory_gb = 24 }, w1))
    assert.is_nil(cost.estimate({ price_per_hour = "cheap" }, w1))
  end)
end)

describe("cost.apply", function()
  local function merged(results, req)
    local state = { results = results }
    state.merged = assert(merge.merge(results))
    cost.apply(state, req or {}, merge)
    local by = {}
    for _, b in ipairs(state.merged) do by[b.name] = b end
    return by
  end

  it("fills cost_usd from unit prices, never over a stated one, and says how", function()
    local by = merged({ { provider = "file", backends = {
      { name = "stated", attrs = { cost_usd = 7, price_per_hour = 1 } },
      { name = "hourly", attrs = { price_per_hour = 2, spot_price_per_hour = 0.5 } },
      { name = "plain", attrs = { memory_gb = 8 } } } } }, { pods = 2 })
    assert.are.equal(7, by.stated.attrs.cost_usd)
    assert.are.equal("file", by.stated.source.cost_usd)
    assert.are.equal(4, by.hourly.attrs.cost_usd)
    assert.are.equal(cost.PROVIDER, by.hourly.source.cost_usd)
    assert.are.equal("2 USD/hour x 2 pods x 1 h (no duration given: one hour)", by.hourly.attrs.cost_basis)
    assert.are.equal(1, by.hourly.attrs.spot_cost_usd)
    assert.is_nil(by.plain.attrs.cost_usd)
  end)

  it("estimates from prices another provider gave", function()
    local by = merged({ { provider = "file", backends = { { name = "vm", attrs = { cloud = "aws" } } } },
                        { provider = "aws-prices", backends = { { name = "vm", attrs = { price_per_hour = 3 } } } } })
    assert.are.equal(3, by.vm.attrs.cost_usd)
  end)

  it("is the name the pipeline looks for", function()
    assert.are.equal(cost.PROVIDER, pipeline.COST_MODEL)
  end)
end)

describe("units that cannot be reconciled", function()
  local reg = plugins.load_policies{ source_dir = cli.root, home = "", path = "" }
  local function run(policy, backends, req)
    local state = { results = { { provider = "file", backends = backends } } }
    state.merged = assert(merge.merge(state.results))
    cost.apply(state, req or {}, merge)
    local pl = assert(pipeline.compile(policy, { policies = reg }))
    return pl:run(state.merged, req or {})
  end

  it("compare hourly estimates with each other and with per-task costs", function()
    local r = run("min-cost", { { name = "big", attrs = { price_per_hour = 240 } },
                                { name = "l4", attrs = { price_per_hour = 0.55 } },
                                { name = "qpu", attrs = { cost_per_task = 0.3, cost_per_shot = 0.01 } } })
    assert.is_true(r.ok, r.error)
    assert.are.equal("l4", r.chosen)
  end)

  it("compare stated figures with per-task and per-minute ones, as the Go client did", function()
    local r = run("min-cost", { { name = "gpu", attrs = { cost_usd = 0.8 } },
                                { name = "sim", attrs = { cost_per_minute = 0.075 } } })
    assert.is_true(r.ok, r.error)
    assert.are.equal("sim", r.chosen)
  end)

  it("stop a stage that would compare a stated figure with an hourly estimate, naming both", function()
    local r = run("require:memory_gb>=1,min-cost", {
      { name = "gpu-l4", attrs = { cost_usd = 0.55, memory_gb = 24 } },
      { name = "gpu-big", attrs = { price_per_hour = 240, memory_gb = 80 } } })
    assert.is_false(r.ok)
    assert.are.equal(2, r.failed_stage)
    assert.is_falsy(r.plugin_error)
    assert.matches('^policy "min%-cost": cannot compare cost_usd: one is stated without a unit %(gpu%-l4%), ' ..
                   "one is estimated for this workload from hourly prices %(gpu%-big%)", r.error)
  end)

  it("include a per-task cost a provider computed from its own task and shot prices", function()
    local r = run("min-cost", { { name = "qpu", attrs = { cost_usd = 1.3, cost_per_task = 0.3, cost_per_shot = 0.001 } },
                                { name = "vm", attrs = { price_per_hour = 2 } } })
    assert.is_true(r.ok, r.error)
    assert.are.equal("qpu", r.chosen)
  end)

  it("are no matter once an earlier stage has dropped one side", function()
    local r = run("require:memory_gb>=32,min-cost", {
      { name = "gpu-l4", attrs = { cost_usd = 0.55, memory_gb = 24 } },
      { name = "gpu-big", attrs = { price_per_hour = 240, memory_gb = 80 } } })
    assert.is_true(r.ok, r.error)
    assert.are.equal("gpu-big", r.chosen)
  end)
end)

describe("cost.describe", function()
  it("shows each price with its unit, provider and age, and the estimate", function()
    local rec = { request = { pods = 2 }, all = {
      { name = "vm", attrs = { price_per_hour = 2, price_time = 1000, spot_price_per_hour = 0.5,
                               spot_price_time = 3400, spot_zone = "us-east-1b", cost_usd = 4,
                               cost_basis = "2 USD/hour x 2 pods x 1 h (no duration given: one hour)" },
        source = { price_per_hour = "aws-prices", spot_price_per_hour = "aws-prices", cost_usd = cost.PROVIDER,
                   price_time = "aws-prices", spot_price_time = "aws-prices" } },
      { name = "mixed", attrs = { price_per_hour = 1, price_time = 1000, price_per_gpu_hour = 2 },
        source = { price_per_hour = "file", price_per_gpu_hour = "gcp-prices", price_time = "gcp-prices" } },
      { name = "none", attrs = { memory_gb = 4 }, source = {} } } }
    local lines = cost.describe(rec, 4600)
    assert.are.same({
      "prices (workload: 2 pods, 1 h (no duration given: one hour)):",
      "  vm: price_per_hour 2 USD/hour (aws-prices, 1 h old); spot_price_per_hour 0.5 USD/hour " ..
      "(aws-prices, 20 min old, zone us-east-1b); cost_usd 4 = 2 USD/hour x 2 pods x 1 h (no duration given: one hour)",
      -- a price from a file has no age; the one fetched with the time has
      "  mixed: price_per_hour 1 USD/hour (file); price_per_gpu_hour 2 USD/GPU-hour (gcp-prices, 1 h old)",
    }, lines)
    assert.are.same({}, cost.describe({ all = { { name = "x", attrs = { cost_usd = 1 }, source = {} } } }, 0))
  end)
end)
