-- The plugin contract is declared once (lua/fluence/plugin_contract.lua),
-- and everything that knows it reads it there (issue 26): the loader, `fluence
-- check`, `fluence new`, the build's record of the built-ins' declarations
-- and the tables in docs/plugins.md.
local contract = require "fluence.plugin_contract"
local plugins = require "fluence.plugins"
local check_plugin = require "fluence.check.plugin"
local cli = require "support.cli"

describe("the plugin contract", function()
  it("is what docs/plugins.md tabulates (tools/gen-contract-doc.lua)", function()
    local r = cli.sh("lua5.4 tools/gen-contract-doc.lua --print")
    assert.are.equal(0, r.code, r.err)
    local doc = assert(cli.slurp("docs/plugins.md"))
    for block in r.out:gmatch("<!%-%- %a+ exports table.-<!%-%- end of the exports table %-%->\n") do
      assert.truthy(doc:find(block, 1, true), "docs/plugins.md lacks, as generated:\n" .. block)
    end
    assert.are.equal(2, select(2, r.out:gsub("end of the exports table", "")))
  end)

  it("is what the loader requires", function()
    local errors = require "fluence.errors"
    local dir = cli.tmpdir()
    for kind, k in pairs(contract.kinds) do
      for _, e in ipairs(k.exports) do
        if e.required then
          local path = cli.write(("%s/%s.lua"):format(dir, kind), ('return { name = "%s", description = "d", ' ..
                                 '%s = function() end }'):format(kind, k.entry))
          local src = assert(cli.slurp(path))
          -- the plugin without export e
          cli.write(path, src:gsub(e.name .. " = [^,}]+,? ?", "", 1))
          local ok, err = errors.try(plugins.load_file, kind, path, {})
          assert.is_false(ok, kind .. " without " .. e.name)
          assert.truthy(tostring(err.message or err):find(contract.wrong(kind, e.name, nil), 1, true),
                        tostring(err.message or err))
        end
      end
    end
    cli.cleanup()
  end)

  it("checks every export it declares, and only those", function()
    for kind, k in pairs(contract.kinds) do
      local plugin = {}
      for _, e in ipairs(k.exports) do plugin[e.name] = 42 end    -- every one of the wrong type
      local said = {}
      for _, p in ipairs(check_plugin.problems(kind, plugin)) do
        assert.are.equal("error", p.severity, p.message)
        said[#said + 1] = p.message
      end
      assert.are.equal(#k.exports, #said, table.concat(said, "\n"))
      -- each export, misspelt by one letter, is a warning naming it
      for _, e in ipairs(k.exports) do
        local typo = e.name:sub(1, -2)
        if not contract.export(kind, typo) then
          local problems = check_plugin.problems(kind, { [typo] = true, name = "x", description = "x",
                                                          [k.entry] = function() end })
          assert.are.equal(1, #problems, kind .. " " .. typo)
          assert.are.equal("warning", problems[1].severity)
          assert.truthy(problems[1].message:find(('did you mean "%s"'):format(e.name), 1, true), problems[1].message)
        end
      end
    end
  end)

  it("records what a provider declares, read raw and normalised", function()
    local d = contract.declared("provider", setmetatable({ live = 1, provides = { "a", 2 }, family = 3,
                                                            enriches = { "device_arn=x" } },
                                                          { __index = function() error("metamethod ran") end }))
    assert.are.same({ live = true, provides = { "a", "2" }, enriches = { "device_arn=x" } }, d)
  end)

  it("is the name rule `fluence new` applies", function()
    local dir = cli.tmpdir()
    local r = cli.run{ "new", "policy", "9lives", "--dir", dir }
    assert.are.equal(2, r.code)
    assert.are.equal("", r.out)
    assert.are.equal(('fluence: new: bad policy name "9lives" (%s)\n'):format(contract.NAME_RULE), r.err)
    r = cli.run{ "new", "provider", "ok-name", "--dir", dir }
    assert.are.equal(0, r.code, r.err)
    assert.truthy(r.out:find(("with %s %s/%s (or %s)"):format(contract.kinds.provider.option, dir,
                                                               contract.kinds.provider.dir,
                                                               contract.kinds.provider.env), 1, true), r.out)
    cli.cleanup()
  end)
end)
