-- Disagreements with Fluxion that were found (by the differential
-- generator, or while fixing what it found) and fixed: spec/fixtures/match-
-- regressions, one directory per command stream with the graph, jobspecs,
-- commands.in, `case` (POLICY FORMAT, and "builtin" when Fluxion's library
-- cannot answer it), and resource-query v0.54's answers: its -t output
-- (expected.out) and what it printed besides (expected.err).  Each must stay
-- byte for byte equal through the built-in matcher, through Fluxion's
-- libreapi_cli when present, and, with resource-query at hand, the recorded
-- answers must still be what resource-query prints.
local cli = require "support.cli"
local fluxion = require "support.fluxion"

local DIR = cli.root .. "/spec/fixtures/match-regressions"

local function cases()
  local out = {}
  local p = io.popen("ls " .. cli.quote(DIR))
  for name in p:lines() do
    local how = cli.slurp(DIR .. "/" .. name .. "/case")
    if how then
      -- the policy may have spaces ("policy=low node_centric=true ...")
      local rest = how:match("^(.-)%s+builtin%s*$")
      local policy, format = (rest or how):match("^(.-)%s+(%S+)%s*$")
      out[#out + 1] = { name = name, dir = DIR .. "/" .. name, policy = policy, format = format, builtin = rest ~= nil }
    end
  end
  p:close()
  return out
end

-- resource-query's info lines end in the time the match took; fluence
-- prints 0 there
local function normalise(err)
  return (err:gsub("(INFO: %d+, %u+, %-?%d+, [^\n]*, )[^,\n]+\n", "%10\n"))
end

describe("past disagreements with Fluxion", function()
  local all = cases()

  it("are present", function() assert.is_true(#all >= 40, "cases in " .. DIR) end)

  for _, c in ipairs(all) do
    it(c.name .. " (" .. c.policy .. ", " .. c.format .. ")", function()
      local want, want_err = assert(cli.slurp(c.dir .. "/expected.out")), cli.slurp(c.dir .. "/expected.err")
      local script = cli.slurp(c.dir .. "/commands.in")
      local args = { "match", "--graph", "graph.json", "--policy", c.policy, "--format", c.format,
                     stdin = script, cwd = c.dir }
      local r = cli.run(args)
      assert.are.equal(0, r.code, r.err)
      assert.are.equal(want, r.out)
      if want_err then assert.are.equal(want_err, r.err) end
      if fluxion.lib and not c.builtin then
        args.env, args.valgrind = fluxion.lib_env(), fluxion.valgrind
        local l = cli.run(args)
        assert.are.equal(0, l.code, l.err)
        assert.are.equal(want, l.out, "through FLUENCE_FLUXION_LIB")
        if want_err then assert.are.equal(want_err, l.err, "through FLUENCE_FLUXION_LIB") end
      end
    end)
  end

  it("are what resource-query prints", function()
    if not fluxion.resource_query then return pending(fluxion.SKIP) end
    for _, c in ipairs(all) do
      local out, err = fluxion.query(c.dir, "graph.json", c.policy, c.format, cli.slurp(c.dir .. "/commands.in"))
      assert.are.equal(cli.slurp(c.dir .. "/expected.out"), out, c.name)
      local want_err = cli.slurp(c.dir .. "/expected.err")
      if want_err then assert.are.equal(want_err, normalise(err), c.name) end
    end
  end)
end)
