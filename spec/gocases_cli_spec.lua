-- Every recorded selection of the earlier Go client (spec/fixtures/
-- conformance/go-client/selections.json), run through bin/fluence select with the case's
-- attribute file and manifest written out as YAML: fluence must agree on
-- success versus failure and on the chosen backend (and, where recorded, the
-- final candidate list in the audit).
local cli = require "support.cli"
local json = require "fluence.json"
local toyaml = require "support.toyaml"

local CORPUS = os.getenv("FLUENCE_CONFORMANCE") or (cli.root .. "/spec/fixtures/conformance")
local path = CORPUS .. "/go-client/selections.json"
local text = assert(cli.slurp(path), "the vendored corpus is missing: " .. path)

describe("the Go client's recorded selections", function()
  local cases = assert(json.decode(text, path))
  local dir
  setup(function() dir = cli.tmpdir() end)
  teardown(cli.cleanup)

  for i, case in ipairs(cases) do
    local name = case.job.metadata.name
    it(("case %d (%s): %s"):format(i - 1, name,
       case.job.metadata.annotations["fluence.flux-framework.org/select-policy"]), function()
      local attrs = cli.write(("%s/attrs-%d.yaml"):format(dir, i), toyaml.encode(case.attrs))
      local job = cli.write(("%s/job-%d.yaml"):format(dir, i), toyaml.encode(case.job))
      local r = cli.run{ "select", "-f", job, "--attributes", attrs, "--cost-tol", tostring(case.tol),
                         "--offline", env = { HOME = dir } }
      if case.rc == 0 then
        assert.are.equal(0, r.code, r.err)
        local doc = require("fluence.yaml").decode(r.out)
        local ann = doc.metadata.annotations
        assert.are.equal(case.chosen, ann["fluence.flux-framework.org/require-backend"])
        if case.survivors ~= json.null then
          local audit = json.decode(ann["fluence.flux-framework.org/select-result"])
          local names = {}
          for j, c in ipairs(audit.candidates) do names[j] = c.name end
          assert.are.same(case.survivors, names)
        end
      else
        assert.are.equal(1, r.code, r.err)
        assert.are.equal("", r.out)
        assert.matches("selection failed", r.err, 1, true)
      end
    end)
  end
end)
