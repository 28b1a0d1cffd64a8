-- An error inside a policy names the file's own line and column, with the
-- file's line and the caret under the stage, however the policy is written
-- (lua/fluence/policy_source.lua): YAML plain, quoted with escapes, block
-- scalars, flow mappings, JSON, pod templates; a Lua string in
-- `fluence run POLICY.lua`.  Where no exact mapping exists it says so
-- honestly: the annotation's (or string's) own position and the position
-- inside the policy (issue 15).
local cli = require "support.cli"

local EX = cli.root .. "/examples"
local KEY = "fluence.flux-framework.org/select-policy"

-- line, column (bytes) and line text of the first `needle` at or after
-- `from` in text
local function where_in(text, needle, from)
  local at = assert(text:find(needle, from or 1, true), needle)
  local line, start = 1, 1
  for nl in text:sub(1, at - 1):gmatch("()\n") do line, start = line + 1, nl + 1 end
  local eol = text:find("\n", at, true) or (#text + 1)
  return line, at - start + 1, text:sub(start, eol - 1)
end

local function pod(annotation)
  return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  annotations:\n" .. annotation ..
         "spec:\n  schedulerName: fluence\n  containers: [{name: c, image: x}]\n"
end

describe("policy errors located in the file", function()
  local dir
  setup(function() dir = cli.tmpdir() end)
  teardown(cli.cleanup)

  local n = 0
  local function run(text, ext, extra)
    n = n + 1
    local path = cli.write(("%s/m%d.%s"):format(dir, n, ext or "yaml"), text)
    local args = { "select", "-f", path, "--attributes", EX .. "/quickstart/attributes.yaml", "--offline",
                   env = { HOME = dir } }
    for _, a in ipairs(extra or {}) do table.insert(args, 2, a) end
    local r = cli.run(args)
    r.path = path
    return r
  end

  -- the error is at `needle` (its first byte) in the file: FILE:LINE:COL,
  -- the file's line, a caret under it
  local function at_needle(text, needle, msg, from, ext, code)
    local r = run(text, ext)
    assert.are.equal(code or 3, r.code, r.err)
    assert.are.equal("", r.out)
    local line, col, src = where_in(text, needle, from)
    assert.are.equal(("fluence: %s:%d:%d: Pod/p: %s\n    %s\n    %s^\n"):format(
      r.path, line, col, msg, src:gsub("\t", " "), (" "):rep(col - 1)), r.err)
  end

  local UNKNOWN = 'unknown attribute "kost" in "min-kost" (did you mean "min-cost"?)'

  it("plain", function()
    at_needle(pod("    " .. KEY .. ": require:memory_gb>=24, min-kost\n"), "min-kost", UNKNOWN)
  end)

  it("plain over lines", function()
    at_needle(pod("    " .. KEY .. ": require:memory_gb>=24,\n      prefer:x,\n\n      min-kost\n"),
              "min-kost", UNKNOWN)
  end)

  it("single-quoted, with '' inside", function()
    at_needle(pod("    " .. KEY .. ": 'require:region=''us-east-1'', min-kost'\n"), "min-kost", UNKNOWN)
  end)

  it("double-quoted with escapes before the stage", function()
    at_needle(pod("    " .. KEY .. ': "require:region=\\"us-east-1\\",\\tprefer:\\u00e9\\x41,min-kost"\n'),
              "min-kost", UNKNOWN)
  end)

  it("double-quoted over lines, with an escaped line break", function()
    at_needle(pod("    " .. KEY .. ': "require:memory_gb>=24,\\\n      prefer:a,\n      min-kost"\n'),
              "min-kost", UNKNOWN)
  end)

  it("a literal block", function()
    at_needle(pod("    " .. KEY .. ": |\n      require:memory_gb>=24,\n        min-kost\n"), "min-kost", UNKNOWN)
  end)

  it("a folded block, stripped", function()
    at_needle(pod("    " .. KEY .. ": >-\n      require:memory_gb>=24,\n      prefer:a,\n\n      min-kost\n"),
              "min-kost", UNKNOWN)
  end)

  it("a flow mapping", function()
    at_needle(pod("    {" .. KEY .. ": \"min-cost, min-kost\", other: x}\n"):gsub("annotations:\n    {",
              "annotations: {"), "min-kost", UNKNOWN)
  end)

  it("a JSON manifest", function()
    local text = '{"apiVersion": "v1", "kind": "Pod",\n "metadata": {"name": "p", "annotations":\n' ..
                 '  {"' .. KEY .. '": "require:region=\\"x\\", min-kost"}},\n' ..
                 ' "spec": {"schedulerName": "fluence", "containers": [{"name": "c", "image": "x"}]}}\n'
    at_needle(text, "min-kost", UNKNOWN, nil, "json")
  end)

  it("a pod template's annotation", function()
    local text = "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: p\nspec:\n  template:\n    metadata:\n" ..
                 "      annotations:\n        " .. KEY .. ": 'min-cost,min-kost'\n    spec:\n" ..
                 "      schedulerName: fluence\n      containers: [{name: c, image: x}]\n"
    local r = run(text)
    assert.are.equal(3, r.code, r.err)
    local line, col = where_in(text, "min-kost")
    assert.matches(("^fluence: [^\n]*:%d:%d: Job/p: unknown attribute"):format(line, col), r.err)
  end)

  it("every kind of policy error: a bad value, a selection failure", function()
    at_needle(pod("    " .. KEY .. ': "require:memory_gb>=12abc"\n'), "12abc", 'bad number "12abc"')
    at_needle(pod("    " .. KEY .. ": |-\n      require:memory_gb>=24,\n      min-queue\n"), "min-queue",
              'selection failed: policy "min-queue": no candidate has attribute "queue_size" (missing: gpu-a100, gpu-l4)',
              nil, nil, 1)
  end)

  it("falls back to the annotation's own position when the value is an alias", function()
    local text = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  labels: {x: &pol 'min-cost,min-kost'}\n" ..
                 "  annotations:\n    " .. KEY .. ": *pol\nspec:\n  schedulerName: fluence\n" ..
                 "  containers: [{name: c, image: x}]\n"
    local r = run(text)
    assert.are.equal(3, r.code, r.err)
    local line, col = where_in(text, "*pol")
    assert.are.equal(("fluence: %s:%d:%d: Pod/p: select-policy:1:10: %s\n    min-cost,min-kost\n             ^\n")
                     :format(r.path, line, col, UNKNOWN), r.err)
  end)

  it("falls back to the object's position when the annotation comes through a merge key", function()
    local text = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  labels: &d {" .. KEY ..
                 ": 'min-cost,min-kost'}\n  annotations:\n    <<: *d\nspec:\n  schedulerName: fluence\n" ..
                 "  containers: [{name: c, image: x}]\n"
    local r = run(text)
    assert.are.equal(3, r.code, r.err)
    assert.are.equal(("fluence: %s:1:1: Pod/p: select-policy:1:10: %s\n    min-cost,min-kost\n             ^\n")
                     :format(r.path, UNKNOWN), r.err)
  end)

  describe("fluence run POLICY.lua", function()
    local job
    setup(function() job = cli.write(dir .. "/job.yaml", pod("    x: z\n")) end)

    local function run_policy(src, code)
      n = n + 1
      local path = cli.write(("%s/policy%d.lua"):format(dir, n), src)
      local r = cli.run{ "run", path, "-f", job, "--attributes", EX .. "/quickstart/attributes.yaml", "--offline",
                         env = { HOME = dir } }
      assert.are.equal(code or 3, r.code, r.err)
      assert.are.equal("", r.out)
      r.path = path
      return r
    end

    local function in_file(src, needle, msg, code)
      local r = run_policy(src, code)
      local line, col, text = where_in(src, needle)
      return r, ("%s:%d:%d: %s\n    %s\n    %s^\n"):format(r.path, line, col, msg, text:gsub("\t", " "),
                                                         (" "):rep(col - 1))
    end

    it("points into the string literal on its own line", function()
      local r, want = in_file('-- the cheapest big GPU\nreturn "require:memory_gb>=24, min-kost"\n', "min-kost", UNKNOWN)
      assert.are.equal("fluence: " .. want, r.err)
    end)

    it("through escapes, and in a long string over lines", function()
      local r, want = in_file('return { pipeline = "prefer:\\"a\\",\\tmin-kost" }\n', "min-kost", UNKNOWN)
      assert.are.equal("fluence: " .. want, r.err)
      r, want = in_file('return [==[\nrequire:memory_gb>=24,\n  min-kost]==]\n', "min-kost", UNKNOWN)
      assert.are.equal("fluence: " .. want, r.err)
    end)

    it("names the object and points into the file for a failed selection", function()
      local r, want = in_file('return "require:memory_gb>=24,\\z\n        min-queue"\n', "min-queue",
                              'policy "min-queue": no candidate has attribute "queue_size" (missing: gpu-a100, gpu-l4)', 1)
      assert.are.equal(("fluence: %s:1:1: Pod/p: selection failed: %s"):format(job, want), r.err)
    end)

    it("says where inside a computed string when it is no literal", function()
      local r = run_policy('local a = "require:memory_gb>=24,"\nreturn a .. "min-kost"\n')
      assert.are.equal(("fluence: %s: pipeline:1:23: %s\n    require:memory_gb>=24,min-kost\n" ..
                        "                          ^\n"):format(r.path, UNKNOWN), r.err)
    end)

    it("ignores a same string inside a comment", function()
      local src = '-- "min-kost"\n--[[ "min-kost" ]]\nreturn "min-kost"\n'
      local r = run_policy(src)
      local line, col = where_in(src, '"min-kost"', 30)
      assert.matches(("^fluence: [^\n]*:%d:%d: unknown attribute"):format(line, col + 1), r.err)
    end)
  end)
end)

describe("policy_source.yaml_map", function()
  local manifest = require "fluence.manifest"
  local policy_source = require "fluence.policy_source"

  -- every way of writing a scalar: the value libyaml gives is mapped back,
  -- each letter to the source byte that made it -- the letter itself, or
  -- the backslash of the escape that wrote it
  local WRITTEN = {
    "plain value", "plain  with   spaces", "plain\n      folded\n\n\n      lines",
    "plain \t\n      tabbed\t \n   \n      end", "'single'", "'it''s'", "'folded\n       over\n\n    lines  '",
    '"dq"', '"esc \\" \\\\ \\/ \\t \\n \\0 \\a \\e \\N \\_ \\L \\P"', '"hex \\x41 \\u00e9 \\U0001F600"',
    '"trailing  \n      spaces"', '"escaped\\\n      break"', '"escaped\\\n\n      empty"', '"kept \\t\n      tab"',
    '"tab\\\tafter"', '"a\\ \n    b"', "|\n      lit\n       indented\n\n      last", "|-\n      strip",
    "|+\n      keep\n\n", "|2\n        two\n        spaces", ">-1\n     one\n      two", "| # comment\n      after comment",
    ">\n      folded\n      text\n\n      para\n        more\n        indented\n      back", ">-\n      a\n      b",
    ">\n\n      leading empty", "!!str tagged", "&a anchored", "!!str &b 'both'", "&c !!str 'both'",
    "plain\r\n      crlf", '"dq\r\n      crlf"', "|\r\n      lit\r\n      crlf", "1234", "true",
  }

  for _, w in ipairs(WRITTEN) do
    it(("maps %q back to its source"):format(w), function()
      local text = "kind: Pod\nmetadata:\n  annotations:\n    k: " .. w .. "\n    z: end\nspec: {}\n"
      local s = assert(manifest.parse(text, "t.yaml"))
      local value = s:objects()[1].annotations.k
      local first, last, line = s:annotation_span(1, "k", value)
      assert.truthy(first)
      local raw = s:source(first, last)
      local map = policy_source.yaml_map(raw, s:source(line, first - 1), value)
      assert.truthy(map, raw)
      local prev = 0
      for i = 1, #value do
        local c, at = value:sub(i, i), map(i)
        assert.truthy(at and at >= prev and at <= #raw, ("byte %d of %q"):format(i, value))
        prev = at
        if c:match("%w") and raw:sub(at, at) ~= c then      -- from an escape: at its backslash
          assert.are.equal("\\", raw:sub(at, at), ("byte %d of %q at %d of %q"):format(i, value, at, raw))
        end
      end
    end)
  end

  it("maps nothing when the source does not read as the value (an alias)", function()
    assert.is_nil(policy_source.yaml_map("*a", "    k: ", "min-cost"))
    assert.is_nil(policy_source.yaml_map("'other'", "    k: ", "min-cost"))
  end)

  it("maps a long policy in few decodings (no quadratic search)", function()
    local value = ("min-cost,"):rep(20000) .. "min-kost"
    local raw = "'" .. value .. "'"
    local map = assert(policy_source.yaml_map(raw, "    k: ", value))
    assert.are.equal(#value - 6, map(#value - 7))
  end)
end)
