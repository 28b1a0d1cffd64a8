-- Dispatches a parsed command line (core/clispec.c) to the verb's module,
-- lua/fluence/cmd/<verb>.lua, whose run(args) returns an exit code.
local sys = require "fluence.sys"
local errors = require "fluence.errors"

local cli = {}

local verb_modules = {
  select = "fluence.cmd.select", apply = "fluence.cmd.apply", create = "fluence.cmd.apply",
  run = "fluence.cmd.select", explain = "fluence.cmd.explain", match = "fluence.cmd.match",
  jobspec = "fluence.cmd.jobspec", policies = "fluence.cmd.plugins",
  providers = "fluence.cmd.plugins", completion = "fluence.cmd.completion", graph = "fluence.cmd.graph",
  test = "fluence.cmd.test", check = "fluence.cmd.check", new = "fluence.cmd.new",
  fn = "fluence.cmd.fn", prices = "fluence.cmd.prices", rbac = "fluence.cmd.rbac", diff = "fluence.cmd.diff",
}

function cli.main(args)
  require("fluence.log").setup(args)
  if args.verb == "version" then
    sys.write(1, ("fluence %s (%s)\n"):format(sys.VERSION, _VERSION))
    return sys.EXIT.OK
  end
  if args.opts["plugin-timeout"] ~= nil then
    require("fluence.sandbox").set_time_limit(args.opts["plugin-timeout"], "--plugin-timeout")
  end
  local name = verb_modules[args.verb]
  local ok, mod = pcall(require, name)
  if not ok then
    if tostring(mod):find("module '" .. name .. "' not found", 1, true) then
      errors.raise("USAGE", "%s: not available in this build", args.verb)
    end
    error(mod, 0)
  end
  return mod.run(args) or sys.EXIT.OK
end

return cli
