/* fluence.attrfile — attribute files in the Go client's format (YAML, or
 * JSON, which is YAML too) decoded straight from libyaml's events into
 * backend records, with no document tree, no marks and no second pass:
 *
 *   attrfile.decode(text, name) -> { record, ... } | nil
 *     record = { name = "gpu-l4",
 *                attrs = { ... },   -- attributes, then strings over them,
 *                                   -- then the top-level fields over both
 *                cost = { task =, shot =, minute = } | nil }
 *                                   -- the top-level cost fields, when given
 *
 * nil means "not decided here": the text is not a well-formed attribute file,
 * or uses what this reader leaves to the general one (anchors, aliases,
 * merge keys, collections where the format has none, a mapping of more than
 * MAX_KEYS keys).  lua/fluence/catalog.lua then decodes the text with
 * fluence.yaml and its marks: the same records, or the located error.  That
 * reader is the reference; spec/attrfile_spec.lua checks both agree on every
 * file of a generated corpus, good and bad.
 *
 * A `graph` top-level field, relative, is made relative to the directory of
 * `name` (the file's path).  Scalars resolve as fluence.yaml resolves them
 * (yaml_scalar.h), so values keep their Lua types (integer or float).
 *
 *   attrfile.latest({ records, ... }) -> { record, ... }
 *     one record per name, the last of the lists, at its name's first place */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>
#include <lauxlib.h>
#include "yaml_scalar.h"

#define MAX_KEYS 64               /* per mapping: duplicate checks are linear */

/* The top-level fields, in the order the file provider applies them. */
static const char *const FIELDS[] = {
    "provider", "region", "device_arn", "graph",                       /* strings */
    "cost_per_task", "cost_per_shot", "cost_per_minute", "qubits",      /* finite numbers */
    NULL
};
enum { F_STRINGS = 4, F_GRAPH = 3, F_TASK = 4, F_SHOT = 5, F_MINUTE = 6, NFIELDS = 8 };

struct key { size_t at, len; };

struct dec {
    yaml_parser_t parser;
    yaml_event_t ev;
    int have_event, ready;
    char *keys;                   /* key bytes of the open mappings */
    size_t klen, kcap;
    struct key *kv;               /* per open mapping, a frame of keys */
    size_t nkv, capkv;
};

static int dec_gc(lua_State *L)
{
    struct dec *d = lua_touserdata(L, 1);
    if (d->have_event) yaml_event_delete(&d->ev);
    if (d->ready) yaml_parser_delete(&d->parser);
    free(d->keys);
    free(d->kv);
    memset(d, 0, sizeof *d);
    return 0;
}

/* The next event; 0 when libyaml reports an error (left to the reference). */
static int next(struct dec *d)
{
    if (d->have_event) { yaml_event_delete(&d->ev); d->have_event = 0; }
    if (!yaml_parser_parse(&d->parser, &d->ev)) return 0;
    d->have_event = 1;
    return 1;
}

/* A collection start this reader takes: no anchor (aliases are not taken). */
static int plain_start(const yaml_event_t *ev, yaml_event_type_t type)
{
    if (ev->type != type) return 0;
    return type == YAML_MAPPING_START_EVENT ? ev->data.mapping_start.anchor == NULL
                                            : ev->data.sequence_start.anchor == NULL;
}

static int is_scalar(const yaml_event_t *ev)
{
    return ev->type == YAML_SCALAR_EVENT && ev->data.scalar.anchor == NULL;
}

/* Records the current event's scalar as a key of the frame that starts at
 * kv index frame; 0 when it is there already (a duplicate), a merge key,
 * the frame is full, or memory ran out. */
