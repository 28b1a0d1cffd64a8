-- Canonical jobspec v1 parsing and validation (fluence.match.parse_jobspec):
-- valid YAML and JSON jobspecs, and invalid ones with the exact message,
-- which always names the offending path.
local match = require "fluence.match"

local function yaml(count)
  return ([[
version: 1
resources:
  - type: node
    count: 1
    with:
      - type: slot
        count: 1
        label: default
        with:
          - type: core
            count: 2
          - type: memory
            count: %s
attributes:
  system:
    duration: 3600
tasks:
  - command: ["app"]
    slot: default
    count:
      per_slot: 1
]]):format(count)
end

local function json(over)
  local t = {
    version = '1',
    resources = '[{"type": "node", "count": 1}]',
    tasks = '[{"command": ["x"], "slot": "s", "count": {"per_slot": 1}}]',
  }
  for k, v in pairs(over or {}) do t[k] = v end
  local parts = {}
  for _, k in ipairs { "version", "resources", "tasks", "attributes", "extra" } do
    if t[k] then parts[#parts + 1] = ('"%s": %s'):format(k, t[k]) end
  end
  return "{" .. table.concat(parts, ", ") .. "}"
end

describe("match.parse_jobspec", function()
  it("reads the corpus jobspecs", function()
    local dir = (os.getenv("PWD")) .. "/spec/fixtures/conformance/fluxion/jobspecs/basics/"
    for _, f in ipairs { "test001.yaml", "test002.yaml", "test003.yaml", "test004.yaml" } do
      local fh = assert(io.open(dir .. f))
      do
        local t, err = match.parse_jobspec(fh:read("a"), f)
        fh:close()
        assert.is_table(t, err)
        assert.are.equal(9999, t.version)
      end
    end
  end)

  it("returns the canonical structure", function()
    local t = assert(match.parse_jobspec(yaml("{min: 2, max: 8, operator: '*', operand: 2}"), "t.yaml"))
    assert.are.same({ type = "node", count = 1, with = { {
      type = "slot", count = 1, label = "default",
      with = { { type = "core", count = 2 },
               { type = "memory", count = { min = 2, max = 8, operator = "*", operand = 2 } } } } } },
      t.resources[1])
    assert.are.equal(3600, t.attributes.system.duration)
    assert.are.same({ { slot = "default", count = { per_slot = 1 } } }, t.tasks)
  end)

  it("accepts JSON, exclusive, min-only counts and RFC 31 constraints", function()
    local t = assert(match.parse_jobspec(json {
      resources = '[{"type": "node", "count": {"min": 2}, "exclusive": true}]',
      attributes = '{"system": {"duration": 10.5, "constraints": {"and": [{"properties": ["a", "^b"]}, {"not": [{"hostlist": ["node[1-2]"]}]}]}}, "user": {"x": 1}}',
    }, "j.json"))
    assert.are.same({ min = 2 }, t.resources[1].count)
    assert.is_true(t.resources[1].exclusive)
    assert.are.equal(10.5, t.attributes.system.duration)
    assert.is_table(t.attributes.system.constraints["and"])
  end)

  local bad_counts = {
    { "abc", "resources[0].with[0].with[1].count: must be an unsigned integer or a {min,max,operator,operand} mapping" },
    { "-1", "resources[0].with[0].with[1].count: must be an unsigned integer or a {min,max,operator,operand} mapping" },
    { "1.5", "resources[0].with[0].with[1].count: must be an unsigned integer or a {min,max,operator,operand} mapping" },
    { "[1]", "resources[0].with[0].with[1].count: must be an unsigned integer or a {min,max,operator,operand} mapping" },
    { "0", "resources[0].with[0].with[1].count: must be at least 1" },
    { "{max: 3}", "resources[0].with[0].with[1].count: min is required" },
    { "{min: 0}", "resources[0].with[0].with[1].count.min: must be an unsigned integer >= 1" },
    { "{min: 2, max: 4}", "resources[0].with[0].with[1].count: max, operator and operand must be given together" },
    { "{min: 4, max: 2, operator: '+', operand: 1}", "resources[0].with[0].with[1].count.max: must be >= min" },
    { "{min: 2, max: 8, operator: '/', operand: 2}", "resources[0].with[0].with[1].count.operator: must be one of +, *, ^" },
    { "{min: 2, max: 8, operator: '+', operand: 0}", "resources[0].with[0].with[1].count.operand: must be >= 1 for operator +" },
    { "{min: 2, max: 8, operator: '*', operand: 1}", "resources[0].with[0].with[1].count.operand: must be >= 2 for operator *" },
    { "{min: 1, max: 8, operator: '^', operand: 2}", "resources[0].with[0].with[1].count.min: must be >= 2 for operator ^" },
    { "{min: 2, max: 8, operator: '+', operand: 1, step: 1}", "resources[0].with[0].with[1].count.step: unknown key (expected min, max, operator, operand)" },
  }
  for _, c in ipairs(bad_counts) do
    it("rejects count " .. c[1], function()
      local t, err = match.parse_jobspec(yaml(c[1]), "test.yaml")
      assert.is_nil(t)
      assert.are.equal("test.yaml: " .. c[2], err)
    end)
  end

  local bad = {
    { { version = "0" }, "version: must be an integer from 1 to 9999" },
    { { version = '"1"' }, "version: must be an integer from 1 to 9999" },
    { { extra = "1" }, "extra: unknown key (expected version, resources, tasks, attributes)" },
    { { resources = "[]" }, "resources: must not be empty" },
    { { resources = "{}" }, "resources: must be a list of resources" },
    { { resources = '[{"count": 1}]' }, "resources[0]: type is required" },
    { { resources = '[{"type": "node"}]' }, "resources[0]: count is required" },
    { { resources = '[{"type": "node", "count": 1, "size": 2}]' },
      "resources[0].size: unknown key (expected type, count, unit, exclusive, with, label, id)" },
    { { resources = '[{"type": "node", "count": 1, "exclusive": "yes"}]' }, "resources[0].exclusive: must be a boolean" },
    { { resources = '[{"type": "slot", "count": 1, "with": [{"type": "core", "count": 1}]}]' },
      "resources[0]: label is required on a slot" },
    { { resources = '[{"type": "slot", "count": 1, "label": "s"}]' },
      "resources[0]: a slot must have resources under with" },
    { { resources = '[{"type": "node", "count": 1, "with": []}]' }, "resources[0].with: must not be empty" },
    { { tasks = "[]" }, "tasks: must not be empty" },
    { { tasks = '[{"slot": "s", "count": {"per_slot": 1}}]' }, "tasks[0]: command is required" },
    { { tasks = '[{"command": ["x"], "count": {"per_slot": 1}}]' }, "tasks[0]: slot is required" },
    { { tasks = '[{"command": ["x"], "slot": "s", "count": {"per_slot": 1, "total": 2}}]' },
      "tasks[0].count: must have exactly one of per_slot or total" },
    { { tasks = '[{"command": ["x"], "slot": "s", "count": {"per_slot": 0}}]' },
      "tasks[0].count.per_slot: must be a positive integer" },
    { { tasks = '[{"command": ["x"], "slot": "s", "count": {"per_slot": 1}, "env": {}}]' },
      "tasks[0].env: unknown key (expected command, slot, count, distribution, attributes)" },
    { { attributes = '{"foo": {}}' }, "attributes.foo: unknown key (expected user or system)" },
    { { attributes = '{"system": {"duration": -1}}' }, "attributes.system.duration: must be a number of seconds >= 0" },
    { { attributes = '{"system": {"constraints": {"propertie": ["a"]}}}' },
      "attributes.system.constraints.propertie: unknown constraint operator (expected properties, hostlist, ranks, and, or, not)" },
    { { attributes = '{"system": {"constraints": {"properties": "a"}}}' },
      "attributes.system.constraints.properties: must be a list" },
    { { attributes = '{"system": {"constraints": {"properties": ["a|b"]}}}' },
      "attributes.system.constraints.properties[0]: invalid property name" },
  }
  for _, c in ipairs(bad) do
    it("rejects: " .. c[2], function()
      local t, err = match.parse_jobspec(json(c[1]), "j.json")
      assert.is_nil(t)
      assert.are.equal("j.json: " .. c[2], err)
    end)
  end

  it("reports YAML syntax errors with a location", function()
    local t, err = match.parse_jobspec("version: 1\nresources: [\n", "c.yaml")
    assert.is_nil(t)
    assert.matches("^c%.yaml: 3:1: YAML error: ", err)
  end)

  it("requires version, resources and tasks", function()
    assert.are.equal("x: version is required", select(2, match.parse_jobspec("resources: []\n", "x")))
    assert.are.equal("x: resources is required", select(2, match.parse_jobspec("version: 1\n", "x")))
    assert.are.equal("x: the top level of a jobspec must be a mapping", select(2, match.parse_jobspec("- 1\n", "x")))
  end)
end)
