-- The fits policy: keeps the backends on which the whole group fits, all or
-- nothing, through the real plugin loader and pipeline.
local match = require "fluence.match"
local plugins = require "fluence.plugins"
local pipeline = require "fluence.pipeline"
local cli = require "support.cli"

local CONFIGMAP = {
  resources = {
    { type = "qdevice", name = "big", with = { { type = "qpu", count = 1 } } },
    { type = "qdevice", name = "small" },
  },
}

local function backends(...)
  local t = {}
  for i, n in ipairs { ... } do t[i] = { name = n, attrs = {}, source = {} } end
  return t
end

local function names(list)
  local t = {}
  for i, b in ipairs(list) do t[i] = b.name end
  return table.concat(t, ",")
end

-- What the host hands a stage's compile: its error, and its jobspec
-- builder (ctx.jobspecs, the one `fluence jobspec` prints)
local CTX = { error = error, jobspecs = require("fluence.jobspecs").for_backend }

describe("fits policy", function()
  local reg, graph
  setup(function()
    reg = plugins.load_policies { dirs = { cli.root .. "/policies" } }
    local cluster = assert(match.load_jgf_file(cli.root .. "/spec/fixtures/match/small.json"))
    graph = assert(match.graph_from_resources(CONFIGMAP, cluster))
  end)

  local function run(text, request, list)
    local pl, err = pipeline.compile(text, { policies = reg })
    assert.is_table(pl, err and (err.message or tostring(err)))
    return pl:run(list, request)
  end

  it("is a loadable built-in", function()
    assert.is_table(reg.get("fits"))
  end)

  it("drops a backend too small for the gang, all or nothing", function()
    -- 2 pods x 4 cores fit the two 4-core nodes; 3 pods never do
    local req = { pods = 2, pod = { cpu = 4, virtual = { qpu = 1 } }, annotations = {},
                  graphs = { ["*"] = graph } }
    local res = run("fits", req, backends("big", "small", "ghost"))
    assert.is_true(res.ok, res.error)
    assert.are.equal("big", names(res.survivors))
    assert.are.equal("qpu can never fit", res.dropped.small)
    assert.are.equal("qpu can never fit", res.dropped.ghost)
    req.pods = 3
    local res2 = run("fits:now", req, backends("big", "small"))
    assert.is_falsy(res2.ok)
    assert.are.equal("the group can never fit", res2.dropped.big)
  end)

  it("uses the plugin directly: satisfiability and now", function()
    local plugin = reg.get("fits").plugin
    local sat = plugin.compile({ args = nil }, CTX)
    local now = plugin.compile({ args = { raw = "now", pos = 6 } }, CTX)
    local req = { pods = 1, pod = { cpu = 2, virtual = { qpu = 1 } }, annotations = {},
                  graphs = { ["*"] = graph } }
    local keep, why = sat(backends("big", "small", "nope"), req)
    assert.are.equal("big", names(keep))
    assert.are.equal("qpu can never fit", why.small)
    assert.are.equal("qpu can never fit", why.nope)
    -- a device type only "big" models at the top level: every backend is a
    -- node-typed device, so class=qpu exists only on big and its qpu
    req.pod.virtual = { qdevice = 1 }
    keep = sat(backends("big", "small"), req)
    assert.are.equal("big,small", names(keep))
    -- fits:now against current allocations: take "small" first
    local m = assert(graph:matcher { policy = "first" })
    local pin = "version: 1\nresources:\n  - type: slot\n    count: 1\n    label: s\n    with:\n" ..
                "      - {type: node, count: 1}\nattributes:\n  system:\n    constraints:\n" ..
                "      properties: [\"fluxion.flux-framework.org/backend=small\"]\n" ..
                "tasks:\n  - {command: [a], slot: s, count: {per_slot: 1}}\n"
    assert.is_true(m:run("allocate", pin, "pin").ok)
    req.matchers = { big = m, small = m }
    keep, why = now(backends("big", "small"), req)
    assert.are.equal("big", names(keep))
    assert.are.equal("qdevice does not fit now", why.small)
    -- the check left the matcher as it was: no job id used, failed matches
    -- included (resource-query counts those), and big is still free
    assert.are.equal(2, m:next_jobid())
    assert.is_true(m:run("allocate", (pin:gsub("backend=small", "backend=big")), "big").ok)
    -- without graphs there is nothing to check
    keep = sat(backends("x"), { pods = 1, pod = {} })
    assert.are.equal("x", names(keep))
  end)

  it("drops everything when the compute part cannot fit", function()
    local plugin = reg.get("fits").plugin
    local sat = plugin.compile({}, CTX)
    local keep, why = sat(backends("big"), { pods = 3, pod = { cpu = 4 }, graphs = { big = graph } })
    assert.are.equal("", names(keep))
    assert.are.equal("the group can never fit", why.big)
  end)
end)
