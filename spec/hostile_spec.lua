-- Hostile input: whatever fluence is given, it exits non-zero with one clear,
-- located message, writes nothing on stdout, does not crash, and stays within
-- bounded time and memory (every run here is under ulimit -t 60 s and, but
-- for the ASan build, ulimit -v 2 GiB).
local cli = require "support.cli"

local EX = cli.root .. "/examples"
local ATTRS = EX .. "/quickstart/attributes.yaml"

-- The memory limit, except under AddressSanitizer (make check-asan), whose
-- shadow memory reserves terabytes of address space up front.
local LIMITS = os.getenv("FLUENCE_SANITIZE") and "ulimit -t 60; " or "ulimit -v 2097152; ulimit -t 60; "

-- Runs fluence under resource limits; returns {out, err, code, secs}.
local function run(args)
  local argv = { "-c", LIMITS .. 'exec "$0" "$@"', args.bin or cli.bin }
  for _, a in ipairs(args) do argv[#argv + 1] = a end
  argv.bin, argv.stdin, argv.env = "sh", args.stdin, args.env or {}
  argv.env.HOME = argv.env.HOME or "/nonexistent"
  argv.env.KUBECONFIG = false
  local t0 = os.time()
  local r = cli.run(argv)
  r.secs = os.time() - t0
  return r
end

-- The common promise: failure, one message, nothing on stdout, no crash.
local function refused(r, code, pattern)
  assert.are.equal("", r.out)
  assert.are.equal(code, r.code, r.err)
  assert.matches("^fluence: ", r.err)
  if pattern then assert.matches(pattern, r.err) end
  assert.is_nil(r.err:find("stack traceback", 1, true))
  assert.is_true(r.secs < 60)
end

local POD = cli.POD

describe("hostile input", function()
  local dir
  before_each(function() dir = cli.tmpdir() end)
  after_each(cli.cleanup)

  local function file(name, text) return cli.write(dir .. "/" .. name, text) end
  local function select(manifest, ...)
    return run{ "select", "-f", manifest, "--attributes", ATTRS, "--offline", ... }
  end

  it("malformed YAML", function()
    refused(select(file("m.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: [x\n")), 3, "m%.yaml:%d+:%d+: ")
  end)

  it("malformed JSON", function()
    refused(select(file("m.json", '{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x",}')), 3,
            "m%.json:%d+:%d+: ")
  end)

  it("wrong types in a Fluence object", function()
    -- a policy that is not a string
    refused(select(file("t1.yaml", (POD:gsub('"%%s"', "5")))), 3, "t1%.yaml:%d+:%d+: ")
    -- a pod template whose annotations are not a mapping
    refused(select(file("t2.yaml", [[
apiVersion: batch/v1
kind: Job
metadata:
  name: j
  annotations: {fluence.flux-framework.org/select-policy: min-cost}
spec:
  template:
    metadata:
      annotations: [not, a, mapping]
    spec:
      schedulerName: fluence
      containers: [{name: c, image: x}]
]])), 3, "t2%.yaml:%d+:%d+: ")
    -- requests that are not quantities, shots that are not counts
    refused(select(file("t3.yaml", (POD:format("min-cost"):gsub("image: x", "image: x, resources: {requests: {cpu: lots}}")))),
            3, "not a Kubernetes quantity")
    refused(select(file("t4.yaml", (POD:format("min-cost"):gsub("spec:",
      '    fluence.flux-framework.org/select-shots: "many"\nspec:', 1)))), 3, "select%-shots")
  end)

  it("a request that is not a quantity: located at its value, with the line and a caret", function()
    local r = select(file("q.yaml", (POD:format("min-cost"):gsub("image: x",
      "image: x, resources: {requests: {memory: 1Gi, cpu: 15 cores}}"))))
    refused(r, 3, '^fluence: [^\n]*q%.yaml:9:77: container "c": resources%.requests%["cpu"%]: ' ..
                  '"15 cores" is not a Kubernetes quantity\n')
    local line, caret = r.err:match("\n([^\n]*)\n( *)%^\n?$")
    assert.are.equal("cpu: 15 cores}}", line:sub(#caret - 4, #caret + 10))
  end)

  it("shots that are not counts: located at the annotation's or the N_SHOTS value, with a caret", function()
    local r = select(file("s1.yaml", (POD:format("min-cost"):gsub("spec:",
      '    fluence.flux-framework.org/select-shots: "many"\nspec:', 1))))
    refused(r, 3, '^fluence: [^\n]*s1%.yaml:7:46: fluence%.flux%-framework%.org/select%-shots must be ' ..
                  'a positive whole number, not "many"\n')
    assert.matches('\n +fluence%.flux%-framework%.org/select%-shots: "many"\n +%^\n?$', r.err)
    r = select(file("s2.yaml", (POD:format("min-cost"):gsub("image: x", 'image: x, env: [{name: N_SHOTS, value: "-3"}]'))))
    refused(r, 3, '^fluence: [^\n]*s2%.yaml:9:65: container env N_SHOTS must be a positive whole number, not "%-3"\n')
    local line, caret = r.err:match("\n([^\n]*)\n( *)%^\n?$")
    assert.are.equal('"-3"', line:sub(#caret + 1, #caret + 4))
  end)

  it("huge numbers, NaN and infinities in attribute files", function()
    local m = file("m.yaml", POD:format("min-cost"))
    for i, v in ipairs{ "1e400", ".nan", "-.inf", ".inf" } do
      local a = file("a" .. i .. ".yaml", "backends:\n- name: x\n  attributes: {cost_usd: " .. v .. "}\n")
      refused(run{ "select", "-f", m, "--attributes", a, "--offline" }, 3, "a" .. i .. "%.yaml:3:%d+: .*finite")
    end
    refused(select(file("s.yaml", (POD:format("min-cost"):gsub("spec:",
      '    fluence.flux-framework.org/select-shots: "1e400"\nspec:', 1)))), 3, "select%-shots")
  end)

  it("huge and malformed numbers in policies", function()
    refused(select(file("p1.yaml", POD:format("require:memory_gb>=1e999999"))), 3,
            'p1%.yaml:6:67: Pod/p: bad number "1e999999"')
    refused(select(file("p2.yaml", POD:format("require:memory_gb>=12abc"))), 3, 'p2%.yaml:6:67: Pod/p: bad number "12abc"')
  end)

  it("duplicate keys: refused in a Fluence object, passed through with a warning elsewhere (as kubectl takes them)", function()
    refused(select(file("d.yaml", (POD:format("min-cost"):gsub("kind: Pod\n", "kind: Pod\nkind: Job\n", 1)))), 3,
            "d%.yaml:3:1: duplicate key \"kind\" in a Fluence object")
    local text = "apiVersion: v1\nkind: ConfigMap\nkind: Secret\nmetadata: {name: x}\n"
    local r = select(file("c.yaml", text))
    assert.are.equal(0, r.code, r.err)
    assert.are.equal(text, r.out)
    assert.matches('^warning: [^\n]*c%.yaml:3:1: duplicate key "kind": kubectl keeps the last one; passed through unchanged\n', r.err)
  end)

  it("invalid UTF-8", function()
    refused(select(file("u.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: \"\xff\xfe\"}\n")), 3, "u%.yaml:")
  end)

  it("deep nesting", function()
    refused(select(file("n.yaml", "a: " .. ("["):rep(100000))), 3, "n%.yaml:1:%d+: ")
    refused(select(file("n.json", ("["):rep(100000))), 3, "n%.json:1:%d+: ")
  end)

  it("a line of a gigabyte", function()
    -- streamed through stdin, so nothing that size is written to disk
    local t0 = os.time()
    local r = cli.run{ bin = "sh", "-c", LIMITS .. "head -c 1073741824 /dev/zero | tr '\\000' a | " ..
                       'exec "$0" select -f - --offline', cli.bin, env = { HOME = "/nonexistent" } }
    r.secs = os.time() - t0
    refused(r, 3, "larger than")
  end)

  it("billion laughs", function()
    local lines = { 'apiVersion: v1', 'kind: Pod', 'metadata:', '  name: lol', '  labels:',
                    '    a: &a ["x","x","x","x","x","x","x","x","x","x"]' }
    local prev = "a"
    for i = 1, 9 do
      local n = string.char(97 + i)
      lines[#lines + 1] = ("    %s: &%s [%s]"):format(n, n, ("*" .. prev .. ","):rep(9) .. "*" .. prev)
      prev = n
    end
    refused(select(file("lol.yaml", table.concat(lines, "\n") .. "\n")), 3, "lol%.yaml:%d+:%d+: ")
  end)

  it("a provider that loops forever, and one that returns garbage", function()
    os.execute("mkdir -p " .. cli.quote(dir .. "/providers"))
    cli.write(dir .. "/providers/spin.lua", "return { name = 'spin', description = 'loops',\n" ..
      "  candidates = function() while true do end end }\n")
    cli.write(dir .. "/providers/junk.lua", "return { name = 'junk', description = 'garbage',\n" ..
      "  candidates = function() return { 1, 'two', { name = {} } } end }\n")
    local m = file("m.yaml", POD:format("min-cost"))
    refused(run{ "select", "-f", m, "--provider-dir", dir .. "/providers", "--provider", "spin", "--offline" },
            3, "spin%.lua:2: instruction budget")
    refused(run{ "select", "-f", m, "--provider-dir", dir .. "/providers", "--provider", "junk", "--offline" },
            3, 'provider "junk"')
  end)

  it("an attribute file that is a directory", function()
    refused(run{ "select", "-f", file("m.yaml", POD:format("min-cost")), "--attributes", dir, "--offline" },
            3, "is a directory")
  end)
end)

describe("hostile clusters", function()
  local H = require "fixtures.kube.harness"
  local s, kubeconfig
  setup(function()
    s = H.start{ "--huge-configmap", tostring(80 * 1024 * 1024) }
    kubeconfig = H.kubeconfig(s, { user = { token = H.TOKENS.admin } })
  end)
  teardown(function() if s then s:stop() end cli.cleanup() end)

  local function job()
    return cli.write(s.dir .. "/job.yaml", POD:format("min-cost"))
  end

  it("a ConfigMap with a huge body", function()
    -- a real ConfigMap holds at most 1 MiB: 80 MB is refused, not parsed
    refused(run{ "select", "-f", job(), "--attributes", ATTRS, "--kubeconfig", kubeconfig,
                 "--require-offerings", env = { HOME = s.dir } }, 4,
            "fluence%-resources.*answer larger than 8388608 bytes")
  end)

  it("an API server that never answers", function()
    local slow = H.kubeconfig(s, { user = { token = H.TOKENS.admin }, cluster = { server = s.url .. "/_slow" } },
                              { dir = s.dir, name = "slow.yaml" })
    local r = run{ "select", "-f", job(), "--attributes", ATTRS, "--kubeconfig", slow,
                   "--request-timeout", "1", "--require-offerings", env = { HOME = s.dir } }
    refused(r, 4, "fluence%-resources")
    assert.is_true(r.secs <= 10, "took " .. r.secs .. " s")
  end)
end)

describe("hostile names on a terminal", function()
  after_each(cli.cleanup)

  -- fluence match prints a graph's vertex names and a jobspec's file name
  -- as resource-query does; on a terminal their control characters are
  -- shown escaped, not obeyed
  it("fluence match escapes what the graph and the commands name", function()
    if os.execute("command -v script >/dev/null 2>&1") ~= true then
      return pending("script(1) is not installed (bsdutils) for a terminal")
    end
    local dir = cli.tmpdir()
    cli.write(dir .. "/g.json", '{"graph": {"nodes": [' ..
      '{"id": "0", "metadata": {"type": "cluster", "name": "c\\u001b[31m", "paths": {"containment": "/c"}}},' ..
      '{"id": "1", "metadata": {"type": "core", "paths": {"containment": "/c/core0"}}}],' ..
      '"edges": [{"source": "0", "target": "1"}]}}')
    cli.write(dir .. "/j.yaml", "version: 1\nresources: [{type: slot, count: 1, label: s, " ..
              "with: [{type: core, count: 1}]}]\ntasks: []\nattributes: {}\n")
    cli.write(dir .. "/c.in", "match allocate j.yaml\ninfo 1\ncancel 7\nquit\n")
    local cmd = ("cd %s && env -u LD_PRELOAD script -qec %s /dev/null"):format(cli.quote(dir),
      cli.quote(cli.quote(cli.bin) .. " match --graph g.json < c.in"))
    local p = io.popen(cmd)
    local tty = p:read("a")
    p:close()
    assert.is_nil(tty:find("\27[31m", 1, true), tty)
    assert.truthy(tty:find("c\\x1b[31m[1:s]", 1, true), tty)
    assert.truthy(tty:find("INFO: 1, ALLOCATED, 0, j.yaml, 0", 1, true), tty)
    -- off a terminal, resource-query's bytes
    local r = cli.run{ "match", "--graph", "g.json", stdin = "match allocate j.yaml\n", cwd = dir }
    assert.truthy(r.out:find("c\27[31m[1:s]", 1, true))
  end)
end)
