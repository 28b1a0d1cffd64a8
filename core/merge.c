/* fluence.merge — merging what providers return, by backend name.
 *
 *   merge.merge({ {provider = "file", backends = {...}}, ... })
 *     -> { {name =, attrs = {...}, source = {attr = provider}}, ... } sorted by name
 *     |  nil, "provider \"x\": backend #3: ..." for malformed results
 *
 * Later providers override earlier ones attribute by attribute, and every
 * attribute remembers the provider that set it (explain shows it).  A
 * provider may add backends of its own.  Attribute values must be strings,
 * booleans or finite numbers: anything else is the provider's bug, reported
 * with its name. */
#include <math.h>
#include <string.h>
#include <lauxlib.h>

/* [-0, +1]  t[key] without metamethods: backends come from plugins, whose
 * __index must not run outside their sandbox. */
static int rawfield(lua_State *L, int t, const char *key)
{
    lua_pushstring(L, key);
    return lua_rawget(L, t);
}

/* Validates one attribute value at the top of the stack. */
static const char *bad_value(lua_State *L)
{
    switch (lua_type(L, -1)) {
    case LUA_TSTRING: case LUA_TBOOLEAN: return NULL;
    case LUA_TNUMBER:
        if (!lua_isinteger(L, -1) && !isfinite(lua_tonumber(L, -1))) return "is not a finite number";
        return NULL;
    default: return "must be a string, number or boolean";
    }
}

static int merge_merge(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_settop(L, 1);
    lua_newtable(L);                             /* 2: name -> merged backend */
    lua_newtable(L);                             /* 3: names in order of appearance */
    lua_Integer nnames = 0;
    for (lua_Integer p = 1; lua_rawgeti(L, 1, p) == LUA_TTABLE; p++) {
        int res = lua_gettop(L);
        lua_getfield(L, res, "provider");
        const char *provider = lua_tostring(L, -1);
        if (!provider) return luaL_error(L, "merge: result #%d has no provider name", (int)p);
        int prov = lua_gettop(L);
        if (lua_getfield(L, res, "backends") != LUA_TTABLE) {
            lua_pushnil(L);
            lua_pushfstring(L, "provider \"%s\" returned %s instead of a list of backends",
                            provider, luaL_typename(L, -2));
            return 2;
        }
        int list = lua_gettop(L);
        for (lua_Integer i = 1; lua_rawgeti(L, list, i) != LUA_TNIL; i++) {
            int b = lua_gettop(L);
            if (!lua_istable(L, b)) {
                lua_pushnil(L);
                lua_pushfstring(L, "provider \"%s\": backend #%d is a %s, not a table",
                                provider, (int)i, luaL_typename(L, b));
                return 2;
            }
            rawfield(L, b, "name");
            size_t nlen;
            const char *name = lua_tolstring(L, -1, &nlen);
            if (lua_type(L, -1) != LUA_TSTRING || nlen == 0) {
                lua_pushnil(L);
                lua_pushfstring(L, "provider \"%s\": backend #%d has no name", provider, (int)i);
                return 2;
            }
            int namei = lua_gettop(L);
            /* the merged entry, created on first sight */
            lua_pushvalue(L, namei);
            if (lua_rawget(L, 2) == LUA_TNIL) {
                lua_pop(L, 1);
                lua_createtable(L, 0, 3);
                lua_pushvalue(L, namei);
                lua_setfield(L, -2, "name");
                lua_newtable(L);
                lua_setfield(L, -2, "attrs");
                lua_newtable(L);
                lua_setfield(L, -2, "source");
                lua_pushvalue(L, namei);
                lua_pushvalue(L, -2);
                lua_rawset(L, 2);
                lua_pushvalue(L, namei);
                lua_rawseti(L, 3, ++nnames);
            }
            int m = lua_gettop(L);
            lua_getfield(L, m, "attrs");
            lua_getfield(L, m, "source");
            int mattrs = m + 1, msource = m + 2;
            if (rawfield(L, b, "attrs") == LUA_TTABLE) {
                int attrs = lua_gettop(L);
                lua_pushnil(L);
                while (lua_next(L, attrs)) {
                    if (lua_type(L, -2) != LUA_TSTRING) {
                        lua_pushnil(L);
                        lua_pushfstring(L, "provider \"%s\": backend \"%s\": attribute names must be strings",
                                        provider, name);
                        return 2;
                    }
                    const char *why = bad_value(L);
                    if (why) {
                        lua_pushnil(L);
                        lua_pushfstring(L, "provider \"%s\": backend \"%s\": attribute \"%s\" %s",
                                        provider, name, lua_tostring(L, -3), why);
                        return 2;
                    }
                    lua_pushvalue(L, -2);
                    lua_insert(L, -2);
                    lua_rawset(L, mattrs);
                    lua_pushvalue(L, -1);
                    lua_pushvalue(L, prov);
                    lua_rawset(L, msource);
                }
            } else if (!lua_isnil(L, -1)) {
                lua_pushnil(L);
                lua_pushfstring(L, "provider \"%s\": backend \"%s\": attrs must be a table", provider, name);
                return 2;
            }
            lua_settop(L, list);
        }
        lua_settop(L, res - 1);
    }
    /* sorted by name: the pool order the Go client started every pipeline with */
    lua_getglobal(L, "table");
    lua_getfield(L, -1, "sort");
    lua_pushvalue(L, 3);
    lua_call(L, 1, 0);
    lua_pop(L, 1);
    lua_createtable(L, (int)nnames, 0);
    for (lua_Integer i = 1; i <= nnames; i++) {
        lua_rawgeti(L, 3, i);
        lua_rawget(L, 2);
        lua_rawseti(L, -2, i);
    }
    return 1;
}

int luaopen_fluence_merge(lua_State *L)
{
    static const luaL_Reg funcs[] = { {"merge", merge_merge}, {NULL, NULL} };
    luaL_newlib(L, funcs);
    return 1;
}
