-- `fluence check` of a spec file (*_spec.lua, or a .lua file met while
-- walking a directory that is no plugin's): Lua syntax, located.
local M = {}

function M.check(s, path, text)
  s.stats.spec = s.stats.spec + 1
  local chunk, err = load(text, "@" .. path, "t", {})
  if not chunk then s:error(err, path) end
end

return M
