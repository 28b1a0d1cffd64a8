-- An object's apiVersion, kind, namespace and name become request paths
-- (issue 24, class 4): they are checked against what Kubernetes allows
-- (group a DNS subdomain, version a DNS label, kind a name, namespace a DNS
-- label, name a path segment) before any request, so that
-- apiVersion "../../api/v1/namespaces/kube-system/secrets/victim#" cannot
-- make `apply` PATCH (or discover) an unintended path.  The stand-in's
-- request log shows that nothing at all was asked.
local kubeclient = require "fluence.kubeclient"
local errors = require "fluence.errors"
local sys = require "fluence.sys"
local cli = require "support.cli"
local H = require "fixtures.kube.harness"

describe("kubeclient.check_ref", function()
  it("takes what Kubernetes takes", function()
    for _, ok in ipairs{
      { "v1", "Pod", "p", "default" }, { "batch/v1", "Job" }, { "jobset.x-k8s.io/v1alpha2", "JobSet", "js" },
      { "flux-framework.org/v1alpha2", "MiniCluster" }, { "apps/v1", "Deployment", "a.b-c", "team-a" },
      { "v1", "List" }, { "example.com/v2beta1", "Thing-X" },
    } do
      assert.is_nil(kubeclient.check_ref(ok[1], ok[2], ok[3], ok[4]), table.concat(ok, " "))
    end
  end)

  it("refuses what would make another path, saying which part", function()
    local cases = {
      { { "../../api/v1/namespaces/kube-system/secrets/victim#", "Pod" }, "is not GROUP/VERSION or VERSION" },
      { { "a/b/c", "Pod" }, "is not GROUP/VERSION or VERSION" },
      { { "../v1", "Pod" }, 'the group "%.%." is not a DNS subdomain' },
      { { "/v1", "Pod" }, 'the group "" is not a DNS subdomain' },
      { { "Apps/v1", "Deployment" }, 'the group "Apps" is not a DNS subdomain' },
      { { "apps/v1?x=1", "Deployment" }, 'the version "v1%?x=1" is not a DNS label' },
      { { "..", "Pod" }, 'the version "%.%." is not a DNS label' },
      { { "v1#", "Pod" }, 'the version "v1#" is not a DNS label' },
      { { "v1", "Pod/../../secrets" }, 'kind "Pod/%.%./%.%./secrets" is not a kind' },
      { { "v1", "Pod", "..", "default" }, 'metadata%.name "%.%." cannot be a name' },
      { { "v1", "Pod", "a/b" }, 'metadata%.name "a/b" cannot be a name' },
      { { "v1", "Pod", "%2e%2e" }, 'metadata%.name "%%2e%%2e" cannot be a name' },
      { { "v1", "Pod", "p", "../kube-system" }, 'metadata%.namespace "%.%./kube%-system" is not a namespace' },
      { { "v1", "Pod", "p", "Kube\nSystem" }, 'metadata%.namespace "Kube\\nSystem" is not' },
      { { "v1", "" }, "object without apiVersion or kind" },
      -- a long value by its start (errors.brief), quoted as Go's %q
      { { "v1", ("K"):rep(1000) }, '^kind "' .. ("K"):rep(60) .. '%.%.%. %(1000 bytes%)" is not a kind' },
    }
    for _, c in ipairs(cases) do
      local why = kubeclient.check_ref(table.unpack(c[1]))
      assert.is_string(why, c[1][1])
      assert.matches(c[2], why)
      assert.is_nil(why:find("\n", 1, true), "one line: " .. why)
    end
  end)

end)

