-- Hostile YAML (core/yaml_limits.h): recursive aliases, merge keys over
-- them, alias bombs of a few bytes and deep nesting, in both YAML readers
-- (fluence.yaml, the manifest reader) and through every way one reaches
-- fluence: an attribute file, a kubeconfig, the cluster's fluence-resources
-- ConfigMap.  Each is refused with its place named, quickly, never a crash.
local yaml = require "fluence.yaml"
local json = require "fluence.json"
local manifest = require "fluence.manifest"
local cli = require "support.cli"
local envtest = require "support.envtest"

local RECURSIVE = "alias %*%w+ names a node that contains it %(a recursive alias%)"
local BOMB = "aliases expand to too large a document"

-- A document of `levels` anchors, each a list of two aliases of the one
-- before: 2^levels leaves from a few bytes per level.
local function doubling(levels, indent)
  indent = indent or ""
  local lines = { indent .. "a0: &a0 [x, x]" }
  for i = 1, levels do
    lines[#lines + 1] = ("%sa%d: &a%d [*a%d, *a%d]"):format(indent, i, i, i - 1, i - 1)
  end
  return table.concat(lines, "\n") .. "\n"
end

describe("fluence.yaml refuses", function()
  it("an alias inside its own anchor, located at the alias", function()
    local v, err = yaml.decode("a: &s [*s]\n", "r.yaml")
    assert.is_nil(v)
    assert.matches("^r%.yaml:1:8: " .. RECURSIVE .. "\n    a: &s %[%*s%]\n           %^$", err)
    v, err = yaml.decode("backends:\n- &r {name: x, with: *r}\n", "self.yaml")
    assert.is_nil(v)
    assert.matches("^self%.yaml:2:22: alias %*r names", err)
    -- deeper down, and in a mapping's value
    assert.matches("^d%.yaml:3:12: alias %*top ", select(2, yaml.decode("top: &top\n  a:\n    b: [1, *top]\n", "d.yaml")))
  end)

  it("a merge key over a recursive alias (the crash of issue 24)", function()
    local v, err = yaml.decode("a: &s [*s]\nb: {<<: *s}\n", "m.yaml")
    assert.is_nil(v)
    assert.matches("^m%.yaml:1:8: " .. RECURSIVE, err)
  end)

  it("a merge key whose value is not a mapping or a list of mappings: merging never recurses", function()
    for _, text in ipairs{ "z: &s [[{a: 1}]]\ny: {<<: *s}\n", "y: {<<: [[{a: 1}]]}\n", "y: {<<: 5}\n",
                           "y: {<<: [{a: 1}, x]}\n" } do
      local v, err = yaml.decode(text, "m.yaml")
      assert.is_nil(v, text)
      assert.matches('^m%.yaml:%d+:%d+: merge key "<<" needs a mapping or a list of mappings', err)
    end
  end)

  it("still merges a mapping and a list of mappings, the explicit keys and then the earlier winning", function()
    local v = assert(yaml.decode("a: &a {x: 1, y: 1}\nb: &b {y: 2, z: 2}\nc: {<<: [*a, *b], x: 0}\nd: {<<: *b}\n"))
    assert.are.same({ x = 0, y = 1, z = 2 }, v.c)
    assert.are.same({ y = 2, z = 2 }, v.d)
    assert.are.same({}, assert(yaml.decode("e: {<<: []}\n")).e)
  end)

  it("aliases that nest: a 250-byte document standing for gigabytes, at the alias that spends the budget", function()
    local text = doubling(30)
    assert.is_true(#text < 700)
    local v, err = yaml.decode(text, "lol.yaml")
    assert.is_nil(v)
    -- a_k weighs about 6 x 2^k: the aliases of a17 (line 18) are the first
    -- to take the total past 1 MiB plus 4 x ~600 bytes
    assert.matches("^lol%.yaml:18:12: " .. BOMB, err)
  end)

  it("alias expansion by a budget proportional to the input: the same aliases fit a larger input", function()
    -- eight aliases of a 300,000-byte string: 2.4 MB; within 1 MiB + 4 x the
    -- input only once the input is large enough
    local big = ("x"):rep(300000)
    local aliases = "l: [" .. ("*s, "):rep(7) .. "*s]\n"
    local small = "s: &s " .. big .. "\n" .. aliases
    local v, err = yaml.decode(small, "small.yaml")
    assert.is_nil(v)
    assert.matches("^small%.yaml:2:%d+: " .. BOMB, err)
    local padded = small .. "pad: " .. ("y"):rep(400000) .. "\n"
    v = yaml.decode(padded, "padded.yaml")
    assert.is_table(v)
    assert.are.equal(8, #v.l)
    assert.is_true(v.s == v.l[8])
  end)

  it("a budget for the whole input, not for each document", function()
    -- each document's aliases stand for 1 MB: one is within 1 MiB plus 4 x
    -- its 100 kB, three are not within 1 MiB plus 4 x their 300 kB
    local doc = "s: &s " .. ("x"):rep(100000) .. "\nl: [" .. ("*s, "):rep(9) .. "*s]\n"
    assert.is_table(yaml.decode_all(doc))
    local docs, err = yaml.decode_all(doc .. "---\n" .. doc .. "---\n" .. doc, "stream.yaml")
    assert.is_nil(docs)
    assert.matches("^stream%.yaml:%d+:%d+: " .. BOMB, err)
  end)

  it("nesting past its limit, located, with the Lua stack checked (no overflow, no crash)", function()
    for _, text in ipairs{ ("["):rep(300), ("{a: "):rep(300), ("- "):rep(300) .. "x" } do
      local v, err = yaml.decode(text, "deep.yaml")
      assert.is_nil(v)
      assert.matches("^deep%.yaml:1:%d+: nesting too deep %(more than 256 levels%)", err)
    end
    -- 256 levels are fine
    assert.is_table(yaml.decode(("["):rep(255) .. ("]"):rep(255)))
  end)
end)

describe("the manifest reader refuses", function()
  it("an alias inside its own anchor, named as such", function()
    local s, err = manifest.parse("apiVersion: v1\nkind: Pod\nmetadata: &m {name: p, labels: {x: *m}}\n", "m.yaml")
    assert.is_nil(s)
    assert.matches("^m%.yaml:3:36: " .. RECURSIVE, err)
    s, err = manifest.parse("kind: Pod\nmetadata: {name: *nope}\n", "u.yaml")
    assert.is_nil(s)
    assert.matches("^u%.yaml:2:18: unknown alias\n", err)
  end)

  it("aliases that nest, and a budget for the whole stream", function()
    local s, err = manifest.parse("kind: X\n" .. doubling(30), "lol.yaml")
    assert.is_nil(s)
    assert.matches("^lol%.yaml:%d+:%d+: " .. BOMB, err)
    local doc = "kind: X\ns: &s " .. ("x"):rep(100000) .. "\nl: [" .. ("*s, "):rep(9) .. "*s]\n"
    assert.is_not_nil(manifest.parse(doc, "one.yaml"))
    s, err = manifest.parse(doc .. "---\n" .. doc .. "---\n" .. doc, "stream.yaml")
    assert.is_nil(s)
    assert.matches("^stream%.yaml:%d+:%d+: " .. BOMB, err)
  end)

  it("nesting past its limit", function()
    local s, err = manifest.parse("kind: X\na: " .. ("["):rep(300), "deep.yaml")
    assert.is_nil(s)
    assert.matches("^deep%.yaml:2:%d+: nesting too deep %(more than 256 levels%)", err)
  end)
end)

-- Through the command line: exit 3 for a file, nothing on stdout, one
-- located message naming the file first.
describe("hostile YAML in fluence's inputs", function()
  local dir
  before_each(function() dir = cli.tmpdir() end)
  after_each(cli.cleanup)
  local function file(name, text) return cli.write(dir .. "/" .. name, text) end
  local function run(args)
    args.env = { HOME = "/nonexistent", KUBECONFIG = false }
    return cli.run(args)
  end
  local function refused(r, code, pattern)
    assert.are.equal("", r.out)
    assert.are.equal(code, r.code, r.err)
    assert.matches(pattern, r.err)
    assert.is_nil(r.err:find("traceback", 1, true))
  end

  it("an attribute file: merge keys over a recursive alias, a self-reference, a bomb", function()
    local pod = select(2, cli.workdir())
    local head = "backends:\n- name: x\n  attributes: {cost_usd: 1}\n"
    refused(run{ "select", "-f", pod, "--offline", "--attributes", file("a.yaml", head .. "z: &s [*s]\ny: {<<: *s}\n") },
            3, '^fluence: provider "file": [^\n]*/a%.yaml:4:8: ' .. RECURSIVE .. "\n")
    refused(run{ "select", "-f", pod, "--offline", "--attributes",
                 file("b.yaml", "backends:\n- &r {name: x, attributes: {cost_usd: 1}, with: *r}\n") },
            3, "/b%.yaml:2:49: alias %*r names")
    refused(run{ "select", "-f", pod, "--offline", "--attributes", file("c.yaml", head .. doubling(30)) },
            3, "/c%.yaml:%d+:%d+: " .. BOMB)
  end)

  it("a manifest", function()
    refused(run{ "select", "-f", file("m.yaml", "kind: Pod\n" .. doubling(40)), "--offline" }, 3,
            "^fluence: [^\n]*/m%.yaml:%d+:%d+: " .. BOMB)
  end)

  it("a kubeconfig: located, the file first, exit 3 even where the cluster is optional", function()
    local pod = select(2, cli.workdir())
    local attrs = cli.root .. "/examples/quickstart/attributes.yaml"
    for name, text in pairs{
      ["merge.yaml"] = "apiVersion: v1\nkind: Config\nclusters: &s [*s]\nusers: [{<<: *s}]\n",
      ["bomb.yaml"] = "apiVersion: v1\nkind: Config\n" .. doubling(30, ""),
    } do
      local kc = file(name, text)
      local r = run{ "select", "-f", pod, "--attributes", attrs, "--kubeconfig", kc }
      refused(r, 3, "^fluence: " .. kc:gsub("%p", "%%%0") .. ":%d+:%d+: ")
      r = run{ "graph", "--kubeconfig", kc }
      refused(r, 3, "^fluence: " .. kc:gsub("%p", "%%%0") .. ":%d+:%d+: ")
    end
  end)
end)

-- The cluster's fluence-resources, in a namespace of its own (--fluence-ns):
-- a note naming the ConfigMap and its key where the offerings are optional,
-- exit 4 where they are required; never a crash.
envtest.describe("hostile YAML in the cluster's fluence-resources", function(api)
  local ns
  local attrs = cli.root .. "/examples/quickstart/attributes.yaml"
  local function configmap(body)
    local path = ("/api/v1/namespaces/%s/configmaps"):format(ns)
    pcall(api.request, api, "DELETE", path .. "/fluence-resources")
    api:request("POST", path, { apiVersion = "v1", kind = "ConfigMap", metadata = { name = "fluence-resources" },
                                data = { ["resources.yaml"] = body } })
  end
  setup(function() ns = api:namespace("hostile-yaml") end)
  teardown(cli.cleanup)

  for name, c in pairs{
    ["a self-reference (with: *r)"] = { "resources:\n- &r {type: rack, name: r, with: [*r]}\n", "2:35: alias %*r names" },
    ["a merge key over a recursive alias"] = { "x: &s [*s]\nresources:\n- {<<: *s}\n", "1:8: alias %*s names" },
    ["a bomb"] = { "resources: []\n" .. doubling(30), "%d+:%d+: " .. BOMB },
  } do
    it(name, function()
      configmap(c[1])
      local _, pod = cli.workdir()
      local where = ns:gsub("%p", "%%%0") .. "/fluence%-resources resources%.yaml:" .. c[2]
      local r = cli.run{ "select", "-f", pod, "--attributes", attrs, "--kubeconfig", api.kubeconfig,
                         "--fluence-ns", ns, env = { HOME = "/nonexistent" } }
      assert.are.equal(0, r.code, r.err)
      -- the note is one line, on stderr and in the audit
      assert.matches("\nnote: scheduler offerings unknown: context \"admin\" %(https://[^)]+%): " ..
                     where .. "[^\n]*; selecting over all provided backends\nselected backend", "\n" .. r.err)
      local audit = json.decode(yaml.decode(r.out).metadata.annotations["fluence.flux-framework.org/select-result"])
      assert.matches("^scheduler offerings unknown: context \"admin\" %(https://[^)]+%): " ..
                     where .. "[^\n]*; selecting over all provided backends$", audit.notes[1])
      r = cli.run{ "select", "-f", pod, "--attributes", attrs, "--kubeconfig", api.kubeconfig,
                   "--fluence-ns", ns, "--require-offerings", env = { HOME = "/nonexistent" } }
      assert.are.equal("", r.out)
      assert.are.equal(4, r.code, r.err)
      assert.matches("^fluence: [^\n]*" .. where, r.err)
    end)
  end
end)
