/* fluence.json — JSON decoding (jansson) and encoding (our own, for control
 * over number formatting and key order).
 *
 *   json.decode(text [, name]) -> value | nil, "name:line:col: message ..."
 *   json.encode(value [, {indent = n}]) -> text   (raises on cycles, NaN, bad keys)
 *   json.null, json.array(t), json.object(t), json.is_array(t)
 *
 * Decoded arrays and objects carry the metatables json.array_mt / json.object_mt
 * so an empty one re-encodes with the right brackets.  Object keys encode in
 * the order given by the metatable's __order list, then sorted. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include <lauxlib.h>
#include "json_write.h"
#include "location.h"
#include "strbuf.h"

#define ARRAY_MT "fluence.json.array"
#define OBJECT_MT "fluence.json.object"
#define MAX_DEPTH 512

static char null_sentinel;

static void push_value(lua_State *L, json_t *v, int depth);

static void push_value(lua_State *L, json_t *v, int depth)
{
    luaL_checkstack(L, 4, "JSON nesting");
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        const char *k;
        json_t *x;
        lua_createtable(L, 0, (int)json_object_size(v));
        json_object_foreach(v, k, x) {
            push_value(L, x, depth + 1);
            lua_setfield(L, -2, k);
        }
        luaL_setmetatable(L, OBJECT_MT);
        break;
    }
    case JSON_ARRAY: {
        size_t i;
        json_t *x;
        lua_createtable(L, (int)json_array_size(v), 0);
        json_array_foreach(v, i, x) {
            push_value(L, x, depth + 1);
            lua_rawseti(L, -2, (lua_Integer)i + 1);
        }
        luaL_setmetatable(L, ARRAY_MT);
        break;
    }
    case JSON_STRING: lua_pushlstring(L, json_string_value(v), json_string_length(v)); break;
    case JSON_INTEGER: lua_pushinteger(L, (lua_Integer)json_integer_value(v)); break;
    case JSON_REAL: lua_pushnumber(L, json_real_value(v)); break;
    case JSON_TRUE: lua_pushboolean(L, 1); break;
    case JSON_FALSE: lua_pushboolean(L, 0); break;
    case JSON_NULL: lua_pushlightuserdata(L, &null_sentinel); break;
    }
}

/* The decoded jansson tree must be freed even if building Lua values raises
 * (out of memory): hold it in a userdata whose __gc frees it. */
static int tree_gc(lua_State *L)
{
    json_t **p = lua_touserdata(L, 1);
    if (*p) { json_decref(*p); *p = NULL; }
    return 0;
}

/* [-0, +1] A copy of JSON text whose integers beyond int64 end in ".0"
 * (jansson refuses them as integers; Lua, like Go's unstructured decoder
 * and the API server, takes them as floats). */
static struct strbuf *widen_big_integers(lua_State *L, const char *s, size_t len)
{
    struct strbuf *b = strbuf_push(L);
    size_t i = 0;
    while (i < len) {
        char c = s[i];
        if (c == '"') {                                     /* a string, copied whole */
            size_t j = i + 1;
            while (j < len && s[j] != '"') j += s[j] == '\\' ? 2 : 1;
            if (j > len) j = len;
            strbuf_add(L, b, s + i, j < len ? j + 1 - i : len - i);
            i = j + 1;
            continue;
        }
        if (c == '-' || (c >= '0' && c <= '9')) {
            size_t j = i + (c == '-');
            while (j < len && s[j] >= '0' && s[j] <= '9') j++;
            int integer = !(j < len && (s[j] == '.' || s[j] == 'e' || s[j] == 'E'));
            while (j < len && (s[j] == '.' || s[j] == 'e' || s[j] == 'E' || s[j] == '+' || s[j] == '-' ||
                               (s[j] >= '0' && s[j] <= '9')))
                j++;
            strbuf_add(L, b, s + i, j - i);
            if (integer && j - i <= 64) {
                char num[72];
                memcpy(num, s + i, j - i);
                num[j - i] = 0;
                errno = 0;
                (void)strtoll(num, NULL, 10);
                if (errno == ERANGE) strbuf_adds(L, b, ".0");
            } else if (integer) strbuf_adds(L, b, ".0");
            i = j;
            continue;
        }
        strbuf_addc(L, b, c);
        i++;
    }
    return b;
}

