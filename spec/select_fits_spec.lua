-- The fits policy end to end: backends' resource graphs from the attribute
-- file's graph: entries; the cheapest backend cannot hold the gang.
local cli = require "support.cli"
local yaml = require "fluence.yaml"

local DIR = cli.root .. "/spec/fixtures/fits"

describe("select with fits", function()
  it("drops the backend too small for the gang and says why", function()
    local r = cli.run{ "select", "-f", DIR .. "/gang.yaml", "--attributes", DIR .. "/attributes.yaml", "--offline",
                       env = { HOME = "/nonexistent" } }
    assert.are.equal(0, r.code, r.err)
    local doc = yaml.decode(r.out)
    assert.are.equal("roomy", doc.spec.template.metadata.annotations["fluence.flux-framework.org/require-backend"])
    assert.matches("  dropped tiny: [^\n]*fit", r.err)
  end)

  it("fails when nothing can hold the gang", function()
    local dir = cli.tmpdir()
    local attrs = cli.write(dir .. "/a.yaml", "backends:\n- name: tiny\n  graph: " .. DIR .. "/one-node.json\n" ..
                            "  attributes: {cost_usd: 1}\n")
    local r = cli.run{ "select", "-f", DIR .. "/gang.yaml", "--attributes", attrs, "--offline",
                       env = { HOME = "/nonexistent" } }
    cli.cleanup()
    assert.are.equal(1, r.code)
    assert.are.equal("", r.out)
    assert.matches('policy "fits"', r.err)
  end)
end)
