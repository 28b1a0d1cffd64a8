-- Differential testing of `fluence match` against Fluxion's resource-query:
-- a generator of random command streams -- resource graphs (JGF), jobspecs
-- and command scripts -- in three families (flux-sched-shaped: cluster/
-- rack/node/socket/core/gpu/memory trees like t3015's; Fluence-shaped:
-- cluster/subnet/node trees with both edge directions, node properties and
-- fluence-resources devices; multi-tier storage DAGs), a quarter of them
-- mixing odd jobspecs (ones Fluxion refuses, or accepts and treats oddly:
-- see mutate) and odd commands with valid ones, and a runner that feeds a
-- stream to both and compares the -t text and the lines printed besides
-- byte for byte, for every policy and output format.
--
--   local diff = dofile("fuzz/differential.lua")
--   local case = diff.generate(seed)          -- deterministic in seed
--   local ok, why = diff.run(case, { fluence = BIN, resource_query = RQ, dir = TMP })
--
-- From a shell (after make), see the CLI at the end: each differing stream
-- is written under build/differential/<seed>/ (graph, jobspecs, commands,
-- both outputs and the exact commands to rerun them).
local M = {}

-- ------------------------------------------------------------ the PRNG
-- splitmix64: the same cases on every machine and Lua build.
local function rng(seed)
  local s = seed
  local r = {}
  function r.next()
    s = s + 0x9E3779B97F4A7C15
    local z = s
    z = (z ~ (z >> 30)) * 0xBF58476D1CE4E5B9
    z = (z ~ (z >> 27)) * 0x94D049BB133111EB
    return z ~ (z >> 31)
  end
  function r.int(a, b) return a + (r.next() >> 1) % (b - a + 1) end
  function r.pick(t) return t[r.int(1, #t)] end
  function r.chance(p) return r.int(1, 1000) <= p * 1000 end
  function r.shuffle(t)
    for i = #t, 2, -1 do
      local j = r.int(1, i)
      t[i], t[j] = t[j], t[i]
    end
    return t
  end
  return r
end
M.rng = rng

M.POLICIES = { "first", "high", "low", "lonode", "hinode", "lonodex", "hinodex", "firstnodex", "locality",
               "variation", "policy=low node_centric=true stop_on_1_matches=true",
               "policy=high node_centric=false node_exclusive=true" }
M.FORMATS = { "simple", "rv1", "rv1_nosched", "jgf" }

-- ------------------------------------------------------------ JSON text
local function jstr(s)
  return '"' .. s:gsub('[%c"\\]', function(c)
    if c == '"' then return '\\"' elseif c == "\\" then return "\\\\" end
    return ("\\u%04x"):format(c:byte())
  end) .. '"'
end

-- ------------------------------------------------------------ graphs
-- A vertex: { type, basename, name, id, rank, size, props = {k = v}, kids = {} }

local function vertex(t, fields)
  fields.type = t
  fields.kids = fields.kids or {}
  return fields
end

-- flux-sched-shaped: cluster > [rack >] node > [socket >] core/gpu/memory,
-- ids per parent or per graph, optional properties and ranks.
local function fluxsched_graph(r)
  local counters = {}
  local global_ids = r.chance(0.5)
  local function nextid(t, scope)
    local key = global_ids and t or (t .. "@" .. tostring(scope))
    counters[key] = (counters[key] or -1) + 1
    return counters[key]
  end
  local base = r.pick { "tiny", "cluster", "sim", "c" }
  local root = vertex("cluster", { basename = base, id = 0 })
  local racks = r.chance(0.6) and r.int(1, 2) or 0
  local parents = {}
  if racks == 0 then
    parents[1] = root
  else
    for i = 1, racks do
      local rk = vertex("rack", { id = nextid("rack", root) })
      root.kids[#root.kids + 1] = rk
      parents[#parents + 1] = rk
    end
  end
  local nodes = {}
  local mem_size = r.pick { 1, 2, 4, 16 }
  -- sockets on every node or on none (jobspecs that name the node and
  -- then the cores, over sockets, skip a level: see fluxsched_jobspec)
  local with_sockets = r.chance(0.6)
  local props = { "gpu-node", "fast", "big-mem" }
  for _, p in ipairs(parents) do
    for _ = 1, r.int(1, 3) do
      local n = vertex("node", { id = nextid("node", p), props = {} })
      for _, k in ipairs(props) do if r.chance(0.3) then n.props[k] = r.chance(0.7) and "" or "yes" end end
      -- the variation policy's performance classes, some of them odd
      if r.chance(0.5) then n.props.perf_class = r.pick { "1", "2", "3", "1", "2", " 4", "x", "-2", "12345", "5b" } end
      p.kids[#p.kids + 1] = n
      nodes[#nodes + 1] = n
      local sockets = with_sockets and r.int(1, 2) or 0
      local holders = {}
      if sockets == 0 then holders[1] = n end
      for _ = 1, sockets do
        local s = vertex("socket", { id = nextid("socket", n) })
        n.kids[#n.kids + 1] = s
        holders[#holders + 1] = s
      end
      local cores, gpus, mems = r.int(1, 6), r.int(0, 2), r.int(0, 2)
      for _, h in ipairs(holders) do
        local kids = {}
        for _ = 1, cores do
          local c = vertex("core", { id = nextid("core", n) })
          if r.chance(0.1) then c.props = { perf_class = r.pick { "1", "2", "3" } } end
          kids[#kids + 1] = c
        end
        for _ = 1, gpus do kids[#kids + 1] = vertex("gpu", { id = nextid("gpu", n) }) end
        for _ = 1, mems do kids[#kids + 1] = vertex("memory", { id = nextid("memory", n), size = mem_size, unit = "GB" }) end
        if r.chance(0.3) then r.shuffle(kids) end
        for _, k in ipairs(kids) do h.kids[#h.kids + 1] = k end
      end
    end
  end
  local rank_mode = r.int(1, 4)
  for i, n in ipairs(nodes) do
    n.rank = rank_mode == 1 and -1 or rank_mode == 4 and (#nodes - i) or (i - 1)
  end
  return root, { props = props, sockets = with_sockets, racks = racks > 0,
                 types = { "cluster", "rack", "node", "socket", "core", "gpu", "memory" } }
end

-- Fluence-shaped: cluster > subnet > node > core/memory(MB pools)/gpu, node
-- properties virtual=false, and fluence-resources devices: node-typed
-- vertices with virtual=true, class=<t> and fluxion.flux-framework.org/ keys.
local PREFIX = "fluxion.flux-framework.org/"
local function fluence_graph(r)
  local root = vertex("cluster", { basename = "cluster", id = 0 })
  local subnet = vertex("subnet", { id = 0 })
  root.kids[1] = subnet
  local nodes = {}
  for i = 0, r.int(0, 3) do
    local n = vertex("node", { id = i, name = r.chance(0.5) and ("kind-worker" .. (i > 0 and i or "")) or nil,
                               rank = r.chance(0.5) and -1 or i, props = { ["virtual=false"] = "" } })
    subnet.kids[#subnet.kids + 1] = n
    nodes[#nodes + 1] = n
    for c = 0, r.int(1, 8) - 1 do n.kids[#n.kids + 1] = vertex("core", { id = c }) end
    for m = 0, r.int(0, 3) - 1 do n.kids[#n.kids + 1] = vertex("memory", { id = m, size = r.pick { 256, 1024 }, unit = "MB" }) end
    for g = 0, r.int(0, 1) - 1 do n.kids[#n.kids + 1] = vertex("gpu", { id = g }) end
  end
  local devices = {}
  for d = 1, r.int(0, 3) do
    local backend = r.pick { "ionq", "braket-sv1", "rigetti", "sim" } .. d
    local vt = r.pick { "qdevice", "qpu", "fpga" }
    local attrs = { ["virtual=true"] = "", ["class=" .. vt] = "", [PREFIX .. "backend=" .. backend] = "" }
    if r.chance(0.5) then attrs[PREFIX .. "vendor=" .. r.pick { "acme", "ionq" }] = "" end
    local dev = vertex("node", { basename = vt, name = backend, id = 0, props = attrs })
    devices[#devices + 1] = { backend = backend, class = vt }
    if r.chance(0.5) then
      local sub = r.pick { "qpu", "qubit" }
      dev.props["class=" .. sub] = ""
      for k = 0, r.int(1, 3) - 1 do
        local p = { ["virtual=true"] = "", ["class=" .. sub] = "", [PREFIX .. "backend=" .. backend] = "" }
        dev.kids[#dev.kids + 1] = vertex("node", { basename = sub, id = k, props = p })
      end
    end
    root.kids[#root.kids + 1] = dev
  end
  return root, { props = { "virtual=false", "virtual=true" }, devices = devices, fluence = true,
                 types = { "cluster", "subnet", "node", "core", "memory", "gpu" } }
end

-- Multi-tier storage, flux-sched's mt-storage shape: racks of nodes and an
-- L1 unit of SSDs each, and one global L2 unit containing every L1 unit (a
-- DAG: an L1 unit has two parents).  extra = { {parent, child}, ... }
-- lists the second parents' edges.
local function storage_graph(r)
  local root = vertex("cluster", { basename = r.pick { "mtl3-test", "c" }, id = 0 })
  local l1s, nodes = {}, {}
  local ssd_size = r.pick { 512, 1 }
  for k = 0, r.int(1, 2) - 1 do
    local rack = vertex("rack", { id = k })
    root.kids[#root.kids + 1] = rack
    local l1 = vertex("mtl1unit", { id = k })
    for s = 0, r.int(2, 4) - 1 do l1.kids[#l1.kids + 1] = vertex("ssd", { id = s, size = ssd_size }) end
    local ns = {}
    for n = 0, r.int(1, 2) - 1 do
      local node = vertex("node", { id = #nodes, rank = #nodes, props = {} })
      for c = 0, r.int(2, 4) - 1 do node.kids[#node.kids + 1] = vertex("core", { id = c }) end
      nodes[#nodes + 1] = node
      ns[#ns + 1] = node
    end
    if r.chance(0.5) then
      rack.kids[1] = l1
      for _, n in ipairs(ns) do rack.kids[#rack.kids + 1] = n end
    else
      for _, n in ipairs(ns) do rack.kids[#rack.kids + 1] = n end
      rack.kids[#rack.kids + 1] = l1
    end
    l1s[#l1s + 1] = l1
  end
  local l2 = vertex("mtl2unit", { id = 0 })
  root.kids[#root.kids + 1] = l2
  local extra = {}
  for _, l1 in ipairs(l1s) do extra[#extra + 1] = { l2, l1 } end
  return root, { props = { "fast" }, storage = true, ssd_size = ssd_size, extra = extra,
                 types = { "cluster", "rack", "node", "core", "mtl1unit", "mtl2unit", "ssd" } }
end

-- JGF text: uniq ids in depth-first or breadth-first order, edges likewise,
-- Fluence's both-direction edges or flux-sched's parent -> child ones.
local function jgf(r, root, info)
  local order = {}
  local bfs = r.chance(0.4)
  if bfs then
    local q, h = { root }, 1
    while h <= #q do
      local v = q[h]
      h = h + 1
      order[#order + 1] = v
      for _, k in ipairs(v.kids) do q[#q + 1] = k end
    end
  else
    local function walk(v)
      order[#order + 1] = v
      for _, k in ipairs(v.kids) do walk(k) end
    end
    walk(root)
  end
  local function fill(v, path)
    v.basename = v.basename or v.type
    v.name = v.name or (v.basename .. v.id)
    v.path = path .. "/" .. v.name
    for _, k in ipairs(v.kids) do fill(k, v.path) end
  end
  fill(root, "")
  for i, v in ipairs(order) do v.uniq = i - 1 end
  local nodes, edges = {}, {}
  local both = info.fluence or (not info.storage and r.chance(0.3))
  for _, v in ipairs(order) do
    local props = {}
    local keys = {}
    for k in pairs(v.props or {}) do keys[#keys + 1] = k end
    table.sort(keys)
    for _, k in ipairs(keys) do props[#props + 1] = jstr(k) .. ":" .. jstr(v.props[k]) end
    nodes[#nodes + 1] = ('{"id":"%d","metadata":{"type":%s,"basename":%s,"name":%s,"id":%d,"uniq_id":%d,' ..
      '"rank":%d,"exclusive":false,"unit":%s,"size":%d%s,"paths":{"containment":%s}}}'):format(
      v.uniq, jstr(v.type), jstr(v.basename), jstr(v.name), v.id, v.uniq, v.rank or -1, jstr(v.unit or ""),
      v.size or 1, #props > 0 and (',"properties":{' .. table.concat(props, ",") .. "}") or "", jstr(v.path))
    for _, pair in ipairs(info.extra or {}) do
      if pair[1] == v then
        edges[#edges + 1] = ('{"source":"%d","target":"%d","metadata":{"subsystem":"containment"}}'):format(v.uniq, pair[2].uniq)
      end
    end
    for _, k in ipairs(v.kids) do
      if both then
        edges[#edges + 1] = ('{"source":"%d","target":"%d","metadata":{"name":{"containment":"contains"}}}'):format(v.uniq, k.uniq)
        edges[#edges + 1] = ('{"source":"%d","target":"%d","metadata":{"name":{"containment":"in"}}}'):format(k.uniq, v.uniq)
      else
        edges[#edges + 1] = ('{"source":"%d","target":"%d","metadata":{"subsystem":"containment"}}'):format(v.uniq, k.uniq)
      end
    end
  end
  return '{"graph":{"nodes":[' .. table.concat(nodes, ",\n") .. '],\n"edges":[' .. table.concat(edges, ",\n") .. "]}}\n"
end

-- ------------------------------------------------------------ jobspecs
-- A resource: { type, count = n | {min, max, operator, operand}, exclusive, label, with }

-- A resource's fields as YAML.  Odd values come as raw YAML text (a string
-- count or exclusive, extra = "key: value"), label = false drops a slot's
-- label, with = {} writes "with: []".
local function yaml_res(out, res, indent)
  local pad = (" "):rep(indent)
  for _, x in ipairs(res) do
    out[#out + 1] = pad .. "- type: " .. x.type
    if type(x.count) == "table" then
      local c = x.count
      local parts = { "min: " .. c.min }
      if c.max then
        parts[#parts + 1] = "max: " .. c.max
        parts[#parts + 1] = "operator: '" .. c.operator .. "'"
        parts[#parts + 1] = "operand: " .. c.operand
      end
      out[#out + 1] = pad .. "  count: {" .. table.concat(parts, ", ") .. "}"
    elseif x.count ~= nil then
      out[#out + 1] = pad .. "  count: " .. x.count
    end
    if x.label then out[#out + 1] = pad .. "  label: " .. x.label end
    if x.exclusive ~= nil then out[#out + 1] = pad .. "  exclusive: " .. tostring(x.exclusive) end
    if x.extra then out[#out + 1] = pad .. "  " .. x.extra end
    if x.with and #x.with > 0 then
      out[#out + 1] = pad .. "  with:"
      yaml_res(out, x.with, indent + 4)
    elseif x.with and x.with_empty then
      out[#out + 1] = pad .. "  with: []"
    end
  end
end

-- A jobspec's text.  j: { res, duration, props, and for odd jobspecs:
-- version (raw), tasks (raw YAML lines after "tasks:"), no_tasks_key,
-- no_attributes, extra (a top-level "key: value") }.
local function render(j)
  local out = {}
  if j.version == nil then out[1] = "version: " .. (j.duration and 9999 or 1)
  elseif j.version then out[1] = "version: " .. j.version end
  if j.res_raw then out[#out + 1] = "resources: " .. j.res_raw
  else
    out[#out + 1] = "resources:"
    yaml_res(out, j.res, 2)
  end
  if not j.no_attributes then
    out[#out + 1] = "attributes:"
    out[#out + 1] = "  system:"
    if j.duration then out[#out + 1] = "    duration: " .. j.duration end
    if j.props and #j.props > 0 then
      local q = {}
      for i, p in ipairs(j.props) do q[i] = jstr(p) end
      out[#out + 1] = "    constraints:"
      out[#out + 1] = "      properties: [" .. table.concat(q, ", ") .. "]"
    elseif j.constraints then
      out[#out + 1] = "    constraints: " .. j.constraints
    end
    if not j.duration and not (j.props and #j.props > 0) and not j.constraints then out[#out] = "  system: {}" end
  end
  if j.tasks then
    out[#out + 1] = "tasks:" .. j.tasks
  elseif not j.no_tasks_key then
    out[#out + 1] = "tasks:"
    out[#out + 1] = '  - command: ["app"]'
    out[#out + 1] = "    slot: default"
    out[#out + 1] = "    count:"
    out[#out + 1] = "      per_slot: 1"
  end
  if j.extra then out[#out + 1] = j.extra end
  return table.concat(out, "\n") .. "\n"
end

local function jobspec_text(res, duration, props)
  return { res = res, duration = duration, props = props }
end

local function count(r, lo, hi)
  if r.chance(0.1) then
    local min = r.int(1, 2)
    if r.chance(0.5) then return { min = min } end
    local op = r.pick { "+", "*", "^" }
    local operand = op == "+" and r.int(1, 2) or 2
    if op == "^" and min < 2 then min = 2 end
    return { min = min, max = min + r.int(0, 4), operator = op, operand = operand }
  end
  return r.int(lo, hi)
end

local function leaves(r, info)
  local w = { { type = "core", count = count(r, 1, 4) } }
  if r.chance(0.3) then w[#w + 1] = { type = "gpu", count = r.int(1, 2) } end
  if r.chance(0.3) then w[#w + 1] = { type = "memory", count = r.int(1, info.fluence and 2048 or 8) } end
  if r.chance(0.15) then r.shuffle(w) end
  return w
end

local function slot(r, n, with)
  return { type = "slot", count = n, label = "default", with = with }
end

local function maybe_excl(r, x)
  if r.chance(0.15) then x.exclusive = r.chance(0.7) end
  return x
end

local function fluxsched_jobspec(r, info)
  -- over sockets, shapes 2, 4, 5 and 7 skip a level (node > slot > core
  -- on node > socket > core): Fluxion's selection succeeds there and its
  -- update finds nothing, which errno left by the selection reads
  local shape = info.sockets and r.pick { 1, 3, 6, 1, 3, 6, 8, 2, 7, 5 } or r.pick { 1, 2, 4, 5, 7 }
  local res
  if shape == 1 then
    res = { slot(r, count(r, 1, 3), leaves(r, info)) }
  elseif shape == 2 then
    res = { maybe_excl(r, { type = "node", count = count(r, 1, 2), with = { slot(r, r.int(1, 2), leaves(r, info)) } }) }
  elseif shape == 3 then
    res = { { type = "node", count = 1, with = { slot(r, r.int(1, 2), { maybe_excl(r, { type = "socket", count = 1,
              with = leaves(r, info) }) }) } } }
  elseif shape == 4 then
    res = { { type = "cluster", count = 1, with = { { type = "rack", count = 1, with = {
              { type = "node", count = 1, with = { slot(r, 1, leaves(r, info)) } } } } } } }
  elseif shape == 5 then
    res = { slot(r, r.int(1, 2), { maybe_excl(r, { type = "node", count = 1, with = leaves(r, info) }) }) }
  elseif shape == 6 then
    res = { slot(r, r.int(1, 2), { { type = "socket", count = r.int(1, 2), with = leaves(r, info) } }) }
  elseif shape == 7 then
    res = { { type = "node", count = count(r, 1, 3), with = { slot(r, 1, { { type = "core", count = r.int(1, 8) } }) } } }
  else
    res = { { type = "node", count = r.int(1, 2), with = { { type = "socket", count = r.int(1, 2),
              with = { slot(r, r.int(1, 2), leaves(r, info)) } } } } }
  end
  local props
  if r.chance(0.25) then
    props = { (r.chance(0.3) and "^" or "") .. r.pick(info.props) }
  end
  local dur = r.pick { false, 10, 100, 3600 }
  return jobspec_text(res, dur or nil, props)
end

-- flux-sched's mt-storage jobspecs: a node's slot with an L1 unit's SSDs
-- in the same rack, or with the global L2 unit's.
local function storage_jobspec(r, info)
  local ssd = { type = "ssd", count = r.int(1, 3) * info.ssd_size, exclusive = r.chance(0.8) or nil }
  local node = { type = "node", count = 1, with = { slot(r, 1, { { type = "core", count = r.int(1, 3) } }) } }
  local shape = r.int(1, 4)
  local res
  if shape == 1 then
    res = { { type = "rack", count = 1, with = { node, { type = "mtl1unit", count = 1, with = { ssd } } } } }
  elseif shape == 2 then
    res = { { type = "rack", count = 1, with = { node } },
            { type = "mtl2unit", count = 1, with = { { type = "mtl1unit", count = 1, with = { ssd } } } } }
  elseif shape == 3 then
    res = { { type = "mtl2unit", count = 1, with = { { type = "mtl1unit", count = r.int(1, 2), with = { ssd } } } } }
  else
    res = { slot(r, r.int(1, 2), { { type = "core", count = r.int(1, 2) } }) }
  end
  return jobspec_text(res, r.pick { false, 100, 3600 } or nil, nil)
end

-- What fluence.jobspecs builds for a pod group, and device jobspecs.
local function fluence_jobspec(r, info)
  if #info.devices > 0 and r.chance(0.4) then
    local d = r.pick(info.devices)
    local props = { "virtual=true", "class=" .. (r.chance(0.8) and d.class or "qubit") }
    if r.chance(0.7) then props[#props + 1] = PREFIX .. "backend=" .. d.backend end
    return jobspec_text({ slot(r, 1, { { type = "node", count = r.int(1, 2) } }) }, r.pick { 3600, nil }, props)
  end
  return jobspec_text({ slot(r, r.int(1, 4), leaves(r, info)) }, r.pick { 3600, nil }, { "virtual=false" })
end

-- Invalid-but-parsable jobspecs: a valid one (j) with one or two things
-- changed that Fluxion's jobspec reader or traverser refuses, or accepts
-- and then treats oddly (counts of 0, exclusivity at any level, slots
-- without tasks or without resources, a level the graph lacks, siblings of
-- one type, durations beyond the graph's).  Each must get resource-query's
-- answer: its error line, and whether the job id is used.
local function all_res(res, out)
  out = out or {}
  for _, x in ipairs(res or {}) do
    out[#out + 1] = x
    all_res(x.with, out)
  end
  return out
end

local ODD_COUNTS = { "0", "-1", "{min: 0}", "{min: -2}", "{min: 3, max: 2, operator: '+', operand: 1}",
                     "{min: 1, max: 4, operator: '+', operand: 0}", "{min: 1, max: 4, operator: 'x', operand: 1}",
                     "{min: 1, max: 3}", "{min: 1, max: 8, operator: '*', operand: 1}",
                     "{min: 1, max: 8, operator: '^', operand: 2}", "abc", "1.5", "[1]", "4294967296", "{max: 2}" }

local ODD_TYPES = { "bogus", "socket", "memory", "gpu", "node", "slot", "rack", "cluster", "core" }

local function mutate(r, j, info)
  local res = j.res
  local everything = all_res(res)
  local x = r.pick(everything)
  local k = r.int(1, 18)
  if k == 1 then
    j.version = r.pick { "0", "10000", "-1", "1.5", "abc", false, "[1]", "2" }
  elseif k == 2 then
    x.count = r.pick(ODD_COUNTS)
  elseif k == 3 then
    x.type = r.pick(ODD_TYPES)
  elseif k == 4 then
    x.exclusive = r.pick { true, false, true, false, "yes", "[true]" }
  elseif k == 5 then
    -- exclusive at an odd level: the root, a slot, a leaf under a slot
    local y = r.pick(everything)
    y.exclusive = r.chance(0.5)
    x.exclusive = r.chance(0.5)
  elseif k == 6 then
    -- a slot without tasks for it, or tasks without what they need
    j.tasks = r.pick { " []", "\n  - command: [\"app\"]\n    slot: other\n    count:\n      per_slot: 1",
                       "\n  - command: [\"app\"]\n    slot: default",
                       "\n  - command: [\"app\"]\n    slot: default\n    count:\n      per_slot: 1\n      total: 2",
                       "\n  - slot: default\n    count:\n      per_slot: 1",
                       "\n  - command: app\n    slot: default\n    count: {total: 0}",
                       "\n  - command: [\"app\"]\n    slot: default\n    count: {per_slot: 1}\n    bogus: 1", " {}" }
    if r.chance(0.2) then j.tasks, j.no_tasks_key = nil, true end
  elseif k == 7 then
    -- a slot's label or resources missing
    if x.type == "slot" and r.chance(0.5) then x.label = false
    elseif r.chance(0.5) then x.with = {}; x.with_empty = true
    else x.with = nil end
  elseif k == 8 then
    -- two siblings of one type
    local w = x.with and #x.with > 0 and x.with or res
    local twin = {}
    for key, v in pairs(w[1]) do twin[key] = v end
    w[#w + 1] = twin
  elseif k == 9 then
    x.extra = r.pick { "bogus: 1", "id: 7", "unit: GB", "label: x" }
  elseif k == 10 then
    j.res_raw = r.pick { "[]", "{}", "x" }
  elseif k == 11 then
    j.duration = r.pick { "-5", "1e12", "abc", "0.5", "3153600001", "0", "1e400", "[1]" }
  elseif k == 12 then
    j.extra = r.pick { "bogus: 1", "attributes: {}" }
    if r.chance(0.3) then j.extra, j.no_attributes = nil, true end
  elseif k == 13 then
    -- a level put in or taken out
    if x.with and #x.with > 0 then
      local c = x.with[1]
      if c.with and #c.with > 0 then x.with[1] = c.with[1] end
    end
    x.type = r.pick { "socket", "node", x.type }
  elseif k == 14 then
    -- a slot inside a slot, or a slot directly holding nodes
    x.with = { { type = "slot", count = 1, label = "inner", with = { { type = "core", count = 1 } } } }
  elseif k == 15 then
    x.count = r.pick { 0, 0, 100, 1 }
  elseif r.chance(0.3) then
    j.props = { r.pick { "bad name!", "^", "x|y", "virtual=true" } }
  else
    -- RFC 31 beyond properties: host lists, rank sets, and, or, not
    j.props, j.constraints = nil, r.pick {
      '{hostlist: ["node[0-1]"]}', '{hostlist: ["node1,node0"]}', '{hostlist: ["node[3-1]"]}',
      '{ranks: ["0-1"]}', '{ranks: ["1"]}', '{ranks: ["x"]}', '{ranks: [0]}',
      '{not: [{properties: ["fast"]}]}', '{or: [{properties: ["fast"]}, {ranks: ["0"]}]}',
      '{and: [{properties: ["^big-mem"]}, {hostlist: ["node[0-5]"]}]}', '{}', '{properties: ["fast"], ranks: ["0"]}',
      '{bogus: ["x"]}', '{properties: "fast"}' }
  end
  if r.chance(0.2) then return mutate(r, j, info) end
  return j
end

-- ------------------------------------------------------------ cases

function M.generate(seed)
  local r = rng(seed)
  local pick = r.int(1, 100)
  local family = pick <= 40 and "fluence" or pick <= 85 and "flux-sched" or "storage"
  local fluence_family = family == "fluence"
  local root, info
  if family == "fluence" then root, info = fluence_graph(r)
  elseif family == "storage" then root, info = storage_graph(r)
  else root, info = fluxsched_graph(r) end
  local case = { seed = seed, family = family, files = {} }
  case.policy = r.pick(M.policies or M.POLICIES)
  case.graph = jgf(r, root, info)
  case.format = r.pick(M.FORMATS)
  local njs = r.int(1, 4)
  local names = {}
  -- a quarter of the streams mix odd jobspecs with valid ones
  local odd_share = r.chance(0.25) and 0.4 or 0
  for i = 1, njs do
    local name = ("js%d.yaml"):format(i)
    local j
    if fluence_family then j = fluence_jobspec(r, info)
    elseif info.storage then j = storage_jobspec(r, info)
    else j = fluxsched_jobspec(r, info) end
    if r.chance(odd_share) then j = mutate(r, j, info) end
    case.files[name] = render(j)
    names[#names + 1] = name
  end
  local lines, jobs = {}, 0
  local odd_commands = r.chance(0.2)
  for _ = 1, r.int(2, 10) do
    local k = r.int(1, 20)
    if k <= 2 and jobs > 0 then
      lines[#lines + 1] = "cancel " .. r.int(1, jobs)
    elseif k == 3 and (jobs > 0 or odd_commands) then
      lines[#lines + 1] = "info " .. r.int(1, jobs + 2)
    elseif k == 4 and odd_commands then
      -- unknown ids, malformed commands, unknown subcommands and words
      lines[#lines + 1] = r.pick { "cancel " .. (jobs + 3), "cancel", "cancel x", "cancel 1 now", "cancel 1 2 3",
                                   "info", "info x", "info 1 2", "match allocate", "match bogus js1.yaml",
                                   "match allocate nosuch.yaml", "bogus 1", "", "# a comment", "   ",
                                   "match allocate js1.yaml extra" }
    else
      local op = r.pick { "allocate", "allocate", "allocate_orelse_reserve", "allocate_orelse_reserve",
                          "allocate_with_satisfiability", "satisfiability" }
      lines[#lines + 1] = ("match %s %s"):format(op, r.pick(names))
      if op ~= "satisfiability" then jobs = jobs + 1 end
    end
  end
  lines[#lines + 1] = "quit"
  case.script = table.concat(lines, "\n") .. "\n"
  return case
end

-- ------------------------------------------------------------ running

local function q(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end

local function slurp(p)
  local f = io.open(p, "rb")
  if not f then return nil end
  local d = f:read("a")
  f:close()
  return d
end

local function write(p, d)
  local f = assert(io.open(p, "wb"))
  f:write(d)
  f:close()
end

-- A 64-bit FNV-1a hash of everything a case is (policy, format, graph,
-- jobspecs, commands), in hex: a kept seed must still make the stream
-- that once differed.
function M.stream_hash(case)
  local names = {}
  for name in pairs(case.files) do names[#names + 1] = name end
  table.sort(names)
  local parts = { case.policy, case.format, case.graph, case.script }
  for _, name in ipairs(names) do parts[#parts + 1] = name .. "\0" .. case.files[name] end
  local h = -3750763034362895579 -- 0xcbf29ce484222325
  for _, part in ipairs(parts) do
    for i = 1, #part do h = (h ~ part:byte(i)) * 1099511628211 end
    h = (h ~ 0xff) * 1099511628211
  end
  return ("%016x"):format(h)
end

-- Writes the case into dir (graph.json, jobspecs, commands.in).
function M.materialise(case, dir)
  os.execute("mkdir -p " .. q(dir))
  write(dir .. "/graph.json", case.graph)
  write(dir .. "/commands.in", case.script)
  for name, text in pairs(case.files) do write(dir .. "/" .. name, text) end
end

-- The two command lines, run from the case's directory.
-- opts: fluence, resource_query (paths), env (assignments for fluence, e.g.
-- FLUENCE_FLUXION_LIB=...), wrap (e.g. valgrind ...); children never inherit
-- a sanitizer preload.  resource-query writes info lines on stdout and
-- errors on stderr, each line flushed: both go to expected.err, in order.
function M.commands(case, opts)
  local rq = ("env -u LD_PRELOAD %s -L graph.json -f jgf -S CA -P %s -F %s -d -t expected.out < commands.in > expected.err 2>&1"):format(
    q(opts.resource_query), q(case.policy), q(case.format))
  local fl = ("env -u LD_PRELOAD %s%s%s match --graph graph.json --policy %s --format %s < commands.in > fluence.out 2> fluence.err"):format(
    opts.env and (opts.env .. " ") or "", opts.wrap and (opts.wrap .. " ") or "", q(opts.fluence), q(case.policy), q(case.format))
  return rq, fl
end

-- resource-query's info lines end in the time the match took (overhead,
-- seconds); fluence prints 0 there.
function M.normalise_err(text)
  return (text:gsub("(INFO: %d+, %u+, %-?%d+, [^\n]*, )[^,\n]+\n", "%10\n"))
end

local function first_difference(want, got)
  local i, wl, gl = 0, nil, nil
  local wi, gi = want:gmatch("([^\n]*)\n?"), got:gmatch("([^\n]*)\n?")
  repeat
    i = i + 1
    wl, gl = wi(), gi()
  until wl ~= gl or wl == nil
  return i, tostring(wl):sub(1, 300), tostring(gl):sub(1, 300)
end

-- Runs one case; returns true, or false and a description of the difference.
-- The -t text must be the same bytes, and so must the error (and info) lines.
function M.run(case, opts)
  local dir = opts.dir
  M.materialise(case, dir)
  local rq, fl = M.commands(case, opts)
  local ok_rq = os.execute("cd " .. q(dir) .. " && timeout 60 " .. rq)
  local ok_fl, how, code = os.execute("cd " .. q(dir) .. " && " .. fl)
  local want, got = slurp(dir .. "/expected.out"), slurp(dir .. "/fluence.out")
  if not ok_rq or not want then
    return false, "resource-query failed: " .. (slurp(dir .. "/expected.err") or "")
  end
  if not ok_fl then
    return false, ("fluence exited %s %s: %s"):format(how, code, slurp(dir .. "/fluence.err") or "")
  end
  if want ~= got then
    return false, ("line %d differs:\n  resource-query: %s\n  fluence:        %s"):format(first_difference(want, got))
  end
  local werr = M.normalise_err(slurp(dir .. "/expected.err") or "")
  local gerr = slurp(dir .. "/fluence.err") or ""
  if werr ~= gerr then
    return false, ("stderr line %d differs:\n  resource-query: %s\n  fluence:        %s"):format(first_difference(werr, gerr))
  end
  return true
end

-- ------------------------------------------------------------ CLI
--   lua5.4 fuzz/differential.lua [SEED [CASES]]   CASES streams from SEED on
--   lua5.4 fuzz/differential.lua --seeds FILE      the kept seeds of FILE
-- (lines "SEED HASH [what]"): each must still make the stream whose hash
-- is recorded (a changed generator makes other streams of those seeds),
-- and agree.  With FLUENCE_FLUXION_LIB set, fluence matches through it.
if arg and arg[0] and arg[0]:match("differential%.lua$") and not M.library then
  local root = arg[0]:match("^(.*)/fuzz/[^/]*$") or "."
  if root:sub(1, 1) ~= "/" then root = os.getenv("PWD") .. "/" .. root end
  local rqp = os.getenv("FLUENCE_RESOURCE_QUERY") or (root .. "/../shared/fluxion/bin/resource-query")
  local opts = { fluence = root .. "/bin/fluence", resource_query = rqp }
  if os.getenv("FLUENCE_DIFF_POLICIES") then
    M.policies = {}
    for p in os.getenv("FLUENCE_DIFF_POLICIES"):gmatch("[^,]+") do M.policies[#M.policies + 1] = p end
  end
  local seeds, want_hash = {}, {}
  if arg[1] == "--seeds" then
    for line in assert(io.open(arg[2])):lines() do
      local seed, hash = line:match("^(%d+)%s+(%x+)")
      if seed then
        seeds[#seeds + 1] = tonumber(seed)
        want_hash[tonumber(seed)] = hash
      end
    end
  else
    local seed = tonumber(arg[1] or os.getenv("FLUENCE_DIFF_SEED") or os.time())
    local n = tonumber(arg[2] or os.getenv("FLUENCE_DIFF_CASES") or 100)
    for i = 0, n - 1 do seeds[#seeds + 1] = seed + i end
  end
  local failed, changed = 0, 0
  for _, seed in ipairs(seeds) do
    local case = M.generate(seed)
    opts.dir = ("%s/build/differential/%d"):format(root, seed)
    if want_hash[seed] and want_hash[seed] ~= M.stream_hash(case) then
      changed = changed + 1
      io.write(("CHANGED seed %d: the generator no longer makes the stream that differed (hash %s, now %s)\n"):format(
        seed, want_hash[seed], M.stream_hash(case)))
    else
      local ok, why = M.run(case, opts)
      if ok then
        os.execute("rm -rf " .. q(opts.dir))
      else
        failed = failed + 1
        local rq, fl = M.commands(case, opts)
        write(opts.dir .. "/README", ("seed %d (%s graph, policy %s, format %s)\n%s\n\ncd %s\n%s\n%s\n"):format(
          seed, case.family, case.policy, case.format, why, opts.dir, rq, fl))
        io.write(("FAIL seed %d (%s, %s, %s): %s\n"):format(seed, case.family, case.policy, case.format, why))
      end
    end
  end
  io.write(("%d streams%s: %d agree, %d differ%s\n"):format(#seeds, arg[1] == "--seeds" and (" of " .. arg[2]) or
    (" from seed " .. seeds[1]), #seeds - failed - changed, failed, changed > 0 and (", " .. changed .. " changed") or ""))
  os.exit(failed == 0 and changed == 0 and 0 or 1)
end

return M