static int add_key(struct dec *d, size_t frame)
{
    const char *s = (const char *)d->ev.data.scalar.value;
    size_t n = d->ev.data.scalar.length;
    if (d->ev.data.scalar.style == YAML_PLAIN_SCALAR_STYLE && n == 2 && memcmp(s, "<<", 2) == 0) return 0;
    if (d->nkv - frame >= MAX_KEYS) return 0;
    for (size_t i = frame; i < d->nkv; i++)
        if (d->kv[i].len == n && (n == 0 || memcmp(d->keys + d->kv[i].at, s, n) == 0)) return 0;
    if (!d->keys || d->klen + n > d->kcap) {      /* (never NULL after: "" keys point into it) */
        size_t cap = d->kcap ? d->kcap : 1024;
        while (cap < d->klen + n) cap *= 2;
        char *k = realloc(d->keys, cap);
        if (!k) return 0;
        d->keys = k;
        d->kcap = cap;
    }
    if (d->nkv == d->capkv) {
        size_t cap = d->capkv ? d->capkv * 2 : 64;
        struct key *k = realloc(d->kv, cap * sizeof *k);
        if (!k) return 0;
        d->kv = k;
        d->capkv = cap;
    }
    memcpy(d->keys + d->klen, s, n);
    d->kv[d->nkv].at = d->klen;
    d->kv[d->nkv].len = n;
    d->nkv++;
    d->klen += n;
    return 1;
}

static void drop_frame(struct dec *d, size_t frame)
{
    if (frame < d->nkv) d->klen = d->kv[frame].at;
    d->nkv = frame;
}

/* [-0, +1]  Pushes the current scalar's value as fluence.yaml would: a
 * quoted or !!str scalar is a string, a plain one resolves by the core
 * schema (null as a light userdata NULL). */
static void push_scalar(lua_State *L, const yaml_event_t *ev)
{
    const char *s = (const char *)ev->data.scalar.value;
    size_t n = ev->data.scalar.length;
    const char *tag = (const char *)ev->data.scalar.tag;
    if (ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE || (tag && strcmp(tag, YAML_STR_TAG) == 0))
        lua_pushlstring(L, s, n);
    else
        fluence_yaml_plain(L, s, n);
}

static int finite_number(lua_State *L, int idx)
{
    return lua_type(L, idx) == LUA_TNUMBER && (lua_isinteger(L, idx) || isfinite(lua_tonumber(L, idx)));
}

/* A value this reader skips (a key the format does not define): a scalar.
 * 1 when skipped, 0 to leave the text to the reference. */
static int skip_value(struct dec *d)
{
    return is_scalar(&d->ev);
}

static int field_index(const char *k, size_t n)
{
    for (int i = 0; FIELDS[i]; i++)
        if (strlen(FIELDS[i]) == n && memcmp(FIELDS[i], k, n) == 0) return i;
    return -1;
}

/* attributes (numbers) or strings (strings) of a backend, into attrs at
 * stack index a, in the provider's order whatever the document's: strings
 * over attributes, the top-level fields (given) over both.  An attribute
 * finds its key set already only when strings or a given field set it (its
 * own keys are unique): then it yields. */
static int section(lua_State *L, struct dec *d, int a, int numbers, const int *given)
{
    if (plain_start(&d->ev, YAML_SEQUENCE_START_EVENT))        /* [] is an empty mapping to the provider */
        return next(d) && d->ev.type == YAML_SEQUENCE_END_EVENT;
    if (!plain_start(&d->ev, YAML_MAPPING_START_EVENT)) return 0;
    size_t frame = d->nkv;
    for (;;) {
        if (!next(d)) return 0;
        if (d->ev.type == YAML_MAPPING_END_EVENT) break;
        if (!is_scalar(&d->ev) || !add_key(d, frame)) return 0;
        struct key k = d->kv[d->nkv - 1];
        if (!next(d) || !is_scalar(&d->ev)) return 0;
        lua_pushlstring(L, d->keys + k.at, k.len);
        push_scalar(L, &d->ev);
        if (numbers ? !finite_number(L, -1) : lua_type(L, -1) != LUA_TSTRING) return 0;
        int blocked;
        if (numbers) {
            lua_pushvalue(L, -2);
            blocked = lua_rawget(L, a) != LUA_TNIL;
            lua_pop(L, 1);
        } else {
            int f = field_index(d->keys + k.at, k.len);
            blocked = f >= 0 && given[f];
        }
        if (blocked) lua_pop(L, 2);
        else lua_rawset(L, a);
    }
    drop_frame(d, frame);
    return 1;
}

/* One backend mapping (the current event) -> a record pushed on the stack,
 * or 0.  dir: the file's directory for a relative graph. */
