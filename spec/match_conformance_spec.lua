-- Every case of the Fluxion conformance corpus (spec/fixtures/conformance/fluxion)
-- run through `fluence match`: the output must equal resource-query's -t file
-- byte for byte.  The corpus is read-only data; never edit it.
local cli = require "support.cli"

local dir = (os.getenv("FLUENCE_CONFORMANCE") or (cli.root .. "/spec/fixtures/conformance")) .. "/fluxion"

local function cases()
  local f = io.open(dir .. "/cases.tsv", "rb")
  if not f then return {} end
  local out, header = {}, true
  for line in f:lines() do
    if header then
      header = false
    elseif line ~= "" then
      local c, graph, policy, commands, expected = line:match("^([^\t]*)\t([^\t]*)\t([^\t]*)\t([^\t]*)\t([^\t]*)")
      out[#out + 1] = { case = c, graph = graph, policy = policy, commands = commands, expected = expected }
    end
  end
  f:close()
  return out
end

describe("fluxion conformance corpus", function()
  local all = cases()

  it("is present", function()
    assert.is_true(#all > 0, "no cases found in " .. dir)
  end)

  for _, c in ipairs(all) do
    it(c.case .. " (" .. c.policy .. ")", function()
      local r = cli.run { "match", "--graph", c.graph, "--policy", c.policy,
                          stdin = cli.slurp(dir .. "/" .. c.commands), cwd = dir }
      assert.are.equal(0, r.code, r.err)
      assert.are.equal(cli.slurp(dir .. "/" .. c.expected), r.out)
    end)
  end
end)
