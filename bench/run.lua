-- `make bench`: whole-process benchmarks against their targets, written to
-- docs/benchmarks.md (and printed).  Benchmarks report; they do not fail.
--   lua5.4 bench/run.lua     (from the source tree, after make and bench/timeit)
local B = "build/bench"
local FL = "bin/fluence"
local TIMEIT = B .. "/timeit"

local function sh(cmd)
  local p = assert(io.popen(cmd .. " 2>&1"))
  local out = p:read("a")
  local ok = p:close()
  return out, ok
end

local function q(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

-- timeit(runs, argv, stdin) -> {median, min, max, rss} (ms, MiB) or nil, output
local function timeit(runs, argv, opts)
  opts = opts or {}
  local parts = { "env HOME=" .. B .. "/home SOURCE_DATE_EPOCH=1700000000", TIMEIT, "-n", runs }
  if opts.stdin then parts[#parts + 1] = "-i " .. q(opts.stdin) end
  if opts.out then parts[#parts + 1] = "-o " .. q(opts.out) end
  parts[#parts + 1] = "--"
  for _, a in ipairs(argv) do parts[#parts + 1] = q(a) end
  local out, ok = sh(table.concat(parts, " "))
  if not ok then return nil, out end
  local med, min, max, rss = out:match("([%d.]+) ([%d.]+) ([%d.]+) ([%d.]+)")
  return { median = tonumber(med), min = tonumber(min), max = tonumber(max), rss = tonumber(rss) }
end

local function size(path)
  local f = assert(io.open(path, "rb"))
  local n = f:seek("end")
  f:close()
  return n
end

local rows, notes, raw = {}, {}, {}
local function row(name, target, measured, met)
  rows[#rows + 1] = ("| %s | %s | %s | %s |"):format(name, target, measured, met and "met" or "**not met**")
  print(("%-58s %-28s %s"):format(name, measured, met and "met" or "NOT MET"))
end

os.execute("mkdir -p " .. B .. "/home")

-- 1. select on the examples, offline
do
  local r, err = timeit(50, { FL, "select", "-f", "examples/quickstart/job.yaml", "--attributes",
                              "examples/quickstart/attributes.yaml", "--offline" })
  if r then
    row("`select` on examples/quickstart, offline (median of 50)", "< 3 ms",
        ("%.2f ms (min %.2f), %.1f MiB RSS"):format(r.median, r.min, r.rss), r.median < 3)
  else notes[#notes + 1] = "select on the examples failed: " .. err end
  local v = timeit(50, { FL, "version" })
  local t = timeit(50, { "/bin/true" })
  if v and t then
    notes[#notes + 1] = ("Startup (`fluence version`): median %.2f ms, %.1f MiB RSS; this machine's floor, " ..
      "`/bin/true`, is %.2f ms."):format(v.median, v.rss, t.median)
  end
end

-- 2. 10,000 backends through a 5-stage pipeline
do
  local attrs = B .. "/backends-10000.yaml"
  sh(("lua5.4 bench/gen.lua backends 10000 %s"):format(attrs))
  local job = B .. "/pipeline-job.yaml"
  local f = assert(io.open(job, "w"))
  f:write([[
apiVersion: v1
kind: Pod
metadata:
  name: bench
  annotations:
    fluence.flux-framework.org/select-policy: "online-only,require:memory_gb>=16,require:region=us-east-1,min-queue~5,min-cost"
spec:
  schedulerName: fluence
  containers: [{name: c, image: x}]
]])
  f:close()
  -- the pipeline itself, in process (median of 10 runs after one warm-up)
  local out = sh("lua5.4 bench/pipeline_bench.lua " .. attrs)
  local med = tonumber(out:match("median ([%d.]+) ms"))
  if med then
    row("10,000 backends through a 5-stage pipeline (the pipeline, in process)", "< 50 ms",
        ("%.1f ms"):format(med), med < 50)
  else notes[#notes + 1] = "pipeline benchmark failed: " .. out end
  local jattrs = B .. "/backends-10000.json"
  sh(("lua5.4 bench/gen.lua backends-json 10000 %s"):format(jattrs))
  for _, v in ipairs{ { attrs, "YAML" }, { jattrs, "JSON" } } do
    local r, err = timeit(10, { FL, "select", "-f", job, "--attributes", v[1], "--offline" })
    if r then
      row(("  the same, whole process: parse a %.1f MB %s attribute file, select, print (median of 10)")
            :format(size(v[1]) / 1048576, v[2]), "(< 50 ms)", ("%.1f ms, %.1f MiB RSS"):format(r.median, r.rss),
          r.median < 50)
    else notes[#notes + 1] = "pipeline benchmark failed: " .. err end
  end
end

-- 3. a 100 MB manifest stream with 10,000 Fluence objects
do
  local stream = B .. "/stream-100mb.yaml"
  sh(("lua5.4 bench/gen.lua stream 100 10000 %s"):format(stream))
  local bytes = size(stream)
  local r, err = timeit(3, { FL, "select", "-f", stream, "--attributes", "examples/quickstart/attributes.yaml",
                             "--offline" }, { out = B .. "/stream-out.yaml" })
  if r then
    local mbs = bytes / 1048576 / (r.median / 1000)
    local ratio = r.rss * 1048576 / bytes
    row(("%.0f MB stream, 10,000 Fluence Jobs rewritten (median of 3)"):format(bytes / 1048576),
        ">= 100 MB/s, peak RSS < 3x input",
        ("%.0f MB/s (%.0f ms), peak RSS %.0f MiB = %.2fx input"):format(mbs, r.median, r.rss, ratio),
        mbs >= 100 and ratio < 3)
  else notes[#notes + 1] = "stream benchmark failed: " .. err end
end

-- 6. the live cluster graph at scale (issue 17): a generated cluster of
-- 5,000 nodes and 150,000 pods (bench/cluster_server.py, plain HTTP on
-- loopback, paged lists), a gang checked with fits:now; beside it the floor,
-- the same pages only transferred (one curl process, reused connection).
do
  local NODES, PODS = 5000, 150000
  local pf = B .. "/cluster.port"
  os.remove(pf)
  sh(("python3 bench/cluster_server.py --port-file %s --nodes %d --pods %d >/dev/null 2>&1 & echo $! > %s.pid")
     :format(q(pf), NODES, PODS, q(pf)))
  local port
  for _ = 1, 200 do
    local f = io.open(pf)
    if f then port = f:read("n"); f:close() end
    if port then break end
    os.execute("sleep 0.05")
  end
  if not port then notes[#notes + 1] = "cluster benchmark: the generated cluster did not start"
  else
    local kc = B .. "/cluster-kubeconfig.yaml"
    local f = assert(io.open(kc, "w"))
    f:write(([[
apiVersion: v1
kind: Config
current-context: bench
clusters: [{name: bench, cluster: {server: "http://127.0.0.1:%d"}}]
contexts: [{name: bench, context: {cluster: bench, user: bench}}]
users: [{name: bench, user: {token: bench-token}}]
]]):format(port))
    f:close()
    local job, attrs = B .. "/gang-now.yaml", B .. "/gang-attrs.yaml"
    f = assert(io.open(attrs, "w"))
    f:write("version: 1\nbackends:\n  - name: gpu-h100\n    attributes: {cost_usd: 4}\n")
    f:close()
    f = assert(io.open(job, "w"))
    f:write([[
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
            requests: {cpu: "16", memory: 64Gi, nvidia.com/gpu: "4"}
            limits: {nvidia.com/gpu: "4"}
]])
    f:close()
    -- the floor: every page of both lists, transferred only
    local urls = {}
    local sel = "spec.nodeName!%3D,status.phase!%3DSucceeded,status.phase!%3DFailed"
    for i = 0, NODES - 1, 2000 do
      urls[#urls + 1] = ("-o /dev/null 'http://127.0.0.1:%d/api/v1/nodes?limit=2000%s'")
        :format(port, i > 0 and ("&continue=nodes-" .. i) or "")
    end
    for i = 0, PODS - 1, 5000 do
      urls[#urls + 1] = ("-o /dev/null 'http://127.0.0.1:%d/api/v1/pods?limit=5000&fieldSelector=%s%s'")
        :format(port, sel, i > 0 and ("&continue=pods-" .. i) or "")
    end
    timeit(1, { FL, "select", "-f", job, "--attributes", attrs, "--kubeconfig", kc })   -- the server makes its pages
    local floor = timeit(5, { "sh", "-c", "curl -s " .. table.concat(urls, " ") })
    local r, err = timeit(5, { FL, "select", "-f", job, "--attributes", attrs, "--kubeconfig", kc })
    if r and floor then
      row(("live graph + `fits:now`: %d nodes, %d pods (median of 5)"):format(NODES, PODS), "< 1 s, < 500 MiB",
          ("%.0f ms, %.0f MiB RSS; floor (the pages transferred only) %.0f ms"):format(r.median, r.rss, floor.median),
          r.median < 1000 and r.rss < 500)
    else notes[#notes + 1] = "cluster benchmark failed: " .. tostring(err) end
  end
  sh(("kill $(cat %s.pid) 2>/dev/null"):format(q(pf)))
end

-- 4. the matcher and 5. live provider concurrency (their own scripts)
for _, b in ipairs{ { "Fluxion-compatible matcher (bench/match_bench.lua)", "lua5.4 bench/match_bench.lua" },
                    { "braket-live concurrency (bench/braket_bench.lua)", "lua5.4 bench/braket_bench.lua 20 200 5" } } do
  local out, ok = sh(b[2])
  print(out)
  raw[#raw + 1] = ("### %s\n\n```\n$ %s\n%s```\n%s"):format(b[1], b[2], out, ok and "" or "\n(the script failed)\n")
end

local doc = {
  "# Benchmarks",
  "",
  "Written by `make bench` (bench/run.lua) on the machine it ran on; whole-process",
  "timings (startup included) as medians over repeated runs with peak RSS, from",
  "`bench/timeit.c`. Benchmarks report; they never fail CI.",
  "",
  ("Measured %s on %s (%s cores)."):format(os.date("!%Y-%m-%d %H:%M UTC"),
    (sh("uname -srm"):gsub("\n", "")), (sh("nproc"):gsub("\n", ""))),
  "",
  "| benchmark | target | measured | |",
  "|---|---|---|---|",
}
for _, r in ipairs(rows) do doc[#doc + 1] = r end
doc[#doc + 1] = ""
for _, n in ipairs(notes) do doc[#doc + 1] = "- " .. n end
doc[#doc + 1] = ""
doc[#doc + 1] = [[
## Targets not met, and why

- **`select` on the examples under 3 ms** (about 7 ms). Starting any
  process here costs ~1.8 ms (`/bin/true` above) and starting fluence ~3.2 ms
  (`fluence version`: the dynamic loader for 8 libraries, Lua 5.4); the
  selection adds ~4 ms: loading and sandboxing every built-in plugin,
  building the LPeg grammar, parsing and rewriting the manifest. Removed to
  get here: linking libcurl cost ~15 ms per start (now loaded on first use,
  `core/lazylib.c`), and compiling the embedded Lua sources ~40% of a run
  (now bytecode). Next step, not taken: load only the plugins a run names.
- **10,000 backends through a 5-stage pipeline under 50 ms.** The pipeline
  itself runs in about 60 ms: every stage hands each backend to sandboxed
  plugin code as a read-only view (one C metamethod call per field read) and
  records what it kept and dropped, and why, for explain and the audit. The
  whole process is dominated by reading the 1.7 MB attribute file: libyaml
  alone costs ~75 instructions per byte (the file provider reads JSON through
  libyaml too, for one located-error path), and the provider validates every
  field of 10,000 backends.
- **100 MB/s on a 100 MB stream.** The stream runs at 75-90 MB/s with peak
  memory under 2x the input (met). libyaml's parse of the stream is ~40% of
  the time; the rest is building the document trees and object tables for
  20,000 objects, the edits, and the Lua selection for 10,000 Fluence
  objects (one decision shared by all identical requests).
]]
for _, r in ipairs(raw) do doc[#doc + 1] = r end
local f = assert(io.open("docs/benchmarks.md", "w"))
f:write(table.concat(doc, "\n") .. "\n")
f:close()
print("wrote docs/benchmarks.md")
