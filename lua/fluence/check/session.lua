-- What one `fluence check` run shares between its checkers (one per kind of
-- file, lua/fluence/check/*.lua): the problems found, each said once and
-- kept as a location (fluence.location) so it can be shown as text or as
-- JSON fields; what was checked; the policy registries per project; the
-- attribute names --attributes gives; the provider API a plugin sees while
-- it loads (no network, no environment).
--
--   local s = session.new(opts)
--   s:error(problem [, file]), s:warn(problem [, file])
--       problem: a location, a structured error (its .location, else its
--       message), or a message; file: the file it is about, when the
--       message does not say where
--   s.stats.manifest | policies | plugin | spec | cases   (counts)
--   s:policies_for(path) -> registry | nil (a plugin on its path does not load)
--   s:compile(path, text, name) -> pipeline | nil, err
--   s:unread(pipeline) -> sorted attribute names no backend has | nil
--   s:report(format) -> exit code   writes the problems (stderr, or JSON on stdout)
local sys = require "fluence.sys"
local errors = require "fluence.errors"
local plugins = require "fluence.plugins"
local project = require "fluence.testing.project"
local location = require "fluence.location"

local M = {}

local Session = {}
Session.__index = Session

function M.new(opts)
  local s = setmetatable({ opts = opts, problems = {}, said = {}, errors = 0, warnings = 0, registries = {},
                           stats = { manifest = 0, policies = 0, plugin = 0, spec = 0, cases = 0 } }, Session)
  -- the provider API a plugin sees while it loads: no network, no environment
  s.api = require("fluence.provider_api").new{ overrides = require("fluence.testing.stubs").new{}.api }
  return s
end

-- A problem as a location: what it says and, when known, where.
local function as_location(p, file)
  if type(p) == "table" and p.location then return p.location end
  if errors.is(p) then p = p.message end
  if type(p) == "table" then return p end
  return { file = file, message = tostring(p), text_only = true }
end

function Session:add(severity, p, file)
  local loc = as_location(p, file)
  -- a message said once (a broken plugin is met both as a file and while
  -- loading the registry)
  local text = loc.text_only and loc.message or location.render(loc)
  if self.said[text] then return end
  self.said[text] = true
  if severity == "error" then self.errors = self.errors + 1 else self.warnings = self.warnings + 1 end
  self.problems[#self.problems + 1] = { severity = severity, location = loc, text = text }
end

function Session:error(p, file) self:add("error", p, file) end
function Session:warn(p, file) self:add("warning", p, file) end

function Session:policies_for(path)
  local p = project.of(path)
  local key = table.concat(p.policy_dirs, "\0")
  if self.registries[key] == nil then
    local ok, reg = errors.try(plugins.load_policies, { dirs = p.policy_dirs })
    if not ok then
      self:error(reg)
      self:error("select-policy annotations were not checked: a policy plugin on the search path does not load (above)")
      reg = false
    end
    self.registries[key] = reg
  end
  return self.registries[key] or nil
end

-- --attributes: the backends' attribute names (self.known), and those
-- providers provide (self.provided); nil without --attributes.  The file
-- provider reads the files as select would.
function Session:attributes()
  local opts = self.opts
  if self.known ~= nil or not (opts.attributes and #opts.attributes > 0) then return end
  self.known, self.provided = {}, {}
  local ok, err = errors.try(function()
    local reg = plugins.load_providers{ dirs = opts["provider-dir"], api = self.api }
    for _, e in ipairs(reg.list) do
      for _, a in ipairs(e.plugin.provides or {}) do self.provided[a] = true end
    end
    local ctx = require("fluence.sandbox").readonly{ request = { shots = 1000, pods = 1 },
                                                      options = { attributes = opts.attributes },
                                                      api = require("fluence.provider_api").new{}, backends = {} }
    local list = require("fluence.provider_host").call(reg.get("file"), ctx)
    for _, b in ipairs(list or {}) do
      for k in pairs(b.attrs or {}) do self.known[k] = true end
    end
  end)
  if not ok then self:error(err) end
end

-- --provider: as select would, it must name a provider (or a family).  It
-- is loaded, not run: check reaches no network.
function Session:providers()
  local opts = self.opts
  if not (opts.provider and #opts.provider > 0) then return end
  local ok, reg = errors.try(plugins.load_providers, { dirs = opts["provider-dir"], api = self.api })
  if not ok then return self:error(reg) end
  local names = {}
  for _, e in ipairs(reg.list) do names[#names + 1] = e.name end
  for _, n in ipairs(opts.provider) do
    if not require("fluence.provider_host").find(reg, n) then
      local guess = require("fluence.suggest").closest(n, names)
      self:error(errors.format("--provider %q: unknown provider%s (see 'fluence providers')", n,
                               guess and errors.format(" (did you mean %q?)", guess) or ""))
    end
  end
end

function Session:compile(path, text, name)
  local reg = self:policies_for(path)
  if not reg then return nil end
  local known
  if self.known then
    known = {}
    for k in pairs(self.known) do known[#known + 1] = k end
    table.sort(known)
  end
  local pl, err = require("fluence.pipeline").compile(text, { policies = reg, name = name, known_attributes = known })
  self.stats.policies = self.stats.policies + 1
  return pl, err
end

function Session:unread(pl)
  if not self.known or not pl then return nil end
  local list = {}
  for a in pairs(pl:attributes()) do
    if not self.known[a] and not self.provided[a] then list[#list + 1] = a end
  end
  table.sort(list)
  return #list > 0 and list or nil
end

-- The problems, then the summary: text (problems on stderr, the summary
-- on stdout unless there are errors) or JSON on stdout.  Exit 3 with errors.
function Session:report(format)
  local stats = self.stats
  local code = self.errors > 0 and sys.EXIT.INPUT or sys.EXIT.OK
  if format == "json" then
    local json = require "fluence.json"
    local list = {}
    for i, p in ipairs(self.problems) do
      local f = location.fields(p.location)
      list[i] = setmetatable({ severity = p.severity, file = f.file, line = f.line, column = f.column,
                               message = p.location.text_only and p.text:match("^[^\n]*") or f.message },
                             { __order = { "severity", "file", "line", "column", "message" } })
    end
    local doc = setmetatable({
      problems = json.array(list), errors = self.errors, warnings = self.warnings,
      checked = setmetatable({ manifest_files = stats.manifest, policies = stats.policies, plugins = stats.plugin,
                               specs = stats.spec, test_files = stats.cases },
                             { __order = { "manifest_files", "policies", "plugins", "specs", "test_files" } }),
    }, { __order = { "problems", "errors", "warnings", "checked" } })
    sys.write(1, json.encode(doc, { indent = 2 }) .. "\n")
    return code
  end
  local out = {}
  for i, p in ipairs(self.problems) do
    out[i] = "fluence: " .. (p.severity == "warning" and "warning: " or "") .. p.text .. "\n"
  end
  sys.write(2, table.concat(out))
  if self.errors > 0 then return code end
  local plural = require "fluence.plural"
  sys.write(1, ("checked %s (%s), %s, %s, %s: %s\n"):format(
    plural(stats.manifest, "manifest file"), plural(stats.policies, "policy", "policies"),
    plural(stats.plugin, "plugin"), plural(stats.spec, "spec"), plural(stats.cases, "test file"),
    self.warnings > 0 and plural(self.warnings, "warning") or "no problems"))
  return code
end

return M
