/* fluence.readonly — read-only views of tables for the plugin sandbox
 * (lua/fluence/sandbox.lua), in C.
 *
 *   local ro = readonly.new()      -- one family of views
 *   ro.view(t) -> v                -- the read-only view of t (t itself when not a table)
 *   ro.unwrap(v) -> t | v          -- the table behind a view
 *   ro.is_view(v) -> bool
 *   ro.getter(fallback) -> attr        -- attr(b, key): b.attrs[key], in C
 *
 * v[k] is t[k], with table values coming back as their own views; writing to
 * a view is an error naming the field; #v, pairs(v) and ipairs(v) work; the
 * metatable is hidden.  All views share one metatable whose functions are C
 * closures over two tables: views (view -> table, weak keys) and cache
 * (table -> view, an ephemeron table, so a view lives as long as its table
 * and one table always has one view: identity survives wrapping).  A view is
 * one empty table: policies walk thousands of backends per stage, and a
 * metatable and closures per view made the garbage collector the bottleneck.
 *
 * Two helpers for the policy pipeline, which hands every stage a list of
 * views and takes a list back (what lua/fluence/pipeline.lua did per
 * backend and per stage in Lua, here in one C call):
 *   ro.inputs(pool) -> input, index         views of pool[1..#pool] in order,
 *                                           and where each is (a userdata)
 *   ro.collect(out, pool, input, index, kept, reasons, default, dropped, all)
 *       -> next_pool, order_changed, next_input, next_index
 *        | nil, "twice" | "foreign"
 *     out (the stage's list, read raw: views of the input, or the backends
 *     themselves) as backends in next_pool, and as views in next_input (the
 *     next stage's, with its index); kept[i] = their names; every backend of
 *     pool not kept gets its reason (rawget(reasons, name) when a string,
 *     else default) in dropped and, when it has none yet, in all.  A backend
 *     returned twice or not from the input stops it (kept filled up to
 *     there).  No Lua table is keyed by a backend: positions are found by
 *     address, seen ones marked in a byte array. */
#include <stdint.h>
#include <string.h>
#include <lauxlib.h>

#define VIEWS lua_upvalueindex(1)
#define CACHE lua_upvalueindex(2)
#define META lua_upvalueindex(3)

/* [-0, +1]  The view of the value at idx (the value when not a table). */
static void push_view(lua_State *L, int idx)
{
    idx = lua_absindex(L, idx);
    if (lua_type(L, idx) != LUA_TTABLE) { lua_pushvalue(L, idx); return; }
    /* its view, when it has one (a view is never a key here) */
    lua_pushvalue(L, idx);
    if (lua_rawget(L, CACHE) != LUA_TNIL) return;
    lua_pop(L, 1);
    lua_pushvalue(L, idx);
    if (lua_rawget(L, VIEWS) != LUA_TNIL) { lua_pop(L, 1); lua_pushvalue(L, idx); return; }   /* a view */
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

/* ro.getter(fallback) -> attr, where attr(b, key) is b.attrs[key] as a
 * plugin reading through the views gets it (a table value as its view), in
 * one C call: b is a view of a backend without a metatable whose attrs is a
 * table.  Anything else, checked before anything runs, is fallback(b, key)'s
 * (Lua: `return b.attrs[key]`, its errors as the plugin's own would be).
 * Two metamethod calls and a view of every backend's attrs table made for
 * each stage's `b.attrs.x` were most of what a stage did per backend. */
#define ATTRS lua_upvalueindex(4)
#define FALLBACK lua_upvalueindex(5)

static int ro_attr(lua_State *L)
{
    lua_settop(L, 2);
    if (lua_type(L, 1) == LUA_TTABLE) {
        lua_pushvalue(L, 1);
        if (lua_rawget(L, VIEWS) == LUA_TTABLE && !lua_getmetatable(L, 3)) {   /* 3: its backend */
            lua_pushvalue(L, ATTRS);
            if (lua_rawget(L, 3) == LUA_TTABLE) {                              /* 4: its attrs */
                lua_pushvalue(L, 2);
                lua_gettable(L, 4);                                            /* as the view's __index */
                push_view(L, -1);
                return 1;
            }
        }
        lua_settop(L, 2);
    }
    lua_pushvalue(L, FALLBACK);
    lua_insert(L, 1);
    lua_call(L, 2, 1);
    return 1;
}

static int ro_getter(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TFUNCTION);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_pushvalue(L, lua_upvalueindex(2));
    lua_pushvalue(L, lua_upvalueindex(3));
    lua_pushliteral(L, "attrs");
    lua_pushvalue(L, 1);
    lua_pushcclosure(L, ro_attr, 5);
    return 1;
}

