-- FLUENCE_FLUXION_LIB: Fluxion's own libreapi_cli as the matcher.  With the
-- real library (flux-sched v0.54, see support/fluxion.lua) the Fluxion
-- conformance corpus must come out byte for byte, every output format must
-- equal the built-in matcher's, fits and fits:now must decide as the
-- built-in matcher does, and the library's errors must reach the user as
-- one clear line.  A library with another ABI is refused before any call.
local cli = require "support.cli"
local fluxion = require "support.fluxion"

local CORPUS = (os.getenv("FLUENCE_CONFORMANCE") or (cli.root .. "/spec/fixtures/conformance")) .. "/fluxion"
local SMALL = cli.root .. "/spec/fixtures/match/small.json"

local CORE1 = "version: 1\nresources:\n  - type: slot\n    count: 1\n    label: s\n    with:\n" ..
              "      - {type: core, count: 1}\ntasks:\n  - command: [app]\n    slot: s\n    count: {per_slot: 1}\n" ..
              "attributes:\n  system:\n    duration: 100\n"

local function cases()
  local out = {}
  for line in (cli.slurp(CORPUS .. "/cases.tsv") or ""):gmatch("[^\n]+") do
    local c, graph, policy, commands, expected = line:match("^([^\t]*)\t([^\t]*)\t([^\t]*)\t([^\t]*)\t([^\t]*)")
    if c and c ~= "case" then
      out[#out + 1] = { case = c, graph = graph, policy = policy, commands = commands, expected = expected }
    end
  end
  return out
end

describe("FLUENCE_FLUXION_LIB", function()
  it("refuses a library without the v0.54 API before calling it", function()
    local dir = cli.tmpdir()
    local lib = dir .. "/libold.so"
    assert(os.execute(("cc -shared -fPIC -o %s %s"):format(cli.quote(lib),
      cli.quote(cli.root .. "/spec/fixtures/match/old_reapi.c"))), "cc failed")
    cli.write(dir .. "/a.yaml", CORE1)
    local r = cli.run { "match", "--graph", SMALL, "a.yaml", cwd = dir, env = { FLUENCE_FLUXION_LIB = lib } }
    cli.cleanup()
    assert.are.equal(2, r.code)
    assert.are.equal("", r.out)
    assert.are.equal("fluence: match: FLUENCE_FLUXION_LIB=" .. lib .. ": not flux-sched's libreapi_cli v0.54 or " ..
                     "later (no symbol reapi_cli_match_with_jobid)\n", r.err)
  end)

  it("says so when the library cannot be loaded", function()
    local r = cli.run { "match", "--graph", SMALL, stdin = "",
                        env = { FLUENCE_FLUXION_LIB = "/nonexistent/libreapi_cli.so" } }
    assert.are.equal(2, r.code)
    assert.are.equal("", r.out)
    assert.matches("^fluence: match: FLUENCE_FLUXION_LIB: /nonexistent/libreapi_cli.so: cannot open shared object file",
                   r.err)
  end)
end)

describe("FLUENCE_FLUXION_LIB with Fluxion v0.54", function()
  if not fluxion.lib then
    it("runs", function() pending(fluxion.SKIP) end)
    return
  end
  local LIB = fluxion.lib_env()
  local all = cases()

  -- every case byte for byte; under make check (ASan, valgrind) every
  -- fourth, the C side being the same for all
  for i, c in ipairs(all) do
    if not fluxion.checking or i % 4 == 1 then
      it(c.case .. " (" .. c.policy .. ") byte for byte", function()
        local r = cli.run { "match", "--graph", c.graph, "--policy", c.policy, env = LIB, valgrind = fluxion.valgrind,
                            stdin = cli.slurp(CORPUS .. "/" .. c.commands), cwd = CORPUS }
        assert.are.equal(0, r.code, r.err)
        assert.are.equal(cli.slurp(CORPUS .. "/" .. c.expected), r.out)
      end)
    end
  end

  it("writes rv1, rv1_nosched and jgf as the built-in matcher does", function()
    for i, c in ipairs(all) do
      if i % 5 == 1 and (not fluxion.checking or i == 1) then
        for _, format in ipairs { "rv1", "rv1_nosched", "jgf" } do
          local args = { "match", "--graph", c.graph, "--policy", c.policy, "-F", format,
                         stdin = cli.slurp(CORPUS .. "/" .. c.commands), cwd = CORPUS }
          local builtin = cli.run(args)
          args.env, args.valgrind = LIB, fluxion.valgrind
          local lib = cli.run(args)
          assert.are.equal(0, lib.code, lib.err)
          assert.are.equal(builtin.out, lib.out, c.case .. " -F " .. format)
        end
      end
    end
  end)

  it("reports a graph Fluxion refuses in one line", function()
    -- the loader refuses what Fluxion refuses (missing paths, negative
    -- sizes, ...); a graph built in Lua is not checked, Fluxion's refusal
    -- must come back as a message, not a crash
    local probe = cli.root .. "/spec/support/fits_probe.lua"
    local r = cli.run { probe, cli.root, "badgraph", bin = "lua5.4", env = LIB, valgrind = false }
    assert.are.equal(0, r.code, r.err)
    assert.matches("^error: Fluxion: reapi_cli_initialize: Runtime error: [^\n]*planner_new returned NULL[^\n]*\n$", r.out)
    local dir = cli.tmpdir()
    cli.write(dir .. "/e.json", (cli.slurp(SMALL):gsub('"size": 4', '"size": -5', 1)))
    r = cli.run { "match", "--graph", dir .. "/e.json", stdin = "", env = LIB, valgrind = fluxion.valgrind }
    cli.cleanup()
    assert.are.equal(3, r.code)
    assert.are.equal("", r.out)
    assert.matches("metadata.size must not be negative", r.err, 1, true)
  end)

  it("reports a jobspec Fluxion refuses on stderr and uses no id for it", function()
    local dir = cli.tmpdir()
    cli.write(dir .. "/a.yaml", CORE1)
    cli.write(dir .. "/bad.yaml", "version: 1\nresources: []\ntasks: []\n")
    local r = cli.run { "match", "--graph", SMALL, "bad.yaml", "a.yaml", cwd = dir, env = LIB, valgrind = fluxion.valgrind }
    cli.cleanup()
    assert.are.equal(0, r.code, r.err)
    assert.matches("^INFO: =============================\nINFO: No matching resources found\nINFO: JOBID=1\n" ..
                   "INFO: =============================\n.-INFO: JOBID=1\nINFO: RESOURCES=ALLOCATED\n", r.out)
    assert.matches("^match_allocate: ERROR: Jobspec error for [^\n]+\n$", r.err)
  end)

  it("rejects an unknown policy", function()
    local r = cli.run { "match", "--graph", SMALL, "--policy", "bogus", stdin = "", env = LIB, valgrind = fluxion.valgrind }
    assert.are.equal(2, r.code)
    assert.are.equal("", r.out)
    assert.are.equal("fluence: match: invalid policy option: bogus\n", r.err)
  end)

  it("decides fits and fits:now as the built-in matcher does", function()
    local dir = cli.root .. "/spec/fixtures/fits"
    for _, policy in ipairs { "fits,min-cost", "fits:now,min-cost" } do
      local tmp = cli.tmpdir()
      local job = cli.write(tmp .. "/gang.yaml", (cli.slurp(dir .. "/gang.yaml"):gsub('"fits,min%-cost"', '"' .. policy .. '"')))
      local args = { "select", "-f", job, "--attributes", dir .. "/attributes.yaml", "--offline",
                     env = { HOME = "/nonexistent", SOURCE_DATE_EPOCH = "0" } }
      local builtin = cli.run(args)
      args.env, args.valgrind = fluxion.lib_env { HOME = "/nonexistent", SOURCE_DATE_EPOCH = "0" }, fluxion.valgrind
      local lib = cli.run(args)
      cli.cleanup()
      assert.are.equal(0, builtin.code, builtin.err)
      assert.are.same({ builtin.code, builtin.out, builtin.err }, { lib.code, lib.out, lib.err })
    end
  end)

  it("matches graphs built from the fluence-resources ConfigMap, fits:now included", function()
    -- the ConfigMap graph grafted on a cluster graph, written as JGF for
    -- Fluxion; the fits plugin through both backends (support/fits_probe.lua)
    local probe = cli.root .. "/spec/support/fits_probe.lua"
    local function run(env)
      local r = cli.run { probe, cli.root, bin = "lua5.4", env = env, valgrind = false }
      assert.are.equal(0, r.code, r.err)
      return r.out
    end
    local builtin = run({})
    assert.matches("fits ", builtin)
    assert.are.equal(builtin, run(LIB))
  end)
end)
