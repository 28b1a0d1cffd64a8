-- `fluence select` end to end, offline, against the built binary.
local cli = require "support.cli"
local yaml = require "fluence.yaml"
local json = require "fluence.json"

local P = "fluence.flux-framework.org/"
local EX = cli.root .. "/examples"

local function docs(text) return assert(yaml.decode_all(text)) end

describe("fluence select", function()
  local home
  before_each(function() home = cli.tmpdir() end)
  after_each(cli.cleanup)

  local function select(args)
    args.env = args.env or {}
    args.env.HOME = args.env.HOME or home
    args.env.AWS_ACCESS_KEY_ID = false
    args.env.AWS_SECRET_ACCESS_KEY = false
    args.env.AWS_PROFILE = false
    args.env.KUBECONFIG = false
    table.insert(args, 1, "select")
    return cli.run(args)
  end

  -- a Fluence Pod with this select-policy, written to HOME/job.yaml
  local function pod_job(policy)
    return cli.write(home .. "/job.yaml", cli.POD:format(policy))
  end

  it("runs a live provider only when a backend has what it enriches (braket-live: a device_arn)", function()
    local dir = cli.tmpdir()
    local job = cli.write(dir .. "/job.yaml", ([[
apiVersion: v1
kind: Pod
metadata:
  name: q
  annotations: {%sselect-policy: "online-only,min-queue,min-cost"}
spec: {schedulerName: fluence, containers: [{name: c, image: x}]}
]]):format(P))
    local plain = cli.write(dir .. "/plain.yaml",
      "backends:\n- name: a\n  attributes: {cost_usd: 1, queue_size: 2}\n- name: b\n  attributes: {cost_usd: 2, queue_size: 1}\n")
    local r = select{ "-v", "-f", job, "--attributes", plain, "--offline" }
    assert.are.equal(0, r.code, r.err)
    assert.matches("provider file: 2 backends", r.err)
    assert.is_nil(r.err:find("braket%-live"))
    assert.matches('selected backend "b"', r.err)
    local arn = cli.write(dir .. "/arn.yaml", "backends:\n- name: a\n  device_arn: arn:aws:braket:::device/qpu/x/y\n" ..
      "  attributes: {cost_usd: 1, queue_size: 2}\n- name: b\n  attributes: {cost_usd: 2, queue_size: 1}\n")
    r = select{ "-v", "-f", job, "--attributes", arn, "--offline" }
    assert.matches("provider braket%-live: ", r.err)
  end)

  it("gives the Go client's answer on its GPU example: gpu-l4, pinned into the Job's pod template", function()
    local r = select{ "-f", EX .. "/quickstart/job.yaml", "--attributes", EX .. "/quickstart/attributes.yaml",
                      "--offline" }
    assert.are.equal(0, r.code, r.err)
    local d = docs(r.out)
    assert.are.equal("gpu-l4", d[1].metadata.annotations[P .. "require-backend"])
    assert.are.equal("gpu-l4", d[2].metadata.annotations[P .. "require-backend"])
    assert.are.equal("gpu-l4", d[2].spec.template.metadata.annotations[P .. "require-backend"])
    local audit = json.decode(d[1].metadata.annotations[P .. "select-result"])
    assert.are.equal("gpu-l4", audit.chosen)
    assert.are.equal("require:min_memory_gb=24,min-cost", audit.policy)
    assert.is_string(audit.dropped["gpu-t4"])
    assert.matches("^%d%d%d%d%-%d%d%-%d%dT%d%d:%d%d:%d%dZ$", audit.time)
    -- comments and the untouched ConfigMap survive byte for byte
    assert.matches("# Not a Fluence object: passes through byte for byte.\napiVersion: v1\nkind: ConfigMap\n",
                   r.out, 1, true)
    assert.matches('selected backend "gpu-l4" for Pod/training-leader (policy "require:min_memory_gb=24,min-cost")\n',
                   r.err, 1, true)
    assert.matches("  dropped gpu-t4: ", r.err, 1, true)
  end)

  it("gives the Go client's answer on its quantum example: sv1", function()
    local r = select{ "-f", EX .. "/quantum/gang.yaml", "--attributes", EX .. "/quantum/attributes.yaml", "--offline" }
    assert.are.equal(0, r.code, r.err)
    assert.are.equal("sv1", docs(r.out)[1].metadata.annotations[P .. "require-backend"])
  end)

  it("is idempotent: selecting again on its own output changes nothing but the time", function()
    local function args(file)
      return { "-f", file, "--attributes", EX .. "/quickstart/attributes.yaml",
               "--offline", "--force-select", env = { SOURCE_DATE_EPOCH = "1700000000" } }
    end
    local first = select(args(EX .. "/quickstart/job.yaml"))
    assert.are.equal(0, first.code, first.err)
    local second = select(args(cli.write(home .. "/again.yaml", first.out)))
    assert.are.equal(0, second.code, second.err)
    assert.are.equal(first.out, second.out)
  end)

  it("passes a manifest without Fluence objects through byte for byte", function()
    local text = "# a comment\napiVersion: v1\nkind: Pod\nmetadata: {name: plain}   # trailing\n" ..
                 "spec:\n  containers:\n  - name: c\n    image: x\n"
    local r = select{ "-f", "-", "--offline", stdin = text }
    assert.are.equal(0, r.code, r.err)
    assert.are.equal(text, r.out)
    assert.are.equal("", r.err)
  end)

  it("fails as a whole, with nothing on stdout, pointing at the failing stage", function()
    local job = pod_job("require:min_memory_gb=24,min-queue")
    local r = select{ "-f", job, "--attributes", EX .. "/quickstart/attributes.yaml", "--offline" }
    assert.are.equal(1, r.code)
    assert.are.equal("", r.out)
    -- at the stage's own line and column in the file, the caret under it
    assert.matches("^fluence: [^\n]*job%.yaml:6:73: Pod/p: selection failed: " ..
                   'policy "min%-queue": no candidate has attribute "queue_size"', r.err)
    assert.matches('\n        fluence.flux%-framework.org/select%-policy: "require:min_memory_gb=24,min%-queue"\n' ..
                   (" "):rep(76) .. "%^\n$", r.err)
  end)

  it("reports a bad policy with a caret and the input exit code", function()
    local job = pod_job("require:min_memory_gb=24,min-kost")
    local r = select{ "-f", job, "--attributes", EX .. "/quickstart/attributes.yaml", "--offline" }
    assert.are.equal(3, r.code)
    assert.are.equal("", r.out)
    assert.matches('unknown attribute "kost" in "min%-kost" %(did you mean "min%-cost"%?%)', r.err)
    assert.matches("\n    %s*%^\n$", r.err)
  end)

  it("leaves a user's pin alone unless --force-select", function()
    local job = cli.write(home .. "/job.yaml", [[
apiVersion: v1
kind: Pod
metadata:
  name: p
  annotations:
    fluence.flux-framework.org/select-policy: "min-cost"
    fluence.flux-framework.org/require-backend: gpu-a100
spec:
  schedulerName: fluence
  containers: [{name: c, image: x}]
]])
    local r = select{ "-f", job, "--attributes", EX .. "/quickstart/attributes.yaml", "--offline" }
    assert.are.equal(0, r.code, r.err)
    assert.are.equal(cli.slurp(job), r.out)
    assert.matches('note: Pod/p already pinned to "gpu-a100"; skipping selection', r.err, 1, true)
    r = select{ "-f", job, "--attributes", EX .. "/quickstart/attributes.yaml", "--offline", "--force-select" }
    assert.are.equal("gpu-t4", docs(r.out)[1].metadata.annotations[P .. "require-backend"])
  end)

  it("prints JSON with -o json", function()
    local r = select{ "-f", EX .. "/quantum/gang.yaml", "--attributes", EX .. "/quantum/attributes.yaml",
                      "--offline", "-o", "json" }
    assert.are.equal(0, r.code, r.err)
    local obj = json.decode(r.out)
    assert.are.equal("sv1", obj.metadata.annotations[P .. "require-backend"])
  end)

  it("uses a user provider dropped into ~/.fluence/providers", function()
    os.execute("mkdir -p " .. cli.quote(home .. "/.fluence/providers"))
    os.execute("cp " .. cli.quote(EX .. "/providers/gpu-pricing.lua") .. " " .. cli.quote(home .. "/.fluence/providers/"))
    local job = pod_job("require:memory_gb>=24,min-cost")
    local r = select{ "-f", job, "--provider", "gpu-pricing", "--offline",
                      env = { FLUENCE_GPU_CATALOG = EX .. "/gpu-catalog/catalog.csv" } }
    assert.are.equal(0, r.code, r.err)
    assert.are.equal("gpu-l4", docs(r.out)[1].metadata.annotations[P .. "require-backend"])
  end)

  it("names the provider file and line when a provider fails", function()
    os.execute("mkdir -p " .. cli.quote(home .. "/.fluence/providers"))
    cli.write(home .. "/.fluence/providers/broken.lua", [[
return { name = "broken", description = "fails",
  candidates = function(ctx)
    local t = nil
    return t.x
  end }
]])
    local r = select{ "-f", EX .. "/quantum/gang.yaml", "--provider", "broken", "--offline" }
    assert.are.equal(3, r.code)
    assert.are.equal("", r.out)
    assert.matches("broken%.lua:4: attempt to index a nil value", r.err)
  end)

  it("names the provider's line when an API call refuses its arguments", function()
    os.execute("mkdir -p " .. cli.quote(home .. "/.fluence/providers"))
    cli.write(home .. "/.fluence/providers/impatient.lua", [[
return { name = "impatient", description = "asks for a negative timeout",
  candidates = function(ctx)
    local r = ctx.api.http.request{ url = "http://127.0.0.1:1/", timeout = -1 }
    return {}
  end }
]])
    local r = select{ "-f", EX .. "/quantum/gang.yaml", "--provider", "impatient", "--offline" }
    assert.are.equal(3, r.code)
    assert.are.equal("", r.out)
    assert.matches("impatient%.lua:3: http request: timeout must be a number from 0 to 1000000000\n$", r.err)
  end)

  it("accepts a provider's attribute that looks like a typo of a well-known one", function()
    local attrs = cli.write(home .. "/a.yaml", "backends:\n- name: x\n  attributes: {host: 2}\n" ..
                            "- name: y\n  attributes: {host: 1}\n")
    local job = pod_job("min-host")
    local r = select{ "-f", job, "--attributes", attrs, "--offline" }
    assert.are.equal(0, r.code, r.err)
    assert.are.equal("y", docs(r.out)[1].metadata.annotations[P .. "require-backend"])
  end)

  it("points the caret at the failing stage of a multi-line policy", function()
    local job = cli.write(home .. "/job.yaml", [[
apiVersion: v1
kind: Pod
metadata:
  name: p
  annotations:
    fluence.flux-framework.org/select-policy: |-
      require:min_memory_gb=24,
        min-queue
spec:
  schedulerName: fluence
  containers: [{name: c, image: x}]
]])
    local r = select{ "-f", job, "--attributes", EX .. "/quickstart/attributes.yaml", "--offline" }
    assert.are.equal(1, r.code)
    assert.matches("job%.yaml:8:9: Pod/p: selection failed: policy \"min%-queue\"", r.err)
    assert.matches("\n            min%-queue\n            %^\n$", r.err)
  end)

  it("treats a crashing user policy as bad input (exit 3), not a failed selection", function()
    os.execute("mkdir -p " .. cli.quote(home .. "/.fluence/policies"))
    cli.write(home .. "/.fluence/policies/crash.lua", [[
return { name = "crash", description = "crashes",
  compile = function() return function(backends) return backends.nope.x end end }
]])
    local job = pod_job("crash")
    local r = select{ "-f", job, "--attributes", EX .. "/quickstart/attributes.yaml", "--offline" }
    assert.are.equal(3, r.code, r.err)
    assert.are.equal("", r.out)
    assert.matches("crash%.lua:2:", r.err)
  end)

  it("walks a directory with -R once through links to itself and its parent", function()
    os.execute("mkdir -p " .. cli.quote(home .. "/m/sub"))
    cli.write(home .. "/m/sub/job.yaml", cli.slurp(EX .. "/quickstart/job.yaml"))
    assert(os.execute(("ln -s .. %s && ln -s . %s"):format(cli.quote(home .. "/m/sub/up"), cli.quote(home .. "/m/self"))))
    local r = select{ "-R", "-f", home .. "/m", "--attributes", EX .. "/quickstart/attributes.yaml", "--offline" }
    assert.are.equal(0, r.code, r.err)
    local _, pods = r.out:gsub("\nkind: Pod\n", "")
    local _, jobs = r.out:gsub("\nkind: Job\n", "")
    assert.are.same({ 1, 1 }, { pods, jobs })
  end)

  it("requires manifests", function()
    local r = select{ "--offline" }
    assert.are.equal(2, r.code)
    assert.matches("no manifests given", r.err, 1, true)
  end)
end)
