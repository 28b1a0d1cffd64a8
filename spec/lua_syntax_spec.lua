-- Lua syntax errors in plugins, policy files and specs are located as policy
-- errors are (lua/fluence/lua_syntax.lua): line, column, the source line and
-- a caret under the token the parser stopped at; and `fluence test` reports
-- a plugin that does not load once, not once per test that reaches it.
local cli = require "support.cli"
local lua_syntax = require "fluence.lua_syntax"

local q = cli.quote

local function located(src)
  local _, err = load(src, "@p.lua", "t", {})
  return lua_syntax.locate("p.lua", src, err)
end

describe("a Lua syntax error", function()
  teardown(function() cli.cleanup() end)

  it("points at the token the parser stopped at, the right one of several", function()
    assert.are.equal("p.lua:1:15: unexpected symbol near '='\n    local items = = 1\n                  ^",
                     located("local items = = 1\n"))
    assert.are.equal("p.lua:2:8: '}' expected (to close '{' at line 1) near 'b'\n     b = 1 b = 2 }\n           ^",
                     located("return {\n b = 1 b = 2 }\n"))
  end)

  it("puts an end-of-file error after the last line holding something", function()
    assert.are.equal("p.lua:1:10: 'end' expected (to close 'if' at line 1) near <eof>\n    if x then\n             ^",
                     located("if x then\n\n\n"))
  end)

  it("leaves what it cannot place, and other errors, as they were", function()
    assert.are.equal("elsewhere.lua:1: x", lua_syntax.locate("p.lua", "x", "elsewhere.lua:1: x"))
    assert.are.equal("p.lua: no line", lua_syntax.locate("p.lua", "x", "p.lua: no line"))
  end)

  it("fails fluence test once, located, for a plugin every test reaches; nothing runs", function()
    local d = cli.tmpdir()
    assert.are.equal(0, cli.run{ "new", "policy", "cheap", "--dir", d }.code)
    local path = d .. "/policies/cheap.lua"
    local src = cli.slurp(path):gsub("local items = stage", "local items = = stage", 1)
    cli.write(path, src)
    local r = cli.run{ "test", d }
    assert.are.equal(3, r.code)
    assert.are.equal("", r.out)
    local _, n = r.err:gsub("unexpected symbol near '='", "")
    assert.are.equal(1, n, r.err)
    assert.matches("^fluence: " .. path:gsub("%p", "%%%0") .. ":%d+:%d+: unexpected symbol near '='\n" ..
                   "    +local items = = stage%.args%.items\n +%^\n$", r.err)
  end)
end)
