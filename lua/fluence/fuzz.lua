-- Fuzz targets (fuzz/fuzz_target.c runs one per input in a fresh runtime).
-- Each takes arbitrary bytes and exercises one reader end to end, checking
-- properties along the way.  Raising a structured error (fluence.errors) or
-- getting nil, message back is fine; a plain Lua error is a finding.
local errors = require "fluence.errors"

local fuzz = {}

-- Plain errors from our own assertions must reach the harness: structured
-- errors are how a reader says "bad input".
local function check(cond, msg) if not cond then error("property violated: " .. msg, 0) end end

function fuzz.yaml(data)
  local yaml, json = require "fluence.yaml", require "fluence.json"
  local docs = yaml.decode_all(data, "fuzz.yaml")
  if docs then pcall(json.encode, docs) end     -- NaN/inf/cycles may refuse: fine
end

function fuzz.json(data)
  local json = require "fluence.json"
  local v = json.decode(data, "fuzz.json")
  if v ~= nil then
    local text = json.encode(v)
    check(json.encode(json.decode(text)) == text, "JSON re-encoding is not stable")
  end
end

-- The manifest reader and rewriter: parse, stamp every Fluence object, render,
-- and the output must parse again and keep the edits.
-- A parse for active objects only (what select does) must fail as the full
-- one does and describe every object that targets Fluence or wants a
-- selection, as the full parse does.
local function same(a, b)
  if type(a) ~= type(b) then return false end
  if type(a) ~= "table" then return a == b end
  for k, v in pairs(a) do if not same(v, b[k]) then return false end end
  for k in pairs(b) do if a[k] == nil then return false end end
  return true
end

