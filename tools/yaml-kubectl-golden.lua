-- Records what the installed kubectl makes of every YAML form in
-- spec/fixtures/yaml-kubectl: the ANSWER column of values.tsv and keys.tsv,
-- and docs/NAME.json (or NAME.err) for each docs/NAME.yaml; and of every
-- manifest of the corpus spec/fixtures/realworld: NAME.kubectl.json, a JSON
-- array of the objects kubectl sends, in order.  Run from the
-- repository root after `make` (the specs' helpers need build/lib):
--
--   lua5.4 tools/yaml-kubectl-golden.lua
--
-- kubectl is asked with `kubectl patch --local -p {} --type merge -o json`,
-- which needs no cluster and converts the YAML as `apply` and `create` do
-- before sending (spec/kube_yaml_spec.lua checks that against a real API
-- server).  The answers are kubectl's; nothing here computes one.
package.path = "spec/?.lua;" .. package.path
package.cpath = "build/lib/?.so;" .. package.cpath
local kj = require "support.kubectl_json"
local json = require "fluence.json"

local DIR = "spec/fixtures/yaml-kubectl"
local HEAD = "apiVersion: v1\nkind: Scalars\nmetadata:\n  name: x\nspec:\n"

if not kj.available() then
  io.stderr:write("yaml-kubectl-golden: kubectl is not on PATH\n")
  os.exit(1)
end

-- kubectl's complaint without its prefixes ("error: error parsing STDIN: ...")
local function complaint(err)
  local line = err:match("[^\n]*")
  line = line:gsub("^error: ", "")
  return line:match("error converting YAML to JSON: (.*)$") or line:match("^unable to decode \"STDIN\": (.*)$") or line
end

local function spec_of(out)
  for _, m in ipairs(kj.members(out)) do
    if m.key == "spec" then return kj.members(m.raw) end
  end
  return {}
end

local function rewrite(file, answer)
  local lines = {}
  for line in assert(io.open(file, "rb")):lines() do
    if not line:match("^#") and line ~= "" then
      local form = line:match("^(.-)\t")
      line = form .. "\t" .. answer(form)
    end
    lines[#lines + 1] = line
  end
  local f = assert(io.open(file, "wb"))
  f:write(table.concat(lines, "\n"), "\n")
  f:close()
end

rewrite(DIR .. "/values.tsv", function(form)
  local r = kj.local_json(HEAD .. "  v: " .. form .. "\n")
  if r.code ~= 0 then return "error: " .. complaint(r.err) end
  local spec = spec_of(r.out)
  assert(#spec == 1 and spec[1].key == "v", "unexpected answer for " .. form .. ": " .. r.out)
  return spec[1].raw
end)

rewrite(DIR .. "/keys.tsv", function(form)
  local r = kj.local_json(HEAD .. "  " .. form .. ": v\n")
  if r.code ~= 0 then return "error: " .. complaint(r.err) end
  local spec = spec_of(r.out)
  assert(#spec == 1, "unexpected answer for " .. form .. ": " .. r.out)
  return json.encode(spec[1].key)
end)

local p = io.popen("ls " .. DIR .. "/docs/*.yaml")
for path in p:lines() do
  local r = kj.local_json(assert(io.open(path, "rb")):read("a"))
  local base = path:gsub("%.yaml$", "")
  os.remove(base .. ".json")
  os.remove(base .. ".err")
  local f
  if r.code == 0 then
    f = assert(io.open(base .. ".json", "wb"))
    f:write(kj.compact(r.out), "\n")
  else
    f = assert(io.open(base .. ".err", "wb"))
    f:write(complaint(r.err), "\n")
  end
  f:close()
end
p:close()

-- the corpus: every object of every file, as kubectl sends it
p = io.popen("find spec/fixtures/realworld -name '*.yaml' -o -name '*.json' | grep -v '\\.kubectl\\.json$' | sort")
for path in p:lines() do
  if not path:match("attributes%.yaml$") then
    local r = kj.local_json(assert(io.open(path, "rb")):read("a"))
    assert(r.code == 0, path .. ": " .. r.err)
    local f = assert(io.open(path:gsub("%.%w+$", ".kubectl.json"), "wb"))
    f:write("[\n", table.concat(kj.split(r.out), ",\n"), "\n]\n")
    f:close()
  end
end
p:close()
