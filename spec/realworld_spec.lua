-- A corpus of real-world manifests (spec/fixtures/realworld, sources in its
-- SOURCES.md): JobSet, Kubeflow, Volcano, Argo, KubeRay, LeaderWorkerSet,
-- agent-sandbox, the Flux Operator, kubernetes/examples, Kueue, and the Go
-- client's recorded Pods.  For every file (issue 31):
--
-- * an input that asks for no selection passes through `select` byte for
--   byte, without a word on stderr;
-- * one that does gets only added lines, each a pin or audit annotation or
--   the mapping that holds them; every Fluence pod (by the kinds table:
--   templates, an Argo Workflow's podMetadata, a MiniCluster's spec.pod)
--   carries the chosen backend, and nothing is left unpinned;
-- * `-o json` is the JSON kubectl sends (NAME.kubectl.json, recorded; and
--   the installed kubectl's, when there is one);
-- * the known kinds' paths find every pod template the shape search finds.
local cli = require "support.cli"
local kj = require "support.kubectl_json"
local manifest = require "fluence.manifest"
local json = require "fluence.json"

local DIR = cli.root .. "/spec/fixtures/realworld"
local ATTRS = DIR .. "/attributes.yaml"
local KUBECTL = kj.available()
local PIN = "fluence.flux-framework.org/require-backend"
local RESULT = "fluence.flux-framework.org/select-result"

local function corpus()
  local files = {}
  local p = io.popen("cd " .. cli.quote(DIR) .. " && find . -name '*.yaml' -o -name '*.json' | sort")
  for f in p:lines() do
    f = f:gsub("^%./", "")
    if not f:match("%.kubectl%.json$") and f ~= "attributes.yaml" then files[#files + 1] = f end
  end
  p:close()
  return files
end

-- the lines fluence may add: a pin, an audit, or a mapping holding them
local function added(line)
  local t = line:match("^%s*(.-),?%s*$")
  return t:find(PIN, 1, true) or t:find(RESULT, 1, true) or
         t == "annotations:" or t == "metadata:" or t == "podMetadata:" or t == '"annotations": {' or t == "}"
end

-- raw JSON without what fluence adds: the pin and the audit annotations,
-- and the mappings that held only them
local function unpinned(raw)
  local s = kj.compact(raw)
  local c = s:sub(1, 1)
  if c == "[" then
    local parts = {}
    for _, e in ipairs(kj.elements(s)) do parts[#parts + 1] = unpinned(e) end
    return "[" .. table.concat(parts, ",") .. "]"
  end
  if c ~= "{" then return s end
  local parts = {}
  for _, m in ipairs(kj.members(s)) do
    if m.key ~= PIN and m.key ~= RESULT then
      local v = unpinned(m.raw)
      local holder = m.key == "annotations" or m.key == "metadata" or m.key == "podMetadata" or m.key == "pod"
      if not (holder and v == "{}") then parts[#parts + 1] = json.encode(m.key) .. ":" .. v end
    end
  end
  return "{" .. table.concat(parts, ",") .. "}"
end

describe("real-world manifests", function()
  local dir
  setup(function() dir = cli.tmpdir() end)
  teardown(cli.cleanup)

  local files = corpus()
  it("are all there", function() assert.is_true(#files >= 30, #files .. " files") end)
  if not KUBECTL then
    pending("kubectl is not installed: the pinned manifests are held to kubectl's recorded answers only")
  end

  for _, f in ipairs(files) do
    describe(f, function()
      local path = DIR .. "/" .. f
      local text = assert(cli.slurp(path))
      local objects = assert(manifest.parse(text, f)):objects()
      local wanting = 0
      for _, o in ipairs(objects) do if o.wants_selection then wanting = wanting + 1 end end

      it(wanting == 0 and "passes through byte for byte" or ("pins its %d Fluence object(s), adding lines only"):format(wanting),
         function()
        local r = cli.run{ "select", "-f", path, "--attributes", ATTRS, "--offline", env = { HOME = dir } }
        assert.are.equal(0, r.code, r.err)
        assert.is_nil(r.err:find("warning", 1, true), r.err)
        if wanting == 0 then
          assert.are.equal(text, r.out)
          assert.are.equal("", r.err)
          return
        end
        -- the input's lines, all of them, in order: only lines were added
        local want, i = cli.lines(text), 1
        for _, line in ipairs(cli.lines(r.out)) do
          -- (JSON: the member before an added one gains its comma)
          if line == want[i] or line == (want[i] or "") .. "," then i = i + 1
          else assert.truthy(added(line), "changed or added: " .. line) end
        end
        assert.are.equal(#want + 1, i, "a line of the input is missing from the output")
        local _, n = r.err:gsub("selected backend", "")
        assert.are.equal(wanting, n, r.err)
        -- every Fluence pod carries the object's pin
        local out = assert(manifest.parse(r.out, f)):objects()
        for k, o in ipairs(out) do
          if objects[k].wants_selection then
            local chosen = assert(o.annotations[PIN], "no pin on " .. (o.name or "?"))
            assert.is_string(o.annotations[RESULT])
            local pods = 0
            for _, t in ipairs(o.templates) do
              if t.targets_fluence then
                pods = pods + 1
                assert.are.equal(chosen, t.annotations[PIN] or (t.path == "" and o.annotations[PIN]),
                                 ("%s: %s"):format(o.name, t.path))
              end
            end
            assert.is_true(pods > 0, (o.name or "?") .. ": no Fluence pod found")
            assert.are.same({}, o.unpinned)
          end
        end
      end)

      it("is sent as kubectl sends it (-o json)", function()
        local r = cli.run{ "select", "-f", path, "--attributes", ATTRS, "--offline", "-o", "json", env = { HOME = dir } }
        assert.are.equal(0, r.code, r.err)
        local mine = kj.objects(r.out)
        local want = kj.objects(assert(cli.slurp(path:gsub("%.%w+$", ".kubectl.json"))))
        assert.are.equal(#want, #mine)
        -- kubectl's answer was recorded for the input: what fluence added
        -- (the pin, the audit) is left out of both sides
        for k = 1, #want do assert.are.equal(kj.canonical(unpinned(want[k])), kj.canonical(unpinned(mine[k]))) end
      end)

      if KUBECTL then
        it("is sent, pinned, as the installed kubectl sends the pinned manifest", function()
          local r = cli.run{ "select", "-f", path, "--attributes", ATTRS, "--offline", env = { HOME = dir } }
          assert.are.equal(0, r.code, r.err)
          local pinned = cli.write(dir .. "/pinned-" .. f:gsub("/", "-"), r.out)
          -- already pinned: this select changes nothing and prints its JSON
          local mine = cli.run{ "select", "-f", pinned, "--attributes", ATTRS, "--offline", "-o", "json",
                                env = { HOME = dir } }
          assert.are.equal(0, mine.code, mine.err)
          local theirs = kj.local_json(r.out)
          assert.are.equal(0, theirs.code, theirs.err)
          local a, b = kj.objects(mine.out), kj.split(theirs.out)
          assert.are.equal(#b, #a)
          for k = 1, #a do assert.are.equal(kj.canonical(b[k]), kj.canonical(a[k])) end
        end)
      end

      it("has the pod templates its kind's table finds, and no other", function()
        local shaped = assert(manifest.parse(text, f, { by_shape = true })):objects()
        for k, o in ipairs(objects) do
          local paths = {}
          for _, t in ipairs(o.templates) do paths[t.path] = true end
          -- a pod held in the object's own spec (a MiniCluster's) is the
          -- object itself to the shape search
          paths[""] = paths[""] or paths.spec
          for _, t in ipairs(shaped[k].templates) do
            assert.is_true(paths[t.path] or false, ("%s: %s: the shape search finds %s, the table does not")
                                                     :format(f, o.kind, t.path))
          end
        end
      end)
    end)
  end
end)
