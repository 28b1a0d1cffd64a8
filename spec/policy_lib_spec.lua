-- The helper library policy plugins get through ctx (lua/fluence/policy_lib.lua):
-- ctx.tolerance, ctx.rank, ctx.reason, ctx.value -- used by the built-in
-- rankers and open to user plugins, inside their sandbox (issue 15).
local pipeline = require "fluence.pipeline"
local plugins = require "fluence.plugins"
local cli = require "support.cli"

local root = os.getenv("PWD")

local function B(name, attrs) return { name = name, attrs = attrs or {} } end
local function names(list)
  local out = {}
  for i, b in ipairs(list) do out[i] = b.name end
  return out
end

local pool = {
  B("a", { cost_usd = 1.0, speed = 10 }),
  B("b", { cost_usd = 1.04, speed = 30 }),
  B("c", { cost_usd = 1.3, speed = 29 }),
  B("d", { speed = "fast" }),
}

describe("the policy helper library", function()
  local reg
  setup(function()
    local dir = cli.tmpdir()
    -- a user plugin ranking by a computed value through ctx.rank
    cli.write(dir .. "/fastest.lua", [[
return {
  name = "fastest", description = "fastest~N: rank by speed, fastest first",
  tolerance = true, args = false,
  compile = function(stage, ctx)
    local band = ctx.tolerance(stage, "speed", 0)
    return function(backends)
      return ctx.rank(backends, function(b) return b.attrs.speed end,
                      { descending = true, tolerance = band, label = "speed" })
    end, { "speed" }
  end,
}
]])
    -- one reporting what the helpers return, as a drop reason
    cli.write(dir .. "/show.lua", [[
return {
  name = "show", description = "show: reasons from ctx.reason", args = false, tolerance = true,
  compile = function(stage, ctx)
    local band = ctx.tolerance(stage, "cost_usd")
    return function(backends)
      local reasons = {}
      for _, b in ipairs(backends) do
        reasons[b.name] = table.concat({ ctx.reason.missing("x"), ctx.reason.band("cost_usd", 1.3, band, 1),
          ctx.reason.wants("status", "OFFLINE", "= ONLINE"), ctx.value(0.3), tostring(band.relative) }, "; ")
      end
      return {}, reasons
    end
  end,
}
]])
    reg = plugins.load_policies{ dirs = { dir }, source_dir = root, home = "", path = "" }
  end)
  teardown(cli.cleanup)

  local function run(text, opts)
    opts = opts or {}
    opts.policies = reg
    local pl, err = pipeline.compile(text, opts)
    assert(pl, err and err.message)
    return pl:run(pool, {})
  end

  it("ranks a user plugin's computed value, dropping backends without a number", function()
    local r = run("fastest")
    assert.are.same({ "b" }, names(r.survivors))
    assert.are.same({ a = "speed 10 is not within 0 of the best (30)",
                      c = "speed 29 is not within 0 of the best (30)",
                      d = 'no attribute "speed"' }, r.dropped)
    assert.are.same({ "b", "c" }, names(run("fastest~1").survivors))
    assert.are.same({ "b", "c" }, names(run("fastest~5%").survivors))
  end)

  it("rejects a negative stage tolerance at its position", function()
    local pl, err = pipeline.compile("fastest~-1", { policies = reg })
    assert.is_nil(pl)
    assert.matches('select%-policy:1:9: tolerance must not be negative', err.message)
  end)

  it("gives --cost-tol, absolute or relative, to cost and queue only", function()
    local r = run("show", { cost_tol = "5%" })
    assert.are.equal('no attribute "x"; cost_usd 1.3 is not within 5% of the best (1); ' ..
                     'status "OFFLINE", wants = ONLINE; 0.3; true', r.dropped.a)
    r = run("show", { cost_tol = 0.25 })
    assert.matches("not within 0.25 of the best", r.dropped.a, 1, true)
    -- a stage's own tolerance wins over --cost-tol
    assert.matches("not within 2%% of the best", run("show~2%", { cost_tol = 0.25 }).dropped.a)
    -- other attributes rank exact ties whatever --cost-tol says
    assert.are.same({ "b" }, names(run("fastest", { cost_tol = 100 }).survivors))
  end)

  it("is what the built-in rankers use: a relative --cost-tol reaches min-cost", function()
    assert.are.same({ "a", "b" }, names(run("min-cost", { cost_tol = "5%" }).survivors))
    assert.are.same({ "a" }, names(run("min-cost", { cost_tol = "3%" }).survivors))
    assert.are.same({ "a" }, names(run("min-cost", { cost_tol = 0.03 }).survivors))
  end)

  it("fails the selection when no backend has a number", function()
    local r = run("min-latency")
    assert.is_false(r.ok)
    assert.are.equal('policy "min-latency": no candidate has attribute "latency" (missing: a, b, c, d)', r.error)
  end)

  it("refuses a --cost-tol that is not a band", function()
    for _, bad in ipairs{ "abc", "-1", "nan", -1, 0 / 0, math.huge } do
      local pl, err = pipeline.compile("min-cost", { policies = reg, cost_tol = bad })
      assert.is_nil(pl, tostring(bad))
      assert.are.equal("USAGE", err.kind)
    end
  end)
end)
