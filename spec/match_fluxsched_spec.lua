-- flux-sched's own test data (spec/fixtures/flux-sched): multi-tier storage
-- graphs (DAGs), the locality and variation policies.  Every case through
-- the built-in matcher, and through Fluxion's libreapi_cli when present, must
-- equal resource-query v0.54's -t output byte for byte; with resource-query
-- at hand, the GRUG recipe must give the same bytes as the JGF made from it.
local cli = require "support.cli"
local fluxion = require "support.fluxion"

local DIR = cli.root .. "/spec/fixtures/flux-sched"
local CORPUS = (os.getenv("FLUENCE_CONFORMANCE") or (cli.root .. "/spec/fixtures/conformance")) .. "/fluxion"

local function resolve(p)
  if p == "-" then return nil end
  if p:sub(1, 13) == "@conformance/" then return CORPUS .. p:sub(13) end
  if p == "@conformance" then return CORPUS end
  if p == "." then return DIR end
  return DIR .. "/" .. p
end

local function cases()
  local out = {}
  for line in (cli.slurp(DIR .. "/cases.tsv") or ""):gmatch("[^\n]+") do
    local f = {}
    for x in (line .. "\t"):gmatch("([^\t]*)\t") do f[#f + 1] = x end
    if f[1] ~= "case" and #f >= 8 then
      out[#out + 1] = { case = f[1], dir = resolve(f[2]), graph = f[3], grug = resolve(f[4]), policy = f[5],
                        commands = resolve(f[6]), grug_commands = resolve(f[7]), expected = resolve(f[8]) }
    end
  end
  return out
end

describe("flux-sched test data", function()
  local all = cases()

  it("is present", function() assert.is_true(#all >= 30, "cases.tsv not found in " .. DIR) end)

  for i, c in ipairs(all) do
    -- under make check (ASan, valgrind) every third case: the C is the same
    if not fluxion.checking or i % 3 == 1 then
      it(c.case .. " (" .. c.policy .. ")", function()
        local want = assert(cli.slurp(c.expected), c.expected)
        local r = cli.run { "match", "--graph", c.graph, "--policy", c.policy, stdin = cli.slurp(c.commands), cwd = c.dir }
        assert.are.equal(0, r.code, r.err)
        assert.are.equal(want, r.out)
        if fluxion.lib then
          local l = cli.run { "match", "--graph", c.graph, "--policy", c.policy, stdin = cli.slurp(c.commands),
                              cwd = c.dir, env = fluxion.lib_env(), valgrind = fluxion.valgrind }
          assert.are.equal(0, l.code, l.err)
          assert.are.equal(want, l.out, "through FLUENCE_FLUXION_LIB")
        end
      end)
    end
  end

  it("equal resource-query's output, on the JGF and on the GRUG recipe", function()
    if not fluxion.resource_query then return pending(fluxion.SKIP) end
    for i, c in ipairs(all) do
      if not fluxion.checking or i % 6 == 1 then
        local want = cli.slurp(c.expected)
        assert.are.equal(want, fluxion.query(c.dir, c.graph, c.policy, "simple", cli.slurp(c.commands)), c.case)
        if c.grug then
          local got = fluxion.query(c.dir, c.grug, c.policy, "simple", cli.slurp(c.grug_commands or c.commands), "grug")
          assert.are.equal(want, got, c.case .. " from " .. c.grug)
        end
      end
    end
  end)
end)
