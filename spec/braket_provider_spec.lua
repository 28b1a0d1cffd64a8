-- The braket-live provider against a local fake Braket endpoint
-- (spec/support/braket_server.py) that verifies SigV4 signatures and serves
-- the canned GetDevice answers of spec/fixtures/braket/, throttling, errors
-- and delays.
local aws = require "fluence.aws"
local http = require "fluence.http"
local json = require "fluence.json"
local sys = require "fluence.sys"
local server = require "support.server"
local cost = require "fluence.cost"

-- What the cost model makes of a backend's prices once every provider ran
-- (the provider itself gives unit prices only).
local function cost_of(a, shots)
  return (cost.estimate(a, cost.workload{ shots = shots or 1000 }))
end

-- Recognisable fake credentials: none of these may appear in any output.
local AK, SK = "AKIAFLUENCEFAKE12345", "fluence/FAKE+secret/0123456789abcdefghij"
local AKT, SKT, TOK = "ASIAFLUENCEFAKETOKEN", "fluence/FAKE+tokensecret/0123456789abcd", "FLUENCEfakeSESSIONtoken+/0123456789=="

local FIX = {
  sv1 = "arn:aws:braket:::device/quantum-simulator/amazon/sv1",
  dm1 = "arn:aws:braket:::device/quantum-simulator/amazon/dm1",
  tn1 = "arn:aws:braket:::device/quantum-simulator/amazon/tn1",
  ionq_forte = "arn:aws:braket:us-east-1::device/qpu/ionq/Forte-1",
  ionq_aria = "arn:aws:braket:us-east-1::device/qpu/ionq/Aria-1",
  iqm_garnet = "arn:aws:braket:eu-north-1::device/qpu/iqm/Garnet",
  rigetti_ankaa3 = "arn:aws:braket:us-west-1::device/qpu/rigetti/Ankaa-3",
  quera_aquila = "arn:aws:braket:us-east-1::device/qpu/quera/Aquila",
}

local function load_provider()
  local ok, plugins = pcall(require, "fluence.plugins")
  if ok and plugins.load_file then
    return plugins.load_file("provider", "providers/braket-live.lua", {})
  end
  local f = assert(io.open("providers/braket-live.lua"))
  local src = f:read("a")
  f:close()
  local env = { ipairs = ipairs, pairs = pairs, next = next, type = type, tostring = tostring,
                tonumber = tonumber, pcall = pcall, error = error, select = select,
                setmetatable = setmetatable, string = string, table = table, math = math }
  return assert(load(src, "@providers/braket-live.lua", "t", env))()
end

