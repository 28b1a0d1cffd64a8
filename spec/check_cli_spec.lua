-- `fluence check`: manifests' select-policy compiled and located, plugin
-- files loaded and shape-checked, specs and test cases checked; errors exit
-- 3 with nothing on stdout, warnings alone exit 0.
local cli = require "support.cli"
local tree = require "support.tree"

local function job(policy, scheduler)
  return ([[
apiVersion: batch/v1
kind: Job
metadata:
  name: train
  annotations:
    fluence.flux-framework.org/select-policy: "%s"
spec:
  template:
    spec:
      schedulerName: %s
      containers: [{name: a, image: b}]
]]):format(policy, scheduler or "fluence")
end

local GOOD_POLICY = 'return { name = "budget", description = "budget:N", args = "required", ' ..
                    'compile = function(stage, ctx) return function(b) return b end, { "cost_usd" } end }\n'

describe("fluence check", function()
  teardown(function() cli.cleanup() end)

  it("passes a clean project: a summary on stdout, nothing on stderr", function()
    local dir = tree.make{ ["job.yaml"] = job("budget:4,min-cost"), ["policies/budget.lua"] = GOOD_POLICY,
                           ["tests/budget_spec.lua"] = 'it("x", function() end)\n',
                           ["tests/budget.test.yaml"] = "manifest: ../job.yaml\npolicy: budget:2\nexpect: {exit: 1}\n" }
    local r = cli.run{ "check", cwd = dir }
    assert.are.equal("", r.err)
    assert.are.equal(0, r.code)
    assert.are.equal("checked 1 manifest file (2 policies), 1 plugin, 1 spec, 1 test file: no problems\n", r.out)
    -- the examples check clean too
    r = cli.run{ "check", "examples", valgrind = false }
    assert.are.equal(0, r.code, r.err)
    assert.are.equal("", r.err)
  end)

  it("catches a typo in a policy, at the stage in the file, with a suggestion and a caret", function()
    local dir = tree.make{ ["k8s/job.yaml"] = job("require:memory_gb>=24, min-cots") }
    local r = cli.run{ "check", "k8s", cwd = dir }
    assert.are.equal(3, r.code)
    assert.are.equal("", r.out)
    assert.are.equal('fluence: k8s/job.yaml:6:71: Job/train: unknown attribute "cots" in "min-cots" (did you mean "min-cost"?)\n' ..
                     '        fluence.flux-framework.org/select-policy: "require:memory_gb>=24, min-cots"\n' ..
                     "                                                                          ^\n", r.err)
  end)

  it("catches a syntax error in a plugin, at its line, and a bad shape", function()
    local dir = tree.make{
      ["policies/broken.lua"] = 'return {\n  name = "broken",\n  description = "x"\n  compile = function() end,\n}\n',
      ["providers/misnamed.lua"] = 'return { name = "other", description = "x", candidates = function() return {} end }\n',
      ["providers/noexport.lua"] = 'return { name = "noexport", description = "x", candidatse = function() return {} end }\n',
      ["policies/flags.lua"] = 'return { name = "flags", description = "x", compile = function() end, args = "require", tolerence = true }\n',
    }
    local r = cli.run{ "check", dir .. "/policies", dir .. "/providers" }
    assert.are.equal(3, r.code)
    assert.are.equal("", r.out)
    local err = r.err:gsub(dir .. "/", "")
    assert.truthy(err:find("fluence: policies/broken.lua:4:3: '}' expected (to close '{' at line 1) near 'compile'\n" ..
                           "      compile = function() end,\n      ^\n", 1, true), err)
    assert.truthy(err:find('fluence: policies/flags.lua: policy plugin export "args" must be false, "required" or absent, got "require"\n', 1, true), err)
    assert.truthy(err:find('fluence: warning: policies/flags.lua: policy plugin export "tolerence" is not one fluence reads (did you mean "tolerance"?)\n', 1, true), err)
    assert.truthy(err:find('fluence: providers/misnamed.lua: provider plugin is named "other" but its file is misnamed.lua (they must match)\n', 1, true), err)
    assert.truthy(err:find('fluence: providers/noexport.lua: provider plugin export "candidates" must be a function, got nil\n', 1, true), err)
  end)

  it("knows every export of the plugin contract: a typo of enriches is warned, a constant is not (issue 26)", function()
    local dir = tree.make{
      ["providers/typo.lua"] = 'return { name = "typo", description = "x", live = true, provides = { "a" }, ' ..
                               'enriche = { "device_arn" }, candidates = function() return {} end }\n',
      ["providers/consts.lua"] = 'return { name = "consts", description = "x", live = true, provides = { "a" }, ' ..
                                 'LIVE = { a = true }, NAME = "x", candidates = function() return {} end }\n',
    }
    local r = cli.run{ "check", "providers", cwd = dir }
    assert.are.equal(0, r.code, r.err)
    assert.are.equal('fluence: warning: providers/typo.lua: provider plugin export "enriche" is not one fluence ' ..
                     'reads (did you mean "enriches"?)\n', r.err)
    -- the built-ins check clean: their own constants (braket-live's LIVE) are no typos
    r = cli.run{ "check", "policies", "providers", valgrind = false }
    assert.are.equal(0, r.code, r.err)
    assert.are.equal("", r.err)
    assert.matches(": no problems\n$", r.out)
  end)

  it("says a manifest's policies were not checked when a plugin on the path does not load", function()
    local dir = tree.make{ ["job.yaml"] = job("min-cost"), ["policies/broken.lua"] = "return {\n" }
    local r = cli.run{ "check", cwd = dir, valgrind = false }
    assert.are.equal(3, r.code)
    -- the end of the file: after the last line holding something
    assert.are.same({ "fluence: policies/broken.lua:1:9: unexpected symbol near <eof>", "    return {", "            ^",
                      "fluence: select-policy annotations were not checked: a policy plugin on the search path does not load (above)" },
                    { r.err:match("^([^\n]*)\n([^\n]*)\n([^\n]*)\n([^\n]*)\n") })
  end)

  it("checks a file named on the command line by what it returns: plugin, or fluence run file", function()
    local dir = tree.make{ ["cheap.lua"] = 'return "min-cots"\n', ["ok.lua"] = 'return function(b) return b end\n',
                           ["helper.lua"] = "return { x = 1 }\n", ["nested/helper.lua"] = "return { x = 1 }\n" }
    local r = cli.run{ "check", "cheap.lua", "ok.lua", "nested", cwd = dir }
    assert.are.equal(3, r.code)
    assert.truthy(r.err:find('^fluence: cheap.lua:1:9: unknown attribute "cots" in "min%-cots" %(did you mean "min%-cost"%?%)\n'), r.err)
    r = cli.run{ "check", "helper.lua", cwd = dir, valgrind = false }
    assert.are.equal(3, r.code)
    assert.truthy(r.err:find("helper.lua: not a plugin: it returns table", 1, true), r.err)
    r = cli.run{ "check", "ok.lua", "nested", cwd = dir, valgrind = false }   -- a helper met while walking is only parsed
    assert.are.equal(0, r.code, r.err)
  end)

  it("checks test cases and their policies", function()
    local dir = tree.make{ ["job.yaml"] = job("min-cost"),
                           ["a.test.yaml"] = "manifest: job.yaml\npolicy: min-cots\nexpect: {chosen: x}\n",
                           ["b.test.yaml"] = "manifest: job.yaml\nexpect: {chosen: x, exits: 1}\n",
                           ["c.test.yaml"] = "manifest: job.yaml\npolicy: min-cots\nexpect: {exit: 3}\n" }
    local r = cli.run{ "check", cwd = dir, valgrind = false }
    assert.are.equal(3, r.code)
    assert.truthy(r.err:find('fluence: a.test.yaml:2:1: policy: unknown attribute "cots" in "min-cots" (did you mean "min-cost"?)', 1, true), r.err)
    assert.truthy(r.err:find('fluence: b.test.yaml:2:21: unknown key "exits" (did you mean "exit"?)', 1, true), r.err)
    assert.falsy(r.err:find("c.test.yaml", 1, true), r.err)    -- expects the input error: tests a bad policy
  end)

  it("tells the truth about where schedulerName: fluence is (issue 31)", function()
    -- an Argo Workflow's pods take spec.schedulerName and spec.podMetadata:
    -- its policy is checked like any Fluence object's
    local wf = [[
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata:
  generateName: hello-
  annotations:
    fluence.flux-framework.org/select-policy: "min-cots"
spec:
  schedulerName: fluence
  entrypoint: main
  templates:
  - name: main
    container: {image: busybox}
]]
    -- a kind fluence does not know, its scheduler outside any pod template
    local spark = [[
apiVersion: sparkoperator.k8s.io/v1beta2
kind: SparkApplication
metadata:
  name: pi
  annotations:
    fluence.flux-framework.org/select-policy: min-cost
spec:
  driver:
    schedulerName: fluence
    cores: 1
]]
    local dir = tree.make{ ["wf.yaml"] = wf, ["spark.yaml"] = spark }
    local r = cli.run{ "check", "wf.yaml", cwd = dir, valgrind = false }
    assert.are.equal(3, r.code)
    assert.truthy(r.err:find('wf.yaml:6:48: Workflow/hello-: unknown attribute "cots" in "min-cots"', 1, true), r.err)
    r = cli.run{ "check", "spark.yaml", cwd = dir }
    assert.are.equal(0, r.code, r.err)
    assert.are.equal("fluence: warning: spark.yaml:1:1: SparkApplication/pi: spec.driver.schedulerName is fluence, " ..
                     "but fluence finds no pod there to pin (a pod template is a mapping whose spec has a containers " ..
                     "list; docs/kubernetes.md lists where known kinds keep theirs): its pods get no require-backend\n",
                     r.err)
    assert.falsy(r.err:find("does not target Fluence", 1, true))
    -- a key written twice outside Fluence objects: select's warning
    cli.write(dir .. "/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata:\n  a: 1\n  a: 2\n")
    r = cli.run{ "check", "cm.yaml", cwd = dir }
    assert.are.equal(0, r.code, r.err)
    assert.are.equal('fluence: warning: cm.yaml:6:3: duplicate key "a": kubectl keeps the last one; passed through ' ..
                     "unchanged\n      a: 2\n      ^\n", r.err)
  end)

  it("with --attributes, warns about attributes no backend has; warnings alone exit 0", function()
    local attrs = "backends:\n  - name: a\n    attributes: {cost_usd: 1, memory_gb: 24}\n"
    local dir = tree.make{ ["attrs.yaml"] = attrs, ["job.yaml"] = job("require:vram>=24,min-cost"),
                           ["other.yaml"] = job("min-cost", "default-scheduler") }
    local r = cli.run{ "check", "job.yaml", "other.yaml", "--attributes", "attrs.yaml", cwd = dir }
    assert.are.equal(0, r.code)
    assert.are.equal("fluence: warning: job.yaml:6:47: Job/train: the policy reads vram, which no backend in the " ..
                     "attribute files has\n" ..
                     "fluence: warning: other.yaml:1:1: Job/train has a select-policy but does not target Fluence " ..
                     "(no pod of it has schedulerName: fluence or the group label fluence.flux-framework.org/group): " ..
                     "select ignores it\n", r.err)
    assert.truthy(r.out:find(": 2 warnings\n", 1, true), r.out)
    -- a near miss of an attribute the files have is an error, as at select time
    cli.write(dir .. "/job.yaml", job("require:memory_gbb>=24"))
    r = cli.run{ "check", "job.yaml", "--attributes", "attrs.yaml", cwd = dir, valgrind = false }
    assert.are.equal(3, r.code)
    assert.truthy(r.err:find('did you mean "memory_gb"', 1, true), r.err)
    -- a broken attribute file is an error of its own
    cli.write(dir .. "/attrs.yaml", "backends: [\n")
    r = cli.run{ "check", "job.yaml", "--attributes", "attrs.yaml", cwd = dir, valgrind = false }
    assert.are.equal(3, r.code)
    assert.truthy(r.err:find("attrs.yaml:2:1:", 1, true), r.err)
  end)

  it("reports a manifest that does not parse, located", function()
    local dir = tree.make{ ["bad.yaml"] = "a: [1\n" }
    local r = cli.run{ "check", cwd = dir, valgrind = false }
    assert.are.equal(3, r.code)
    assert.truthy(r.err:find("^fluence: bad.yaml:2:1: "), r.err)
    r = cli.run{ "check", "nope", cwd = dir, valgrind = false }
    assert.are.equal(3, r.code)
    assert.truthy(r.err:find("nope: no such file or directory", 1, true), r.err)
  end)

  it("-o json: every problem with its location as fields, the same the text gives (issue 26)", function()
    local json = require "fluence.json"
    local dir = tree.make{
      ["job.yaml"] = job("min-cots"),
      ["providers/typo.lua"] = 'return { name = "typo", description = "x", enriche = { "a" }, ' ..
                               'candidates = function() return {} end }\n',
    }
    local text = cli.run{ "check", cwd = dir }
    assert.are.equal(3, text.code)
    assert.are.equal("", text.out)
    local r = cli.run{ "check", "-o", "json", cwd = dir }
    assert.are.equal(3, r.code, r.err)
    assert.are.equal("", r.err)
    local doc = json.decode(r.out)
    assert.are.equal(1, doc.errors)
    assert.are.equal(1, doc.warnings)
    assert.are.equal(2, #doc.problems)
    for _, p in ipairs(doc.problems) do
      -- the text's line of this problem, rebuilt from the fields
      local where = p.line and ("%s:%d:%d: "):format(p.file, p.line, p.column) or (p.file .. ": ")
      local said = ("fluence: %s%s%s\n"):format(p.severity == "warning" and "warning: " or "", where, p.message)
      assert.truthy(text.err:find(said, 1, true), said .. "\nnot in\n" .. text.err)
    end
    assert.are.same({ "job.yaml", 6, 48 }, { doc.problems[1].file, doc.problems[1].line, doc.problems[1].column })
    r = cli.run{ "check", "-o", "yaml", cwd = dir }
    assert.are.equal(2, r.code)
    assert.are.equal("", r.out)
    assert.are.equal('fluence: check: unknown output format "yaml" (text or json)\n', r.err)
  end)
end)
