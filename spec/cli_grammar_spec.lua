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
