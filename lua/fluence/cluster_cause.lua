-- Why a cluster could not give what a run needed, on one line, named the
-- same way wherever it is reported (an error, a note, the audit): the
-- context, the server and the cause, without -v.
--
--   cluster_cause.line(c, what, err [, ns]) -> 'context "prod" (https://10.0.0.1:6443):
--       cannot list the nodes: nodes is forbidden: User "bob" cannot list ... (HTTP 403 Forbidden)'
--     c: a cluster of fluence.cluster; what: "offerings", "nodes" or "usage"
--     (c.<what>_error is err's usual place); ns: the offerings' namespace
--   cluster_cause.first_line(text) -> its first line (a located message's
--     source line and caret stay for errors; a note is one line)
--
-- The cause is the request's own reason (kubeclient.lua's e.cause: what
-- curl or the server said), else the error's message without the
-- "cluster: " it starts with and the "(context ...)" it may end with.
local sys = require "fluence.sys"

local M = {}

local DOING = {
  offerings = function(ns) return ("cannot read the ConfigMap %s/fluence-resources"):format(ns or "kube-system") end,
  nodes = function() return "cannot list the nodes" end,
  usage = function() return "cannot list the pods" end,
}

function M.first_line(text)
  return (tostring(text):match("^[^\n]*"))
end

local function bare(message)
  local m = tostring(message or "unknown error"):gsub("^cluster: ", "")
  return (m:gsub(" %(context \"[^\n]-\"%)$", ""))
end

-- "context NAME (SERVER): ", as far as they are known (a kubeconfig that
-- leads nowhere names neither).
local function head(c, err)
  local name = type(err) == "table" and err.context or rawget(c, "name") or c.context
  local client = rawget(c, "client")
  local server = type(err) == "table" and err.server or (client and client.server)
  if not name or name == "" then return server and ("server " .. server .. ": ") or "" end
  return ("context %s%s: "):format(sys.quote(name), server and (" (" .. server .. ")") or "")
end

-- A request that failed says what could not be done and why; what was
-- read but is wrong (the ConfigMap's content, located) says so itself.
function M.line(c, what, err, ns)
  err = err or c[what .. "_error"]
  local message = type(err) == "table" and err.message or err
  local cause = type(err) == "table" and err.cause
  if not cause and not tostring(message):match("^cluster: ") then return head(c, err) .. tostring(message) end
  local doing = DOING[what] and DOING[what](ns) or what
  return head(c, err) .. doing .. ": " .. (cause or bare(message))
end

-- The offerings of cluster c could not be read.  With --require-offerings
-- the run stops (exit 4) naming the cause; else nil, the note the run
-- goes on with (one line: on stderr once and in the audit), and the cause
-- (M.needed names it when nothing else gave a backend).
function M.offerings(c, opts)
  local line = M.line(c, "offerings", nil, opts["fluence-ns"])
  if opts["require-offerings"] then
    require("fluence.errors").raise("CLUSTER", "cluster: %s (--require-offerings)", line)
  end
  return nil, "scheduler offerings unknown: " .. M.first_line(line) .. "; selecting over all provided backends", line
end

-- No provider gave any backend and the cluster(s) whose offerings would
-- have could not be read (lines: M.offerings' causes): the cluster was
-- needed for the answer, so the run stops (exit 4) naming why, instead of
-- "no candidate backends".
function M.needed(lines)
  require("fluence.errors").raise("CLUSTER", "cluster: %s; no other source of backends " ..
                                  "(give --attributes FILE or --provider NAME)", table.concat(lines, "; "))
end

return M
