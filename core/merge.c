/* fluence.merge — merging what providers return, by backend name.
 *
 *   merge.merge({ {provider = "file", backends = {...} [, trusted = true]}, ... })
 *     -> { {name =, attrs = {...}, source = {attr = provider}}, ... } sorted by name
 *     |  nil, "provider \"x\": backend #3: ..." for malformed results
 *
 * Later providers override earlier ones attribute by attribute, and every
 * attribute remembers the provider that set it (explain shows it).  A
 * provider may add backends of its own.  Attribute values must be strings,
 * booleans or finite numbers: anything else is the provider's bug, reported
 * with its name.  A trusted result's attrs tables (a built-in provider's,
 * which it never changes once returned) become the merged backends' own
 * until another provider adds to one: copying 10,000 of them was most of a
 * merge.
 *
 *   merge.attribute_names(merged) -> { name = true, ... }
 *     the attribute names the backends of a merged list carry */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <lauxlib.h>

/* Backends come from plugins: they are read without metamethods (rawkey),
 * whose __index must not run outside the plugin's sandbox. */
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

/* Lua's string order (lvm.c's l_strcmp): strcoll on each \0-separated part. */
static int str_cmp(const char *l, size_t ll, const char *r, size_t lr)
{
    for (;;) {
        int c = strcoll(l, r);
        if (c != 0) return c;
        size_t len = strlen(l);
        if (len == lr) return len == ll ? 0 : 1;
        if (len == ll) return -1;
        len++;
        l += len; ll -= len; r += len; lr -= len;
    }
}

struct name { const char *s; size_t len; lua_Integer pos; };

static int name_cmp(const void *a, const void *b)
{
    const struct name *x = a, *y = b;
    return str_cmp(x->s, x->len, y->s, y->len);
}

/* Upvalues: the key strings, made once. */
#define K_NAME lua_upvalueindex(1)
#define K_ATTRS lua_upvalueindex(2)
#define K_SOURCE lua_upvalueindex(3)
#define K_PROVIDER lua_upvalueindex(4)
#define K_BACKENDS lua_upvalueindex(5)

/* [-0, +1]  t[key] without metamethods for a key string kept as upvalue k. */
static int rawkey(lua_State *L, int t, int k)
{
    lua_pushvalue(L, k);
    return lua_rawget(L, t);
}

/* The attrs tables merged entries borrow, by address (open addressing; an
 * address is never removed: two backends may share one table). */
struct borrowed { size_t cap; const void *slot[1]; };

static size_t hash_ptr(const void *p, size_t cap)
{
    uint64_t h = (uint64_t)(uintptr_t)p * 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 32) & (cap - 1);
}

static void borrowed_add(struct borrowed *b, const void *p)
{
    size_t h = hash_ptr(p, b->cap);
    while (b->slot[h] && b->slot[h] != p) h = (h + 1) & (b->cap - 1);
    b->slot[h] = p;
}

static int borrowed_has(const struct borrowed *b, const void *p)
{
    size_t h = hash_ptr(p, b->cap);
    while (b->slot[h]) {
        if (b->slot[h] == p) return 1;
        h = (h + 1) & (b->cap - 1);
    }
    return 0;
}

/* Source tables shared by a provider's backends, by the shape of their
 * attrs tables (a few shapes in a whole catalog). */
#define SHAPES 8
#define SHAPE_KEYS 16             /* names kept per shape, to compare by address */
struct shape { uint64_t hash; int n; const void *keys[SHAPE_KEYS]; };

/* [-0, +1]  The source table {name = provider, ...} for the n attributes of
 * the attrs table at idx: one already made for that shape (its names
 * checked: a hash proves nothing), or a new one, kept for the next.  keys:
 * the names' addresses in iteration order (n <= SHAPE_KEYS): a shape whose
 * own are the same is the same without a lookup (its source table holds
 * those strings, so an equal address is the same string), which was most
 * of a merge of 10,000 backends of one shape. */
