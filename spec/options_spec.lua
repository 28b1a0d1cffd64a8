-- Numeric options are checked on the command line: a value that is not a
-- finite, non-negative decimal number is a usage error (exit 2) naming the
-- option and the value, never a silent 0 (issue 15).  --cost-tol also takes
-- N% (a band relative to the best value, as ~N% in a policy).
local cli = require "support.cli"
local yaml = require "fluence.yaml"

local P = "fluence.flux-framework.org/"

describe("numeric options", function()
  local dir, job, attrs
  setup(function()
    dir = cli.tmpdir()
    job = cli.write(dir .. "/job.yaml", cli.POD:format("min-cost"))
    attrs = cli.write(dir .. "/attrs.yaml", [[
version: 1
backends:
  - {name: a, attributes: {cost_usd: 1.00}}
  - {name: b, attributes: {cost_usd: 1.04}}
  - {name: c, attributes: {cost_usd: 1.30}}
]])
  end)
  teardown(cli.cleanup)

  local function select(...)
    local args = { "select", "-f", job, "--attributes", attrs, "--offline", env = { HOME = dir } }
    for _, a in ipairs{ ... } do args[#args + 1] = a end
    return cli.run(args)
  end

  local function survivors(r)
    local ann = yaml.decode(r.out).metadata.annotations
    local out = {}
    for i, c in ipairs(require("fluence.json").decode(ann[P .. "select-result"]).candidates) do out[i] = c.name end
    return out
  end

  for _, bad in ipairs{ "abc", "nan", "NaN", "inf", "-inf", "infinity", "1e400", "0x10", "-1", "-0.5",
                        "", " 1", "1 ", "1e", "5%%", "%", "1,5", "--1" } do
    it(("refuses --cost-tol %q with exit 2, naming the option and the value"):format(bad), function()
      local r = select("--cost-tol", bad)
      assert.are.equal(2, r.code, r.err)
      assert.are.equal("", r.out)
      assert.are.equal(('fluence: --cost-tol: "%s" is not a number >= 0, or a percentage of the best value ' ..
                        "(like 0.05 or 5%%) (see 'fluence select --help')\n"):format(bad), r.err)
    end)
  end

  it("refuses a bad value given with = and for every verb that takes the option", function()
    for _, verb in ipairs{ "select", "explain", "apply", "create" } do
      local r = cli.run{ verb, "-f", job, "--cost-tol=nan", env = { HOME = dir } }
      assert.are.equal(2, r.code, verb .. ": " .. r.err)
      assert.matches('^fluence: %-%-cost%-tol: "nan" is not a number', r.err)
      assert.matches("(see 'fluence " .. verb .. " --help')", r.err, 1, true)
    end
  end)

  for _, bad in ipairs{ "-5", "-1s", "abc", "1x", "", "nan", "inf", "1e400", "0x10", "5m-1s", "s", "1 s" } do
    it(("refuses --request-timeout %q with exit 2, even offline"):format(bad), function()
      local r = select("--request-timeout", bad)
      assert.are.equal(2, r.code, r.err)
      assert.are.equal("", r.out)
      assert.are.equal(('fluence: --request-timeout: "%s" is not a duration >= 0 (seconds, or like 30s, 1m, ' ..
                        "500ms) (see 'fluence select --help')\n"):format(bad), r.err)
    end)
  end

  it("takes every decimal form and kubectl durations", function()
    for _, good in ipairs{ "0", "0.0", "1", "+1", ".5", "5.", "1e-3", "2E1", "0.5" } do
      assert.are.equal(0, select("--cost-tol", good).code, good)
    end
    for _, good in ipairs{ "0", "5", "2.5", "1e2", "30s", "1m30s", "500ms", "1.5m", ".5s", "1h" } do
      assert.are.equal(0, select("--request-timeout", good).code, good)
    end
  end)

  it("reads --cost-tol N as an absolute band, as the Go client", function()
    assert.are.same({ "a" }, survivors(select("--cost-tol", "0.03")))
    assert.are.same({ "a", "b" }, survivors(select("--cost-tol", "0.05")))
  end)

  it("reads --cost-tol N% as a band relative to the best value", function()
    local r = select("--cost-tol", "5%")
    assert.are.equal(0, r.code, r.err)
    assert.are.same({ "a", "b" }, survivors(r))
    assert.matches("dropped c: cost_usd 1.3 is not within 5% of the best (1)", r.err, 1, true)
    assert.are.same({ "a" }, survivors(select("--cost-tol", "3%")))
    assert.are.same({ "a", "b", "c" }, survivors(select("--cost-tol", "35%")))
  end)

  it("lets a stage's own tolerance override a relative --cost-tol", function()
    local j = cli.write(dir .. "/job2.yaml", (cli.slurp(job):gsub("min%-cost", "min-cost~0")))
    local r = cli.run{ "select", "-f", j, "--attributes", attrs, "--offline", "--cost-tol", "50%",
                       env = { HOME = dir } }
    assert.are.same({ "a" }, survivors(r))
  end)
end)
