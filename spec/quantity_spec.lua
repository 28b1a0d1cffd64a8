-- lua/fluence/quantity.lua (the manifests' requests) and core/kubelists.c
-- (the cluster's nodes and pods) read the same Kubernetes quantities: a
-- form one takes and the other refuses would size a workload one way and a
-- node another, or refuse a manifest the API server accepts.
local quantity = require "fluence.quantity"
local kl = require "fluence.kubelists"
local json = require "fluence.json"

-- the cluster's reading: millicores, rounded up, or nil, error
local function c_milli(q)
  local nodes, err = kl.nodes(json.encode{ kind = "NodeList", apiVersion = "v1", metadata = { resourceVersion = "1" },
    items = json.array{ { metadata = { name = "n" }, spec = json.object{}, status = { capacity = { cpu = q } } } } })
  if not nodes then return nil, err end
  return nodes[1].cpu_milli
end

describe("quantity.parse", function()
  it("takes every form the cluster's reader takes, with the same value", function()
    for _, q in ipairs{ "2", "250m", "0.5", ".5", "1.", "+2", "1500000u", "100000000n", "1k", "1M", "1e3",
                        "2E0", "1.5e-3", "1Ki", "1Mi", "1.5Gi", "12e6", "3T" } do
      local v, err = quantity.parse(q)
      assert.is_number(v, ("%s: %s"):format(q, tostring(err)))
      local want = assert(c_milli(q))
      -- millicores rounded up; a value a decimal fraction only just missed
      -- (0.1 * 1000) is that value (the C side computes whole numbers exactly)
      local x = v * 1000
      local near = math.floor(x + 0.5)
      assert.are.equal(want, math.abs(x - near) <= 1e-9 * math.max(1, math.abs(x)) and near or math.ceil(x), q)
    end
  end)

  it("refuses what the cluster's reader refuses", function()
    for _, q in ipairs{ "abc", "1Q", "1e", "--1", "", "1.2.3", ".", "+", "1ki", "1 Gi", "Gi" } do
      assert.is_nil(c_milli(q), q)
      local v, err = quantity.parse(q)
      assert.is_nil(v, q)
      assert.matches("is not a Kubernetes quantity", err)
    end
  end)
end)
