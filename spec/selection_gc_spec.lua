-- selection.run lets the collector wait longer during its loop over the
-- objects (lua/fluence/selection.lua: LOOP_GC_PAUSE), and must hand the
-- collector back as it found it, whether the loop ends or raises: fluence
-- test, fn and diff run selections inside a longer-lived process.
local selection = require "fluence.selection"

local function args(file)
  return { verb = "select", positional = {},
           opts = { filename = { file }, attributes = { "examples/quickstart/attributes.yaml" }, offline = true } }
end

-- (the collector keeps a pause in steps of 4: these are multiples of 4)
local function with_pause(p, f)
  local old = collectgarbage("setpause", p)
  local ok, err = pcall(f)
  local seen = collectgarbage("setpause", old)
  assert(ok, err)
  return seen
end

describe("selection.run and the collector", function()
  it("restores the collector's pause after a selection", function()
    local seen = with_pause(172, function()
      local res = selection.run(args("examples/quickstart/job.yaml"))
      assert.is_truthy(res.stderr:find("selected backend", 1, true))
    end)
    assert.are.equal(172, seen)
  end)

  it("restores it when a selection fails inside the loop", function()
    local dir = os.tmpname()
    os.remove(dir)
    local f = assert(io.open(dir, "w"))
    f:write((assert(io.open("examples/quickstart/job.yaml")):read("a")
      :gsub('select%-policy: "[^"\n]*"', 'select-policy: "require:memory_gb>=100000"')))
    f:close()
    local seen = with_pause(168, function()
      local ok, err = pcall(selection.run, args(dir))
      assert.is_false(ok)
      assert.is_truthy(tostring(err and (err.message or err)):find("selection failed", 1, true))
    end)
    os.remove(dir)
    assert.are.equal(168, seen)
  end)
end)