static void push_shared_source(lua_State *L, struct borrowed *lent, struct shape *shapes, int *nshapes, int holder,
                               uint64_t hash, int n, int attrs, int prov, const void *const *keys)
{
    for (int i = 0; i < *nshapes; i++) {
        if (shapes[i].hash != hash || shapes[i].n != n) continue;
        if (n <= SHAPE_KEYS && memcmp(shapes[i].keys, keys, (size_t)n * sizeof *keys) == 0) {
            lua_rawgeti(L, holder, i + 1);
            return;
        }
        lua_rawgeti(L, holder, i + 1);
        int cand = lua_gettop(L), same = 1;
        lua_pushnil(L);
        while (same && lua_next(L, attrs)) {
            lua_pop(L, 1);
            lua_pushvalue(L, -1);
            if (lua_rawget(L, cand) == LUA_TNIL) same = 0;
            lua_pop(L, 1);
        }
        if (same) return;                      /* n names, all in cand's n: the same */
        lua_settop(L, cand - 1);
    }
    lua_createtable(L, 0, n);
    int src = lua_gettop(L);
    lua_pushnil(L);
    while (lua_next(L, attrs)) {
        lua_pop(L, 1);
        lua_pushvalue(L, -1);
        lua_pushvalue(L, prov);
        lua_rawset(L, src);
    }
    borrowed_add(lent, lua_topointer(L, src));
    int slot = *nshapes < SHAPES ? (*nshapes)++ : (int)(hash % SHAPES);
    shapes[slot].hash = hash;
    shapes[slot].n = n;
    if (n <= SHAPE_KEYS) memcpy(shapes[slot].keys, keys, (size_t)n * sizeof *keys);
    lua_pushvalue(L, src);
    lua_rawseti(L, holder, slot + 1);
}

/* [-0, +1]  A copy of the table at idx (n entries). */
static void copy_table(lua_State *L, int idx, int n)
{
    lua_createtable(L, 0, n);
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        lua_pushvalue(L, -2);
        lua_insert(L, -2);
        lua_rawset(L, -4);
    }
}

