-- A large stream is read on two threads (core/manifest_split.c): the main
-- thread parses up to a seam (a "---" line near the middle), a second
-- thread the rest, and the second thread's documents are used only when
-- the main parse ends a document exactly at the seam and the second thread
-- met no error or limit; otherwise the main thread parses on itself.  So
-- the two-thread parse must give exactly what one thread gives: the same
-- descriptions (lines and columns too), warnings, edits, rendered bytes
-- and errors.  manifest.parse's split option forces a seam at the first
-- document start at or after a byte, whatever the stream's size; split =
-- false parses on one thread.  Every stream below is compared at every
-- document start it has.
local manifest = require "fluence.manifest"
local cli = require "support.cli"
local sys = require "fluence.sys"

local KEY = "fluence.flux-framework.org/require-backend"
local ATTRS = cli.root .. "/examples/quickstart/attributes.yaml"

local function slurp(path) return assert(cli.slurp(path)) end

-- Every 1-based byte where a line "---" (then a blank, a break or the end)
-- starts, but the first byte: the seams a split may take.
local function seams(text)
  local out = {}
  for at in text:gmatch("\n()%-%-%-") do
    local c = text:sub(at + 3, at + 3)
    if c == "" or c:find("^[ \t\r\n]") then out[#out + 1] = at end
  end
  return out
end

-- What a parse gives: the error, or the objects (active ones only for an
-- active_only parse), warnings, the result of stamping every object and
-- the rendered text.
local function outcome(text, opts)
  local s, err = manifest.parse(text, "split.yaml", opts)
  if not s then return { err = err } end
  local objs = opts.active_only and s:active() or s:objects()
  local r = { objects = objs, warnings = s:warnings(), set = {}, seam = s:seam() }
  for _, o in ipairs(objs) do
    if o.targets_fluence or o.wants_selection then
      r.set[#r.set + 1] = { s:set_annotations(o.index, { [KEY] = "b-" .. o.index }) }
    end
  end
  r.render = s:render()
  r.json = s:is_json()
  if #objs > 0 and not opts.active_only then r.object_json = { s:object_json(#objs) } end
  return r
end

-- Compares the one-thread parse of text with a forced split at each seam;
-- returns how many of those splits the second thread's documents served.
local function compare(text, label)
  local used = 0
  for _, active_only in ipairs{ false, true } do
    local one = outcome(text, { split = false, active_only = active_only })
    assert.is_nil(one.seam)
    for _, at in ipairs(seams(text)) do
      local two = outcome(text, { split = at, active_only = active_only })
      if two.seam then
        used = used + 1
        assert.equal(at, two.seam)
      end
      two.seam = nil
      one.seam = nil
      assert.same(one, two, ("%s: split at byte %d%s"):format(label, at, active_only and " (active only)" or ""))
    end
  end
  return used
end

local function docs_of(dir, pattern)
  local out = {}
  for _, name in ipairs(assert(sys.list_dir(dir))) do
    if name:match(pattern) then out[#out + 1] = { name = name, text = slurp(dir .. "/" .. name) } end
  end
  assert(#out > 0, "no files in " .. dir)
  table.sort(out, function(a, b) return a.name < b.name end)
  return out
end

-- Runs a Lua script in a child lua5.4 with the same C modules (and, under
-- `make check-asan`, the same sanitizer preload: FLUENCE_CPATH's library
-- needs it) -> how, code, its stdout and stderr together.
local function child_lua(script, env)
  local dir = cli.tmpdir()
  local path = cli.write(dir .. "/child.lua", ("package.cpath = %q .. \"/?.so;\" .. package.cpath\n")
    :format(os.getenv("FLUENCE_CPATH") or (cli.root .. "/build/lib")) .. script)
  local out = dir .. "/child.out"
  local _, how, code = os.execute(("%s lua5.4 %s >%s 2>&1"):format(env or "", cli.quote(path), cli.quote(out)))
  return how, code, cli.slurp(out) or ""
end

local JOB = [[
apiVersion: batch/v1
kind: Job
metadata:
  name: train-%d
  labels:
    fluence.flux-framework.org/group: g%d
  annotations:
    fluence.flux-framework.org/select-policy: min-cost
spec:
  template:
    spec:
      schedulerName: fluence
      containers:
      - name: c
        image: busybox
        resources: {requests: {memory: 1Gi}}
]]

local CM = [[
apiVersion: v1
kind: ConfigMap
metadata:
  name: cm-%d
data:
  k: v%d
]]

local function job(i) return JOB:format(i, i) end
local function cm(i) return CM:format(i, i) end

-- n documents made by f(i), each after a "---" line
local function stream(n, f, sep)
  local out = {}
  for i = 1, n do out[#out + 1] = (sep or "---\n") .. f(i) end
  return table.concat(out)
end

describe("a stream read on two threads", function()
  it("gives the golden manifests what one thread gives, each alone and all in one stream", function()
    local all, used = {}, 0
    for _, f in ipairs(docs_of("spec/fixtures/manifests", "%.yaml$")) do
      used = used + compare(f.text, f.name)
      -- one stream: a BOM only at its start, a directive after "..."
      local t = f.text:gsub("^\239\187\191", ""):gsub("\n?$", "\n")
      all[#all + 1] = (t:find("^%%") and "...\n" or "---\n") .. t
    end
    local one = table.concat(all)
    used = used + compare(one, "the golden manifests in one stream")
    assert.is_true(used > 40, "the second thread served " .. used .. " splits")
  end)

  it("gives the fuzz corpus what one thread gives, each alone and all in one stream", function()
    local all = {}
    for _, f in ipairs(docs_of("fuzz/corpus/manifest", ".")) do
      compare(f.text, f.name)
      all[#all + 1] = f.text:gsub("\n?$", "\n")
    end
    compare(table.concat(all, "---\n"), "the fuzz corpus in one stream")
  end)

  it("serves Jobs among ConfigMaps from the second thread, with their lines and columns", function()
    local text = stream(30, function(i) return i % 3 == 0 and job(i) or cm(i) end)
    assert.equal(2 * #seams(text), compare(text, "jobs and configmaps"))
    -- and the defaults split a small stream on one thread
    assert.is_nil(manifest.parse(text, "x.yaml"):seam())
  end)

  it("handles anchors, aliases and merge keys on both sides of the seam", function()
    local doc = [[
base: &b {cpu: "1", memory: 1Gi}
kind: Job
apiVersion: batch/v1
metadata: {name: a%d, labels: &l {fluence.flux-framework.org/group: g}}
spec:
  template:
    metadata: {labels: *l}
    spec:
      schedulerName: fluence
      containers: [{name: c, resources: {requests: {<<: *b}}}]
]]
    local text = stream(8, function(i) return doc:format(i) end)
    assert.is_true(compare(text, "anchors") > 0)
  end)

  it("handles block scalars, quoted scalars and indented --- lines near the seam", function()
    local doc = [[
apiVersion: v1
kind: ConfigMap
metadata: {name: c%d}
data:
  script: |
    ---
    echo --- %d
  folded: >-
    a
    ---
  quoted: "x
    --- y"
  single: 'p

    --- q'
]]
    local text = stream(6, function(i) return doc:format(i, i) end)
    assert.is_true(compare(text, "scalars") > 0)
  end)

  it("gives the same errors for a --- line inside a quoted scalar or at a block scalar's end", function()
    local text = stream(3, cm) .. '---\na: "x\n---\ny"\n' .. stream(3, cm)
    compare(text, "quoted scalar broken by ---")
    text = stream(3, cm) .. "--- |\n  text\n---\nb: 1\n" .. stream(3, cm)
    compare(text, "block scalar ended by ---")
  end)

  it("handles ... markers, comments, empty documents and a bare --- at the end", function()
    local text = stream(3, cm) .. "...\n---\n# only a comment\n---\n" .. stream(3, job) .. "...\n" ..
                 "# after\n---\n---\n" .. cm(9) .. "---\n"
    assert.is_true(compare(text, "markers") > 0)
  end)

  it("handles CRLF, a BOM and non-ASCII text before the seam", function()
    local text = "\239\187\191" .. stream(4, function(i) return cm(i):gsub("v(%d+)", "\195\169\226\130\172%1") end)
                 .. stream(4, job)
    assert.is_true(compare(text, "bom and non-ascii") > 0)
    local crlf = text:gsub("\n", "\r\n")
    assert.is_true(compare(crlf, "crlf") > 0)
  end)

  it("handles Lists and keys written twice in either half", function()
    local list = [[
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: l%d}
- ]] .. job(0):gsub("\n", "\n  "):gsub("  $", "") .. "\n"
    local dup = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: d%d}\ndata: {a: 1, a: 2}\n"
    local text = stream(6, function(i)
      return i % 3 == 0 and list:format(i) or i % 3 == 1 and dup:format(i) or job(i)
    end)
    assert.is_true(compare(text, "lists and duplicates") > 0)
    -- a key written twice in a Fluence object is an error, in either half
    local bad = job(7):gsub("  name: train%-7\n", "  name: train-7\n  name: again\n")
    for _, where in ipairs{ 2, 6 } do
      text = stream(8, function(i) return i == where and bad or cm(i) end)
      local r = outcome(text, { split = false })
      assert.truthy(r.err and r.err:find("duplicate key", 1, true))
      compare(text, "duplicate in a Fluence object, document " .. where)
    end
  end)

  it("gives the same errors for bad input in either half and at the seam", function()
    local bads = {
      "a: b: c\n",                                   -- a parse error
      "- just\n- a list\n",                          -- not a mapping
      "apiVersion: v1\nkind: List\nitems: [1]\n",    -- a List item that is not a mapping
      "a: *nothing\n",                               -- an unknown alias
      "a: [\n",                                      -- unterminated, into the next document
      "key: \"unterminated\n",
      "a: !!binary x\n\t\n",
    }
    for bi, bad in ipairs(bads) do
      for _, where in ipairs{ 1, 3, 4, 5, 8 } do
        local text = stream(8, function(i) return i == where and bad or cm(i) end)
        local r = outcome(text, { split = false })
        assert.truthy(r.err, "bad input " .. bi .. " is an error")
        compare(text, ("bad input %d in document %d"):format(bi, where))
      end
    end
  end)

  it("holds aliases to the whole stream's budget, over both halves", function()
    -- each half under the budget (1 MiB + 4 x the input), both together over
    local big = ("x"):rep(1000)
    local half = "a: &a " .. big .. "\nb: [" .. ("*a, "):rep(600) .. "*a]\n"
    local text = "---\n" .. half .. "---\n" .. half
    local r = outcome(text, { split = false })
    assert.truthy(r.err and r.err:find("aliases expand", 1, true))
    compare(text, "alias budget over both halves")
    assert.is_nil(outcome("---\n" .. half, { split = false }).err)
  end)

  it("never splits JSON or a stream without a later document start", function()
    local json = '{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}\n'
    assert.is_nil(manifest.parse(json .. "---\n" .. json, "j", { split = 1 }):seam())
    assert.is_nil(manifest.parse(cm(1), "c", { split = 1 }):seam())
    assert.has_error(function() manifest.parse(cm(1), "c", { split = "middle" }) end)
    assert.has_error(function() manifest.parse(cm(1), "c", { split = 0 }) end)
  end)

  it("gives the same output, messages and exit codes from the command line (FLUENCE_MANIFEST_SPLIT)", function()
    local dir = cli.tmpdir()
    local bad_job = job(11):gsub("    spec:\n", "    spec: [1]\n    x:\n", 1)
    local cases = {
      clean = stream(12, function(i) return i % 2 == 0 and job(i) or cm(i) end),
      parse_error = stream(12, function(i) return i == 10 and "a: b: c\n" or job(i) end),
      bad_object = stream(12, function(i) return i == 11 and bad_job or job(i) end),
    }
    for name, text in pairs(cases) do
      local path = cli.write(dir .. "/" .. name .. ".yaml", text)
      local function run(split)
        return cli.run{ "select", "-f", path, "--attributes", ATTRS, "--offline",
                        env = { FLUENCE_MANIFEST_SPLIT = split, SOURCE_DATE_EPOCH = "1700000000" } }
      end
      local one, two = run("0"), run("1")
      assert.same(one, two, name)
      assert.equal(name == "clean" and 0 or 3, one.code, name .. ": " .. one.err)
    end
  end)

  it("takes the size to split from FLUENCE_MANIFEST_SPLIT (0 never; not a number: the default)", function()
    -- 4.5 MB: the default splits it
    local script = [[
local s = require("fluence.manifest").parse(("---\na: 1\n"):rep(500000), "x")
io.write(s:seam() and "two" or "one")
]]
    local want = { ["0"] = "one", ["1"] = "two", ["4500000"] = "two", ["4500001"] = "one",
                   abc = "two", ["12abc"] = "two", [""] = "two" }
    for value, threads in pairs(want) do
      local how, code, out = child_lua(script, "FLUENCE_MANIFEST_SPLIT=" .. cli.quote(value))
      assert.same({ "exit", 0, threads }, { how, code, out }, value)
    end
  end)

  it("ends the run with the file's name and exit 3 when a mapped file shrinks under the second thread", function()
    -- cut 8 KB past the seam: the second thread meets the missing pages
    -- long before the main thread has parsed its half (readfile.h's
    -- handler; the thread's signal mask keeps SIGBUS)
    local path = cli.tmpdir() .. "/big.yaml"
    local f = assert(io.open(path, "wb"))
    f:write(stream(20000, cm))                           -- 1.7 MB: mapped
    f:close()
    local how, code, msg = child_lua(([[
local manifest = require "fluence.manifest"
local text = assert(manifest.read(%q))
assert(#text > 1000000)
assert(os.execute("truncate -s " .. (#text // 2 + 8192) .. " " .. %q))
manifest.parse(text, "big.yaml", { split = #text // 2 })
]]):format(path, cli.quote(path)))
    assert.are.same({ "exit", 3 }, { how, code }, msg)
    assert.matches("fluence: " .. path:gsub("%p", "%%%0") .. ": the file changed %(was truncated%) while it was being read",
                   msg)
  end)

  it("splits a large stream by default, with the same result", function()
    local text = stream(1300, function(i) return i % 50 == 0 and job(i) or cm(i) .. ("  pad: " .. ("p"):rep(3400) .. "\n") end)
    assert.is_true(#text >= 4 * 1024 * 1024)
    local two = outcome(text, { active_only = true })
    assert.is_number(two.seam)
    two.seam = nil
    local one = outcome(text, { split = false, active_only = true })
    one.seam = nil
    assert.same(one, two)
  end)
end)
