-- Least privilege, written down (issue 27, point 9): `fluence rbac` prints
-- the ClusterRole (list nodes, list pods) and the Role (get the
-- fluence-resources ConfigMap by resourceName) fluence needs, with bindings
-- to the subjects named.  Against two real kube-apiservers: applied with
-- kubectl for a user who has no rights at all, it is exactly enough for a
-- fits:now selection across both clusters, and no more.
local json = require "fluence.json"
local yaml = require "fluence.yaml"
local cli = require "support.cli"
local envtest = require "support.envtest"

describe("fluence rbac", function()
  it("prints the roles, and bindings for each subject named, as YAML kubectl takes", function()
    local r = cli.run{ "rbac", "--user", "alice", "--group", 'team "a"', "--serviceaccount", "ci:runner",
                       "--fluence-ns", "fluence" }
    assert.are.equal(0, r.code, r.err)
    local docs = assert(yaml.decode_all(r.out))
    assert.are.equal(4, #docs)
    local by = {}
    for _, d in ipairs(docs) do by[d.kind] = d end
    assert.are.same({ { apiGroups = { "" }, resources = { "nodes" }, verbs = { "list" } },
                      { apiGroups = { "" }, resources = { "pods" }, verbs = { "list" } } }, by.ClusterRole.rules)
    assert.are.same({ { apiGroups = { "" }, resources = { "configmaps" }, resourceNames = { "fluence-resources" },
                        verbs = { "get" } } }, by.Role.rules)
    assert.are.equal("fluence", by.Role.metadata.namespace)
    assert.are.equal("fluence", by.RoleBinding.metadata.namespace)
    assert.is_nil(by.ClusterRoleBinding.metadata.namespace)
    assert.are.same({ kind = "Group", name = 'team "a"', apiGroup = "rbac.authorization.k8s.io" },
                    by.ClusterRoleBinding.subjects[2])
    assert.are.same({ kind = "ServiceAccount", name = "runner", namespace = "ci" }, by.RoleBinding.subjects[3])
    -- without subjects: the roles alone
    r = cli.run{ "rbac" }
    assert.are.equal(2, #assert(yaml.decode_all(r.out)))
    assert.matches("namespace: \"kube%-system\"", r.out)
  end)

  it("refuses a service account that is not NS:NAME, and a namespace that is not one", function()
    local r = cli.run{ "rbac", "--serviceaccount", "runner" }
    assert.are.equal(2, r.code)
    assert.are.equal("", r.out)
    assert.matches('%-%-serviceaccount "runner" is not NAMESPACE:NAME', r.err)
    r = cli.run{ "rbac", "--fluence-ns", "../x" }
    assert.are.equal(2, r.code)
  end)
end)

envtest.describe("fluence rbac on real clusters", function(east)
  local west = assert(envtest.get("west"))
  local apis = { east = east, west = west }
  local dir, kubeconfig, ns
  local USER = "fluence-rbac-spec"
  local made = {}

  setup(function()
    dir = cli.tmpdir()
    ns = east:namespace("rbac")
    local contexts = {}
    for name, api in pairs(apis) do
      pcall(api.request, api, "POST", "/api/v1/namespaces", { apiVersion = "v1", kind = "Namespace", metadata = { name = ns } })
      api:request("POST", ("/api/v1/namespaces/%s/configmaps"):format(ns), {
        apiVersion = "v1", kind = "ConfigMap", metadata = { name = "fluence-resources" },
        data = { ["resources.yaml"] = "resources:\n  - type: gpu\n    name: gpu-l4\n    attributes: {cost_usd: " ..
                                      (name == "east" and "1" or "2") .. "}\n" } })
      -- another ConfigMap beside it: the Role must not reach it
      api:request("POST", ("/api/v1/namespaces/%s/configmaps"):format(ns), {
        apiVersion = "v1", kind = "ConfigMap", metadata = { name = "not-yours" }, data = { x = "y" } })
      local node = "rbac-" .. name
      api:node(node, { capacity = { cpu = "8", memory = "16Gi", pods = "110" } })
      made[#made + 1] = { api, node }
      -- the east is busy now: fits:now must see its pods to choose the west
      if name == "east" then
        api:request("POST", ("/api/v1/namespaces/%s/pods"):format(ns), { apiVersion = "v1", kind = "Pod",
          metadata = { name = "busy" }, spec = { nodeName = node, containers = json.array{
            { name = "c", image = "busybox", resources = { requests = { cpu = "7" } } } } } })
      end
      local cert, key = api:client_cert(USER)
      contexts[#contexts + 1] = { name = name, api = api, namespace = ns,
                                  user = { ["client-certificate"] = cert, ["client-key"] = key } }
    end
    kubeconfig = envtest.kubeconfig_many(dir .. "/config", contexts, "east")
  end)
  teardown(function()
    for _, api in pairs(apis) do
      for _, path in ipairs{ "clusterrolebindings/fluence-reader", "clusterroles/fluence-reader" } do
        pcall(api.request, api, "DELETE", "/apis/rbac.authorization.k8s.io/v1/" .. path)
      end
    end
    for _, m in ipairs(made) do pcall(m[1].request, m[1], "DELETE", "/api/v1/nodes/" .. m[2]) end
    cli.cleanup()
  end)

  local function select(policy)
    local job = cli.write(dir .. "/job.yaml", cli.POD:format(policy):gsub("image: x", "image: x, resources: {requests: {cpu: \"4\"}}"))
    return cli.run{ "select", "-f", job, "--context", "east", "--context", "west", "--fluence-ns", ns,
                    env = { KUBECONFIG = kubeconfig, HOME = dir } }
  end

  it("without it the user can read nothing: exit 4 naming the missing right", function()
    local r = select("fits:now, min-cost")
    assert.are.equal(4, r.code, r.err)
    assert.are.equal("", r.out)
    assert.matches("is forbidden: User \"" .. USER:gsub("%p", "%%%0") .. "\"", r.err)
  end)

  it("applied with kubectl, it is exactly enough for fits:now on both clusters", function()
    local r = cli.run{ "rbac", "--user", USER, "--fluence-ns", ns }
    assert.are.equal(0, r.code, r.err)
    for _, api in pairs(apis) do
      local k, why = api:kubectl{ "apply", "-f", "-", stdin = r.out }
      if not k then pending(why) return end
      assert.are.equal(0, k.code, k.err)
    end
    local s = select("fits:now, min-cost")
    assert.are.equal(0, s.code, s.err)
    -- the cheaper east is busy now (7 of 8 cores): the west it is
    assert.matches('selected backend "gpu%-l4" on context "west"', s.err)
    assert.matches("require%-backend: gpu%-l4", s.out)
    -- and no more: another ConfigMap beside it, the secrets, a write
    local user_client = require("fluence.kubeclient").new{ kubeconfig = kubeconfig, context = "east", timeout = 10 }
    for _, req in ipairs{ { "GET", ("/api/v1/namespaces/%s/configmaps/not-yours"):format(ns) },
                          { "GET", ("/api/v1/namespaces/%s/secrets"):format(ns) },
                          { "DELETE", ("/api/v1/namespaces/%s/pods/busy"):format(ns) },
                          { "GET", "/api/v1/nodes/rbac-east" } } do
      local ok, e = pcall(user_client.request, user_client, req[1], req[2])
      assert.is_false(ok, req[1] .. " " .. req[2] .. " was allowed")
      assert.are.equal(403, e.status, tostring(e))
    end
  end)
end)
