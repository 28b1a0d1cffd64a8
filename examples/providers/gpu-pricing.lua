-- A user provider: GPU instances and their prices from a catalog file.
--
-- Install: copy to ~/.fluence/providers/ (or use --provider-dir examples/providers)
-- Use:     fluence select -f job.yaml --provider gpu-pricing
-- Catalog: $FLUENCE_GPU_CATALOG, else ~/.fluence/gpu-catalog.csv; a CSV with the header
--   name,instance_type,accelerator,gpu_count,memory_gb,region,on_demand_hourly,spot_hourly
-- (memory_gb is per GPU; a blank spot price means no spot offer).
--
-- Each row becomes a backend with cost_usd (on-demand $/hour), spot_cost_usd,
-- gpu_count, memory_gb, total_memory_gb, and the strings accelerator,
-- instance_type and region — so "require:memory_gb>=24,min-cost" works.
local M = {
  name = "gpu-pricing",
  description = "GPU instances and hourly prices from a CSV price catalog",
}

local COLUMNS = { "name", "instance_type", "accelerator", "gpu_count", "memory_gb", "region",
                  "on_demand_hourly", "spot_hourly" }
local NUMERIC = { gpu_count = true, memory_gb = true, on_demand_hourly = true, spot_hourly = true }

local function split(line)
  local out = {}
  for field in (line .. ","):gmatch("([^,]*),") do out[#out + 1] = field:match("^%s*(.-)%s*$") end
  return out
end

local function catalog_path(api)
  return api.env("FLUENCE_GPU_CATALOG") or ((api.env("HOME") or ".") .. "/.fluence/gpu-catalog.csv")
end

local cache

function M.candidates(ctx)
  if cache then return cache end
  local api = ctx.api
  local path = catalog_path(api)
  local text, err = api.read_file(path)
  if not text then error("gpu-pricing: " .. err .. " (set FLUENCE_GPU_CATALOG)", 0) end
  local backends, header, lineno = {}, nil, 0
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do
    lineno = lineno + 1
    line = line:gsub("\r$", "")
    if line ~= "" and not line:match("^%s*#") then
      local f = split(line)
      if not header then
        header = {}
        for i, name in ipairs(f) do header[name] = i end
        for _, c in ipairs(COLUMNS) do
          if not header[c] then error(("%s:%d: missing column %q"):format(path, lineno, c), 0) end
        end
      else
        local row = {}
        for _, c in ipairs(COLUMNS) do
          local v = f[header[c]] or ""
          if NUMERIC[c] and v ~= "" then
            local n = tonumber(v)
            if not n then error(("%s:%d: %s: %q is not a number"):format(path, lineno, c, v), 0) end
            v = n
          end
          row[c] = v
        end
        if row.name == "" then error(("%s:%d: empty name"):format(path, lineno), 0) end
        local attrs = {
          cost_usd = row.on_demand_hourly ~= "" and row.on_demand_hourly or nil,
          spot_cost_usd = row.spot_hourly ~= "" and row.spot_hourly or nil,
          gpu_count = row.gpu_count, memory_gb = row.memory_gb,
          accelerator = row.accelerator, instance_type = row.instance_type, region = row.region,
        }
        if type(row.gpu_count) == "number" and type(row.memory_gb) == "number" then
          attrs.total_memory_gb = row.gpu_count * row.memory_gb
        end
        backends[#backends + 1] = { name = row.name, attrs = attrs }
      end
    end
  end
  cache = backends
  return backends
end

return M
