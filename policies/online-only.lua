-- online-only keeps the backends whose string attribute `status` is ONLINE
-- (any case) or absent, as the Go client does.
return {
  name = "online-only",
  description = "keep backends whose status is ONLINE (any case) or unknown",
  args = false,
  compile = function(_, ctx)
    local attr = ctx.attr         -- b.attrs[key], in one C call
    return function(backends)
      local keep, reasons = {}, {}
      local why = {}      -- status -> the reason it drops a backend, or false
      for i = 1, #backends do        -- a numeric loop: ipairs is a C call per backend
        local b = backends[i]
        if b == nil then break end
        local s = attr(b, "status")
        local r = false
        if type(s) == "string" then
          r = why[s]
          if r == nil then
            r = s:upper() ~= "ONLINE" and ("status is %q"):format(s)
            why[s] = r
          end
        end
        if r then reasons[b.name] = r else keep[#keep + 1] = b end
      end
      return keep, reasons
    end, { "status" }
  end,
}