static int merge_merge(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_settop(L, 1);
    lua_newtable(L);                             /* 2: name -> merged backend */
    lua_newtable(L);                             /* 3: names in order of appearance */
    lua_Integer nnames = 0;
    /* 4: the set of borrowed attrs tables, room for every backend */
    size_t total = 0;
    for (lua_Integer p = 1; lua_rawgeti(L, 1, p) == LUA_TTABLE; p++) {
        if (lua_getfield(L, -1, "backends") == LUA_TTABLE) total += lua_rawlen(L, -1);
        lua_pop(L, 2);
    }
    lua_pop(L, 1);
    size_t cap = 16;
    while (cap < total * 2) cap *= 2;
    /* room for every attrs table and every source table */
    while (cap < total * 4) cap *= 2;
    struct borrowed *lent = lua_newuserdatauv(L, sizeof *lent + (cap - 1) * sizeof lent->slot[0], 0);
    lent->cap = cap;
    memset(lent->slot, 0, cap * sizeof lent->slot[0]);
    lua_createtable(L, SHAPES, 0);              /* 5: the shared source tables, by slot */
    struct shape shapes[SHAPES];
    int nshapes = 0;
    for (lua_Integer p = 1; lua_rawgeti(L, 1, p) == LUA_TTABLE; p++) {
        int res = lua_gettop(L);
        lua_getfield(L, res, "provider");
        const char *provider = lua_tostring(L, -1);
        if (!provider) return luaL_error(L, "merge: result #%d has no provider name", (int)p);
        int prov = lua_gettop(L);
        lua_getfield(L, res, "trusted");
        int trusted = lua_toboolean(L, -1);
        lua_pop(L, 1);
        nshapes = 0;                             /* shapes are per provider */
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
            rawkey(L, b, K_NAME);
            size_t nlen;
            const char *name = lua_tolstring(L, -1, &nlen);
            if (lua_type(L, -1) != LUA_TSTRING || nlen == 0) {
                lua_pushnil(L);
                lua_pushfstring(L, "provider \"%s\": backend #%d has no name", provider, (int)i);
                return 2;
            }
            int namei = lua_gettop(L);
            int attrs_type = rawkey(L, b, K_ATTRS);                   /* namei + 1 */
            if (attrs_type != LUA_TTABLE && attrs_type != LUA_TNIL) {
                lua_pushnil(L);
                lua_pushfstring(L, "provider \"%s\": backend \"%s\": attrs must be a table", provider, name);
                return 2;
            }
            int attrs = namei + 1;
            /* the attributes checked, counted, and their names' addresses
             * hashed in iteration order (the shape of the table) */
            int n = 0;
            uint64_t shape = 1469598103934665603ull;
            const void *keys[SHAPE_KEYS];
            if (attrs_type == LUA_TTABLE) {
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
                    const void *key = lua_topointer(L, -2);
                    if (n < SHAPE_KEYS) keys[n] = key;
                    n++;
                    shape = (shape ^ (uint64_t)(uintptr_t)key) * 1099511628211ull;
                    lua_pop(L, 1);
                }
            }
            /* the merged entry, created on first sight, sized for these
             * attributes.  A built-in provider's attrs table (trusted: it
             * never changes one it returned) is taken as it is, not copied,
             * and its source table is one shared by the backends whose
             * attributes have the same names -- until a later provider
             * writes to either: then the entry gets a copy. */
            lua_pushvalue(L, namei);
            int m;
            if (lua_rawget(L, 2) == LUA_TNIL) {
                lua_pop(L, 1);
                int lend = trusted && attrs_type == LUA_TTABLE && !lua_getmetatable(L, attrs);
                lua_settop(L, attrs);
                lua_createtable(L, 0, 3);
                m = lua_gettop(L);
                lua_pushvalue(L, K_NAME);
                lua_pushvalue(L, namei);
                lua_rawset(L, m);
                lua_pushvalue(L, K_ATTRS);
                if (lend) lua_pushvalue(L, attrs); else lua_createtable(L, 0, n);
                lua_rawset(L, m);
                lua_pushvalue(L, namei);
                lua_pushvalue(L, m);
                lua_rawset(L, 2);
                lua_pushvalue(L, namei);
                lua_rawseti(L, 3, ++nnames);
                if (lend) {
                    borrowed_add(lent, lua_topointer(L, attrs));
                    lua_pushvalue(L, K_SOURCE);
                    push_shared_source(L, lent, shapes, &nshapes, 5, shape, n, attrs, prov, keys);
                    lua_rawset(L, m);
                    lua_settop(L, list);
                    continue;
                }
                lua_pushvalue(L, K_SOURCE);
                lua_createtable(L, 0, n);
                lua_rawset(L, m);
            } else {
                m = lua_gettop(L);
                /* borrowed tables are copied before they are written to */
                for (int f = 0; f < 2; f++) {
                    int key = f ? K_SOURCE : K_ATTRS;
                    if (rawkey(L, m, key) == LUA_TTABLE && borrowed_has(lent, lua_topointer(L, -1))) {
                        int old = lua_gettop(L), count = 0;
                        lua_pushnil(L);
                        while (lua_next(L, old)) { count++; lua_pop(L, 1); }
                        lua_pushvalue(L, key);
                        copy_table(L, old, count + n);
                        lua_rawset(L, m);
                    }
                    lua_settop(L, m);
                }
            }
            rawkey(L, m, K_ATTRS);
            rawkey(L, m, K_SOURCE);
            int mattrs = m + 1, msource = m + 2;
            if (attrs_type == LUA_TTABLE) {
                lua_pushnil(L);
                while (lua_next(L, attrs)) {
                    lua_pushvalue(L, -2);
                    lua_insert(L, -2);
                    lua_rawset(L, mattrs);
                    lua_pushvalue(L, -1);
                    lua_pushvalue(L, prov);
                    lua_rawset(L, msource);
                }
            }
            lua_settop(L, list);
        }
        lua_settop(L, res - 1);
    }
    /* sorted by name: the pool order the Go client started every pipeline
     * with (names are unique, so any sort gives table.sort's order) */
    struct name *names = lua_newuserdatauv(L, (size_t)(nnames ? nnames : 1) * sizeof *names, 0);   /* 4 */
    for (lua_Integer i = 1; i <= nnames; i++) {
        lua_rawgeti(L, 3, i);                        /* held by table 3 */
        names[i - 1].s = lua_tolstring(L, -1, &names[i - 1].len);
        names[i - 1].pos = i;
        lua_pop(L, 1);
    }
    qsort(names, (size_t)nnames, sizeof *names, name_cmp);
    lua_createtable(L, (int)nnames, 0);
    for (lua_Integer i = 1; i <= nnames; i++) {
        lua_rawgeti(L, 3, names[i - 1].pos);
        lua_rawget(L, 2);
        lua_rawseti(L, -2, i);
    }
    return 1;
}

static int merge_attribute_names(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_settop(L, 1);
    lua_newtable(L);                                     /* 2 */
    for (lua_Integer i = 1; lua_rawgeti(L, 1, i) == LUA_TTABLE; i++) {
        if (rawkey(L, 3, K_ATTRS) == LUA_TTABLE) {
            lua_pushnil(L);
            while (lua_next(L, 4)) {
                lua_pop(L, 1);
                lua_pushvalue(L, -1);
                lua_pushboolean(L, 1);
                lua_rawset(L, 2);
            }
        }
        lua_settop(L, 2);
    }
    lua_settop(L, 2);
    return 1;
}

int luaopen_fluence_merge(lua_State *L)
{
    lua_newtable(L);
    lua_pushliteral(L, "name");
    lua_pushliteral(L, "attrs");
    lua_pushliteral(L, "source");
    lua_pushliteral(L, "provider");
    lua_pushliteral(L, "backends");
    lua_pushcclosure(L, merge_merge, 5);
    lua_setfield(L, -2, "merge");
    lua_pushliteral(L, "name");
    lua_pushliteral(L, "attrs");
    lua_pushcclosure(L, merge_attribute_names, 2);
    lua_setfield(L, -2, "attribute_names");
    return 1;
}
