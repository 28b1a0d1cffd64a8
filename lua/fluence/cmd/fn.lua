-- `fluence fn`: fluence as a KRM function (the KRM Functions Specification,
-- config.kubernetes.io/v1), for kpt (`kpt fn eval --exec`, a Kptfile
-- pipeline), kustomize (exec KRM functions) and the GitOps tools that run
-- them at render time (docs/gitops.md).
--
-- A ResourceList on stdin, one on stdout: the items that `select` would pin
-- are pinned, by the same byte-preserving edits (a ResourceList is a *List
-- to fluence.manifest: every other byte of it is kept, comments and the
-- config.kubernetes.io/* and internal.config.kubernetes.io/* annotations
-- included), and `results` gets one entry per selection, note and failure.
-- A failed selection exits 1 with the ResourceList and its error results; a
-- bad functionConfig or input exits 3 the same way.  Nothing on stderr on
-- success: the results say it.
--
-- `fluence fn CONFIG` reads the functionConfig from the file CONFIG; given a
-- plain stream of objects on stdin instead of a ResourceList (kustomize's
-- exec plugins: the file, then the objects), it answers as `select -f -`.
--
-- The options are select's: on the command line, and from the
-- functionConfig, which wins:
--   a ConfigMap whose data keys are the long option names (what
--     `kpt fn eval DIR --exec "fluence fn" -- attributes=attrs.yaml offline=true`
--     makes): flags "true"/"false", repeatable options comma-separated;
--   a FluenceSelect (fluence.flux-framework.org/v1alpha1) with the same keys
--     under spec: flags booleans, repeatable options lists, and attributes
--     a path or an attribute file's content inline (a mapping).
local sys = require "fluence.sys"
local errors = require "fluence.errors"
local yaml = require "fluence.yaml"
local json = require "fluence.json"
local manifest = require "fluence.manifest"
local spec = require "fluence.clispec"
local selection = require "fluence.selection"
local request_mod = require "fluence.request"

local cmd = {}

local NAME = "ResourceList"
local RL_VERSIONS = { ["config.kubernetes.io/v1"] = true, ["config.kubernetes.io/v1beta1"] = true }
local TYPED = "fluence.flux-framework.org/v1alpha1"
local P = "fluence.flux-framework.org/"
local PIN, POLICY = P .. "require-backend", P .. "select-policy"

-- The options a functionConfig may set: fn's, less the command line's own.
local OPTIONS = {}
for _, o in ipairs(spec.options) do
  for _, v in ipairs(o.verbs) do
    if v == "fn" and o.name ~= "help" and o.name ~= "verbose" then OPTIONS[o.name] = o end
  end
end

local function option_names()
  local names = {}
  for n in pairs(OPTIONS) do names[#names + 1] = n end
  table.sort(names)
  return table.concat(names, ", ")
end

-- "ResourceList:LINE:COL: " for a value (or its key) of the decoded input.
local function at(container, key)
  local m = type(container) == "table" and yaml.marks(container)
  m = m and (key ~= nil and m.keys and m.keys[key] or m)
  return m and ("%s:%d:%d: "):format(NAME, m.line, m.col) or NAME .. ": "
end

local function truthy(v)
  if v == true or v == "true" then return true end
  if v == false or v == "false" then return false end
end

-- One option's value from the functionConfig, as the command line would
-- have stored it; typed: from a FluenceSelect (lists, booleans, mappings).
local function option_value(o, v, where, typed, inline)
  local function bad(expected)
    errors.raise("INPUT", "%s%s: %s", where, o.name, expected)
  end
  if o.arg == "flag" then
    local b = truthy(v)
    if b == nil then bad("expected true or false") end
    return b or nil
  end
  local list
  if type(v) == "table" then
    if not typed then bad("expected a string") end
    -- a mapping is one inline attribute file; a list, several entries
    if next(v) ~= nil and #v == 0 then v = { v } end
    list = {}
    for i, e in ipairs(v) do list[i] = e end
  elseif type(v) == "string" or type(v) == "number" then
    v = tostring(v)
    list = {}
    if o["repeat"] and not typed then
      for part in v:gmatch("[^,]+") do list[#list + 1] = part:match("^%s*(.-)%s*$") end
    else
      list[1] = v
    end
  else
    bad("expected a string")
  end
  if not o["repeat"] and #list ~= 1 then bad("takes one value") end
  for i, e in ipairs(list) do
    if type(e) == "table" then
      if o.name ~= "attributes" then bad("expected a string, not a mapping or list") end
      -- an attribute file's content inline: read by the file provider as
      -- if from a file of that name
      local name = ("functionConfig.spec.attributes[%d]"):format(i - 1)
      inline[name] = json.encode(e)
      list[i] = name
    elseif type(e) ~= "string" and type(e) ~= "number" then
      bad("expected a string")
    else
      e = tostring(e)
      local want = spec.check(o.name, e)
      if want then bad(("%q is not %s"):format(e, want)) end
      list[i] = e
    end
  end
  if o["repeat"] then return list end
  return list[1]
end

-- The options the functionConfig sets ({} without one), and the inline
-- attribute files it holds.
local function config_options(fc)
  local opts, inline = {}, {}
  if fc == nil or fc == yaml.null then return opts, inline end
  if type(fc) ~= "table" then errors.raise("INPUT", "%sfunctionConfig: expected a mapping", at(fc)) end
  local values, typed, path
  if fc.kind == "ConfigMap" and (fc.apiVersion == "v1" or fc.apiVersion == nil) then
    values, path = fc.data, "data"
  elseif fc.kind == "FluenceSelect" and fc.apiVersion == TYPED then
    values, typed, path = fc.spec, true, "spec"
  else
    errors.raise("INPUT", "%sfunctionConfig: expected a ConfigMap (v1) or a FluenceSelect (%s), not %s %s",
                 at(fc), TYPED, tostring(fc.apiVersion), tostring(fc.kind))
  end
  if values == nil or values == yaml.null then return opts, inline end
  if type(values) ~= "table" then errors.raise("INPUT", "%sfunctionConfig.%s: expected a mapping", at(fc, path), path) end
  local keys = {}
  for k in pairs(values) do keys[#keys + 1] = k end
  table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
  for _, k in ipairs(keys) do
    local where = at(values, k) .. "functionConfig." .. path .. "."
    local o = OPTIONS[k]
    if not o then
      errors.raise("INPUT", "%s%s: unknown option (one of: %s)", where, tostring(k), option_names())
    end
    opts[k] = option_value(o, values[k], where, typed, inline)
  end
  return opts, inline
end

------------------------------------------------------------------------------
-- results

local function describe(obj) return ("%s/%s"):format(obj.kind or "?", obj.name or obj.generateName or "?") end

local function ref_of(obj)
  local r = { apiVersion = obj.apiVersion, kind = obj.kind, name = obj.name or obj.generateName }
  if obj.namespace then r.namespace = obj.namespace end
  return r
end

-- Where kpt and kustomize say an item came from.
local function file_of(obj)
  local a = obj.annotations or {}
  local path = a["internal.config.kubernetes.io/path"] or a["config.kubernetes.io/path"]
  if not path then return nil end
  local index = tonumber(a["internal.config.kubernetes.io/index"] or a["config.kubernetes.io/index"])
  return { path = path, index = index }
end

local function result(severity, message, obj, field)
  return { severity = severity, message = message, resourceRef = obj and ref_of(obj),
           field = field and { path = "metadata.annotations[" .. field .. "]" }, file = obj and file_of(obj) }
end

-- "; dropped a: why; b: why" (sorted), or "".
local function dropped_text(rec)
  local names = {}
  for n in pairs(rec.dropped or {}) do names[#names + 1] = n end
  table.sort(names)
  for i, n in ipairs(names) do names[i] = sys.escape(n) .. ": " .. sys.escape(tostring(rec.dropped[n])) end
  return #names > 0 and ("; dropped " .. table.concat(names, "; ")) or ""
end

-- A failure in one line, from the decision (the result names the item and
-- its file; rec.error's place in the ResourceList and excerpt mean nothing
-- to a kpt user).
local function headline(rec)
  local d = rec.decision
  if d.no_candidates then
    return ("%s: selection failed: no candidate backends after intersecting providers with " ..
            "scheduler offerings%s"):format(describe(rec.object), d.no_candidates)
  end
  return ("%s: selection failed: %s"):format(describe(rec.object), rec.result.error or "no backend selected")
end

-- One result per selection (with why the others were dropped), per note,
-- per failure, per object left alone because it is pinned already.
local function results_of(res, force)
  local out = {}
  for _, rec in ipairs(res.records) do
    local obj = rec.object
    if rec.error then
      out[#out + 1] = result("error", headline(rec) .. dropped_text(rec), obj, POLICY)
    elseif rec.chosen then
      local msg = ("selected backend %s%s (policy %s)"):format(sys.quote(rec.chosen),
        rec.context and (" on context " .. sys.quote(rec.context)) or "", sys.quote(rec.pipeline.text))
      out[#out + 1] = result("info", msg .. dropped_text(rec), obj, PIN)
    end
    for _, n in ipairs(rec.notes or {}) do out[#out + 1] = result("info", sys.escape(n), obj) end
  end
  if not force then
    for _, st in ipairs(res.streams) do
      for _, obj in ipairs(st.objects) do
        local pin = obj.wants_selection and request_mod.pin(obj)
        if pin then
          out[#out + 1] = result("info", ("%s already pinned to %s; selection skipped"):format(describe(obj),
                                 sys.quote(pin)), obj, PIN)
        end
      end
    end
  end
  return out
end

-- YAML for the results, at an indentation: JSON scalars (valid YAML) in
-- block mappings, keys in the Specification's order.
local ORDER = { "message", "severity", "resourceRef", "field", "file" }
local SUB = { resourceRef = { "apiVersion", "kind", "name", "namespace" }, field = { "path" },
              file = { "path", "index" } }
local function results_yaml(list, indent)
  local pad = (" "):rep(indent)
  local lines = {}
  for _, r in ipairs(list) do
    local first = true
    for _, k in ipairs(ORDER) do
      local v = r[k]
      if v ~= nil then
        local lead = first and (pad .. "- ") or (pad .. "  ")
        first = false
        if type(v) == "table" then
          lines[#lines + 1] = lead .. k .. ":"
          for _, sk in ipairs(SUB[k]) do
            if v[sk] ~= nil then lines[#lines + 1] = pad .. "    " .. sk .. ": " .. json.encode(v[sk]) end
          end
        else
          lines[#lines + 1] = lead .. k .. ": " .. json.encode(v)
        end
      end
    end
  end
  return table.concat(lines, "\n") .. "\n"
end

-- The ResourceList's text with the results added: a new top-level key, or
-- entries appended to the results a function before us left.  JSON input
-- is answered in JSON.
local function with_results(text, rl, list)
  if #list == 0 then return text end
  if text:match("^%s*{") then
    local edited = json.decode(text)
    edited.results = edited.results or json.array{}
    for _, r in ipairs(list) do edited.results[#edited.results + 1] = r end
    return json.encode(edited, { indent = 2 }) .. "\n"
  end
  if text:sub(-1) ~= "\n" then text = text .. "\n" end
  local existing = rl.results
  if existing ~= nil and existing ~= yaml.null then
    rl = yaml.decode(text, NAME)    -- the places in the edited text
    existing = rl.results
  end
  if existing == nil or existing == yaml.null then
    return text .. "results:\n" .. results_yaml(list, 0)
  end
  -- insert after the last line of the existing results: before the next
  -- top-level key, or at the end
  local marks = yaml.marks(rl)
  local line = marks.keys.results.line
  local next_line
  for k, m in pairs(marks.keys) do
    if k ~= "results" and m.line > line and (not next_line or m.line < next_line) then next_line = m.line end
  end
  local lines = {}
  for l in text:gmatch("([^\n]*)\n") do lines[#lines + 1] = l end
  -- the first entry's dash gives the list's indentation
  local first = type(existing) == "table" and type(existing[1]) == "table" and yaml.marks(existing[1])
  local indent = first and lines[first.line] and lines[first.line]:match("^( *)%- ")
  if not indent or not lines[line]:match("^results:%s*$") then
    errors.raise("INPUT", "%s:%d:1: results: a flow-style list cannot be appended to; write it as a block list",
                 NAME, line)
  end
  indent = #indent
  local stop = (next_line or #lines + 1) - 1
  while stop > line and lines[stop]:match("^%s*$") do stop = stop - 1 end
  local before = table.concat(lines, "\n", 1, stop) .. "\n"
  local after = stop < #lines and (table.concat(lines, "\n", stop + 1) .. "\n") or ""
  return before .. results_yaml(list, indent) .. after
end

------------------------------------------------------------------------------

-- (a failed write is caught when stdout is closed: exit 74, core/output.c)
local function write(text) sys.write(1, text) end

-- The merged options: the command line's, then the functionConfig's.
local function options(args, fc)
  local opts, inline = config_options(fc)
  local merged = {}
  for k, v in pairs(args.opts) do merged[k] = v end
  for k, v in pairs(opts) do merged[k] = v end
  if merged["plugin-timeout"] ~= nil then
    require("fluence.sandbox").set_time_limit(merged["plugin-timeout"], "plugin-timeout")
  end
  local read_file = sys.read_file
  local api = next(inline) and {
    read_file = function(path, ...)
      if inline[path] then return inline[path] end
      return read_file(path, ...)
    end } or nil
  return { prog = args.prog, verb = "fn", positional = {}, opts = merged }, api
end

-- The functionConfig in a file (kustomize's exec plugins name one).
local function config_file(path)
  local text, err = sys.read_file(path)
  if not text then errors.raise("INPUT", "cannot read %s", err or path) end
  local fc, derr = yaml.decode(text, path)
  if fc == nil and derr then errors.raise("INPUT", "%s", derr) end
  return fc
end

-- kustomize's exec plugin protocol: the objects as a plain stream on stdin
-- and stdout, the config a file.  As `select -f -`: notes on stderr, and
-- any failure an error with nothing on stdout.
local function run_stream(args, text, fc)
  local run_args, api = options(args, fc)
  local res = selection.run(run_args, { inputs = { { name = "-", text = text } }, api = api })
  sys.write(2, res.stderr)
  res:write_output(1)
  return sys.EXIT.OK
end

function cmd.run(args)
  if #args.positional > 1 then
    errors.raise("USAGE", "fn: unexpected argument %q (a ResourceList is read on stdin; " ..
                 "options come from its functionConfig)", args.positional[2])
  end
  local fc_file = args.positional[1] and config_file(args.positional[1])
  local text, err = manifest.read("-")
  if not text then errors.raise("INPUT", "cannot read %s", err or "stdin") end
  local source = tostring(text)
  -- a stream of several documents (kustomize's) is no ResourceList
  local docs, derr = yaml.decode_all(source, NAME)
  if not docs then
    if fc_file ~= nil then return run_stream(args, text, fc_file) end   -- located by the manifest reader
    errors.raise("INPUT", "%s", derr)
  end
  local rl = docs[1]
  local is_list = #docs == 1 and type(rl) == "table" and rl.kind == "ResourceList"
  if fc_file ~= nil and not is_list then return run_stream(args, text, fc_file) end
  if not is_list or not RL_VERSIONS[rl.apiVersion] then
    errors.raise("INPUT", "%s: expected a ResourceList (apiVersion config.kubernetes.io/v1) on stdin, as a " ..
                 "KRM function runner (kpt, kustomize) writes it", NAME)
  end
  if fc_file ~= nil then rl.functionConfig = fc_file end

  -- from here on every problem is answered with the ResourceList and an
  -- error result, as the Specification asks
  local ok, res = errors.try(function()
    local run_args, api = options(args, rl.functionConfig)
    local r = selection.run(run_args, { inputs = { { name = NAME, text = text } }, explain = true, api = api })
    r.force = run_args.opts["force-select"]
    return r
  end)
  if not ok then
    local e = res
    write(with_results(source, rl, { result("error", e.message) }))
    return e.code
  end
  local list = results_of(res, res.force)
  local code = sys.EXIT.OK
  for _, rec in ipairs(res.records) do
    if rec.error then
      local c = sys.EXIT[rec.error_kind or "SELECT"]
      if c > code then code = c end
    end
  end
  write(with_results(res.output, rl, list))
  return code
end

return cmd
