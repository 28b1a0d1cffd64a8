/* fluence.tablecopy — a shallow copy of a table, made in C.
 *
 *   tablecopy.copy(t [, drop]) -> a new table holding t's keys and values
 *       (raw: no __pairs, no __index), but for the keys that are set in drop
 *
 * Every plugin gets its own environment with its own copies of the string,
 * table, math, utf8 and coroutine libraries (lua/fluence/sandbox.lua): about
 * a hundred entries a plugin.  Copied by a Lua loop that was ~100,000
 * instructions for each plugin a run loads (a select loads three): the
 * loop's own instructions and the new tables growing four or five times
 * each.  Here the table is made at its final size and filled by lua_next. */
#include <lauxlib.h>

static int copy(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    int drop = lua_istable(L, 2);
    int narr = 0, nrec = 0;
    lua_pushnil(L);
    while (lua_next(L, 1)) {              /* count, to make the table once */
        lua_pop(L, 1);
        if (lua_isinteger(L, -1) && lua_tointeger(L, -1) == narr + 1) narr++;
        else nrec++;
    }
    lua_createtable(L, narr, nrec);
    int out = lua_gettop(L);
    lua_pushnil(L);
    while (lua_next(L, 1)) {
        if (drop) {
            lua_pushvalue(L, -2);
            int skip = lua_rawget(L, 2) != LUA_TNIL && lua_toboolean(L, -1);
            lua_pop(L, 1);
            if (skip) {
                lua_pop(L, 1);
                continue;
            }
        }
        lua_pushvalue(L, -2);
        lua_insert(L, -2);
        lua_rawset(L, out);
    }
    return 1;
}

int luaopen_fluence_tablecopy(lua_State *L)
{
    static const luaL_Reg funcs[] = { {"copy", copy}, {NULL, NULL} };
    luaL_newlib(L, funcs);
    return 1;
}
