-- `fluence explain`: per Fluence object, one row per backend with the
-- attributes the pipeline reads (and the provider of each), and one column
-- per stage: kept with its rank, or dropped and why.  -o wide: a column for
-- every attribute, not only those the pipeline reads.  -o json and -o yaml
-- (the same data) for scripts.
-- Exit 1 when a selection fails (the table still shows why).
local sys = require "fluence.sys"
local json = require "fluence.json"
local selection = require "fluence.selection"

local cmd = {}

local function describe(obj) return ("%s/%s"):format(obj.kind or "?", obj.name or obj.generateName or "?") end

local function fmt_value(v)
  if type(v) == "number" then
    if v == math.floor(v) and math.abs(v) < 1e15 then return ("%d"):format(v) end
    return (("%.6g"):format(v))
  end
  return tostring(v)
end

-- The attributes worth a column: those the pipeline reads; -o wide, every
-- attribute any backend has (those the pipeline reads first).
local function columns(rec, wide)
  local needs = rec.pipeline.attributes and rec.pipeline:attributes() or {}
  local cols = {}
  for k in pairs(needs) do if k ~= "context" then cols[#cols + 1] = k end end
  table.sort(cols)
  if wide then
    local seen, more = {}, {}
    for _, c in ipairs(cols) do seen[c] = true end
    for _, b in ipairs(rec.all) do
      for k in pairs(b.attrs) do
        if not seen[k] and k ~= "context" then seen[k] = true; more[#more + 1] = k end
      end
    end
    table.sort(more)
    for _, k in ipairs(more) do cols[#cols + 1] = k end
  end
  -- among several clusters, where each candidate is comes first
  if rec.decision and rec.decision.many then table.insert(cols, 1, "context") end
  return cols
end

-- For each backend: the status in each stage ({state=, rank=, reason=}).
local function stage_cells(rec)
  local cells = {}
  for _, b in ipairs(rec.all) do cells[b.name] = {} end
  local alive = {}
  for _, b in ipairs(rec.all) do alive[b.name] = true end
  -- stage 0: the pool (select-candidates, offerings)
  for _, b in ipairs(rec.all) do
    local reason = rec.dropped[b.name]
    local in_pipeline = false
    for _, st in ipairs(rec.result.stages or {}) do
      if (st.dropped or {})[b.name] then in_pipeline = true end
      for _, n in ipairs(st.kept or {}) do if n == b.name then in_pipeline = true end end
    end
    if reason and not in_pipeline then
      cells[b.name][0] = { state = "dropped", reason = reason }
      alive[b.name] = false
    else
      cells[b.name][0] = { state = "kept" }
    end
  end
  for i, st in ipairs(rec.result.stages or {}) do
    local rank = {}
    for r, n in ipairs(st.kept or {}) do rank[n] = r end
    for _, b in ipairs(rec.all) do
      local n = b.name
      if not alive[n] then
        cells[n][i] = { state = "gone" }
      elseif rank[n] then
        -- a rank means something where the stage reordered, and at the end
        local ranked = st.order_changed or i == #rec.result.stages
        cells[n][i] = { state = "kept", rank = ranked and rank[n] or nil }
      else
        cells[n][i] = { state = "dropped", reason = (st.dropped or {})[n] or "dropped" }
        alive[n] = false
      end
    end
  end
  return cells
end

-- The chosen candidate's row name: BACKEND, or BACKEND@CONTEXT among clusters.
local function chosen_name(rec)
  return rec.context and rec.chosen and (rec.chosen .. "@" .. rec.context) or rec.chosen
end

local function to_data(records)
  local out = json.array{}
  for _, rec in ipairs(records) do
    local cells = stage_cells(rec)
    local stages = json.array{ "pool" }
    for _, st in ipairs(rec.result.stages or {}) do stages[#stages + 1] = st.text end
    local rows = json.array{}
    for _, b in ipairs(rec.all) do
      local attrs = json.object{}
      for k, v in pairs(b.attrs) do attrs[k] = { value = v, provider = b.source[k] } end
      local st = json.array{}
      for i = 0, #(rec.result.stages or {}) do
        local c = cells[b.name][i]
        st[#st + 1] = setmetatable({ state = c.state, rank = c.rank, reason = c.reason },
                                   { __order = { "state", "rank", "reason" } })
      end
      rows[#rows + 1] = setmetatable({ name = b.name, attrs = attrs, stages = st },
                                     { __order = { "name", "attrs", "stages" } })
    end
    local w = require("fluence.cost").workload(rec.request)
    out[#out + 1] = setmetatable({
      object = describe(rec.object), where = rec.where, policy = rec.pipeline.text,
      chosen = rec.chosen, context = rec.context, error = rec.error, stages = stages, backends = rows,
      notes = json.array(rec.notes),
      workload = setmetatable({ pods = w.pods, shots = w.shots, seconds = w.seconds, duration_from = w.from },
                              { __order = { "pods", "shots", "seconds", "duration_from" } }),
    }, { __order = { "object", "where", "policy", "chosen", "context", "error", "workload", "stages", "backends",
                     "notes" } })
  end
  return setmetatable({ objects = out }, {})
end

-- Display width of UTF-8 text (one column per code point is enough here).
local function width(s) return utf8.len(s) or #s end
local function pad(s, w) return s .. (" "):rep(math.max(0, w - width(s))) end

-- The table is for a terminal: every text in it from outside (backend,
-- attribute and object names, reasons, notes, the policy) is escaped
-- (sys.escape: one line, no control characters), so only the table's own
-- colours reach the terminal.  The JSON keeps the text as it is.
local function to_table(records, color, wide)
  local esc = sys.escape
  local function paint(code, s) return color and ("\27[" .. code .. "m" .. s .. "\27[0m") or s end
  local out, said = {}, {}
  for ri, rec in ipairs(records) do
    if ri > 1 then out[#out + 1] = "" end
    out[#out + 1] = ("%s  (%s)"):format(paint("1", esc(describe(rec.object))), esc(rec.where))
    out[#out + 1] = "policy: " .. esc(rec.pipeline.text)
    local cols = columns(rec, wide)
    local cells = stage_cells(rec)
    local header = { "BACKEND" }
    for _, c in ipairs(cols) do header[#header + 1] = c:upper() end
    local pool_dropped = false
    for _, b in ipairs(rec.all) do if cells[b.name][0].state == "dropped" then pool_dropped = true end end
    if pool_dropped then header[#header + 1] = "POOL" end
    for i, st in ipairs(rec.result.stages or {}) do header[#header + 1] = ("%d:%s"):format(i, esc(st.text)) end
    local rows = { header }
    local kinds = { {} }
    for _, b in ipairs(rec.all) do
      local row, kind = { b.name }, { b.name == chosen_name(rec) and "chosen" or "" }
      for _, c in ipairs(cols) do
        local v = b.attrs[c]
        row[#row + 1] = v == nil and "-" or (fmt_value(v) .. " (" .. (b.source[c] or "?") .. ")")
        kind[#kind + 1] = ""
      end
      local first = pool_dropped and 0 or 1
      for i = first, #(rec.result.stages or {}) do
        local cell = cells[b.name][i]
        if cell.state == "kept" then
          row[#row + 1] = cell.rank and ("#" .. cell.rank) or "kept"
          kind[#kind + 1] = "kept"
        elseif cell.state == "dropped" then
          row[#row + 1] = "dropped: " .. cell.reason
          kind[#kind + 1] = "dropped"
        else
          row[#row + 1] = ""
          kind[#kind + 1] = ""
        end
      end
      for i, cell in ipairs(row) do row[i] = esc(cell) end
      rows[#rows + 1] = row
      kinds[#kinds + 1] = kind
    end
    local widths = {}
    for _, row in ipairs(rows) do
      for i, cell in ipairs(row) do widths[i] = math.max(widths[i] or 0, width(cell)) end
    end
    for r, row in ipairs(rows) do
      local parts = {}
      for i, cell in ipairs(row) do
        local text = i < #row and pad(cell, widths[i]) or cell
        local k = kinds[r][i]
        if r == 1 then text = paint("1", text)
        elseif k == "chosen" then text = paint("1;32", text)
        elseif k == "kept" then text = paint("32", text)
        elseif k == "dropped" then text = paint("31", text) end
        parts[#parts + 1] = text
      end
      out[#out + 1] = table.concat(parts, "  ")
    end
    -- each price with its unit, provider and age, and how cost_usd was
    -- estimated (fluence.cost)
    for _, line in ipairs(require("fluence.cost").describe(rec, sys.now())) do out[#out + 1] = esc(line) end
    if rec.chosen then out[#out + 1] = "chosen: " .. paint("1;32", esc(rec.chosen)) ..
                                        (rec.context and (" on context " .. esc(rec.context)) or "")
    else out[#out + 1] = paint("1;31", "failed: ") .. esc(rec.error or "no backend", true) end
    -- a note about the whole run (offerings unknown, no credentials) is
    -- shown with the first object it concerns, as on stderr; JSON keeps
    -- every object's notes whole
    local run = rec.decision and rec.decision.run_notes or {}
    for _, n in ipairs(rec.notes) do
      if not (run[n] and said[n]) then out[#out + 1] = "note: " .. esc(n) end
      if run[n] then said[n] = true end
    end
  end
  if #records == 0 then out[#out + 1] = "no Fluence object with a select-policy in the input" end
  return table.concat(out, "\n") .. "\n"
end

local FORMATS = { table = true, wide = true, json = true, yaml = true }

function cmd.run(args)
  if args.opts.output and not FORMATS[args.opts.output] then
    require("fluence.errors").raise("USAGE", "explain: unknown output format %q (table, wide, json or yaml)",
                                    args.opts.output)
  end
  local how = { explain = true }
  if #args.positional > 0 then
    how = require("fluence.runpolicy").how(args.positional[1], args)
    how.explain = true
  end
  local res = selection.run(args, how)
  local fmt = args.opts.output or "table"
  local text
  if fmt == "json" then text = json.encode(to_data(res.records), { indent = 2 }) .. "\n"
  elseif fmt == "yaml" then text = require("fluence.yaml_out").encode(to_data(res.records))
  else
    text = to_table(res.records, require("fluence.log").color(), fmt == "wide")
  end
  sys.write(2, res.warnings)
  sys.write(1, text)
  for _, rec in ipairs(res.records) do
    if rec.error then return sys.EXIT.SELECT end
  end
  return sys.EXIT.OK
end

return cmd
