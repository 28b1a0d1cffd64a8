-- fluence.attrfile (core/attrfile.c), the attribute-file reader in C, against
-- the reference reader it stands in for (catalog.reference: fluence.yaml and
-- the checks the file provider always made).  On every file of a generated
-- corpus -- YAML and JSON, good and bad, every field in every order, wrong
-- types, duplicates, anchors, tags -- the C reader either gives exactly the
-- reference's records (values, and integer or float) or leaves the file to
-- it (nil); and catalog.decode, which every run uses, gives the reference's
-- records or its located error, byte for byte.
local attrfile = require "fluence.attrfile"
local catalog = require "fluence.catalog"

-- deep equality that also tells integers from floats
local function same(a, b, path)
  if type(a) ~= type(b) then return false, path end
  if type(a) == "number" then
    return math.type(a) == math.type(b) and (a == b or (a ~= a and b ~= b)), path
  end
  if type(a) ~= "table" then return a == b, path end
  for k, v in pairs(a) do
    local ok, p = same(v, b[k], path .. "." .. tostring(k))
    if not ok then return false, p end
  end
  for k in pairs(b) do if a[k] == nil then return false, path .. "." .. tostring(k) end end
  return true
end

-- A deterministic generator (an LCG: the same corpus on every machine).
local function generator(seed)
  local g = {}
  local state = seed
  function g.rand(m)
    state = (state * 1103515245 + 12345) % 2147483648
    return (state >> 15) % m + 1   -- the high bits: the low ones of an LCG cycle
  end
  function g.pick(t) return t[g.rand(#t)] end
  function g.chance(n) return g.rand(n) == 1 end
  return g
end

-- Values as YAML scalars (text) with what fluence.yaml makes of them.
local NUMBERS = { "3", "0.8", "-2", "1e5", "80", "0x1F", "3.20", "1E-3", ".5", "+7" }
local BAD_NUMBERS = { ".inf", "-.Inf", ".nan", "1e400", '"5"', "cheap", "true", "~", "null", "" }
local STRINGS = { "ONLINE", "us-east-1", "generic", '"quoted value"', "'single'", "!!str 5", "a b", "\"\"" }
local BAD_STRINGS = { "5", "0.3", "true", "~", "null", "FALSE", "!!int 7", ".inf", "" }

local function scalar_text(g, good, kind)
  if kind == "number" then return good and g.pick(NUMBERS) or g.pick(BAD_NUMBERS) end
  return good and g.pick(STRINGS) or g.pick(BAD_STRINGS)
end

-- A mapping as an ordered list of {key, value-text or nested list}, written
-- as block YAML, flow YAML or JSON-ish flow.
local function write(node, style, indent)
  indent = indent or ""
  if type(node) == "string" then return node end
  if node.seq then
    if style == "block" and #node > 0 then
      local out = {}
      for _, item in ipairs(node) do
        local body = write(item, style, indent .. "  ")
        out[#out + 1] = "\n" .. indent .. "- " .. body:gsub("^\n%s*", "")
      end
      return table.concat(out)
    end
    local out = {}
    for i, item in ipairs(node) do out[i] = write(item, "flow") end
    return "[" .. table.concat(out, ", ") .. "]"
  end
  if style == "block" and #node > 0 then
    local out = {}
    for _, kv in ipairs(node) do
      local v = write(kv[2], style, indent .. "  ")
      local sep = (type(kv[2]) == "table" and #kv[2] > 0 and not (kv[2].seq and false)) and ":" or ": "
      if type(kv[2]) == "table" and (#kv[2] > 0) then out[#out + 1] = "\n" .. indent .. kv[1] .. ":" .. v
      else out[#out + 1] = "\n" .. indent .. kv[1] .. sep .. v end
    end
    return table.concat(out)
  end
  local out = {}
  for i, kv in ipairs(node) do out[i] = kv[1] .. ": " .. write(kv[2], "flow") end
  return "{" .. table.concat(out, ", ") .. "}"
end

local function key(g, k, json)
  if json then return '"' .. k .. '"' end
  return g.chance(10) and ('"' .. k .. '"') or k
end

-- JSON wants its strings quoted; plain YAML words are quoted for it.
local function jsonish(v)
  if type(v) ~= "string" then return v end
  if v:match("^[%-+]?[%d.]") or v == "true" or v == "false" or v == "null" or v:match('^"') then return v end
  return '"' .. v:gsub("^'(.*)'$", "%1"):gsub('"', '\\"') .. '"'
end

local function section(g, kind, json, bad)
  local node = {}
  local names = { "cost_usd", "memory_gb", "throughput", "queue_size", "status", "region", "qubits", "provider" }
  local used = {}
  for _ = 1, g.rand(5) - 1 do
    local v = scalar_text(g, not (bad and g.chance(3)), kind)
    local k = g.pick(names)
    if not used[k] or bad then                   -- a repeated key only in a bad file
      used[k] = true
      node[#node + 1] = { key(g, k, json), json and jsonish(v) or v }
    end
  end
  if g.chance(25) then return "[]" end
  if g.chance(40) then return json and "[1]" or "[1, 2]" end
  if g.chance(40) then return "~" end
  return node
end

local function backend(g, i, json, bad)
  local b = {}
  local function add(k, v) b[#b + 1] = { key(g, k, json), json and jsonish(v) or v } end
  if not (bad and g.chance(8)) then
    local nm = (bad and g.chance(8)) and g.pick{ "5", '""', "true", "~" } or ("b%03d"):format(g.rand(40))
    add("name", nm)
  end
  local fields = { { "provider", "string" }, { "region", "string" }, { "device_arn", "string" },
                   { "graph", "string" }, { "cost_per_task", "number" }, { "cost_per_shot", "number" },
                   { "cost_per_minute", "number" }, { "qubits", "number" } }
  for _, f in ipairs(fields) do
    if g.chance(3) then
      local v = scalar_text(g, not (bad and g.chance(4)), f[2])
      if f[1] == "graph" and g.chance(2) then v = g.pick{ "g.json", "/abs/g.json", "sub/dir/g.json" } end
      add(f[1], v)
    end
  end
  if g.chance(2) then b[#b + 1] = { key(g, "attributes", json), section(g, "number", json, bad) } end
  if g.chance(2) then b[#b + 1] = { key(g, "strings", json), section(g, "string", json, bad) } end
  if g.chance(6) then add("description", g.pick{ "a GPU box", '"x"', "42" }) end
  if g.chance(20) then b[#b + 1] = { key(g, "tags", json), { seq = true, "a", "b" } } end
  if bad and #b > 0 and g.chance(10) then b[#b + 1] = b[g.rand(#b)] end             -- a duplicate key
  -- any order
  for j = #b, 2, -1 do
    local k = g.rand(j)
    b[j], b[k] = b[k], b[j]
  end
  if bad and g.chance(15) then return g.pick{ "x", "~", "[1]" } end
  return b
end

local function document(g, json, bad)
  local list = { seq = true }
  for i = 1, g.rand(4) do list[i] = backend(g, i, json, bad) end
  local root = {}
  if g.chance(2) then root[#root + 1] = { key(g, "version", json), "1" } end
  if bad and g.chance(10) then list = { seq = true }
  elseif bad and g.chance(10) then list = { { "x", "1" } } end
  if not (bad and g.chance(12)) then root[#root + 1] = { key(g, "backends", json), list } end
  if g.chance(8) then root[#root + 1] = { key(g, "metadata", json), { { "a", "1" } } } end
  if bad and g.chance(12) then root[#root + 1] = root[1] end
  local text = json and write(root, "flow") or write(root, "block"):gsub("^\n", "")
  if bad and g.chance(10) then text = text:sub(1, g.rand(#text + 1) - 1) end      -- cut short
  if g.chance(20) then text = text .. "\n---\nmore: [" end                          -- a second document
  if g.chance(25) then text = "&a " .. text end
  if g.chance(30) then text = text:gsub("attributes: {", "attributes: &x {", 1) end
  if bad and g.chance(20) then text = "- " .. text end
  return text .. "\n"
end

describe("the attribute-file reader in C", function()
  local function check(seed, n, json)
    local g = generator(seed)
    local differ, decided, good = {}, 0, 0
    for i = 1, n do
      local bad = g.chance(2)
      local text = document(g, json, bad)
      local path = g.pick{ "attrs.yaml", "dir/attrs.json", "/abs/dir/a.yaml" }
      local ok, ref = pcall(catalog.reference, text, path)
      local fast = attrfile.decode(text, path)
      if ok then good = good + 1 end
      if fast then
        decided = decided + 1
        local eq, where = same(ref, fast, "")
        if not ok or not eq then differ[#differ + 1] = ("%s (%s)"):format(text, ok and where or ref) end
      end
      -- what a run gets: the reference's answer, whichever reader gave it
      local ok2, got = pcall(catalog.decode, text, path)
      if ok2 ~= ok or not same(ref, got, "") then differ[#differ + 1] = "catalog.decode: " .. text end
      if #differ >= 3 then break end
    end
    assert.are.same({}, differ)
    return decided, good
  end

  it("agrees with the reference on generated YAML files, and decides most good ones", function()
    local decided, good = check(1, 4000, false)
    assert.is_true(good > 600, "the corpus has good files: " .. good)
    assert.is_true(decided > good / 2, ("decided %d of %d good files"):format(decided, good))
  end)

  it("agrees with the reference on generated JSON files, and decides most good ones", function()
    local decided, good = check(2, 4000, true)
    assert.is_true(good > 600, "the corpus has good files: " .. good)
    assert.is_true(decided > good / 2, ("decided %d of %d good files"):format(decided, good))
  end)

  it("decides the examples and the benchmark's shape, as the reference does", function()
    for _, f in ipairs{ "examples/quickstart/attributes.yaml", "examples/quantum/attributes.yaml" } do
      local h = assert(io.open(f, "rb"))
      local text = h:read("a")
      h:close()
      local fast = attrfile.decode(text, f)
      assert.is_table(fast, f)
      assert.is_true(same(catalog.reference(text, f), fast, ""), f)
    end
    local text = "version: 1\nbackends:\n" ..
      "  - name: b00001\n    provider: generic\n    region: eu-west-2\n" ..
      "    attributes: {cost_usd: 79.190, memory_gb: 16, throughput: 31, queue_size: 17}\n" ..
      "    strings: {status: ONLINE}\n"
    local fast = assert(attrfile.decode(text, "b.yaml"))
    assert.are.same({ { name = "b00001", attrs = { provider = "generic", region = "eu-west-2", cost_usd = 79.19,
                        memory_gb = 16, throughput = 31, queue_size = 17, status = "ONLINE" } } }, fast)
    assert.are.equal("integer", math.type(fast[1].attrs.memory_gb))
  end)

  it("applies the provider's precedence whatever the order: fields over strings over attributes", function()
    local text = [[
backends:
  - region: top
    strings: {region: s, qubits: "9", status: S}
    attributes: {status: 1, qubits: 2, cost_usd: 3, region: 4}
    name: x
    qubits: 5
]]
    local fast = assert(attrfile.decode(text, "p.yaml"))
    assert.are.same({ region = "top", qubits = 5, status = "S", cost_usd = 3 }, fast[1].attrs)
    assert.is_true(same(catalog.reference(text, "p.yaml"), fast, ""))
  end)

  it("leaves errors to the reference, which locates them", function()
    local text = "backends:\n  - name: x\n    attributes:\n      cost_usd: cheap\n"
    assert.is_nil(attrfile.decode(text, "a.yaml"))
    local ok, err = pcall(catalog.decode, text, "a.yaml")
    assert.is_false(ok)
    assert.matches("^a%.yaml:4:7: backends%[0%]%.attributes%.cost_usd: must be a finite number", err)
  end)
end)

describe("the attribute-file reader in C, on empty keys", function()
  it("leaves them to the reference, or reads them as it does", function()
    for _, text in ipairs{ "\n?", "? \n: x\n", 'backends:\n- name: x\n  "": 1\n  attributes: {"": 2, ? : 3}\n',
                           'backends:\n- name: x\n  attributes: {"": 2}\n' } do
      local ok, ref = pcall(catalog.reference, text, "e.yaml")
      local fast = attrfile.decode(text, "e.yaml")
      if fast then
        assert.is_true(ok, text)
        assert.are.same(ref, fast)
      end
    end
    assert.are.same({ { name = "x", attrs = { [""] = 2 } } },
                    attrfile.decode('backends:\n- name: x\n  attributes: {"": 2}\n', "e.yaml"))
  end)
end)