static int json_decode(lua_State *L)
{
    size_t len;
    const char *text = luaL_checklstring(L, 1, &len);
    const char *name = luaL_optstring(L, 2, "<json>");
    json_t **holder = lua_newuserdatauv(L, sizeof *holder, 0);
    *holder = NULL;
    lua_newtable(L);
    lua_pushcfunction(L, tree_gc);
    lua_setfield(L, -2, "__gc");
    lua_setmetatable(L, -2);
    json_error_t err;
    /* "\u0000" in a string is JSON (kubectl sends a YAML "\0" so); Lua
     * strings hold it */
    *holder = json_loadb(text, len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &err);
    if (!*holder && strncmp(err.text, "too big", 7) == 0) {
        /* an integer beyond int64 is a float, as Go's decoders make it */
        struct strbuf *wide = widen_big_integers(L, text, len);
        *holder = json_loadb(wide->data, wide->len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &err);
        lua_pop(L, 1);
    }
    if (!*holder) {
        lua_pushnil(L);
        fluence_push_located(L, name, text, len, err.line > 0 ? (size_t)err.line : 1,
                             err.column > 0 ? (size_t)err.column : 0, err.text);
        return 2;
    }
    push_value(L, *holder, 0);
    json_decref(*holder);
    *holder = NULL;
    return 1;
}

/* ---- encoding ---- */

/* Integral values print without a fraction; others as the shortest decimal
 * that reads back as the same double. */
static void add_number(lua_State *L, struct strbuf *b, int idx)
{
    char buf[40];
    if (lua_isinteger(L, idx)) {
        snprintf(buf, sizeof buf, "%lld", (long long)lua_tointeger(L, idx));
    } else {
        double d = lua_tonumber(L, idx);
        if (!isfinite(d)) luaL_error(L, "cannot encode %s in JSON", isnan(d) ? "NaN" : "infinity");
        if (d == 0 && signbit(d)) {
            /* "-0" would read back as the integer 0 (found by make fuzz) */
            snprintf(buf, sizeof buf, "-0.0");
        } else if (d == floor(d) && fabs(d) < 9007199254740992.0) {
            snprintf(buf, sizeof buf, "%.0f", d);
        } else {
            for (int prec = 15; prec <= 17; prec++) {
                snprintf(buf, sizeof buf, "%.*g", prec, d);
                if (strtod(buf, NULL) == d) break;
            }
        }
    }
    strbuf_adds(L, b, buf);
}

static int is_array(lua_State *L, int idx)
{
    if (luaL_getmetafield(L, idx, "__name") != LUA_TNIL) {
        const char *n = lua_tostring(L, -1);
        int arr = n && strcmp(n, ARRAY_MT) == 0;
        int obj = n && strcmp(n, OBJECT_MT) == 0;
        lua_pop(L, 1);
        if (arr) return 1;
        if (obj) return 0;
    }
    /* a plain table is an array when it has [1] and only keys 1..n */
    lua_Integer n = (lua_Integer)lua_rawlen(L, idx);
    if (n == 0) return 0;
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        lua_pop(L, 1);
        if (!lua_isinteger(L, -1) || lua_tointeger(L, -1) < 1 || lua_tointeger(L, -1) > n) {
            lua_pop(L, 1);
            return 0;
        }
    }
    return 1;
}

static void encode(lua_State *L, struct strbuf *b, int idx, int indent, int depth);

/* Object keys: those the metatable's __order list names first, in its order,
 * then the others in byte order (what table.sort's < gives in the C locale,
 * fluence's).  Gathered into a C array: a small object (an audit's) is
 * encoded without building three Lua tables and calling table.sort for each.
 * The key strings stay referenced by the table, which is on the stack. */
struct jkey { const char *s; size_t len; int ordered; };

static int jkey_cmp(const void *x, const void *y)
{
    const struct jkey *a = x, *b = y;
    int c = memcmp(a->s, b->s, a->len < b->len ? a->len : b->len);
    return c ? c : (a->len > b->len) - (a->len < b->len);
}

static void encode_member(lua_State *L, struct strbuf *b, int idx, int indent, int depth, int first)
{
    /* the key is on the top of the stack */
    if (!first) strbuf_addc(L, b, ',');
    jw_newline(L, b, indent, depth + 1);
    size_t kl;
    const char *k = lua_tolstring(L, -1, &kl);
    jw_string(L, b, k, kl, 0);
    strbuf_adds(L, b, indent ? ": " : ":");
    lua_rawget(L, idx);
    encode(L, b, lua_gettop(L), indent, depth + 1);
    lua_pop(L, 1);
}

