-- `fluence fn`: a KRM function (ResourceList in, ResourceList out), checked
-- on its own and through the real runners: kpt (`kpt fn eval --exec`,
-- `kpt fn render` with a Kptfile pipeline) and kustomize (kubectl
-- kustomize's exec plugins; its KRM exec functions need --enable-exec,
-- which kubectl kustomize does not have).
local cli = require "support.cli"
local yaml = require "fluence.yaml"
local json = require "fluence.json"

local root = cli.root
local q = cli.quote
local P = "fluence.flux-framework.org/"
local ATTRS = root .. "/examples/quickstart/attributes.yaml"

local have = cli.have

-- Runs a shell command in cwd with bin/ first on PATH: {out=, err=, code=}.
local function sh(cmd, cwd)
  return cli.sh("PATH=" .. q(root .. "/bin:" .. os.getenv("PATH")) .. " SOURCE_DATE_EPOCH=0; export PATH " ..
                "SOURCE_DATE_EPOCH; " .. cmd, cwd)
end

-- A ResourceList of one Fluence Job (policy %s) and a ConfigMap, as kpt
-- writes it, with a functionConfig (%s, indented by two).
local LIST = [[
apiVersion: config.kubernetes.io/v1
kind: ResourceList
items:
- apiVersion: batch/v1
  kind: Job
  metadata:
    name: train   # the trainer
    namespace: ml
    annotations:
      fluence.flux-framework.org/select-policy: "%s"
      config.kubernetes.io/index: '0'
      internal.config.kubernetes.io/path: 'job.yaml'
      internal.config.kubernetes.io/seqindent: 'compact'
  spec:
    template:
      spec:
        schedulerName: fluence
        containers: [{name: c, image: x}]
- apiVersion: v1
  kind: ConfigMap
  metadata:
    name: other
    annotations:
      config.kubernetes.io/index: '1'
      internal.config.kubernetes.io/path: 'job.yaml'
  data: {a: b}
functionConfig:
%s
]]

