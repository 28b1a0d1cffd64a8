-- `fluence new policy|provider NAME [--dir DIR]`: start a plugin -- a
-- commented plugin file, a busted spec and a *.test.yaml (lua/fluence/
-- scaffold.lua) that pass `fluence test DIR` as written.  DIR defaults to
-- ~/.fluence, where select finds plugins without options:
--
--   DIR/policies/NAME.lua (or providers/)   DIR/tests/NAME_spec.lua   DIR/tests/NAME.test.yaml
--
-- Nothing is overwritten: when any of the three exists, nothing is written.
local sys = require "fluence.sys"
local errors = require "fluence.errors"
local scaffold = require "fluence.scaffold"
-- the kinds, their directories and the name rule: the plugin contract's
local contract = require "fluence.plugin_contract"

local cmd = {}

local KINDS = contract.kinds

-- mkdir -p
local function make_dirs(path)
  local prefix = path:sub(1, 1) == "/" and "/" or ""
  local acc = prefix
  for part in path:gmatch("[^/]+") do
    acc = (acc == "" or acc == "/") and (acc .. part) or (acc .. "/" .. part)
    local ok, err = sys.mkdir(acc)
    if not ok then errors.raise("INPUT", "new: cannot create %s", err) end
  end
end

function cmd.run(args)
  local kind, name = args.positional[1], args.positional[2]
  local prog = args.prog or "fluence"
  if not kind or not KINDS[kind] then
    errors.raise("USAGE", "new: what to create? (%s new policy NAME or %s new provider NAME)", prog, prog)
  end
  if not name then errors.raise("USAGE", "new: %s needs a NAME (%s new %s NAME)", kind, prog, kind) end
  if #args.positional > 2 then errors.raise("USAGE", "new: unexpected argument %q", args.positional[3]) end
  if not name:match(contract.NAME) then
    errors.raise("USAGE", "new: bad %s name %q (%s)", kind, name, contract.NAME_RULE)
  end
  local dir = args.opts.dir
  if not dir then
    local home = sys.home()
    if not home or home == "" then errors.raise("USAGE", "new: no home directory: give --dir DIR") end
    dir = home .. "/.fluence"
  end
  dir = dir:gsub("(.)/+$", "%1")
  local files = scaffold.files(kind, name)
  for _, f in ipairs(files) do
    f.full = dir .. "/" .. f.path
    if sys.kind(f.full) then
      errors.raise("INPUT", "new: %s already exists; nothing was written (choose another NAME or --dir)", f.full)
    end
  end
  for _, f in ipairs(files) do
    make_dirs(f.full:match("^(.*)/[^/]*$"))
    local ok, err = sys.write_file(f.full, f.text)
    if not ok then errors.raise("INPUT", "new: cannot write %s", err) end
  end
  local lines = {}
  for _, f in ipairs(files) do lines[#lines + 1] = "created " .. f.full end
  lines[#lines + 1] = ("next: %s test %s"):format(prog, dir)
  if kind == "provider" then
    lines[#lines + 1] = ("use:  %s=URL %s select -f job.yaml --provider %s"):format(scaffold.env_name(name), prog, name)
  else
    lines[#lines + 1] = ('use:  fluence.flux-framework.org/select-policy: "%s:2.5"'):format(name)
  end
  if args.opts.dir then     -- ~/.fluence is on the search path already; DIR is not
    local k = KINDS[kind]
    lines[#lines + 1] = ("      with %s %s/%s (or %s)"):format(k.option, dir, k.dir, k.env)
  end
  local builtin = sys.embedded(KINDS[kind].dir .. "/" .. name .. ".lua")
  if builtin then
    sys.write(2, ("fluence: note: %s %q replaces the built-in of that name wherever %s is on the search path\n")
                 :format(kind, name, dir))
  end
  sys.write(1, table.concat(lines, "\n") .. "\n")
  return sys.EXIT.OK
end

return cmd
