-- `fluence check` of a test file (*.test.yaml): the case format, and each
-- case's policy compiled (unless the case expects that input error, exit 3:
-- it may well test a bad policy).
local errors = require "fluence.errors"

local M = {}

function M.check(s, path, text)
  local cases = require "fluence.testing.cases"
  local f, err, loc = cases.load(path, text)
  if not f then return s:error(loc or err, path) end
  s.stats.cases = s.stats.cases + 1
  for _, c in ipairs(f.cases) do
    if c.spec.policy and c.spec.expect.exit ~= 3 then
      local pl, perr = s:compile(path, c.spec.policy, "policy")
      if not pl and perr then
        local node = c.node.policy ~= nil and c.node or nil
        s:error(cases.location(f, node, node and "policy" or nil, ("policy: %s"):format(
          errors.is(perr) and perr.policy_msg or tostring(perr.message or perr))))
      end
    end
  end
end

return M