local function configmap(data)
  local lines = { "  apiVersion: v1", "  kind: ConfigMap", "  metadata: {name: fluence}", "  data:" }
  for _, kv in ipairs(data) do lines[#lines + 1] = ("    %s: %q"):format(kv[1], kv[2]) end
  return table.concat(lines, "\n")
end

local function fn(stdin, ...)
  return cli.run{ "fn", stdin = stdin, env = { SOURCE_DATE_EPOCH = "0" }, ... }
end

describe("fluence fn", function()
  teardown(function() cli.cleanup() end)

  it("pins the items select would pin, keeping every other byte, and reports in results", function()
    local input = LIST:format("require:memory_gb>=24,min-cost",
                              configmap{ { "attributes", ATTRS }, { "offline", "true" } })
    local r = fn(input)
    assert.are.equal(0, r.code, r.err)
    assert.are.equal("", r.err)
    -- the input's bytes come first, with the annotation lines added
    local body, results = r.out:match("^(.*\n)(results:\n.*)$")
    assert.truthy(body, r.out)
    local kept = body:gsub("\n *fluence%.flux%-framework%.org/require%-backend: [^\n]*", "")
                     :gsub("\n *fluence%.flux%-framework%.org/select%-result: [^\n]*", "")
                     :gsub("\n *metadata:\n *annotations:\n", "\n")
    assert.are.equal(input, kept)
    local rl = assert(yaml.decode(r.out))
    local job = rl.items[1]
    assert.are.equal("gpu-l4", job.metadata.annotations[P .. "require-backend"])
    assert.are.equal("gpu-l4", job.spec.template.metadata.annotations[P .. "require-backend"])
    assert.are.equal("job.yaml", job.metadata.annotations["internal.config.kubernetes.io/path"])
    assert.are.equal("0", job.metadata.annotations["config.kubernetes.io/index"])
    assert.is_nil(rl.items[2].metadata.annotations[P .. "require-backend"])
    assert.are.equal(1, #rl.results)
    local res = rl.results[1]
    assert.are.equal("info", res.severity)
    assert.matches('^selected backend "gpu%-l4" %(policy "require:memory_gb>=24,min%-cost"%); dropped ', res.message)
    assert.are.same({ apiVersion = "batch/v1", kind = "Job", name = "train", namespace = "ml" }, res.resourceRef)
    assert.are.same({ path = "metadata.annotations[" .. P .. "require-backend]" }, res.field)
    assert.are.same({ path = "job.yaml", index = 0 }, res.file)
  end)

  it("exits 1 with the ResourceList and an error result when a selection fails", function()
    local r = fn(LIST:format("require:memory_gb>=240", configmap{ { "attributes", ATTRS }, { "offline", "true" } }))
    assert.are.equal(1, r.code)
    local rl = assert(yaml.decode(r.out), r.out)
    assert.are.equal("ResourceList", rl.kind)
    local res = rl.results[1]
    assert.are.equal("error", res.severity)
    assert.are.equal("Job/train: selection failed: policy \"require:memory_gb>=240\" eliminated all candidates; " ..
                     "dropped gpu-a100: memory_gb 80, wants >= 240; gpu-l4: memory_gb 24, wants >= 240; " ..
                     "gpu-t4: memory_gb 16, wants >= 240", res.message)
    assert.are.same({ path = "metadata.annotations[" .. P .. "select-policy]" }, res.field)
    assert.is_nil(rl.items[1].metadata.annotations[P .. "require-backend"])
  end)

  it("exits 3 with an error result for a bad functionConfig, naming the key and its place", function()
    for _, c in ipairs{
      { { "offline", "maybe" }, "functionConfig.data.offline: expected true or false" },
      { { "cost-tol", "abc" }, 'functionConfig.data.cost%-tol: "abc" is not a number >= 0' },
      { { "atributes", "x" }, "functionConfig.data.atributes: unknown option %(one of: attributes, " },
      { { "filename", "x" }, "functionConfig.data.filename: unknown option" },
    } do
      local r = fn(LIST:format("min-cost", configmap{ c[1] }))
      assert.are.equal(3, r.code, c[2])
      local rl = assert(yaml.decode(r.out))
      assert.are.equal("error", rl.results[1].severity)
      assert.matches("^ResourceList:%d+:%d+: " .. c[2], rl.results[1].message)
    end
  end)

  it("takes a FluenceSelect with inline attributes, lists and booleans", function()
    local typed = table.concat({
      "  apiVersion: fluence.flux-framework.org/v1alpha1",
      "  kind: FluenceSelect",
      "  metadata: {name: select}",
      "  spec:",
      "    offline: true",
      "    cost-tol: 0.5",
      "    attributes:",
      "      - backends:",
      "          - {name: small, attributes: {cost_usd: 1, memory_gb: 16}}",
      "          - {name: big, attributes: {cost_usd: 1.4, memory_gb: 80}}",
      "          - {name: huge, attributes: {cost_usd: 9, memory_gb: 640}}",
    }, "\n")
    local r = fn(LIST:format("require:memory_gb>=24,min-cost", typed))
    assert.are.equal(0, r.code, r.err .. r.out)
    local rl = assert(yaml.decode(r.out))
    assert.are.equal("big", rl.items[1].metadata.annotations[P .. "require-backend"])
  end)

  it("takes its options from the command line too; the functionConfig wins", function()
    local r = fn(LIST:format("min-cost", configmap{ { "offline", "true" } }), "--attributes", ATTRS)
    assert.are.equal(0, r.code, r.out)
    assert.are.equal("gpu-t4", yaml.decode(r.out).items[1].metadata.annotations[P .. "require-backend"])
  end)

  it("appends to the results a function before it left", function()
    local input = LIST:format("min-cost", configmap{ { "attributes", ATTRS }, { "offline", "true" } }) ..
                  "results:\n  - message: earlier\n    severity: warning\n"
    local r = fn(input)
    assert.are.equal(0, r.code, r.out)
    local rl = assert(yaml.decode(r.out))
    assert.are.equal(2, #rl.results)
    assert.are.equal("earlier", rl.results[1].message)
    assert.are.equal("info", rl.results[2].severity)
  end)

  it("answers a JSON ResourceList in JSON", function()
    local rl = yaml.decode(LIST:format("min-cost", configmap{ { "attributes", ATTRS }, { "offline", "true" } }))
    local r = fn(json.encode(rl))
    assert.are.equal(0, r.code, r.out)
    local out = json.decode(r.out)
    assert.are.equal("gpu-t4", out.items[1].metadata.annotations[P .. "require-backend"])
    assert.are.equal("info", out.results[1].severity)
  end)

  it("refuses what is not a ResourceList: exit 3, nothing on stdout", function()
    local r = fn("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n")
    assert.are.equal(3, r.code)
    assert.are.equal("", r.out)
    assert.matches("expected a ResourceList", r.err)
  end)

  it("speaks kustomize's exec plugin protocol: a config file, a plain stream", function()
    local d = cli.tmpdir()
    local config = cli.write(d .. "/config.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n" ..
                             "data: {attributes: " .. ATTRS .. ", offline: 'true'}\n")
    local stream = cli.POD:format("min-cost") .. "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"
    local r = fn(stream, config)
    assert.are.equal(0, r.code, r.err)
    assert.truthy(r.out:find("fluence.flux-framework.org/require-backend: gpu-t4\n", 1, true), r.out)
    assert.truthy(r.out:find("kind: ConfigMap\nmetadata: {name: x}\n", 1, true))
  end)
end)

describe("fluence fn under kpt", function()
  teardown(function() cli.cleanup() end)
  if not have("kpt") then
    it("needs kpt", function() pending("kpt is not installed") end)
    return
  end

  local JOB = [[
# the trainer
apiVersion: batch/v1
kind: Job
metadata:
  name: train
  annotations:
    fluence.flux-framework.org/select-policy: "require:memory_gb>=24,min-cost"
spec:
  template:
    spec:
      schedulerName: fluence
      containers: [{name: c, image: x}]
]]

  local function package()
    local d = cli.tmpdir()
    os.execute("mkdir -p " .. q(d .. "/pkg"))
    cli.write(d .. "/pkg/job.yaml", JOB)
    return d
  end

  it("kpt fn eval --exec 'fluence fn' -- attributes=... offline=true pins the package", function()
    local d = package()
    cli.write(d .. "/pkg/Kptfile", "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata: {name: pkg}\n")
    local r = sh("kpt fn eval pkg --exec 'fluence fn' -- attributes=" .. q(ATTRS) .. " offline=true", d)
    assert.are.equal(0, r.code, r.err)
    local job = assert(yaml.decode(cli.slurp(d .. "/pkg/job.yaml")))
    assert.are.equal("gpu-l4", job.metadata.annotations[P .. "require-backend"])
    assert.are.equal("gpu-l4", job.spec.template.metadata.annotations[P .. "require-backend"])
    assert.truthy(cli.slurp(d .. "/pkg/job.yaml"):find("# the trainer", 1, true))
    assert.truthy(r.err:find('[info] batch/v1/Job/train', 1, true), r.err)
  end)

  it("kpt fn render runs a Kptfile pipeline with a FluenceSelect, and fails a failed selection", function()
    local d = package()
    cli.write(d .. "/pkg/Kptfile", [[
apiVersion: kpt.dev/v1
kind: Kptfile
metadata:
  name: pkg
  annotations: {config.kubernetes.io/local-config: "true"}
pipeline:
  mutators:
    - exec: fluence fn
      configPath: select.yaml
]])
    cli.write(d .. "/pkg/select.yaml", [[
apiVersion: fluence.flux-framework.org/v1alpha1
kind: FluenceSelect
metadata:
  name: select
  annotations: {config.kubernetes.io/local-config: "true"}
spec:
  offline: true
  attributes:
    backends:
      - {name: small, attributes: {cost_usd: 1, memory_gb: 16}}
      - {name: big, attributes: {cost_usd: 2, memory_gb: 80}}
]])
    local r = sh("kpt fn render pkg --allow-exec", d)
    assert.are.equal(0, r.code, r.err)
    local job = assert(yaml.decode(cli.slurp(d .. "/pkg/job.yaml")))
    assert.are.equal("big", job.metadata.annotations[P .. "require-backend"])
    -- rendering again changes nothing: the pin is kept, and said so
    local before = cli.slurp(d .. "/pkg/job.yaml")
    r = sh("kpt fn render pkg --allow-exec", d)
    assert.are.equal(0, r.code, r.err)
    assert.are.equal(before, cli.slurp(d .. "/pkg/job.yaml"))
    assert.truthy(r.err:find('already pinned to "big"', 1, true), r.err)
    -- a selection that fails fails the render, with its error result
    cli.write(d .. "/pkg/job.yaml", JOB:gsub("memory_gb>=24", "memory_gb>=240"))
    r = sh("kpt fn render pkg --allow-exec", d)
    assert.are.equal(1, r.code)
    assert.truthy(r.err:find("[error] batch/v1/Job/train", 1, true), r.err)
    assert.truthy(r.err:find("eliminated all candidates", 1, true), r.err)
  end)
end)

describe("fluence fn under kustomize", function()
  teardown(function() cli.cleanup() end)
  if not have("kubectl") then
    it("needs kubectl", function() pending("kubectl is not installed (kubectl kustomize)") end)
    return
  end

  it("runs as an exec plugin of kubectl kustomize --enable-alpha-plugins", function()
    local d = cli.tmpdir()
    -- kustomize finds the plugin by the config's apiVersion and kind
    local dir = d .. "/xdg/kustomize/plugin/fluence.flux-framework.org/v1alpha1/fluenceselect"
    os.execute("mkdir -p " .. q(dir))
    cli.write(dir .. "/FluenceSelect", "#!/bin/sh\nexec fluence fn \"$@\"\n")
    os.execute("chmod +x " .. q(dir .. "/FluenceSelect"))
    cli.write(d .. "/job.yaml", cli.POD:format("require:memory_gb>=24,min-cost"))
    cli.write(d .. "/select.yaml", "apiVersion: fluence.flux-framework.org/v1alpha1\nkind: FluenceSelect\n" ..
              "metadata: {name: select}\nspec:\n  offline: true\n  attributes: [" .. ATTRS .. "]\n")
    cli.write(d .. "/kustomization.yaml", "resources: [job.yaml]\ntransformers: [select.yaml]\n")
    local r = sh("XDG_CONFIG_HOME=" .. q(d .. "/xdg") .. " kubectl kustomize --enable-alpha-plugins .", d)
    assert.are.equal(0, r.code, r.err)
    local pod = assert(yaml.decode(r.out))
    assert.are.equal("gpu-l4", pod.metadata.annotations[P .. "require-backend"])
    -- kustomize's own bookkeeping annotation went back as it came
    assert.is_nil(pod.metadata.annotations["kustomize.config.k8s.io/id"])
  end)
end)
