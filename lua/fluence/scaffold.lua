-- What `fluence new policy|provider NAME` writes: a commented plugin, a
-- busted spec and a *.test.yaml, which pass `fluence test DIR` as written.
--
--   scaffold.files(kind, name) -> { {path = "policies/NAME.lua", text =}, ... }  (paths relative to DIR)
--
-- {{name}} is the plugin's name, {{env}} the environment variable a
-- provider reads its endpoint from (FLUENCE_<NAME>_URL).
local scaffold = {}

local POLICY = [==[
-- {{name}}:LIMIT keeps the backends whose cost_usd is at most LIMIT, cheapest
-- first.  A starting point made by `fluence new policy {{name}}`: change what
-- it keeps and how it orders them, and keep its tests passing:
--
--   fluence test DIR          (DIR: the directory holding policies/ and tests/)
--
-- Use it in a manifest:
--   fluence.flux-framework.org/select-policy: "require:memory_gb>=24,{{name}}:2.5"
--
-- The whole contract is docs/plugins.md.  A policy runs sandboxed: no I/O,
-- an instruction budget and a time limit on every call.
return {
  name = "{{name}}",             -- the stage word in a policy; must equal the file name
  description = "{{name}}:LIMIT: keep backends with cost_usd <= LIMIT, cheapest first",
  args = "required",            -- "{{name}}" alone is an error; "{{name}}:..." is required

  -- compile runs once per distinct policy text.  Check the arguments here and
  -- report a mistake with ctx.error(message, position): fluence shows the
  -- manifest's line with a caret at that position.
  compile = function(stage, ctx)
    local items = stage.args.items
    local value = #items == 1 and not items[1].key and #items[1].values == 1 and items[1].values[1]
    local limit = value and value.number
    if not limit or limit < 0 then
      ctx.error("{{name}} takes one non-negative number, e.g. {{name}}:2.5", stage.args.pos)
    end

    -- The stage: the candidates (read-only) in; out, the ones kept, best
    -- first, and a reason for each one dropped (`fluence explain` shows them).
    return function(backends, request)
      local keep, reasons = {}, {}
      for _, b in ipairs(backends) do
        local cost = b.attrs.cost_usd
        if type(cost) ~= "number" then
          reasons[b.name] = "no numeric cost_usd"
        elseif cost > limit then
          reasons[b.name] = ("cost_usd %s is over the limit of %s"):format(ctx.num(cost), ctx.num(limit))
        else
          keep[#keep + 1] = b
        end
      end
      ctx.sort_by(keep, function(b) return b.attrs.cost_usd end)   -- stable: ties keep their order
      return keep, reasons
    end, { "cost_usd" }          -- the attributes the stage reads (providers, explain)
  end,
}
]==]

local POLICY_SPEC = [==[
-- Specs for the {{name}} policy.  `fluence test DIR` runs them with its
-- built-in runner (no busted needed); plain busted can run them too after
-- `make install` (docs/testing-plugins.md).
local t = require("fluence.testing")

describe("{{name}}", function()
  local backends = {
    { name = "small", attrs = { cost_usd = 0.5 } },
    { name = "large", attrs = { cost_usd = 4 } },
    { name = "unpriced", attrs = {} },
  }

  it("keeps the backends within the limit, cheapest first", function()
    local r = t.rank("{{name}}:2.5", backends)
    assert.are.equal("small", r.chosen)
    assert.are.same({ "small" }, r.order)
    assert.matches("over the limit", r.dropped.large)
    assert.matches("no numeric cost_usd", r.dropped.unpriced)
  end)

  it("orders what it keeps by cost, after other stages", function()
    local r = t.rank("require:cost_usd>0,{{name}}:10", backends)
    assert.are.same({ "small", "large" }, r.order)
  end)

  it("fails the selection when nothing is within the limit", function()
    local r = t.rank("{{name}}:0.1", backends)
    assert.is_nil(r.chosen)
    assert.matches("eliminated all candidates", r.error)
  end)

  it("rejects a limit that is not a number", function()
    assert.error_matches(function() t.rank("{{name}}:cheap", backends) end, "takes one non%-negative number")
  end)
end)
]==]

local JOB = [==[
object:
  apiVersion: batch/v1
  kind: Job
  metadata:
    name: train
    annotations:
      fluence.flux-framework.org/select-policy: "{{policy}}"
  spec:
    template:
      spec:
        schedulerName: fluence
        restartPolicy: Never
        containers: [{name: train, image: "example.com/train:1"}]
]==]

local POLICY_CASES = [==[
# Cases for the {{name}} policy: each is a whole selection (as `fluence select`
# makes it), in process.  `fluence test DIR` runs them; the format is in
# docs/testing-plugins.md.  Keys above `tests:` are shared by every case.
]==] .. JOB:gsub("{{policy}}", "{{name}}:2.5") .. [==[
attributes:
  - {name: small, attributes: {cost_usd: 0.5}}
  - {name: large, attributes: {cost_usd: 4}}
tests:
  - name: the cheapest backend within the limit
    expect:
      chosen: small
      dropped: {large: "over the limit"}
  - name: nothing within the limit fails the selection
    policy: "{{name}}:0.1"
    expect:
      exit: 1
      error: "eliminated all candidates"
]==]

local PROVIDER = [==[
-- {{name}}: backends and their attributes from a JSON endpoint.  A starting
-- point made by `fluence new provider {{name}}`: point it at your inventory
-- or price service, and keep its tests passing (fluence test DIR).
--
--   {{env}}=https://inventory.example/backends \
--     fluence select -f job.yaml --provider {{name}}
--
-- The endpoint answers {"backends": [{"name": "gpu-l4", "cost_usd": 0.8,
-- "memory_gb": 24}, ...]}: every field but the name becomes an attribute.
-- A provider runs sandboxed: ctx.api (HTTP, environment, files, decoding) is
-- all it reaches, which is what lets `fluence test` stand in for all of it.
-- The whole contract is docs/plugins.md.
local M = {
  name = "{{name}}",             -- must equal the file name
  description = "backends from the JSON endpoint in ${{env}}",
}

function M.candidates(ctx)
  local api = ctx.api
  local url = api.env("{{env}}")
  if not url then
    -- a note explains a provider with nothing to say; error(msg, 0) would stop the run
    return {}, { "{{name}}: {{env}} is not set; no backends from it" }
  end
  local shown = url:gsub("%?.*", "")      -- a query string may carry a token: never show it
  local resp, err = api.http.request{ url = url, headers = { Accept = "application/json" }, timeout = 10 }
  if not resp then return {}, { "{{name}}: " .. err } end
  if resp.status ~= 200 then
    return {}, { ("{{name}}: %s answered HTTP %d"):format(shown, resp.status) }
  end
  local doc, jerr = api.json.decode(resp.body, shown)
  if doc == nil then error("{{name}}: " .. jerr, 0) end
  local list = type(doc) == "table" and doc.backends
  if type(list) ~= "table" then error(("{{name}}: %s: expected {\"backends\": [...]}"):format(shown), 0) end
  local out = {}
  for i, item in ipairs(list) do
    if type(item) ~= "table" or type(item.name) ~= "string" or item.name == "" then
      error(("{{name}}: %s: backend #%d has no name"):format(shown, i), 0)
    end
    local attrs = {}
    for k, v in pairs(item) do
      if k ~= "name" and (type(v) == "number" or type(v) == "string" or type(v) == "boolean") then attrs[k] = v end
    end
    out[#out + 1] = { name = item.name, attrs = attrs }
  end
  return out
end

return M
]==]

local PROVIDER_SPEC = [==[
-- Specs for the {{name}} provider, with its HTTP answers stood in for: a test
-- never reaches the network (a request to a URL without a stub fails it).
-- `fluence test DIR` runs them; plain busted too after `make install`
-- (docs/testing-plugins.md).
local t = require("fluence.testing")

local URL = "https://inventory.example/backends"

describe("{{name}}", function()
  it("turns the endpoint's backends into candidates", function()
    local backends, notes = t.provider("{{name}}", {
      env = { {{env}} = URL },
      http = { [URL] = { status = 200, body = { backends = {
        { name = "gpu-l4", cost_usd = 0.8, memory_gb = 24 },
        { name = "gpu-t4", cost_usd = 0.35, memory_gb = 16 },
      } } } },
    })
    assert.are.same({ name = "gpu-l4", attrs = { cost_usd = 0.8, memory_gb = 24 } }, backends[1])
    assert.are.equal(2, #backends)
    assert.are.same({}, notes)
  end)

  it("says why when the endpoint fails", function()
    local backends, notes = t.provider("{{name}}", { env = { {{env}} = URL }, http = { [URL] = { status = 503 } } })
    assert.are.same({}, backends)
    assert.matches("answered HTTP 503", notes[1])
  end)

  it("says so when it is not configured", function()
    local backends, notes = t.provider("{{name}}", {})
    assert.are.same({}, backends)
    assert.matches("is not set", notes[1])
  end)

  it("rejects an answer in another format", function()
    assert.error_matches(function()
      t.provider("{{name}}", { env = { {{env}} = URL }, http = { [URL] = { body = "[1, 2]" } } })
    end, "expected {\"backends\"", 1, true)
  end)
end)
]==]

local PROVIDER_CASES = [==[
# Cases for the {{name}} provider: whole selections (as `fluence select` makes
# them) with the endpoint's answers stood in for; no network.  `fluence test
# DIR` runs them; the format is in docs/testing-plugins.md.  Keys above
# `tests:` are shared by every case.
]==] .. JOB:gsub("{{policy}}", "require:memory_gb>=24,min-cost") .. [==[
providers: ["{{name}}"]
env: {{{env}}: "https://inventory.example/backends"}
tests:
  - name: the cheapest backend with 24 GB
    http:
      - url: https://inventory.example/backends
        status: 200
        body:
          backends:
            - {name: gpu-a100, cost_usd: 3.2, memory_gb: 80}
            - {name: gpu-l4, cost_usd: 0.8, memory_gb: 24}
            - {name: gpu-t4, cost_usd: 0.35, memory_gb: 16}
    expect:
      chosen: gpu-l4
      dropped: {gpu-t4: "memory_gb", gpu-a100: "cost_usd"}
  - name: the endpoint down fails the selection, with a note saying why
    http:
      - {url: https://inventory.example/backends, status: 503}
    expect:
      exit: 1
      notes: ["answered HTTP 503"]
]==]

-- FLUENCE_<NAME>_URL: letters and digits upper-cased, the rest "_".
function scaffold.env_name(name)
  return "FLUENCE_" .. name:upper():gsub("[^%w]", "_") .. "_URL"
end

local function fill(text, name)
  local env = scaffold.env_name(name)
  return (text:gsub("{{(%w+)}}", function(k)
    if k == "name" then return name end
    if k == "env" then return env end
  end))
end

function scaffold.files(kind, name)
  if kind == "policy" then
    return { { path = "policies/" .. name .. ".lua", text = fill(POLICY, name) },
             { path = "tests/" .. name .. "_spec.lua", text = fill(POLICY_SPEC, name) },
             { path = "tests/" .. name .. ".test.yaml", text = fill(POLICY_CASES, name) } }
  end
  return { { path = "providers/" .. name .. ".lua", text = fill(PROVIDER, name) },
           { path = "tests/" .. name .. "_spec.lua", text = fill(PROVIDER_SPEC, name) },
           { path = "tests/" .. name .. ".test.yaml", text = fill(PROVIDER_CASES, name) } }
end

return scaffold
