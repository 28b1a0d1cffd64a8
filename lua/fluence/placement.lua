-- Where each object of an apply goes when several contexts are given.  A
-- workload goes to the cluster its selection chose; what it needs goes with
-- it, else it would start without its config in one cluster while its
-- ConfigMap sits in another.  An object follows every placed workload that
-- uses it (so one ConfigMap used by workloads placed in two clusters goes to
-- both):
--   * ConfigMap, Secret, PersistentVolumeClaim, ServiceAccount named by one
--     of its pod specs: envFrom, env valueFrom, volumes (projected too),
--     serviceAccountName, imagePullSecrets -- and, through a ServiceAccount
--     that follows, the Secrets it names;
--   * a Service whose selector its pod labels match;
--   * any object with the same fluence.flux-framework.org/group label.
-- (In the same namespace.)  Everything else goes to the default context:
-- the kubeconfig's current one when it is among those given, else the
-- first named -- and what an unplaced workload there uses goes with it (a
-- ConfigMap used by a placed Job and by a Deployment without a policy goes
-- to both clusters).
--
--   placement.plan(objects, o) -> { [i] = { contexts = { name, ... },
--                                           why = text | nil }, ... }
--     objects: a selection's res.objects (kind, name, namespace, json,
--              context = the chosen cluster's context, for placed ones)
--     o: { default = context name, namespace = -n }
--   placement.default_context(cl, opts) -> name
local json = require "fluence.json"

local M = {}

local GROUP = require("fluence.request").PREFIX .. "group"

-- The kinds that follow by name (core/v1), and how a pod spec names them.
local function key(kind, ns, name) return kind .. "\0" .. ns .. "\0" .. tostring(name) end

local function tbl(v) return type(v) == "table" and v or nil end
local function list(v) return type(v) == "table" and v or {} end

