-- `fluence prices`: what the price providers (azure-prices, aws-prices,
-- gcp-prices) see for some instance types and regions, so a user can check
-- a price before trusting a selection with it.
--
--   fluence prices --cloud aws -t p4d.24xlarge -t g5.xlarge -r us-east-1 -r us-west-2
--   fluence prices --attributes attrs.yaml      (its backends with cloud,
--                                                instance_type and region)
--
-- Every (type, region) pair is asked through the same providers, sandbox,
-- cache and notes as a selection (--offline: the cache only).  One row per
-- pair: on-demand and spot price with their unit, the spot zone, where the
-- prices came from and how old they are, notes on stderr; -o json gives the
-- same as data, notes included.
-- Exit 0 even when some price is missing (the notes say why); 2 for a bad
-- command line; 3 for a bad attribute file.
local sys = require "fluence.sys"
local errors = require "fluence.errors"
local json = require "fluence.json"

local cmd = {}

-- The clouds priced: the family of every provider that enriches backends
-- of cloud = its family (azure-prices: family azure, cloud=azure), by name.
local function price_providers(reg)
  local clouds, names = {}, {}
  for _, e in ipairs(reg.list) do
    local fam = e.decl.family
    for _, a in ipairs(e.decl.enriches or {}) do
      if fam and a == "cloud=" .. fam then
        clouds[fam] = e
        names[#names + 1] = fam
      end
    end
  end
  table.sort(names)
  return clouds, table.concat(names, ", ")
end

-- The rows to price: { {name, cloud, instance_type, region}, ... }
local function wanted(opts, clouds, known)
  local rows = {}
  local types, regions = opts["instance-type"] or {}, opts.region or {}
  local cloud = opts.cloud and opts.cloud:lower()
  if #types > 0 or #regions > 0 or cloud then
    if not cloud or not clouds[cloud] then
      errors.raise("USAGE", "prices: --cloud must be one of %s%s", known,
                   opts.cloud and errors.format(", not %q", opts.cloud) or "")
    end
    if #types == 0 or #regions == 0 then
      errors.raise("USAGE", "prices: give at least one --instance-type and one --region")
    end
    for _, t in ipairs(types) do
      for _, r in ipairs(regions) do
        rows[#rows + 1] = { name = ("%s/%s@%s"):format(cloud, t, r), cloud = cloud, instance_type = t, region = r }
      end
    end
  end
  local catalog = require "fluence.catalog"
  for _, path in ipairs(opts.attributes or {}) do
    local text, err = sys.read_file(path)
    if not text then errors.raise("INPUT", "%s", err) end
    local ok, recs = pcall(catalog.decode, text, path)
    if not ok then errors.raise("INPUT", "%s", tostring(recs)) end
    for _, r in ipairs(recs) do
      local a = r.attrs
      if type(a.cloud) == "string" and clouds[a.cloud:lower()] and type(a.instance_type) == "string"
         and type(a.region) == "string" then
        rows[#rows + 1] = { name = r.name, cloud = a.cloud:lower(), instance_type = a.instance_type, region = a.region }
      end
    end
  end
  if #rows == 0 then
    errors.raise("USAGE", "prices: nothing to price: give --cloud, --instance-type and --region, or --attributes " ..
                 "FILE whose backends carry cloud, instance_type and region")
  end
  return rows
end

-- Runs the price provider of every cloud asked about over the rows.
local function gather(args, api, providers, rows)
  local provider_host = require "fluence.provider_host"
  local sandbox = require "fluence.sandbox"
  local merge = require "fluence.merge"
  local backends, clouds, seen = {}, {}, {}
  for _, r in ipairs(rows) do
    backends[#backends + 1] = { name = r.name, attrs = { cloud = r.cloud, instance_type = r.instance_type,
                                                         region = r.region } }
    if not seen[r.cloud] then
      seen[r.cloud] = true
      clouds[#clouds + 1] = r.cloud
    end
  end
  local results = { { provider = "prices", backends = backends } }
  local merged = assert(merge.merge(results))
  local notes = {}
  for _, cloud in ipairs(clouds) do
    local e = providers[cloud]
    local ctx = sandbox.readonly{ request = {}, options = args.opts, api = api, backends = merged }
    local out, pnotes = provider_host.call(e, ctx)
    results[#results + 1] = { provider = e.name, backends = out or {}, trusted = e.source == "built-in" }
    for _, n in ipairs(pnotes) do notes[#notes + 1] = n end
  end
  local m, err = merge.merge(results)
  if not m then errors.raise("INPUT", "%s", err) end
  local by = {}
  for _, b in ipairs(m) do by[b.name] = b end
  return by, notes
end

-- One row's prices: the machine prices a provider filled (the on-demand
-- and spot attribute of one kind: per hour, per GPU-hour; fluence.units).
local function row_prices(b)
  local a = b and b.attrs or {}
  for _, p in ipairs(require("fluence.units").PRICES) do
    local spot = p.spot and p
    local od
    for _, q in ipairs(require("fluence.units").PRICES) do
      if spot and q.kind == p.kind and not q.spot then od = q end
    end
    if spot and od and (a[od.attr] ~= nil or a[spot.attr] ~= nil) then
      return { ondemand = a[od.attr], spot = a[spot.attr], unit = od.unit,
               provider = b.source[od.attr] or b.source[spot.attr],
               fetched = a.price_time, spot_fetched = a.spot_price_time, zone = a.spot_zone,
               note = a.price_note }
    end
  end
  return {}
end

local function to_json(rows, by, notes)
  local list = json.array{}
  for _, r in ipairs(rows) do
    local p = row_prices(by[r.name])
    list[#list + 1] = setmetatable({
      name = r.name, cloud = r.cloud, instance_type = r.instance_type, region = r.region,
      on_demand = p.ondemand, spot = p.spot, unit = p.unit, spot_zone = p.zone, provider = p.provider,
      fetched = p.fetched, spot_fetched = p.spot_fetched, note = p.note,
    }, { __order = { "name", "cloud", "instance_type", "region", "on_demand", "spot", "unit", "spot_zone",
                     "provider", "fetched", "spot_fetched", "note" } })
  end
  return json.encode(setmetatable({ prices = list, notes = json.array(notes) }, { __order = { "prices", "notes" } }),
                     { indent = 2 }) .. "\n"
end

local function to_table(rows, by, notes)
  local cost = require "fluence.cost"
  local now = sys.now()
  local out = { { "CLOUD", "INSTANCE TYPE", "REGION", "ON-DEMAND", "SPOT", "UNIT", "SPOT ZONE", "AGE", "SOURCE" } }
  for _, r in ipairs(rows) do
    local p = row_prices(by[r.name])
    local function num(v) return v ~= nil and cost.show(v) or "-" end
    local t = p.fetched or p.spot_fetched
    out[#out + 1] = { r.cloud, r.instance_type, r.region, num(p.ondemand), num(p.spot), p.unit or "-", p.zone or "-",
                      t and cost.age(now - t) or "-", p.provider or "-" }
  end
  local widths = {}
  for _, row in ipairs(out) do
    for i, c in ipairs(row) do
      row[i] = sys.escape(c)
      widths[i] = math.max(widths[i] or 0, utf8.len(row[i]) or #row[i])
    end
  end
  local lines = {}
  for _, row in ipairs(out) do
    local parts = {}
    for i, c in ipairs(row) do
      parts[i] = i < #row and c .. (" "):rep(widths[i] - (utf8.len(c) or #c)) or c
    end
    lines[#lines + 1] = table.concat(parts, "  ")
  end
  return table.concat(lines, "\n") .. "\n"
end

function cmd.run(args)
  local fmt = args.opts.output or "table"
  if fmt ~= "table" and fmt ~= "json" then
    errors.raise("USAGE", "prices: unknown output format %q (table or json)", fmt)
  end
  if #args.positional > 0 then
    errors.raise("USAGE", "prices: unexpected argument %q (give --cloud, --instance-type, --region)",
                 args.positional[1])
  end
  local api = require("fluence.provider_api").new{ verbose = args.opts.verbose }
  local reg = require("fluence.plugins").load_providers{ dirs = args.opts["provider-dir"], api = api }
  local providers, known = price_providers(reg)
  local rows = wanted(args.opts, providers, known)
  local by, notes = gather(args, api, providers, rows)
  local text = fmt == "json" and to_json(rows, by, notes) or to_table(rows, by, notes)
  -- the notes (why a price is missing, how old a cached one is) on stderr
  -- with a table; inside the JSON with -o json
  if fmt == "table" then
    for _, n in ipairs(notes) do sys.write(2, "note: " .. sys.escape(n) .. "\n") end
  end
  sys.write(1, text)
  return sys.EXIT.OK
end

return cmd
