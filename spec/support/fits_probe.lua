-- Runs the fits policy plugin on a graph built from a fluence-resources
-- ConfigMap grafted onto spec/fixtures/match/small.json and prints each
-- decision, so that a spec can run it with and without FLUENCE_FLUXION_LIB
-- and compare.  Usage: lua5.4 spec/support/fits_probe.lua ROOT
-- With a second argument "badgraph": makes a matcher on a built graph
-- Fluxion refuses (a pool of size -5) and prints the error, if any.
local root = arg[1]
package.cpath = root .. "/build/lib/?.so;" .. package.cpath
package.path = root .. "/lua/?.lua;" .. package.path
local match = require "fluence.match"

if arg[2] == "badgraph" then
  local g = assert(match.graph_from_tree { type = "cluster", with = { { type = "node", with = {
    { type = "core" }, { type = "memory", size = -5 } } } } })
  local m, err = g:matcher { policy = "first" }
  io.write(m and "ok\n" or ("error: " .. err .. "\n"))
  return
end
local plugins = require "fluence.plugins"

local CONFIGMAP = {
  resources = {
    { type = "qdevice", name = "big", with = { { type = "qpu", count = 2 } } },
    { type = "qdevice", name = "hidden", parent = "node0", with = { { type = "qpu", count = 1 } } },
    { type = "qdevice", name = "small", attributes = { vendor = "acme" } },
  },
}

local reg = plugins.load_policies { dirs = { root .. "/policies" } }
local fits = reg.get("fits").plugin
-- the host's ctx: its error and its jobspec builder (ctx.jobspecs)
local CTX = { error = error, jobspecs = require("fluence.jobspecs").for_backend }
local sat = fits.compile({}, CTX)
local now = fits.compile({ args = { raw = "now", pos = 6 } }, CTX)
local cluster = assert(match.load_jgf_file(root .. "/spec/fixtures/match/small.json"))
local graph = assert(match.graph_from_resources(CONFIGMAP, cluster))
local m = assert(graph:matcher { policy = "first" })
io.write("backend ", m:backend() == "fluxion" and "(either)" or "(either)", "\n")

local function backends()
  return { { name = "big", attrs = {} }, { name = "hidden", attrs = {} }, { name = "small", attrs = {} },
           { name = "none", attrs = {} } }
end

local function show(what, keep, why)
  local names = {}
  for _, b in ipairs(keep) do names[#names + 1] = b.name end
  local reasons = {}
  for k, v in pairs(why) do reasons[#reasons + 1] = k .. "=" .. v end
  table.sort(reasons)
  io.write("fits ", what, ": ", table.concat(names, ","), " | ", table.concat(reasons, "; "), "\n")
end

local requests = {
  { pods = 1, pod = { cpu = 1, virtual = { qpu = 1 } } },
  { pods = 2, pod = { cpu = 4, virtual = { qdevice = 1 } } },
  { pods = 1, pod = { cpu = 2, memory = 4 * 1024 * 1024, virtual = { qpu = 2 } } },
  { pods = 3, pod = { cpu = 4 } },
  { pods = 1, pod = { cpu = 1, virtual = { qpu = 3 } } },
}
for i, req in ipairs(requests) do
  req.annotations = { ["fluence.flux-framework.org/require-vendor"] = i == 2 and "acme" or nil }
  req.graphs = { ["*"] = graph }
  show(i .. " sat", sat(backends(), req))
  show(i .. " now", now(backends(), req))
  req.matchers = { big = m, hidden = m, small = m, none = m }
  show(i .. " now/held", now(backends(), req))
  -- hold something between rounds, as a scheduler would
  local r = m:run("allocate", "version: 1\nresources:\n  - type: slot\n    count: 1\n    label: s\n    with:\n" ..
                  "      - {type: core, count: 1}\ntasks:\n  - command: [a]\n    slot: s\n    count: {per_slot: 1}\n" ..
                  "attributes: {}\n",
                  "hold")
  io.write("hold ", tostring(r.ok), " ", r.jobid, " next ", m:next_jobid(), "\n")
end
