-- `fluence diff`: what `fluence apply` would do, before it does it, as
-- `kubectl diff` shows it: the same selection, the same placement (each
-- object to its context, what it uses with it: placement.lua) and the same
-- move lookup (move.lua), then, per context, each object as the cluster
-- holds it against what a server-side dry run of the apply gives back.
--
--   stdout: a unified diff per object that would be created or changed
--           (--- CONTEXT/KIND.GROUP/NAME (live), +++ ... (applied))
--   stderr: the plan, per context: create, change, leave, and the moves
--           ("move" in the context a workload leaves)
--   exit:   0 nothing would change, 1 something would (as kubectl diff),
--           >1 an error: 4 a cluster's (an object the server refuses, a
--           Job whose new pin it cannot take in place), 3 bad input or a
--           failed selection (1 means differences here)
--
-- Compared without the server's bookkeeping (managedFields,
-- resourceVersion, generation): re-applying an unchanged manifest is
-- "leave", as apply keeps the live audit of the same decision.
local sys = require "fluence.sys"
local errors = require "fluence.errors"

local cmd = {}

local function normal(apply, obj)
  if type(obj) ~= "table" then return "" end
  if type(obj.metadata) == "table" then
    obj.metadata.managedFields, obj.metadata.resourceVersion, obj.metadata.generation = nil, nil, nil
  end
  -- what the server holds may hold anything: one escaping before stdout
  return sys.escape(apply.to_yaml(obj), true)
end

function cmd.run(args)
  local opts = args.opts
  if #args.positional > 0 then errors.raise("USAGE", "diff: unexpected argument %q", args.positional[1]) end
  if opts.offline then
    errors.raise("USAGE", "diff: --offline does not go with diff, which compares with what the cluster holds")
  end
  local apply = require "fluence.apply"
  local selection = require "fluence.selection"
  local ok, res = errors.try(selection.run, args, { objects_json = true, check_object = apply.check_object })
  if not ok then
    if res.kind == "SELECT" then errors.raise("INPUT", "%s", res.message) end
    error(res, 0)
  end
  if res.stderr then sys.write(2, res.stderr) end

  local cluster = require "fluence.cluster"
  local textdiff = require "fluence.textdiff"
  local cl = res.clusters.open()
  local groups, notes = require("fluence.placement").groups(cl, res.objects, opts)
  local moves, warnings = require("fluence.move").find(cl, groups, opts)
  local moved_here = {}
  for _, m in ipairs(moves) do moved_here[m.i .. "\0" .. m.to] = cluster.name(m.from) end

  local plan, diffs, errs = {}, {}, {}
  local differ, failed = #moves > 0, 0
  for _, c in ipairs(cl.list) do plan[cluster.name(c)] = {} end
  for _, g in ipairs(groups) do
    local client, ctx = g.c.client, cluster.name(g.c)
    local how = { field_manager = opts["field-manager"] or apply.FIELD_MANAGER, force = opts["force-conflicts"] and true,
                  dry_run = "server", namespace = client.namespace, namespace_explicit = opts.namespace ~= nil,
                  kubeconfig = opts.kubeconfig }
    for _, c in ipairs(apply.preflight(client, g.objects, how)) do
      failed = failed + 1
      errs[#errs + 1] = "fluence: " .. apply.conflict_message(c) .. "\n"
    end
    local live = apply.live_all(client, g.objects, how)
    local lines = plan[ctx]
    for k, r in ipairs(apply.apply_all(client, g.objects, how)) do
      local l = live[k]
      local where = cl.many and (" (context %s)"):format(sys.escape(ctx)) or ""
      if not r.ok or l.error then
        failed = failed + 1
        errs[#errs + 1] = ("fluence: %s%s: %s\n"):format(r.name, where, r.ok and l.error.message or r.message or "failed")
      else
        local before, after = l.live and normal(apply, l.live) or "", normal(apply, r.object)
        local what = not l.live and "create" or before == after and "leave" or "change"
        local from = moved_here[g.index[r.at] .. "\0" .. ctx]
        lines[#lines + 1] = ("  %-6s %s%s\n"):format(what, r.name, from and
          (" (moves here from context %s)"):format(sys.escape(from)) or "")
        if what ~= "leave" then
          differ = true
          local label = sys.escape(ctx) .. "/" .. r.name
          diffs[#diffs + 1] = textdiff.unified(before, after, label .. " (live)", label .. " (applied)")
        end
      end
    end
  end
  for _, m in ipairs(moves) do
    local lines = plan[cluster.name(m.from)]
    lines[#lines + 1] = ("  %-6s %s (to context %s; %s)\n"):format("move", m.ref, sys.escape(m.to),
      opts.move and "deleted by apply --move" or "this copy keeps running unless deleted: apply --move")
  end
  local text = {}
  for _, c in ipairs(cl.list) do
    local name = cluster.name(c)
    if #plan[name] > 0 then text[#text + 1] = ("context %s:\n"):format(sys.escape(name)) .. table.concat(plan[name]) end
  end
  sys.write(2, table.concat(notes) .. table.concat(warnings) .. table.concat(text))
  if #diffs > 0 then sys.write(1, table.concat(diffs)) end
  if #errs > 0 then
    sys.write(2, table.concat(errs))
    return sys.EXIT.CLUSTER
  end
  return differ and 1 or sys.EXIT.OK
end

return cmd
