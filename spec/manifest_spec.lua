-- fluence.manifest: byte-preserving reading and rewriting of manifests.
--
-- The fixture corpus lives in spec/fixtures/manifests: NAME.yaml / NAME.json
-- inputs with NAME.golden outputs (after setting the two annotations below on
-- every object that asks for selection).  FLUENCE_UPDATE_GOLDEN=1 rewrites
-- the golden files (review the diff!).
local manifest = require "fluence.manifest"
local yaml = require "fluence.yaml"
local json = require "fluence.json"

local DIR = "spec/fixtures/manifests/"
local BACKEND = "fluence.flux-framework.org/require-backend"
local RESULT = "fluence.flux-framework.org/select-result"
local AUDIT = '{"policy":"min-cost","chosen":"gpu-l4","candidates":[{"name":"gpu-l4","cost_usd":0.8}],'
  .. '"note":"say \\"hi\\": {ok} # not a comment"}'
local EDITS = { [BACKEND] = "gpu-l4", [RESULT] = AUDIT }

local function slurp(path) return assert(require("support.cli").slurp(path)) end

local function fixtures()
  local list = {}
  local p = io.popen("ls " .. DIR)
  for name in p:lines() do
    if name:match("%.yaml$") or name:match("%.json$") then list[#list + 1] = name end
  end
  p:close()
  table.sort(list)
  return list
end

-- Parses, sets EDITS on every object that wants selection, renders.
local function rewrite(text, name)
  local s = assert(manifest.parse(text, name))
  for _, o in ipairs(s:objects()) do
    if o.wants_selection then assert(s:set_annotations(o.index, EDITS)) end
  end
  return s:render(), s
end

-- Drops what the rewrite adds so input and output can be compared: the two
-- keys, then annotations/metadata left empty (or null) by that.
local function normalize(v)
  if type(v) ~= "table" then return v end
  local out = {}
  for k, x in pairs(v) do out[k] = normalize(x) end
  if type(out.annotations) == "table" or out.annotations == yaml.null then
    if type(out.annotations) == "table" then
      out.annotations[BACKEND] = nil
      out.annotations[RESULT] = nil
    end
    if out.annotations == yaml.null or next(out.annotations) == nil then out.annotations = nil end
  end
  for _, k in ipairs{ "metadata", "pod" } do      -- pod: a MiniCluster's spec.pod
    if out[k] == yaml.null or (type(out[k]) == "table" and next(out[k]) == nil) then out[k] = nil end
  end
  return out
end

describe("fluence.manifest fixtures", function()
  for _, file in ipairs(fixtures()) do
    local base = file:gsub("%.%w+$", "")
    describe(file, function()
      local input = slurp(DIR .. file)
      local output, stream = rewrite(input, file)

      it("matches the golden output", function()
        local golden_path = DIR .. base .. ".golden"
        if os.getenv("FLUENCE_UPDATE_GOLDEN") then
          local f = assert(io.open(golden_path, "wb"))
          f:write(output)
          f:close()
        end
        assert.are.equal(slurp(golden_path), output)
      end)

      it("is idempotent", function()
        assert.are.equal(output, (rewrite(output, file)))
      end)

      it("changes nothing but the added annotations (libyaml round trip)", function()
        local before = assert(yaml.decode_all(input, file))
        local after = assert(yaml.decode_all(output, file))
        assert.are.same(normalize(before), normalize(after))
      end)

      it("writes values that read back exactly, on objects and Fluence pod templates", function()
        local again = assert(manifest.parse(output, file))
        local objs, orig = again:objects(), stream:objects()
        assert.are.equal(#orig, #objs)
        for i, o in ipairs(objs) do
          if orig[i].wants_selection then
            assert.are.equal("gpu-l4", o.annotations[BACKEND])
            assert.are.equal(AUDIT, o.annotations[RESULT])
            for _, t in ipairs(o.templates) do
              if t.targets_fluence then
                assert.are.equal("gpu-l4", t.annotations[BACKEND], t.path)
                assert.are.equal(AUDIT, t.annotations[RESULT], t.path)
              end
            end
          else
            assert.are.same(orig[i].annotations, o.annotations)
          end
        end
      end)

      if file:match("%.json$") then
        it("stays JSON", function()
          assert.is_true(stream:is_json())
          assert(json.decode(output, file))
        end)
      end

      it("gives every object as JSON equal to its YAML", function()
        local docs = assert(yaml.decode_all(output, file))
        local objects = {}
        for _, d in ipairs(docs) do
          if type(d) == "table" and type(d.kind) == "string" and d.kind:match("List$") and d.items then
            for _, item in ipairs(d.items) do objects[#objects + 1] = item end
          elseif type(d) == "table" then
            objects[#objects + 1] = d
          end
        end
        for i, o in ipairs(objects) do
          if type(o.metadata) == "table" then o.metadata.managedFields = nil end
          assert.are.same(o, assert(json.decode(assert(stream:object_json(i)))))
        end
      end)
    end)
  end
end)

describe("fluence.manifest odd shapes", function()
  local cases = {
    "metadata:\n  name: x",                                   -- no final newline
    "metadata: # c\n  name: x\n",
    "metadata:\n  name: a\n    b\n  other: |\n    text\n",     -- multi-line plain, block last
    "metadata:\n  name: x\n# only a comment\n",
    "spec: {}\nmetadata:\n  name: x\n  labels:\n    a: b\n",
    "metadata:\n  annotations:\n    a: >\n      folded\n\n",
    "metadata:\n  annotations:\n    a: b\n...\n",
    "metadata:\r\n  annotations:\r\n",
    "metadata:\r\n  annotations: ~\r\n",
    "metadata: {name: x,\n  labels: {a: b}\n}\n",
    "metadata:\n  annotations: {\n    a: b\n  }\n",
    "kind: List\nitems:\n  - metadata:\n      name: a\n  - metadata: {}\n",
    "metadata:\n  name: \"multi\n    line\"\n",
    "? metadata\n: name: x\n",
    "metadata:\n  ? annotations\n  : a: b\n",
    "metadata:\n  annotations:\n    \"quoted key\": v\n    fluence.flux-framework.org/require-backend: ''\n",
    "metadata:\n  annotations:\n    fluence.flux-framework.org/require-backend:\n    x: y\n",
    "%YAML 1.1\n--- !!map\nmetadata:\n  name: x\n",
    "--- {metadata: {name: x}}\n--- {metadata: null}\n",
    '{"metadata": {"name": "x", "annotations": {}}}',
    "metadata: !!map\n  name: x\n",
    "metadata:\n  name: x\n  annotations: !!map {}\n",
    "metadata:\n  annotations:\n    <<: {fluence.flux-framework.org/require-backend: old}\n    a: b\n",
    "metadata:\n  annotations:\n    fluence.flux-framework.org/require-backend: \"old\"# glued\n",
    "metadata: &m\n  name: x\nspec:\n  template:\n    metadata: *m\n    spec:\n      schedulerName: fluence\n      containers: []\n",
  }
  for i, text in ipairs(cases) do
    it(("case %d round-trips, reads back and is idempotent"):format(i), function()
      local s = assert(manifest.parse(text, "case"))
      for _, o in ipairs(s:objects()) do assert(s:set_annotations(o.index, EDITS)) end
      local out = s:render()
      assert.are.same(normalize(assert(yaml.decode_all(text))), normalize(assert(yaml.decode_all(out))))
      local again = assert(manifest.parse(out, "out"))
      for _, o in ipairs(again:objects()) do
        assert.are.equal("gpu-l4", o.annotations[BACKEND])
        assert.are.equal(AUDIT, o.annotations[RESULT])
        assert(again:set_annotations(o.index, EDITS))
      end
      assert.are.equal(out, again:render())
      if text:find("\r\n") then assert.is_nil(out:find("[^\r]\n")) end
    end)
  end
end)

describe("fluence.manifest objects", function()
  local function objects(text)
    return assert(manifest.parse(text, "t.yaml")):objects()
  end

  it("describes a Job and its pod template", function()
    local o = objects(slurp(DIR .. "job.yaml"))[1]
    assert.are.equal(1, o.index)
    assert.are.equal("Job", o.kind)
    assert.are.equal("batch/v1", o.apiVersion)
    assert.are.equal("train-job", o.name)
    assert.are.equal(4, o.parallelism)
    assert.are.equal(4, o.completions)
    assert.is_nil(o.replicas)
    assert.is_true(o.targets_fluence)
    assert.is_true(o.wants_selection)
    assert.are.equal(2, o.line)
    assert.are.equal(1, #o.templates)
    local t = o.templates[1]
    assert.are.equal("spec.template", t.path)
    assert.are.equal("fluence", t.scheduler_name)
    assert.are.equal(4, t.replicas)
    assert.are.same({ cpu = "1", memory = "512Mi" }, t.containers[1].requests)
    assert.are.equal("worker", t.containers[1].name)
    assert.are.same({}, t.annotations)
    assert.is_nil(o.json)      -- on demand only: stream:object_json(i)
    local st = assert(manifest.parse(slurp(DIR .. "job.yaml"), "t.yaml"))
    assert.are.equal("train-job", json.decode(st:object_json(o.index)).metadata.name)
  end)

  it("treats a Pod as its own template, with requests, limits and env", function()
    local o = objects(slurp(DIR .. "pod.yaml"))[1]
    assert.are.equal("ml", o.namespace)
    local t = o.templates[1]
    assert.are.equal("", t.path)
    assert.are.same({ cpu = "2", memory = "4Gi", ["nvidia.com/gpu"] = "1" }, t.containers[1].requests)
    assert.are.same({ ["nvidia.com/gpu"] = "1" }, t.containers[1].limits)
    assert.are.same({ N_SHOTS = "100" }, t.containers[1].env)
  end)

  it("finds pod templates at any depth, with the nearest replica count", function()
    local o = objects(slurp(DIR .. "jobset.yaml"))[1]
    local paths = {}
    for _, t in ipairs(o.templates) do paths[#paths + 1] = t.path .. "=" .. tostring(t.replicas) end
    assert.are.same({
      "spec.replicatedJobs[0].template.spec.template=1",
      "spec.replicatedJobs[1].template.spec.template=3",
      "spec.replicatedJobs[2].template.spec.template=1",
    }, paths)
    assert.is_true(o.templates[1].targets_fluence)
    assert.is_false(o.templates[3].targets_fluence)
    -- many items; replica counts through merge keys and aliases
    local items = {}
    for i = 0, 11 do items[#items + 1] = ("  - {template: {spec: {containers: [{name: c%d}]}}}"):format(i) end
    local many = objects("kind: X\nbase: &b {replicas: 5}\nspec:\n  <<: *b\n  jobs:\n" ..
                         table.concat(items, "\n") .. "\n")[1]
    assert.are.equal(12, #many.templates)
    assert.are.equal("spec.jobs[11].template", many.templates[12].path)
    assert.are.equal(5, many.templates[12].replicas)
    local m = objects(slurp(DIR .. "mpijob.yaml"))[1]
    assert.are.equal("spec.mpiReplicaSpecs.Launcher.template", m.templates[1].path)
    assert.are.equal(2, m.templates[2].replicas)
    local c = objects(slurp(DIR .. "cronjob.yaml"))[1]
    assert.are.equal("spec.jobTemplate.spec.template", c.templates[1].path)
    assert.are.equal(2, c.templates[1].replicas)
    local pt = objects(slurp(DIR .. "podtemplate.yaml"))[1]
    assert.are.equal("template", pt.templates[1].path)
  end)

  it("recognises the group label on the object or a template", function()
    local rc = objects(slurp(DIR .. "replicationcontroller.yaml"))[1]
    assert.is_nil(rc.templates[1].scheduler_name)
    assert.is_true(rc.templates[1].targets_fluence)
    assert.is_true(rc.wants_selection)
    local mc = objects(slurp(DIR .. "minicluster.yaml"))[1]
    assert.is_true(mc.targets_fluence)
    local mc2 = objects("apiVersion: flux-framework.org/v1alpha2\nkind: MiniCluster\nspec:\n" ..
                        "  pod: {schedulerName: fluence}\n  containers:\n  - image: x\n")[1]
    assert.are.equal("fluence", mc2.templates[1].scheduler_name)
    assert.is_true(mc2.targets_fluence)
    local a = objects(slurp(DIR .. "anchors.yaml"))[1]
    assert.is_true(a.templates[1].targets_fluence)
    assert.are.equal("init", a.templates[1].init_containers[1].name)
  end)

  it("leaves non-Fluence objects alone", function()
    local objs = objects(slurp(DIR .. "nonfluence.yaml"))
    assert.are.equal(2, #objs)
    assert.is_false(objs[1].targets_fluence)
    assert.is_false(objs[1].wants_selection)
    assert.are.equal(0, #objs[2].templates)
  end)

  it("makes each List item an object, and skips empty documents", function()
    local objs = objects(slurp(DIR .. "list.yaml"))
    assert.are.equal(3, #objs)
    assert.are.equal("untouched", objs[2].name)
    assert.are.equal(4, #objects(slurp(DIR .. "multidoc.yaml")) + 1)
    assert.are.equal(0, #objects("# nothing\n---\n...\n"))
  end)

  it("returns copies", function()
    local s = assert(manifest.parse(slurp(DIR .. "pod.yaml"), "p"))
    s:objects()[1].annotations.x = "y"
    assert.is_nil(s:objects()[1].annotations.x)
  end)

  it("returns tables of the caller's own on every call, all alike", function()
    -- the first call hands over the tables parse built; later ones parse again
    local s = assert(manifest.parse(slurp(DIR .. "multidoc.yaml"), "m"))
    local a, b, c = s:objects(), s:objects(), s:objects()
    assert.are_not.equal(a, b)
    assert.are_not.equal(b, c)
    assert.are_not.equal(a[1].templates, b[1].templates)
    assert.are.same(a, b)
    assert.are.same(b, c)
    a[1].annotations.x = "y"
    assert.is_nil(c[1].annotations.x)
    assert(s:set_annotations(1, EDITS))   -- objects describe the text as parsed
    assert.are.same(a[1].templates, s:objects()[1].templates)
  end)
end)

describe("fluence.manifest edits", function()
  local function edit(text, kv, index)
    local s = assert(manifest.parse(text, "t.yaml"))
    assert(s:set_annotations(index or 1, kv))
    return s:render()
  end

  it("creates metadata and annotations where absent, at the siblings' indentation", function()
    assert.are.equal("kind: X\nspec: 1\nmetadata:\n  annotations:\n    k: v\n", edit("kind: X\nspec: 1\n", { k = "v" }))
    assert.are.equal("kind: X\nmetadata:\n  annotations:\n    k: v\n", edit("kind: X\n", { k = "v" }))
    assert.are.equal("metadata:\n    name: n\n    annotations:\n        k: v\n",
      edit("metadata:\n    name: n\n", { k = "v" }))
    -- the last entry is a block: insert before the first key instead
    assert.are.equal("metadata:\n  annotations:\n    k: v\nspec:\n  x: 1\n", edit("spec:\n  x: 1\n", { k = "v" }))
  end)

  it("fills empty, null and {} annotations", function()
    assert.are.equal("metadata:\n  annotations:\n    k: v\n", edit("metadata:\n  annotations:\n", { k = "v" }))
    assert.are.equal("metadata:\n  annotations:\n    k: v\n", edit("metadata:\n  annotations: null\n", { k = "v" }))
    assert.are.equal("metadata:\n  annotations: {k: v}\n", edit("metadata:\n  annotations: {}\n", { k = "v" }))
    assert.are.equal("metadata:\n  annotations:\n    k: v\n", edit("metadata:\n", { k = "v" }))
    assert.are.equal('{"metadata": {"annotations": {"k": "v"}}}', edit('{"metadata": {"annotations": null}}', { k = "v" }))
  end)

  it("writes entries in key order, quoting anything not trivially plain", function()
    local out = edit("metadata:\n  name: n\n", {
      b = "true", a = "12", c = "plain-value", d = "with: colon", e = "line\nbreak\tand \"quotes\" \\",
      f = "", g = "\127\194\133", h = "ünïcødé", i = "yes", j = "a\226\128\168b\226\128\169c",
    })
    assert.are.equal('metadata:\n  name: n\n  annotations:\n    a: "12"\n    b: "true"\n    c: plain-value\n'
      .. '    d: "with: colon"\n    e: "line\\nbreak\\tand \\"quotes\\" \\\\"\n    f: ""\n'
      .. '    g: "\\u007f\\u0085"\n    h: "ünïcødé"\n    i: "yes"\n    j: "a\\u2028b\\u2029c"\n', out)
    local back = yaml.decode(out).metadata.annotations
    assert.are.same({ a = "12", b = "true", c = "plain-value", d = "with: colon",
      e = "line\nbreak\tand \"quotes\" \\", f = "", g = "\127\194\133", h = "ünïcødé", i = "yes",
      j = "a\226\128\168b\226\128\169c" }, back)
  end)

  it("replaces an existing value in place, whatever its style", function()
    assert.are.equal("metadata:\n  annotations:\n    k: new # c\n    z: 1\n",
      edit("metadata:\n  annotations:\n    k: 'old' # c\n    z: 1\n", { k = "new" }))
    assert.are.equal("metadata:\n  annotations:\n    k: new\n\n    z: 1\n",
      edit("metadata:\n  annotations:\n    k: |\n      line 1\n      line 2\n\n    z: 1\n", { k = "new" }))
    assert.are.equal("metadata:\n  annotations:\n    k: new\n    z: 1\n",
      edit("metadata:\n  annotations:\n    k:\n    z: 1\n", { k = "new" }))
    -- an equal value keeps the user's quoting
    local same = "metadata:\n  annotations:\n    k: 'v'\n"
    assert.are.equal(same, edit(same, { k = "v" }))
  end)

  it("keeps CRLF line endings", function()
    assert.are.equal("metadata:\r\n  name: n\r\n  annotations:\r\n    k: v\r\n",
      edit("metadata:\r\n  name: n\r\n", { k = "v" }))
  end)

  it("merges repeated calls, the last value winning", function()
    local s = assert(manifest.parse("metadata:\n  name: n\n", "t"))
    assert(s:set_annotations(1, { k = "1", j = "x" }))
    assert(s:set_annotations(1, { k = "2" }))
    assert.are.equal("metadata:\n  name: n\n  annotations:\n    j: x\n    k: \"2\"\n", s:render())
  end)

  it("writes JSON members in JSON documents", function()
    local s = assert(manifest.parse('{"kind":"Pod","metadata":{"name":"p"}}', "p.json"))
    assert(s:set_annotations(1, { k = "v" }))
    assert.are.equal('{"kind":"Pod","metadata":{"name":"p","annotations":{"k":"v"}}}', s:render())
    s = assert(manifest.parse('{"metadata":{"annotations":{}}}', "p.json"))
    assert(s:set_annotations(1, { k = "v", j = "w" }))
    assert.are.equal('{"metadata":{"annotations":{"j":"w","k":"v"}}}', s:render())
    s = assert(manifest.parse('{"metadata": {"name": "x"}, "kind": "Pod"}', "p.json"))
    assert(s:set_annotations(1, { k = "v" }))
    assert.are.equal('{"metadata": {"name": "x", "annotations": {"k": "v"}}, "kind": "Pod"}', s:render())
  end)

  it("gives the edited stream as JSON", function()
    local s = assert(manifest.parse("kind: Pod\nmetadata:\n  name: p\n  managedFields: [1]\n", "p"))
    assert(s:set_annotations(1, { k = "v" }))
    assert.are.equal('{\n    "kind": "Pod",\n    "metadata": {\n        "name": "p",\n        "managedFields": [\n'
      .. '            1\n        ],\n        "annotations": {\n            "k": "v"\n        }\n    }\n}\n', s:render_json())
    assert.are.equal('{"kind":"Pod","metadata":{"name":"p","annotations":{"k":"v"}}}', s:object_json(1))
    local two = assert(manifest.parse("kind: A\n---\nkind: B\n", "t"))
    assert.are.same({ apiVersion = "v1", kind = "List", items = { { kind = "A" }, { kind = "B" } } },
      json.decode(two:render_json()))
  end)

  it("edits an aliased metadata where its anchor defines it", function()
    local text = "items:\n- metadata: &m\n    name: a\n- metadata: *m\nkind: List\n"
    local s = assert(manifest.parse(text, "t"))
    assert(s:set_annotations(2, { k = "v" }))
    assert.are.equal("items:\n- metadata: &m\n    name: a\n    annotations:\n      k: v\n- metadata: *m\nkind: List\n",
      s:render())
  end)

  it("rejects values that cannot be written", function()
    local s = assert(manifest.parse("metadata:\n  annotations:\n    k: &a v\n    j: [1]\n", "t.yaml"))
    local ok, err = s:set_annotations(1, { k = "x" })
    assert.is_nil(ok)
    assert.are.equal("t.yaml:3:8: the annotation's value has an anchor (&name): replacing it would break its aliases\n"
      .. "        k: &a v\n           ^", err)
    ok, err = s:set_annotations(1, { j = "x" })
    assert.is_nil(ok)
    assert.matches("t.yaml:4:8: the annotation's value is not a string", err, 1, true)
    ok, err = s:set_annotations(1, { x = "\255" })
    assert.is_nil(ok)
    assert.matches("not valid UTF-8", err, 1, true)
  end)
end)

describe("fluence.manifest scopes: the object, or its pod templates", function()
  local JOB = [[
apiVersion: batch/v1
kind: Job
metadata:
  name: j
spec:
  template:
    spec:
      schedulerName: fluence
      containers: [{name: c, image: i}]
]]
  local function docs(s) return assert(yaml.decode(s:render())) end

  it("writes each scope only where it belongs, and both when no scope is named", function()
    local s = assert(manifest.parse(JOB, "j.yaml"))
    assert(s:set_annotations(1, { a = "1", both = "o" }, "object"))
    assert(s:set_annotations(1, { both = "t" }, "templates"))
    local d = docs(s)
    assert.are.same({ a = "1", both = "o" }, d.metadata.annotations)
    assert.are.same({ both = "t" }, d.spec.template.metadata.annotations)
    s = assert(manifest.parse(JOB, "j.yaml"))
    assert(s:set_annotations(1, { k = "v" }))
    d = docs(s)
    assert.are.same({ k = "v" }, d.metadata.annotations)
    assert.are.same({ k = "v" }, d.spec.template.metadata.annotations)
  end)

  it("leaves the templates untouched when only the object is written", function()
    local s = assert(manifest.parse(JOB, "j.yaml"))
    assert(s:set_annotations(1, { k = "v" }, "object"))
    assert.is_nil(docs(s).spec.template.metadata)
  end)

  it("refuses an unknown scope", function()
    local s = assert(manifest.parse(JOB, "j.yaml"))
    assert.has_error(function() s:set_annotations(1, { k = "v" }, "pods") end)
  end)

  local MC = [[
apiVersion: flux-framework.org/v1alpha2
kind: MiniCluster
metadata:
  name: mc
%s  annotations:
    fluence.flux-framework.org/select-policy: min-cost
spec:
  size: 2
%s  containers:
    - image: x
]]
  local GROUP = "  labels:\n    fluence.flux-framework.org/group: g\n"
  local function stamp(text)
    local s = assert(manifest.parse(text, "mc.yaml"))
    assert(s:objects()[1].wants_selection)
    assert(s:set_annotations(1, { [BACKEND] = "gpu-l4", [RESULT] = "{}" }, "object"))
    assert(s:set_annotations(1, { [BACKEND] = "gpu-l4" }, "templates"))
    return s:render()
  end

  it("writes a MiniCluster's pod pin into spec.pod.annotations, which the Flux Operator copies to its pods", function()
    local out = stamp(MC:format("", "  pod:\n    schedulerName: fluence\n"))
    assert.are.equal(MC:format("", "  pod:\n    schedulerName: fluence\n    annotations:\n" ..
                                   "      " .. BACKEND .. ": gpu-l4\n")
                       :gsub("select%-policy: min%-cost\n", function(m)
                         return m .. "    " .. BACKEND .. ": gpu-l4\n    " .. RESULT .. ": \"{}\"\n" end), out)
    local d = assert(yaml.decode(out))
    assert.are.same({ [BACKEND] = "gpu-l4" }, d.spec.pod.annotations)
    assert.are.equal("fluence", d.spec.pod.schedulerName)
  end)

  it("adds to a MiniCluster's existing pod annotations, or creates spec.pod", function()
    local d = assert(yaml.decode(stamp(MC:format("", "  pod:\n    annotations:\n      team: a\n    schedulerName: fluence\n"))))
    assert.are.same({ team = "a", [BACKEND] = "gpu-l4" }, d.spec.pod.annotations)
    d = assert(yaml.decode(stamp(MC:format(GROUP, ""))))
    assert.are.same({ annotations = { [BACKEND] = "gpu-l4" } }, d.spec.pod)
  end)

  it("locates a MiniCluster whose spec.pod is not a mapping", function()
    local s, err = manifest.parse(MC:format(GROUP, "  pod: [1]\n"), "mc.yaml")
    assert.is_nil(s)
    assert.matches("^mc%.yaml:11:8: spec%.pod is not a mapping", err)
  end)
end)

describe("fluence.manifest non-ASCII text", function()
  -- libyaml counts characters, edits need bytes: the same stream with
  -- multi-byte characters in place of some ASCII ones must be edited at the
  -- same places (long ASCII runs between them, as real manifests have)
  local template = [[
# ZZ comment xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx Z
apiVersion: batch/v1
kind: Job
metadata:
  name: jZ
  labels: {team: "ZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZ", Zk: v}
  annotations:
    note: "Z Z ZZ xxxxxxxxxxxxxxxxxxxxxZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZ"
    fluence.flux-framework.org/require-backend: "ZZZZZZZZZZZZ xxxxxxxxxxxxxxxxxxxx Z"
    fluence.flux-framework.org/select-policy: min-cost  # Z xxxxxxxxxxxxxxxxx
spec:
  template:
    metadata:
      labels: {x: "ZZZZZZZZZZZZZZZxxxxxxxxxZ"}
    spec:
      schedulerName: fluence
      containers:
      - name: c
        image: ZZZZZZZZZ
        args:
        - |
          ZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZ
          Z xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx Z
---
apiVersion: v1
kind: Pod
metadata: {name: "pZ", annotations: {fluence.flux-framework.org/select-policy: "Z"}}
spec: {schedulerName: fluence, containers: [{name: "ZZZZZZZZZZZZZZZZZZZZZZZ", image: x}]}
]]
  for _, ch in ipairs({ "\195\169", "\226\130\172", "\240\157\132\158" }) do
    it(("with %d-byte characters"):format(#ch), function()
      local ascii = rewrite((template:gsub("Z", "q")), "a.yaml")
      local wide = rewrite((template:gsub("Z", ch)), "u.yaml")
      assert.are_not.equal(ascii, template)
      assert.are.equal(ascii, (wide:gsub(ch, "q")))
    end)
  end
end)

describe("fluence.manifest stream:write", function()
  -- a child Lua writes the stream to its stdout; it must be render's text
  local function written(path, edits)
    local out = os.tmpname()
    local script = os.tmpname()
    local f = assert(io.open(script, "wb"))
    f:write(([[
package.cpath = %q
local manifest = require "fluence.manifest"
local f = assert(io.open(%q, "rb"))
local s = assert(manifest.parse(f:read("a"), "x"))
f:close()
for _, o in ipairs(s:objects()) do
  if %s and o.wants_selection then assert(s:set_annotations(o.index, { a = "b", c = ("d"):rep(300) })) end
end
assert(s:write(1))
]]):format(package.cpath, path, edits and "true" or "false"))
    f:close()
    assert(os.execute(("lua5.4 %s > %s"):format(script, out)))
    local text = slurp(out)
    os.remove(out)
    os.remove(script)
    return text
  end

  local function rendered(path, edits)
    local s = assert(manifest.parse(slurp(path), "x"))
    for _, o in ipairs(s:objects()) do
      if edits and o.wants_selection then assert(s:set_annotations(o.index, { a = "b", c = ("d"):rep(300) })) end
    end
    return s:render()
  end

  it("writes exactly what render returns, edited or not", function()
    for _, f in ipairs({ "job.yaml", "multidoc.yaml", "crlf.yaml", "bom.yaml", "pretty.json", "list.yaml" }) do
      for _, edits in ipairs({ true, false }) do
        assert.are.equal(rendered(DIR .. f, edits), written(DIR .. f, edits), f)
      end
    end
  end)

  it("writes a stream with hundreds of edits (many write batches)", function()
    local parts = {}
    for i = 1, 300 do
      parts[i] = ("kind: Pod\nmetadata: {name: p%d, annotations: {fluence.flux-framework.org/select-policy: x}}\n" ..
                  "spec: {schedulerName: fluence, containers: [{name: c}]}\n"):format(i)
    end
    local path = os.tmpname()
    local f = assert(io.open(path, "wb"))
    f:write(table.concat(parts, "---\n"))
    f:close()
    local want = rendered(path, true)
    assert.are.equal(want, written(path, true))
    assert.is_true(#want > 300 * 300)
    os.remove(path)
  end)
end)

describe("fluence.manifest errors", function()
  it("locates parse errors with the source line and a caret", function()
    local s, err = manifest.parse("kind: Pod\nmetadata:\n  name: [a, b\nspec: {}\n", "bad.yaml")
    assert.is_nil(s)
    assert.matches("^bad%.yaml:%d+:%d+: ", err)
    assert.matches("\n    .*\n    +%^$", err)
    s, err = manifest.parse("a: 1\nb: : 2\n", "-")
    assert.is_nil(s)
    assert.are.equal("<stdin>:2:4: mapping values are not allowed in this context\n    b: : 2\n       ^", err)
  end)

  it("rejects duplicate keys in a Fluence object, warns of them in any other (kubectl keeps the last)", function()
    local s, err = manifest.parse("kind: Pod\nmetadata:\n  name: a\n  name: b\nspec:\n  schedulerName: fluence\n",
                                  "dup.yaml")
    assert.is_nil(s)
    assert.are.equal('dup.yaml:4:3: duplicate key "name" in a Fluence object: kubectl would keep the last one; ' ..
                     'say which one you mean\n      name: b\n      ^', err)
    s = assert(manifest.parse("kind: Pod\nmetadata:\n  name: a\n  name: b\n", "dup.yaml"))
    assert.are.same({ 'dup.yaml:4:3: duplicate key "name": kubectl keeps the last one; passed through unchanged\n' ..
                      '      name: b\n      ^' }, s:warnings())
    assert.are.equal('{"kind":"Pod","metadata":{"name":"b"}}', s:object_json(1))
  end)

  it("rejects a Fluence object whose metadata or annotations is not a mapping", function()
    local text = "kind: Job\nmetadata:\n  annotations:\n    fluence.flux-framework.org/select-policy: min-cost\n"
      .. "spec:\n  template:\n    metadata: [oops]\n    spec:\n      schedulerName: fluence\n      containers: []\n"
    local s, err = manifest.parse(text, "job.yaml")
    assert.is_nil(s)
    assert.are.equal("job.yaml:7:15: spec.template.metadata must be a mapping, not a sequence\n" ..
                     "        metadata: [oops]\n                  ^", err)
    -- a non-Fluence object parses; writing to it is the error
    s = assert(manifest.parse("kind: ConfigMap\nmetadata:\n  annotations: text\n", "cm.yaml"))
    local ok
    ok, err = s:set_annotations(1, { k = "v" })
    assert.is_nil(ok)
    assert.are.equal("cm.yaml:3:16: metadata.annotations is not a mapping\n      annotations: text\n                   ^", err)
  end)

  it("refuses to write into a single-pair flow mapping ([k: v] has no braces)", function()
    local s = assert(manifest.parse("kind: List\nitems: [kind: Pod]\n", "pair.yaml"))
    local ok, err = s:set_annotations(1, { k = "v" })
    assert.is_nil(ok)
    assert.matches("^pair%.yaml:2:9: cannot add annotations to a single%-pair mapping", err)
  end)

  it("rejects documents that are not objects", function()
    local s, err = manifest.parse("kind: A\n---\n- a list\n", "l.yaml")
    assert.is_nil(s)
    assert.matches("^l%.yaml:3:1: a manifest document must be a mapping", err)
  end)

  it("rejects alias bombs", function()
    local lines = { "a0: &a0 [x, x, x, x, x, x, x, x, x, x]" }
    for i = 1, 9 do
      lines[#lines + 1] = ("a%d: &a%d [*a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d]"):format(
        i, i, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1)
    end
    local s, err = manifest.parse(table.concat(lines, "\n") .. "\n", "bomb.yaml")
    assert.is_nil(s)
    assert.matches("billion laughs", err, 1, true)
  end)
end)

describe("fluence.manifest scale", function()
  it("rewrites a 10 MB stream, and gives every object as JSON, in linear time", function()
    local doc = [[
apiVersion: batch/v1
kind: Job
metadata:
  name: job-%d
  annotations:
    fluence.flux-framework.org/select-policy: min-cost
spec:
  template:
    spec:
      schedulerName: fluence
      containers:
      - name: c
        image: busybox
        env: [{name: A, value: "%s"}]
]]
    local parts, pad = {}, string.rep("x", 200)
    local size, n = 0, 0
    while size < 10 * 1024 * 1024 do
      n = n + 1
      parts[n] = doc:format(n, pad)
      size = size + #parts[n] + 4
    end
    local text = table.concat(parts, "---\n")
    local t0 = os.clock()
    local s = assert(manifest.parse(text, "big.yaml"))
    local objs = s:objects()
    for i = 1, #objs, 2 do assert(s:set_annotations(i, EDITS)) end
    local out = s:render()
    for i = 1, #objs do assert(s:object_json(i)) end
    local elapsed = os.clock() - t0
    assert.are.equal(n, #objs)
    assert.is_true(#out > #text)
    assert.is_true(elapsed < 10, ("took %.2f s"):format(elapsed))
    -- linear: a stream twice as large takes roughly twice as long, not four times
    local t1 = os.clock()
    local s2 = assert(manifest.parse(text .. "---\n" .. text, "big2.yaml"))
    for i = 1, 2 * n, 2 do assert(s2:set_annotations(i, EDITS)) end
    s2:render()
    for i = 1, 2 * n do assert(s2:object_json(i)) end
    local elapsed2 = os.clock() - t1
    assert.is_true(elapsed2 < 4 * elapsed + 1, ("%.2f s then %.2f s"):format(elapsed, elapsed2))
  end)
end)

-- manifest.parse(text, name, {active_only = true}): descriptions only of the
-- objects a selection can concern; every object keeps its index.
describe("manifest.parse with active_only", function()
  local manifest = require "fluence.manifest"
  local text = [[
apiVersion: v1
kind: ConfigMap
metadata: {name: a}
data: {x: "1"}
---
apiVersion: batch/v1
kind: Job
metadata:
  name: j
  annotations: {fluence.flux-framework.org/select-policy: min-cost}
spec:
  template:
    spec: {schedulerName: fluence, containers: [{name: c, image: x}]}
---
apiVersion: v1
kind: Pod
metadata: {name: p}
spec: {schedulerName: default, containers: [{name: c, image: x}]}
---
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: b, labels: &l {fluence.flux-framework.org/group: g}}
- apiVersion: v1
  kind: Pod
  metadata: {name: q, labels: *l}
  spec: {containers: [{name: c, image: x}]}
]]

  it("describes the objects that could be selected, with their indexes, and every object on request", function()
    local s = assert(manifest.parse(text, "m.yaml", { active_only = true }))
    local names = {}
    for _, o in ipairs(s:active()) do names[#names + 1] = o.index .. ":" .. o.name end
    -- the List's document has a group label somewhere: both its items are described
    assert.are.same({ "2:j", "4:b", "5:q" }, names)
    local all = {}
    for _, o in ipairs(s:objects()) do all[#all + 1] = o.index .. ":" .. o.name end
    assert.are.same({ "1:a", "2:j", "3:p", "4:b", "5:q" }, all)
    -- the active descriptions are those of a full parse
    local full = assert(manifest.parse(text, "m.yaml")):objects()
    local again = assert(manifest.parse(text, "m.yaml", { active_only = true })):active()
    assert.are.same(full[2], again[1])
    assert.are.same(full[5], again[3])
    -- and the stream edits and renders the same
    assert.is_true(s:set_annotations(2, { ["fluence.flux-framework.org/require-backend"] = "x" }))
    local f = assert(manifest.parse(text, "m.yaml"))
    assert.is_true(f:set_annotations(2, { ["fluence.flux-framework.org/require-backend"] = "x" }))
    assert.are.equal(f:render(), s:render())
  end)
end)
