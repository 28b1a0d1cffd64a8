-- fluence.testing as a library under busted itself (as plain busted uses it
-- after `make install`): rank, provider and select through the real loader,
-- sandbox and selection, with HTTP, the environment, files, AWS and the
-- cluster's offerings stood in for.
local t = require "fluence.testing"
local cli = require "support.cli"
local tree = require "support.tree"

local PROVIDER = [[
return {
  name = "pricing", description = "prices over HTTP",
  candidates = function(ctx)
    local api = ctx.api
    local rs = api.http.request_many{ { url = "https://p.example/a?page=1" }, { url = "https://p.example/b" } }
    local out, notes = {}, {}
    for i, r in ipairs(rs) do
      if r.error then notes[#notes + 1] = "pricing: " .. r.error
      else out[#out + 1] = { name = "b" .. i, attrs = { cost_usd = tonumber(r.body), kind = r.headers["x-kind"] } } end
    end
    local home = api.read_file("notes.txt")
    if home then notes[#notes + 1] = home end
    api.warn("pricing: %d answers", #rs)
    return out, notes
  end,
}
]]

describe("fluence.testing", function()
  local dir
  setup(function()
    dir = tree.make{ ["providers/pricing.lua"] = PROVIDER }
  end)
  teardown(function() cli.cleanup() end)

  describe("rank", function()
    local b = { { name = "a", attrs = { cost_usd = 2, memory_gb = 24 } }, { name = "b", attrs = { cost_usd = 1, memory_gb = 16 } } }

    it("runs any policy text over the backends", function()
      local r = t.rank("require:memory_gb>=24,min-cost", b)
      assert.are.equal("a", r.chosen)
      assert.are.same({ "a" }, r.order)
      assert.are.same({ b = "memory_gb 16, wants >= 24" }, r.dropped)
      assert.is_nil(r.error)
      r = t.rank("min-cost", b)
      assert.are.same({ "b" }, r.order)
    end)

    it("gives the request to the stages", function()
      local r = t.rank("require:memory_gb>=100", b)
      assert.is_nil(r.chosen)
      assert.matches("eliminated all candidates", r.error)
    end)

    it("raises a policy that does not compile, located in the text", function()
      assert.has_error(function() t.rank("min-cots", b) end)
      local ok, err = pcall(t.rank, "min-cost,min-cots", b)
      assert.is_false(ok)
      assert.matches('^policy:1:10: unknown attribute "cots" in "min%-cots" %(did you mean "min%-cost"%?%)', err)
    end)

    it("checks the backends it is given", function()
      assert.has_error(function() t.rank("min-cost", { { attrs = {} } }) end,
                       "t.rank: backend #1 needs a name (a non-empty string)")
    end)
  end)

  describe("provider", function()
    local http = {
      ["https://p.example/a"] = { status = 200, body = "0.5", headers = { ["X-Kind"] = "spot" } },
      ["https://p.example/b"] = function(req) return { body = req.method == "GET" and "2" or "0" } end,
    }

    it("runs a provider file with HTTP answered by the test (a stub without a query matches any)", function()
      local backends, notes, info = t.provider(dir .. "/providers/pricing.lua", { http = http })
      assert.are.same({ { name = "b1", attrs = { cost_usd = 0.5, kind = "spot" } }, { name = "b2", attrs = { cost_usd = 2 } } },
                      backends)
      -- relative paths a provider reads are the test's (here spec/, without notes.txt)
      assert.are.same({}, notes)
      assert.are.same({ "pricing: 2 answers" }, info.warnings)
      assert.are.same({ "https://p.example/a?page=1", "https://p.example/b" }, { info.requests[1].url, info.requests[2].url })
    end)

    it("answers a network failure, and files the test gives", function()
      local _, notes = t.provider(dir .. "/providers/pricing.lua", {
        http = { ["https://p.example/a"] = { error = "Connection refused" }, ["https://p.example/b"] = "1" },
        files = { ["notes.txt"] = "stood in" } })
      assert.are.same({ "pricing: Connection refused", "stood in" }, notes)
    end)

    it("fails naming a URL without an answer", function()
      assert.has_error(function() t.provider(dir .. "/providers/pricing.lua", { http = { ["https://p.example/a"] = "1" } }) end,
        "unstubbed HTTP request: GET https://p.example/b (a test never reaches the network: give this URL an answer in http)")
    end)

    it("finds providers by name on the search path, the built-ins too", function()
      local backends, notes = t.provider("braket-live", { request = { shots = 100 },
                                                          backends = { { name = "sv1", attrs = { device_arn =
                                                            "arn:aws:braket:::device/quantum-simulator/amazon/sv1" } } } })
      -- no credentials in the test's environment (never the real one): nothing is asked of AWS
      assert.are.same({ { name = "sv1", attrs = { status = "UNKNOWN" } } }, backends)
      assert.truthy(notes[1]:find("devices marked UNKNOWN", 1, true), notes[1])
      assert.has_error(function() t.provider("no-such-provider") end)
    end)
  end)

  describe("select", function()
    local job = [[
apiVersion: batch/v1
kind: Job
metadata:
  name: j
  annotations:
    fluence.flux-framework.org/select-policy: "min-cost"
spec:
  parallelism: 2
  template:
    spec:
      schedulerName: fluence
      containers: [{name: a, image: b}]
]]
    local attrs = { { name = "x", attributes = { cost_usd = 1 } }, { name = "y", attributes = { cost_usd = 2 } } }

    it("selects in process, offline without offerings", function()
      local r = t.select{ manifest = job, attributes = attrs }
      assert.are.equal(0, r.exit)
      assert.are.same({ { object = "Job/j", chosen = "x", dropped = { y = "cost_usd 2 is not within 0 of the best (1)" },
                          notes = {} } }, r.objects)
      assert.matches("fluence.flux%-framework.org/require%-backend: x", r.output)
      assert.matches('selected backend "x" for Job/j', r.stderr)
    end)

    it("narrows by the offerings given", function()
      local r = t.select{ manifest = job, attributes = attrs, offerings = "- name: y\n" }
      assert.are.equal("y", r.objects[1].chosen)
      assert.are.equal("not offered by the cluster scheduler", r.objects[1].dropped.x)
    end)

    it("overrides the policy, and says how a selection failed", function()
      local r = t.select{ manifest = job, attributes = attrs, policy = "require:cost_usd>5" }
      assert.are.equal(1, r.exit)
      assert.is_nil(r.output)
      assert.matches("selection failed", r.error)
      assert.are.equal("cost_usd 1, wants > 5", r.objects[1].dropped.x)
      r = t.select{ manifest = job, attributes = attrs, policy = "min-cots" }
      assert.are.equal(3, r.exit)
      assert.matches('unknown attribute "cots" in "min%-cots"', r.error)
    end)

    it("takes an inline object and a provider file", function()
      local obj = { apiVersion = "v1", kind = "Pod", metadata = { name = "p", annotations = {
                      ["fluence.flux-framework.org/select-policy"] = "max-cost" } },
                    spec = { schedulerName = "fluence", containers = { { name = "a", image = "b" } } } }
      local r = t.select{ object = obj, providers = { dir .. "/providers/pricing.lua" },
                          http = { ["https://p.example/a"] = "0.5", ["https://p.example/b"] = "2" } }
      assert.are.equal(0, r.exit, r.error)
      assert.are.equal("b2", r.objects[1].chosen)
      assert.are.same({ "pricing: 2 answers" }, r.warnings)
    end)

    it("fails naming an unstubbed URL", function()
      assert.error_matches(function() t.select{ manifest = job, providers = { dir .. "/providers/pricing.lua" } } end,
                           "unstubbed HTTP request: GET https://p.example/a?page=1", 1, true)
    end)
  end)
end)
