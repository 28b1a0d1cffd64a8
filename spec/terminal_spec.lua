-- Terminal and log injection (issue 24, class 6): strings from the
-- cluster, files and plugins reach stderr (and the explain table) escaped
-- as Go's %q does (core/escape.h), so an ANSI escape or a carriage return
-- cannot repaint the terminal, and a newline cannot forge a line: one
-- message is one line.  What fluence writes as data (the manifest, its pin
-- and audit, JSON) keeps the strings as they are.
local sys = require "fluence.sys"
local yaml = require "fluence.yaml"
local json = require "fluence.json"
local cli = require "support.cli"
local envtest = require "support.envtest"

-- No byte of stderr may drive a terminal: no C0 control but the newline
-- (tabs aside), no DEL, no C1, no line separator.
local function inert(text)
  assert.is_nil(text:find("[%z\1-\8\11-\31\127]"), "a control character reached the terminal: " .. ("%q"):format(text))
  assert.is_nil(text:find("\194[\128-\159]"), "a C1 control reached the terminal")
  assert.is_nil(text:find("\226\128[\168\169\170-\174]"), "a separator or bidi control reached the terminal")
end

describe("sys.quote and sys.escape (Go's %q)", function()
  it("escape controls, separators, bidi controls and bytes that are not UTF-8; keep the printable", function()
    local cases = {
      { "plain", '"plain"', "plain" },
      { 'a"b\\c', '"a\\"b\\\\c"', 'a"b\\c' },
      { "a\nb\rc\td", '"a\\nb\\rc\\td"', "a\\nb\\rc\\td" },
      { "\27[31mred\27[0m", '"\\x1b[31mred\\x1b[0m"', "\\x1b[31mred\\x1b[0m" },
      { "\0\7\8\11\12\127", '"\\x00\\a\\b\\v\\f\\x7f"', "\\x00\\a\\b\\v\\f\\x7f" },
      { "csi\194\155x", '"csi\\u009bx"', "csi\\u009bx" },                  -- C1 CSI
      { "l\226\128\168s", '"l\\u2028s"', "l\\u2028s" },                     -- line separator
      { "evil\226\128\174txt", '"evil\\u202etxt"', "evil\\u202etxt" },      -- right-to-left override
      { "bad\255\254", '"bad\\xff\\xfe"', "bad\\xff\\xfe" },
      { "\192\175", '"\\xc0\\xaf"', "\\xc0\\xaf" },                         -- overlong '/'
      { "caf\195\169 \240\159\154\128", '"caf\195\169 \240\159\154\128"', "caf\195\169 \240\159\154\128" },
    }
    for _, c in ipairs(cases) do
      assert.are.equal(c[2], sys.quote(c[1]), c[1])
      assert.are.equal(c[3], sys.escape(c[1]), c[1])
    end
    assert.are.equal("a\nb\t\\x1b", sys.escape("a\nb\t\27", true))
  end)
end)

