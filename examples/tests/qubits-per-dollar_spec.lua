-- Specs for policies/qubits-per-dollar.lua: `fluence test examples`.
local t = require("fluence.testing")

describe("qubits-per-dollar", function()
  local devices = {
    { name = "big", attrs = { qubits = 100, cost_usd = 10 } },      -- 10 qubits per dollar
    { name = "small", attrs = { qubits = 20, cost_usd = 1 } },      -- 20
    { name = "close", attrs = { qubits = 57, cost_usd = 3 } },      -- 19
    { name = "free", attrs = { qubits = 5, cost_usd = 0 } },        -- free ranks first
    { name = "unknown", attrs = { qubits = 30 } },
  }

  it("ranks by qubits per dollar, a free device first, keeping all without a tolerance", function()
    local r = t.rank("qubits-per-dollar", devices)
    assert.are.same({ "free", "small", "close", "big" }, r.order)
    assert.matches("needs numeric qubits and cost_usd", r.dropped.unknown)
  end)

  it("keeps the best-equivalent group with ~N%", function()
    local paid = { devices[1], devices[2], devices[3] }
    local r = t.rank("qubits-per-dollar~10%", paid)
    assert.are.same({ "small", "close" }, r.order)
    assert.truthy(r.dropped.big)
  end)

  it("fails when no device has both attributes", function()
    local r = t.rank("qubits-per-dollar", { devices[5] })
    assert.is_nil(r.chosen)
    assert.matches("no candidate has both qubits and cost_usd", r.error)
  end)

  it("takes no arguments", function()
    assert.error_matches(function() t.rank("qubits-per-dollar:5", devices) end,
                         'policy "qubits-per-dollar" takes no arguments', 1, true)
  end)
end)
