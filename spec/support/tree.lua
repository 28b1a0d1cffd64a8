-- Writes a tree of files into a fresh temporary directory (removed by
-- cli.cleanup()), for specs of verbs that walk directories.
--
--   local dir = tree.make{ ["policies/x.lua"] = "...", ["tests/x_spec.lua"] = "..." }
local cli = require "support.cli"

local M = {}

function M.make(files, dir)
  dir = dir or cli.tmpdir()
  for path, text in pairs(files) do
    local full = dir .. "/" .. path
    local parent = full:match("^(.*)/[^/]*$")
    assert(os.execute("mkdir -p " .. cli.quote(parent)))
    cli.write(full, text)
  end
  return dir
end

return M
