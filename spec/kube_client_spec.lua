-- fluence.kubeclient: Status messages for 401/403/404/422, kinds to
-- resources (built-in, discovery) and large answers against a real
-- kube-apiserver (spec/support/envtest.lua); 500, 429 with Retry-After and a
-- server that never answers against the stand-in (spec/support/
-- kube_server.py), which a real server cannot be made to do.
local kubeclient = require "fluence.kubeclient"
local errors = require "fluence.errors"
local sys = require "fluence.sys"
local cli = require "support.cli"
local H = require "fixtures.kube.harness"
local envtest = require "support.envtest"

local function failure(f, ...)
  local ok, e = pcall(f, ...)
  assert.is_false(ok, "expected an error")
  assert.is_true(errors.is(e), tostring(e))
  assert.are.equal(sys.EXIT.CLUSTER, e.code)
  return e
end

envtest.describe("kubeclient", function(api)
  local ns
  setup(function()
    ns = api:namespace("client")
    api:install_crd(cli.root .. "/spec/fixtures/crds/jobset.yaml")
  end)
  teardown(cli.cleanup)

  local function client(o)
    o = o or {}
    return kubeclient.new{ kubeconfig = api:kubeconfig_for{ namespace = o.namespace, context = o.context, user = o.user },
                           timeout = 20, namespace = o.ns }
  end

  it("knows its namespace and decodes answers", function()
    local c = client{ namespace = ns }
    assert.are.equal(ns, c.namespace)
    local st, list = c:request("GET", "/api/v1/namespaces/" .. ns .. "/configmaps")
    assert.are.equal(200, st)
    assert.are.equal("ConfigMapList", list.kind)
  end)

  it("shows 401 with the server's message and whose credentials failed", function()
    local c = client{ user = { token = "fluence-fake-wrong-token" } }
    local e = failure(c.request, c, "GET", "/api/v1/namespaces")
    assert.matches('^cluster: Unauthorized %(HTTP 401 Unauthorized%); the server rejected the credentials of user "admin"', e.message)
    assert.is_nil(e.message:find("fluence-fake-wrong-token", 1, true))
    assert.are.equal(401, e.status)
  end)

  it("shows 403 with the server's Status.message", function()
    local c = client{ context = "nobody" }
    local e = failure(c.request, c, "GET", "/api/v1/namespaces/kube-system/configmaps/fluence-resources")
    assert.are.equal('cluster: configmaps "fluence-resources" is forbidden: User "nobody" cannot get resource ' ..
                     '"configmaps" in API group "" in the namespace "kube-system" (HTTP 403 Forbidden)', e.message)
    assert.are.equal("Forbidden", e.reason)
    assert.are.equal(403, e.status)
  end)

  it("shows 404", function()
    local c = client()
    local e = failure(c.request, c, "GET", "/api/v1/namespaces/" .. ns .. "/configmaps/nope")
    assert.are.equal('cluster: configmaps "nope" not found (HTTP 404 Not Found)', e.message)
    assert.are.equal("NotFound", e.reason)
  end)

  it("shows 422 with the invalid field", function()
    local c = client()
    local e = failure(c.request, c, "POST", "/api/v1/namespaces/" .. ns .. "/configmaps",
                      { apiVersion = "v1", kind = "ConfigMap", metadata = { name = "Bad_Name" } })
    assert.matches('^cluster: ConfigMap "Bad_Name" is invalid: metadata%.name: Invalid value', e.message)
    assert.matches("%(HTTP 422 Unprocessable Entity%)$", e.message)
  end)

  it("maps kinds to resources: built-in, then discovery with scope, cached", function()
    local c = client()
    assert.are.equal("/apis/batch/v1/namespaces/default/jobs/x", c:path("batch/v1", "Job", nil, "x"))
    assert.are.equal("/api/v1/namespaces/ns/configmaps", c:path("v1", "ConfigMap", "ns"))
    assert.are.equal("/api/v1/namespaces/x", c:path("v1", "Namespace", "ignored", "x"))
    api:audit()
    local p, r = c:path("jobset.x-k8s.io/v1alpha2", "JobSet", "team-a", "js")
    assert.are.equal("/apis/jobset.x-k8s.io/v1alpha2/namespaces/team-a/jobsets/js", p)
    assert.is_true(r.namespaced)
    -- a cluster-scoped kind of the server's own, found only by discovery
    local rc, rr = c:path("apiregistration.k8s.io/v1", "APIService", "ns", "v1.batch")
    assert.are.equal("/apis/apiregistration.k8s.io/v1/apiservices/v1.batch", rc)
    assert.is_false(rr.namespaced)
    c:path("jobset.x-k8s.io/v1alpha2", "JobSet", "other", "js2")       -- cached: no new request
    local gets = {}
    for _, e in ipairs(api:audit()) do gets[#gets + 1] = e.path end
    assert.are.same({ "/apis/jobset.x-k8s.io/v1alpha2", "/apis/apiregistration.k8s.io/v1" }, gets)
    local e = failure(c.path, c, "nope.example/v1", "Thing", nil, "x")
    assert.matches("does not serve nope%.example/v1", e.message)
    e = failure(c.path, c, "jobset.x-k8s.io/v1alpha2", "Unknown", nil, "x")
    assert.matches("no resource for kind Unknown", e.message)
  end)

  it("reads a large answer", function()
    local c = client()
    -- a ConfigMap holds at most 1 MiB
    c:request("POST", "/api/v1/namespaces/" .. ns .. "/configmaps", { apiVersion = "v1", kind = "ConfigMap",
      metadata = { name = "huge" }, data = { ["resources.yaml"] = "- name: big\n#" .. ("x"):rep(1000000) .. "\n" } })
    local st, cm = c:request("GET", "/api/v1/namespaces/" .. ns .. "/configmaps/huge")
    assert.are.equal(200, st)
    assert.is_true(#cm.data["resources.yaml"] > 1000000)
  end)
end)

describe("kubeclient against faults a real server cannot be made to produce (stand-in)", function()
  local s
  setup(function() s = H.start() end)
  teardown(function() s.stop(); cli.cleanup() end)

  local function client(o)
    o = o or {}
    local path = H.kubeconfig(s, o)
    return kubeclient.new{ kubeconfig = path, timeout = o.timeout or 20, namespace = o.ns }
  end

  it("shows the server's message for 500", function()
    local c5 = client{ cluster = { server = s.url .. "/_500" } }
    local e = failure(c5.request, c5, "GET", "/api/v1/namespaces")
    assert.are.equal("cluster: Internal error occurred: the test server was asked to fail (HTTP 500 Internal Server Error)",
                     e.message)
  end)

  it("names the server when the connection fails", function()
    local c = client{ cluster = { server = "https://127.0.0.1:1" }, timeout = 5 }
    local e = failure(c.request, c, "GET", "/api/v1/namespaces?labelSelector=x")
    assert.matches("^cluster: GET https://127%.0%.0%.1:1/api/v1/namespaces: ", e.message)
    assert.matches('%(context "test"%)$', e.message)
  end)

  it("honours Retry-After on 429, a bounded number of times", function()
    local c = client{ cluster = { server = s.url .. "/_4292" } }
    local t0 = sys.monotonic()
    local st = c:request("GET", "/api/v1/namespaces")
    assert.are.equal(200, st)
    assert.is_true(sys.monotonic() - t0 >= 1.5, "waited for Retry-After twice")
    local old = kubeclient.MAX_RETRIES
    kubeclient.MAX_RETRIES = 1
    finally(function() kubeclient.MAX_RETRIES = old end)
    c = client{ cluster = { server = s.url .. "/_4295" } }
    local e = failure(c.request, c, "GET", "/api/v1/namespaces")
    assert.matches("HTTP 429 Too Many Requests", e.message)
  end)

  it("gives up on a slow server at the request timeout", function()
    local c = client{ cluster = { server = s.url .. "/_slow" }, timeout = 1 }
    local t0 = sys.monotonic()
    local e = failure(c.request, c, "GET", "/api/v1/namespaces/kube-system/configmaps/fluence-resources")
    local dt = sys.monotonic() - t0
    assert.matches("timed out", e.message)
    assert.is_true(dt < 15, "took " .. dt .. " s")
  end)

  it("takes --request-timeout as seconds or a kubectl duration", function()
    assert.are.equal(30, kubeclient.parse_timeout(nil))
    assert.are.equal(30, kubeclient.parse_timeout("0"))
    assert.are.equal(2.5, kubeclient.parse_timeout("2.5"))
    assert.are.equal(90, kubeclient.parse_timeout("1m30s"))
    assert.are.equal(0.5, kubeclient.parse_timeout("500ms"))
    assert.are.equal(3600, kubeclient.parse_timeout("1h"))
    for _, bad in ipairs{ "soon", "-1", "1d", "5x", "1e12" } do
      local ok, e = pcall(kubeclient.parse_timeout, bad)
      assert.is_false(ok)
      assert.are.equal(sys.EXIT.USAGE, e.code)
    end
  end)
end)
