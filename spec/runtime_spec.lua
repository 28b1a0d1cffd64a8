-- The C<->Lua boundary of the program: errors raised in Lua and in C reach
-- the user as "fluence: FILE:LINE: message" with the right exit code, and
-- nothing leaks when an error unwinds through C (checked with valgrind).
local cli = require "support.cli"

-- A source tree whose cli.lua is replaced, loaded through FLUENCE_SOURCE_DIR.
local function tree_with_cli(body)
  local dir = cli.tmpdir()
  os.execute("mkdir -p " .. cli.quote(dir .. "/lua/fluence"))
  cli.write(dir .. "/lua/fluence/cli.lua", body)
  return dir
end

local has_valgrind = os.execute("command -v valgrind >/dev/null 2>&1")

describe("runtime errors", function()
  after_each(cli.cleanup)

  it("reports a Lua error with file and line and exits 70", function()
    local dir = tree_with_cli("local M = {}\nfunction M.main()\n  error('boom')\nend\nreturn M\n")
    local r = cli.run{ "policies", env = { FLUENCE_SOURCE_DIR = dir } }
    assert.are.equal(70, r.code)
    assert.are.equal("", r.out)
    assert.are.equal("fluence: " .. dir .. "/lua/fluence/cli.lua:3: boom\n", r.err)
  end)

  it("reports an error raised in C with the Lua caller's file and line", function()
    local dir = tree_with_cli("local M = {}\nfunction M.main()\n" ..
      "  return require('fluence.json').encode(print)\nend\nreturn M\n")
    local r = cli.run{ "policies", env = { FLUENCE_SOURCE_DIR = dir } }
    assert.are.equal(70, r.code)
    assert.are.equal("fluence: " .. dir ..
      "/lua/fluence/cli.lua:3: cannot encode a function value in JSON\n", r.err)
  end)

  it("reports a structured error with its own exit code and no traceback", function()
    local dir = tree_with_cli("local M = {}\nfunction M.main()\n" ..
      "  require('fluence.errors').raise('INPUT', 'job.yaml:1:2: bad')\nend\nreturn M\n")
    local r = cli.run{ "policies", env = { FLUENCE_SOURCE_DIR = dir } }
    assert.are.equal(3, r.code)
    assert.are.equal("fluence: job.yaml:1:2: bad\n", r.err)
  end)

  it("shows the traceback with FLUENCE_DEBUG=1", function()
    local dir = tree_with_cli("local M = {}\nfunction M.main()\n  error('boom')\nend\nreturn M\n")
    local r = cli.run{ "policies", env = { FLUENCE_SOURCE_DIR = dir, FLUENCE_DEBUG = "1" } }
    assert.matches("stack traceback:", r.err, 1, true)
  end)

  it("reports a syntax error in a runtime module with file and line", function()
    local dir = tree_with_cli("local M = {\n")
    local r = cli.run{ "policies", env = { FLUENCE_SOURCE_DIR = dir } }
    assert.are.equal(70, r.code)
    assert.matches("cli%.lua:2: unexpected symbol near <eof>", r.err)
  end)

  it("frees C resources when an error unwinds through them (valgrind)", function()
    if not has_valgrind then pending("valgrind is not installed") return end
    if os.getenv("FLUENCE_SANITIZE") then pending("valgrind cannot run the ASan build") return end
    -- a YAML parse error and a JSON encode error raised mid-way, then a
    -- structured error out of main
    local dir = tree_with_cli([[
local M = {}
function M.main()
  local yaml, json = require "fluence.yaml", require "fluence.json"
  assert(not yaml.decode("a: [1, 2\nb: {", "x.yaml"))
  assert(not pcall(json.encode, { a = { b = print } }))
  assert(not json.decode("[1, 2", "x.json"))
  require('fluence.errors').raise('INPUT', 'stop')
end
return M
]])
    local r = cli.run{ "policies", env = { FLUENCE_SOURCE_DIR = dir }, valgrind = true }
    assert.are.equal(3, r.code, r.err)
    assert.are.equal("fluence: stop\n", r.err)
  end)

  -- A short run pays no garbage collection: the collector waits for the
  -- first 8 MiB of allocations (core/runtime.c); past them it collects as
  -- before, so a run making garbage without end stays bounded.
  it("collects no garbage in a small run, and keeps a large one bounded", function()
    local dir = tree_with_cli([[
local M = {}
function M.main()
  local before = collectgarbage("count")
  for i = 1, 20000 do local t = { i } end       -- ~1 MiB of garbage
  local grown = collectgarbage("count") - before
  local peak = 0
  for i = 1, 1000000 do                          -- ~50 MiB more
    local t = { i }
    if i % 1000 == 0 then peak = math.max(peak, collectgarbage("count")) end
  end
  io.write(("%s %s\n"):format(grown >= 1000 and "kept" or "collected",
                              peak < 32 * 1024 and "bounded" or "unbounded"))
  return 0
end
return M
]])
    local r = cli.run{ "policies", env = { FLUENCE_SOURCE_DIR = dir } }
    assert.are.equal(0, r.code, r.err)
    assert.are.equal("kept bounded\n", r.out)
  end)
end)
