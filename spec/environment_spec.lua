-- Every environment variable the code reads is in the one table of them
-- (core/clispec.c, fluence.clispec.environment), which `fluence help` and the
-- man page print; and every name in the table is read somewhere.  The reads
-- are found in the sources: getenv("X") and env_get(L, env, "X") in C,
-- os.getenv / sys.getenv / api.env("X") in Lua, and the env = "X" fields of
-- the plugin kinds' table (lua/fluence/plugins.lua).
local cli = require "support.cli"
local spec = require "fluence.clispec"

local root = cli.root

local function sources()
  local files = {}
  local p = io.popen("cd " .. cli.quote(root) .. " && ls core/*.c lua/fluence/*.lua lua/fluence/*/*.lua " ..
                     "policies/*.lua providers/*.lua")
  for f in p:lines() do files[#files + 1] = f end
  p:close()
  return files
end

local READS = {
  '[^%w_]getenv%(%s*"([A-Z][A-Z0-9_]*)"',         -- C getenv, Lua os.getenv / sys.getenv
  'env_get%(L, env, "([A-Z][A-Z0-9_]*)"',           -- core/aws.c: the environment or a stand-in
  'api%.env%(%s*"([A-Z][A-Z0-9_]*)"',               -- a built-in provider
  '[%s{,]env = "([A-Z][A-Z0-9_]*)"',                -- plugins.lua: each kind's search path variable
}

describe("the environment variables", function()
  local read, where = {}, {}
  local texts = {}
  for _, f in ipairs(sources()) do
    local text = assert(cli.slurp(root .. "/" .. f))
    texts[f] = text
    for _, pat in ipairs(READS) do
      for name in text:gmatch(pat) do
        read[name] = true
        where[name] = where[name] or f
      end
    end
  end
  local listed = {}
  for _, e in ipairs(spec.environment) do listed[e.name] = e end

  it("read by the code are all in fluence.clispec.environment", function()
    assert.truthy(next(read), "no getenv found: the patterns are stale")
    for name in pairs(read) do
      assert.truthy(listed[name], name .. " is read in " .. tostring(where[name]) ..
                    " but not listed in core/clispec.c's environment table")
    end
  end)

  it("listed are all read somewhere (a family by its prefix)", function()
    for name in pairs(listed) do
      local literal = name:match("^(.*_)%*$") or name
      local found = false
      for _, text in pairs(texts) do
        if text:find('"' .. literal, 1, true) then found = true break end
      end
      assert.truthy(found, name .. " is listed but no source names it")
    end
  end)

  it("are what fluence help and the man page list", function()
    local help = cli.run{ "help" }.out:match("\nEnvironment:\n(.-)\n\n")
    local man = assert(cli.slurp(root .. "/docs/fluence.1")):match("\n%.SH ENVIRONMENT\n(.-)\n%.SH ")
    for _, e in ipairs(spec.environment) do
      assert.truthy(help:find("\n  " .. e.name .. " ", 1, true) or help:find("^  " .. e.name:gsub("%p", "%%%0") .. " "),
                    e.name .. " missing from fluence help")
      assert.truthy(man:find(e.name:gsub("_", "\\_"):gsub("%*", "\\*"), 1, true) or man:find(e.name, 1, true),
                    e.name .. " missing from the man page")
    end
  end)
end)
