-- `-R -f` over a tree of real manifests (issue 31): a duplicate mapping key
-- in a document that concerns no Fluence object (kubectl takes it, keeping
-- the last) passes through byte for byte with a warning instead of failing
-- the whole run; in a Fluence object it is still bad input.  An unrendered
-- Helm template is named as such, not as a puzzle about mapping keys.
local cli = require "support.cli"
local tree = require "support.tree"

local ATTRS = cli.root .. "/examples/quickstart/attributes.yaml"

local DUP_CONFIGMAP = [[
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  mode: fast
  mode: safe
]]

describe("select -R over a tree", function()
  teardown(cli.cleanup)

  local function select(dir, ...)
    local args = { "select", "-R", "-f", dir, "--attributes", ATTRS, "--offline", env = { HOME = dir } }
    for _, a in ipairs{ ... } do args[#args + 1] = a end
    return cli.run(args)
  end

  it("passes a document with a duplicate key through, warning, while the rest is selected", function()
    local dir = tree.make{ ["a/cm.yaml"] = DUP_CONFIGMAP, ["b/pod.yaml"] = cli.POD:format("min-cost") }
    local r = select(dir)
    assert.are.equal(0, r.code, r.err)
    assert.truthy(r.out:find(DUP_CONFIGMAP, 1, true), r.out)
    assert.truthy(r.out:find("require-backend: ", 1, true), r.out)
    assert.are.equal(("warning: %s/a/cm.yaml:7:3: duplicate key \"mode\": kubectl keeps the last one; passed through " ..
                      "unchanged\n      mode: safe\n      ^\n"):format(dir), r.err:match("^warning:.-%^\n"))
    -- and its JSON is kubectl's: the last value
    r = select(dir, "-o", "json")
    assert.are.equal(0, r.code, r.err)
    assert.truthy(r.out:find('"mode": "safe"', 1, true), r.out)
    assert.falsy(r.out:find('"mode": "fast"', 1, true), r.out)
  end)

  it("still refuses a duplicate key in a Fluence object, located", function()
    local pod = cli.POD:format("min-cost"):gsub("  name: p\n", "  name: p\n  name: q\n", 1)
    local dir = tree.make{ ["a/cm.yaml"] = DUP_CONFIGMAP, ["b/pod.yaml"] = pod }
    local r = select(dir)
    assert.are.equal(3, r.code)
    assert.are.equal("", r.out)
    assert.truthy(r.err:find(('fluence: %s/b/pod.yaml:5:3: duplicate key "name" in a Fluence object: kubectl would ' ..
                              'keep the last one; say which one you mean\n'):format(dir), 1, true), r.err)
  end)

  it("names an unrendered Helm template", function()
    local dir = tree.make{ ["chart/templates/deployment.yaml"] = [[
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "app.fullname" . }}
spec:
  replicas: {{ .Values.replicaCount }}
]], ["chart/templates/sa.yaml"] = [[
{{- if .Values.serviceAccount.create -}}
apiVersion: v1
kind: ServiceAccount
{{- end }}
]] }
    local r = cli.run{ "select", "-f", dir .. "/chart/templates/deployment.yaml", "--offline", env = { HOME = dir } }
    assert.are.equal(3, r.code)
    assert.are.equal("", r.out)
    assert.are.equal(("fluence: %s/chart/templates/deployment.yaml:4:9: this looks like an unrendered Helm template " ..
                      '("{{ ... }}"): render it first (helm template) [YAML: a mapping key must be a scalar ' ..
                      "(kubectl: invalid map key)]\n      name: {{ include \"app.fullname\" . }}\n            ^\n"):format(dir),
                     r.err)
    r = cli.run{ "select", "-f", dir .. "/chart/templates/sa.yaml", "--offline", env = { HOME = dir } }
    assert.are.equal(3, r.code)
    assert.matches("sa%.yaml:1:%d+: this looks like an unrendered Helm template", r.err)
    -- braces that are not a template keep YAML's own message
    local other = cli.write(dir .. "/x.yaml", "a: {b: [1}\n")
    r = cli.run{ "select", "-f", other, "--offline", env = { HOME = dir } }
    assert.are.equal(3, r.code)
    assert.falsy(r.err:find("Helm", 1, true), r.err)
  end)
end)