-- What a parse gives: its error, or its objects, warnings and the text
-- rendered after stamping every object that wants a selection.
local function outcome(manifest, data, opts)
  local s, err = manifest.parse(data, "fuzz.yaml", opts)
  if not s then return { err = err } end
  local objs = opts.active_only and s:active() or s:objects()
  local r = { objects = objs, warnings = s:warnings(), set = {} }
  for _, obj in ipairs(objs) do
    if obj.wants_selection then
      r.set[#r.set + 1] = { s:set_annotations(obj.index, { ["fluence.flux-framework.org/require-backend"] = "b" }) }
    end
  end
  r.render = s:render()
  return r
end

-- A stream read on two threads (core/manifest_split.c) gives what one
-- thread gives, whatever the seam: at the first, a middle and the last
-- document start.
local function two_threads(manifest, data)
  local seams = {}
  for at in data:gmatch("\n()%-%-%-") do seams[#seams + 1] = at end
  if #seams == 0 then return end
  for _, active_only in ipairs{ false, true } do
    local one = outcome(manifest, data, { split = false, active_only = active_only })
    for _, i in ipairs{ 1, (#seams + 1) // 2, #seams } do
      check(same(one, outcome(manifest, data, { split = seams[i], active_only = active_only })),
            "a parse on two threads differs from one thread's, seam at byte " .. seams[i])
    end
  end
end

function fuzz.manifest(data)
  local manifest = require "fluence.manifest"
  two_threads(manifest, data)
  local s = manifest.parse(data, "fuzz.yaml")
  local a = manifest.parse(data, "fuzz.yaml", { active_only = true })
  check((s == nil) == (a == nil), "a parse for active objects only disagrees on whether the text parses")
  if not s then return end
  local full = s:objects()
  local active = {}
  for _, obj in ipairs(a:active()) do active[obj.index] = obj end
  for _, obj in ipairs(full) do
    if obj.targets_fluence or obj.wants_selection then
      check(same(active[obj.index], obj), "a parse for active objects only lost or changed an object")
    end
  end
  s = manifest.parse(data, "fuzz.yaml")
  local stamped = {}
  for _, obj in ipairs(s:objects()) do
    -- where the policy is written: a mapping, when there is one, stays in
    -- the annotation's own bytes
    local key = "fluence.flux-framework.org/select-policy"
    local text = obj.annotations[key]
    for _, t in ipairs(obj.templates) do text = text or (t.targets_fluence and t.annotations[key]) or nil end
    if obj.wants_selection and text then
      local src = require("fluence.policy_source").manifest(s, obj.index, key, text)
      local first, last = s:annotation_span(obj.index, key, text)
      if src and src.map then
        -- its first, middle and last bytes (each mapping decodes the value
        -- O(log n) times: every byte would be quadratic)
        for _, pos in ipairs{ 1, (#text + 1) // 2, #text } do
          local at = src.map(pos)
          check(at and at + first - 1 >= first and at + first - 1 <= last, "policy mapped outside its annotation")
        end
        check(src:location(1, "x"), "no location for a mapped policy")
      end
    end
    if obj.wants_selection then
      local ok = s:set_annotations(obj.index, {
        ["fluence.flux-framework.org/require-backend"] = "gpu-l4",
        ["fluence.flux-framework.org/select-result"] = '{"chosen":"gpu-l4","notes":["a: \\"b\\"\\n#c"]}',
      })
      if ok then stamped[#stamped + 1] = obj.index end
    end
    -- the JSON kubectl would send: when there is one, it is JSON, without a
    -- key twice (jansson refuses that), and indenting it changes nothing
    local text = s:object_json(obj.index)
    if text then
      local json = require "fluence.json"
      local v = json.decode(text)
      check(v ~= nil, "object JSON that is not JSON: " .. text:sub(1, 200))
      check(json.encode(json.decode(manifest.indent_json(text, 4, 0))) == json.encode(v), "indenting changed the JSON")
    end
  end
  local out = s:render()
  local again, err = manifest.parse(out, "rendered.yaml")
  check(again, "rendered output does not parse: " .. tostring(err))
  local objs = again:objects()
  for _, i in ipairs(stamped) do
    check(objs[i] and objs[i].annotations["fluence.flux-framework.org/require-backend"] == "gpu-l4",
          "stamped annotation lost")
  end
  if #stamped == 0 then check(out == data, "an unedited stream changed") end
end

-- Plugins load once per process (the harness keeps one runtime).
local policies, providers, api
local function registry()
  if not policies then
    policies = require("fluence.plugins").load_policies{ home = "/nonexistent", path = "" }
  end
  return policies
end
local function provider(name)
  if not providers then
    api = require("fluence.provider_api").new{}
    providers = require("fluence.plugins").load_providers{ api = api, home = "/nonexistent", path = "" }
  end
  return providers.get(name), api
end

-- The policy language: compile, and run what compiles on a fixed pool.
function fuzz.policy(data)
  local pipeline = require "fluence.pipeline"
  local pl = pipeline.compile(data, { policies = registry(), cost_tol = 0.1 })
  if not pl then return end
  local backends = {
    { name = "a", attrs = { cost_usd = 1, memory_gb = 24, queue_size = 3, status = "ONLINE", region = "us" } },
    { name = "b", attrs = { cost_usd = 0.5, memory_gb = 16, status = "offline" } },
    { name = "c", attrs = { cost_usd = 2, memory_gb = 80, queue_size = 0, throughput = 9 } },
  }
  local r = pl:run(backends, { shots = 1000, pods = 1 })
  check(type(r) == "table" and (r.ok or type(r.error) == "string"), "pipeline result malformed")
end

-- Attribute files, through the real file provider.
function fuzz.attributes(data)
  local sandbox = require "fluence.sandbox"
  local _, base = provider("file")
  local fake = setmetatable({ read_file = function() return data end }, { __index = base })
  -- a fresh copy of the provider per input: it caches parsed files per run
  local src = require("fluence.sys").embedded("providers/file.lua")
  local _, plugin = sandbox.call(assert(load(src, "@providers/file.lua", "b", sandbox.env{ api = fake })),
                                 sandbox.DEFAULT_BUDGET)
  sandbox.call(plugin.candidates, sandbox.DEFAULT_BUDGET,
               { request = { shots = 1000 }, options = { attributes = { "fuzz.yaml" } }, api = fake })
  -- the reader in C decides only what the reference accepts, and gives its
  -- records: the same values, integers and floats alike
  local fast = require("fluence.attrfile").decode(data, "dir/fuzz.yaml")
  if fast then
    local ok, ref = pcall(require("fluence.catalog").reference, data, "dir/fuzz.yaml")
    local function same(a, b)
      if type(a) ~= type(b) then return false end
      if type(a) == "number" then return math.type(a) == math.type(b) and (a == b or (a ~= a and b ~= b)) end
      if type(a) ~= "table" then return a == b end
      for k, v in pairs(a) do if not same(v, b[k]) then return false end end
      for k in pairs(b) do if a[k] == nil then return false end end
      return true
    end
    check(ok, "fluence.attrfile accepted a file the reference refuses: " .. tostring(ref))
    check(same(ref, fast), "fluence.attrfile and the reference disagree")
  end
end

-- kubeconfig files (exec credential plugins are compiled out of fuzz builds).
function fuzz.kubeconfig(data)
  local kube = require "fluence.kube"
  local sys = require "fluence.sys"
  local path = os.tmpname()
  sys.write_file(path, data)
  pcall(kube.load, { kubeconfig = path })
  os.remove(path)
end

-- The cluster's fluence-resources schema.
function fuzz.offerings(data)
  local offerings = require "fluence.offerings"
  local ok, e = pcall(offerings.parse, data, "resources.yaml")
  if not ok and not errors.is(e) and type(e) ~= "string" then error(e, 0) end
end

-- A small graph (a node of two sockets of cores, gpus and memory) for the
-- jobspec target's matches.
local SMALL = '{"graph": {"nodes": [' ..
  '{"id": "0", "metadata": {"type": "cluster", "paths": {"containment": "/cluster0"}}},' ..
  '{"id": "1", "metadata": {"type": "node", "rank": 0, "properties": {"fast": ""}, ' ..
  '"paths": {"containment": "/cluster0/node0"}}},' ..
  '{"id": "2", "metadata": {"type": "socket", "paths": {"containment": "/cluster0/node0/socket0"}}},' ..
  '{"id": "3", "metadata": {"type": "core", "paths": {"containment": "/cluster0/node0/socket0/core0"}}},' ..
  '{"id": "4", "metadata": {"type": "core", "id": 1, "paths": {"containment": "/cluster0/node0/socket0/core1"}}},' ..
  '{"id": "5", "metadata": {"type": "gpu", "paths": {"containment": "/cluster0/node0/socket0/gpu0"}}},' ..
  '{"id": "6", "metadata": {"type": "memory", "size": 4, "paths": {"containment": "/cluster0/node0/socket0/memory0"}}}],' ..
  '"edges": [{"source": "0", "target": "1"}, {"source": "1", "target": "2"}, {"source": "2", "target": "3"}, ' ..
  '{"source": "2", "target": "4"}, {"source": "2", "target": "5"}, {"source": "2", "target": "6"}]}}'

-- Jobspecs: fluence's reader, and Fluxion's with a whole match after it
-- (fluence match reads a jobspec as Fluxion does, then matches it).
function fuzz.jobspec(data)
  local match = require "fluence.match"
  match.parse_jobspec(data, "fuzz.yaml")
  local m = match.new(assert(match.load_jgf(SMALL, "small.json")), { policy = "first", format = "jgf" })
  m:run("allocate", data)
  m:run("allocate_orelse_reserve", data)
  m:run("allocate_with_satisfiability", data)
  m:run("satisfiability", data)
end

function fuzz.jgf(data)
  local match = require "fluence.match"
  local g = match.load_jgf(data, "fuzz.json")
  if g then
    -- read by the one JSON scanner (core/jscan.c), strict as for kubelists
    check(fuzz.is_json_text(data), "load_jgf accepted text that is not JSON")
    local m = match.new(g, { policy = "first" })
    m:run("allocate_orelse_reserve", "version: 1\nresources:\n- type: slot\n  count: 1\n  label: s\n" ..
          "  with:\n  - type: core\n    count: 1\ntasks:\n- command: [x]\n  slot: s\n  count: {per_slot: 1}\n" ..
          "attributes: {}\n",
          "fixed.yaml")
  end
end

-- Braket GetDevice answers, through the braket-live provider's reader.
function fuzz.braket(data)
  local sandbox = require "fluence.sandbox"
  local entry, base = provider("braket-live")
  local doc = base.json.decode(data, "GetDevice")
  if type(doc) ~= "table" then return end
  sandbox.call(entry.plugin.attributes, sandbox.DEFAULT_BUDGET, doc, 1000, base.json)
end

-- Node and pod list pages as the API server sends them (core/kubelists.c):
-- the scanner (core/jscan.c, JGF's too) is strict JSON, so whatever it
-- accepts must be JSON text by
-- RFC 8259's grammar.  The oracle is that grammar itself, not jansson:
-- jansson also refuses what the grammar allows and the scanner never reads
-- (a key given twice, 3333333333333333333333 or 1e999 in a skipped field).
local json_text
do
  local lpeg = require "lpeg"
  -- nesting deeper than the scanner's 512 levels is refused by it: LPeg's
  -- backtrack stack is sized for that
  lpeg.setmaxstack(16 * 512)
  local P, R, S, V = lpeg.P, lpeg.R, lpeg.S, lpeg.V
  local ws = S" \t\n\r"^0
  local hex = R("09", "af", "AF")
  local char = R(" !", "#[", "]\255") + P"\\" * (S'"\\/bfnrt' + "u" * hex * hex * hex * hex)
  local number = P"-"^-1 * (P"0" + R"19" * R"09"^0) * ("." * R"09"^1)^-1 * (S"eE" * S"+-"^-1 * R"09"^1)^-1
  json_text = P{ ws * V"value" * ws * -1,
    value = V"object" + V"array" + V"string" + number + "true" + "false" + "null",
    string = '"' * char^0 * '"',
    member = ws * V"string" * ws * ":" * ws * V"value" * ws,
    object = "{" * ws * (V"member" * ("," * V"member")^0)^-1 * "}",
    element = ws * V"value" * ws,
    array = "[" * ws * (V"element" * ("," * V"element")^0)^-1 * "]",
  }
end

-- Is data JSON text (RFC 8259: the grammar, in UTF-8)?
function fuzz.is_json_text(data)
  return utf8.len(data) ~= nil and json_text:match(data) ~= nil
end

function fuzz.kubelists(data)
  local kl = require "fluence.kubelists"
  local nodes = kl.nodes(data)
  if nodes then
    check(fuzz.is_json_text(data), "kubelists.nodes accepted text that is not JSON")
    for _, n in ipairs(nodes) do check(type(n.name) == "string" and n.cpu >= 0 and n.memory >= 0, "bad node record") end
  end
  local acc = kl.usage()
  local count = acc:add(data)
  if count then
    check(fuzz.is_json_text(data), "usage:add accepted text that is not JSON")
    local total = 0
    for _, t in pairs(acc:totals()) do
      total = total + t.pods
      -- the pod asking the most: NAMESPACE/NAME, NAME or "" (no name), cut
      -- to the API server's lengths on a character's boundary
      check(type(t.top) == "string" and utf8.len(t.top) ~= nil and #t.top <= 63 + 1 + 253 and
            t.top:sub(-1) ~= "/", "bad top pod " .. ("%q"):format(tostring(t.top)))
    end
    check(total == count, "pods counted and pods totalled differ")
  end
end

return fuzz
