-- The earlier Go client's recorded selections (spec/fixtures/conformance/go-client/
-- selections.json, a copy of the shared conformance corpus): for every case
-- our pipeline must agree on success versus failure, on the chosen backend,
-- on the surviving list when recorded, and on which stage failed.
local json = require "fluence.json"
local sys = require "fluence.sys"
local plugins = require "fluence.plugins"
local pipeline = require "fluence.pipeline"
local attrfile = require "support.attrfile"

local root = os.getenv("PWD")
local cases = assert(json.decode(assert(sys.read_file((os.getenv("FLUENCE_CONFORMANCE") or (root .. "/spec/fixtures/conformance")) .. "/go-client/selections.json"))))
local reg = plugins.load_policies{ source_dir = root, home = "", path = "" }

describe("Go client conformance", function()
  it("has the 60 recorded cases", function()
    assert.are.equal(60, #cases)
  end)

  for i, case in ipairs(cases) do
    local req = attrfile.request(case.job)
    it(("case %d: %s (tol %s)"):format(i - 1, req.policy, tostring(case.tol)), function()
      local backends = attrfile.backends(case.attrs, req)
      local pl, err = pipeline.compile(req.policy, { policies = reg, cost_tol = case.tol })
      assert.is_nil(err)
      local r = pl:run(backends, req)
      if case.rc == 0 then
        assert.is_true(r.ok, r.error)
        assert.are.equal(case.chosen, r.chosen)
        if case.survivors ~= nil and case.survivors ~= json.null then
          local names = {}
          for j, b in ipairs(r.survivors) do names[j] = b.name end
          assert.are.same(case.survivors, names)
        end
      else
        assert.is_false(r.ok)
        assert.is_nil(r.chosen)
        assert.is_falsy(r.plugin_error)
        -- the same stage fails: Go says `policy "STAGE": ...`
        local go_stage = case.err:match('selection failed: policy "([^"]+)"')
        assert.are.equal(go_stage, r.error:match('^policy "([^"]+)"'))
        if case.err:find("no candidate has attribute", 1, true) then
          local attr, missing = case.err:match('no candidate has attribute "([^"]+)" %(missing: ([^)]*)%)')
          assert.are.equal(('policy "%s": no candidate has attribute "%s" (missing: %s)')
            :format(go_stage, attr, (missing:gsub(",", ", "))), r.error)
        end
      end
    end)
  end
end)