/* ---- the pipeline's lists ----
 *
 * A stage's index: each backend's view -> the backend's position (the last,
 * should the pool hold one twice), in an open-addressing table keyed by the
 * views' addresses.  Only views are keys: a list handed back holding a
 * backend itself is looked up through its view (the cache), a rare case; a
 * key per backend and per view made each stage's index 1 MB of fresh pages
 * for 10,000 backends, and the kernel zeroing them cost more than the
 * lookups.  Pointers stay valid: the input list holds the views while the
 * index is used. */
#define INDEX_MT "fluence.readonly.stage_index"

struct stage_index { size_t cap; int dups; const void **keys; uint32_t *pos; };

static struct stage_index *index_new(lua_State *L, lua_Integer n)
{
    if (n > (lua_Integer)(UINT32_MAX / 4)) luaL_error(L, "too many backends (%I)", n);
    size_t cap = 16;
    while (cap < (size_t)n * 2) cap *= 2;        /* one key per backend, half full at most */
    struct stage_index *x = lua_newuserdatauv(L, sizeof *x + cap * (sizeof *x->keys + sizeof *x->pos), 0);
    x->cap = cap;
    x->dups = 0;
    x->keys = (const void **)(x + 1);
    x->pos = (uint32_t *)(x->keys + cap);
    memset(x->keys, 0, cap * sizeof *x->keys);   /* pos is read only where a key is */
    luaL_newmetatable(L, INDEX_MT);
    lua_setmetatable(L, -2);
    return x;
}

static size_t hash_ptr(const void *p, size_t cap)
{
    uint64_t h = (uint64_t)(uintptr_t)p * 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 32) & (cap - 1);
}

static void index_put(struct stage_index *x, const void *key, lua_Integer pos)
{
    if (!key) return;                            /* not an object: never found */
    size_t h = hash_ptr(key, x->cap);
    while (x->keys[h] && x->keys[h] != key) h = (h + 1) & (x->cap - 1);
    if (x->keys[h]) x->dups = 1;                 /* the pool holds this one twice */
    x->keys[h] = key;
    x->pos[h] = (uint32_t)pos;
}

static lua_Integer index_get(const struct stage_index *x, const void *key)
{
    if (!key) return 0;
    size_t h = hash_ptr(key, x->cap);
    while (x->keys[h]) {
        if (x->keys[h] == key) return x->pos[h];
        h = (h + 1) & (x->cap - 1);
    }
    return 0;
}

/* The address of a table (or any object) at idx, NULL for other values. */
static const void *address(lua_State *L, int idx)
{
    int t = lua_type(L, idx);
    return t == LUA_TTABLE || t == LUA_TUSERDATA || t == LUA_TFUNCTION || t == LUA_TTHREAD ? lua_topointer(L, idx)
                                                                                           : NULL;
}

/* The position of the value at idx, a view of the input or a backend of the
 * pool (through its view), in the index; 0 when it is neither. */
static lua_Integer position(lua_State *L, const struct stage_index *x, int idx)
{
    lua_Integer at = index_get(x, address(L, idx));
    if (at || lua_type(L, idx) != LUA_TTABLE) return at;
    lua_pushvalue(L, idx);
    if (lua_rawget(L, CACHE) == LUA_TTABLE) at = index_get(x, lua_topointer(L, -1));
    lua_pop(L, 1);
    return at;
}

static int ro_inputs(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_settop(L, 1);
    lua_Integer n = (lua_Integer)lua_rawlen(L, 1);
    lua_createtable(L, (int)n, 0);                    /* 2: input */
    struct stage_index *x = index_new(L, n);          /* 3 */
    for (lua_Integer i = 1; i <= n; i++) {
        lua_rawgeti(L, 1, i);                         /* 4: b */
        push_view(L, 4);                              /* 5: its view */
        index_put(x, address(L, 5), i);
        lua_rawseti(L, 2, i);
        lua_pop(L, 1);
    }
    return 2;
}

