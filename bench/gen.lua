-- Generates benchmark inputs (run with lua5.4):
--   lua5.4 bench/gen.lua backends N OUT.yaml      attribute file with N backends
--   lua5.4 bench/gen.lua backends-json N OUT.json the same as JSON
--   lua5.4 bench/gen.lua stream MB OBJECTS OUT    a manifest stream of about MB megabytes
--                                                 with OBJECTS Fluence Jobs among ConfigMaps
local what = arg[1]

local function write(path, parts)
  local f = assert(io.open(path, "wb"))
  f:write(table.concat(parts))
  f:close()
end

if what == "backends-json" then
  local n, out = tonumber(arg[2]), arg[3]
  local parts = { '{"version": 1, "backends": [\n' }
  for i = 1, n do
    parts[#parts + 1] = ('%s{"name": "b%05d", "provider": "generic", "region": "%s", "attributes": ' ..
      '{"cost_usd": %.3f, "memory_gb": %d, "throughput": %d, "queue_size": %d}, "strings": {"status": "%s"}}\n')
      :format(i > 1 and "," or "", i, i % 3 == 0 and "us-east-1" or "eu-west-2",
      (i * 7919 % 10007) / 100, 8 * (i % 12 + 1), i * 31 % 997, i * 17 % 101,
      i % 10 == 0 and "OFFLINE" or "ONLINE")
  end
  parts[#parts + 1] = "]}\n"
  write(out, parts)
elseif what == "backends" then
  local n, out = tonumber(arg[2]), arg[3]
  local parts = { "version: 1\nbackends:\n" }
  for i = 1, n do
    parts[#parts + 1] = ("  - name: b%05d\n    provider: generic\n    region: %s\n" ..
      "    attributes: {cost_usd: %.3f, memory_gb: %d, throughput: %d, queue_size: %d}\n" ..
      "    strings: {status: %s}\n"):format(i, i % 3 == 0 and "us-east-1" or "eu-west-2",
      (i * 7919 % 10007) / 100, 8 * (i % 12 + 1), i * 31 % 997, i * 17 % 101,
      i % 10 == 0 and "OFFLINE" or "ONLINE")
  end
  write(out, parts)
elseif what == "stream" then
  local mb, objects, out = tonumber(arg[2]), tonumber(arg[3]), arg[4]
  local target = mb * 1024 * 1024
  local job = [[
# job %d
apiVersion: batch/v1
kind: Job
metadata:
  name: train-%d
  annotations:
    fluence.flux-framework.org/select-policy: "require:memory_gb>=24,min-cost"
spec:
  parallelism: 2
  template:
    metadata:
      labels:
        fluence.flux-framework.org/group: g%d
    spec:
      schedulerName: fluence
      containers:
      - name: worker
        image: trainer:latest
        resources:
          requests: {cpu: "2", memory: 8Gi}
---
]]
  local line = ("x"):rep(100)
  local jobs_bytes = #job:format(0, 0, 0) * objects
  local cm_count = objects
  local per_cm = math.max(200, (target - jobs_bytes) // cm_count)
  local lines = per_cm // (#line + 12)
  local cm = { "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: data-%d\ndata:\n  blob: |\n" }
  for _ = 1, lines do cm[#cm + 1] = "    " .. line .. "\n" end
  cm[#cm + 1] = "---\n"
  local cmt = table.concat(cm)
  local parts = {}
  for i = 1, objects do
    parts[#parts + 1] = job:format(i, i, i)
    parts[#parts + 1] = cmt:format(i)
  end
  write(out, parts)
else
  io.stderr:write("usage: see the header of bench/gen.lua\n")
  os.exit(2)
end
