-- Applying selected objects to the cluster: server-side apply (or create),
-- one request per object, each result reported.
--
--   apply.apply_all(client, objects, opts) -> results
--     objects: { {kind =, apiVersion =, name =, generateName =, namespace =,
--                 json = "<the object as JSON>",
--                 chosen = "<the backend this run pinned>" | nil}, ... }
--              (a v1 List expands)
--     opts: { field_manager = "kubectl-fluence", force = bool,
--             dry_run = nil | "server", create = bool, namespace = default ns,
--             namespace_explicit = bool (-n given: objects naming another
--             namespace are refused, as kubectl does) }
--     results: { {ok =, name = "job.batch/x", action = "serverside-applied" |
--                 "created", message = (error text), object = (server's answer),
--                 at = (index in objects of what it came from)}, ... }
--   apply.preflight(client, objects, opts) -> conflicts
--     for every object this run pinned that already exists: the same decision
--     keeps the live audit's time (objects[i].json is updated), another pin
--     is checked with a server dry run (a Job's pod template is immutable).
--     Each conflict: {name =, namespace =, from =, to =, reason =}.
--   apply.live_all(client, objects, opts) -> { {live =, error =}, ... }
--     what the cluster holds for each object (nil: absent), for diff
--   apply.display_name(apiVersion, kind, name) -> "job.batch/x"
--   apply.to_yaml(value) -> text      (block YAML, keys sorted, like kubectl -o yaml)
--
-- Server-side apply: PATCH the object's path with application/apply-patch+yaml
-- (a JSON body is YAML), fieldManager, force=true with --force-conflicts,
-- dryRun=All for --dry-run=server; metadata.managedFields is stripped.
-- Create: POST to the collection (generateName allowed; 409 if it exists).
local json = require "fluence.json"
local errors = require "fluence.errors"
local kubeclient = require "fluence.kubeclient"
local sys = require "fluence.sys"
local hint = require "fluence.hint"

local M = {}

M.FIELD_MANAGER = "kubectl-fluence"

-- "job.batch/x": the object as kubectl names it (kind.group/name), raw
function M.ref(api_version, kind, name)
  local group = kubeclient.split_api_version(api_version)
  local k = tostring(kind or "object"):lower()
  if group and group ~= "" then k = k .. "." .. group end
  return k .. "/" .. tostring(name or "")
end

function M.display_name(api_version, kind, name)
  -- a line of its own on stdout or stderr: escaped (control characters)
  return sys.escape(M.ref(api_version, kind, name))
end

-- Raises an INPUT error at where when object obj (of a parsed manifest
-- stream, where a v1 List's items are objects of their own) has an
-- apiVersion, kind, namespace or name that cannot become a request path
-- (kubeclient.check_ref): checked as soon as its file is read, before this
-- run makes any request.
function M.check_object(obj, where)
  local why = kubeclient.check_ref(obj.apiVersion, obj.kind, obj.name, obj.namespace)
  if why then errors.raise("INPUT", "%s: %s", where, why) end
end

local function expand(objects)
  local out = {}
  for at, o in ipairs(objects) do
    local doc = o.json and json.decode(o.json)
    if type(doc) == "table" and doc.kind == "List" and type(doc.items) == "table" then
      for _, item in ipairs(doc.items) do
        local meta = type(item.metadata) == "table" and item.metadata or {}
        out[#out + 1] = { kind = item.kind, apiVersion = item.apiVersion, name = meta.name,
                          generateName = meta.generateName, namespace = meta.namespace, doc = item, at = at }
      end
    else
      -- an object without its JSON is reported as failed, never skipped
      out[#out + 1] = { kind = o.kind, apiVersion = o.apiVersion, name = o.name, generateName = o.generateName,
                        namespace = o.namespace, doc = doc, chosen = o.chosen, source = o, at = at,
                        missing = not o.json and "no JSON text for this object" or nil }
    end
  end
  return out
end

-- The object's namespace (nil for cluster-scoped kinds), written into its
-- metadata as the server will store it.
local function place(client, o, opts)
  local doc = o.doc
  if o.missing then errors.raise("INTERNAL", "%s", o.missing) end
  if type(doc) ~= "table" or not o.kind or not o.apiVersion then
    errors.raise("INPUT", "object without apiVersion or kind")
  end
  if type(doc.metadata) ~= "table" then doc.metadata = json.object{} end
  local meta = doc.metadata
  meta.managedFields = nil
  local r = client:resource(o.apiVersion, o.kind)
  local ns
  if r.namespaced then
    ns = meta.namespace or opts.namespace or client.namespace
    if opts.namespace_explicit and meta.namespace and meta.namespace ~= opts.namespace then
      errors.raise("INPUT", "the namespace from the provided object %q does not match the namespace %q: pass --namespace=%s",
                   meta.namespace, opts.namespace, meta.namespace)
    end
    meta.namespace = ns
  else
    meta.namespace = nil
  end
  return ns, meta
end

local function apply_one(client, o, opts)
  local doc = o.doc
  local ns, meta = place(client, o, opts)
  local query = { fieldManager = opts.field_manager or M.FIELD_MANAGER }
  if opts.dry_run == "server" then query.dryRun = "All" end
  local status, answer
  if opts.create then
    if not meta.name and not meta.generateName then
      errors.raise("INPUT", "object has neither metadata.name nor metadata.generateName")
    end
    local path = client:path(o.apiVersion, o.kind, ns, nil)
    status, answer = client:request("POST", path, json.encode(doc), "application/json", query)
  else
    if not meta.name then
      errors.raise("INPUT", meta.generateName and "cannot use generateName with apply (use create)"
                              or "object has no metadata.name")
    end
    if opts.force then query.force = "true" end
    local path = client:path(o.apiVersion, o.kind, ns, meta.name)
    status, answer = client:request("PATCH", path, json.encode(doc), "application/apply-patch+yaml", query)
  end
  return status, answer
end

-- the annotations' names, from the one declaration of their prefix
local P = require("fluence.request").PREFIX
local PIN, RESULT = P .. "require-backend", P .. "select-result"

-- The audit without its time: two audits of the same decision compare equal.
-- (audit.lua writes "time" last.)
local function timeless(text)
  return type(text) == "string" and (text:gsub(',"time":"[^"]*"}$', "}")) or nil
end

-- The server's reason for a 422, without the dump of the whole object its
-- message may carry ("spec.template: Invalid value: core.PodTemplateSpec{...}:
-- field is immutable" -> "spec.template: field is immutable").
local function invalid_reason(err)
  local body = err.body
  local causes = type(body) == "table" and type(body.details) == "table" and body.details.causes
  local out = {}
  for _, c in ipairs(type(causes) == "table" and causes or {}) do
    if type(c) == "table" and type(c.message) == "string" then
      local msg = c.message:match("^Invalid value: .*: ([^:]+)$") or c.message
      out[#out + 1] = (type(c.field) == "string" and (c.field .. ": ") or "") .. msg
    end
  end
  if #out > 0 then return table.concat(out, "; ") end
  return err.server_message or err.message
end

-- Objects this run pinned, against what the cluster holds (all read at
-- once, one curl multi; then the dry runs at once):
-- * the same decision as the live object's: its audit keeps the live time,
--   so re-applying an unchanged manifest changes nothing at all;
-- * another pin: a server dry run says whether the change is allowed; a
--   refusal (a Job's pod template is immutable) is a conflict.
-- A check that cannot be made (no right to read it, an unknown kind ...) is
-- left to the apply, which reports it.
function M.preflight(client, objects, opts)
  opts = opts or {}
  if opts.create then return {} end
  local checks = {}
  for _, o in ipairs(expand(objects)) do
    if o.chosen and o.source then
      local ok, ns, meta = errors.try(place, client, o, opts)
      if ok and meta.name then
        local okp, path = errors.try(client.path, client, o.apiVersion, o.kind, ns, meta.name)
        if okp then checks[#checks + 1] = { o = o, ns = ns, meta = meta, path = path } end
      end
    end
  end
  local gets = {}
  for i, c in ipairs(checks) do gets[i] = { client, "GET", c.path } end
  local live = kubeclient.request_many(gets)
  local changed = {}
  for i, c in ipairs(checks) do
    local r = live[i]
    if not r.error then
      local o, meta = c.o, c.meta
      local lm = type(r.body) == "table" and r.body.metadata
      local lann = type(lm) == "table" and type(lm.annotations) == "table" and lm.annotations or {}
      local ann = type(meta.annotations) == "table" and meta.annotations or {}
      if ann[RESULT] and timeless(lann[RESULT]) == timeless(ann[RESULT]) and lann[RESULT] ~= ann[RESULT] then
        ann[RESULT] = lann[RESULT]
        o.source.json = json.encode(o.doc)
      end
      c.from = lann[PIN]
      if c.from ~= o.chosen then changed[#changed + 1] = c end
    end
  end
  local q = { fieldManager = opts.field_manager or M.FIELD_MANAGER, dryRun = "All", force = opts.force and "true" or nil }
  local dry = {}
  for i, c in ipairs(changed) do
    dry[i] = { client, "PATCH", c.path, json.encode(c.o.doc), "application/apply-patch+yaml", q }
  end
  local conflicts = {}
  for i, r in ipairs(kubeclient.request_many(dry)) do
    local c = changed[i]
    if r.error and r.error.status == 422 then
      conflicts[#conflicts + 1] = { name = M.display_name(c.o.apiVersion, c.o.kind, c.meta.name), namespace = c.ns,
                                    from = c.from, to = c.o.chosen, reason = invalid_reason(r.error),
                                    target = M.target(client, c.o, c.ns, c.meta.name, opts) }
    end
  end
  return conflicts
end

-- What a hint's kubectl command acts on (fluence.hint): object o, stored in
-- namespace ns (nil: cluster-scoped) under name, in client's cluster.
function M.target(client, o, ns, name, opts)
  return { context = client.context, namespace = ns, ref = M.ref(o.apiVersion, o.kind, name),
           kubeconfig = opts and opts.kubeconfig }
end

-- What to tell the user about one conflict: what changed, why the server
-- refuses, and the two ways forward.
function M.conflict_message(c)
  return errors.format("%s: the selected backend changed from %s to %q since it was last applied, and the " ..
                       "server refuses to change it in place (%s). To move it, delete it (%s) " ..
                       "and apply again; to keep it where it is, pin it in the manifest (annotation %s: %s)",
                       c.name, c.from and errors.format("%q", c.from) or "no pin", c.to, c.reason,
                       hint.kubectl("delete", c.target), PIN, c.from and sys.escape(c.from) or "NAME")
end

-- A server-side apply conflict (409, causes of reason FieldManagerConflict:
-- "conflict with \"kubectl\" using batch/v1", field ".spec.parallelism"):
-- who set which fields, and how to take them over (opts.again: this run's
-- command with --force-conflicts).  nil for any other error.
function M.field_conflict_message(err, opts)
  local body = type(err) == "table" and err.status == 409 and err.body
  local causes = type(body) == "table" and type(body.details) == "table" and body.details.causes
  if type(causes) ~= "table" then return nil end
  local order, fields = {}, {}
  for _, c in ipairs(causes) do
    if type(c) == "table" and c.reason == "FieldManagerConflict" then
      local who = type(c.message) == "string" and c.message:match('^conflict with "(.-)"') or "another manager"
      if not fields[who] then fields[who] = {}; order[#order + 1] = who end
      local f = fields[who]
      f[#f + 1] = type(c.field) == "string" and c.field or "?"
    end
  end
  if #order == 0 then return nil end
  local parts = {}
  for i, who in ipairs(order) do
    parts[i] = errors.format("%s set by field manager %q", table.concat(fields[who], ", "), who)
  end
  local msg = ("conflict: %s (HTTP 409 Conflict)"):format(sys.escape(table.concat(parts, "; ")))
  if opts and opts.again then
    msg = msg .. ("; to take them over, run again with --force-conflicts: %s"):format(opts.again)
  end
  return msg
end

-- What the cluster holds for each object apply_all would send (the same
-- expansion, the same order), all read at once: { {live = object | nil
-- (absent), error = CLUSTER error | nil, namespace =, path =}, ... }.
function M.live_all(client, objects, opts)
  opts = opts or {}
  local out, gets, at = {}, {}, {}
  for i, o in ipairs(expand(objects)) do
    local ok, ns, meta = errors.try(place, client, o, opts)
    local okp, path, r
    if ok and meta.name then okp, path, r = errors.try(client.path, client, o.apiVersion, o.kind, ns, meta.name) end
    out[i] = { namespace = okp and r.namespaced and ns or nil, path = okp and path or nil }
    if okp then
      gets[#gets + 1] = { client, "GET", path }
      at[#gets] = i
    elseif not ok or okp == false then
      out[i].error = not ok and ns or path
    end
  end
  for k, r in ipairs(kubeclient.request_many(gets)) do
    local e = out[at[k]]
    if r.error then
      if r.error.status ~= 404 then e.error = r.error end
    else
      e.live = r.body
    end
  end
  return out
end

function M.apply_all(client, objects, opts)
  opts = opts or {}
  local results = {}
  for _, o in ipairs(expand(objects)) do
    local ok, status, answer = errors.try(apply_one, client, o, opts)
    local name = o.name or o.generateName or "?"
    if ok and type(answer) == "table" and type(answer.metadata) == "table" and answer.metadata.name then
      name = answer.metadata.name
    end
    local res = { ok = ok, name = M.display_name(o.apiVersion, o.kind, name), chosen = o.chosen, at = o.at }
    if ok then
      res.action = opts.create and "created" or "serverside-applied"
      if opts.dry_run == "server" then res.action = res.action .. " (server dry run)" end
      res.object, res.status = answer, status
    else
      res.message = M.field_conflict_message(status, opts) or status.message
      res.error = status
    end
    results[#results + 1] = res
  end
  return results
end

-- YAML like kubectl -o yaml: keys sorted, block style, strings quoted when
-- they would read back as something else.
local PLAIN_UNSAFE = {
  ["true"] = 1, ["false"] = 1, ["null"] = 1, ["~"] = 1, ["yes"] = 1, ["no"] = 1, ["on"] = 1, ["off"] = 1,
  ["y"] = 1, ["n"] = 1, ["True"] = 1, ["False"] = 1, ["Null"] = 1, ["NULL"] = 1, ["TRUE"] = 1, ["FALSE"] = 1,
}
local function scalar(v)
  if v == json.null or v == nil then return "null" end
  if type(v) == "boolean" then return v and "true" or "false" end
  if type(v) == "number" then return json.encode(v) end
  local s = tostring(v)
  if s == "" or PLAIN_UNSAFE[s] or tonumber(s) or s:find("[\n\r\t\"'\\:#{}%[%],&*!|>%%@`]")
     or s:match("^[%s%-?]") or s:match("%s$") then
    return json.encode(s)
  end
  return s
end

local function is_empty(t) return next(t) == nil end

local function emit(out, v, indent)
  local pad = (" "):rep(indent)
  if type(v) ~= "table" then out[#out + 1] = scalar(v); return end
  if json.is_array(v) or (#v > 0) then
    for _, item in ipairs(v) do
      if type(item) == "table" and not is_empty(item) then
        local sub = {}
        emit(sub, item, indent + 2)
        out[#out + 1] = "\n" .. pad .. "- " .. table.concat(sub):gsub("^\n%s*", "")
      else
        out[#out + 1] = "\n" .. pad .. "- " .. (type(item) == "table" and (json.is_array(item) and "[]" or "{}") or scalar(item))
      end
    end
    return
  end
  local keys = {}
  for k in pairs(v) do keys[#keys + 1] = k end
  table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
  for _, k in ipairs(keys) do
    local item = v[k]
    local key = scalar(tostring(k))
    if type(item) == "table" and not is_empty(item) then
      local sub = {}
      local child_indent = (json.is_array(item) or #item > 0) and indent or indent + 2
      emit(sub, item, child_indent)
      out[#out + 1] = "\n" .. pad .. key .. ":" .. table.concat(sub)
    elseif type(item) == "table" then
      out[#out + 1] = "\n" .. pad .. key .. ": " .. (json.is_array(item) and "[]" or "{}")
    else
      out[#out + 1] = "\n" .. pad .. key .. ": " .. scalar(item)
    end
  end
end

function M.to_yaml(v)
  local out = {}
  emit(out, v, 0)
  return (table.concat(out):gsub("^\n", "")) .. "\n"
end

return M
