-- The vendored conformance corpora (spec/fixtures/conformance) are unedited
-- copies: where the workplace's shared corpus sits beside the repository
-- (../shared/conformance, as in CI), every shared file must be byte-identical
-- to its vendored copy.  Without it the check says so and is skipped.
local cli = require "support.cli"

local vendored = cli.root .. "/spec/fixtures/conformance"
local shared = cli.root .. "/../shared/conformance"

local function files(dir)
  local p = io.popen("cd " .. cli.quote(dir) .. " && find . -type f | LC_ALL=C sort")
  local out = {}
  for line in p:lines() do out[#out + 1] = line:sub(3) end
  p:close()
  return out
end

describe("vendored conformance corpora", function()
  it("hold both corpora", function()
    assert.is_string(cli.slurp(vendored .. "/go-client/selections.json"))
    assert.is_string(cli.slurp(vendored .. "/fluxion/cases.tsv"))
  end)

  it("are byte-identical to ../shared/conformance when it is present", function()
    if not cli.slurp(shared .. "/fluxion/cases.tsv") then
      return pending("skipped: no ../shared/conformance beside the repository to compare with")
    end
    local list = files(shared)
    assert.is_true(#list > 0)
    for _, f in ipairs(list) do
      assert.are.equal(cli.slurp(shared .. "/" .. f), cli.slurp(vendored .. "/" .. f), f .. " differs from the shared copy")
    end
  end)
end)
