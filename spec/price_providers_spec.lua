-- The price providers (azure-prices, aws-prices, gcp-prices) through
-- bin/fluence, against stand-ins for the three APIs in their real shapes
-- (spec/support/prices_server.py: paging, PriceList strings, the XML spot
-- answer, 429 with retry-after, zero prices, Windows rows), with the cache
-- each run keeps under its own XDG_CACHE_HOME.
local cli = require "support.cli"
local server = require "support.server"
local http = require "fluence.http"
local json = require "fluence.json"
local yaml = require "fluence.yaml"
local price_cache = require "fluence.price_cache"
local envtest = require "support.envtest"

local AK, SK = "AKIAFLUENCEPRICES123", "fluence/PRICES+secret/0123456789abcdefghij"
local GKEY = "AIzaFLUENCEfakeGCPkey0123456789"

-- Azure rows: the Linux pay-as-you-go price (3.673) hides among a Windows
-- row, a zero-priced one, a Low Priority one, a DevTest one and two Spot rows
local function azure_row(o)
  local r = { currencyCode = "USD", tierMinimumUnits = 0, retailPrice = o.price, unitPrice = o.price,
              armRegionName = o.region or "eastus", location = "US East", effectiveStartDate = "2024-01-01T00:00:00Z",
              meterId = "m", meterName = o.meter or "NC24ads A100 v4", productId = "DZH318Z0BQ4L",
              skuId = "DZH318Z0BQ4L/00D4", productName = o.product or "Virtual Machines NCadsA100v4 Series",
              skuName = o.sku or "NC24ads A100 v4", serviceName = "Virtual Machines", serviceId = "DZH313Z7MMC8",
              serviceFamily = "Compute", unitOfMeasure = "1 Hour", type = o.type or "Consumption",
              isPrimaryMeterRegion = true, armSkuName = o.arm or "Standard_NC24ads_A100_v4" }
  return r
end
local AZURE = {
  azure_row{ price = 5.673, product = "Virtual Machines NCadsA100v4 Series Windows" },
  azure_row{ price = 0 },
  azure_row{ price = 3.673 },
  azure_row{ price = 0.2, sku = "NC24ads A100 v4 Low Priority", meter = "NC24ads A100 v4 Low Priority" },
  azure_row{ price = 1.469, sku = "NC24ads A100 v4 Spot", meter = "NC24ads A100 v4 Spot" },
  azure_row{ price = 1.9, sku = "NC24ads A100 v4 Spot", meter = "NC24ads A100 v4 Spot",
             product = "Virtual Machines NCadsA100v4 Series Windows" },
  azure_row{ price = 4.0, region = "westus" },
}

local function ec2_product(it, region, usd, operation)
  return { product = { productFamily = "Compute Instance", sku = it .. region,
                       attributes = { instanceType = it, regionCode = region, operatingSystem = "Linux",
                                      tenancy = "Shared", capacitystatus = "Used", preInstalledSw = "NA",
                                      operation = operation or "RunInstances", vcpu = "96", gpu = "8" } },
           serviceCode = "AmazonEC2", version = "20240101", publicationDate = "2024-01-01T00:00:00Z",
           terms = { OnDemand = { [it .. ".JRTCKXETXF"] = { priceDimensions = {
             [it .. ".JRTCKXETXF.6YS6EN2CT7"] = { unit = "Hrs", pricePerUnit = { USD = usd },
                                                  description = "per On Demand Linux Instance Hour" } } } } } }
end
local function braket_product(family, device, usd, usage)
  return { product = { productFamily = family, sku = family .. (device or usage),
                       attributes = { devicename = device, usagetype = usage or "USE1-Task", regionCode = "us-east-1" } },
           serviceCode = "AmazonBraket",
           terms = { OnDemand = { T = { priceDimensions = { D = { unit = "Task", pricePerUnit = { USD = usd } } } } } } }
