-- Writes the tables of every export a policy and a provider plugin may
-- define (lua/fluence/plugin_contract.lua, the one declaration of the plugin
-- contract) into docs/plugins.md, between its "exports table" markers, so
-- the docs and the loader, `fluence check` and `fluence new` cannot drift.
--
--   lua5.4 tools/gen-contract-doc.lua           rewrite the tables in place
--   lua5.4 tools/gen-contract-doc.lua --print   print them (spec/plugin_contract_spec.lua)
local here = (arg and arg[0] or ""):match("^(.*)/tools/[^/]*$") or "."
local contract = dofile(here .. "/lua/fluence/plugin_contract.lua")   -- plain Lua

local DOC = here .. "/docs/plugins.md"
local function begin(kind)
  return ("<!-- %s exports table: tools/gen-contract-doc.lua writes it from lua/fluence/plugin_contract.lua -->")
    :format(kind)
end
local END = "<!-- end of the exports table -->"

-- a "|" inside a cell would end it
local function cell(s) return (s:gsub("|", "\\|")) end

local function table_text(kind)
  local lines = { begin(kind), "| export | type | |", "|---|---|---|" }
  for _, e in ipairs(contract.kinds[kind].exports) do
    lines[#lines + 1] = ("| `%s` | %s | %s%s |"):format(e.name, cell(contract.TYPES[e.type].wants),
                                                         e.required and "**required**: " or
                                                         e.declared and "*declared*: " or "", cell(e.doc))
  end
  lines[#lines + 1] = END
  return table.concat(lines, "\n") .. "\n"
end

local KINDS = { "policy", "provider" }

if arg[1] == "--print" then
  for _, kind in ipairs(KINDS) do io.write(table_text(kind)) end
  os.exit(0)
end

local f = assert(io.open(DOC, "rb"))
local doc = f:read("a")
f:close()
for _, kind in ipairs(KINDS) do
  local a = doc:find(begin(kind), 1, true)
  local _, b = doc:find(END .. "\n", a or 1, true)
  if not a or not b then
    io.stderr:write("gen-contract-doc.lua: no ", kind, " exports table markers in ", DOC, "\n")
    os.exit(1)
  end
  doc = doc:sub(1, a - 1) .. table_text(kind) .. doc:sub(b + 1)
end
f = assert(io.open(DOC, "wb"))
f:write(doc)
f:close()
