-- The policy pipeline alone: 10,000 backends (from an attribute file, through
-- the real file provider and merge) through a 5-stage pipeline, in process.
-- Prints "median N ms" over 10 runs after a warm-up.
--   lua5.4 bench/pipeline_bench.lua ATTRS.yaml     (from the source tree, after make)
package.path = "lua/?.lua;" .. package.path
package.cpath = "build/lib/?.so;" .. package.cpath
local sys = require "fluence.sys"
local plugins = require "fluence.plugins"
local sandbox = require "fluence.sandbox"
local api = require("fluence.provider_api").new{}
local opts = { home = "/nonexistent", path = "", source_dir = "." }
opts.api = api
local preg = plugins.load_providers(opts)
local reg = plugins.load_policies{ home = "/nonexistent", path = "", source_dir = "." }
local ok, bs = sandbox.call(preg.get("file").plugin.candidates, 1e12,
  sandbox.readonly{ request = { shots = 1000 }, options = { attributes = { arg[1] } }, api = api })
assert(ok, bs)
local merged = assert(require("fluence.merge").merge{ { provider = "file", backends = bs } })
local pl = assert(require("fluence.pipeline").compile(
  "online-only,require:memory_gb>=16,require:region=us-east-1,min-queue~5,min-cost", { policies = reg }))
pl:run(merged, { shots = 1000 })                 -- warm-up: views are made once per backend
local times = {}
for i = 1, 10 do
  local t0 = sys.monotonic()
  local r = pl:run(merged, { shots = 1000 })
  times[i] = (sys.monotonic() - t0) * 1000
  assert(r.ok, r.error)
end
table.sort(times)
print(("%d backends, 5 stages: median %.1f ms (min %.1f, max %.1f)"):format(#merged, (times[5] + times[6]) / 2,
      times[1], times[10]))
