-- online-only keeps the backends whose string attribute `status` is ONLINE
-- (any case) or absent, as the Go client does.
return {
  name = "online-only",
  description = "keep backends whose status is ONLINE (any case) or unknown",
  args = false,
  compile = function()
    return function(backends)
      local keep, reasons = {}, {}
      for _, b in ipairs(backends) do
        local s = b.attrs.status
        if type(s) ~= "string" or s:upper() == "ONLINE" then
          keep[#keep + 1] = b
        else
          reasons[b.name] = ("status is %q"):format(s)
        end
      end
      return keep, reasons
    end, { "status" }
  end,
}
