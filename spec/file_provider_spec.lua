-- providers/file.lua: the Go client's attribute files, through the real
-- plugin loader and sandbox.
local cli = require "support.cli"
local plugins = require "fluence.plugins"
local provider_api = require "fluence.provider_api"
local sandbox = require "fluence.sandbox"

local function load_file_provider()
  local reg = plugins.load_providers{ api = provider_api.new{}, home = "/nonexistent", path = "",
                                      source_dir = cli.root }
  return assert(reg.get("file")).plugin
end

-- The provider's backends, then what the cost model makes of their prices
-- once every provider ran (as the selection does: a per-minute price gets
-- its cost_usd there).
local function candidates(files, shots)
  local p = load_file_provider()
  local req = { shots = shots or 1000 }
  local ok, out = sandbox.call(p.candidates, sandbox.DEFAULT_BUDGET,
                               { request = req, options = { attributes = files }, api = provider_api.new{} })
  if not ok then error(out, 0) end
  local merge = require "fluence.merge"
  local state = { results = { { provider = "file", backends = out, trusted = true } } }
  state.merged = assert(merge.merge(state.results))
  require("fluence.cost").apply(state, req, merge)
  local by = {}
  for _, b in ipairs(state.merged) do by[b.name] = b.attrs end
  return by, out
end

describe("the file provider", function()
  local dir
  before_each(function() dir = cli.tmpdir() end)
  after_each(cli.cleanup)

  it("reads the Go client's quantum example with its cost rule", function()
    local by = candidates({ cli.root .. "/examples/quantum/attributes.yaml" }, 1000)
    assert.are.equal(0.075 * 0.05, by.sv1.cost_usd)
    assert.is_true(math.abs(by.rigetti_cepheus.cost_usd - 1.2) < 1e-12)
    assert.are.equal(108, by.rigetti_cepheus.qubits)
    assert.are.equal("eu-north-1", by.iqm_garnet.region)
    assert.are.equal("arn:aws:braket:::device/quantum-simulator/amazon/sv1", by.sv1.device_arn)
  end)

  it("lets task/shot costs override attributes.cost_usd, per-minute only fill it in", function()
    local f = cli.write(dir .. "/a.json", [[
{"version": 1, "backends": [
  {"name": "q", "cost_per_task": 0.3, "cost_per_shot": 0.01, "attributes": {"cost_usd": 99}},
  {"name": "s", "cost_per_minute": 0.1, "attributes": {"cost_usd": 7}},
  {"name": "t", "cost_per_minute": 0.1},
  {"name": "u", "qubits": 5, "attributes": {"qubits": 9}, "strings": {"status": "ONLINE"}},
  {"name": "v", "attributes": {"qubits": 9}, "strings": {"region": "eu"}}
]}]])
    local by = candidates({ f }, 100)
    assert.is_true(math.abs(by.q.cost_usd - 1.3) < 1e-12)
    assert.are.equal(7, by.s.cost_usd)
    assert.is_true(math.abs(by.t.cost_usd - 0.005) < 1e-12)
    assert.are.equal(5, by.u.qubits)
    assert.are.equal("ONLINE", by.u.status)
    -- absent top-level fields leave the sections' values alone
    assert.are.equal(9, by.v.qubits)
    assert.are.equal("eu", by.v.region)
  end)

  it("lets later files override earlier ones", function()
    local a = cli.write(dir .. "/a.yaml", "backends:\n- name: x\n  attributes: {cost_usd: 1}\n")
    local b = cli.write(dir .. "/b.yaml", "backends:\n- name: x\n  attributes: {cost_usd: 2}\n- name: y\n")
    local by, list = candidates({ a, b })
    assert.are.equal(2, by.x.cost_usd)
    assert.are.equal(2, #list)
  end)

  it("keeps one record per name: the last given, where the name first appeared", function()
    local a = cli.write(dir .. "/a.yaml", "backends:\n- name: x\n  attributes: {cost_usd: 1}\n" ..
                                          "- name: y\n  attributes: {cost_usd: 5}\n" ..
                                          "- name: x\n  attributes: {cost_usd: 3}\n")
    local b = cli.write(dir .. "/b.yaml", "backends:\n- name: z\n- name: y\n  attributes: {cost_usd: 6}\n")
    local by, list = candidates({ a, b })
    assert.are.same({ "x", "y", "z" }, { list[1].name, list[2].name, list[3].name })
    assert.are.equal(3, #list)
    assert.are.equal(3, by.x.cost_usd)
    assert.are.equal(6, by.y.cost_usd)
    -- the rule itself (api.catalog.latest), and what it refuses
    local latest = require("fluence.catalog").latest
    local r1, r2, r3 = { name = "p" }, { name = "q" }, { name = "p" }
    local got = latest{ { r1, r2 }, {}, { r3 } }
    assert.are.equal(2, #got)
    assert.are.equal(r3, got[1])
    assert.are.equal(r2, got[2])
    assert.are.same({}, latest{})
    assert.has_error(function() latest{ { { cost = 1 } } } end, "table index is nil")
    assert.has_error(function() latest{ "not a list" } end)
    assert.has_error(function() latest("nothing") end)
  end)

  it("points at the offending line and column", function()
    local cases = {
      { "version: 1\nbackends: []\n", ":2:1: no backends defined" },
      { "version: 1\n", ":1:1: no backends defined" },
      { "backends:\n  - name: x\n    attributes:\n      cost_usd: cheap\n", ":4:7: backends[0].attributes.cost_usd: must be a finite number" },
      { "backends:\n  - provider: y\n", ":2:5: backends[0].name: required (a non-empty string)" },
      { "backends:\n  - name: x\n    qubits: many\n", ":3:5: backends[0].qubits: must be a finite number" },
      { "backends:\n  - name: x\n    strings: {status: 1}\n", ":3:15: backends[0].strings.status: must be a string" },
      { "backends:\n  - name: x\n  bad: [\n", "" },
    }
    for _, c in ipairs(cases) do
      local f = cli.write(dir .. "/bad.yaml", c[1])
      local ok, err = pcall(candidates, { f })
      assert.is_false(ok)
      assert.matches(f .. c[2], tostring(err), 1, true)
    end
  end)

  it("says so when the file is missing or a directory", function()
    local ok, err = pcall(candidates, { dir .. "/missing.yaml" })
    assert.is_false(ok)
    assert.matches("missing.yaml: No such file or directory", tostring(err), 1, true)
    ok, err = pcall(candidates, { dir })
    assert.is_false(ok)
    assert.matches(": is a directory", tostring(err), 1, true)
  end)
end)
