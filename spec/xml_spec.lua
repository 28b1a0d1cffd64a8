-- lua/fluence/xml.lua: the bounded reader of EC2's Query-protocol answers.
local xml = require "fluence.xml"

describe("xml.decode", function()
  it("reads DescribeSpotPriceHistory's answer: elements, text, entities, an empty nextToken", function()
    local root = assert(xml.decode([==[
<?xml version="1.0" encoding="UTF-8"?>
<!-- a comment -->
<DescribeSpotPriceHistoryResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/">
    <requestId>59dbff89-35bd-4eac-99ed-be587EXAMPLE</requestId>
    <spotPriceHistorySet>
        <item>
            <instanceType>p4d.24xlarge</instanceType>
            <productDescription>Linux/UNIX</productDescription>
            <spotPrice>9.830900</spotPrice>
            <timestamp>2026-01-01T00:00:00.000Z</timestamp>
            <availabilityZone>us-east-1a</availabilityZone>
        </item>
        <item><spotPrice><![CDATA[8.5]]></spotPrice><note>a &amp; b &lt;c&gt; &#65;&#x42;</note></item>
    </spotPriceHistorySet>
    <nextToken/>
</DescribeSpotPriceHistoryResponse>]==], "answer"))
    assert.are.equal("DescribeSpotPriceHistoryResponse", root.name)
    assert.are.equal("http://ec2.amazonaws.com/doc/2016-11-15/", root.attrs.xmlns)
    local items = xml.children(xml.child(root, "spotPriceHistorySet"), "item")
    assert.are.equal(2, #items)
    assert.are.equal("9.830900", xml.text(items[1], "spotPrice"))
    assert.are.equal("us-east-1a", xml.text(items[1], "availabilityZone"))
    assert.are.equal("8.5", xml.text(items[2], "spotPrice"))
    assert.are.equal("a & b <c> AB", xml.text(items[2], "note"))
    assert.are.equal("", xml.text(root, "nextToken"))
    assert.is_nil(xml.text(root, "missing"))
  end)

  it("drops namespace prefixes from names", function()
    local root = assert(xml.decode('<s:Envelope xmlns:s="x"><s:Body a:b="1">t</s:Body></s:Envelope>'))
    assert.are.equal("Envelope", root.name)
    assert.are.equal("t", xml.text(root, "Body"))
    assert.are.equal("1", xml.child(root, "Body").attrs.b)
  end)

  it("refuses what could expand, reach out or run away, saying where", function()
    local cases = {
      { '<!DOCTYPE a [<!ENTITY x "xx">]><a>&x;</a>', "t:1:1: a DOCTYPE or declaration is not accepted" },
      { '<!DOCTYPE a SYSTEM "file:///etc/passwd"><a/>', "t:1:1: a DOCTYPE or declaration is not accepted" },
      { "<a>&x;</a>", "t:1:4: unknown or malformed entity &x;" },
      { "<a>&amp</a>", "t:1:4: unknown or malformed entity &amp" },
      { "<a>&#0;</a>", "t:1:4: unknown or malformed entity &#0;" },
      { "<a>&#xD800;</a>", "t:1:4: unknown or malformed entity &#xD800;" },
      { "<a>\n<b></a>", "t:2:4: </a> closes <b>" },
      { "<a>", "t:1:4: <a> not closed" },
      { "</a>", "t:1:1: </a> closes nothing" },
      { "<a/><b/>", "t:1:5: a second root element" },
      { "text", "t:1:1: text outside the root element" },
      { "", "t:1:1: no element" },
      { "<a b=1/>", "t:1:3: malformed attribute in <a>" },
      { "<a b='<'/>", "t:1:7: '<' in an attribute value" },
      { "<a><!-- x</a>", "t:1:4: comment not closed" },
      { ("<a>"):rep(65), "t:1:193: nested more than 64 levels" },
    }
    for _, c in ipairs(cases) do
      local r, err = xml.decode(c[1], "t")
      assert.is_nil(r, c[1])
      assert.are.equal(c[2], err)
    end
  end)

  it("stops at its element budget", function()
    local saved = xml.MAX_ELEMENTS
    xml.MAX_ELEMENTS = 100
    local r, err = xml.decode("<a>" .. ("<b/>"):rep(100) .. "</a>", "t")
    xml.MAX_ELEMENTS = saved
    assert.is_nil(r)
    assert.matches("more than 100 elements", err)
  end)

  it("reads a large answer in linear time (no backtracking on long text)", function()
    local body = "<a>" .. ("<item><spotPrice>1.0</spotPrice></item>"):rep(20000) .. ("x"):rep(1000000) .. "</a>"
    local root = assert(xml.decode(body, "big"))
    assert.are.equal(20000, #xml.children(root, "item"))
  end)
end)
