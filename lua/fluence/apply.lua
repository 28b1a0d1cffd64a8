-- Applying selected objects to the cluster: server-side apply (or create),
-- one request per object, each result reported.
--
--   apply.apply_all(client, objects, opts) -> results
--     objects: { {kind =, apiVersion =, name =, generateName =, namespace =,
--                 json = "<the object as JSON>"}, ... }   (a v1 List expands)
--     opts: { field_manager = "kubectl-fluence", force = bool,
--             dry_run = nil | "server", create = bool, namespace = default ns,
--             namespace_explicit = bool (-n given: objects naming another
--             namespace are refused, as kubectl does) }
--     results: { {ok =, name = "job.batch/x", action = "serverside-applied" |
--                 "created", message = (error text), object = (server's answer)}, ... }
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

local M = {}

M.FIELD_MANAGER = "kubectl-fluence"

function M.display_name(api_version, kind, name)
  local group = kubeclient.split_api_version(api_version)
  local k = tostring(kind or "object"):lower()
  if group and group ~= "" then k = k .. "." .. group end
  return k .. "/" .. tostring(name or "")
end

local function expand(objects)
  local out = {}
  for _, o in ipairs(objects) do
    local doc = o.json and json.decode(o.json)
    if type(doc) == "table" and doc.kind == "List" and type(doc.items) == "table" then
      for _, item in ipairs(doc.items) do
        local meta = type(item.metadata) == "table" and item.metadata or {}
        out[#out + 1] = { kind = item.kind, apiVersion = item.apiVersion, name = meta.name,
                          generateName = meta.generateName, namespace = meta.namespace, doc = item }
      end
    else
      -- an object without its JSON is reported as failed, never skipped
      out[#out + 1] = { kind = o.kind, apiVersion = o.apiVersion, name = o.name, generateName = o.generateName,
                        namespace = o.namespace, doc = doc,
                        missing = not o.json and "no JSON text for this object" or nil }
    end
  end
  return out
end

local function apply_one(client, o, opts)
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

function M.apply_all(client, objects, opts)
  opts = opts or {}
  local results = {}
  for _, o in ipairs(expand(objects)) do
    local ok, status, answer = errors.try(apply_one, client, o, opts)
    local name = o.name or o.generateName or "?"
    if ok and type(answer) == "table" and type(answer.metadata) == "table" and answer.metadata.name then
      name = answer.metadata.name
    end
    local res = { ok = ok, name = M.display_name(o.apiVersion, o.kind, name) }
    if ok then
      res.action = opts.create and "created" or "serverside-applied"
      if opts.dry_run == "server" then res.action = res.action .. " (server dry run)" end
      res.object, res.status = answer, status
    else
      res.message = status.message
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
