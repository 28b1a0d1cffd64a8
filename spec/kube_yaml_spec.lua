-- What the real API server stores when fluence and kubectl apply the same
-- YAML (issue 31; spec/support/envtest.lua).  Every scalar form and mapping
-- key of spec/fixtures/yaml-kubectl goes into one object of a kind whose
-- spec keeps any JSON (spec/fixtures/crds/scalars.yaml); `fluence apply`
-- sends one copy, `kubectl apply --server-side` another, and the two stored
-- specs must be the same value.  Then the cases that hurt in real manifests:
-- a Secret volume's `defaultMode: 0400` is 256 (owner-read-only), not 400;
-- an unquoted `on` where the server wants a string is refused as kubectl's
-- is, the server's message naming the field.
local cli = require "support.cli"
local envtest = require "support.envtest"
local kj = require "support.kubectl_json"

local DIR = cli.root .. "/spec/fixtures/yaml-kubectl"

envtest.describe("YAML as kubectl reads it, against the API server", function(api)
  local ns, kubeconfig, dir
  setup(function()
    dir = cli.tmpdir()
    ns = api:namespace("yaml")
    kubeconfig = api:kubeconfig_for{ namespace = ns }
    api:install_crd(cli.root .. "/spec/fixtures/crds/scalars.yaml")
  end)
  teardown(cli.cleanup)

  local function fluence_apply(path)
    return cli.run{ "apply", "-f", path, "--kubeconfig", kubeconfig, "--offline", env = { HOME = dir } }
  end

  -- A string holding DEL (U+007F): kubectl sends it raw, and the server,
  -- which reads an apply body as YAML, refuses its own control character;
  -- fluence sends it escaped (the same string) and the server takes it.
  local DEL = '"\\x7f"'

  -- every form that kubectl sends (not the refused ones), one member each
  local function batch(name)
    local lines = { "apiVersion: fluence.test/v1", "kind: Scalars", "metadata:", "  name: " .. name, "spec:" }
    for i, row in ipairs(kj.read_table(DIR .. "/values.tsv")) do
      if not row.answer:match("^error: ") and row.form ~= DEL then
        lines[#lines + 1] = ("  v%03d: %s"):format(i, row.form)
      end
    end
    for i, row in ipairs(kj.read_table(DIR .. "/keys.tsv")) do
      if not row.answer:match("^error: ") then lines[#lines + 1] = ("  k%03d:\n    %s: v"):format(i, row.form) end
    end
    return table.concat(lines, "\n") .. "\n"
  end

  local function stored_spec(name)
    local r = assert(api:kubectl{ "get", "scalars", name, "-n", ns, "-o", "json" })
    assert.are.equal(0, r.code, r.err)
    for _, m in ipairs(kj.members(r.out)) do
      if m.key == "spec" then return m.raw end
    end
  end

  it("stores the same spec for every scalar form and key, applied by fluence or by kubectl", function()
    if not kj.available() then
      pending("kubectl is not installed: nothing to compare fluence's apply with")
      return
    end
    local mine = cli.write(dir .. "/fluence.yaml", batch("by-fluence"))
    local r = fluence_apply(mine)
    assert.are.equal(0, r.code, r.err)
    local theirs = cli.write(dir .. "/kubectl.yaml", batch("by-kubectl"))
    r = api:kubectl{ "apply", "--server-side", "-f", theirs, "-n", ns }
    assert.are.equal(0, r.code, r.err)
    local a, b = stored_spec("by-fluence"), stored_spec("by-kubectl")
    assert.are.equal(kj.canonical(b), kj.canonical(a))
    -- and what the server stored is kubectl's recorded answer, row by row
    local stored = {}
    for _, m in ipairs(kj.members(a)) do stored[m.key] = m.raw end
    for i, row in ipairs(kj.read_table(DIR .. "/values.tsv")) do
      if not row.answer:match("^error: ") and row.form ~= DEL then
        local got = stored[("v%03d"):format(i)]
        assert.is_true(kj.same_value(row.answer, got), ("%s: %s stored as %s"):format(row.form, row.answer, got))
      end
    end
  end)

  it("gives a Secret volume the mode kubectl gives it: 0400 is 256 (r--------), 0777 is 511", function()
    local r = fluence_apply(DIR .. "/docs/pod-modes.yaml")
    assert.are.equal(0, r.code, r.err)
    local pod = assert(api:get(("/api/v1/namespaces/%s/pods/modes"):format(ns)))
    local secret = pod.spec.volumes[1].secret
    assert.are.equal(256, secret.defaultMode)
    assert.are.equal(511, secret.items[1].mode)
    assert.are.equal(420, secret.items[2].mode)
    assert.are.equal("ls -l /s\n", pod.spec.containers[1].args[1])
  end)

  it("is refused by the server, naming the field, as kubectl's apply is: an unquoted on for a string", function()
    local path = cli.write(dir .. "/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: flags\n" ..
                                              "data:\n  verbose: on\n")
    local r = fluence_apply(path)
    assert.are_not.equal(0, r.code)
    assert.are.equal("", r.out)
    local says = ".data.verbose: expected string, got"
    assert.is_truthy(r.err:find(says, 1, true), r.err)
    if kj.available() then
      local k = api:kubectl{ "apply", "--server-side", "-f", path, "-n", ns }
      assert.are_not.equal(0, k.code)
      assert.is_truthy(k.err:find(says, 1, true), k.err)
    end
  end)

  it("sends DEL and C1 controls escaped, which the server takes (kubectl's raw ones it refuses)", function()
    local path = cli.write(dir .. "/del.yaml", "apiVersion: fluence.test/v1\nkind: Scalars\nmetadata:\n  name: del\n" ..
                                               'spec:\n  a: "\\x7f"\n  b: "\\x85\\x90"\n')
    local r = fluence_apply(path)
    assert.are.equal(0, r.code, r.err)
    local s = assert(api:get(("/apis/fluence.test/v1/namespaces/%s/scalars/del"):format(ns))).spec
    assert.are.equal("\127", s.a)
    assert.are.equal("\194\133\194\144", s.b)
    if kj.available() then
      local k = api:kubectl{ "apply", "--server-side", "-f", path, "-n", ns }
      assert.are_not.equal(0, k.code)
      assert.matches("control characters are not allowed", k.err)
    end
  end)
end)
