-- A tab where YAML wants spaces is named "tab" by every YAML reader
-- (core/yaml_problem.c): libyaml itself says "found character that cannot
-- start any token", which does not name the invisible culprit.
local cli = require "support.cli"
local yaml = require "fluence.yaml"

local TAB = "found a tab character where YAML allows only spaces (indent with spaces)"

describe("a tab indenting YAML", function()
  teardown(function() cli.cleanup() end)

  it("is named by fluence.yaml, located", function()
    local v, err = yaml.decode("a:\n\tb: 1\n", "x.yaml")
    assert.is_nil(v)
    assert.are.equal("x.yaml:2:1: " .. TAB, err:match("^[^\n]*"))
    -- tabs inside a quoted scalar or between flow items stay fine
    assert.are.same({ c = "x\t", d = { 1, 2 } }, yaml.decode('c: "x\t"\nd: [1,\t2]\n'))
  end)

  it("is named in a manifest, an attribute file and a jobspec", function()
    local d = cli.tmpdir()
    local m = cli.write(d .. "/m.yaml", "apiVersion: v1\nkind: Pod\nmetadata:\n\tname: p\n")
    local r = cli.run{ "select", "-f", m, "--offline" }
    assert.are.equal(3, r.code)
    assert.are.equal("", r.out)
    assert.truthy(r.err:find(m .. ":4:1: " .. TAB, 1, true), r.err)
    local attrs = cli.write(d .. "/a.yaml", "backends:\n\t- name: a\n")
    local pod = cli.write(d .. "/pod.yaml", cli.POD:format("min-cost"))
    r = cli.run{ "select", "-f", pod, "--attributes", attrs, "--offline" }
    assert.are.equal(3, r.code)
    assert.truthy(r.err:find(attrs .. ":2:1: " .. TAB, 1, true), r.err)
    local js = cli.write(d .. "/js.yaml", "version: 9999\nresources:\n\t- type: node\n")
    r = cli.run{ "match", "--graph", cli.root .. "/spec/fixtures/match/small.json", js }
    assert.truthy((r.out .. r.err):find("3:1: YAML error: " .. TAB, 1, true), r.out .. r.err)
  end)
end)