describe("object references before any request (stand-in)", function()
  local s, dir
  setup(function()
    s = H.start()
    dir = cli.tmpdir()
  end)
  teardown(function() if s then s:stop() end cli.cleanup() end)

  local function kubeconfig()
    return H.kubeconfig(s, { user = { token = H.TOKENS.admin } }, { dir = s.dir, name = "config" })
  end

  it("client:resource and client:path raise bad input and ask nothing", function()
    local c = kubeclient.new{ kubeconfig = kubeconfig(), timeout = 10 }
    H.requests(s)
    for _, ref in ipairs{ { "../../api/v1/namespaces/kube-system/secrets/victim#", "Pod", nil, "p" },
                          { "v1", "ConfigMap", "default", ".." }, { "v1", "ConfigMap", "../x", "p" } } do
      local ok, e = pcall(c.path, c, ref[1], ref[2], ref[3], ref[4])
      assert.is_false(ok)
      assert.is_true(errors.is(e), tostring(e))
      assert.are.equal(sys.EXIT.INPUT, e.code)
    end
    local ok, e = pcall(c.resource, c, "a/b/c", "Thing")
    assert.is_false(ok)
    assert.are.equal(sys.EXIT.INPUT, e.code)
    assert.are.same({}, H.requests(s))
  end)

  local function apply(manifest, ...)
    H.requests(s)
    local m = cli.write(dir .. "/m.yaml", manifest)
    local r = cli.run{ "apply", "-f", m, "--attributes", cli.root .. "/examples/quickstart/attributes.yaml",
                       "--kubeconfig", kubeconfig(), ..., env = { HOME = s.dir, KUBECONFIG = false } }
    return r, H.requests(s)
  end

  local function refused(r, seen, pattern)
    assert.are.equal(3, r.code, r.err)
    assert.are.equal("", r.out)
    assert.matches("^fluence: [^\n]*m%.yaml:%d+:%d+: " .. pattern, r.err)
    assert.are.equal(1, select(2, r.err:gsub("\n", "")), "one line: " .. r.err)
    assert.are.same({}, seen, "requests were made")
  end

  it("apply: an apiVersion that walks out of its path", function()
    local r, seen = apply(cli.POD:gsub("apiVersion: v1", 'apiVersion: "../../api/v1/namespaces/kube-system/secrets/victim#"'):format("min-cost"))
    refused(r, seen, 'apiVersion "%.%./%.%./api/v1/namespaces/kube%-system/secrets/victim#" is not GROUP/VERSION')
  end)

  it("apply and create: a bad kind, name or namespace, a List item too; with --dry-run=server", function()
    local pod = cli.POD:format("min-cost")
    local function check(manifest, pattern, ...)
      local r, seen = apply(manifest, ...)
      refused(r, seen, pattern)
    end
    check((pod:gsub("kind: Pod", "kind: Pod/../../secrets")), 'kind "Pod/%.%./%.%./secrets" is not a kind')
    check((pod:gsub("name: p", 'name: ".."')), 'metadata%.name "%.%." cannot be a name')
    check((pod:gsub("  name: p", "  name: p\n  namespace: ../kube-system")),
          'metadata%.namespace "%.%./kube%-system" is not a namespace', "--dry-run=server")
    local list = "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: ok}}\n" ..
                 "- {apiVersion: v1, kind: ConfigMap, metadata: {name: ../../x}}\n"
    local r, seen = apply(list)            -- the item itself is located
    refused(r, seen, 'metadata%.name "%.%./%.%./x" cannot be a name')
    assert.matches("m%.yaml:5:3: ", r.err)
    check((pod:gsub("apiVersion: v1", "apiVersion: Apps/v1")), 'apiVersion "Apps/v1": the group "Apps" is not a DNS subdomain')
    -- create takes the same path
    H.requests(s)
    local m = cli.write(dir .. "/c.yaml", (pod:gsub("apiVersion: v1", "apiVersion: v1/../x")))
    local r = cli.run{ "create", "-f", m, "--attributes", cli.root .. "/examples/quickstart/attributes.yaml",
                       "--kubeconfig", kubeconfig(), env = { HOME = s.dir, KUBECONFIG = false } }
    assert.are.equal(3, r.code, r.err)
    assert.are.same({}, H.requests(s))
  end)
end)