describe("hostile strings on stderr", function()
  local dir, pod
  before_each(function() dir, pod = cli.workdir() end)
  after_each(cli.cleanup)

  local function run(args)
    args.env = { HOME = "/nonexistent", KUBECONFIG = false }
    return cli.run(args)
  end

  -- A backend name with a quote and a newline, and one with an escape
  -- sequence and a carriage return, from an attribute file.
  local FORGED = 'x"\nselected backend "evil'
  local PAINT = "\27[2K\rok\27[31m"
  local function attrs()
    return cli.write(dir .. "/a.json", json.encode{ backends = json.array{
      { name = FORGED, attributes = { cost_usd = 1 } },
      { name = PAINT, attributes = { cost_usd = 2 } },
    } })
  end

  it("the selected backend line stays one line; the pin and the audit keep the name", function()
    local r = run{ "select", "-f", pod, "--attributes", attrs(), "--offline" }
    assert.are.equal(0, r.code, r.err)
    inert(r.err)
    local lines = cli.lines(r.err)
    assert.are.equal('selected backend "x\\"\\nselected backend \\"evil" for Pod/p (policy "min-cost")', lines[1])
    assert.are.equal("  dropped \\x1b[2K\\rok\\x1b[31m: cost_usd 2 is not within 0 of the best (1)", lines[2])
    assert.are.equal(2, #lines)
    local doc = yaml.decode(r.out)
    assert.are.equal(FORGED, doc.metadata.annotations["fluence.flux-framework.org/require-backend"])
    local audit = json.decode(doc.metadata.annotations["fluence.flux-framework.org/select-result"])
    assert.are.equal(FORGED, audit.chosen)
    assert.is_string(audit.dropped[PAINT])
  end)

  it("object names and policy texts from the manifest, and an existing pin", function()
    local m = cli.write(dir .. "/m.yaml", [[
apiVersion: v1
kind: Pod
metadata:
  name: "p\e[8m\nnote: forged"
  annotations:
    fluence.flux-framework.org/select-policy: "min-cost,\nprefer:a"
spec:
  schedulerName: fluence
  containers: [{name: c, image: x}]
---
apiVersion: v1
kind: Pod
metadata:
  name: q
  annotations:
    fluence.flux-framework.org/select-policy: min-cost
    fluence.flux-framework.org/require-backend: "\e]0;title\a"
spec:
  schedulerName: fluence
  containers: [{name: c, image: x}]
]])
    local r = run{ "select", "-f", m, "--attributes", cli.root .. "/examples/quickstart/attributes.yaml", "--offline" }
    assert.are.equal(0, r.code, r.err)
    inert(r.err)
    assert.matches('\nselected backend "gpu%-t4" for Pod/p\\x1b%[8m\\nnote: forged %(policy "min%-cost,\\nprefer:a"%)\n',
                   "\n" .. r.err)
    assert.matches('\nnote: Pod/q already pinned to "\\x1b%]0;title\\a"; skipping selection', "\n" .. r.err)
  end)

  it("a provider's notes, warnings and errors", function()
    local pdir = dir .. "/providers"
    os.execute("mkdir -p " .. cli.quote(pdir))
    cli.write(pdir .. "/loud.lua", [[
return { name = "loud", description = "says things",
  candidates = function(ctx)
    ctx.api.warn("warned\27[2J\nfluence: forged warning")
    return { { name = "b", attrs = { cost_usd = 1 } } }, { "noted\r\27[1A\nforged note" }
  end }
]])
    cli.write(pdir .. "/fails.lua", [[
return { name = "fails", description = "fails",
  candidates = function() error("failed\27[31m\rred", 0) end }
]])
    local r = run{ "select", "-f", pod, "--offline", "--provider-dir", pdir, "--provider", "loud" }
    assert.are.equal(0, r.code, r.err)
    inert(r.err)
    local lines = cli.lines(r.err)
    assert.are.equal("fluence: warned\\x1b[2J\\nfluence: forged warning", lines[1])
    assert.are.equal('selected backend "b" for Pod/p (policy "min-cost")', lines[2])
    assert.are.equal("  note: noted\\r\\x1b[1A\\nforged note", lines[3])
    r = run{ "select", "-f", pod, "--offline", "--provider-dir", pdir, "--provider", "fails" }
    assert.are.equal(3, r.code)
    inert(r.err)
    assert.matches("failed\\x1b%[31m\\rred\n$", r.err)
  end)

  it("located errors quoting the text: one message line, then the excerpt and the caret", function()
    -- a duplicate key is an error in a Fluence object (elsewhere a warning)
    local m = cli.write(dir .. "/dup.yaml", 'kind: Pod\nmetadata:\n  name: p\n' ..
      '  annotations: {fluence.flux-framework.org/select-policy: min-cost}\n' ..
      'spec:\n  schedulerName: fluence\n  "a\\nb\\e[1m": 1\n  "a\\nb\\e[1m": 2\n')
    local r = run{ "select", "-f", m, "--offline" }
    assert.are.equal(3, r.code)
    inert(r.err)
    local lines = cli.lines(r.err)
    assert.are.equal(3, #lines, r.err)
    assert.matches('dup%.yaml:8:3: duplicate key "a\\nb\\x1b%[1m" in a Fluence object', lines[1])
  end)

  -- core/escape.c is the one place control characters are handled: the
  -- excerpt under a located error keeps one column per byte (a control, DEL
  -- included, as '?': DEL once went through raw), and a value quoted in a
  -- message is escaped as Go's %q (yaml_kubectl.c once wrote "\x0a" its own way)
  it("an excerpt shows a control character as one column, a quoted value as %q does", function()
    local _, err = yaml.decode("a: b\127c\n", "d.yaml")
    assert.are.equal("d.yaml:1:1: control characters are not allowed\n    a: b?c\n    ^", err)
    local manifest = require "fluence.manifest"
    local s = assert(manifest.parse('kind: X\nmetadata:\n  name: x\nspec:\n  a: !!int "a\\nb\\u202ec"\n', "t.yaml"))
    local j, e = s:object_json(1)
    assert.is_nil(j)
    assert.matches("cannot decode !!str `a\\nb\\u202ec` as a !!int", e, 1, true)
  end)

  it("the explain table (on a terminal's stdout) escapes what it shows", function()
    local r = run{ "explain", "-f", pod, "--attributes", attrs(), "--offline" }
    assert.are.equal(0, r.code, r.err)
    inert(r.out)
    assert.matches("\nchosen: x\"\\nselected backend \"evil\n", r.out)
    -- the JSON keeps the names as they are
    r = run{ "explain", "-f", pod, "--attributes", attrs(), "--offline", "-o", "json" }
    assert.are.equal(FORGED, json.decode(r.out).objects[1].chosen)
  end)
end)

-- The real API server echoes what it was sent in its Status messages: a
-- name with an escape sequence and a newline comes back in a 422.
envtest.describe("hostile strings in a server's answer", function(api)
  local ns
  setup(function() ns = api:namespace("terminal") end)
  teardown(cli.cleanup)

  it("Status.message and the object's name stay on one line, escaped", function()
    local m = cli.write(cli.tmpdir() .. "/m.yaml", (cli.POD:format("min-cost"):gsub("name: p",
      'name: "bad\\e[31m\\nfluence: forged"')))
    local r = cli.run{ "apply", "-f", m, "--attributes", cli.root .. "/examples/quickstart/attributes.yaml",
                       "--kubeconfig", api.kubeconfig, "-n", ns, env = { HOME = "/nonexistent" } }
    assert.are.equal(4, r.code, r.err)
    inert(r.err)
    local forged = 0
    for _, l in ipairs(cli.lines(r.err)) do if l:match("^fluence: forged") then forged = forged + 1 end end
    assert.are.equal(0, forged, r.err)
    assert.matches('pod/bad\\x1b%[31m\\nfluence: forged: cluster: Pod "bad\\x1b%[31m\\nfluence: forged" is invalid', r.err)
  end)

  it("graph -o tree shows the offerings' names escaped, one vertex one line", function()
    api:request("POST", ("/api/v1/namespaces/%s/configmaps"):format(ns), { apiVersion = "v1", kind = "ConfigMap",
      metadata = { name = "fluence-resources" },
      data = { ["resources.yaml"] = 'resources:\n- {type: qdevice, name: "q\\e[31m\\nnode0 (node) rank 0"}\n' } })
    local r = cli.run{ "graph", "-o", "tree", "--kubeconfig", api.kubeconfig, "--fluence-ns", ns,
                       env = { HOME = "/nonexistent" } }
    assert.are.equal(0, r.code, r.err)
    inert(r.out)
    assert.matches("\n  q\\x1b%[31m\\nnode0 %(node%) rank 0 %(node%) %[class=qdevice, [^\n]*%]\n$", r.out)
    assert.is_nil(("\n" .. r.out):find("\nnode0 ", 1, true))
  end)
end)
