/* fluence.readonly — read-only views of tables for the plugin sandbox
 * (lua/fluence/sandbox.lua), in C.
 *
 *   local ro = readonly.new()      -- one family of views
 *   ro.view(t) -> v                -- the read-only view of t (t itself when not a table)
 *   ro.unwrap(v) -> t | v          -- the table behind a view
 *   ro.is_view(v) -> bool
 *
 * v[k] is t[k], with table values coming back as their own views; writing to
 * a view is an error naming the field; #v, pairs(v) and ipairs(v) work; the
 * metatable is hidden.  All views share one metatable whose functions are C
 * closures over two tables: views (view -> table, weak keys) and cache
 * (table -> view, an ephemeron table, so a view lives as long as its table
 * and one table always has one view: identity survives wrapping).  A view is
 * one empty table: policies walk thousands of backends per stage, and a
 * metatable and closures per view made the garbage collector the bottleneck. */
#include <lauxlib.h>

#define VIEWS lua_upvalueindex(1)
#define CACHE lua_upvalueindex(2)
#define META lua_upvalueindex(3)

/* [-0, +1]  The view of the value at idx (the value when not a table). */
static void push_view(lua_State *L, int idx)
{
    idx = lua_absindex(L, idx);
    if (lua_type(L, idx) != LUA_TTABLE) { lua_pushvalue(L, idx); return; }
    lua_pushvalue(L, idx);
    if (lua_rawget(L, VIEWS) != LUA_TNIL) { lua_pop(L, 1); lua_pushvalue(L, idx); return; }   /* a view */
    lua_pop(L, 1);
    lua_pushvalue(L, idx);
    if (lua_rawget(L, CACHE) != LUA_TNIL) return;
    lua_pop(L, 1);
    lua_createtable(L, 0, 0);
    lua_pushvalue(L, META);
    lua_setmetatable(L, -2);
    lua_pushvalue(L, -1);
    lua_pushvalue(L, idx);
    lua_rawset(L, VIEWS);
    lua_pushvalue(L, idx);
    lua_pushvalue(L, -2);
    lua_rawset(L, CACHE);
}

/* [-0, +1]  The table behind view v at idx; raises if it is not a view. */
static void push_target(lua_State *L, int idx)
{
    lua_pushvalue(L, idx);
    if (lua_rawget(L, VIEWS) == LUA_TNIL) luaL_error(L, "not a read-only view");
}

static int ro_index(lua_State *L)
{
    push_target(L, 1);
    lua_pushvalue(L, 2);
    lua_gettable(L, -2);
    push_view(L, -1);
    return 1;
}

static int ro_newindex(lua_State *L)
{
    const char *k = luaL_tolstring(L, 2, NULL);
    return luaL_error(L, "attempt to modify a read-only table (field \"%s\")", k);
}

static int ro_len(lua_State *L)
{
    push_target(L, 1);
    lua_len(L, -1);
    return 1;
}

/* the iterator of pairs(view): next over the table, values as views */
static int ro_next(lua_State *L)
{
    push_target(L, 1);
    lua_pushvalue(L, 2);
    if (!lua_next(L, -2)) { lua_pushnil(L); return 1; }
    push_view(L, -1);
    lua_remove(L, -2);
    return 2;
}

static int ro_pairs(lua_State *L)
{
    lua_pushvalue(L, lua_upvalueindex(4));   /* ro_next closure */
    lua_pushvalue(L, 1);
    lua_pushnil(L);
    return 3;
}

static int ro_view(lua_State *L)
{
    luaL_checkany(L, 1);
    push_view(L, 1);
    return 1;
}

static int ro_unwrap(lua_State *L)
{
    luaL_checkany(L, 1);
    lua_pushvalue(L, 1);
    if (lua_rawget(L, VIEWS) == LUA_TNIL) { lua_pop(L, 1); lua_pushvalue(L, 1); }
    return 1;
}

static int ro_is_view(lua_State *L)
{
    lua_pushvalue(L, 1);
    lua_pushboolean(L, lua_type(L, 1) == LUA_TTABLE && lua_rawget(L, VIEWS) != LUA_TNIL);
    return 1;
}

/* Pushes a C closure of f over views, cache and meta (and extra when given). */
static void closure(lua_State *L, lua_CFunction f, int views, int cache, int meta, int extra)
{
    lua_pushvalue(L, views);
    lua_pushvalue(L, cache);
    lua_pushvalue(L, meta);
    if (extra) lua_pushvalue(L, extra);
    lua_pushcclosure(L, f, extra ? 4 : 3);
}

static void weak(lua_State *L, const char *mode)
{
    lua_createtable(L, 0, 0);
    lua_createtable(L, 0, 1);
    lua_pushstring(L, mode);
    lua_setfield(L, -2, "__mode");
    lua_setmetatable(L, -2);
}

static int ro_new(lua_State *L)
{
    lua_settop(L, 0);
    weak(L, "k");                         /* 1: views: view -> table */
    weak(L, "k");                         /* 2: cache: table -> view (ephemeron) */
    lua_createtable(L, 0, 6);             /* 3: the shared metatable */
    closure(L, ro_next, 1, 2, 3, 0);      /* 4 */
    closure(L, ro_index, 1, 2, 3, 0);    lua_setfield(L, 3, "__index");
    closure(L, ro_newindex, 1, 2, 3, 0); lua_setfield(L, 3, "__newindex");
    closure(L, ro_len, 1, 2, 3, 0);      lua_setfield(L, 3, "__len");
    closure(L, ro_pairs, 1, 2, 3, 4);    lua_setfield(L, 3, "__pairs");
    lua_pushboolean(L, 0);               lua_setfield(L, 3, "__metatable");
    lua_createtable(L, 0, 3);
    closure(L, ro_view, 1, 2, 3, 0);     lua_setfield(L, -2, "view");
    closure(L, ro_unwrap, 1, 2, 3, 0);   lua_setfield(L, -2, "unwrap");
    closure(L, ro_is_view, 1, 2, 3, 0);  lua_setfield(L, -2, "is_view");
    return 1;
}

int luaopen_fluence_readonly(lua_State *L)
{
    static const luaL_Reg funcs[] = { {"new", ro_new}, {NULL, NULL} };
    luaL_newlib(L, funcs);
    return 1;
}
