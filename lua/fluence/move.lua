-- Moving a workload between clusters.  When a re-apply places a workload in
-- another of the contexts given than last time, the old copy keeps running
-- (two copies of a training job) unless someone deletes it.  Before
-- anything is applied, every placed object is looked up in the other
-- contexts of the run by kind, namespace and name; a copy carrying
-- fluence's own audit annotation (select-result) is one an earlier apply
-- placed there: a move, warned about naming both contexts.  With --move it
-- is deleted, but only once the new copy was accepted.  A copy of the same
-- name without the audit is someone else's: said, never touched.
--
--   move.find(cl, groups, opts) -> moves, notes
--     groups: placement.groups'; moves: { {i = object index, to = context,
--       from = cluster, target = hint target, ref = display name}, ... }
--     notes: stderr lines (the warnings, and lookups that failed)
--   move.plan_lines(moves, opts) -> text   what --move will do (dry runs)
--   move.delete(moves, accepted, opts) -> out, err, failed
--     accepted(i, context) -> whether the new copy was applied;
--     opts.dry_run == "server": the deletes are server dry runs
local json = require "fluence.json"
local errors = require "fluence.errors"
local kubeclient = require "fluence.kubeclient"
local hint = require "fluence.hint"
local sys = require "fluence.sys"

local M = {}

local RESULT = require("fluence.request").PREFIX .. "select-result"

function M.find(cl, groups, opts)
  local cluster = require "fluence.cluster"
  local apply = require "fluence.apply"
  local moves, notes = {}, {}
  if not cl.many then return moves, notes end
  -- a cluster that cannot be read is said once, not once per object, and
  -- asked nothing more (a kind's discovery there would wait again)
  local unread = {}
  local function cannot_read(other, name, err)
    if unread[other] then return end
    unread[other] = true
    notes[#notes + 1] = errors.format("fluence: note: could not look for earlier copies in context %q (%s " ..
                                      "first): %s\n", cluster.name(other), name, err.message)
  end
  local checks, gets = {}, {}
  for _, g in ipairs(groups) do
    local to = cluster.name(g.c)
    for k, o in ipairs(g.objects) do
      local doc = o.chosen and o.name and o.json and json.decode(o.json)
      local meta = type(doc) == "table" and type(doc.metadata) == "table" and doc.metadata or nil
      if meta then
        for _, other in ipairs(cl.list) do
          if other ~= g.c and not unread[other] then
            local client = other.client
            local ns = meta.namespace or opts.namespace or client.namespace
            local ok, path, r = errors.try(client.path, client, o.apiVersion, o.kind, ns, o.name)
            if ok then
              checks[#checks + 1] = { i = g.index[k], o = o, to = to, from = other, path = path,
                                      ns = r.namespaced and ns or nil }
              gets[#gets + 1] = { client, "GET", path }
            elseif path.network or (path.status and path.status ~= 404) then
              -- (a kind the server does not serve: no copy there)
              cannot_read(other, apply.display_name(o.apiVersion, o.kind, o.name), path)
            end
          end
        end
      end
    end
  end
  for n, r in ipairs(kubeclient.request_many(gets)) do
    local c = checks[n]
    local from = cluster.name(c.from)
    local name = apply.display_name(c.o.apiVersion, c.o.kind, c.o.name)
    if r.error then
      if r.error.status ~= 404 then cannot_read(c.from, name, r.error) end
    else
      local meta = type(r.body) == "table" and type(r.body.metadata) == "table" and r.body.metadata or {}
      local ann = type(meta.annotations) == "table" and meta.annotations or {}
      local target = { context = c.from.client.context, namespace = c.ns,
                       ref = apply.ref(c.o.apiVersion, c.o.kind, c.o.name), kubeconfig = opts.kubeconfig }
      if ann[RESULT] then
        moves[#moves + 1] = { i = c.i, to = c.to, from = c.from, target = target, ref = name, path = c.path }
        notes[#notes + 1] = errors.format("fluence: warning: %s moves from context %q to context %q: the copy " ..
          "in %q keeps running unless deleted (--move deletes it once the new one is accepted: %s)\n",
          name, from, c.to, from, hint.kubectl("delete", target))
      else
        notes[#notes + 1] = errors.format("fluence: note: %s also exists in context %q, not placed by fluence: " ..
                                          "left alone\n", name, from)
      end
    end
  end
  return moves, notes
end

function M.plan_lines(moves)
  local out = {}
  for _, m in ipairs(moves) do
    out[#out + 1] = errors.format("fluence: --move: would delete %s from context %q once it is accepted in " ..
                                  "context %q\n", m.ref, require("fluence.cluster").name(m.from), m.to)
  end
  return table.concat(out)
end

function M.delete(moves, accepted, opts)
  local cluster = require "fluence.cluster"
  local dels, todo, out, err, failed = {}, {}, {}, {}, 0
  for _, m in ipairs(moves) do
    local from = cluster.name(m.from)
    if accepted(m.i, m.to) then
      todo[#todo + 1] = m
    else
      failed = failed + 1
      err[#err + 1] = errors.format("fluence: %s: not deleted from context %q: the new copy in %q was not " ..
                                    "accepted\n", m.ref, from, m.to)
    end
  end
  for k, m in ipairs(todo) do
    local q = { propagationPolicy = "Background", dryRun = opts.dry_run == "server" and "All" or nil }
    dels[k] = { m.from.client, "DELETE", m.path, nil, nil, q }
  end
  for k, r in ipairs(kubeclient.request_many(dels)) do
    local m, from = todo[k], sys.escape(cluster.name(todo[k].from))
    if r.error and r.error.status ~= 404 then
      failed = failed + 1
      err[#err + 1] = ("fluence: %s (context %s): not deleted: %s\n"):format(m.ref, from, r.error.message)
    else
      -- (404: gone already, as the user wanted)
      out[#out + 1] = ("%s (context %s) deleted (moved to %s)%s\n"):format(m.ref, from, sys.escape(m.to),
        opts.dry_run == "server" and " (server dry run)" or "")
    end
  end
  return out, err, failed
end

return M
