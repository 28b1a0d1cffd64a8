-- Matcher benchmark on a Fluence-shaped graph: 1024 nodes x (32 cores + 64
-- memory vertices of size 1024), every edge listed in both directions, as
-- Fluence writes its JGF.  Reports load time and peak memory (in a fresh
-- process), then the median time per `match allocate` of slot[8]{core 4,
-- memory 4096} for each policy, MATCHES allocations in a row on one graph
-- (three times over, each on a fresh matcher).
--
-- With --fluxion PATH (resource-query), Fluxion itself runs the same
-- allocations on the same graph after each of our three rounds (one process
-- per round), and the median of its own per-match times (`resource-query
-- -e`: the match alone, not the load) is printed beside ours with the
-- ratio: a comparison made in the same run, interleaved.
--
--   lua5.4 bench/match_bench.lua [NODES] [MATCHES] [--fluxion PATH] [--policies a,b]
--                                             (from the source tree, after make)
local root = arg[0]:match("^(.*)/bench/[^/]*$") or "."
package.cpath = root .. "/build/lib/?.so;" .. package.cpath
package.path = root .. "/lua/?.lua;" .. package.path

local function generate(path, nodes)
  local f = assert(io.open(path, "wb"))
  local out = {}
  local function w(s) out[#out + 1] = s if #out > 4096 then f:write(table.concat(out)) out = {} end end
  local id, edges = 0, {}
  local function vertex(typ, name, vid, size, unit, pathv, rank)
    local this = id
    id = id + 1
    w(('%s{"id":"%d","metadata":{"type":"%s","basename":"%s","name":"%s","id":%d,"uniq_id":%d,' ..
       '"rank":%d,"exclusive":false,"unit":"%s","size":%d,"properties":{"virtual=false":""},' ..
       '"paths":{"containment":"%s"}}}'):format(this == 0 and "" or ",", this, typ, typ, name,
       vid, this, rank or -1, unit or "", size, pathv))
    return this
  end
  local function edge(a, b)
    edges[#edges + 1] = ('{"source":"%d","target":"%d","metadata":{"name":{"containment":"contains"}}}'):format(a, b)
    edges[#edges + 1] = ('{"source":"%d","target":"%d","metadata":{"name":{"containment":"in"}}}'):format(b, a)
  end
  w('{"graph":{"nodes":[')
  local c = vertex("cluster", "cluster0", 0, 1, nil, "/cluster0")
  local s = vertex("subnet", "subnet0", 0, 1, nil, "/cluster0/subnet0")
  edge(c, s)
  for n = 0, nodes - 1 do
    local np = ("/cluster0/subnet0/node%d"):format(n)
    local nv = vertex("node", "node" .. n, n, 1, nil, np, n)
    edge(s, nv)
    for k = 0, 31 do edge(nv, vertex("core", "core" .. k, k, 1, nil, np .. "/core" .. k)) end
    for k = 0, 63 do edge(nv, vertex("memory", "memory" .. k, k, 1024, "MB", np .. "/memory" .. k)) end
  end
  w('],"edges":[')
  w(table.concat(edges, ","))
  w("]}}\n")
  f:write(table.concat(out))
  f:close()
  return id
end

local function status(key)
  local f = io.open("/proc/self/status")
  if not f then return 0 end
  local s = f:read("a")
  f:close()
  return tonumber(s:match(key .. ":%s*(%d+)")) or 0
end

local JOBSPEC = [[
version: 9999
resources:
  - type: slot
    count: 8
    label: default
    with:
      - type: core
        count: 4
      - type: memory
        count: 4096
attributes:
  system:
    duration: 3600
tasks:
  - command: ["app"]
    slot: default
    count:
      per_slot: 1
]]

if arg[1] == "--load" then
  local match = require "fluence.match"
  local before = status("VmRSS")
  local t0 = os.clock()
  local g = assert(match.load_jgf_file(arg[2]))
  local t1 = os.clock()
  local st = g:stats()
  print(("%d %.4f %d %d %d"):format(st.vertices, t1 - t0, status("VmHWM"), before, st.bytes))
  os.exit(0)
end

local opts, pos = {}, {}
do
  local i = 1
  while arg[i] do
    if arg[i] == "--fluxion" or arg[i] == "--policies" then opts[arg[i]:sub(3)] = arg[i + 1]; i = i + 2
    else pos[#pos + 1] = arg[i]; i = i + 1 end
  end
end
local nodes = tonumber(pos[1]) or 1024
local matches = tonumber(pos[2]) or 100
local policies = { "first", "firstnodex", "high", "low", "hinode", "lonode", "hinodex", "lonodex" }
if opts.policies then
  policies = {}
  for p in opts.policies:gmatch("[^,]+") do policies[#policies + 1] = p end
end
local path = os.getenv("BENCH_GRAPH") or ("/tmp/fluence-match-bench-%d.json"):format(nodes)
local f = io.open(path)
if f then f:close() else
  io.write(("generating %s ... "):format(path)) io.flush()
  local nv = generate(path, nodes)
  print(nv .. " vertices")
end
local size = 0
do local h = io.open(path, "rb"); size = h:seek("end"); h:close() end
local p = io.popen(("lua5.4 %q --load %q"):format(arg[0], path))
local line = p:read("l")
p:close()
local nv, secs, hwm, base, bytes = line:match("(%d+) (%S+) (%d+) (%d+) (%d+)")
print(("graph: %s vertices, JGF %.1f MB"):format(nv, size / 1e6))
print(("load: %.3f s, peak RSS %.1f MB (process baseline %.1f MB), graph %.1f MB"):format(
  tonumber(secs), tonumber(hwm) / 1024, tonumber(base) / 1024, tonumber(bytes) / 1e6))

local function median(t)
  table.sort(t)
  local n = #t
  if n == 0 then return nil end
  return n % 2 == 1 and t[(n + 1) // 2] or (t[n // 2] + t[n // 2 + 1]) / 2
end

-- Fluxion's per-match times (ms) for one policy, appended to times:
-- resource-query -e prints "ELAPSE=seconds" for every match.  Returns how
-- many were allocated and how many were timed.
local function fluxion(policy, times)
  local dir = os.tmpname()
  os.remove(dir)
  os.execute("mkdir -p " .. dir)
  local js = io.open(dir .. "/jobspec.yaml", "w")
  js:write(JOBSPEC)
  js:close()
  local cmds = io.open(dir .. "/commands", "w")
  for _ = 1, matches do cmds:write("match allocate " .. dir .. "/jobspec.yaml\n") end
  cmds:write("quit\n")
  cmds:close()
  local rq = io.popen(("%q -L %q -f jgf -P %s -e -d -F simple < %q 2>&1"):format(opts.fluxion, path, policy,
                      dir .. "/commands"))
  local allocated, n = 0, 0
  for l in rq:lines() do
    local e = l:match("ELAPSE=([%d.eE+-]+)")
    if e then times[#times + 1] = tonumber(e) * 1000; n = n + 1 end
    if l:match("RESOURCES=ALLOCATED") then allocated = allocated + 1 end
  end
  rq:close()
  os.execute("rm -rf " .. dir)
  return allocated, n
end

local match = require "fluence.match"
local g = assert(match.load_jgf_file(path))
local clock = os.clock
for _, policy in ipairs(policies) do
  -- three rounds, each the same MATCHES allocations on a fresh matcher and
  -- then, with --fluxion, the same ones by resource-query: both sides see
  -- the same bursts of load on a shared machine, and a median over the
  -- rounds moves less than one round does
  local ok, times, theirs, fok, fn = 0, {}, {}, 0, 0
  for _ = 1, 3 do
    local m = assert(match.new(g, { policy = policy }))
    ok = 0
    for _ = 1, matches do
      local t0 = clock()
      local r = m:run("allocate", JOBSPEC, "bench.yaml")
      times[#times + 1] = (clock() - t0) * 1000
      if r.ok then ok = ok + 1 end
    end
    if opts.fluxion then fok, fn = fluxion(policy, theirs) end
  end
  local ours = median(times)
  local line = ("%-10s %8.3f ms per match  (%d/%d allocated)"):format(policy, ours, ok, matches)
  if opts.fluxion then
    local t = median(theirs)
    if t then
      line = line .. ("; Fluxion %.1f ms (%d/%d allocated): %.1fx"):format(t, fok, fn, t / ours)
    else
      line = line .. "; Fluxion: no timing (resource-query failed)"
    end
  end
  print(line)
end