end
local PRICING = { page_size = 1, products = {
  AmazonEC2 = { ec2_product("p4d.24xlarge", "us-east-1", "32.7726000000"),
                ec2_product("p4d.24xlarge", "us-east-1", "40.0000000000", "RunInstances:0102"),
                ec2_product("p4d.24xlarge", "us-west-2", "33.0000000000") },
  AmazonBraket = { braket_product("Quantum Task", "Forte 1", "0.3000000000"),
                   braket_product("Quantum Task-Shot", "Forte 1", "0.0700000000"),
                   braket_product("Simulator Task", nil, "0.0750000000", "USE1-Simulator-SV1-Completed-Task-ExecutionDuration") } } }
local SPOT = { page_size = 2, spot = { ["p4d.24xlarge"] = {
  { zone = "us-east-1a", price = "9.830900", timestamp = "2026-01-01T00:00:00.000Z" },
  { zone = "us-east-1b", price = "8.500000", timestamp = "2026-01-01T00:00:00.000Z" },
  { zone = "us-east-1b", price = "2.000000", timestamp = "2025-12-01T00:00:00.000Z" },    -- old: not current
  { zone = "us-east-1c", price = "11.100000", timestamp = "2026-01-01T00:00:00.000Z" } } } }

local function gcp_sku(desc, usage, units, nanos, regions, group)
  return { name = "services/6F81-5844-456A/skus/X", skuId = "X", description = desc,
           category = { serviceDisplayName = "Compute Engine", resourceFamily = "Compute",
                        resourceGroup = group or "GPU", usageType = usage },
           serviceRegions = regions or { "us-central1" },
           pricingInfo = { { pricingExpression = { usageUnit = "h", displayQuantity = 1, tieredRates = {
             { startUsageAmount = 0, unitPrice = { currencyCode = "USD", units = units, nanos = nanos } } } } } } }
end
local GCP = { page_size = 2, key = GKEY, skus = {
  gcp_sku("N1 Predefined Instance Core running in Americas", "OnDemand", "0", 31611000, nil, "N1Standard"),
  gcp_sku("Nvidia Tesla A100 GPU running in Americas", "OnDemand", "2", 933908000, { "us-central1", "us-east1" }),
  gcp_sku("Nvidia Tesla A100 GPU attached to Spot Preemptible VMs running in Americas", "Preemptible", "0", 880000000),
  gcp_sku("Nvidia Tesla A100 80GB GPU running in Americas", "OnDemand", "3", 930000000),
  gcp_sku("Commitment v1: Nvidia Tesla A100 GPU in Americas for 1 Year", "Commit1Yr", "1", 0),
  gcp_sku("Nvidia L4 GPU running in Americas", "OnDemand", "0", 0),                 -- published at 0: no price
} }

