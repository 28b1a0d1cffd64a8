-- fluence.inputs: gathering -f files, directories and stdin; joining streams.
local inputs = require "fluence.inputs"
local errors = require "fluence.errors"
local yaml = require "fluence.yaml"
local manifest = require "fluence.manifest"

local function q(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end

local write = require("support.cli").write

local function input_error(f, ...)
  local ok, e = errors.try(f, ...)
  assert.is_false(ok)
  assert.are.equal("INPUT", e.kind)
  return e.message
end

describe("fluence.inputs.read", function()
  local dir

  before_each(function()
    dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -p " .. q(dir .. "/sub/deeper") .. " " .. q(dir .. "/empty")))
    write(dir .. "/b.yaml", "kind: B\n")
    write(dir .. "/a.yml", "kind: A\n")
    write(dir .. "/c.json", '{"kind": "C"}')
    write(dir .. "/notes.txt", "not a manifest")
    write(dir .. "/sub/d.yaml", "kind: D\n")
    write(dir .. "/sub/deeper/e.YAML", "kind: E\n")
  end)

  after_each(function()
    os.execute("rm -rf " .. q(dir))
  end)

  local function names(list)
    local out = {}
    for _, x in ipairs(list) do out[#out + 1] = x.name:sub(#dir + 2) end
    return out
  end

  it("reads files in the order given", function()
    local got = inputs.read({ dir .. "/b.yaml", dir .. "/a.yml" })
    assert.are.same({ "b.yaml", "a.yml" }, names(got))
    assert.are.equal("kind: B\n", tostring(got[1].text))
    assert.are.equal(8, #got[1].text)
  end)

  it("reads texts manifest.parse takes, out of the Lua heap, and join accepts", function()
    local got = inputs.read({ dir .. "/b.yaml", dir .. "/c.json" })
    assert.are.equal("userdata", type(got[1].text))
    local s = assert(manifest.parse(got[1].text, "b.yaml"))
    assert.are.equal("B", s:objects()[1].kind)
    assert.are.equal("kind: B\n", s:render())
    assert.are.equal('kind: B\n---\n{"kind": "C"}', inputs.join(got))
  end)

  it("reads a big file (huge-page memory) and an empty one", function()
    local line = "# " .. ("x"):rep(97) .. "\n"
    local big = "kind: Big\n" .. line:rep(60000)          -- 6 MB: above the mapping threshold
    write(dir .. "/big.yaml", big)
    write(dir .. "/empty.yaml", "")
    local got = inputs.read({ dir .. "/big.yaml", dir .. "/empty.yaml" })
    assert.are.equal(#big, #got[1].text)
    assert.is_true(tostring(got[1].text) == big)
    local s = assert(manifest.parse(got[1].text, "big.yaml"))
    assert(s:set_annotations(1, { a = "b" }))
    assert.are.equal("kind: Big\nmetadata:\n  annotations:\n    a: b\n" .. line:rep(60000), s:render())
    assert.are.equal(0, #got[2].text)
    assert.are.equal("", tostring(got[2].text))
    assert.are.equal(0, #assert(manifest.parse(got[2].text, "empty.yaml")):objects())
  end)

  it("reads a directory's manifests sorted, skipping subdirectories without -R", function()
    assert.are.same({ "a.yml", "b.yaml", "c.json" }, names(inputs.read({ dir })))
  end)

  it("recurses with -R", function()
    assert.are.same({ "a.yml", "b.yaml", "c.json", "sub/d.yaml", "sub/deeper/e.YAML" },
      names(inputs.read({ dir .. "/" }, true)))
  end)

  describe("-R and symbolic links (each file once, as kubectl)", function()
    it("does not follow a link to the directory itself or a parent", function()
      assert(os.execute(("ln -s . %s && ln -s .. %s"):format(q(dir .. "/self"), q(dir .. "/sub/up"))))
      assert.are.same({ "a.yml", "b.yaml", "c.json", "sub/d.yaml", "sub/deeper/e.YAML" },
        names(inputs.read({ dir }, true)))
    end)

    it("does not follow a link to another directory while recursing", function()
      local other = os.tmpname()
      os.remove(other)
      assert(os.execute("mkdir -p " .. q(other)))
      write(other .. "/x.yaml", "kind: X\n")
      assert(os.execute(("ln -s %s %s"):format(q(other), q(dir .. "/elsewhere"))))
      local ok, got = pcall(inputs.read, { dir }, true)
      -- but reads a linked directory named with -f
      local named = ok and inputs.read({ dir .. "/elsewhere" }, true)
      os.execute("rm -rf " .. q(other))
      assert(ok, got)
      assert.are.same({ "a.yml", "b.yaml", "c.json", "sub/d.yaml", "sub/deeper/e.YAML" }, names(got))
      assert.are.same({ "elsewhere/x.yaml" }, names(named))
    end)

    it("reads a linked file once, under the first name found", function()
      assert(os.execute(("ln -s sub/d.yaml %s && ln -s ../b.yaml %s"):format(
        q(dir .. "/d-link.yaml"), q(dir .. "/sub/b-again.yaml"))))
      assert.are.same({ "a.yml", "b.yaml", "c.json", "d-link.yaml", "sub/deeper/e.YAML" },
        names(inputs.read({ dir }, true)))
      -- also when the file was named with -f first; a file named twice is read twice
      assert.are.same({ "b.yaml", "a.yml", "c.json", "d-link.yaml" },
        names(inputs.read({ dir .. "/b.yaml", dir }, false)))
      assert.are.same({ "b.yaml", "b.yaml" }, names(inputs.read({ dir .. "/b.yaml", dir .. "/b.yaml" })))
    end)

    it("skips a dangling link", function()
      assert(os.execute(("ln -s nowhere.yaml %s"):format(q(dir .. "/gone.yaml"))))
      assert.are.same({ "a.yml", "b.yaml", "c.json" }, names(inputs.read({ dir })))
    end)
  end)

  it("accepts a single name", function()
    assert.are.equal(1, #inputs.read(dir .. "/c.json"))
  end)

  it("names the path in errors", function()
    assert.matches("/missing.yaml: no such file or directory", input_error(inputs.read, { dir .. "/missing.yaml" }), 1, true)
    local msg = input_error(inputs.read, { dir .. "/empty" })
    assert.matches(dir .. "/empty: no manifests found", msg, 1, true)
    assert.matches("-R", msg, 1, true)
    assert.matches("no manifests given", input_error(inputs.read, {}), 1, true)
  end)

  it("reports unreadable files", function()
    if os.execute("test $(id -u) = 0") then return end   -- root reads anything
    write(dir .. "/secret.yaml", "kind: S\n")
    os.execute("chmod 000 " .. q(dir .. "/secret.yaml"))
    assert.matches("secret.yaml", input_error(inputs.read, { dir .. "/secret.yaml" }), 1, true)
  end)

  local function run_lua(code, stdin, stdin_file)
    local root = os.getenv("PWD")
    local feed = stdin_file and ("cat %s"):format(q(stdin_file)) or ("printf %%s %s"):format(q(stdin))
    local cmd = ("%s | lua5.4 -e %s 2>&1"):format(feed,
      q(("package.cpath=%q..package.cpath; package.path=%q..package.path; "):format(
        (os.getenv("FLUENCE_CPATH") or (root .. "/build/lib")) .. "/?.so;", root .. "/lua/?.lua;") .. code))
    local p = io.popen(cmd)
    local out = p:read("a")
    p:close()
    return out
  end

  it("refuses inputs over FLUENCE_MAX_INPUT, files and stdin", function()
    local root = os.getenv("PWD")
    local function limited(max, code, feed)
      local cmd = ("%s | FLUENCE_MAX_INPUT=%d lua5.4 -e %s 2>&1"):format(feed, max,
        q(("package.cpath=%q..package.cpath; package.path=%q..package.path; "):format(
          (os.getenv("FLUENCE_CPATH") or (root .. "/build/lib")) .. "/?.so;", root .. "/lua/?.lua;") .. code))
      local p = io.popen(cmd)
      local out = p:read("a")
      p:close()
      return out
    end
    local read = 'local e = require("fluence.errors"); local ok, r = e.try(require("fluence.inputs").read, {%q}); ' ..
                 'io.write(ok and tostring(#r[1].text) or r.message)'
    write(dir .. "/ten.yaml", "kind: 10\n\n")
    assert.matches("ten.yaml: larger than 9 bytes (FLUENCE_MAX_INPUT",
      limited(9, read:format(dir .. "/ten.yaml"), "true"), 1, true)
    assert.are.equal("10", limited(10, read:format(dir .. "/ten.yaml"), "true"))
    assert.matches("<stdin>: larger than 100000 bytes (FLUENCE_MAX_INPUT", limited(100000, read:format("-"), "head -c 200000 /dev/zero"), 1, true)
    assert.are.equal("100000", limited(100000, read:format("-"), "head -c 100000 /dev/zero"))
  end)

  it("reads stdin for -, once", function()
    assert.are.equal("-|kind: S\n", run_lua(
      'local r = require("fluence.inputs").read({"-"}); io.write(r[1].name, "|", tostring(r[1].text))', "kind: S\n"))
    local big = ("k" .. ("v"):rep(99) .. ": 1\n"):rep(60000)   -- 6 MB through a pipe: the buffer grows
    local p = io.open(dir .. "/big-stdin", "wb")
    p:write(big)
    p:close()
    assert.are.equal(tostring(#big), run_lua(
      'io.write(#require("fluence.inputs").read({"-"})[1].text)', "", dir .. "/big-stdin"))
    assert.matches("standard input can be read only once", run_lua(
      'local e = require("fluence.errors"); local ok, err = e.try(require("fluence.inputs").read, {"-", "-"}); io.write(err.message)',
      "kind: S\n"), 1, true)
  end)
end)

describe("fluence.inputs.join", function()
  local function docs(text)
    return assert(yaml.decode_all(text, "joined"))
  end

  it("separates files so documents never merge", function()
    local joined = inputs.join({ "a: 1", "b: 2\n" })
    assert.are.equal("a: 1\n---\nb: 2\n", joined)
    assert.are.same({ { a = 1 }, { b = 2 } }, docs(joined))
  end)

  it("keeps a file's own leading --- (after comments too)", function()
    assert.are.equal("a: 1\n---\nb: 2\n", inputs.join({ "a: 1\n", "---\nb: 2\n" }))
    assert.are.equal("a: 1\n# c\n---\nb: 2\n", inputs.join({ "a: 1\n", "# c\n---\nb: 2\n" }))
  end)

  it("closes the previous document before directives", function()
    local joined = inputs.join({ "a: 1\n", "%YAML 1.2\n---\nb: 2\n" })
    assert.are.equal(2, #docs(joined))
  end)

  it("makes JSON files documents of the stream", function()
    local joined = inputs.join({ "a: 1\n", '{"b": 2}', "c: 3\n" })
    assert.are.same({ { a = 1 }, { b = 2 }, { c = 3 } }, docs(joined))
  end)

  it("keeps CRLF and drops BOMs after the start", function()
    assert.are.equal("a: 1\r\n---\r\nb: 2\r\n", inputs.join({ "a: 1\r\n", "\239\187\191b: 2\r\n" }))
  end)

  it("accepts the records inputs.read returns", function()
    assert.are.equal("a: 1\n---\nb: 2\n", inputs.join({ { name = "x", text = "a: 1\n" }, { name = "y", text = "b: 2\n" } }))
  end)

  it("renders manifest streams given in place of texts", function()
    local s = assert(manifest.parse("kind: Pod\nmetadata: {name: p}\n", "p"))
    assert(s:set_annotations(1, { a = "b" }))
    assert.are.equal("a: 1\n---\n" .. s:render() .. "---\nc: 3\n", inputs.join({ "a: 1", s, "c: 3\n" }))
  end)

  it("joins rendered fixtures into a stream the manifest parser reads back", function()
    local texts = {}
    for _, f in ipairs({ "job.yaml", "multidoc.yaml", "pretty.json", "crlf.yaml", "bom.yaml" }) do
      local fh = assert(io.open("spec/fixtures/manifests/" .. f, "rb"))
      texts[#texts + 1] = fh:read("a")
      fh:close()
    end
    local s = assert(manifest.parse(inputs.join(texts), "joined"))
    assert.are.equal(7, #s:objects())
  end)
end)

describe("fluence.inputs.write", function()
  -- a child Lua writes to its stdout; it must be what join returns
  local function written(items_code)
    local out, script = os.tmpname(), os.tmpname()
    write(script, ([[
package.cpath = %q
package.path = %q
local inputs = require "fluence.inputs"
local manifest = require "fluence.manifest"
local function stream(text)
  local s = assert(manifest.parse(text, "s"))
  for _, o in ipairs(s:objects()) do assert(s:set_annotations(o.index, { a = "b" })) end
  return s
end
local items = %s
assert(inputs.write(1, items))
io.stdout:write("") -- nothing else
]]):format(package.cpath, package.path, items_code))
    assert(os.execute(("lua5.4 %s > %s"):format(q(script), q(out))))
    local f = assert(io.open(out, "rb"))
    local text = f:read("a")
    f:close()
    os.remove(out)
    os.remove(script)
    return text
  end

  local function stream(text)
    local s = assert(manifest.parse(text, "s"))
    for _, o in ipairs(s:objects()) do assert(s:set_annotations(o.index, { a = "b" })) end
    return s
  end

  it("writes a lone stream as render returns it", function()
    local text = "kind: Pod\nmetadata:\n  name: p\n---\nkind: Pod\nmetadata: {name: q}\n"
    assert.are.equal(stream(text):render(), written(("{ stream(%q) }"):format(text)))
  end)

  it("writes texts and streams as join joins them", function()
    local a, b = "kind: Pod\nmetadata: {name: p}", "%YAML 1.2\n---\nkind: Pod\nmetadata: {name: q}\r\n"
    local want = inputs.join({ stream(a), "x: 1", stream(b), { text = "\239\187\191y: 2\n" } })
    assert.are.equal(want, written(("{ stream(%q), %q, stream(%q), { text = %q } }")
      :format(a, "x: 1", b, "\239\187\191y: 2\n")))
    assert.are.equal("a: 1\n---\nb: 2\n", written('{ "a: 1", "b: 2\\n" }'))
  end)
end)

-- Big regular files are mapped, not read (core/manifest.c): one truncated
-- under fluence must end the run with its name and exit 3, not SIGBUS.
describe("a mapped input", function()
  it("that shrinks while it is read ends the process with its name and exit 3", function()
    local cli = require "support.cli"
    local dir = cli.tmpdir()
    local path = dir .. "/big.yaml"
    local f = assert(io.open(path, "wb"))
    f:write(("# filler\n"):rep(300000))                  -- 2.7 MB: mapped
    f:close()
    local script = cli.write(dir .. "/t.lua", ([[
package.cpath = %q .. "/?.so;" .. package.cpath
local manifest = require "fluence.manifest"
local text = assert(manifest.read(%q))
assert(#text > 2000000)
io.open(%q, "wb"):close()                                -- truncate it
print(#tostring(text))                                   -- touches the pages beyond the end
]]):format(os.getenv("FLUENCE_CPATH") or (cli.root .. "/build/lib"), path, path))
    local out = os.tmpname()
    local ok, how, code = os.execute(("lua5.4 %s >%s 2>&1"):format(cli.quote(script), out))
    local msg = cli.slurp(out) or ""
    os.remove(out)
    cli.cleanup()
    assert.are.same({ "exit", 3 }, { how, code }, msg)
    assert.matches("fluence: " .. path:gsub("%p", "%%%0") .. ": the file changed %(was truncated%) while it was being read",
                   msg)
  end)
end)
