-- bench/startup.c, the floor `make bench` measures beside the quickstart's
-- select: its trace of a select runs the select itself (same output, same
-- exit code) and lists what it loaded, and its load of that list loads
-- exactly that, no more, no less.  The list follows the select: another
-- policy, other plugins.
local cli = require "support.cli"

-- the helper of the build the specs run (bin/fluence -> build/bench/startup,
-- bin/fluence-asan -> build-asan/bench/startup)
local suffix = cli.bin:match("/bin/fluence(%-[%w]+)$") or ""
local HELPER = cli.root .. "/build" .. suffix .. "/bench/startup"

local HOME
local function env() return { HOME = HOME, SOURCE_DATE_EPOCH = "1700000000", NO_COLOR = "1" } end

local function sorted(s)
  local t = cli.lines(s)
  table.sort(t)
  return t
end

local function trace(args)
  local list = cli.tmpdir() .. "/startup.list"
  local argv = { "trace", list, "--", bin = HELPER, env = env() }
  for _, a in ipairs(args) do argv[#argv + 1] = a end
  local r = cli.run(argv)
  return r, cli.slurp(list), list
end

describe("the start-up floor helper (bench/startup.c)", function()
  setup(function() HOME = cli.tmpdir() end)
  teardown(cli.cleanup)

  local QUICKSTART = { "select", "-f", "examples/quickstart/job.yaml", "--attributes",
                       "examples/quickstart/attributes.yaml", "--offline" }

  it("traces the quickstart's select by running it: same output, same exit code", function()
    local want = cli.run{ bin = cli.bin, env = env(), table.unpack(QUICKSTART) }
    local got, list = trace(QUICKSTART)
    assert.are.equal(0, want.code)
    assert.are.equal(want.code, got.code)
    assert.are.equal(want.out, got.out)
    assert.are.equal(want.err, got.err)
    local items = {}
    for _, l in ipairs(cli.lines(list)) do items[l] = true end
    -- what any quickstart select must load: the engine, the grammar, the
    -- two policies and the file provider, and the two policies parsed
    for _, want_item in ipairs{ "module fluence.cli", "module fluence.cmd.select", "module fluence.grammar",
                                "module lpeg", "module fluence.pipeline", "plugin policies/min.lua",
                                "plugin policies/require.lua", "plugin providers/file.lua",
                                "parse require:min_memory_gb=24,min-cost",
                                "parse require:memory_gb>=24,min-cost" } do
      assert.is_true(items[want_item], want_item .. " not in the trace:\n" .. list)
    end
    -- and nothing this select does not use
    assert.is_nil(items["plugin policies/max.lua"])
    assert.is_nil(items["module fluence.retry"])
  end)

  it("loads exactly what the select loaded", function()
    local _, list, path = trace(QUICKSTART)
    local r = cli.run{ "load", path, "--report", bin = HELPER, env = env() }
    assert.are.equal(0, r.code, r.err)
    assert.are.equal("", r.err)
    assert.are.same(sorted(list), sorted(r.out))
  end)

  it("follows the select: another policy, another plugin", function()
    local dir = cli.tmpdir()
    local pod = cli.write(dir .. "/pod.yaml", cli.POD:format("max-memory_gb"))
    local got, list, path = trace{ "select", "-f", pod, "--attributes", "examples/quickstart/attributes.yaml", "--offline" }
    assert.are.equal(0, got.code, got.err)
    assert.truthy(list:find("\nplugin policies/max.lua\n", 1, true), list)
    assert.falsy(list:find("policies/min.lua", 1, true), list)
    assert.truthy(list:find("\nparse max-memory_gb\n", 1, true), list)
    local r = cli.run{ "load", path, "--report", bin = HELPER, env = env() }
    assert.are.same(sorted(list), sorted(r.out))
  end)

  it("a failing select fails the trace as it fails the select", function()
    local want = cli.run{ "select", "-f", "no-such-file.yaml", "--offline", bin = cli.bin, env = env() }
    local got = trace{ "select", "-f", "no-such-file.yaml", "--offline" }
    assert.are_not.equal(0, want.code)
    assert.are.equal(want.code, got.code)
    assert.are.equal(want.err, got.err)
    assert.are.equal("", got.out)
  end)

  it("rejects an unknown item and a missing list", function()
    local bad = cli.write(cli.tmpdir() .. "/bad.list", "widget x\n")
    local r = cli.run{ "load", bad, bin = HELPER, env = env() }
    assert.are.equal(70, r.code)
    assert.truthy(r.err:find("unknown item widget", 1, true), r.err)
    r = cli.run{ "load", "/nonexistent/list", bin = HELPER, env = env() }
    assert.are.equal(3, r.code)
    r = cli.run{ "frobnicate", bin = HELPER, env = env() }
    assert.are.equal(2, r.code)
  end)
end)
