-- `fluence completion fish`: valid fish that a real fish completes with
-- (complete -C): verbs with their summaries, each verb's options, fixed
-- values, plugin names asked of fluence, and kubectl-fluence like fluence.
local cli = require "support.cli"
local spec = require "fluence.clispec"

local root = cli.root
local q = cli.quote
local PATH = root .. "/bin:" .. (os.getenv("PATH") or "")

local have = cli.have

-- The candidates fish offers for the command line typed so far (the words
-- before a tab), sorted.
local function complete(line)
  local cmd = "fluence completion fish | source; complete -C " .. q(line)
  local p = io.popen("cd " .. q(root) .. " && env -u LD_PRELOAD PATH=" .. q(PATH) ..
                     " HOME=/nonexistent fish --no-config -c " .. q(cmd) .. " 2>&1")
  local out = p:read("a")
  p:close()
  local list = {}
  for l in out:gmatch("[^\n]+") do list[#list + 1] = l:match("^[^\t]*") end
  table.sort(list)
  return list, out
end

describe("fluence completion fish", function()
  if not have("fish") then
    it("needs fish", function() pending("fish is not installed (Debian: fish)") end)
    return
  end

  it("is valid fish", function()
    local ok = os.execute("cd " .. q(root) .. " && env -u LD_PRELOAD bin/fluence completion fish | fish --no-config -n")
    assert.is_true(ok)
  end)

  it("completes every verb, with its summary", function()
    local _, out = complete("fluence ")
    for _, v in ipairs(spec.verbs) do
      assert.truthy(out:find(v.name .. "\t" .. v.summary, 1, true), v.name .. " in:\n" .. out)
    end
  end)

  it("completes a verb's options, and only that verb's", function()
    local got = complete("fluence select --dry")
    assert.are.same({}, got)           -- --dry-run belongs to apply and create
    got = complete("fluence apply --dry")   -- and "--dry-run=": its value is optional
    assert.are.equal("--dry-run", got[1])
    got = complete("fluence select --out")
    assert.are.same({ "--output" }, got)
  end)

  it("completes fixed values, shells and plugin names asked of fluence", function()
    assert.are.same({ "bash", "fish", "kubectl", "zsh" }, (complete("fluence completion ")))
    assert.are.same({ "--dry-run=client", "--dry-run=none", "--dry-run=server" },
                    (complete("fluence apply --dry-run=")))
    local got = complete("fluence select --provider-dir examples/providers --provider ")
    assert.truthy(table.concat(got, " "):find("gpu-pricing", 1, true), table.concat(got, " "))
  end)

  it("completes kubectl-fluence as fluence", function()
    assert.are.same((complete("fluence completion ")), (complete("kubectl-fluence completion ")))
  end)
end)
