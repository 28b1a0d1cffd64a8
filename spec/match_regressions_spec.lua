-- Disagreements with Fluxion that the differential generator found and that
-- were fixed (spec/fixtures/match-regressions, one directory per case: the
-- graph, jobspecs, a command script, the policy and output format, and
-- resource-query v0.54's -t output for them).  Each must stay byte for byte
-- equal through the built-in matcher, through Fluxion's libreapi_cli when
-- present, and, with resource-query at hand, the recorded output must still
-- be what resource-query prints.
local cli = require "support.cli"
local fluxion = require "support.fluxion"

local DIR = cli.root .. "/spec/fixtures/match-regressions"

local function cases()
  local out = {}
  local p = io.popen("ls " .. cli.quote(DIR))
  for name in p:lines() do
    local how = cli.slurp(DIR .. "/" .. name .. "/case")
    if how then
      local policy, format = how:match("^(%S+)%s+(%S+)")
      out[#out + 1] = { name = name, dir = DIR .. "/" .. name, policy = policy, format = format }
    end
  end
  p:close()
  return out
end

describe("past disagreements with Fluxion", function()
  local all = cases()

  it("are present", function() assert.is_true(#all >= 2, "no cases in " .. DIR) end)

  for _, c in ipairs(all) do
    it(c.name .. " (" .. c.policy .. ", " .. c.format .. ")", function()
      local want = assert(cli.slurp(c.dir .. "/expected.out"))
      local script = cli.slurp(c.dir .. "/commands.in")
      local args = { "match", "--graph", "graph.json", "--policy", c.policy, "--format", c.format,
                     stdin = script, cwd = c.dir }
      local r = cli.run(args)
      assert.are.equal(0, r.code, r.err)
      assert.are.equal(want, r.out)
      if fluxion.lib then
        args.env, args.valgrind = fluxion.lib_env(), fluxion.valgrind
        local l = cli.run(args)
        assert.are.equal(0, l.code, l.err)
        assert.are.equal(want, l.out, "through FLUENCE_FLUXION_LIB")
      end
    end)
  end

  it("are what resource-query prints", function()
    if not fluxion.resource_query then return pending(fluxion.SKIP) end
    for _, c in ipairs(all) do
      local want = cli.slurp(c.dir .. "/expected.out")
      assert.are.equal(want, fluxion.query(c.dir, "graph.json", c.policy, c.format, cli.slurp(c.dir .. "/commands.in")),
                       c.name)
    end
  end)
end)
