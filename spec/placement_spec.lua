-- Which context each object of an apply goes to (lua/fluence/placement.lua),
-- without a server: what a placed workload uses follows it, to each
-- cluster that needs it; the rest goes to the default context.
-- (spec/kube_related_spec.lua applies the same to two real API servers.)
local json = require "fluence.json"
local placement = require "fluence.placement"

local function obj(doc, context)
  local meta = doc.metadata or {}
  return { apiVersion = doc.apiVersion, kind = doc.kind, name = meta.name, namespace = meta.namespace,
           json = json.encode(doc), context = context, chosen = context and "gpu-a" or nil }
end

local function pod(name, spec, labels)
  return { apiVersion = "v1", kind = "Pod", metadata = { name = name, labels = labels }, spec = spec }
end

local function cm(name, ns, labels)
  return { apiVersion = "v1", kind = "ConfigMap", metadata = { name = name, namespace = ns, labels = labels } }
end

describe("placement.plan", function()
  it("sends what a workload's pod spec names to its context, and the rest to the default", function()
    local objects = {
      obj(pod("p", { serviceAccountName = "sa", containers = json.array{ { name = "c",
        envFrom = json.array{ { secretRef = { name = "s" } } } } } }), "west"),
      obj(cm("unused")),
      obj({ apiVersion = "v1", kind = "Secret", metadata = { name = "s" } }),
      obj({ apiVersion = "v1", kind = "ServiceAccount", metadata = { name = "sa" },
            secrets = json.array{ { name = "token" } } }),
      obj({ apiVersion = "v1", kind = "Secret", metadata = { name = "token" } }),
    }
    local w = placement.plan(objects, { default = "east" })
    assert.are.same({ "west" }, w[1].contexts)
    assert.are.same({ "east" }, w[2].contexts)
    assert.is_true(w[2].default)
    assert.are.same({ "west" }, w[3].contexts)
    assert.are.equal("pod/p (envFrom)", w[3].why)
    assert.are.same({ "west" }, w[4].contexts)
    -- through the ServiceAccount that followed
    assert.are.same({ "west" }, w[5].contexts)
    assert.are.equal("pod/p (the ServiceAccount's secrets)", w[5].why)
  end)

  it("sends a shared object to every context that uses it, in the workloads' order", function()
    local function user(name, ctx)
      return obj(pod(name, { containers = json.array{ { name = "c" } },
        volumes = json.array{ { name = "v", configMap = { name = "shared" } } } }), ctx)
    end
    local w = placement.plan({ user("a", "west"), user("b", "east"), obj(cm("shared")) }, { default = "east" })
    assert.are.same({ "west", "east" }, w[3].contexts)
  end)

  it("matches Services by selector and objects by group label, in the same namespace only", function()
    local labels = { app = "x", ["fluence.flux-framework.org/group"] = "g1" }
    local objects = {
      obj(pod("p", { containers = json.array{ { name = "c" } } }, labels), "west"),
      obj({ apiVersion = "v1", kind = "Service", metadata = { name = "svc" }, spec = { selector = { app = "x" } } }),
      obj({ apiVersion = "v1", kind = "Service", metadata = { name = "other" }, spec = { selector = { app = "y" } } }),
      obj({ apiVersion = "v1", kind = "Service", metadata = { name = "all" }, spec = { selector = {} } }),
      obj(cm("same-group", nil, { ["fluence.flux-framework.org/group"] = "g1" })),
      obj(cm("other-ns", "elsewhere", { ["fluence.flux-framework.org/group"] = "g1" })),
    }
    local w = placement.plan(objects, { default = "east" })
    assert.are.same({ "west" }, w[2].contexts)
    assert.are.same({ "east" }, w[3].contexts)
    -- a Service selecting nothing selects no pods of ours
    assert.are.same({ "east" }, w[4].contexts)
    assert.are.same({ "west" }, w[5].contexts)
    assert.are.same({ "east" }, w[6].contexts)
  end)

  it("sends what an unplaced workload uses to the default context too", function()
    local function user(name, ctx)
      return obj(pod(name, { containers = json.array{ { name = "c",
        envFrom = json.array{ { configMapRef = { name = "cfg" } } } } } }), ctx)
    end
    local deploy = user("web")
    deploy.kind, deploy.apiVersion = "Deployment", "apps/v1"
    local w = placement.plan({ user("job", "west"), deploy, obj(cm("cfg")) }, { default = "east" })
    assert.are.same({ "east" }, w[2].contexts)
    assert.is_true(w[2].default)
    assert.are.same({ "west", "east" }, w[3].contexts)
    assert.are.equal("pod/job (envFrom)", w[3].why)
  end)

  it("follows by name only the core kinds", function()
    local user = obj(pod("p", { containers = json.array{ { name = "c",
      envFrom = json.array{ { configMapRef = { name = "cfg" } } } } } }), "west")
    local other = obj({ apiVersion = "example.com/v1", kind = "ConfigMap", metadata = { name = "cfg" } })
    local w = placement.plan({ user, other }, { default = "east" })
    assert.are.same({ "east" }, w[2].contexts)
  end)

  it("never moves an object placed by its own selection", function()
    local a = obj(pod("a", { containers = json.array{ { name = "c",
      env = json.array{ { name = "X", valueFrom = { configMapKeyRef = { name = "b", key = "k" } } } } } } }), "west")
    local b = obj(pod("b", { containers = json.array{ { name = "c" } } }), "east")
    b.kind = "ConfigMap"
    local w = placement.plan({ a, b }, { default = "east" })
    assert.are.same({ "east" }, w[2].contexts)
  end)
end)
