-- `fluence apply` and `fluence create`: select for every object first (all or
-- nothing: a failed selection applies nothing), then server-side apply (or
-- create) each object and report each result.
--
--   --dry-run, --dry-run=client   print the annotated manifest; apply nothing
--   --dry-run=server              apply with dryRun=All
--   -o name | yaml | json         like kubectl: names, or the server's objects
--   --confirm                     show the selections, ask y/n on the terminal
--   --field-manager NAME          default kubectl-fluence
--   --force-conflicts             force=true
--   --move                        with several --context: delete the copy an
--                                 earlier apply placed in another context,
--                                 once the new one is accepted (move.lua)
--
-- Exit 4 when any object failed; every object is reported either way
-- (successes on stdout, failures on stderr).  Before applying, objects this
-- run pinned that already exist with another pin are checked with a server
-- dry run: when the server refuses the change (a Job's immutable pod
-- template), nothing is applied and each such object is named with what to do.
local sys = require "fluence.sys"
local errors = require "fluence.errors"
local json = require "fluence.json"

local cmd = {}

local function dry_run_mode(args)
  local v = args.opts["dry-run"]
  if v == nil or v == "none" or v == false then return nil end
  if v == true or v == "client" then return "client" end
  if v == "server" then return "server" end
  errors.raise("USAGE", "%s: --dry-run must be none, client or server (not %q)", args.verb, tostring(v))
end