-- The refs {kind, name, how} one pod spec makes.
local function pod_refs(spec, out)
  local function add(kind, name, how)
    if type(name) == "string" and name ~= "" then out[#out + 1] = { kind, name, how } end
  end
  for _, field in ipairs{ "containers", "initContainers", "ephemeralContainers" } do
    for _, c in ipairs(list(spec[field])) do
      if tbl(c) then
        for _, e in ipairs(list(c.envFrom)) do
          if tbl(e) then
            add("ConfigMap", tbl(e.configMapRef) and e.configMapRef.name, "envFrom")
            add("Secret", tbl(e.secretRef) and e.secretRef.name, "envFrom")
          end
        end
        for _, e in ipairs(list(c.env)) do
          local vf = tbl(e) and tbl(e.valueFrom)
          if vf then
            add("ConfigMap", tbl(vf.configMapKeyRef) and vf.configMapKeyRef.name, "env valueFrom")
            add("Secret", tbl(vf.secretKeyRef) and vf.secretKeyRef.name, "env valueFrom")
          end
        end
      end
    end
  end
  for _, v in ipairs(list(spec.volumes)) do
    if tbl(v) then
      add("ConfigMap", tbl(v.configMap) and v.configMap.name, "volume")
      add("Secret", tbl(v.secret) and v.secret.secretName, "volume")
      add("PersistentVolumeClaim", tbl(v.persistentVolumeClaim) and v.persistentVolumeClaim.claimName, "volume")
      for _, s in ipairs(list(tbl(v.projected) and v.projected.sources)) do
        if tbl(s) then
          add("ConfigMap", tbl(s.configMap) and s.configMap.name, "volume")
          add("Secret", tbl(s.secret) and s.secret.name, "volume")
        end
      end
    end
  end
  add("ServiceAccount", spec.serviceAccountName or spec.serviceAccount, "serviceAccountName")
  for _, s in ipairs(list(spec.imagePullSecrets)) do add("Secret", tbl(s) and s.name, "imagePullSecrets") end
end

-- Every pod spec in doc (a mapping with a `containers` list), with the
-- labels of the pod template it is the spec of: refs and label sets.
local function scan(doc)
  local refs, labels = {}, {}
  local function walk(t, depth)
    if depth > 64 then return end
    if type(t.containers) == "table" then pod_refs(t, refs) end
    local spec = tbl(t.spec)
    if spec and type(spec.containers) == "table" then
      labels[#labels + 1] = tbl(tbl(t.metadata) and t.metadata.labels) or {}
    end
    for _, v in pairs(t) do
      if type(v) == "table" then walk(v, depth + 1) end
    end
  end
  walk(doc, 0)
  if doc.kind == "ServiceAccount" then
    for _, s in ipairs(list(doc.secrets)) do
      if tbl(s) and type(s.name) == "string" then refs[#refs + 1] = { "Secret", s.name, "the ServiceAccount's secrets" } end
    end
    for _, s in ipairs(list(doc.imagePullSecrets)) do
      if tbl(s) and type(s.name) == "string" then refs[#refs + 1] = { "Secret", s.name, "imagePullSecrets" } end
    end
  end
  return refs, labels
end

local function selects(selector, labels)
  if type(selector) ~= "table" or next(selector) == nil then return false end
  for k, v in pairs(selector) do
    if labels[k] ~= v then return false end
  end
  return true
end

local function ref_text(o)
  return require("fluence.apply").display_name(o.apiVersion, o.kind, o.name)
end

function M.plan(objects, o)
  local items, by_key, services, by_group = {}, {}, {}, {}
  for i, obj in ipairs(objects) do
    local doc = obj.json and json.decode(obj.json)
    local it = { i = i, obj = obj, doc = tbl(doc) or {}, contexts = {}, seen = {} }
    local meta = tbl(it.doc.metadata) or {}
    it.ns = (type(meta.namespace) == "string" and meta.namespace) or o.namespace or ""
    it.refs, it.labels = scan(it.doc)
    local own = tbl(meta.labels) or {}
    it.groups = {}
    for _, ls in ipairs{ own, table.unpack(it.labels) } do
      local g = ls[GROUP]
      if type(g) == "string" and not it.groups[g] then
        it.groups[g] = true
        local k = it.ns .. "\0" .. g
        by_group[k] = by_group[k] or {}
        table.insert(by_group[k], it)
      end
    end
    items[i] = it
    -- the kinds that follow by name are core/v1's
    if obj.name and obj.apiVersion == "v1" then
      by_key[key(tostring(obj.kind), it.ns, obj.name)] = it
      if obj.kind == "Service" and tbl(it.doc.spec) then services[#services + 1] = it end
    end
  end
  local function place(it, ctx, why)
    if it.seen[ctx] then return false end
    it.seen[ctx] = true
    it.contexts[#it.contexts + 1] = ctx
    it.why = it.why or why
    return true
  end
  -- From root, placed in ctx, through what it uses (breadth first); a
  -- placed object is never moved by another's use of it.  related: also
  -- the Services selecting its pods and the objects of its group.
  local function spread(root, ctx, related)
    place(root, ctx)
    local queue, head = { root }, 1
    local function follow(it, how)
      if it ~= root and not it.obj.context and place(it, ctx, ("%s (%s)"):format(ref_text(root.obj), how)) then
        queue[#queue + 1] = it
      end
    end
    if related then
      for _, svc in ipairs(services) do
        if svc.ns == root.ns then
          for _, ls in ipairs(root.labels) do
            if selects(svc.doc.spec.selector, ls) then follow(svc, "a Service selecting its pods") break end
          end
        end
      end
      for g in pairs(root.groups) do
        for _, it in ipairs(by_group[root.ns .. "\0" .. g]) do follow(it, "the same " .. GROUP) end
      end
    end
    while queue[head] do
      local u = queue[head]
      head = head + 1
      for _, r in ipairs(u.refs) do
        local it = by_key[key(r[1], u.ns, r[2])]
        if it then follow(it, r[3]) end
      end
    end
  end
  for _, it in ipairs(items) do
    if it.obj.context then spread(it, it.obj.context, true) end
  end
  -- a workload fluence did not place (a Deployment without a policy) goes
  -- to the default context: what it uses goes there too
  for _, it in ipairs(items) do
    if #it.contexts == 0 and (#it.labels > 0 or #it.refs > 0) then spread(it, o.default, false) end
  end
  local out = {}
  for i, it in ipairs(items) do
    if #it.contexts == 0 or not (it.obj.context or it.why) then
      out[i] = { contexts = { o.default }, default = true }
    else out[i] = { contexts = it.contexts, why = it.why } end
  end
  return out
end

-- The kubeconfig's current context when it is among cl's (read without
-- opening it: no credentials, no exec plugin), else the first given.
function M.default_context(cl, opts)
  local cluster = require "fluence.cluster"
  local first = cluster.name(cl.list[1])
  if not cl.many then return first end
  local ok, current = pcall(require("fluence.kube").load, { kubeconfig = opts.kubeconfig, current_only = true })
  if ok and current then
    for _, c in ipairs(cl.list) do
      if cluster.name(c) == current then return current end
    end
  end
  return first
end

-- The objects of a run by cluster, for apply and diff: { {c = cluster,
-- objects = {...}, index = {i, ...}}, ... } in the order first reached,
-- and the notes saying where each object that was not placed went and why
-- (with several contexts only).
function M.groups(cl, objects, opts)
  local cluster = require "fluence.cluster"
  local errors = require "fluence.errors"
  local by_name, groups = {}, {}
  for _, c in ipairs(cl.list) do by_name[cluster.name(c)] = c end
  local default = M.default_context(cl, opts)
  local where = M.plan(objects, { default = default, namespace = opts.namespace })
  local notes = {}
  for i, o in ipairs(objects) do
    local w = where[i]
    for _, name in ipairs(w.contexts) do
      local c = by_name[name] or by_name[default]
      local g = groups[c]
      if not g then g = { c = c, objects = {}, index = {} }; groups[c] = g; groups[#groups + 1] = g end
      g.objects[#g.objects + 1] = o
      g.index[#g.index + 1] = i
    end
    if cl.many and not o.context then
      local name = ref_text(o)
      local quoted = {}
      for k, ctx in ipairs(w.contexts) do quoted[k] = errors.format("%q", ctx) end
      if w.default then
        notes[#notes + 1] = errors.format("fluence: %s goes to context %q (related to no placed workload)\n",
                                          name, default)
      else
        notes[#notes + 1] = ("fluence: %s follows %s to context%s %s\n"):format(name, w.why,
          #quoted == 1 and "" or "s", table.concat(quoted, " and "))
      end
    end
  end
  return groups, notes
end

return M