-- Every string inside v (keys too).
local function strings(v, out, seen)
  out, seen = out or {}, seen or {}
  if type(v) == "string" then out[#out + 1] = v
  elseif type(v) == "table" and not seen[v] then
    seen[v] = true
    for k, x in pairs(v) do strings(k, out, seen); strings(x, out, seen) end
  end
  return out
end

local function assert_no_secrets(...)
  for _, s in ipairs(strings({ ... })) do
    for _, secret in ipairs{ AK, SK, AKT, SKT, TOK } do
      assert.is_nil(s:find(secret, 1, true), "credential leaked into: " .. s)
    end
    assert.is_nil(s:find("Signature=", 1, true), "signature leaked into: " .. s)
  end
end

describe("braket-live provider", function()
  local s, base, provider, tmp

  local function control(cfg)
    local r = assert(http.request{ url = base .. "/_control/config", method = "POST", body = json.encode(cfg) })
    assert.are.equal(200, r.status)
  end
  local function stats()
    return json.decode(assert(http.request{ url = base .. "/_control/stats" }).body)
  end

  local function env(extra)
    local e = { AWS_ACCESS_KEY_ID = AK, AWS_SECRET_ACCESS_KEY = SK, AWS_REGION = "us-west-2",
                AWS_ENDPOINT_URL_BRAKET = base, HOME = tmp }
    for k, v in pairs(extra or {}) do e[k] = v ~= false and v or nil end
    return e
  end

  -- Runs the provider like the selection does: a read-only ctx, in the sandbox.
  local function run(backends, opts)
    opts = opts or {}
    local basic = require("fluence.provider_api").new{ request_timeout = opts.request_timeout }
    local the_env = opts.env or env()
    local awsview = setmetatable({ credentials = function() return aws.credentials{ env = the_env } end },
                                 { __index = aws })
    local api = setmetatable({ aws = awsview }, { __index = basic })
    local ok_sb, sandbox = pcall(require, "fluence.sandbox")
    local ctx = { request = opts.request or { shots = 1000 }, options = opts.options or {},
                  api = api, backends = backends }
    local out, notes
    if ok_sb then
      local ok
      ok, out, notes = sandbox.call(provider.candidates, sandbox.DEFAULT_BUDGET, sandbox.readonly(ctx))
      assert(ok, out)
    else
      out, notes = provider.candidates(ctx)
    end
    assert_no_secrets(out, notes)
    local by = {}
    for _, b in ipairs(out) do by[b.name] = b.attrs end
    return by, notes or {}, out
  end

  local function backends(names)
    local list = {}
    for _, n in ipairs(names) do list[#list + 1] = { name = n, attrs = { device_arn = FIX[n] or n } } end
    return list
  end

  setup(function()
    tmp = os.tmpname()
    os.remove(tmp)
    os.execute("mkdir -p '" .. tmp .. "'")
    s = server.start("spec/support/braket_server.py", { "--key", AK .. "=" .. SK,
          "--key", AKT .. "=" .. SKT .. "=" .. TOK, "--sim-region", "us-west-2" })
    base = "http://127.0.0.1:" .. s.port
    provider = load_provider()
  end)
  teardown(function()
    s.stop()
    os.execute("rm -rf '" .. tmp .. "'")
  end)
  before_each(function() control{} end)

  it("fills in published prices and qubits but never overrides the attribute file's (Go parity)", function()
    local list = { { name = "ionq_forte", attrs = { device_arn = FIX.ionq_forte, cost_usd = 7, qubits = 99 } } }
    local by = run(list)
    assert.is_nil(by.ionq_forte.cost_usd)         -- the file's 7 stands after merging
    assert.is_nil(by.ionq_forte.qubits)
    assert.is_string(by.ionq_forte.status)        -- live state always comes through
    assert.is_number(by.ionq_forte.queue_size)
  end)

  it("declares itself", function()
    assert.are.equal("braket-live", provider.name)
    assert.are.equal("braket", provider.family)
    assert.is_string(provider.description)
  end)

  it("reads status, queues, type, provider and price of every device", function()
    local names = { "sv1", "dm1", "tn1", "ionq_forte", "ionq_aria", "iqm_garnet", "rigetti_ankaa3", "quera_aquila" }
    local list = backends(names)
    list[#list + 1] = { name = "gpu-l4", attrs = { cost_usd = 0.8 } }         -- no device_arn: not asked
    local by, notes, out = run(list)
    assert.are.same({}, notes)
    assert.are.equal(#names, #out)
    assert.is_nil(by["gpu-l4"])

    local f = by.ionq_forte
    assert.are.equal("ONLINE", f.status)
    assert.are.equal(4001, f.queue_size)                  -- ">4000"
    assert.are.equal(12, f.priority_queue_size)
    assert.are.equal(3, f.jobs_queue_size)
    assert.are.equal("QPU", f.device_type)
    assert.are.equal("IonQ", f.provider_name)
    assert.are.equal(0.08, f.cost_per_shot)
    assert.are.equal(0.30, f.cost_per_task)
    assert.is_nil(f.cost_usd)                          -- the cost model's, after merging
    assert.is_true(math.abs(cost_of(f) - (0.30 + 1000 * 0.08)) < 1e-9)
    assert.are.equal(36, f.qubits)

    assert.are.equal(5, by.iqm_garnet.queue_size)
    assert.is_true(math.abs(cost_of(by.iqm_garnet) - (0.30 + 1000 * 0.00145)) < 1e-9)
    assert.are.equal("OFFLINE", by.rigetti_ankaa3.status)
    assert.are.equal(0.0009, by.rigetti_ankaa3.cost_per_shot)

    local sv1 = by.sv1
    assert.are.equal("SIMULATOR", sv1.device_type)
    assert.are.equal("Amazon Braket", sv1.provider_name)
    assert.are.equal(0, sv1.queue_size)
    assert.are.equal(0.075, sv1.cost_per_minute)
    assert.is_nil(sv1.cost_per_shot)
    assert.is_nil(sv1.cost_per_task)
    assert.is_true(math.abs(cost_of(sv1) - 0.05 * 0.075) < 1e-12)
    assert.are.equal(0.275, by.tn1.cost_per_minute)
    assert.are.equal(3, by.dm1.queue_size)

    local st = stats()
    assert.are.equal(0, st.bad_signatures)             -- every region and signature right
    assert.are.equal(#names, st.requests)
  end)

  it("prices for the request's shots", function()
    local by = run(backends{ "ionq_aria" }, { request = { shots = 100 } })
    assert.is_true(math.abs(cost_of(by.ionq_aria, 100) - (0.30 + 100 * 0.03)) < 1e-9)
  end)

  it("counts an unreadable or missing queue as very large", function()
    control{ devices = {
      [FIX.ionq_aria] = { patch = { deviceQueueInfo = { { queue = "QUANTUM_TASKS_QUEUE", queuePriority = "Normal", queueSize = "lots" } } } },
      [FIX.quera_aquila] = { patch = { deviceQueueInfo = {} } },
    } }
    local by = run(backends{ "ionq_aria", "quera_aquila" })
    assert.are.equal(2147483647, by.ionq_aria.queue_size)
    assert.are.equal(2147483647, by.quera_aquila.queue_size)
    assert.is_nil(by.quera_aquila.priority_queue_size)
  end)

  it("retries throttling, only for the throttled device", function()
    control{ devices = { [FIX.ionq_forte] = { throttle = 2 } } }
    local by, notes = run(backends{ "ionq_forte", "iqm_garnet" }, { options = { braket_backoff = 0.01 } })
    assert.are.same({}, notes)
    assert.are.equal("ONLINE", by.ionq_forte.status)
    assert.are.equal(4001, by.ionq_forte.queue_size)
    local st = stats()
    assert.are.equal(3, st.by_arn[FIX.ionq_forte])
    assert.are.equal(1, st.by_arn[FIX.iqm_garnet])
  end)

  it("retries 5xx a bounded number of times, then marks the device UNKNOWN", function()
    control{ devices = { [FIX.ionq_forte] = { fail5xx = 100 }, [FIX.sv1] = { fail5xx = 1 } } }
    local by, notes = run(backends{ "ionq_forte", "sv1", "iqm_garnet" },
                          { options = { ["braket-attempts"] = 3, braket_backoff = 0.01 } })
    assert.are.same({ status = "UNKNOWN" }, by.ionq_forte)
    assert.are.equal("ONLINE", by.sv1.status)
    assert.are.equal("ONLINE", by.iqm_garnet.status)
    assert.are.same({ "braket-live: ionq_forte: InternalServiceException: We encountered an internal error. " ..
                      "Please try again. (HTTP 500, after 3 attempts)" }, notes)
    local st = stats()
    assert.are.equal(3, st.by_arn[FIX.ionq_forte])
    assert.are.equal(2, st.by_arn[FIX.sv1])
    assert.are.equal(1, st.by_arn[FIX.iqm_garnet])
  end)

  it("marks a device Braket does not know UNKNOWN with a note, without retrying", function()
    local ghost = "arn:aws:braket:us-east-1::device/qpu/nobody/Ghost"
    local by, notes = run({ { name = "ghost", attrs = { device_arn = ghost } },
                            { name = "sv1", attrs = { device_arn = FIX.sv1 } } })
    assert.are.same({ status = "UNKNOWN" }, by.ghost)
    assert.are.equal("ONLINE", by.sv1.status)
    assert.are.same({ "braket-live: ghost: ResourceNotFoundException: Braket device '" .. ghost ..
                      "' not found (HTTP 404)" }, notes)
    assert.are.equal(1, stats().by_arn[ghost])
  end)

  it("reports access denied", function()
    control{ devices = { [FIX.ionq_forte] = { status = 403 } } }
    local by, notes = run(backends{ "ionq_forte" })
    assert.are.same({ status = "UNKNOWN" }, by.ionq_forte)
    assert.matches("^braket%-live: ionq_forte: AccessDeniedException: User: .* is not authorized to perform: " ..
                   "braket:GetDevice .*%(HTTP 403%)$", notes[1])
  end)

  it("marks every device UNKNOWN when the signature is refused, leaking nothing", function()
    local by, notes = run(backends{ "ionq_forte", "sv1" },
                          { env = env{ AWS_ACCESS_KEY_ID = AKT, AWS_SECRET_ACCESS_KEY = "wrong" .. SKT, AWS_SESSION_TOKEN = TOK } })
    assert.are.same({ status = "UNKNOWN" }, by.ionq_forte)
    assert.are.same({ status = "UNKNOWN" }, by.sv1)
    assert.are.equal(2, #notes)
    for _, n in ipairs(notes) do
      assert.matches("InvalidSignatureException: The request signature we calculated does not match", n, 1, true)
      assert.matches("(HTTP 403)", n, 1, true)
      assert.is_nil(n:find("Canonical String", 1, true))
    end
    assert.are.equal(2, stats().bad_signatures)
  end)

  it("signs the session token when there is one", function()
    local by, notes = run(backends{ "iqm_garnet" },
                          { env = env{ AWS_ACCESS_KEY_ID = AKT, AWS_SECRET_ACCESS_KEY = SKT, AWS_SESSION_TOKEN = TOK } })
    assert.are.same({}, notes)
    assert.are.equal("ONLINE", by.iqm_garnet.status)
  end)

  it("rejects an unknown key", function()
    local by, notes = run(backends{ "iqm_garnet" }, { env = env{ AWS_ACCESS_KEY_ID = "AKIAFLUENCEUNKNOWN00" } })
    assert.are.same({ status = "UNKNOWN" }, by.iqm_garnet)
    assert.matches("UnrecognizedClientException", notes[1], 1, true)
  end)

  it("without credentials marks every device UNKNOWN with one run-wide note naming what was tried", function()
    local by, notes = run(backends{ "ionq_forte", "sv1" }, { env = { HOME = tmp, AWS_ENDPOINT_URL_BRAKET = base } })
    assert.are.same({ status = "UNKNOWN" }, by.ionq_forte)
    assert.are.same({ status = "UNKNOWN" }, by.sv1)
    assert.are.equal(1, #notes)
    assert.is_true(notes[1].run)      -- about the run, not the object: said once on stderr
    local text = notes[1].text
    assert.matches("^braket%-live: no AWS credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set", text)
    assert.matches(tmp .. "/.aws/credentials", text, 1, true)
    assert.matches("; devices marked UNKNOWN$", text)
    assert.are.equal(0, stats().requests)
  end)

  it("takes the endpoint from the braket_endpoint option", function()
    local by, notes = run(backends{ "dm1" }, { env = env{ AWS_ENDPOINT_URL_BRAKET = false },
                                               options = { braket_endpoint = base .. "/" } })
    assert.are.same({}, notes)
    assert.are.equal("ONLINE", by.dm1.status)
  end)

  it("needs a region for simulator ARNs", function()
    local by, notes = run(backends{ "sv1", "iqm_garnet" }, { env = env{ AWS_REGION = false } })
    assert.are.same({ status = "UNKNOWN" }, by.sv1)
    assert.are.equal("ONLINE", by.iqm_garnet.status)
    assert.matches("^braket%-live: sv1: no AWS region for a simulator ARN", notes[1])
  end)

  it("refuses ARNs that are not Braket devices", function()
    local by, notes = run({ { name = "odd", attrs = { device_arn = "arn:aws:s3:::bucket" } } })
    assert.are.same({ status = "UNKNOWN" }, by.odd)
    assert.are.same({ "braket-live: odd: arn:aws:s3:::bucket: not a Braket device ARN" }, notes)
  end)

  it("bounds each call with the timeout and does not retry timeouts", function()
    control{ devices = { [FIX.tn1] = { delay_ms = 3000 } } }
    local t0 = sys.monotonic()
    -- dm1 first: http.c's CURLOPT_PIPEWAIT makes transfers to a plain-http
    -- host wait for the first one's answer (see docs/braket.md)
    local by, notes = run(backends{ "dm1", "tn1" }, { options = { braket_timeout = 0.4 } })
    local dt = sys.monotonic() - t0
    assert.are.same({ status = "UNKNOWN" }, by.tn1)
    assert.are.equal("ONLINE", by.dm1.status, table.concat(notes, "\n"))
    assert.matches("^braket%-live: tn1: request failed: .*[Tt]imed? ?out", notes[1])
    assert.is_true(dt < 2.5, "took " .. dt)
    assert.are.equal(1, stats().by_arn[FIX.tn1])
  end)

  -- --request-timeout bounds every call, retry and wait (lua/fluence/retry.lua,
  -- the Kubernetes client's policy): with the defaults a device throttled
  -- forever took 4 calls of up to 10 s each and the waits between, ~55 s
  describe("within --request-timeout", function()
    it("throttled forever: asked again only while the wait fits, and says so", function()
      control{ devices = { [FIX.ionq_forte] = { throttle = 1000 } } }
      local by, notes = run(backends{ "ionq_forte" }, { request_timeout = 1.2,
                                                        options = { braket_attempts = 10, braket_backoff = 0.5 } })
      assert.are.same({ status = "UNKNOWN" }, by.ionq_forte)
      assert.are.equal(1, #notes)
      assert.matches("^braket%-live: ionq_forte: ThrottlingException: [^\n]*%(HTTP 429[^)]*%); gave up after [12] " ..
                     "attempts?: another after [%d.]+ s would pass %-%-request%-timeout %(1%.2 s%)$", notes[1])
      -- 0.5 s then 1 s of backoff: the second wait never fits in 1.2 s (10 calls without the budget)
      local n = stats().by_arn[FIX.ionq_forte]
      assert.is_true(n >= 1 and n <= 2, n .. " calls")
    end)

    it("an attempt gets at most what is left of it", function()
      control{ devices = { [FIX.tn1] = { delay_ms = 3000 } } }
      local by, notes = run(backends{ "tn1" }, { request_timeout = 0.5 })      -- braket_timeout: 10
      assert.are.same({ status = "UNKNOWN" }, by.tn1)
      assert.matches("^braket%-live: tn1: request failed: [^\n]*[Tt]imed? ?out after [45]%d%d milliseconds", notes[1])
    end)

    it("select --request-timeout reaches the provider", function()
      local cli = require "support.cli"
      control{ devices = { [FIX.ionq_forte] = { throttle = 1000 } } }
      local dir = cli.tmpdir()
      local attrs = cli.write(dir .. "/attrs.yaml", ("backends:\n  - name: forte\n    device_arn: %s\n" ..
                                                    "  - name: garnet\n    device_arn: %s\n"):format(FIX.ionq_forte,
                                                                                                  FIX.iqm_garnet))
      local r = cli.run{ "select", "-f", cli.write(dir .. "/pod.yaml", cli.POD:format("min-queue")), "--attributes",
                         attrs, "--offline", "--request-timeout", "0.3", timeout = 60,
                         env = { AWS_ACCESS_KEY_ID = AK, AWS_SECRET_ACCESS_KEY = SK, AWS_REGION = "us-west-2",
                                 AWS_ENDPOINT_URL_BRAKET = base, HOME = dir } }
      cli.cleanup()
      assert.are.equal(0, r.code, r.err)
      assert.matches('selected backend "garnet"', r.err, 1, true)
      assert.matches("braket%-live: forte: ThrottlingException: [^\n]*; gave up after [123] attempts?: another after " ..
                     "[%d.]+ s would pass %-%-request%-timeout %(0%.3 s%)\n", r.err)
    end)
  end)

  it("asks 20 devices at once: 20 x 200 ms well under a second or two", function()
    local devices, list = {}, {}
    for i = 1, 20 do
      local arn = ("arn:aws:braket:us-east-1::device/qpu/bench/Device-%02d"):format(i)
      devices[arn] = { template = "ionq_aria", delay_ms = 200 }
      list[i] = { name = ("qpu%02d"):format(i), attrs = { device_arn = arn } }
    end
    control{ devices = devices }
    local t0 = sys.monotonic()
    local by, notes = run(list)
    local dt = sys.monotonic() - t0
    assert.are.same({}, notes)
    for i = 1, 20 do assert.are.equal("ONLINE", by[("qpu%02d"):format(i)].status) end
    assert.is_true(dt < 2.0, "20 devices took " .. dt .. " s")
    local st = stats()
    assert.are.equal(20, st.requests)
    assert.is_true(st.max_concurrent >= 5, "max concurrent " .. st.max_concurrent)
  end)

  it("keeps the other attributes when deviceCapabilities is unreadable, and says so", function()
    control{ devices = { [FIX.ionq_aria] = { patch = { deviceCapabilities = "{not json" } } } }
    local by, notes = run(backends{ "ionq_aria" })
    assert.are.equal("ONLINE", by.ionq_aria.status)
    assert.are.equal(37, by.ionq_aria.queue_size)
    assert.is_nil(by.ionq_aria.cost_usd)
    assert.are.equal(1, #notes)
    assert.matches("^braket%-live: ionq_aria: deviceCapabilities unreadable: ", notes[1])
  end)

  describe("helpers", function()
    it("reads queue sizes", function()
      assert.are.equal(12, provider.queue_number("12"))
      assert.are.equal(4001, provider.queue_number(">4000"))
      assert.are.equal(7, provider.queue_number(7))
      assert.is_nil(provider.queue_number("many"))
      assert.is_nil(provider.queue_number(nil))
    end)

    it("finds the region in an ARN", function()
      assert.are.equal("eu-north-1", provider.arn_region(FIX.iqm_garnet))
      assert.is_false(provider.arn_region(FIX.sv1))
      local r, why = provider.arn_region("arn:aws:braket:us-east-1::quantum-task/abc")
      assert.is_nil(r)
      assert.are.equal("not a Braket device ARN", why)
    end)

    it("prices per shot, minute, hour and task", function()
      local function caps(price, unit) return json.encode{ service = { deviceCost = { price = price, unit = unit } } } end
      local a = provider.attributes({ deviceType = "QPU", deviceStatus = "ONLINE", deviceCapabilities = caps(0.01, "shot") }, json)
      assert.are.same({ 0.01, 0.30 }, { a.cost_per_shot, a.cost_per_task })
      assert.is_nil(a.cost_usd)
      assert.is_true(math.abs(cost_of(a, 500) - 5.30) < 1e-9)
      a = provider.attributes({ deviceType = "SIMULATOR", deviceCapabilities = caps(0.001, "shot") }, json)
      assert.is_nil(a.cost_per_task)
      assert.is_true(math.abs(cost_of(a, 500) - 0.5) < 1e-9)
      a = provider.attributes({ deviceType = "SIMULATOR", deviceCapabilities = caps(6, "hour") }, json)
      assert.is_true(math.abs(a.cost_per_minute - 0.1) < 1e-9 and math.abs(cost_of(a, 500) - 0.005) < 1e-9)
      a = provider.attributes({ deviceType = "QPU", deviceCapabilities = caps("2.5", "task") }, json)
      assert.are.same({ 2.5, 2.5 }, { a.cost_per_task, cost_of(a, 500) })
      a = provider.attributes({ deviceType = "QPU" }, json)
      assert.are.same({ status = "UNKNOWN", device_type = "QPU", queue_size = 2147483647 }, a)
    end)
  end)

  it("returns nothing when no backend has a device_arn", function()
    local by, notes, out = run({ { name = "cpu", attrs = { cost_usd = 1 } } })
    assert.are.same({}, out)
    assert.are.same({}, notes)
    assert.is_nil(next(by))
    assert.are.equal(0, stats().requests)
  end)
end)
