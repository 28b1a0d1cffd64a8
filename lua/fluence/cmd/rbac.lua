-- `fluence rbac`: the least privilege fluence needs to read a cluster, as
-- RBAC objects an admin can `kubectl apply -f -` (docs/kubernetes.md,
-- "Least privilege"):
--
--   ClusterRole fluence-reader   list nodes (fits), list pods (fits:now) --
--                                cluster scope: the lists are cluster-wide
--   Role fluence-offerings       get the fluence-resources ConfigMap, by
--                                resourceName, in --fluence-ns (kube-system)
--
-- and, for each --user, --group and --serviceaccount NS:NAME given, the
-- ClusterRoleBinding and RoleBinding granting them.  Discovery (GET /api,
-- /apis/...) needs nothing: every authenticated user may (system:discovery).
-- What `apply` sends needs the rights of those objects, which only the
-- admin knows; they are not here.
local sys = require "fluence.sys"
local errors = require "fluence.errors"
local json = require "fluence.json"

local cmd = {}

cmd.CLUSTER_ROLE = "fluence-reader"
cmd.ROLE = "fluence-offerings"
local RBAC = "rbac.authorization.k8s.io"

-- The rules, each with why fluence needs it (the YAML's comments).
cmd.RULES = {
  cluster = {
    { resources = { "nodes" }, verbs = { "list" }, why = "fits: the nodes Fluence builds its graph from" },
    { resources = { "pods" }, verbs = { "list" }, why = "fits:now: the pods bound to them, and what they request" },
  },
  namespace = {
    { resources = { "configmaps" }, names = { "fluence-resources" }, verbs = { "get" },
      why = "the offerings: backends and prices the scheduler publishes" },
  },
}

-- a name in the YAML: JSON's quoting is YAML's double-quoted scalar, so
-- any user or group name is written as itself, on one line
local function q(s) return json.encode(s) end

local function list(items)
  local out = {}
  for i, v in ipairs(items) do out[i] = q(v) end
  return "[" .. table.concat(out, ", ") .. "]"
end

local function rules(lines, set)
  lines[#lines + 1] = "rules:"
  for _, r in ipairs(set) do
    lines[#lines + 1] = "  # " .. r.why
    lines[#lines + 1] = "  - apiGroups: [\"\"]"
    lines[#lines + 1] = "    resources: " .. list(r.resources)
    if r.names then lines[#lines + 1] = "    resourceNames: " .. list(r.names) end
    lines[#lines + 1] = "    verbs: " .. list(r.verbs)
  end
end

-- The subjects named on the command line, in that order.
local function subjects(opts)
  local out = {}
  for _, u in ipairs(opts.user or {}) do out[#out + 1] = { kind = "User", name = u } end
  for _, g in ipairs(opts.group or {}) do out[#out + 1] = { kind = "Group", name = g } end
  for _, sa in ipairs(opts.serviceaccount or {}) do
    local ns, name = sa:match("^([^:]+):([^:]+)$")
    if not ns then errors.raise("USAGE", "rbac: --serviceaccount %q is not NAMESPACE:NAME", sa) end
    out[#out + 1] = { kind = "ServiceAccount", name = name, namespace = ns }
  end
  for _, s in ipairs(out) do
    if s.name == "" or s.name:find("[%c]") then errors.raise("USAGE", "rbac: %q is not a name", s.name) end
  end
  return out
end

local function binding(lines, kind, name, namespace, role_kind, subs)
  lines[#lines + 1] = "---"
  lines[#lines + 1] = "apiVersion: " .. RBAC .. "/v1"
  lines[#lines + 1] = "kind: " .. kind
  lines[#lines + 1] = "metadata:"
  lines[#lines + 1] = "  name: " .. name
  if namespace then lines[#lines + 1] = "  namespace: " .. q(namespace) end
  lines[#lines + 1] = "roleRef:"
  lines[#lines + 1] = "  apiGroup: " .. RBAC
  lines[#lines + 1] = "  kind: " .. role_kind
  lines[#lines + 1] = "  name: " .. name
  lines[#lines + 1] = "subjects:"
  for _, s in ipairs(subs) do
    lines[#lines + 1] = "  - kind: " .. s.kind
    lines[#lines + 1] = "    name: " .. q(s.name)
    if s.namespace then lines[#lines + 1] = "    namespace: " .. q(s.namespace)
    else lines[#lines + 1] = "    apiGroup: " .. RBAC end
  end
end

-- The YAML text (several documents).
function cmd.render(opts)
  local ns = opts["fluence-ns"] or "kube-system"
  local why = require("fluence.kubeclient").check_ref("v1", "ConfigMap", "fluence-resources", ns)
  if why then errors.raise("USAGE", "rbac: --fluence-ns: %s", why) end
  local subs = subjects(opts)
  local l = {
    "# The least privilege fluence needs to read a cluster (fluence " .. sys.VERSION .. ").",
    "# Grant it with: fluence rbac --user NAME | kubectl apply -f -",
    "apiVersion: " .. RBAC .. "/v1",
    "kind: ClusterRole",
    "metadata:",
    "  name: " .. cmd.CLUSTER_ROLE,
  }
  rules(l, cmd.RULES.cluster)
  for _, line in ipairs{ "---", "apiVersion: " .. RBAC .. "/v1", "kind: Role", "metadata:",
                         "  name: " .. cmd.ROLE, "  namespace: " .. q(ns) } do
    l[#l + 1] = line
  end
  rules(l, cmd.RULES.namespace)
  if #subs > 0 then
    binding(l, "ClusterRoleBinding", cmd.CLUSTER_ROLE, nil, "ClusterRole", subs)
    binding(l, "RoleBinding", cmd.ROLE, ns, "Role", subs)
  end
  return table.concat(l, "\n") .. "\n"
end

function cmd.run(args)
  if #args.positional > 0 then errors.raise("USAGE", "rbac: unexpected argument %q", args.positional[1]) end
  sys.write(1, cmd.render(args.opts))
  return sys.EXIT.OK
end

return cmd
