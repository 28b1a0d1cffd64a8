-- Which plugins a test (or a checked file) sees: its project's `policies/`
-- and `providers/` directories -- those of the nearest directory, from the
-- file's own upwards, that has either -- after --policy-dir/--provider-dir
-- and before the usual search path ($FLUENCE_POLICY_PATH ..., ~/.fluence,
-- the built-ins).  So `fluence test` finds the plugins of the project it
-- tests without options, as `fluence new` lays one out:
--
--   DIR/policies/NAME.lua   DIR/providers/NAME.lua   DIR/tests/NAME_spec.lua
--
--   project.of(file) -> { base = the file's directory, root = DIR | nil,
--                         policy_dirs = {...}, provider_dirs = {...} }
--   project.options   { policy_dirs = {...}, provider_dirs = {...} } from the
--                     command line (set by `fluence test` / `fluence check`)
--   project.files_under(dir, accept, out, seen)   what both commands search
local sys = require "fluence.sys"
local errors = require "fluence.errors"

local project = {}

project.options = { policy_dirs = {}, provider_dirs = {} }

function project.dirname(path)
  local d = path:match("^(.*)/[^/]*$")
  if d == nil then return "." end
  if d == "" then return "/" end
  return d
end

function project.join(dir, path)
  if path:sub(1, 1) == "/" or dir == "." then return path end
  if dir == "/" then return "/" .. path end
  return dir .. "/" .. path
end

-- The files under directory dir (recursively) for which accept(name) gives
-- a value v, appended to out as { path =, kind = v } in a stable (sorted)
-- order. Hidden entries are skipped; seen holds the identities of the
-- directories read, so one reached twice (through a link) is read once.
function project.files_under(dir, accept, out, seen)
  local _, id = sys.kind(dir)
  if seen[id] then return end
  seen[id] = true
  local names, err = sys.list_dir(dir)
  if not names then errors.raise("INPUT", "%s", err) end
  table.sort(names)
  for _, n in ipairs(names) do
    if n:sub(1, 1) ~= "." then
      local full = dir == "." and n or (dir:gsub("/+$", "") .. "/" .. n)
      local k = sys.kind(full)
      if k == "dir" then project.files_under(full, accept, out, seen)
      elseif k == "file" then
        local v = accept(n)
        if v then out[#out + 1] = { path = full, kind = v } end
      end
    end
  end
end

local cache = {}

-- The nearest directory from dir upwards holding policies/ or providers/
-- (stops at the file system's root: the parent with the same identity).
local function root_of(dir)
  if cache[dir] ~= nil then return cache[dir] or nil end
  local d, seen = dir, {}
  for _ = 1, 64 do
    local kind, id = sys.kind(d)
    if kind ~= "dir" or seen[id] then break end
    seen[id] = true
    if sys.kind(project.join(d, "policies")) == "dir" or sys.kind(project.join(d, "providers")) == "dir" then
      cache[dir] = d
      return d
    end
    if d == "/" then break end
    d = d == "." and ".." or (d:match("^%.%.[/%.]*$") and d .. "/.." or project.dirname(d))
  end
  cache[dir] = false
  return nil
end

local function list(t)
  local out = {}
  for i, v in ipairs(t or {}) do out[i] = v end
  return out
end

function project.of(file)
  local base = file and project.dirname(file) or "."
  local root = root_of(base)
  local p = { base = base, root = root, policy_dirs = list(project.options.policy_dirs),
              provider_dirs = list(project.options.provider_dirs) }
  if root then
    local pol, prov = project.join(root, "policies"), project.join(root, "providers")
    if sys.kind(pol) == "dir" then p.policy_dirs[#p.policy_dirs + 1] = pol end
    if sys.kind(prov) == "dir" then p.provider_dirs[#p.provider_dirs + 1] = prov end
  end
  return p
end

return project
