-- YAML read exactly as kubectl reads it (issue 31).  kubectl converts YAML
-- with sigs.k8s.io/yaml over go-yaml v2: 0777 is 511, yes is true, 1_000 is
-- 1000, a block ending the file gets its "\n", .inf refuses the document.
-- For every scalar form, mapping key and document recorded in
-- spec/fixtures/yaml-kubectl (kubectl's answers, tools/yaml-kubectl-golden.lua),
-- the JSON fluence prints with -o json -- the text `apply` sends -- must be
-- what kubectl sends: numbers byte for byte, strings by value, members in
-- any order; and where kubectl refuses, fluence refuses (exit 3, located,
-- saying what kubectl says).  With kubectl installed, kubectl is asked too,
-- so the recorded answers cannot drift from it.
local cli = require "support.cli"
local kj = require "support.kubectl_json"

local DIR = cli.root .. "/spec/fixtures/yaml-kubectl"
local HEAD = "apiVersion: v1\nkind: Scalars\nmetadata:\n  name: x\nspec:\n"
local KUBECTL = kj.available()

-- what kubectl's complaint says (raw: as kubectl prints it; else without
-- Go's formatting noise and its parser's details, as fluence says it)
local function core(answer, raw)
  local s = answer:gsub("^error: ", ""):gsub(", key: .*$", "")
  if raw then return s end
  return (s:gsub("%%!s%((.-)%)", "%1"):gsub("^yaml: (.*invalid map key).*$", "%1"):gsub("^yaml: ", "")
           :gsub(": cannot parse .*$", ""))
end

local function spec_members(out)
  for _, m in ipairs(kj.members(out)) do
    if m.key == "spec" then return kj.members(m.raw) end
  end
  error("no spec in " .. out)
end

