-- The real-world corpus (spec/fixtures/realworld) against a real API server
-- (issue 31; spec/support/envtest.lua): every file, selected and pinned by
-- fluence, is accepted by the server (`fluence create --dry-run=server`):
-- built-in kinds are validated as in any cluster, JobSet and MiniCluster by
-- their reduced real schemas (spec/fixtures/crds, which prune a misplaced
-- pin), the other custom kinds by schemas that keep any field (this
-- machine has none of their CRDs; a structural check of them would be
-- invented).
local cli = require "support.cli"
local envtest = require "support.envtest"
local yaml = require "fluence.yaml"

local DIR = cli.root .. "/spec/fixtures/realworld"
local REAL_CRDS = { ["jobset.x-k8s.io/JobSet"] = "jobset.yaml", ["flux-framework.org/MiniCluster"] = "minicluster.yaml" }
local CLUSTER_SCOPED = { ClusterQueue = true, ResourceFlavor = true, ClusterWorkflowTemplate = true }

local function corpus()
  local files = {}
  local p = io.popen("cd " .. cli.quote(DIR) .. " && find . -name '*.yaml' -o -name '*.json' | sort")
  for f in p:lines() do
    f = f:gsub("^%./", "")
    if not f:match("%.kubectl%.json$") and f ~= "attributes.yaml" then files[#files + 1] = f end
  end
  p:close()
  return files
end

-- a CRD that stores whatever spec it is sent, for each custom kind and its
-- versions in the corpus
local function permissive_crds(dir)
  local kinds = {}
  for _, f in ipairs(corpus()) do
    for _, doc in ipairs(assert(yaml.decode_all(assert(cli.slurp(DIR .. "/" .. f)), f))) do
      local group, version = tostring(doc.apiVersion):match("^(.+)/(.+)$")
      if group and group:find(".", 1, true) and not REAL_CRDS[group .. "/" .. doc.kind] then
        local key = group .. "/" .. doc.kind
        kinds[key] = kinds[key] or { group = group, kind = doc.kind, versions = {} }
        kinds[key].versions[version] = true
      end
    end
  end
  local files = {}
  for _, k in pairs(kinds) do
    local plural = k.kind:lower() .. "s"
    local versions, storage = {}, true
    local names = {}
    for v in pairs(k.versions) do names[#names + 1] = v end
    table.sort(names)
    for _, v in ipairs(names) do
      versions[#versions + 1] = ("  - name: %s\n    served: true\n    storage: %s\n    schema:\n      openAPIV3Schema:\n" ..
                                 "        type: object\n        x-kubernetes-preserve-unknown-fields: true\n")
                                :format(v, tostring(storage))
      storage = false
    end
    local text = ("apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: %s.%s\n" ..
                  "spec:\n  group: %s\n  names: {kind: %s, plural: %s, listKind: %sList}\n  scope: %s\n  versions:\n%s")
                 :format(plural, k.group, k.group, k.kind, plural, k.kind,
                         CLUSTER_SCOPED[k.kind] and "Cluster" or "Namespaced", table.concat(versions))
    files[#files + 1] = cli.write(("%s/%s.%s.yaml"):format(dir, plural, k.group), text)
  end
  return files
end

envtest.describe("real-world manifests, pinned, against the API server", function(api)
  local dir, kubeconfig
  setup(function()
    dir = cli.tmpdir()
    for _, f in ipairs(permissive_crds(dir)) do api:install_crd(f) end
    for _, f in pairs(REAL_CRDS) do api:install_crd(cli.root .. "/spec/fixtures/crds/" .. f) end
    pcall(api.request, api, "POST", "/api/v1/namespaces",
          { apiVersion = "v1", kind = "Namespace", metadata = { name = "kubeflow" } })
    kubeconfig = api:kubeconfig_for{ namespace = api:namespace("realworld") }
  end)
  teardown(cli.cleanup)

  for _, f in ipairs(corpus()) do
    it(f .. " is accepted as fluence sends it", function()
      local r = cli.run{ "create", "--dry-run=server", "-f", DIR .. "/" .. f, "--attributes", DIR .. "/attributes.yaml",
                         "--kubeconfig", kubeconfig, "--fluence-ns", "default", env = { HOME = dir } }
      assert.are.equal(0, r.code, r.err)
      assert.is_nil(r.err:find("warning", 1, true), r.err)
      for line in r.out:gmatch("[^\n]+") do assert.matches(" created %(server dry run%)$", line) end
    end)
  end
end)
