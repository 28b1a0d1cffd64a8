-- Specs for providers/http-json.lua: `fluence test examples`.  Its endpoint
-- is stood in for (http =): a test never reaches the network.
local t = require("fluence.testing")

local URL = "https://inventory.example/backends.json"

describe("http-json", function()
  it("reads the attribute file's shape from the endpoint", function()
    local backends, notes, info = t.provider("http-json", {
      env = { FLUENCE_BACKENDS_URL = URL, FLUENCE_BACKENDS_TOKEN = "s3cret" },
      http = { [URL] = { status = 200, headers = { ["Content-Type"] = "application/json" }, body = [[
        {"backends": [{"name": "gpu-l4", "attributes": {"cost_usd": 0.8}, "strings": {"region": "us-east-1"}},
                      {"name": "gpu-t4", "attrs": {"cost_usd": 0.35}}]}]] } },
    })
    assert.are.same({ { name = "gpu-l4", attrs = { cost_usd = 0.8, region = "us-east-1" } },
                      { name = "gpu-t4", attrs = { cost_usd = 0.35 } } }, backends)
    assert.are.same({}, notes)
    -- what it sent: the token as a bearer token, JSON asked for
    assert.are.equal("Bearer s3cret", info.requests[1].headers.Authorization)
    assert.are.equal("application/json", info.requests[1].headers.Accept)
  end)

  it("accepts a bare list", function()
    local backends = t.provider("http-json", { env = { FLUENCE_BACKENDS_URL = URL },
                                               http = { [URL] = '[{"name": "a", "attrs": {"x": 1}}]' } })
    assert.are.same({ { name = "a", attrs = { x = 1 } } }, backends)
  end)

  it("turns an HTTP error into a note, without the query string", function()
    local backends, notes = t.provider("http-json", { env = { FLUENCE_BACKENDS_URL = URL .. "?key=abc" },
                                                      http = { [URL] = { status = 503 } } })
    assert.are.same({}, backends)
    assert.are.same({ "http-json: " .. URL .. " answered HTTP 503" }, notes)
  end)

  it("turns a network failure into a note", function()
    local _, notes = t.provider("http-json", { env = { FLUENCE_BACKENDS_URL = URL },
                                               http = { [URL] = { error = "Could not resolve host" } } })
    assert.are.same({ "http-json: Could not resolve host" }, notes)
  end)

  it("names a backend without a name", function()
    assert.error_matches(function()
      t.provider("http-json", { env = { FLUENCE_BACKENDS_URL = URL }, http = { [URL] = '[{"name": "a"}, {}]' } })
    end, "http-json: backend #2 has no name", 1, true)
  end)

  it("asks for its endpoint when none is set", function()
    assert.error_matches(function() t.provider("http-json") end, "set FLUENCE_BACKENDS_URL", 1, true)
  end)
end)
