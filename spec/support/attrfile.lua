-- The Go client's attribute-file semantics, just enough for the conformance
-- cases (spec/gocases_spec.lua).  The real reader is the `file` provider;
-- this helper only pins down the rules the recorded cases prove:
--
--   * attributes: numbers, strings: strings (one attrs table; a number wins a
--     clash, as only numbers are ranked)
--   * top-level qubits replaces attributes.qubits            (case 6)
--   * cost_per_task / cost_per_shot present: cost_usd = task + shots * shot,
--     replacing attributes.cost_usd                          (case 50)
--   * cost_per_minute: cost_usd = 0.05 * per_minute only when no cost_usd
--     exists by then, never replacing attributes.cost_usd    (case 31)
--   * cost_per_task, cost_per_shot, cost_per_minute are attributes too
--   * select-candidates restricts the pool; shots = select-shots, else 1000
local M = {}

local PREFIX = "fluence.flux-framework.org/"

-- request(manifest object) -> { shots =, candidates = {...} | nil, policy = }
function M.request(obj)
  local ann = (obj.metadata or {}).annotations or {}
  local req = { shots = 1000, policy = ann[PREFIX .. "select-policy"] }
  local s = ann[PREFIX .. "select-shots"]
  if s and tonumber(s) then req.shots = math.tointeger(tonumber(s)) or tonumber(s) end
  local c = ann[PREFIX .. "select-candidates"]
  if c then
    req.candidates = {}
    for name in c:gmatch("[^,]+") do req.candidates[#req.candidates + 1] = name:match("^%s*(.-)%s*$") end
  end
  return req
end

-- backends(attribute file document, request) -> { {name =, attrs =}, ... }
function M.backends(doc, req)
  local want
  if req.candidates and #req.candidates > 0 then
    want = {}
    for _, n in ipairs(req.candidates) do want[n] = true end
  end
  local out = {}
  for _, fb in ipairs(doc.backends or {}) do
    if not want or want[fb.name] then
      local attrs = {}
      for k, v in pairs(fb.strings or {}) do attrs[k] = v end
      for k, v in pairs(fb.attributes or {}) do attrs[k] = v end
      if fb.qubits ~= nil then attrs.qubits = fb.qubits end
      local task, shot = fb.cost_per_task, fb.cost_per_shot
      if task ~= nil or shot ~= nil then
        task, shot = task or 0, shot or 0
        attrs.cost_usd = task + req.shots * shot
        attrs.cost_per_task, attrs.cost_per_shot = task, shot
      end
      if fb.cost_per_minute ~= nil then
        attrs.cost_per_minute = fb.cost_per_minute
        if attrs.cost_usd == nil then attrs.cost_usd = fb.cost_per_minute * 0.05 end
      end
      out[#out + 1] = { name = fb.name, attrs = attrs }
    end
  end
  return out
end

return M
