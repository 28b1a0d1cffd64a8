-- The commands fluence suggests a user run.  A hint is copied into a shell
-- as it stands, so it must act on the object meant and on no other: every
-- kubectl command names the context (a user's current context may be
-- another cluster), the namespace (namespaced kinds) and the object as
-- KIND.GROUP/NAME, and the kubeconfig when the run was given one; every
-- word goes through the one shell quoting (fluence.shell).
--
--   hint.kubectl(verb, target [, extra]) -> text
--     target: { context = name, namespace = ns | nil (cluster-scoped),
--               ref = "job.batch/x", kubeconfig = file | nil }
--     extra: more words, after the object (e.g. { "--wait=false" })
--   hint.again(args, extra) -> text
--     this run's own command line with the words of extra added
--     (args.prog, args.argv), e.g. to suggest --force-conflicts; a run
--     that read its manifest from stdin (-f -) is told to feed it again
local shell = require "fluence.shell"

local M = {}

-- "--context" "x", or "--context=-x" for a value a flag parser could take
-- for an option of its own
local function flag(words, name, value)
  if tostring(value):sub(1, 1) == "-" then
    words[#words + 1] = name .. "=" .. value
  else
    words[#words + 1] = name
    words[#words + 1] = value
  end
end

function M.kubectl(verb, target, extra)
  local words = { "kubectl", verb, target.ref }
  if target.namespace then flag(words, "-n", target.namespace) end
  flag(words, "--context", target.context or "")
  if target.kubeconfig then flag(words, "--kubeconfig", target.kubeconfig) end
  for _, w in ipairs(extra or {}) do words[#words + 1] = w end
  return shell.command(words)
end

function M.again(args, extra)
  local words = {}
  for w in tostring(args.prog or "fluence"):gmatch("%S+") do words[#words + 1] = w end
  for _, w in ipairs(args.argv or {}) do words[#words + 1] = w end
  for _, w in ipairs(extra or {}) do words[#words + 1] = w end
  local text = shell.command(words)
  -- a manifest read from stdin is not in the command line: say so
  local files = args.opts and args.opts.filename
  for _, f in ipairs(type(files) == "table" and files or { files }) do
    if f == "-" then return text .. " (with the same manifest on its stdin)" end
  end
  return text
end

return M