local function render_objects(fmt, results)
  local apply = require "fluence.apply"
  local objs = {}
  for _, r in ipairs(results) do if r.ok and r.object then objs[#objs + 1] = r.object end end
  if fmt == "json" then
    if #objs == 1 then return json.encode(objs[1], { indent = 4 }) .. "\n" end
    local list = setmetatable({ apiVersion = "v1", kind = "List", items = json.array(objs), metadata = json.object{} },
                              { __order = { "apiVersion", "items", "kind", "metadata" } })
    return json.encode(list, { indent = 4 }) .. "\n"
  end
  local parts = {}
  for i, o in ipairs(objs) do parts[i] = apply.to_yaml(o) end
  return table.concat(parts, "---\n")
end

function cmd.run(args)
  local opts = args.opts
  if #args.positional > 0 then errors.raise("USAGE", "%s: unexpected argument %q", args.verb, args.positional[1]) end
  local fmt = opts.output
  if fmt ~= nil and fmt ~= "name" and fmt ~= "yaml" and fmt ~= "json" then
    errors.raise("USAGE", "%s: unknown output format %q (name, yaml or json)", args.verb, tostring(fmt))
  end
  local mode = dry_run_mode(args)
  local ok, selection = pcall(require, "fluence.selection")
  if not ok then errors.raise("USAGE", "%s: not available in this build (no selection engine)", args.verb) end

  -- raises on any failed selection, or any object whose apiVersion, kind,
  -- namespace or name cannot be a request path: nothing applied
  local res = selection.run(args, { objects_json = true, check_object = require("fluence.apply").check_object })
  if mode == "client" then
    local apply = require "fluence.apply"
    local out
    if fmt == "name" then
      local lines = {}
      for _, o in ipairs(res.objects) do
        lines[#lines + 1] = apply.display_name(o.apiVersion, o.kind, o.name or o.generateName) .. "\n"
      end
      out = table.concat(lines)
    elseif fmt == "json" and selection.render_json then
      out = selection.render_json(res)
    else
      out = res.output
    end
    if res.stderr then sys.write(2, res.stderr) end
    -- with several contexts, the plan: where each object would go, which
    -- would move, what --move would delete (this reads the clusters)
    if type(opts.context) == "table" and #opts.context > 1 and not opts.offline then
      local okp, why = errors.try(function()
        local cl = res.clusters.open()
        local groups, notes = require("fluence.placement").groups(cl, res.objects, opts)
        local moves, warnings = require("fluence.move").find(cl, groups, opts)
        sys.write(2, table.concat(notes) .. table.concat(warnings) ..
                     (opts.move and require("fluence.move").plan_lines(moves) or ""))
      end)
      -- a dry run prints its manifest whatever the clusters say
      if not okp then sys.write(2, "fluence: note: no plan: " .. tostring(why.message) .. "\n") end
    end
    sys.write(1, out)
    return sys.EXIT.OK
  end

  local apply = require "fluence.apply"
  -- each object goes to the cluster chosen for it (with several --context),
  -- what it uses with it, the rest to the default context (placement.lua).
  -- The clusters are the selection's: each opened once per run (its exec
  -- credential plugin run once), whoever reached it first.
  local cluster = require "fluence.cluster"
  local cl = res.clusters.open()
  local groups, notes = require("fluence.placement").groups(cl, res.objects, opts)
  -- copies an earlier apply left in another of the contexts (move.lua)
  local move = require "fluence.move"
  local moves, warnings = move.find(cl, groups, opts)
  if res.stderr then sys.write(2, res.stderr) end
  if #notes + #warnings > 0 then sys.write(2, table.concat(notes) .. table.concat(warnings)) end
  if opts.confirm then
    local n = #res.objects
    local where = {}
    for _, g in ipairs(groups) do
      local client = g.c.client
      where[#where + 1] = errors.format("%s (context %q, namespace %q)", client.server or "?", client.context or "",
                                                                  client.namespace or "")
    end
    local deletes = opts.move and #moves > 0
      and (", then delete %d old cop%s"):format(#moves, #moves == 1 and "y" or "ies") or ""
    local answer = sys.read_tty_line(("%s %d object%s to %s%s? [y/N] ")
      :format(args.verb == "create" and "Create" or "Apply", n, n == 1 and "" or "s", table.concat(where, " and "),
              deletes))
    if answer == nil then
      errors.raise("USAGE", "%s: --confirm needs a terminal to ask on", args.verb)
    end
    if not answer:match("^%s*[yY]") then
      sys.write(2, "fluence: not applied\n")
      return sys.EXIT.OK
    end
  end
  local function how_for(client)
    return {
      field_manager = opts["field-manager"] or apply.FIELD_MANAGER,
      force = opts["force-conflicts"] and true or false,
      dry_run = mode, create = args.verb == "create",
      namespace = client.namespace, namespace_explicit = opts.namespace ~= nil,
      kubeconfig = opts.kubeconfig,
      again = not opts["force-conflicts"] and require("fluence.hint").again(args, { "--force-conflicts" }) or nil,
    }
  end
  -- A changed selection the server cannot apply in place (a Job's pod
  -- template is immutable) stops the run before anything is applied, on
  -- any cluster.
  local conflicts = {}
  for _, g in ipairs(groups) do
    for _, c in ipairs(apply.preflight(g.c.client, g.objects, how_for(g.c.client))) do
      if cl.many then c.name = c.name .. errors.format(" (context %q)", cluster.name(g.c)) end
      conflicts[#conflicts + 1] = c
    end
  end
  if #conflicts > 0 then
    local lines = {}
    for i, c in ipairs(conflicts) do lines[i] = "fluence: " .. apply.conflict_message(c) .. "\n" end
    lines[#lines + 1] = ("fluence: nothing was applied (%d object%s cannot take the new selection)\n")
      :format(#conflicts, #conflicts == 1 and "" or "s")
    sys.write(2, table.concat(lines))
    return sys.EXIT.CLUSTER
  end
  local results = {}
  for _, g in ipairs(groups) do
    local rs = apply.apply_all(g.c.client, g.objects, how_for(g.c.client))
    -- results follow the input order (a v1 List item counts as its object)
    for k, r in ipairs(rs) do
      if cl.many then r.name = r.name .. (" (context %s)"):format(sys.escape(cluster.name(g.c))) end
      r.order = { g.index[r.at], k }
      r.context = cluster.name(g.c)
      results[#results + 1] = r
    end
  end
  table.sort(results, function(a, b)
    return a.order[1] < b.order[1] or (a.order[1] == b.order[1] and a.order[2] < b.order[2])
  end)
  local out, err, failed = {}, {}, 0
  for _, r in ipairs(results) do
    if r.ok then
      if fmt == "name" then out[#out + 1] = r.name .. "\n"
      elseif fmt == nil then out[#out + 1] = r.name .. " " .. r.action .. "\n" end
    else
      failed = failed + 1
      err[#err + 1] = ("fluence: %s: %s\n"):format(r.name, r.message or "failed")
    end
  end
  if opts.move and #moves > 0 then
    -- the old copies, each only once its new one was accepted
    local function accepted(i, context)
      for _, r in ipairs(results) do
        if r.order[1] == i and r.context == context then return r.ok end
      end
      return false
    end
    local dout, derr, dfailed = move.delete(moves, accepted, { dry_run = mode })
    if fmt == nil or fmt == "name" then
      for _, l in ipairs(dout) do out[#out + 1] = l end
    end
    for _, l in ipairs(derr) do err[#err + 1] = l end
    failed = failed + dfailed
  end
  if fmt == "yaml" or fmt == "json" then out = { render_objects(fmt, results) } end
  if #out > 0 then sys.write(1, table.concat(out)) end
  if #err > 0 then sys.write(2, table.concat(err)) end
  if failed > 0 then
    local total = #results + (opts.move and #moves or 0)
    sys.write(2, ("fluence: %d of %d object%s failed\n"):format(failed, total, total == 1 and "" or "s"))
    return sys.EXIT.CLUSTER
  end
  return sys.EXIT.OK
end

return cmd
