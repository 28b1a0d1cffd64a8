-- The "file" provider: backends from --attributes files, in the earlier Go
-- client's format (YAML or JSON), with its cost rule:
--
--   cost_usd = cost_per_task + shots * cost_per_shot   (either given: always,
--                                                       over attributes.cost_usd)
--
-- A backend with cost_per_minute (or price_per_hour ... among its
-- attributes) and no cost_usd gets its estimate from the cost model once
-- every provider ran (lua/fluence/cost.lua: 0.05 x cost_per_minute unless
-- the workload states its duration, as the Go client computed it).
--
-- and a top-level `qubits` overrides attributes.qubits.  A `graph:` entry
-- (a JGF file, relative to the attribute file) is the backend's resource
-- graph for the fits policy.  The recorded Go
-- selections (shared/conformance/go-client) agree with this in all 60 cases.
-- Later files override earlier ones for the same backend name.  The format
-- itself (fields, types, located errors) is api.catalog's (lua/fluence/catalog.lua).
local M = {
  name = "file",
  description = "backends and attributes from --attributes files (the Go client's format)",
}

local parsed = {}        -- path -> records (api.catalog.decode), read once per run

local function parse(api, path)
  if parsed[path] then return parsed[path] end
  local text, err = api.read_file(path)
  if not text then error(err, 0) end
  parsed[path] = api.catalog.decode(text, path)   -- records; a located error for a bad file
  return parsed[path]
end

-- A record's attributes for this many shots.  Without top-level cost fields
-- they are the record's own table, shared by every request of the run (the
-- host copies what it merges; nothing writes to it).
local function attributes(api, r, shots)
  local c = r.cost
  if not c then return r.attrs end
  local a = {}
  for k, v in pairs(r.attrs) do a[k] = v end
  local task, shot = c.task, c.shot
  if task or shot then
    a.cost_per_task, a.cost_per_shot = task or 0, shot or 0
    a.cost_usd = api.cost.per_task(task, shot, shots)
  end
  return a
end

function M.candidates(ctx)
  local files = ctx.options.attributes or {}
  local lists = {}
  for i, path in ipairs(files) do lists[i] = parse(ctx.api, path) end
  -- one per name, the last given (api.catalog.latest: in C), a new list
  local out, shots = ctx.api.catalog.latest(lists), ctx.request.shots or 1000
  for i = 1, #out do
    local r = out[i]
    local c = r.cost
    if c and (c.task or c.shot) then out[i] = { name = r.name, attrs = attributes(ctx.api, r, shots) } end
  end
  return out
end

return M