static int backend(lua_State *L, struct dec *d, const char *dir, size_t dirlen)
{
    if (!plain_start(&d->ev, YAML_MAPPING_START_EVENT)) return 0;
    lua_createtable(L, 0, 2);                                  /* the record */
    int rec = lua_gettop(L);
    lua_createtable(L, 0, 8);                                  /* its attrs */
    int a = rec + 1;
    int given[NFIELDS] = {0}, have_name = 0, have_cost = 0;
    double cost[3] = {0};
    int cost_int[3] = {0};
    lua_Integer cost_i[3] = {0};
    size_t frame = d->nkv;                                     /* the backend's own keys */
    for (;;) {
        if (!next(d)) return 0;
        if (d->ev.type == YAML_MAPPING_END_EVENT) break;
        if (!is_scalar(&d->ev) || !add_key(d, frame)) return 0;
        struct key k = d->kv[d->nkv - 1];
        const char *ks = d->keys + k.at;
        if (!next(d)) return 0;
        if (k.len == 4 && memcmp(ks, "name", 4) == 0) {
            if (!is_scalar(&d->ev)) return 0;
            push_scalar(L, &d->ev);
            if (lua_type(L, -1) != LUA_TSTRING || lua_rawlen(L, -1) == 0) return 0;
            lua_setfield(L, rec, "name");
            have_name = 1;
        } else if ((k.len == 10 && memcmp(ks, "attributes", 10) == 0) ||
                   (k.len == 7 && memcmp(ks, "strings", 7) == 0)) {
            if (!section(L, d, a, k.len == 10, given)) return 0;
        } else {
            int f = field_index(ks, k.len);
            if (f < 0) {
                if (!skip_value(d)) return 0;
                continue;
            }
            if (!is_scalar(&d->ev)) return 0;
            push_scalar(L, &d->ev);
            if (f < F_STRINGS ? lua_type(L, -1) != LUA_TSTRING : !finite_number(L, -1)) return 0;
            if (f == F_GRAPH && lua_tostring(L, -1)[0] != '/') {
                lua_pushlstring(L, dir, dirlen);
                lua_pushliteral(L, "/");
                lua_rotate(L, -3, 2);
                lua_concat(L, 3);
            }
            if (f >= F_TASK && f <= F_MINUTE) {
                int c = f - F_TASK;
                cost_int[c] = lua_isinteger(L, -1);
                if (cost_int[c]) cost_i[c] = lua_tointeger(L, -1); else cost[c] = lua_tonumber(L, -1);
                have_cost |= 1 << c;
            }
            lua_setfield(L, a, FIELDS[f]);
            given[f] = 1;
        }
    }
    drop_frame(d, frame);
    if (!have_name) return 0;
    lua_pushvalue(L, a);
    lua_setfield(L, rec, "attrs");
    if (have_cost) {
        static const char *const names[] = { "task", "shot", "minute" };
        lua_createtable(L, 0, 3);
        for (int c = 0; c < 3; c++) {
            if (!(have_cost & (1 << c))) continue;
            if (cost_int[c]) lua_pushinteger(L, cost_i[c]); else lua_pushnumber(L, cost[c]);
            lua_setfield(L, -2, names[c]);
        }
        lua_setfield(L, rec, "cost");
    }
    lua_settop(L, rec);
    return 1;
}

/* The whole first document; leaves the records list on the stack top, or 0. */
static int document(lua_State *L, struct dec *d, const char *dir, size_t dirlen)
{
    if (!next(d) || d->ev.type != YAML_STREAM_START_EVENT) return 0;
    if (!next(d) || d->ev.type != YAML_DOCUMENT_START_EVENT) return 0;
    if (!next(d) || !plain_start(&d->ev, YAML_MAPPING_START_EVENT)) return 0;
    int list = 0;
    size_t frame = d->nkv;
    for (;;) {
        if (!next(d)) return 0;
        if (d->ev.type == YAML_MAPPING_END_EVENT) break;
        if (!is_scalar(&d->ev) || !add_key(d, frame)) return 0;
        struct key k = d->kv[d->nkv - 1];
        int is_backends = k.len == 8 && memcmp(d->keys + k.at, "backends", 8) == 0;
        if (!next(d)) return 0;
        if (!is_backends) {
            if (!skip_value(d)) return 0;
            continue;
        }
        if (!plain_start(&d->ev, YAML_SEQUENCE_START_EVENT)) return 0;
        lua_newtable(L);
        list = lua_gettop(L);
        lua_Integer n = 0;
        for (;;) {
            if (!next(d)) return 0;
            if (d->ev.type == YAML_SEQUENCE_END_EVENT) break;
            luaL_checkstack(L, 8, "attribute file");
            if (!backend(L, d, dir, dirlen)) return 0;
            lua_rawseti(L, list, ++n);
        }
        if (n == 0) return 0;                                  /* "no backends defined" */
    }
    if (!list) return 0;
    /* the document's end, as fluence.yaml reads it (an error there is one) */
    if (!next(d) || d->ev.type != YAML_DOCUMENT_END_EVENT) return 0;
    lua_pushvalue(L, list);
    return 1;
}

