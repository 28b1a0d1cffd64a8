-- The cluster reads of fits:now against a REAL kube-apiserver at scale
-- (issue 27, point 10): envtest's kube-apiserver and etcd (as the specs
-- start them, spec/support/envtest.lua) filled with NODES nodes and PODS
-- pods bound to them, then, per way of reading:
--
--   etcd, paged    GET /api/v1/nodes?limit=2000 and /api/v1/pods?limit=5000&
--                  fieldSelector=... with continue: every page fresh from etcd
--   watch cache    the same with resourceVersion=0 on the first request: the
--                  server answers from its watch cache (on 1.26 the limit is
--                  then ignored: one answer holds the whole list)
--
-- what it costs us (wall time of cluster.load, the bytes read, our peak
-- memory: the whole `fluence select` process, /usr/bin/time) and what it
-- costs the server (the CPU time kube-apiserver and etcd spent, from
-- /proc/PID/stat, and the server's own answer sizes), the median of RUNS.
-- Also the same lists from the cache as JSON and as protobuf (Accept:
-- application/vnd.kubernetes.protobuf), transferred only: does it pay?
--
--   make && lua5.4 bench/apiserver_scale.lua [NODES [PODS [RUNS]]]
--   (needs build/envtest or KUBEBUILDER_ASSETS, as `make test`; filling
--   50,000 pods takes a few minutes)
package.path = "./lua/?.lua;./spec/?.lua;" .. package.path
package.cpath = "./build/lib/?.so;" .. package.cpath
local envtest = require "support.envtest"
local json = require "fluence.json"
local cli = require "support.cli"
local sys = require "fluence.sys"
local kubeclient = require "fluence.kubeclient"
local cluster = require "fluence.cluster"

local NODES, PODS, RUNS = tonumber(arg[1]) or 5000, tonumber(arg[2]) or 50000, tonumber(arg[3]) or 5

local api = assert(envtest.get())
local admin = kubeclient.new{ kubeconfig = api.kubeconfig, timeout = 120 }
local NS = "bench"
io.stderr:write(("filling %s with %d nodes and %d pods...\n"):format(api.url, NODES, PODS))
local t0 = sys.monotonic()

-- many requests at once, WIDTH at a time
local WIDTH = 48
local function all(reqs)
  for i = 1, #reqs, WIDTH do
    local batch = {}
    for j = i, math.min(#reqs, i + WIDTH - 1) do
      local r = reqs[j]
      batch[#batch + 1] = { admin, r[1], r[2], r[3], r[4] }
    end
    for _, res in ipairs(kubeclient.request_many(batch)) do
      if res.error then error(res.error.message) end
    end
  end
end

admin:request("POST", "/api/v1/namespaces", { apiVersion = "v1", kind = "Namespace", metadata = { name = NS } })
local nodes, status = {}, {}
for i = 1, NODES do
  local name = ("node-%05d"):format(i)
  nodes[#nodes + 1] = { "POST", "/api/v1/nodes", { apiVersion = "v1", kind = "Node", metadata = { name = name,
    labels = { ["kubernetes.io/hostname"] = name, ["node.kubernetes.io/instance-type"] = "p4d.24xlarge",
               ["topology.kubernetes.io/zone"] = "us-east-1" .. ("abc"):sub(i % 3 + 1, i % 3 + 1) } } } }
  status[#status + 1] = { "PATCH", "/api/v1/nodes/" .. name .. "/status", json.encode{ status = {
    capacity = { cpu = "96", memory = "1152Gi", ["nvidia.com/gpu"] = "8", pods = "110" },
    allocatable = { cpu = "95500m", memory = "1120Gi", ["nvidia.com/gpu"] = "8", pods = "110" },
    nodeInfo = { kubeletVersion = "v1.26.15", containerRuntimeVersion = "containerd://1.7.2",
                 kernelVersion = "5.15.0", osImage = "Ubuntu 22.04", architecture = "amd64", operatingSystem = "linux",
                 machineID = "m" .. i, systemUUID = "u" .. i, bootID = "b" .. i, kubeProxyVersion = "v1.26.15" } } },
    "application/merge-patch+json" }
