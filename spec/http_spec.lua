local http = require "fluence.http"
local json = require "fluence.json"
local server = require "support.server"

describe("fluence.http", function()
  local s, base
  setup(function()
    s = server.start("spec/support/http_server.py")
    base = "http://127.0.0.1:" .. s.port
  end)
  teardown(function() s.stop() end)

  it("sends method, headers and body and returns status, headers, body", function()
    local r = assert(http.request{ url = base .. "/echo?x=1", method = "POST",
                                   headers = { ["X-Test"] = "yes", "X-Other: 2" }, body = "hello" })
    assert.are.equal(200, r.status)
    assert.are.equal("application/json", r.headers["content-type"])
    local e = json.decode(r.body)
    assert.are.equal("POST", e.method)
    assert.are.equal("/echo?x=1", e.path)
    assert.are.equal("yes", e.headers["x-test"])
    assert.are.equal("2", e.headers["x-other"])
    assert.are.equal("hello", e.body)
  end)

  it("returns HTTP error statuses as responses", function()
    local r = assert(http.request{ url = base .. "/status/503" })
    assert.are.equal(503, r.status)
  end)

  it("times out with a message naming the URL but not the query", function()
    local r, err = http.request{ url = base .. "/delay?ms=2000&token=SECRET", timeout = 0.3 }
    assert.is_nil(r)
    assert.matches("^http://127%.0%.0%.1:%d+/delay: ", err)
    assert.is_nil(err:find("SECRET", 1, true))
  end)

  it("refuses answers larger than max_body", function()
    local r, err = http.request{ url = base .. "/big?bytes=100000", max_body = 1000 }
    assert.is_nil(r)
    assert.matches("larger than 1000 bytes", err)
  end)

  -- a plugin's numbers reach C: out of range they were cast to long/size_t,
  -- undefined behaviour (UBSan aborts on it); now they are a clear error
  for _, bad in ipairs {
    { timeout = 1e300 }, { timeout = -1 }, { connect_timeout = 0 / 0 }, { max_body = -5 }, { max_body = 1e30 },
  } do
    local key, value = next(bad)
    it("refuses " .. key .. " = " .. tostring(value) .. " before any request is made", function()
      local req = { url = base .. "/" }
      req[key] = value
      local ok, err = pcall(http.request, req)
      assert.is_false(ok)
      assert.matches("http request: " .. key .. " must be a number from 0 to %d+$", err)
    end)
  end

  -- libcurl takes a timeout of 0 as none at all: a request that could wait
  -- forever is refused
  it("refuses timeout = 0 before any request is made", function()
    local ok, err = pcall(http.request, { url = base .. "/", timeout = 0 })
    assert.is_false(ok)
    assert.matches("http request: timeout must be more than 0 seconds", err)
  end)

  it("reports connection failures", function()
    local r, err = http.request{ url = "http://127.0.0.1:1/", timeout = 2 }
    assert.is_nil(r)
    assert.matches("127%.0%.0%.1", err)
  end)

  it("runs many requests at once: total time near the slowest", function()
    local reqs = {}
    for i = 1, 10 do reqs[i] = { url = base .. "/delay?ms=300" } end
    reqs[11] = { url = base .. "/delay?ms=3000", timeout = 0.5 }
    local t0 = require("fluence.sys").monotonic()
    local rs = http.request_many(reqs)
    local dt = require("fluence.sys").monotonic() - t0
    assert.are.equal(11, #rs)
    for i = 1, 10 do assert.are.equal(200, rs[i].status) end
    assert.is_string(rs[11].error)
    assert.is_true(dt < 2.0, "took " .. dt .. " s")
  end)
end)