static int ro_collect(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);                 /* out */
    luaL_checktype(L, 2, LUA_TTABLE);                 /* pool */
    luaL_checktype(L, 3, LUA_TTABLE);                 /* input */
    struct stage_index *x = luaL_checkudata(L, 4, INDEX_MT);
    luaL_checktype(L, 5, LUA_TTABLE);                 /* kept */
    luaL_checkstring(L, 7);                           /* default reason */
    luaL_checktype(L, 8, LUA_TTABLE);                 /* dropped */
    luaL_checktype(L, 9, LUA_TTABLE);                 /* all */
    lua_settop(L, 9);
    int reasons = lua_istable(L, 6);
    lua_Integer nout = (lua_Integer)lua_rawlen(L, 1), npool = (lua_Integer)lua_rawlen(L, 2);
    lua_createtable(L, (int)nout, 0);                 /* 10: next_pool */
    lua_createtable(L, (int)nout, 0);                 /* 11: next_input */
    struct stage_index *next = index_new(L, nout);    /* 12 */
    unsigned char *seen = lua_newuserdatauv(L, (size_t)npool + 1, 0);   /* 13 */
    memset(seen, 0, (size_t)npool + 1);
    lua_pushliteral(L, "name");                       /* 14 */
    int changed = 0;
    lua_Integer last = 0;
    for (lua_Integer i = 1; i <= nout; i++) {
        lua_rawgeti(L, 1, i);                         /* 15: a view of the input, or its backend */
        lua_Integer at = position(L, x, 15);
        if (!at || seen[at]) {
            lua_pushnil(L);
            lua_pushstring(L, at ? "twice" : "foreign");
            return 2;
        }
        seen[at] = 1;
        lua_rawgeti(L, 2, at);                        /* 16: the backend */
        lua_rawgeti(L, 3, at);                        /* 17: its view */
        index_put(next, address(L, 17), i);
        lua_rawseti(L, 11, i);
        lua_pushvalue(L, 16);
        lua_rawseti(L, 10, i);
        lua_pushvalue(L, 14);
        lua_gettable(L, 16);                          /* b.name */
        lua_rawseti(L, 5, i);
        if (at < last) changed = 1;
        last = at;
        lua_settop(L, 14);
    }
    if (nout < npool) {
        for (lua_Integer i = 1; i <= npool; i++) {
            /* kept: its position seen, or (when the pool holds a backend
             * twice) the last position of its view */
            int kept = seen[i];
            if (x->dups) {
                lua_rawgeti(L, 3, i);
                kept = seen[index_get(x, address(L, -1))];
                lua_pop(L, 1);
            }
            if (kept) continue;
            lua_rawgeti(L, 2, i);                     /* 15: b */
            lua_pushvalue(L, 14);
            lua_gettable(L, 15);                      /* 16: b.name */
            if (!reasons || lua_type(L, 16) == LUA_TNIL) lua_pushnil(L);
            else { lua_pushvalue(L, 16); lua_rawget(L, 6); }
            if (lua_type(L, 17) != LUA_TSTRING) { lua_pop(L, 1); lua_pushvalue(L, 7); }
            lua_pushvalue(L, 16);                     /* dropped[name] = why */
            lua_pushvalue(L, 17);
            lua_rawset(L, 8);
            lua_pushvalue(L, 16);                     /* all[name] = why, when unset */
            if (lua_rawget(L, 9) == LUA_TNIL) {
                lua_pushvalue(L, 16);
                lua_pushvalue(L, 17);
                lua_rawset(L, 9);
            }
            lua_settop(L, 14);
        }
    }
    lua_pushvalue(L, 10);
    lua_pushboolean(L, changed);
    lua_pushvalue(L, 11);
    lua_pushvalue(L, 12);
    return 4;
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
    lua_createtable(L, 0, 6);
    closure(L, ro_view, 1, 2, 3, 0);     lua_setfield(L, -2, "view");
    closure(L, ro_unwrap, 1, 2, 3, 0);   lua_setfield(L, -2, "unwrap");
    closure(L, ro_is_view, 1, 2, 3, 0);  lua_setfield(L, -2, "is_view");
    closure(L, ro_inputs, 1, 2, 3, 0);   lua_setfield(L, -2, "inputs");
    closure(L, ro_collect, 1, 2, 3, 0);  lua_setfield(L, -2, "collect");
    closure(L, ro_getter, 1, 2, 3, 0);   lua_setfield(L, -2, "getter");
    return 1;
}

int luaopen_fluence_readonly(lua_State *L)
{
    static const luaL_Reg funcs[] = { {"new", ro_new}, {NULL, NULL} };
    luaL_newlib(L, funcs);
    return 1;
}