static int attrfile_decode(lua_State *L)
{
    size_t len, nlen;
    const char *text = luaL_checklstring(L, 1, &len);
    const char *name = luaL_optlstring(L, 2, "", &nlen);
    lua_settop(L, 2);
    /* the directory a relative graph is under: name's, else "." */
    const char *slash = NULL;
    for (const char *p = name; p < name + nlen; p++) if (*p == '/') slash = p;
    const char *dir = slash ? name : ".";
    size_t dirlen = slash ? (size_t)(slash - name) : 1;
    struct dec *d = lua_newuserdatauv(L, sizeof *d, 0);        /* 3: owns libyaml's state */
    memset(d, 0, sizeof *d);
    lua_newtable(L);
    lua_pushcfunction(L, dec_gc);
    lua_setfield(L, -2, "__gc");
    lua_setmetatable(L, 3);
    if (!yaml_parser_initialize(&d->parser)) return luaL_error(L, "not enough memory");
    d->ready = 1;
    yaml_parser_set_input_string(&d->parser, (const unsigned char *)text, len);
    int ok = document(L, d, dir, dirlen);
    if (!ok) lua_pushnil(L);
    lua_pushcfunction(L, dec_gc);                             /* free libyaml's state now */
    lua_pushvalue(L, 3);
    lua_call(L, 1, 0);
    return 1;
}

/* latest({ records, ... }) -> { record, ... }: the records of every list,
 * one per name: the last given for it, where its name first appeared (the
 * file provider's rule for later files).  In C, the map of names made at its
 * full size once: built in the provider's Lua, under its instruction-count
 * hook and growing a step at a time, it was a tenth of a 10,000-backend
 * file's reading. */
static int attrfile_latest(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_settop(L, 1);
    lua_Integer nlists = (lua_Integer)lua_rawlen(L, 1);
    size_t total = 0;
    for (lua_Integer l = 1; l <= nlists; l++) {
        if (lua_rawgeti(L, 1, l) != LUA_TTABLE) return luaL_error(L, "latest: list #%d is not a table", (int)l);
        total += lua_rawlen(L, -1);
        lua_pop(L, 1);
    }
    int size = total > (size_t)INT_MAX ? INT_MAX : (int)total;
    lua_createtable(L, 0, size);                               /* 2: name -> position */
    lua_createtable(L, size, 0);                               /* 3: the records */
    lua_Integer n = 0;
    for (lua_Integer l = 1; l <= nlists; l++) {
        lua_rawgeti(L, 1, l);                                  /* 4 */
        for (lua_Integer i = 1; lua_rawgeti(L, 4, i) != LUA_TNIL; i++) {   /* 5: a record */
            lua_getfield(L, 5, "name");                        /* 6 */
            lua_pushvalue(L, 6);
            lua_Integer at = lua_rawget(L, 2) == LUA_TNUMBER ? lua_tointeger(L, -1) : 0;
            lua_pop(L, 1);
            if (!at) {
                at = ++n;
                lua_pushinteger(L, at);
                lua_rawset(L, 2);                              /* map[name] = at (pops the name) */
            } else lua_pop(L, 1);
            lua_rawseti(L, 3, at);                             /* pops the record */
        }
        lua_settop(L, 3);
    }
    return 1;
}

int luaopen_fluence_attrfile(lua_State *L)
{
    static const luaL_Reg funcs[] = { {"decode", attrfile_decode}, {"latest", attrfile_latest}, {NULL, NULL} };
    luaL_newlib(L, funcs);
    return 1;
}
