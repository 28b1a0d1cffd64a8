-- A user provider: backends from a JSON HTTP endpoint (an internal pricing or
-- inventory service).
--
-- Use:  FLUENCE_BACKENDS_URL=https://inventory.example/backends.json \
--       fluence select -f job.yaml --provider-dir examples/providers --provider http-json
-- The endpoint answers either {"backends": [...]} or a bare list of
--   {"name": "gpu-l4", "attributes": {"cost_usd": 0.8, ...}, "strings": {...}}
-- (the attribute file's shape) or {"name": ..., "attrs": {...}}.
-- Optional: FLUENCE_BACKENDS_TOKEN is sent as a bearer token (never logged).
local M = {
  name = "http-json",
  description = "backends from a JSON endpoint ($FLUENCE_BACKENDS_URL)",
}

function M.candidates(ctx)
  local api = ctx.api
  local url = api.env("FLUENCE_BACKENDS_URL")
  if not url then error("http-json: set FLUENCE_BACKENDS_URL to the endpoint to read", 0) end
  local headers = { Accept = "application/json" }
  local token = api.env("FLUENCE_BACKENDS_TOKEN")
  if token then headers.Authorization = "Bearer " .. token end
  local resp, err = api.http.request{ url = url, headers = headers, timeout = 10 }
  if not resp then return {}, { "http-json: " .. err } end
  if resp.status ~= 200 then
    return {}, { ("http-json: %s answered HTTP %d"):format(url:gsub("%?.*", ""), resp.status) }
  end
  local doc, jerr = api.json.decode(resp.body, url:gsub("%?.*", ""))
  if doc == nil then error("http-json: " .. jerr, 0) end
  local list = doc.backends or doc
  local out = {}
  for i, b in ipairs(list) do
    if type(b) ~= "table" or type(b.name) ~= "string" then
      error(("http-json: backend #%d has no name"):format(i), 0)
    end
    local attrs = {}
    for _, section in ipairs{ b.attributes or {}, b.strings or {}, b.attrs or {} } do
      for k, v in pairs(section) do attrs[k] = v end
    end
    out[#out + 1] = { name = b.name, attrs = attrs }
  end
  return out
end

return M
