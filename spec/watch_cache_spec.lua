-- Kind to the API server (issue 27, point 10), against two real
-- kube-apiservers: fits:now reads the nodes and the pods from the server's
-- watch cache (resourceVersion=0, as an informer's first list), which a
-- few seconds' staleness allows; a server before 1.27 then ignores the
-- limit and answers the list whole, so an answer past the list limit is
-- refused as it arrives and the list read again in pages from etcd.
-- (bench/apiserver_scale.lua measures both ways at 5,000 nodes and 50,000
-- pods: docs/kubernetes.md.)
local cli = require "support.cli"
local envtest = require "support.envtest"
local cluster = require "fluence.cluster"

envtest.describe("reading the lists from the watch cache", function(east)
  local west = assert(envtest.get("west"))
  local dir, kubeconfig
  local made = {}

  setup(function()
    dir = cli.tmpdir()
    for i = 1, 5 do
      made[#made + 1] = { east, east:node("wc-east-" .. i, { capacity = { cpu = "8", memory = "16Gi", pods = "110" } }) }
    end
    made[#made + 1] = { west, west:node("wc-west-1", { capacity = { cpu = "8", memory = "16Gi", pods = "110" } }) }
    kubeconfig = envtest.kubeconfig_many(dir .. "/config", { { name = "east", api = east }, { name = "west", api = west } })
  end)
  teardown(function()
    for _, m in ipairs(made) do pcall(m[1].request, m[1], "DELETE", "/api/v1/nodes/" .. m[2]) end
    cli.cleanup()
  end)

  local function lists(api)
    local out = {}
    for _, e in ipairs(api:audit()) do
      if e.verb == "list" and (e.path == "/api/v1/nodes" or e.path == "/api/v1/pods") then out[#out + 1] = e end
    end
    return out
  end

  it("fits:now asks both lists of each cluster from the watch cache", function()
    east:audit(); west:audit()
    local job = cli.write(dir .. "/p.yaml", cli.POD:format("fits:now"))
    local r = cli.run{ "select", "-f", job, "--attributes", cli.root .. "/examples/quickstart/attributes.yaml",
                       "--context", "east", "--context", "west", env = { KUBECONFIG = kubeconfig, HOME = dir } }
    assert.are.equal(0, r.code, r.err)
    for _, api in ipairs{ east, west } do
      local seen = lists(api)
      assert.are.equal(2, #seen)
      for _, e in ipairs(seen) do
        assert.are.equal("0", e.query.resourceVersion, e.uri)
        assert.is_nil(e.query.continue, e.uri)
        if e.path == "/api/v1/pods" then assert.are.equal(cluster.POD_SELECTOR, e.query.fieldSelector) end
      end
    end
  end)

  it("a whole list past the limit is read again in pages from etcd; a small one is not", function()
    local max, page = cluster.MAX_LIST, cluster.PAGE.nodes
    -- five nodes are more than 2,000 bytes (~700 each); one a page is less
    cluster.MAX_LIST, cluster.PAGE.nodes = 2000, 1
    local ok, err = pcall(function()
      east:audit(); west:audit()
      local cl = cluster.open({ "east", "west" }, { kubeconfig = kubeconfig })
      cluster.load(cl.list, { nodes = true })
      local names = {}
      for _, c in ipairs(cl.list) do
        assert.is_nil(c.nodes_error, tostring(c.nodes_error))
        for _, n in ipairs(c.nodes) do if n.name:match("^wc%-") then names[#names + 1] = n.name end end
      end
      table.sort(names)
      assert.are.same({ "wc-east-1", "wc-east-2", "wc-east-3", "wc-east-4", "wc-east-5", "wc-west-1" }, names)
      -- east: the cache's whole answer (refused), then pages from etcd
      local seen = lists(east)
      assert.is_true(#seen >= 6, #seen .. " lists")
      assert.are.equal("0", seen[1].query.resourceVersion)
      assert.is_nil(seen[2].query.resourceVersion)
      assert.are.equal("1", seen[2].query.limit)
      assert.is_nil(seen[2].query.continue)
      assert.is_truthy(seen[3].query.continue)
      for i = 2, #seen do assert.is_nil(seen[i].query.resourceVersion, seen[i].uri) end
      -- west: one answer from the cache, small enough
      seen = lists(west)
      assert.are.equal(1, #seen)
      assert.are.equal("0", seen[1].query.resourceVersion)
    end)
    cluster.MAX_LIST, cluster.PAGE.nodes = max, page
    assert(ok, err)
  end)
end)
