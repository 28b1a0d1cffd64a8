-- Declarative test cases: *.test.yaml files, one case or several under
-- `tests:` (each inherits the file's top-level keys it does not set).  Each
-- case is one selection in process (fluence.testing's t.select) and its
-- expectations:
--
--   name: cheapest GPU with 24 GB
--   manifest: job.yaml               # relative to this file; or inline: object: {...}
--   attributes: [attrs.yaml, {name: gpu-x, attributes: {cost_usd: 1}}]
--   providers: [gpu-pricing]         # as --provider
--   policy: "require:memory_gb>=24,min-cost"   # instead of the annotation
--   env: {FLUENCE_GPU_CATALOG: catalog.csv}    # all the environment providers see
--   http: [{url: https://x/y, status: 200, body: '...', headers: {}}]   # or error: reason
--   files: {path: text}              # what api.read_file answers
--   offerings: |                     # the fluence-resources body; without it, offline
--   graph: cluster.json              # as --graph;  cost_tol: 0.05  # as --cost-tol
--   expect: {chosen: gpu-l4, exit: 0, dropped: {gpu-t4: "memory_gb"}, notes: ["..."],
--            error: "substring", output: "substring"}
--
--   cases.load(path, text) -> file | nil, located message (a malformed file)
--   cases.run(file, report)   report{ file =, line =, name =, status =, message =, time = } per case
local sys = require "fluence.sys"
local yaml = require "fluence.yaml"
local json = require "fluence.json"
local project = require "fluence.testing.project"
local location = require "fluence.location"

local cases = {}

-- key -> what it must be (checked in order, so messages are stable)
local CASE_KEYS = { "name", "manifest", "object", "attributes", "providers", "policy", "env", "http", "files",
                    "offerings", "graph", "cost_tol", "expect" }
local EXPECT_KEYS = { "chosen", "exit", "dropped", "notes", "error", "output" }
local EXITS = { [0] = true, [1] = true, [2] = true, [3] = true, [4] = true, [70] = true }

local function set_of(list)
  local s = {}
  for _, k in ipairs(list) do s[k] = true end
  return s
end
local CASE_SET, EXPECT_SET = set_of(CASE_KEYS), set_of(EXPECT_KEYS)

local function is_list(v) return type(v) == "table" and json.is_array(v) end
local function is_map(v) return type(v) == "table" and not json.is_array(v) and v ~= yaml.null end
local function is_null(v) return v == yaml.null end

-- The location (fluence.location) of an error at container[key] (or the
-- container) of this file.
local function at(f, container, key, msg)
  local m = type(container) == "table" and yaml.marks(container)
  local pos = m and (key ~= nil and m.keys and m.keys[key] or m)
  if pos then return location.in_text(f.path, f.text, pos.line, pos.col, msg) end
  return { file = f.path, message = msg }
end

cases.location = at

local function line_of(container, key)
  local m = type(container) == "table" and yaml.marks(container)
  local pos = m and (key ~= nil and m.keys and m.keys[key] or m)
  return pos and pos.line or 1
end

local function unknown_key(f, t, k, allowed)
  local s = require("fluence.suggest").closest(tostring(k), allowed)
  return at(f, t, k, ("unknown key %q%s (expected one of %s)"):format(tostring(k),
            s and (" (did you mean %q?)"):format(s) or "", table.concat(allowed, ", ")))
end

local function check_expect(f, e)
  if not is_map(e) then return at(f, e, nil, "expect must be a mapping (chosen, exit, dropped, notes, error, output)") end
  local any = false
  for k in pairs(e) do
    if not EXPECT_SET[k] then return unknown_key(f, e, k, EXPECT_KEYS) end
    any = true
  end
  if not any then return at(f, e, nil, "expect is empty: say what must happen (chosen, exit, dropped, notes, error)") end
  local c = e.chosen
  if c ~= nil and type(c) ~= "string" and not is_null(c) then
    if not is_map(c) then return at(f, e, "chosen", "expect.chosen must be a backend name, null, or {Kind/name: backend}") end
    for k, v in pairs(c) do
      if type(v) ~= "string" and not is_null(v) then
        return at(f, c, k, ("expect.chosen.%s must be a backend name or null"):format(k))
      end
    end
  end
  if e.exit ~= nil and not (math.type(e.exit) == "integer" and EXITS[e.exit]) then
    return at(f, e, "exit", "expect.exit must be one of fluence's exit codes: 0, 1, 2, 3, 4, 70")
  end
  if e.dropped ~= nil then
    if not is_map(e.dropped) then return at(f, e, "dropped", "expect.dropped must map backend names to reason substrings") end
    for k, v in pairs(e.dropped) do
      if type(v) ~= "string" then return at(f, e.dropped, k, ("expect.dropped.%s must be a string (part of the reason)"):format(k)) end
    end
  end
  if e.notes ~= nil then
    if type(e.notes) == "string" then e.notes = { e.notes } end
    if not is_list(e.notes) then return at(f, e, "notes", "expect.notes must be a list of substrings") end
    for _, v in ipairs(e.notes) do
      if type(v) ~= "string" then return at(f, e, "notes", "expect.notes must be a list of strings") end
    end
  end
  for _, k in ipairs{ "error", "output" } do
    if e[k] ~= nil and type(e[k]) ~= "string" then return at(f, e, k, ("expect.%s must be a string"):format(k)) end
  end
end

local function exists(f, t, key, path)
  local full = project.join(f.base, path)
  if not sys.kind(full) then return at(f, t, key, ("%s: no such file"):format(full)) end
end

-- nil when the keys of c (a case, or the defaults above tests:) are
-- well-formed, else the located message.
local function check_fields(f, c, skip)
  for k in pairs(c) do
    if not CASE_SET[k] and k ~= skip then return unknown_key(f, c, k, CASE_KEYS) end
  end
  local function want(key, ok, what)
    if c[key] ~= nil and not ok(c[key]) then return at(f, c, key, ("%s must be %s"):format(key, what)) end
  end
  local err = want("name", function(v) return type(v) == "string" end, "a string")
    or want("manifest", function(v) return type(v) == "string" end, "a path (relative to this file)")
    or want("object", is_map, "a mapping (a Kubernetes object)")
    or want("attributes", is_list, "a list of attribute files and backends")
    or want("providers", function(v) return type(v) == "string" or is_list(v) end, "a list of provider names")
    or want("policy", function(v) return type(v) == "string" end, "a string (policy text)")
    or want("env", is_map, "a mapping NAME: value")
    or want("http", is_list, "a list of {url, status, body, headers}")
    or want("files", is_map, "a mapping path: text")
    or want("offerings", function(v) return type(v) == "string" or is_map(v) end,
            "the fluence-resources body (text or a mapping)")
    or want("graph", function(v) return type(v) == "string" end, "a path to a JGF graph")
    or want("cost_tol", function(v) return type(v) == "number" or type(v) == "string" end, "a number or N%")
  if err then return err end
  if c.expect ~= nil then
    err = check_expect(f, c.expect)
    if err then return err end
  end
  if c.manifest then
    err = exists(f, c, "manifest", c.manifest)
    if err then return err end
  end
  if c.graph then
    err = exists(f, c, "graph", c.graph)
    if err then return err end
  end
  for _, a in ipairs(c.attributes or {}) do
    if type(a) == "string" then
      err = exists(f, c, "attributes", a)
      if err then return err end
    elseif not is_map(a) then
      return at(f, c, "attributes", "attributes: each entry is a file path or a backend mapping")
    end
  end
  if type(c.providers) == "table" then
    for _, p in ipairs(c.providers) do
      if type(p) ~= "string" then return at(f, c, "providers", "providers: each entry is a provider name") end
    end
  end
  for k, v in pairs(c.env or {}) do
    if type(v) == "table" then return at(f, c.env, k, ("env.%s must be a string"):format(k)) end
  end
  for k, v in pairs(c.files or {}) do
    if type(v) ~= "string" then return at(f, c.files, k, ("files.%s must be the file's text"):format(k)) end
  end
  for i, h in ipairs(c.http or {}) do
    if not is_map(h) then return at(f, c, "http", ("http[%d] must be a mapping {url, status, body, headers}"):format(i - 1)) end
    for k in pairs(h) do
      if not ({ url = true, status = true, body = true, headers = true, error = true })[k] then
        return unknown_key(f, h, k, { "url", "status", "body", "headers", "error" })
      end
    end
    if type(h.url) ~= "string" then return at(f, h, nil, ("http[%d] needs url: (a string)"):format(i - 1)) end
    if h.status ~= nil and math.type(h.status) ~= "integer" then
      return at(f, h, "status", "status must be an HTTP status code")
    end
    if h.headers ~= nil and not is_map(h.headers) then return at(f, h, "headers", "headers must be a mapping") end
    if h.error ~= nil and type(h.error) ~= "string" then return at(f, h, "error", "error must be a string") end
  end
end

-- nil when the case (its own keys over the defaults: merged) is complete.
local function check_complete(f, merged, node)
  if merged.manifest == nil and merged.object == nil then
    return at(f, node, nil, "a case needs manifest: PATH or object: {...}")
  end
  if merged.manifest ~= nil and merged.object ~= nil then
    return at(f, node, node.object ~= nil and "object" or "manifest", "give manifest or object, not both")
  end
  if merged.expect == nil then return at(f, node, nil, "a case needs expect: {chosen: ..., exit: ...}") end
end

local function read(path, text)
  local doc, err = yaml.decode(text, path)
  if doc == nil then
    if err then return nil, err end
    return nil, path .. ": empty file (expected a test case: manifest or object, and expect)"
  end
  local f = { path = path, text = text, base = project.dirname(path), cases = {} }
  if not is_map(doc) then return nil, at(f, doc, nil, "a test file is a mapping (a case, or tests: [cases])") end
  local list = { doc }
  local defaults = {}
  if doc.tests ~= nil then
    if not is_list(doc.tests) or #doc.tests == 0 then
      return nil, at(f, doc, "tests", "tests must be a non-empty list of cases")
    end
    for k, v in pairs(doc) do
      if k ~= "tests" then
        if not CASE_SET[k] or k == "expect" then
          return nil, unknown_key(f, doc, k, { "tests", table.unpack(CASE_KEYS, 1, #CASE_KEYS - 1) })
        end
        defaults[k] = v
      end
    end
    local derr = check_fields(f, doc, "tests")
    if derr then return nil, derr end
    list = doc.tests
  end
  for i, c in ipairs(list) do
    if not is_map(c) then return nil, at(f, doc.tests, nil, ("tests[%d] must be a mapping"):format(i - 1)) end
    local merged = setmetatable({}, getmetatable(c))
    for k, v in pairs(defaults) do merged[k] = v end
    for k, v in pairs(c) do merged[k] = v end
    local cerr = check_fields(f, c, c == doc and "tests" or nil) or check_complete(f, merged, c)
    if cerr then return nil, cerr end
    local name = merged.name or (#list > 1 and ("case %d"):format(i)) or path:match("([^/]*)%.test%.ya?ml$") or path
    f.cases[#f.cases + 1] = { spec = merged, node = c, name = name, line = line_of(c, "name") }
  end
  return f
end

-- A test file's cases, or nil, the message and its location (when known).
function cases.load(path, text)
  local f, err = read(path, text)
  if f then return f end
  if type(err) == "table" then return nil, location.render(err), err end
  return nil, err
end

-- t.select's arguments for a case.
local function select_args(spec)
  local o = {}
  for k, v in pairs(spec) do o[k] = v end
  o.expect, o.name = nil, nil
  if spec.http then
    local map = {}
    for _, h in ipairs(spec.http) do map[h.url] = { status = h.status, body = h.body, headers = h.headers, error = h.error } end
    o.http = map
  end
  if type(spec.offerings) == "table" then o.offerings = json.encode(spec.offerings) end
  o.attributes = spec.attributes
  return o
end

local function first_line(s) return (tostring(s or ""):match("^[^\n]*")) end

-- The unmet expectations of a case: { {line =, message =}, ... }.
local function verify(f, case, res)
  local e, problems = case.spec.expect, {}
  local function bad(key, fmt, ...)
    problems[#problems + 1] = { line = line_of(e, key), message = fmt:format(...) }
  end
  local want_exit = e.exit or 0
  if res.exit ~= want_exit then
    bad(e.exit ~= nil and "exit" or (e.chosen ~= nil and "chosen" or nil),
        "expected exit %d, got %d%s", want_exit, res.exit, res.error and (": " .. first_line(res.error)) or "")
    return problems
  end
  local objects = res.objects
  if type(e.chosen) == "string" or is_null(e.chosen) then
    local want = type(e.chosen) == "string" and e.chosen or nil
    if want and #objects == 0 then
      bad("chosen", "expected %q chosen, but no object was selected for (no Fluence object with a select-policy)", want)
    end
    for _, o in ipairs(objects) do
      if o.chosen ~= want then
        bad("chosen", "%s: expected %s chosen, got %s", o.object, want and ("%q"):format(want) or "nothing",
            o.chosen and ("%q"):format(o.chosen) or "nothing")
      end
    end
  elseif is_map(e.chosen) then
    local by = {}
    for _, o in ipairs(objects) do by[o.object] = o end
    for name, v in pairs(e.chosen) do
      local o, want = by[name], type(v) == "string" and v or nil
      if not o and want then
        local names = {}
        for _, x in ipairs(objects) do names[#names + 1] = x.object end
        bad("chosen", "no selection was made for %s (selected: %s)", name, #names > 0 and table.concat(names, ", ") or "none")
      elseif o and o.chosen ~= want then
        bad("chosen", "%s: expected %s chosen, got %s", name, want and ("%q"):format(want) or "nothing",
            o.chosen and ("%q"):format(o.chosen) or "nothing")
      end
    end
  end
  if e.dropped then
    local names = {}
    for n in pairs(e.dropped) do names[#names + 1] = n end
    table.sort(names)
    for _, n in ipairs(names) do
      local sub = e.dropped[n]
      if #objects == 0 then bad("dropped", "expected %s dropped, but no object was selected for", n) end
      for _, o in ipairs(objects) do
        local why = o.dropped[n]
        if why == nil then
          bad("dropped", "%s: expected %s dropped (%q), but it was %s", o.object, n, sub,
              o.chosen == n and "chosen" or "not dropped")
        elseif not why:find(sub, 1, true) then
          bad("dropped", "%s: %s was dropped with %q, which does not contain %q", o.object, n, why, sub)
        end
      end
    end
  end
  if e.notes then
    local all = {}
    for _, o in ipairs(objects) do for _, n in ipairs(o.notes) do all[#all + 1] = n end end
    for _, w in ipairs(res.warnings or {}) do all[#all + 1] = w end
    for _, sub in ipairs(e.notes) do
      local found = false
      for _, n in ipairs(all) do if n:find(sub, 1, true) then found = true break end end
      if not found then
        bad("notes", "no note contains %q (notes: %s)", sub, #all > 0 and table.concat(all, " | ") or "none")
      end
    end
  end
  if e.error and not tostring(res.error or ""):find(e.error, 1, true) then
    bad("error", "expected an error containing %q, got %s", e.error,
        res.error and ("%q"):format(first_line(res.error)) or "none")
  end
  if e.output and not tostring(res.output or ""):find(e.output, 1, true) then
    bad("output", "expected the output to contain %q", e.output)
  end
  return problems
end

function cases.run(f, report)
  local testing = require "fluence.testing"
  local where = project.of(f.path)
  where.file = f.path
  for _, case in ipairs(f.cases) do
    local t0 = sys.monotonic()
    local r = { file = f.path, line = case.line, name = case.name, status = "pass" }
    local ok, res = pcall(testing.select, select_args(case.spec), where)
    if not ok then
      r.status, r.message = "fail", type(res) == "table" and tostring(res.message or res) or tostring(res)
    else
      local problems = verify(f, case, res)
      if #problems > 0 then
        local msgs = {}
        for i, p in ipairs(problems) do msgs[i] = p.message end
        r.status, r.line, r.message = "fail", problems[1].line, table.concat(msgs, "; ")
      end
    end
    r.time = sys.monotonic() - t0
    report(r)
  end
end

return cases
