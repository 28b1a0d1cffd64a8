-- What `fits` and `fits:now` need from a live cluster, and what happens
-- when it cannot be read.  A policy with a fits stage asks for a guarantee
-- (a gang of 4 x 128 cpu on 64-core nodes must not be pinned): without the
-- nodes (fits) or, for fits:now, the pods running on them, the selection
-- fails with exit 4 naming the context, the server and the cause (the
-- missing right, the unreachable server) -- it never keeps every backend
-- and exits 0 as if it had checked.  --fits-best-effort is the explicit
-- opt-in to the old way: every backend kept (fits:now matching capacity),
-- with a note saying so.
--
--   fits_data.wants(pl) -> fits, now      does the pipeline match, and
--                                         does a stage match what is free now
--                                         (-v: which matcher, once a run)
--   fits_data.usage(now_graphs) -> request.now_usage (who runs where)
--   fits_data.missing(c, what, opts) -> note   what: "nodes" | "usage";
--       raises the CLUSTER error unless --fits-best-effort, else returns
--       the note (one line) to go on with
local errors = require "fluence.errors"
local cause = require "fluence.cluster_cause"

local M = {}

M.OPTION = "fits-best-effort"

local said
function M.wants(pl)
  local fits, now = false, false
  for _, st in ipairs(pl and pl.stages or {}) do
    if st.head == "fits" then
      fits = true
      if st.args then now = true end
    end
  end
  -- -v: which matcher fits runs (once a run)
  if fits and not said and require("fluence.log").level() >= 1 then
    said = true
    require("fluence.log").v(1, "fits: matching with %s", require("fluence.cmd.match").describe())
  end
  return fits, now
end

local NEEDS = {
  nodes = { "fits needs them", "fits keeps every backend" },
  usage = { "fits:now needs them", "fits:now matches capacity, not what runs now" },
}

-- "; 'fluence rbac' prints the rights fluence needs" when a right is missing
local function hint(err)
  if type(err) == "table" and err.status == 403 then
    return "; 'fluence rbac' prints the rights fluence needs"
  end
  return ""
end

-- request.now_usage for fits: who runs on the nodes of each now graph
-- (keyed as now_graphs are), so a reason can name them.
function M.usage(now_graphs)
  if not now_graphs then return nil end
  local cluster, out = require "fluence.cluster", {}
  for k, g in pairs(now_graphs) do out[k] = cluster.usage_of(g) end
  return next(out) and out or nil
end

function M.missing(c, what, opts)
  local err = c[what .. "_error"] or "not read"
  local line = cause.line(c, what, err)
  if not opts[M.OPTION] then
    errors.raise("CLUSTER", "cluster: %s; %s (--%s keeps every backend instead)%s", line, NEEDS[what][1],
                 M.OPTION, hint(err))
  end
  return ("%s; %s (--%s)"):format(cause.first_line(line), NEEDS[what][2], M.OPTION)
end

return M
