-- One CLI grammar: --color=auto|always|never beside NO_COLOR (always and
-- never decide whatever stdout is; auto, the default, colours a terminal
-- unless NO_COLOR is set; --color alone is always), counts that agree with
-- their nouns, check --provider, and -o on every verb that prints objects.
local cli = require "support.cli"

local EX = cli.root .. "/examples/quickstart/"
local function explain(...)
  return cli.run{ "explain", "-f", EX .. "job.yaml", "--attributes", EX .. "attributes.yaml", "--offline", ... }
end

describe("--color", function()
  teardown(function() cli.cleanup() end)
  it("always colours, even a file and with NO_COLOR set; --color alone too", function()
    for _, r in ipairs{ explain("--color=always"), explain("--color"),
                        cli.run{ "explain", "-f", EX .. "job.yaml", "--attributes", EX .. "attributes.yaml",
                                 "--offline", "--color=always", env = { NO_COLOR = "1" } } } do
      assert.are.equal(0, r.code, r.err)
      assert.truthy(r.out:find("\27[1m", 1, true), r.out)
    end
  end)

  it("never and auto (off a terminal) do not", function()
    for _, r in ipairs{ explain("--color=never"), explain("--color=auto"), explain() } do
      assert.are.equal(0, r.code, r.err)
      assert.falsy(r.out:find("\27", 1, true))
    end
  end)

  it("refuses another word: exit 2, nothing on stdout", function()
    local r = explain("--color=sometimes")
    assert.are.equal(2, r.code)
    assert.are.equal("", r.out)
    assert.are.equal('fluence: --color: "sometimes" is not auto, always or never\n', r.err)
  end)

  it("is accepted by every verb, as -v is", function()
    local r = cli.run{ "select", "-f", EX .. "job.yaml", "--attributes", EX .. "attributes.yaml", "--offline",
                       "--color=never" }
    assert.are.equal(0, r.code, r.err)
  end)
end)

describe("counts", function()
  local plural = require "fluence.plural"
  it("agree with their nouns: 1 object, 2 objects, 1 policy, 3 policies", function()
    assert.are.equal("1 object", plural(1, "object"))
    assert.are.equal("0 objects", plural(0, "object"))
    assert.are.equal("2 objects", plural(2, "object"))
    assert.are.equal("1 policy", plural(1, "policy", "policies"))
    assert.are.equal("3 policies", plural(3, "policy", "policies"))
  end)

  it("in fluence check's summary", function()
    local d = cli.tmpdir()
    cli.write(d .. "/pod.yaml", cli.POD:format("min-cost"))
    local r = cli.run{ "check", d }
    assert.are.equal(0, r.code, r.err)
    assert.are.equal("checked 1 manifest file (1 policy), 0 plugins, 0 specs, 0 test files: no problems\n", r.out)
  end)
end)

describe("fluence check --provider", function()
  teardown(function() cli.cleanup() end)
  it("accepts a provider or a family select would find, and refuses another, with a suggestion", function()
    local d = cli.tmpdir()
    cli.write(d .. "/pod.yaml", cli.POD:format("min-cost"))
    assert.are.equal(0, cli.run{ "check", d, "--provider", "braket-live" }.code)
    assert.are.equal(0, cli.run{ "check", d, "--provider", "braket" }.code)
    local r = cli.run{ "check", d, "--provider", "braket-lve" }
    assert.are.equal(3, r.code)
    assert.are.equal("", r.out)
    assert.are.equal("fluence: --provider \"braket-lve\": unknown provider (did you mean \"braket-live\"?) " ..
                     "(see 'fluence providers')\n", r.err)
  end)
end)

describe("-o on every verb that prints objects or tables", function()
  teardown(function() cli.cleanup() end)
  local json = require "fluence.json"
  local yaml = require "fluence.yaml"
  local ARGS = { "-f", EX .. "job.yaml", "--attributes", EX .. "attributes.yaml", "--offline" }
  local function run(verb, ...)
    local a = { verb, ... }
    for _, x in ipairs(ARGS) do a[#a + 1] = x end
    return cli.run(a)
  end

  it("select -o name: every object of the output, as kubectl names it", function()
    local r = run("select", "-o", "name")
    assert.are.equal(0, r.code, r.err)
    assert.are.equal("pod/training-leader\njob.batch/training-workers\nconfigmap/training-config\n", r.out)
  end)

  it("explain -o yaml is the data of -o json", function()
    local j, y = run("explain", "-o", "json"), run("explain", "-o", "yaml")
    assert.are.equal(0, y.code, y.err)
    assert.are.same(json.decode(j.out), yaml.decode(y.out))
  end)

  it("explain -o wide shows every attribute, the table only those the policy reads", function()
    local t, w = run("explain"), run("explain", "-o", "wide")
    assert.falsy(t.out:find("THROUGHPUT", 1, true))
    assert.truthy(w.out:find("THROUGHPUT", 1, true), w.out)
    assert.truthy(w.out:find("REGION", 1, true))
  end)

  it("refuses an unknown format before selecting: exit 2, nothing on stdout", function()
    for _, verb in ipairs{ "select", "explain" } do
      local r = run(verb, "-o", "xml")
      assert.are.equal(2, r.code, verb)
      assert.are.equal("", r.out)
      assert.matches("unknown output format \"xml\"", r.err)
    end
    local r = cli.run{ "graph", "-o", "xml" }
    assert.are.equal(2, r.code)
  end)

  it("policies and providers -o yaml are the data of -o json; -o wide adds declarations", function()
    for _, verb in ipairs{ "policies", "providers" } do
      local j, y = cli.run{ verb, "-o", "json" }, cli.run{ verb, "-o", "yaml" }
      assert.are.equal(0, y.code, y.err)
      assert.are.same(json.decode(j.out), yaml.decode(y.out))
    end
    local w = cli.run{ "providers", "-o", "wide" }
    assert.truthy(w.out:find("live family=braket provides=status", 1, true), w.out)
  end)

  it("writes on exit 1 only where that is the answer: explain's table, not select's manifest", function()
    local fail = cli.tmpdir() .. "/fail.yaml"
    cli.write(fail, cli.POD:format("require:memory_gb>=1000"))
    local r = cli.run{ "select", "-f", fail, "--attributes", EX .. "attributes.yaml", "--offline" }
    assert.are.equal(1, r.code)
    assert.are.equal("", r.out)
    r = cli.run{ "explain", "-f", fail, "--attributes", EX .. "attributes.yaml", "--offline" }
    assert.are.equal(1, r.code)
    assert.truthy(r.out:find("failed: ", 1, true), r.out)
  end)
end)
