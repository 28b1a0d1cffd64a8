/* fluence.order — sorting for the policy pipeline, in C.
 *
 *   order.by_keys(list, keys, n [, descending [, both]]) -> true | false
 *     sorts list[1..n] in place by the numbers keys[1..n], smallest first (or
 *     largest), ties in their order (with both, keys too, alongside): the
 *     result pipeline.sort_by's Lua sort
 *     gives, without a Lua comparator called n log n times (ranking 10,000
 *     backends spent most of its time there).  false, and list untouched,
 *     when this cannot promise that result: a key that is not a number, a
 *     NaN, integers too large to compare exactly with floats, or a list with
 *     a metatable (its __index/__newindex are the plugin's).
 *   order.names_sorted(list) -> bool
 *     are the names of the backends list[1..#list] strictly increasing, as
 *     Lua's < orders strings?  (Then a stable sort by name keeps the list.) */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <lauxlib.h>

struct item { double v; size_t idx; };

static int asc(const void *a, const void *b)
{
    const struct item *x = a, *y = b;
    if (x->v < y->v) return -1;
    if (y->v < x->v) return 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static int desc(const void *a, const void *b)
{
    const struct item *x = a, *y = b;
    if (x->v > y->v) return -1;
    if (y->v > x->v) return 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

#define EXACT 9007199254740992.0       /* 2^53: integers up to this compare exactly as doubles */

static int order_by_keys(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    luaL_checktype(L, 2, LUA_TTABLE);
    lua_Integer n = luaL_checkinteger(L, 3);
    int descending = lua_toboolean(L, 4), both = lua_toboolean(L, 5);
    lua_settop(L, 2);
    if (n < 2) { lua_pushboolean(L, n >= 0 && !lua_getmetatable(L, 1)); return 1; }
    if (lua_getmetatable(L, 1)) { lua_pushboolean(L, 0); return 1; }
    struct item *it = lua_newuserdatauv(L, (size_t)n * sizeof *it, 0);   /* 3: freed by the GC */
    int big = 0;
    for (lua_Integer i = 1; i <= n; i++) {
        int t = lua_rawgeti(L, 2, i);
        if (t != LUA_TNUMBER) { lua_pushboolean(L, 0); return 1; }
        double v;
        if (lua_isinteger(L, -1)) {
            lua_Integer k = lua_tointeger(L, -1);
            v = (double)k;
            if (v > EXACT || v < -EXACT) big = 1;
        } else {
            v = lua_tonumber(L, -1);
            if (isnan(v)) { lua_pushboolean(L, 0); return 1; }
        }
        lua_pop(L, 1);
        it[i - 1].v = v;
        it[i - 1].idx = (size_t)i;
    }
    if (big) {                                     /* doubles would round them */
        lua_pushboolean(L, 0);
        return 1;
    }
    qsort(it, (size_t)n, sizeof *it, descending ? desc : asc);
    lua_createtable(L, (int)n, 0);                 /* 4: the elements in their old order */
    for (int t = 1; t <= (both ? 2 : 1); t++) {    /* the list, and the keys with it */
        for (lua_Integer i = 1; i <= n; i++) {
            lua_rawgeti(L, t, i);
            lua_rawseti(L, 4, i);
        }
        for (lua_Integer i = 1; i <= n; i++) {
            lua_rawgeti(L, 4, (lua_Integer)it[i - 1].idx);
            lua_rawseti(L, t, i);
        }
    }
    lua_pushboolean(L, 1);
    return 1;
}

/* Lua's string order (lvm.c's l_strcmp): strcoll on each \0-separated part. */
static int str_less(const char *l, size_t ll, const char *r, size_t lr)
{
    for (;;) {
        int c = strcoll(l, r);
        if (c != 0) return c < 0;
        size_t len = strlen(l);
        if (len == lr) return 0;                   /* r is done: l is not smaller */
        if (len == ll) return 1;                   /* l is done, r is not */
        len++;
        l += len; ll -= len; r += len; lr -= len;
    }
}

static int order_names_sorted(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_Integer n = (lua_Integer)lua_rawlen(L, 1);
    const char *prev = NULL;
    size_t plen = 0;
    for (lua_Integer i = 1; i <= n; i++) {
        if (lua_rawgeti(L, 1, i) != LUA_TTABLE || lua_getmetatable(L, -1)) { lua_pushboolean(L, 0); return 1; }
        lua_pushliteral(L, "name");
        if (lua_rawget(L, -2) != LUA_TSTRING) { lua_pushboolean(L, 0); return 1; }
        size_t len;
        const char *s = lua_tolstring(L, -1, &len);
        if (prev && !str_less(prev, plen, s, len)) { lua_pushboolean(L, 0); return 1; }
        prev = s;              /* stays valid: list[i].name is held by list[i] */
        plen = len;
        lua_pop(L, 2);
    }
    lua_pushboolean(L, 1);
    return 1;
}

int luaopen_fluence_order(lua_State *L)
{
    static const luaL_Reg funcs[] = {
        {"by_keys", order_by_keys}, {"names_sorted", order_names_sorted}, {NULL, NULL}
    };
    luaL_newlib(L, funcs);
    return 1;
}
