-- fluence jobspec -f FILE [-o yaml|json]: the Fluxion jobspecs Fluence builds
-- for each pod group in the manifests -- one compute jobspec (a slot per pod)
-- and one device jobspec per virtual resource type, with the require-<attr>
-- pins as property constraints.
local sys = require "fluence.sys"
local errors = require "fluence.errors"
local inputs = require "fluence.inputs"
local manifest = require "fluence.manifest"
local request = require "fluence.request"
local jobspecs = require "fluence.jobspecs"
local json = require "fluence.json"

local M = {}

-- The groups of the manifests: { { where=, object=, request=, set= }, ... }
function M.groups(files)
  local out = {}
  for _, f in ipairs(files) do
    local s, err = manifest.parse(f.text, f.name)
    if not s then errors.raise("INPUT", "%s", err) end
    for _, obj in ipairs(s:objects()) do
      if obj.targets_fluence then
        local where = ("%s:%d:%d"):format(f.name, obj.line or 1, obj.col or 1)
        local req = request.build(obj, where, s)      -- req.require: the require-<attr> pins
        local ok, set = pcall(jobspecs.for_request, req)
        if not ok then errors.raise("INPUT", "%s: %s", where, tostring(set)) end
        out[#out + 1] = { where = where, object = req.object, request = req, set = set }
      end
    end
  end
  return out
end

local function describe(g)
  local o = g.object
  return ("%s %s/%s"):format(o.kind or "?", o.namespace or "default", o.name or "?")
end

function M.run(args)
  local opts = args.opts or {}
  if not opts.filename or #opts.filename == 0 then
    errors.raise("USAGE", "jobspec: no manifests given (use -f FILE, a directory, or - for stdin)")
  end
  if #(args.positional or {}) > 0 then
    errors.raise("USAGE", "jobspec: unexpected argument %q", args.positional[1])
  end
  local fmt = opts.output or "yaml"
  if fmt ~= "yaml" and fmt ~= "json" then
    errors.raise("USAGE", "jobspec: unknown output format %q (yaml or json)", fmt)
  end
  local groups = M.groups(inputs.read(opts.filename, opts.recursive))
  local out = {}
  if fmt == "json" then
    local items = {}
    for i, g in ipairs(groups) do
      local devs = {}
      for j, d in ipairs(g.set.devices) do devs[j] = { type = d.type, count = d.count, jobspec = d.text } end
      items[i] = { object = g.object, where = g.where, group = g.request.group.name, pods = g.request.pods,
                   compute = g.set.compute, devices = devs }
    end
    out[1] = json.encode(items, { indent = 2 }) .. "\n"
  else
    for _, g in ipairs(groups) do
      local head = ("# %s %s (group %s, %d pod%s)"):format(g.where, describe(g), g.request.group.name or "-",
                                                      g.request.pods, g.request.pods == 1 and "" or "s")
      out[#out + 1] = ("---\n%s: compute\n%s"):format(head, g.set.compute)
      for _, d in ipairs(g.set.devices) do
        out[#out + 1] = ("---\n%s: device %s\n%s"):format(head, d.type, d.text)
      end
    end
  end
  sys.write(1, table.concat(out))
  return sys.EXIT.OK
end

return M
