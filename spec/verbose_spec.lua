-- -v that helps (issue 27, point 11): against two real kube-apiservers,
-- each cluster read is logged once (it was repeated per decision and per
-- layer), with what came back and its latency; `match -v` and a fits stage
-- say which matcher ran (built-in, or Fluxion's library and its path).
local cli = require "support.cli"
local envtest = require "support.envtest"

local ATTRS = cli.root .. "/examples/quickstart/attributes.yaml"

local function count(s, pattern)
  local n = 0
  for _ in s:gmatch(pattern) do n = n + 1 end
  return n
end

envtest.describe("-v on real clusters", function(east)
  local west = assert(envtest.get("west"))
  local dir, kubeconfig

  setup(function()
    dir = cli.tmpdir()
    kubeconfig = envtest.kubeconfig_many(dir .. "/config", { { name = "east", api = east }, { name = "west", api = west } })
  end)
  teardown(cli.cleanup)

  it("logs each cluster read once, with its latency, over several decisions", function()
    -- three objects, two distinct requests: two decisions, one read per cluster and kind of data
    local docs = {}
    for i, policy in ipairs{ "fits, min-cost", "fits:now, min-cost", "fits, min-cost" } do
      docs[i] = cli.POD:format(policy):gsub("name: p", "name: p" .. i)
    end
    local job = cli.write(dir .. "/three.yaml", table.concat(docs, "---\n"))
    local r = cli.run{ "select", "-v", "-f", job, "--attributes", ATTRS, "--context", "east", "--context", "west",
                       env = { KUBECONFIG = kubeconfig, HOME = dir } }
    assert.is_true(r.code <= 1, r.err)         -- (no nodes: nothing may fit)
    for _, ctx in ipairs{ "east", "west" } do
      for _, what in ipairs{ "the offerings %(GET /api/v1/namespaces/kube%-system/configmaps/fluence%-resources%)",
                             "the nodes %(GET /api/v1/nodes%)", "the pods %(GET /api/v1/pods%)" } do
        local line = 'fluence: cluster "' .. ctx .. '": ' .. what .. ": [^\n]- in %d+ ms\n"
        assert.are.equal(1, count(r.err, line), ctx .. " " .. what .. " logged once:\n" .. r.err)
      end
    end
    assert.matches('cluster "east": the nodes %(GET /api/v1/nodes%): 1 page, [%d.]+ KiB, %d+ items? in %d+ ms', r.err)
    assert.matches('cluster "west": the offerings [^\n]*: failed: configmaps "fluence%-resources" not found %(HTTP 404',
                   r.err)
    assert.are.equal(1, count(r.err, "fluence: clusters read in %d+ ms %(at once%)\n"), r.err)
    assert.are.equal(1, count(r.err, "fluence: fits: matching with the built%-in matcher"), r.err)
    -- without -v: none of it
    r = cli.run{ "select", "-f", job, "--attributes", ATTRS, "--context", "east", "--context", "west",
                 env = { KUBECONFIG = kubeconfig, HOME = dir } }
    assert.is_nil(r.err:find("fluence: cluster ", 1, true), r.err)
  end)
end)

describe("match -v", function()
  local graph = cli.root .. "/spec/fixtures/match/small.json"

  it("names the matcher: built-in, or Fluxion's library and its path", function()
    local r = cli.run{ "match", "-v", "--graph", graph, stdin = "quit\n", env = { FLUENCE_FLUXION_LIB = false } }
    assert.are.equal(0, r.code, r.err)
    assert.matches("^fluence: match: the built%-in matcher %(Fluxion v0%.54's traversal, in C; FLUENCE_FLUXION_LIB " ..
                   "unset%), policy first, format simple\n", r.err)
    -- (support.fluxion: where the library is, and its own leak suppressed under ASan)
    local fluxion = require "support.fluxion"
    if not fluxion.lib then pending(fluxion.SKIP) return end
    local lib = fluxion.lib
    r = cli.run{ "match", "-v", "-P", "high", "--graph", graph, stdin = "quit\n", env = fluxion.lib_env(),
                 valgrind = fluxion.valgrind }
    assert.are.equal(0, r.code, r.err)
    assert.matches("^fluence: match: Fluxion's library " .. lib:gsub("%p", "%%%0") ..
                   " %(FLUENCE_FLUXION_LIB%), policy high, format simple\n", r.err)
  end)
end)