describe("price providers against the three APIs' stand-ins", function()
  local s, base, dir

  local function control(cfg)
    local r = assert(http.request{ url = base .. "/_control/config", method = "POST", body = json.encode(cfg) })
    assert.are.equal(200, r.status)
  end
  local function stats() return json.decode(assert(http.request{ url = base .. "/_control/stats" }).body) end

  local function env(extra)
    local e = { HOME = dir, XDG_CACHE_HOME = dir .. "/cache", AWS_ACCESS_KEY_ID = AK, AWS_SECRET_ACCESS_KEY = SK,
                AWS_REGION = "us-east-1", AWS_ENDPOINT_URL_PRICING = base, AWS_ENDPOINT_URL_EC2 = base,
                FLUENCE_AZURE_PRICES_URL = base .. "/api/retail/prices", FLUENCE_GCP_BILLING_URL = base,
                FLUENCE_GCP_API_KEY = GKEY }
    for k, v in pairs(extra or {}) do e[k] = v or false end
    return e
  end
  local function run(args, extra)
    args.env = env(extra)
    local r = cli.run(args)
    for _, secret in ipairs{ AK, SK, GKEY } do
      assert.is_nil(r.out:find(secret, 1, true), "secret on stdout")
      assert.is_nil(r.err:find(secret, 1, true), "secret on stderr")
    end
    assert.is_nil(r.err:find("\27", 1, true), "an escape sequence reached stderr")
    return r
  end
  local function prices(args, extra)
    local a = { "prices", "-o", "json" }
    for _, x in ipairs(args) do a[#a + 1] = x end
    local r = run(a, extra)
    assert.are.equal(0, r.code, r.err)
    local doc = json.decode(r.out)
    local by = {}
    for _, p in ipairs(doc.prices) do by[p.instance_type .. "@" .. p.region] = p end
    return by, doc.notes, r
  end

  setup(function()
    s = server.start("spec/support/prices_server.py", { "--key", AK .. "=" .. SK })
    base = "http://127.0.0.1:" .. s.port
  end)
  teardown(function()
    s.stop()
    cli.cleanup()
  end)
  before_each(function()
    dir = cli.tmpdir()
    control{ azure = { items = AZURE, page_size = 2 }, pricing = PRICING, ec2 = SPOT, gcp = GCP }
  end)

  describe("azure-prices", function()
    it("follows every page and keeps the Linux pay-as-you-go and Spot prices only", function()
      local by, notes = prices{ "--cloud", "azure", "-t", "Standard_NC24ads_A100_v4", "-r", "eastus" }
      local p = by["Standard_NC24ads_A100_v4@eastus"]
      assert.are.equal(3.673, p.on_demand)                 -- not Windows' 5.673, not the 0
      assert.are.equal(1.469, p.spot)                      -- not the Windows Spot, not Low Priority
      assert.are.equal("USD/hour", p.unit)
      assert.are.equal("azure-prices", p.provider)
      assert.are.same({}, notes)
      assert.are.equal(3, stats().azure)                   -- six rows, two a page
    end)

    it("retries a 429 after the server's x-ms-ratelimit retry-after", function()
      control{ azure = { items = AZURE, page_size = 10, throttle = 1, retry_after = 0 } }
      local by, notes = prices{ "--cloud", "azure", "-t", "Standard_NC24ads_A100_v4", "-r", "eastus" }
      assert.are.equal(3.673, by["Standard_NC24ads_A100_v4@eastus"].on_demand)
      assert.are.same({}, notes)
      assert.are.equal(2, stats().azure)
    end)

    it("gives up on a server that keeps throttling, saying so", function()
      control{ azure = { items = AZURE, throttle = 10 } }
      local by, notes = prices{ "--cloud", "azure", "-t", "Standard_NC24ads_A100_v4", "-r", "eastus" }
      assert.is_nil(by["Standard_NC24ads_A100_v4@eastus"].on_demand)
      assert.are.same({ "azure-prices: Standard_NC24ads_A100_v4 in eastus: no price (TooManyRequests: Too many " ..
                        "requests. Please retry. (HTTP 429) (after 3 attempts))" }, notes)
      assert.are.equal(3, stats().azure)
    end)

    it("follows no NextPageLink to another host, nor one that repeats", function()
      control{ azure = { items = AZURE, page_size = 2, next_host = "http://169.254.169.254" } }
      local _, notes = prices{ "--cloud", "azure", "-t", "Standard_NC24ads_A100_v4", "-r", "eastus" }
      assert.matches("NextPageLink leads to another host: not followed", notes[1], 1, true)
      assert.are.equal(1, stats().azure)
      control{ azure = { items = AZURE, page_size = 2, loop = true } }
      _, notes = prices{ "--cloud", "azure", "-t", "Standard_NC24ads_A100_v4", "-r", "westus" }
      assert.matches("NextPageLink repeats a page: stopped", notes[1], 1, true)
    end)

    it("ends a fetch that pages on and on by its deadline (six --request-timeout)", function()
      local many = {}
      for i = 1, 300 do many[i] = AZURE[3] end
      -- each page 35 ms, 14 times under one request's own 0.5 s limit; the
      -- fetch stops at 100 pages in any case, 3.5 s of them at the least:
      -- what ends it is the whole deadline (3 s), even on a loaded machine
      -- (a 0.2 s limit over 20 ms pages timed out on its own at a load of 56)
      control{ azure = { items = many, page_size = 1 }, delay_ms = 35 }
      local _, notes = prices{ "--cloud", "azure", "-t", "Standard_NC24ads_A100_v4", "-r", "eastus",
                               "--request-timeout", "0.5" }
      assert.matches("no price %(gave up after 3%.0 s %(%d+ pages read%)%)", notes[1])
      assert.is_true(stats().azure < 100)
    end)

    it("reads an HTML page as no answer, one escaped line", function()
      control{ azure = { html = true } }
      local r = run{ "prices", "--cloud", "azure", "-t", "Standard_NC24ads_A100_v4", "-r", "eastus" }
      assert.are.equal(0, r.code)
      assert.matches("note: azure%-prices: Standard_NC24ads_A100_v4 in eastus: no price %(unreadable answer: ", r.err)
    end)
  end)

  describe("aws-prices", function()
    it("reads GetProducts' PriceList strings over pages and the cheapest zone's current spot price", function()
      local by, notes = prices{ "--cloud", "aws", "-t", "p4d.24xlarge", "-r", "us-east-1" }
      local p = by["p4d.24xlarge@us-east-1"]
      assert.are.same({}, notes)
      assert.are.equal(32.7726, p.on_demand)              -- plain RunInstances, not the licensed variant
      assert.are.equal(8.5, p.spot)                       -- us-east-1b now, not its old 2.0
      assert.are.equal("us-east-1b", p.spot_zone)
      local st = stats()
      assert.are.equal(0, st.bad_signatures)
      assert.are.equal(2, st.pricing)                     -- two products, one a page
      assert.are.equal(2, st.ec2)                         -- four items, two a page
      assert.are.same({ "us-east-1", "us-east-1" }, st.regions.pricing)   -- the Price List endpoint's region
      assert.are.same({ "us-east-1", "us-east-1" }, st.regions.ec2)       -- the prices' region
    end)

    it("signs EC2 for the region asked about", function()
      control{ pricing = PRICING, ec2 = { spot = { ["p4d.24xlarge"] = { { zone = "us-west-2a", price = "7" } } },
                                          region = "us-west-2" } }
      local by = prices{ "--cloud", "aws", "-t", "p4d.24xlarge", "-r", "us-west-2" }
      assert.are.equal(7, by["p4d.24xlarge@us-west-2"].spot)
      assert.are.equal(33, by["p4d.24xlarge@us-west-2"].on_demand)
      assert.are.equal(0, stats().bad_signatures)
    end)

    it("retries ThrottlingException (HTTP 400) and RequestLimitExceeded (XML, 503)", function()
      control{ pricing = { products = PRICING.products, throttle = 1 }, ec2 = { spot = SPOT.spot, throttle = 2 } }
      local by, notes = prices{ "--cloud", "aws", "-t", "p4d.24xlarge", "-r", "us-east-1" }
      assert.are.same({}, notes)
      assert.are.equal(32.7726, by["p4d.24xlarge@us-east-1"].on_demand)
      assert.are.equal(8.5, by["p4d.24xlarge@us-east-1"].spot)
      local st = stats()
      assert.are.equal(2, st.pricing)
      assert.are.equal(3, st.ec2)
    end)

    it("without credentials says so once and uses only the cache", function()
      local by, notes = prices({ "--cloud", "aws", "-t", "p4d.24xlarge", "-r", "us-east-1" },
                               { AWS_ACCESS_KEY_ID = false, AWS_SECRET_ACCESS_KEY = false })
      assert.is_nil(by["p4d.24xlarge@us-east-1"].on_demand)
      assert.matches("^aws%-prices: no AWS credentials", notes[1])
      assert.matches("only cached prices are used", notes[1], 1, true)
      assert.matches("p4d.24xlarge on-demand in us-east-1: no price (no AWS credentials, and nothing cached)",
                     table.concat(notes, "\n"), 1, true)
      assert.are.equal(0, stats().pricing)
    end)

    it("gives Braket devices AWS's billed prices, over GetDevice's deviceCost", function()
      local d = cli.tmpdir()
      local attrs = cli.write(d .. "/attrs.yaml", [[
version: 1
backends:
  - name: forte
    device_arn: arn:aws:braket:us-east-1::device/qpu/ionq/Forte-1
  - name: sv1
    device_arn: arn:aws:braket:::device/quantum-simulator/amazon/sv1
  - name: mine
    device_arn: arn:aws:braket:us-east-1::device/qpu/ionq/Forte-1
    cost_per_task: 0.3
    cost_per_shot: 0.01
]])
      -- select-backend: braket runs braket-live first, with GetDevice's
      -- deviceCost (0.08 a shot for Forte 1); aws-prices then replaces it
      local pod = cli.write(d .. "/pod.yaml", cli.POD:format("min-cost"):gsub("annotations:\n",
        "annotations:\n    fluence.flux-framework.org/select-backend: braket\n"))
      local braket = server.start("spec/support/braket_server.py", { "--key", AK .. "=" .. SK })
      local r = run({ "explain", "-f", pod, "--attributes", attrs, "-o", "json" },
                    { AWS_ENDPOINT_URL_BRAKET = "http://127.0.0.1:" .. braket.port })
      braket.stop()
      assert.are.equal(0, r.code, r.err)
      local rows = {}
      for _, b in ipairs(json.decode(r.out).objects[1].backends) do rows[b.name] = b.attrs end
      assert.are.equal(0.07, rows.forte.cost_per_shot.value)
      assert.are.equal("aws-prices", rows.forte.cost_per_shot.provider)
      assert.is_true(math.abs(rows.forte.cost_usd.value - (0.3 + 1000 * 0.07)) < 1e-9)
      assert.are.equal("ONLINE", rows.forte.status.value)       -- braket-live did run
      assert.are.equal(0.075, rows.sv1.cost_per_minute.value)
      assert.are.equal("aws-prices", rows.sv1.cost_per_minute.provider)
      assert.are.equal(0.01, rows.mine.cost_per_shot.value)   -- the user's own price stands
      assert.are.equal("file", rows.mine.cost_per_shot.provider)
      assert.are.equal("sv1", json.decode(r.out).objects[1].chosen)      -- 0.05 min x 0.075
    end)
  end)

  describe("gcp-prices", function()
    it("reads the catalog's pages: GPU SKUs on-demand and preemptible, and says the host is not included", function()
      local by, notes = prices{ "--cloud", "gcp", "-t", "nvidia-tesla-a100", "-t", "nvidia-a100-80gb",
                                "-t", "nvidia-l4", "-r", "us-central1" }
      local a100, a80 = by["nvidia-tesla-a100@us-central1"], by["nvidia-a100-80gb@us-central1"]
      assert.is_true(math.abs(a100.on_demand - 2.933908) < 1e-9)
      assert.are.equal(0.88, a100.spot)
      assert.are.equal("USD/GPU-hour", a100.unit)
      assert.are.equal(3.93, a80.on_demand)
      assert.is_nil(a80.spot)
      assert.is_nil(by["nvidia-l4@us-central1"].on_demand)          -- a 0 is not a price
      assert.matches("host VM", a100.note, 1, true)
      local text = table.concat(notes, "\n")
      assert.matches("gcp-prices: GPU only: the host VM (vCPUs, memory) is priced apart and not included", text, 1, true)
      assert.matches('nvidia-l4 in us-central1: no GPU price in the catalog (model "l4")', text, 1, true)
      assert.are.equal(3, stats().gcp)                              -- six SKUs, two a page
    end)

    it("never shows the API key, even when it is refused", function()
      local _, notes = prices({ "--cloud", "gcp", "-t", "nvidia-tesla-a100", "-r", "us-central1", "-v", "-v" },
                              { FLUENCE_GCP_API_KEY = "AIzaWRONG" .. GKEY })
      assert.matches("INVALID_ARGUMENT: API key not valid", notes[1], 1, true)
      local _, notes2 = prices({ "--cloud", "gcp", "-t", "nvidia-tesla-a100", "-r", "us-central1" },
                               { FLUENCE_GCP_API_KEY = false })
      assert.matches("no API key (set FLUENCE_GCP_API_KEY or GOOGLE_API_KEY)", notes2[1], 1, true)
    end)
  end)

  describe("fluence prices", function()
    it("refuses a bad command line with exit 2 and nothing on stdout", function()
      for _, c in ipairs{
        { { "--cloud", "ibm", "-t", "x", "-r", "y" }, 'prices: --cloud must be one of aws, azure, gcp, not "ibm"' },
        { { "--cloud", "aws", "-t", "p4d.24xlarge" }, "give at least one --instance-type and one --region" },
        { {}, "prices: nothing to price" },
        { { "--cloud", "aws", "-t", "x", "-r", "y", "-o", "xml" }, 'unknown output format "xml"' },
        { { "--cloud", "aws", "-t", "x", "-r", "y", "extra" }, 'unexpected argument "extra"' },
      } do
        local a = { "prices" }
        for _, x in ipairs(c[1]) do a[#a + 1] = x end
        local r = run(a)
        assert.are.equal(2, r.code, r.err)
        assert.are.equal("", r.out)
        assert.matches(c[2], r.err, 1, true)
      end
    end)

    it("reads the backends of an attribute file that name their cloud", function()
      local attrs = cli.write(dir .. "/attrs.yaml", [[
version: 1
backends:
  - {name: east, region: eastus, strings: {cloud: Azure, instance_type: Standard_NC24ads_A100_v4}}
  - {name: plain, attributes: {cost_usd: 1}}
]])
      local by = prices{ "--attributes", attrs }
      assert.are.equal(3.673, by["Standard_NC24ads_A100_v4@eastus"].on_demand)
      assert.are.equal("east", by["Standard_NC24ads_A100_v4@eastus"].name)
      local r = run{ "prices", "--attributes", cli.write(dir .. "/bad.yaml", "backends: [{name: 3}]\n") }
      assert.are.equal(3, r.code)
      assert.matches("bad.yaml:1:", r.err, 1, true)
    end)
  end)

  describe("the cache", function()
    local ARGS = { "--cloud", "azure", "-t", "Standard_NC24ads_A100_v4", "-r", "eastus" }
    local function cache_file()
      return price_cache.file_of(dir .. "/cache/fluence/prices", "azure-prices", "vm/Standard_NC24ads_A100_v4@eastus")
    end
    local function age_it(seconds)
      local doc = json.decode(cli.slurp(cache_file()))
      doc.fetched = doc.fetched - seconds
      cli.write(cache_file(), json.encode(doc))
    end

    it("answers a second run without the network", function()
      prices(ARGS)
      assert.are.equal(3, stats().azure)
      local by = prices(ARGS)
      assert.are.equal(3.673, by["Standard_NC24ads_A100_v4@eastus"].on_demand)
      assert.are.equal(3, stats().azure)
    end)

    it("fetches again once an entry is past its TTL (FLUENCE_PRICE_TTL; spot a sixth of it)", function()
      prices(ARGS)
      age_it(700)                                  -- 6 h default: fresh; 1 h for spot: fresh
      prices(ARGS)
      assert.are.equal(3, stats().azure)
      prices(ARGS, { FLUENCE_PRICE_TTL = "1h" })   -- spot: 10 min, past
      assert.are.equal(6, stats().azure)
      age_it(7200)
      prices(ARGS, { FLUENCE_PRICE_TTL = "3h" })   -- spot: 30 min
      assert.are.equal(9, stats().azure)
    end)

    it("uses a cached price when the fetch fails, saying how old it is", function()
      prices(ARGS)
      age_it(7 * 3600 + 120)
      control{ azure = { status = 503 } }
      local by, notes = prices(ARGS)
      assert.are.equal(3.673, by["Standard_NC24ads_A100_v4@eastus"].on_demand)
      assert.are.equal(1, #notes)
      assert.matches("^azure%-prices: Standard_NC24ads_A100_v4 in eastus: using the cached price, 7 h 2 min old " ..
                     "%(ServiceUnavailable: try later %(HTTP 503%) %(after 3 attempts%)%)$", notes[1])
    end)

    it("with --offline uses the cache and never the network", function()
      local by, notes = prices{ "--offline", table.unpack(ARGS) }
      assert.is_nil(by["Standard_NC24ads_A100_v4@eastus"].on_demand)
      assert.matches("no price (offline, and nothing cached)", notes[1], 1, true)
      assert.are.equal(0, stats().azure)
      prices(ARGS)
      age_it(30 * 86400)
      by, notes = prices{ "--offline", table.unpack(ARGS) }
      assert.are.equal(3.673, by["Standard_NC24ads_A100_v4@eastus"].on_demand)
      assert.matches("using the cached price, 30 d old (offline)", notes[1], 1, true)
      assert.are.equal(3, stats().azure)
    end)

    it("ignores a corrupt file with a note, fetches again and replaces it", function()
      prices(ARGS)
      cli.write(cache_file(), "{\"format\": 1, \"value\": {\"ondemand\": 0.0001")
      local by, notes = prices(ARGS)
      assert.are.equal(3.673, by["Standard_NC24ads_A100_v4@eastus"].on_demand)
      assert.matches("price cache .* is corrupt %(.*%); ignored", notes[1])
      assert.are.equal(6, stats().azure)
      assert.are.equal(3.673, json.decode(cli.slurp(cache_file())).value.ondemand)
    end)

    it("is shared safely by runs at once", function()
      local cmd = {}
      for i = 1, 4 do
        local e = {}
        for k, v in pairs(env()) do e[#e + 1] = k .. "=" .. cli.quote(v) end
        cmd[i] = ("env -u LD_PRELOAD %s %s prices --cloud azure -t Standard_NC24ads_A100_v4 -r eastus -r westus " ..
                  "-o json > %s/out%d 2>&1"):format(table.concat(e, " "), cli.quote(cli.bin), cli.quote(dir), i)
      end
      assert(os.execute("(" .. table.concat(cmd, " & ") .. "; wait)"))
      for i = 1, 4 do
        local doc = json.decode(cli.slurp(dir .. "/out" .. i))
        assert.are.same({}, doc.notes)
        assert.are.equal(3.673, doc.prices[1].on_demand)
        assert.are.equal(4, doc.prices[2].on_demand)
      end
      local names = require("fluence.sys").list_dir(dir .. "/cache/fluence/prices/azure-prices")
      assert.are.equal(2, #names)
    end)
  end)

  describe("in a selection", function()
    it("prices backends from an attribute file by cloud, instance_type and region, and explain says so", function()
      local attrs = cli.write(dir .. "/attrs.yaml", [[
version: 1
backends:
  - name: azure-a100
    region: eastus
    strings: {cloud: azure, instance_type: Standard_NC24ads_A100_v4}
  - name: aws-a100x8
    region: us-east-1
    strings: {cloud: aws, instance_type: p4d.24xlarge}
  - name: gcp-a100
    region: us-central1
    strings: {cloud: gcp, instance_type: nvidia-tesla-a100}
]])
      local job = cli.write(dir .. "/job.yaml", [[
apiVersion: batch/v1
kind: Job
metadata:
  name: train
  annotations:
    fluence.flux-framework.org/select-policy: "min-spot_cost_usd"
    fluence.flux-framework.org/duration: "2h"
spec:
  template:
    spec:
      schedulerName: fluence
      restartPolicy: Never
      containers: [{name: c, image: x}]
]])
      -- offline with an empty cache: no prices, so nothing to rank by
      local r = run{ "explain", "-f", job, "--attributes", attrs, "--offline" }
      assert.are.equal(1, r.code)
      assert.matches('no candidate has attribute "spot_cost_usd"', r.out, 1, true)
      assert.matches("note: azure-prices: Standard_NC24ads_A100_v4 in eastus: no price (offline, and nothing cached)",
                     r.out, 1, true)
      assert.are.same({ 0, 0, 0, 0 }, { stats().azure, stats().pricing, stats().ec2, stats().gcp })
      -- online (no cluster: a note): all three asked at once; spot x 2 h
      r = run{ "select", "-f", job, "--attributes", attrs }
      assert.are.equal(0, r.code, r.err)
      local doc = yaml.decode(r.out)
      assert.are.equal("gcp-a100", doc.metadata.annotations["fluence.flux-framework.org/require-backend"])
      assert.matches("dropped azure-a100: spot_cost_usd 2.938 is not within 0 of the best (1.76)", r.err, 1, true)
      assert.matches("dropped aws-a100x8: spot_cost_usd 17 is not within 0 of the best (1.76)", r.err, 1, true)
      -- a fact about the run: said once, before the selections, not after each
      local _, n = r.err:gsub("note: gcp%-prices: GPU only: the host VM", "")
      assert.are.equal(1, n)
      assert.matches("^note: gcp%-prices: GPU only", r.err)
      local st = stats()
      assert.are.same({ 3, 2, 2, 3 }, { st.azure, st.pricing, st.ec2, st.gcp })
      -- then offline again: the same choice from the cache, and explain shows where each price came from
      r = run{ "explain", "-f", job, "--attributes", attrs, "--offline" }
      assert.are.equal(0, r.code, r.err)
      assert.matches("chosen: gcp-a100", r.out, 1, true)
      assert.matches("prices (workload: 1 pod, 2 h (the duration annotation)):", r.out, 1, true)
      assert.matches("  aws-a100x8: price_per_hour 32.7726 USD/hour (aws-prices, 0 s old); spot_price_per_hour " ..
                     "8.5 USD/hour (aws-prices, 0 s old, zone us-east-1b); cost_usd 65.5452 = 32.7726 USD/hour x " ..
                     "1 pod x 2 h (the duration annotation); spot_cost_usd 17 = 8.5 USD/hour x 1 pod x 2 h " ..
                     "(the duration annotation)", r.out:gsub("%d+ s old", "0 s old"), 1, true)
      assert.matches("GPU only: the host VM (vCPUs, memory) is priced apart and not included", r.out, 1, true)
      st = stats()
      assert.are.same({ 3, 2, 2, 3 }, { st.azure, st.pricing, st.ec2, st.gcp })
    end)

    envtest.describe("the cluster's ConfigMap naming cloud, instance_type and region", function(api)
      it("gets those backends priced too", function()
        local ns = api:namespace("cloud-prices")
        api:request("POST", ("/api/v1/namespaces/%s/configmaps"):format(ns), { apiVersion = "v1", kind = "ConfigMap",
          metadata = { name = "fluence-resources" }, data = { ["resources.yaml"] = [[
attributes:
  azure-a100: {cloud: azure, instance_type: Standard_NC24ads_A100_v4, memory_gb: "80"}
resources:
  - {type: gpu, name: a100-east, attributes: {cloud: azure, instance_type: Standard_NC24ads_A100_v4, region: eastus}}
  - {type: gpu, name: a100-west, attributes: {cloud: azure, instance_type: Standard_NC24ads_A100_v4, region: westus}}
]] } })
        local pod = cli.write(dir .. "/pod.yaml", cli.POD:format("min-cost"))
        local r = run{ "select", "-f", pod, "--kubeconfig", api.kubeconfig, "--fluence-ns", ns }
        assert.are.equal(0, r.code, r.err)
        assert.matches('require%-backend: "?a100%-east', r.out)
        assert.matches("dropped a100-west: cost_usd 4 is not within 0 of the best (3.673)", r.err, 1, true)
      end)
    end)

    it("never loads a price provider for backends without a cloud, nor for a policy that reads no price", function()
      local attrs = cli.write(dir .. "/attrs.yaml", [[
version: 1
backends:
  - name: vm
    region: eastus
    attributes: {memory_gb: 24, cost_usd: 1}
    strings: {cloud: azure, instance_type: Standard_NC24ads_A100_v4}
  - name: plain
    attributes: {memory_gb: 16, cost_usd: 2}
]])
      local pod = cli.write(dir .. "/pod.yaml", cli.POD:format("max-memory_gb"))
      local r = run({ "select", "-f", pod, "--attributes", attrs, "-v", "--offline" })
      assert.are.equal(0, r.code, r.err)
      assert.is_nil(r.err:find("azure-prices", 1, true))
      -- a policy reading a price runs only the provider of the backends' cloud
      pod = cli.write(dir .. "/pod.yaml", cli.POD:format("max-memory_gb,min-cost"))
      r = run({ "select", "-f", pod, "--attributes", attrs, "-v", "--offline" })
      assert.are.equal(0, r.code, r.err)
      assert.matches("provider azure-prices: 0 backends", r.err, 1, true)
      assert.is_nil(r.err:find("aws-prices", 1, true))
      assert.is_nil(r.err:find("gcp-prices", 1, true))
      assert.are.equal(0, stats().azure)
    end)
  end)
end)