end
all(nodes)
all(status)
io.stderr:write(("  %d nodes in %.0f s\n"):format(NODES, sys.monotonic() - t0))
local pods = {}
for i = 1, PODS do
  pods[#pods + 1] = { "POST", ("/api/v1/namespaces/%s/pods"):format(NS), { apiVersion = "v1", kind = "Pod",
    metadata = { name = ("train-%06d"):format(i), labels = { app = "train", shard = tostring(i % 64) } },
    spec = { nodeName = ("node-%05d"):format((i - 1) % NODES + 1), schedulerName = "fluence",
             containers = json.array{ { name = "worker", image = "registry.example.com/ml/train:v1.2.3",
               env = json.array{ { name = "RANK", value = tostring(i) }, { name = "WORLD", value = "64" } },
               ports = json.array{ { containerPort = 29500 } },
               resources = { requests = { cpu = "1500m", memory = "8Gi" }, limits = { memory = "8Gi" } } } } } } }
  if #pods == 2000 then
    all(pods)
    pods = {}
    io.stderr:write(("  %d pods, %.0f s\n"):format(i, sys.monotonic() - t0))
  end
end
all(pods)
io.stderr:write(("filled in %.0f s\n"):format(sys.monotonic() - t0))

-- CPU seconds a process has used (utime + stime)
local TICK = tonumber((io.popen("getconf CLK_TCK"):read("l"))) or 100
local function cpu(pid)
  local stat = cli.slurp("/proc/" .. pid .. "/stat") or ""
  local rest = stat:match("%) (.*)$") or ""
  local f = {}
  for w in rest:gmatch("%S+") do f[#f + 1] = w end
  return ((tonumber(f[12]) or 0) + (tonumber(f[13]) or 0)) / TICK
end
local function server_cpu() return cpu(api.pids[1]) + cpu(api.pids[2]) end

local function median(t)
  table.sort(t)
  return t[(#t + 1) // 2]
end

-- one cold read, as fits:now reads them: what = {nodes = bool, pods = bool},
-- cache = {nodes = bool, usage = bool} (cluster.FROM_CACHE)
local function read(what, cache)
  cluster.FROM_CACHE = cache
  local cl = cluster.open({}, { kubeconfig = api.kubeconfig, ["request-timeout"] = "300" })
  local c0, w0 = server_cpu(), sys.monotonic()
  cluster.load(cl.list, { nodes = what.nodes, pods = what.pods })
  local wall, scpu = sys.monotonic() - w0, server_cpu() - c0
  local c = cl.list[1]
  assert(not c.nodes_error and not c.usage_error, tostring(c.nodes_error or c.usage_error))
  collectgarbage()
  return wall, scpu
end

-- the same lists asked with curl from the watch cache (one answer each:
-- the limit is ignored there), JSON or protobuf: bytes, time, the server's CPU
local function curl(accept)
  local sel = "spec.nodeName%21%3D%2Cstatus.phase%21%3DSucceeded%2Cstatus.phase%21%3DFailed"
  local bytes, c0, w0 = 0, server_cpu(), sys.monotonic()
  for _, what in ipairs{ { "nodes", nil }, { "pods", sel } } do
    local url = ("%s/api/v1/%s?resourceVersion=0%s"):format(api.url, what[1],
                                                             what[2] and ("&fieldSelector=" .. what[2]) or "")
    local p = io.popen(("curl -s -o /dev/null -w '%%{size_download}' --cacert %s -H 'Authorization: Bearer %s' " ..
                        "-H 'Accept: %s' '%s'"):format(api.pki .. "/ca.crt", api.tokens.admin, accept, url))
    bytes = bytes + (tonumber(p:read("a")) or 0)
    p:close()
  end
  return sys.monotonic() - w0, server_cpu() - c0, bytes
end

local rows = {}
for _, m in ipairs{
  { "the nodes, etcd, paged (limit 2000 + continue)", { nodes = true }, { nodes = false } },
  { "the nodes, watch cache (resourceVersion=0)", { nodes = true }, { nodes = true } },
  { "the pods, etcd, paged (limit 5000 + continue)", { pods = true }, { usage = false } },
  { "the pods, watch cache (resourceVersion=0)", { pods = true }, { usage = true } },
} do
  local walls, cpus = {}, {}
  read(m[2], m[3])                   -- warm: the server's caches, our code
  for _ = 1, RUNS do
    local w, c = read(m[2], m[3])
    walls[#walls + 1], cpus[#cpus + 1] = w, c
  end
  rows[#rows + 1] = ("| cluster.load: %s | %.0f ms | %.2f s |"):format(m[1], median(walls) * 1000, median(cpus))
end

-- whole process: fluence select with fits:now, each way (peak memory too)
local dir = cli.tmpdir()
local job = cli.write(dir .. "/gang.yaml", [[
apiVersion: batch/v1
kind: Job
metadata:
  name: gang
  annotations:
    fluence.flux-framework.org/select-policy: "fits:now,min-cost"
spec:
  parallelism: 64
  template:
    spec:
      schedulerName: fluence
      restartPolicy: Never
      containers:
        - name: c
          image: x
          resources:
            requests: {cpu: "16", memory: 64Gi}
]])
local attrs = cli.write(dir .. "/attrs.yaml", "version: 1\nbackends:\n  - name: gpu-h100\n    attributes: {cost_usd: 4}\n")
-- bin/fluence with cluster.FROM_CACHE set a way: its cluster.lua from a
-- copy of the tree (FLUENCE_SOURCE_DIR; the rest stays built in)
local function whole(nodes, usage)
  local tree = cli.tmpdir()
  os.execute("mkdir -p " .. cli.quote(tree .. "/lua/fluence"))
  local src = assert(cli.slurp("lua/fluence/cluster.lua"))
  local n
  src, n = src:gsub("\nM%.FROM_CACHE = [^\n]+\n", ("\nM.FROM_CACHE = { nodes = %s, usage = %s }\n")
                                                    :format(tostring(nodes), tostring(usage)))
  assert(n == 1, "cluster.lua: no M.FROM_CACHE line")
  cli.write(tree .. "/lua/fluence/cluster.lua", src)
  local walls, rss, cpus = {}, {}, {}
  for _ = 1, RUNS do
    local c0, w0 = server_cpu(), sys.monotonic()
    local p = io.popen(("env -u LD_PRELOAD FLUENCE_SOURCE_DIR=%s /usr/bin/time -f '%%M' bin/fluence select -f %s " ..
                        "--attributes %s --kubeconfig %s --request-timeout 300 2>&1 >/dev/null")
                       :format(tree, job, attrs, api.kubeconfig))
    local out = p:read("a")
    p:close()
    walls[#walls + 1], cpus[#cpus + 1] = sys.monotonic() - w0, server_cpu() - c0
    rss[#rss + 1] = tonumber(out:match("(%d+)%s*$")) or 0
  end
  return median(walls), median(rss) / 1024, median(cpus)
end
for _, way in ipairs{ { "etcd, paged", false, false }, { "nodes from the watch cache, pods paged", true, false },
                      { "watch cache", true, true } } do
  local w, m, c = whole(way[2], way[3])
  rows[#rows + 1] = ("| `fluence select`, fits:now of 64 pods, %s (whole process, peak %.0f MiB) | %.0f ms | %.2f s |")
    :format(way[1], m, w * 1000, c)
end

-- (from the cache: one answer each, uncompressed, so the formats compare)
for _, v in ipairs{ { "application/json", true }, { "application/vnd.kubernetes.protobuf", true } } do
  local ws, cs, bytes = {}, {}, 0
  for _ = 1, RUNS do
    local w1, c1, b1 = curl(v[1])
    ws[#ws + 1], cs[#cs + 1], bytes = w1, c1, b1
  end
  rows[#rows + 1] = ("| curl, transfer only: %s, from the watch cache, %.1f MiB | %.0f ms | %.2f s |")
    :format(v[1], bytes / 1048576, median(ws) * 1000, median(cs))
end

print(("kube-apiserver (envtest, etcd on loopback), %d nodes, %d pods, median of %d\n"):format(NODES, PODS, RUNS))
print("| read | wall | server CPU (apiserver + etcd) |")
print("|---|---|---|")
for _, r in ipairs(rows) do print(r) end
api:stop()