static void encode_object(lua_State *L, struct strbuf *b, int idx, int indent, int depth)
{
    size_t n = 0;
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        lua_pop(L, 1);
        if (lua_type(L, -1) != LUA_TSTRING)
            luaL_error(L, "cannot encode a %s key in a JSON object", luaL_typename(L, -1));
        n++;
    }
    struct jkey small[32], *keys = small;
    if (n > sizeof small / sizeof *small) keys = lua_newuserdatauv(L, n * sizeof *keys, 0);
    size_t i = 0;
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        lua_pop(L, 1);
        keys[i].s = lua_tolstring(L, -1, &keys[i].len);
        keys[i++].ordered = 0;
    }
    qsort(keys, n, sizeof *keys, jkey_cmp);
    strbuf_addc(L, b, '{');
    int first = 1;
    if (luaL_getmetafield(L, idx, "__order") != LUA_TNIL) {
        if (lua_istable(L, -1)) {
            int order = lua_gettop(L);
            for (lua_Integer o = 1; lua_rawgeti(L, order, o) == LUA_TSTRING; o++) {
                struct jkey k;
                k.s = lua_tolstring(L, -1, &k.len);
                struct jkey *hit = n ? bsearch(&k, keys, n, sizeof *keys, jkey_cmp) : NULL;
                if (!hit) { lua_pop(L, 1); continue; }
                hit->ordered = 1;
                encode_member(L, b, idx, indent, depth, first);
                first = 0;
            }
            lua_pop(L, 1);
        }
        lua_pop(L, 1);
    }
    for (i = 0; i < n; i++) {
        if (keys[i].ordered) continue;
        lua_pushlstring(L, keys[i].s, keys[i].len);
        encode_member(L, b, idx, indent, depth, first);
        first = 0;
    }
    if (!first) jw_newline(L, b, indent, depth);
    strbuf_addc(L, b, '}');
    if (keys != small) lua_pop(L, 1);
}

static void encode(lua_State *L, struct strbuf *b, int idx, int indent, int depth)
{
    luaL_checkstack(L, 8, "JSON encode");
    if (depth > MAX_DEPTH) luaL_error(L, "cannot encode in JSON: nesting too deep (a cycle?)");
    switch (lua_type(L, idx)) {
    case LUA_TNIL: strbuf_adds(L, b, "null"); return;
    case LUA_TBOOLEAN: strbuf_adds(L, b, lua_toboolean(L, idx) ? "true" : "false"); return;
    case LUA_TNUMBER: add_number(L, b, idx); return;
    case LUA_TSTRING: {
        size_t len;
        const char *s = lua_tolstring(L, idx, &len);
        jw_string(L, b, s, len, 0);
        return;
    }
    case LUA_TLIGHTUSERDATA:
        if (lua_touserdata(L, idx) == &null_sentinel) { strbuf_adds(L, b, "null"); return; }
        break;
    case LUA_TTABLE:
        if (is_array(L, idx)) {
            lua_Integer n = (lua_Integer)lua_rawlen(L, idx);
            strbuf_addc(L, b, '[');
            for (lua_Integer i = 1; i <= n; i++) {
                if (i > 1) strbuf_addc(L, b, ',');
                jw_newline(L, b, indent, depth + 1);
                lua_rawgeti(L, idx, i);
                encode(L, b, lua_gettop(L), indent, depth + 1);
                lua_pop(L, 1);
            }
            if (n > 0) jw_newline(L, b, indent, depth);
            strbuf_addc(L, b, ']');
        } else {
            encode_object(L, b, idx, indent, depth);
        }
        return;
    default:
        break;
    }
    luaL_error(L, "cannot encode a %s value in JSON", luaL_typename(L, idx));
}

static int json_encode(lua_State *L)
{
    luaL_checkany(L, 1);
    int indent = 0;
    if (lua_istable(L, 2)) {
        lua_getfield(L, 2, "indent");
        indent = (int)luaL_optinteger(L, -1, 0);
        lua_pop(L, 1);
    }
    lua_settop(L, 1);
    struct strbuf *b = strbuf_push(L);
    encode(L, b, 1, indent, 0);
    strbuf_pushresult(L, b);
    return 1;
}

static int set_mt(lua_State *L, const char *mt)
{
    if (lua_isnoneornil(L, 1)) { lua_settop(L, 0); lua_newtable(L); }
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_settop(L, 1);
    luaL_setmetatable(L, mt);
    return 1;
}
static int l_json_array(lua_State *L) { return set_mt(L, ARRAY_MT); }
static int l_json_object(lua_State *L) { return set_mt(L, OBJECT_MT); }

static int l_json_is_array(lua_State *L)
{
    lua_pushboolean(L, lua_istable(L, 1) && is_array(L, 1));
    return 1;
}

static const luaL_Reg json_funcs[] = {
    {"decode", json_decode},
    {"encode", json_encode},
    {"array", l_json_array},
    {"object", l_json_object},
    {"is_array", l_json_is_array},
    {NULL, NULL}
};

int luaopen_fluence_json(lua_State *L)
{
    luaL_newlib(L, json_funcs);
    luaL_newmetatable(L, ARRAY_MT);
    lua_setfield(L, -2, "array_mt");
    luaL_newmetatable(L, OBJECT_MT);
    lua_setfield(L, -2, "object_mt");
    lua_pushlightuserdata(L, &null_sentinel);
    lua_setfield(L, -2, "null");
    return 1;
}
