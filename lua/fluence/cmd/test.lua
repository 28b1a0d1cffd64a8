-- `fluence test [PATH...]`: run plugin authors' tests -- busted specs
-- (*_spec.lua, with fluence's built-in runner) and declarative cases
-- (*.test.yaml) -- found recursively under each PATH (default .), in
-- process.  Prints one line per failure (FILE:LINE: NAME: message) and, last,
-- "N passed, M failed"; -o junit / -o tap write JUnit XML / TAP instead
-- (the failure lines and the summary then go to stderr).  --coverage adds,
-- per plugin file, the lines the tests ran and missed (testing/coverage.lua);
-- --coverage-min PERCENT fails the run (exit 1) below that.
--
-- Exit: 0 all passed, 1 some failed, 2 usage (no tests found ...), 3 a
-- malformed test file (a YAML or Lua error, an unknown key, a missing
-- manifest) or a plugin of the tested projects that does not load: every
-- such file is reported once, located, and nothing runs.
local sys = require "fluence.sys"
local errors = require "fluence.errors"
local project = require "fluence.testing.project"
local report = require "fluence.testing.report"

local cmd = {}

local function kind_of(name)
  if name:match("_spec%.lua$") then return "spec" end
  if name:match("%.test%.ya?ml$") then return "cases" end
end

-- Test files under path: { {path =, kind =}, ... } in a stable order.
-- Hidden directories are skipped; a directory reached twice (links) once.
local function discover(path, out, seen)
  local kind = sys.kind(path)
  if not kind then errors.raise("INPUT", "%s: no such file or directory", path) end
  if kind == "file" then
    local k = kind_of(path) or (path:match("%.lua$") and "spec") or (path:match("%.ya?ml$") and "cases")
    if not k then
      errors.raise("USAGE", "test: %s is not a test file (NAME_spec.lua or NAME.test.yaml)", path)
    end
    out[#out + 1] = { path = path, kind = k }
    return
  end
  if kind == "dir" then project.files_under(path, kind_of, out, seen) end
end

local FORMATS = { text = true, junit = true, tap = true }

-- The plugin files the tests are about: those of every test file's project
-- and of --policy-dir/--provider-dir (the built-ins are fluence's own):
-- { {path =, kind = "policy" | "provider"}, ... }
local function plugin_files(tests)
  local dirs, seen_dir, out, seen = {}, {}, {}, {}
  local function add_dirs(list, kind)
    for _, d in ipairs(list) do
      if not seen_dir[d] then seen_dir[d] = true; dirs[#dirs + 1] = { dir = d, kind = kind } end
    end
  end
  for _, f in ipairs(tests) do
    local p = project.of(f.path)
    add_dirs(p.policy_dirs, "policy")
    add_dirs(p.provider_dirs, "provider")
  end
  for _, d in ipairs(dirs) do
    local names = sys.list_dir(d.dir) or {}
    table.sort(names)
    for _, n in ipairs(names) do
      local path = d.dir .. "/" .. n
      local kind, id = sys.kind(path)
      if n:match("^[^.].*%.lua$") and kind == "file" and not seen[id] then
        seen[id] = true
        out[#out + 1] = { path = path, kind = d.kind }
      end
    end
  end
  return out
end

-- Each plugin file loaded once, before any test: one that does not load
-- (a syntax error, a missing export) is reported once, located, instead of
-- failing every test that reaches it with the same message.
local function broken_plugins(list)
  local plugins = require "fluence.plugins"
  local api = require("fluence.provider_api").new{ overrides = require("fluence.testing.stubs").new{}.api }
  local bad = {}
  for _, pf in ipairs(list) do
    local ok, e = errors.try(plugins.load_file, pf.kind, pf.path, { api = api })
    if not ok then bad[#bad + 1] = e.message end
  end
  return bad
end

function cmd.run(args)
  local opts = args.opts
  local fmt = opts.output or "text"
  if not FORMATS[fmt] then errors.raise("USAGE", "test: unknown output format %q (text, junit or tap)", fmt) end
  -- usage first: a bad option is exit 2 whatever the tests hold (the C
  -- parser checks the number; the upper bound is this verb's)
  local min = opts["coverage-min"] and tonumber(opts["coverage-min"])
  if min and min > 100 then
    errors.raise("USAGE", "test: --coverage-min: %q is not a percentage from 0 to 100", opts["coverage-min"])
  end
  local paths = #args.positional > 0 and args.positional or { "." }
  local files, seen = {}, {}
  for _, p in ipairs(paths) do discover(p, files, seen) end
  if #files == 0 then
    errors.raise("USAGE", "test: no tests found in %s (files named NAME_spec.lua or NAME.test.yaml)",
                 table.concat(paths, ", "))
  end
  project.options = { policy_dirs = opts["policy-dir"] or {}, provider_dirs = opts["provider-dir"] or {} }
  -- -v lists every test; -vv adds what selections log (providers, timings)
  local verbose = opts.verbose or 0
  require("fluence.log").setup{ opts = { verbose = math.max(0, verbose - 1) } }

  -- Everything is read and checked before anything runs.
  local testing = require "fluence.testing"
  local runner = require "fluence.testing.runner"
  local cases = require "fluence.testing.cases"
  local loaded, bad = {}, {}
  for _, f in ipairs(files) do
    local text, err = sys.read_file(f.path)
    local obj
    if text then
      testing.reset()
      if f.kind == "spec" then obj, err = runner.load(f.path, text) else obj, err = cases.load(f.path, text) end
    end
    if obj then loaded[#loaded + 1] = { kind = f.kind, file = obj }
    else bad[#bad + 1] = err end
  end
  local plugin_list = plugin_files(files)
  for _, m in ipairs(broken_plugins(plugin_list)) do bad[#bad + 1] = m end
  if #bad > 0 then
    for _, m in ipairs(bad) do sys.write(2, "fluence: " .. tostring(m) .. "\n") end
    return sys.EXIT.INPUT
  end

  -- --coverage: every line a plugin runs from here on is counted
  local coverage = (opts.coverage or min) and require "fluence.testing.coverage"
  if coverage then coverage.start() end

  local results = {}
  local function add(r) results[#results + 1] = r end
  for _, l in ipairs(loaded) do
    testing.reset()
    if l.kind == "spec" then runner.run(l.file, add) else cases.run(l.file, add) end
  end
  testing.reset()

  local failed = false
  for _, r in ipairs(results) do if r.status == "fail" then failed = true end end
  if fmt == "text" then
    sys.write(1, report.text(results, verbose > 0))
  else
    sys.write(1, fmt == "junit" and report.junit(results) or report.tap(results))
    sys.write(2, report.text(results, verbose > 0))
  end
  if coverage then
    coverage.stop()
    local paths = {}
    for i, pf in ipairs(plugin_list) do paths[i] = pf.path end
    local rep = coverage.report(paths)
    sys.write(fmt == "text" and 1 or 2, coverage.text(rep))
    if min and rep.percent < min then
      sys.write(2, ("fluence: test: the tests ran %.1f%% of the plugins' lines, below --coverage-min %s\n")
                   :format(rep.percent, opts["coverage-min"]))
      failed = true
    end
  end
  return failed and sys.EXIT.SELECT or sys.EXIT.OK
end

return cmd
