-- Jobspecs that Fluxion v0.54 refuses, or accepts and then treats oddly,
-- one for each of its messages and paths (spec/fixtures/fluxion-jobspecs:
-- NAME.yaml with resource-query's -t output, NAME.out, and what it prints
-- besides, NAME.err, for `match allocate` twice, `match satisfiability`
-- and `info 1` on t3015's tiny graph).  `fluence match` prints the same
-- bytes, through the built-in matcher and through Fluxion's library; with
-- resource-query at hand, the recorded outputs are still what it prints.
local cli = require "support.cli"
local fluxion = require "support.fluxion"

local DIR = cli.root .. "/spec/fixtures/fluxion-jobspecs"
local GRAPH = cli.root .. "/spec/fixtures/conformance/fluxion/graphs/tiny.json"

local function cases()
  local out = {}
  local p = io.popen("ls " .. cli.quote(DIR))
  for name in p:lines() do
    local slug = name:match("^(.+)%.yaml$")
    if slug then out[#out + 1] = slug end
  end
  p:close()
  return out
end

local function script(slug)
  return (cli.slurp(DIR .. "/commands.in"):gsub("JOBSPEC", slug .. ".yaml"))
end

-- resource-query's info lines end in the time the match took; fluence
-- prints 0 there
local function normalise(err)
  return (err:gsub("(INFO: %d+, %u+, %-?%d+, [^\n]*, )[^,\n]+\n", "%10\n"))
end

describe("jobspecs Fluxion refuses or treats oddly", function()
  local all = cases()

  it("are present", function() assert.is_true(#all >= 60, "cases in " .. DIR) end)

  for _, slug in ipairs(all) do
    it(slug, function()
      local args = { "match", "--graph", GRAPH, stdin = script(slug), cwd = DIR }
      local r = cli.run(args)
      assert.are.equal(0, r.code, r.err)
      assert.are.equal(cli.slurp(DIR .. "/" .. slug .. ".out"), r.out)
      assert.are.equal(cli.slurp(DIR .. "/" .. slug .. ".err"), r.err)
      if fluxion.lib then
        args.env, args.valgrind = fluxion.lib_env(), fluxion.valgrind
        local l = cli.run(args)
        assert.are.equal(0, l.code, l.err)
        assert.are.equal(cli.slurp(DIR .. "/" .. slug .. ".out"), l.out, "through FLUENCE_FLUXION_LIB")
        assert.are.equal(cli.slurp(DIR .. "/" .. slug .. ".err"), l.err, "through FLUENCE_FLUXION_LIB")
      end
    end)
  end

  it("are what resource-query prints", function()
    if not fluxion.resource_query then return pending(fluxion.SKIP) end
    for _, slug in ipairs(all) do
      local out, err = fluxion.query(DIR, GRAPH, "first", "simple", script(slug))
      assert.are.equal(cli.slurp(DIR .. "/" .. slug .. ".out"), out, slug)
      assert.are.equal(cli.slurp(DIR .. "/" .. slug .. ".err"), normalise(err), slug)
    end
  end)
end)