describe("YAML to JSON as kubectl reads it", function()
  local dir
  setup(function() dir = cli.tmpdir() end)
  teardown(cli.cleanup)

  local n = 0
  local function fluence(text)
    n = n + 1
    local path = cli.write(("%s/d%d.yaml"):format(dir, n), text)
    local r = cli.run{ "select", "-f", path, "-o", "json", "--offline", env = { HOME = dir } }
    r.path = path
    return r
  end

  -- exit 3, nothing on stdout, located at line:col, saying what kubectl says
  local function refused(r, line, col, says)
    assert.are.equal(3, r.code, r.err)
    assert.are.equal("", r.out)
    local head = ("fluence: %s:%d:%d: "):format(r.path, line, col)
    assert.are.equal(head, r.err:sub(1, #head), r.err)
    assert.is_truthy(r.err:find(says, 1, true), ("%q not in %s"):format(says, r.err))
  end

  -- rows: FORM/ANSWER; wrap(i, form) -> the YAML lines of row i in a batch
  local function table_of(file, wrap, unwrap)
    local rows = kj.read_table(DIR .. "/" .. file)
    local mine, theirs = {}, {}
    setup(function()
      local lines = {}
      for i, row in ipairs(rows) do
        if not row.answer:match("^error: ") then lines[#lines + 1] = wrap(i, row.form) end
      end
      local text = HEAD .. table.concat(lines, "\n") .. "\n"
      local r = fluence(text)
      assert.are.equal(0, r.code, r.err)
      for _, m in ipairs(spec_members(r.out)) do mine[m.key] = unwrap(m.raw) end
      if KUBECTL then
        r = kj.local_json(text)
        assert.are.equal(0, r.code, r.err)
        for _, m in ipairs(spec_members(r.out)) do theirs[m.key] = unwrap(m.raw) end
      end
    end)
    for i, row in ipairs(rows) do
      it(("%s:%d: %s -> %s"):format(file, row.line, row.form, row.answer), function()
        if row.answer:match("^error: ") then
          local r = fluence(HEAD .. wrap(1, row.form) .. "\n")
          assert.are.equal(3, r.code, r.err)
          assert.are.equal("", r.out)
          assert.matches("^fluence: " .. r.path:gsub("%p", "%%%0") .. ":%d+:%d+: ", r.err)
          assert.is_truthy(r.err:find(core(row.answer), 1, true), ("%q not in %s"):format(core(row.answer), r.err))
          if KUBECTL then
            local k = kj.local_json(HEAD .. wrap(1, row.form) .. "\n")
            assert.are_not.equal(0, k.code)
            assert.is_truthy(k.err:find(core(row.answer, true), 1, true), k.err)
          end
          return
        end
        local key = ("k%03d"):format(i)
        assert.is_string(mine[key], "fluence wrote no " .. key)
        assert.is_true(kj.same_value(row.answer, mine[key]), ("kubectl sends %s, fluence %s"):format(row.answer, mine[key]))
        if KUBECTL then
          assert.is_true(kj.same_value(row.answer, theirs[key]),
                         ("recorded %s, but this kubectl sends %s"):format(row.answer, theirs[key]))
        end
      end)
    end
  end

  describe("scalar values (values.tsv)", function()
    table_of("values.tsv", function(i, form) return ("  k%03d: %s"):format(i, form) end,
             function(raw) return raw end)
  end)

  describe("mapping keys (keys.tsv)", function()
    -- each key alone in its own mapping: several forms make the same key
    table_of("keys.tsv", function(i, form) return ("  k%03d:\n    %s: v"):format(i, form) end,
             function(raw)
               local m = kj.members(raw)
               return #m == 1 and require("fluence.json").encode(m[1].key) or raw
             end)
  end)

  describe("documents (docs/)", function()
    local p = io.popen("ls " .. cli.quote(DIR .. "/docs"))
    local names = {}
    for f in p:lines() do
      local name = f:match("^(.*)%.yaml$")
      if name then names[#names + 1] = name end
    end
    p:close()
    for _, name in ipairs(names) do
      local text = assert(cli.slurp(DIR .. "/docs/" .. name .. ".yaml"))
      local want = cli.slurp(DIR .. "/docs/" .. name .. ".json")
      local err = cli.slurp(DIR .. "/docs/" .. name .. ".err")
      it(name .. ": " .. (want and "the same JSON" or "refused: " .. err:gsub("\n$", "")), function()
        local r = fluence(text)
        if want then
          assert.are.equal(0, r.code, r.err)
          assert.are.equal(kj.canonical(want), kj.canonical(r.out))
        else
          assert.are.equal(3, r.code, r.err)
          assert.are.equal("", r.out)
          assert.matches("^fluence: " .. r.path:gsub("%p", "%%%0") .. ":%d+:%d+: ", r.err)
          assert.is_truthy(r.err:find(core((err:gsub("\n$", ""))), 1, true), r.err)
        end
        if KUBECTL then
          local k = kj.local_json(text)
          if want then
            assert.are.equal(0, k.code, k.err)
            assert.are.equal(kj.canonical(want), kj.canonical(k.out))
          else
            assert.are_not.equal(0, k.code)
            assert.is_truthy(k.err:find(core(err:gsub("\n$", ""), true), 1, true), k.err)
          end
        end
      end)
    end
  end)

  if not KUBECTL then
    pending("kubectl is not installed: fluence is held to kubectl's recorded answers only")
  end

  it("says where a refused value is and what to do: the line, a caret, kubectl's words", function()
    local r = fluence(HEAD .. "  replicas: .inf\n")
    refused(r, 6, 13, ".inf is infinite, which JSON cannot carry (json: unsupported value: +Inf): " ..
                      "kubectl refuses this document too\n      replicas: .inf\n                ^\n")
    r = fluence("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  annotations:\n    enabled: yes\n")
    refused(r, 6, 14, 'metadata.annotations enabled: kubectl reads yes as a boolean (YAML 1.1), not a string: ' ..
                      'quote it ("yes"); kubectl refuses the document (json: cannot unmarshal bool into Go struct ' ..
                      "field ObjectMeta.metadata.annotations of type string)\n        enabled: yes\n")
  end)

  it("keeps the YAML output byte for byte: only the JSON is kubectl's", function()
    local text = HEAD .. "  mode: 0777\n  enabled: yes\n  command: |\n    sleep 10"
    local path = cli.write(dir .. "/bytes.yaml", text)
    local r = cli.run{ "select", "-f", path, "--offline", env = { HOME = dir } }
    assert.are.equal(0, r.code, r.err)
    assert.are.equal(text, r.out)
  end)
end)
