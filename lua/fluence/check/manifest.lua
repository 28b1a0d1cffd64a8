-- `fluence check` of a manifest (*.yaml, *.yml, *.json): every Fluence
-- object's select-policy compiled with the plugins `select` would use,
-- errors at the policy's own line and column in the file; a select-policy
-- on an object that does not target Fluence is a warning (select ignores
-- it), so is a schedulerName: fluence where fluence finds no pod to pin, and
-- (with --attributes) a policy reading an attribute no backend has.
local errors = require "fluence.errors"
local location = require "fluence.location"
local PREFIX = require("fluence.request").PREFIX

local M = {}

local POLICY = PREFIX .. "select-policy"

-- The policy an object is selected by: its own, else its Fluence pod
-- template's.
local function policy_of(obj)
  local policy = obj.annotations[POLICY]
  for _, t in ipairs(obj.templates or {}) do
    if not policy and t.targets_fluence then policy = t.annotations[POLICY] end
  end
  return policy
end

local function check_policy(s, path, stream, obj, at, policy)
  local who = ("%s/%s: "):format(obj.kind or "?", obj.name or obj.generateName or "?")
  local src = require("fluence.policy_source").manifest(stream, obj.index, POLICY, policy)
  local pl, err = s:compile(path, policy, "select-policy")
  if not pl and err then
    if errors.is(err) and err.policy_pos then
      s:error(location.policy{ source = src, name = "select-policy", text = policy, pos = err.policy_pos,
                               message = err.policy_msg, at = at, head = who })
    else
      s:error(location.at(at.file, at.line, at.column, who .. (err.message or tostring(err))))
    end
  end
  local missing = s:unread(pl)
  if missing then
    local a = src and src.at or at
    s:warn(location.at(a.file, a.line, a.column, ("%sthe policy reads %s, which no backend in the attribute " ..
                                                  "files has"):format(who, table.concat(missing, ", "))))
  end
end

function M.check(s, path, text)
  local stream, err = require("fluence.manifest").parse(text, path)
  if not stream then return s:error(err, path) end
  s.stats.manifest = s.stats.manifest + 1
  for _, w in ipairs(stream:warnings()) do s:warn(w, path) end     -- a key written twice, as select says
  for _, obj in ipairs(stream:objects()) do
    local at = location.at(path, obj.line or 1, obj.col or 1)
    local who = ("%s/%s"):format(obj.kind or "?", obj.name or obj.generateName or "?")
    local policy = policy_of(obj)
    if obj.wants_selection and policy then
      check_policy(s, path, stream, obj, at, policy)
    elseif obj.annotations[POLICY] and not obj.wants_selection and #(obj.unpinned or {}) == 0 then
      s:warn(location.at(at.file, at.line, at.column, ("%s has a select-policy but does not target Fluence (no " ..
             "pod of it has schedulerName: fluence or the group label %sgroup): select ignores it"):format(who, PREFIX)))
    end
    -- a schedulerName: fluence where fluence finds no pod to pin (what
    -- select warns of too)
    for _, u in ipairs(obj.unpinned or {}) do
      s:warn(location.at(at.file, at.line, at.column, who .. ": " .. u.message))
    end
  end
end

return M
