-- Writes the table of the kinds whose pods fluence finds at known paths
-- (core/manifest_kinds.c, through manifest.kinds()) into docs/kubernetes.md,
-- between its "kinds table" markers, so the docs and the code cannot drift.
--
--   make && lua5.4 tools/gen-kinds-doc.lua           rewrite the table in place
--   lua5.4 tools/gen-kinds-doc.lua --print           print it (spec/manifest_kinds_spec.lua)
local here = (arg and arg[0] or ""):match("^(.*)/tools/[^/]*$") or "."
package.cpath = here .. "/build/lib/?.so;" .. package.cpath
local manifest = require "fluence.manifest"

local DOC = here .. "/docs/kubernetes.md"
local BEGIN = "<!-- kinds table: tools/gen-kinds-doc.lua writes it from core/manifest_kinds.c -->"
local END = "<!-- end of the kinds table -->"

local function join(a, b)
  if a == "" then return b end
  return a .. "." .. b
end

local function table_text()
  local lines = {
    BEGIN,
    "| group | kind | pod metadata (the pin goes into its `annotations`) | the pods' `schedulerName` | paths from |",
    "|---|---|---|---|---|",
  }
  for _, k in ipairs(manifest.kinds()) do
    local metas, scheds = {}, {}
    for _, p in ipairs(k.pods) do
      metas[#metas + 1] = "`" .. join(p.at, p.metadata) .. "`" .. (p.at == "" and " (the object itself)" or "")
      local s = "`" .. join(p.at, p.scheduler) .. "`"
      if p.inherit then s = s .. ", else the object's `" .. p.inherit .. "`" end
      if p.group then s = s .. ", or the object's group label" end
      scheds[#scheds + 1] = s
    end
    lines[#lines + 1] = ("| %s | `%s` | %s | %s | %s |"):format(k.group == "" and "(core)" or "`" .. k.group .. "`",
                                                              k.kind, table.concat(metas, "; "),
                                                              table.concat(scheds, "; "), k.source)
  end
  lines[#lines + 1] = END
  return table.concat(lines, "\n") .. "\n"
end

if arg[1] == "--print" then
  io.write(table_text())
  os.exit(0)
end

local f = assert(io.open(DOC, "rb"))
local doc = f:read("a")
f:close()
local a = doc:find(BEGIN, 1, true)
local _, b = doc:find(END .. "\n", 1, true)
if not a or not b then
  io.stderr:write("gen-kinds-doc.lua: no kinds table markers in ", DOC, "\n")
  os.exit(1)
end
f = assert(io.open(DOC, "wb"))
f:write(doc:sub(1, a - 1), table_text(), doc:sub(b + 1))
f:close()
