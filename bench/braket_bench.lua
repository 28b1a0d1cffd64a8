-- Benchmark: the braket-live provider asking 20 devices that each answer
-- after 200 ms (the local fake Braket endpoint, spec/support/braket_server.py),
-- signed and verified.  The Go client asked one device after another (about
-- 20 x 200 ms = 4 s plus an `aws` process per device); we ask all at once.
--
--   lua5.4 bench/braket_bench.lua [devices] [delay_ms] [runs]     (from the source tree, after make)
local root = os.getenv("PWD")
package.cpath = (os.getenv("FLUENCE_CPATH") or (root .. "/build/lib")) .. "/?.so;" .. package.cpath
package.path = root .. "/lua/?.lua;" .. root .. "/spec/?.lua;" .. package.path

local aws = require "fluence.aws"
local http = require "fluence.http"
local json = require "fluence.json"
local sys = require "fluence.sys"
local server = require "support.server"

local N, DELAY, RUNS = tonumber(arg[1]) or 20, tonumber(arg[2]) or 200, tonumber(arg[3]) or 5
local AK, SK = "AKIAFLUENCEBENCH0000", "fluence/bench/secret/0123456789abcdefghij"

local s = server.start(root .. "/spec/support/braket_server.py", { "--key", AK .. "=" .. SK })
local ok, err = pcall(function()
  local base = "http://127.0.0.1:" .. s.port
  local devices, backends = {}, {}
  for i = 1, N do
    local arn = ("arn:aws:braket:us-east-1::device/qpu/bench/Device-%02d"):format(i)
    devices[arn] = { template = "ionq_aria", delay_ms = DELAY }
    backends[i] = { name = ("qpu%02d"):format(i), attrs = { device_arn = arn } }
  end
  local cfg = json.encode{ devices = devices }

  local f = assert(io.open(root .. "/providers/braket-live.lua"))
  local src = f:read("a")
  f:close()
  local okp, plugins = pcall(require, "fluence.plugins")
  local provider = okp and plugins.load_file and plugins.load_file("provider", "providers/braket-live.lua", {})
                   or assert(load(src, "@providers/braket-live.lua", "t", _ENV))()
  local env = { AWS_ACCESS_KEY_ID = AK, AWS_SECRET_ACCESS_KEY = SK, AWS_REGION = "us-east-1",
                AWS_ENDPOINT_URL_BRAKET = base }
  local api = setmetatable({ aws = setmetatable({ credentials = function() return aws.credentials{ env = env } end },
                                                { __index = aws }) },
                           { __index = require("fluence.provider_api").new{} })

  local times = {}
  for r = 1, RUNS do
    assert(http.request{ url = base .. "/_control/config", method = "POST", body = cfg })
    local t0 = sys.monotonic()
    local out, notes = provider.candidates{ request = { shots = 1000 }, options = {}, api = api, backends = backends }
    times[r] = sys.monotonic() - t0
    if notes and #notes > 0 then error("unexpected notes: " .. table.concat(notes, "; ")) end
    assert(#out == N, "expected " .. N .. " backends")
  end
  local st = json.decode(assert(http.request{ url = base .. "/_control/stats" }).body)
  table.sort(times)
  print(("braket-live: %d devices x %d ms each, %d runs: median %.3f s (min %.3f, max %.3f); " ..
         "max %d in flight; one after another would take >= %.1f s")
        :format(N, DELAY, RUNS, times[(RUNS + 1) // 2], times[1], times[RUNS], st.max_concurrent, N * DELAY / 1000))
end)
s.stop()
if not ok then io.stderr:write("braket_bench: ", tostring(err), "\n") os.exit(1) end
