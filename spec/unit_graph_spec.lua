-- The structure of core/ (issue 26): tools/unit-graph.lua derives the call
-- and include graph between the C units from the sources and holds them to
-- its rules -- no circle (the matcher's traverser and writers once called
-- each other), one header per unit (manifest.h and match.h once served a
-- whole family, so arrows ran back up), and a file named after the module
-- it opens (kubeconfig.c once opened fluence.kube).  The rules run on the
-- tree, and on small made-up trees that break each one, so the check itself
-- is shown to fail when it should.
local cli = require "support.cli"

local root = cli.root
local q = cli.quote

local function graph(dir, opt)
  local p = io.popen(("lua5.4 %s %s %s 2>&1; echo \"rc=$?\""):format(q(root .. "/tools/unit-graph.lua"), opt or "--check",
                                                                      q(dir)))
  local out = p:read("a")
  p:close()
  local rc = tonumber(out:match("rc=(%d+)\n$"))
  return out:gsub("rc=%d+\n$", ""), rc
end

-- A made-up core/: files = { ["a.c"] = text, ... }
local function tree(files)
  local dir = cli.tmpdir()
  for name, text in pairs(files) do cli.write(dir .. "/" .. name, text) end
  return dir
end

describe("core/'s units", function()
  after_each(function() cli.cleanup() end)

  it("have no circle, one header each, and files named after their modules", function()
    local out, rc = graph(root .. "/core")
    assert.are.equal(0, rc, out)
    assert.matches("no circle, one header per unit, files named after their modules", out)
  end)

  it("include the matcher's units without a way back from the writers to the traverser", function()
    local out, rc = graph(root .. "/core", "")
    assert.are.equal(0, rc, out)
    assert.matches("\nmatch_dfu %-> match_writers: ", "\n" .. out)
    assert.matches("\nmatch_dfu %-> match_score: ", "\n" .. out)
    assert.not_matches("\nmatch_writers %-> match_dfu", "\n" .. out)
    assert.not_matches("\nmatch_score %-> match_dfu", "\n" .. out)
  end)

  it("name every module's file after it, as the build's registry does", function()
    -- what `grep luaopen` says and what `ls core/` says are the same story
    local p = io.popen("cd " .. q(root) .. " && grep -ho '^int luaopen_fluence_[a-z0-9_]*' core/*.c")
    local n = 0
    for line in p:lines() do
      local mod = line:match("luaopen_fluence_([%w_]+)")
      assert.is_truthy(cli.slurp(root .. "/core/" .. mod .. ".c"), "fluence." .. mod .. " has no core/" .. mod .. ".c")
      n = n + 1
    end
    p:close()
    assert.is_true(n > 10)
  end)
end)

describe("tools/unit-graph.lua --check", function()
  after_each(function() cli.cleanup() end)

  it("finds a circle of calls and names the arrows", function()
    local dir = tree {
      ["a.h"] = "int a_run(void);\n",
      ["a.c"] = '#include "a.h"\n#include "b.h"\nint a_run(void) { return b_sort(); }\n',
      ["b.h"] = "int b_sort(void);\n",
      ["b.c"] = '#include "a.h"\n#include "b.h"\n/* a comment naming a_run is no call */\n' ..
                'static int helper(void) { return 1; }\nint b_sort(void) { return helper() + a_run(); }\n',
    }
    local out, rc = graph(dir)
    assert.are.equal(1, rc, out)
    assert.matches("circle: a, b: a %-> b %(includes b%.h; uses b_sort%); b %-> a %(includes a%.h; uses a_run%)", out)
  end)

  it("finds a circle made by includes alone", function()
    local dir = tree {
      ["a.h"] = '#include "b.h"\nstruct a { int x; };\n', ["a.c"] = '#include "a.h"\nint a_x;\n',
      ["b.h"] = "struct b { int y; };\n", ["b.c"] = '#include "b.h"\n#include "a.h"\nint b_y;\n',
    }
    local out, rc = graph(dir)
    assert.are.equal(1, rc, out)
    assert.matches("circle: a, b", out)
  end)

  it("takes a chain without a way back", function()
    local dir = tree {
      ["a.h"] = "int a_run(void);\n", ["a.c"] = '#include "a.h"\n#include "b.h"\nint a_run(void) { return b_sort(); }\n',
      ["b.h"] = "int b_sort(void);\n", ["b.c"] = '#include "b.h"\nint b_sort(void) { return 0; }\n',
    }
    local out, rc = graph(dir)
    assert.are.equal(0, rc, out)
  end)

  it("refuses a header that serves a family", function()
    local dir = tree {
      ["fam.h"] = "int fam_x(void);\nint fam_y(void);\n",
      ["fam_x.c"] = '#include "fam.h"\nint fam_x(void) { return fam_y(); }\n',
      ["fam_y.c"] = '#include "fam.h"\nint fam_y(void) { return 0; }\n',
    }
    local out, rc = graph(dir)
    assert.are.equal(1, rc, out)
    assert.matches("fam%.h declares the function fam_x but has no fam%.c", out)
    assert.matches("fam_x%.c uses fam_y of fam_y%.c, which fam_y%.h does not declare", out)
  end)

  it("refuses a header that declares another unit's function", function()
    local dir = tree {
      ["tree.h"] = "int tree_get(void);\nint json_emit(void);\n", ["tree.c"] = '#include "tree.h"\nint tree_get(void) { return 1; }\n',
      ["json.h"] = "", ["json.c"] = '#include "json.h"\n#include "tree.h"\nint json_emit(void) { return tree_get(); }\n',
    }
    local out, rc = graph(dir)
    assert.are.equal(1, rc, out)
    assert.matches("tree%.h declares json_emit, which is defined in json%.c, not tree%.c", out)
  end)

  it("refuses a file named otherwise than the module it opens", function()
    local dir = tree {
      ["kubeconfig.c"] = "#include <lua.h>\nint luaopen_fluence_kube(lua_State *L)\n{\n    return 0;\n}\n",
    }
    local out, rc = graph(dir)
    assert.are.equal(1, rc, out)
    assert.matches("kubeconfig%.c opens the module fluence%.kube: name the file kube%.c", out)
    -- and the build's registry refuses it too
    local p = io.popen(("sh %s %s 2>&1 >/dev/null; echo \"rc=$?\""):format(q(root .. "/tools/gen-modules.sh"),
                                                                         q(dir .. "/kubeconfig.c")))
    local gen = p:read("a")
    p:close()
    assert.matches("gen%-modules: .*kubeconfig%.c opens the module fluence%.kube: name the file kube%.c", gen)
    assert.matches("rc=1", gen)
  end)

  it("prints the graph for graphviz", function()
    local out, rc = graph(root .. "/core", "--dot")
    assert.are.equal(0, rc, out)
    assert.matches('^digraph core {', out)
    assert.matches('"match" %-> "match_dfu";', out)
  end)
end)
