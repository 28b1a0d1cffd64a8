-- "1 object", "2 objects": a count and its noun, agreeing.
--
--   plural(n, noun [, plural_noun])   plural_noun defaults to noun .. "s"
return function(n, noun, plural_noun)
  return ("%d %s"):format(n, n == 1 and noun or (plural_noun or noun .. "s"))
end
