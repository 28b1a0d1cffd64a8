/* fluence.yaml — YAML decoding with libyaml into Lua values.
 *
 *   yaml.decode(text [, name]) -> value | nil, err        first document
 *   yaml.decode_all(text [, name]) -> {doc, ...} | nil, err
 *   yaml.marks(value) -> {line=, col=, keys={k={line=,col=}}} | nil
 *
 * Scalars follow the YAML 1.2 core schema: null, true/false, integers (also
 * 0x / 0o), floats (.inf, .nan); quoted or !!str scalars stay strings.
 * Mappings and sequences get fluence.json's object/array metatables, so a
 * decoded document re-encodes as JSON faithfully.  Errors are located
 * ("name:line:col: message" with the source line and a caret).
 *
 * Hostile input (yaml_limits.h): duplicate keys are an error; nesting is
 * limited; an alias inside its own anchor (a cycle) is refused; a merge key
 * takes a mapping or a list of mappings and never recurses; aliases are
 * shared (not copied) and the total size they would expand to is bounded by
 * the input's size, so a "billion laughs" document fails fast instead of
 * exhausting memory in whatever walks the value later. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>
#include <lauxlib.h>
#include "location.h"
#include "yaml_limits.h"
#include "yaml_problem.h"
#include "yaml_scalar.h"

struct decoder {
    yaml_parser_t parser;
    yaml_event_t event;
    int have_event, parser_ready;
    const char *name, *text;
    size_t len;
    double expanded, budget;      /* weight aliases stand for, and its bound (yaml_limits.h) */
    int anchors, marks;           /* stack indices: anchor name -> {value, weight}; marks table */
};

static int decoder_gc(lua_State *L)
{
    struct decoder *d = lua_touserdata(L, 1);
    if (d->have_event) yaml_event_delete(&d->event);
    if (d->parser_ready) yaml_parser_delete(&d->parser);
    d->have_event = d->parser_ready = 0;
    return 0;
}

static int fail_at(lua_State *L, struct decoder *d, yaml_mark_t m, const char *msg)
{
    fluence_push_located(L, d->name, d->text, d->len, m.line + 1, m.column + 1, msg);
    return lua_error(L);
}

static void next_event(lua_State *L, struct decoder *d)
{
    if (d->have_event) { yaml_event_delete(&d->event); d->have_event = 0; }
    if (!yaml_parser_parse(&d->parser, &d->event)) {
        yaml_parser_t *p = &d->parser;
        yaml_mark_t m = p->problem_mark;
        if (p->error == YAML_MEMORY_ERROR) luaL_error(L, "not enough memory");
        fluence_yaml_push_problem(L, p, d->text, d->len);
        fail_at(L, d, m, lua_tostring(L, -1));
    }
    d->have_event = 1;
}

static void push_mark(lua_State *L, yaml_mark_t m)
{
    lua_createtable(L, 0, 2);
    lua_pushinteger(L, (lua_Integer)m.line + 1);
    lua_setfield(L, -2, "line");
    lua_pushinteger(L, (lua_Integer)m.column + 1);
    lua_setfield(L, -2, "col");
}

static double parse_node(lua_State *L, struct decoder *d, int depth);

/* Is the table at idx a decoded sequence (not a mapping)? */
static int is_sequence(lua_State *L, int idx)
{
    if (!lua_getmetatable(L, idx)) return 0;
    lua_getfield(L, lua_upvalueindex(1), "array_mt");
    int seq = lua_rawequal(L, -1, -2);
    lua_pop(L, 2);
    return seq;
}

/* Copies the keys of mapping src that dst lacks into dst. */
static void merge_map(lua_State *L, struct decoder *d, int dst, int src, yaml_mark_t at)
{
    if (!lua_istable(L, src) || is_sequence(L, src)) fail_at(L, d, at, FLUENCE_YAML_BAD_MERGE);
    lua_pushnil(L);
    while (lua_next(L, src)) {
        lua_pushvalue(L, -2);
        if (lua_rawget(L, dst) == LUA_TNIL) {
            lua_pop(L, 1);
            lua_pushvalue(L, -2);
            lua_insert(L, -2);
            lua_rawset(L, dst);
        } else lua_pop(L, 2);
    }
}

/* Merges the value at top of stack (a mapping, or a sequence of mappings,
 * the earlier winning) into the mapping below it, keeping keys that already
 * exist (YAML merge key "<<"), and pops it.  A sequence's members must be
 * mappings: merging never recurses, whatever aliases the value holds. */
static void merge_into(lua_State *L, struct decoder *d, yaml_mark_t at)
{
    int src = lua_gettop(L), dst = src - 1;
    if (!lua_istable(L, src)) fail_at(L, d, at, FLUENCE_YAML_BAD_MERGE);
    if (is_sequence(L, src)) {
        for (lua_Integer i = 1; lua_rawgeti(L, src, i) != LUA_TNIL; i++) {
            merge_map(L, d, dst, src + 1, at);
            lua_pop(L, 1);
        }
        lua_pop(L, 1);
    } else merge_map(L, d, dst, src, at);
    lua_pop(L, 1);
}

/* Anchors are registered when their node starts with weight -1, "open": an
 * alias inside would make the value contain itself, and is refused.  The
 * real weight is set when the node ends. */
static void register_anchor(lua_State *L, struct decoder *d, int name)
{
    lua_pushvalue(L, name);
    lua_createtable(L, 2, 0);
    lua_pushvalue(L, -3);          /* the node's table, just below the name copy */
    lua_rawseti(L, -2, 1);
    lua_pushnumber(L, -1);
    lua_rawseti(L, -2, 2);
    lua_rawset(L, d->anchors);
}

static void set_anchor_weight(lua_State *L, struct decoder *d, int name, double w)
{
    lua_pushvalue(L, name);
    if (lua_rawget(L, d->anchors) == LUA_TTABLE) {
        lua_pushnumber(L, w);
        lua_rawseti(L, -2, 2);
    }
    lua_pop(L, 1);
}

static void remember_anchor(lua_State *L, struct decoder *d, const yaml_char_t *anchor, double weight)
{
    if (!anchor) return;
    lua_createtable(L, 2, 0);
    lua_pushvalue(L, -2);
    lua_rawseti(L, -2, 1);
    lua_pushnumber(L, weight);
    lua_rawseti(L, -2, 2);
    lua_setfield(L, d->anchors, (const char *)anchor);
}

/* Parses the node starting at the current event; pushes its value and returns
 * its weight (what it stands for, aliases expanded: yaml_limits.h). */
static double parse_node(lua_State *L, struct decoder *d, int depth)
{
    yaml_event_t *ev = &d->event;
    yaml_mark_t start = ev->start_mark;
    /* fail_at itself needs a few slots: asked for with the node's */
    if (depth > FLUENCE_YAML_MAX_DEPTH || !lua_checkstack(L, 20)) fail_at(L, d, start, FLUENCE_YAML_TOO_DEEP);
    switch (ev->type) {
    case YAML_ALIAS_EVENT: {
        if (lua_getfield(L, d->anchors, (const char *)ev->data.alias.anchor) != LUA_TTABLE)
            fail_at(L, d, start, "unknown alias");
        lua_rawgeti(L, -1, 2);
        double w = lua_tonumber(L, -1);
        lua_pop(L, 1);
        if (w < 0) {
            lua_pushfstring(L, "alias *%s names a node that contains it (a recursive alias)",
                            (const char *)ev->data.alias.anchor);
            fail_at(L, d, start, lua_tostring(L, -1));
        }
        lua_rawgeti(L, -1, 1);
        lua_remove(L, -2);
        d->expanded += w;
        if (d->expanded > d->budget) fail_at(L, d, start, FLUENCE_YAML_TOO_BIG);
        return w;
    }
    case YAML_SCALAR_EVENT: {
        const char *s = (const char *)ev->data.scalar.value;
        size_t len = ev->data.scalar.length;
        const char *tag = (const char *)ev->data.scalar.tag;
        if (ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE ||
            (tag && strcmp(tag, YAML_STR_TAG) == 0)) {
            lua_pushlstring(L, s, len);
        } else {
            fluence_yaml_plain(L, s, len);
            if (lua_islightuserdata(L, -1)) {      /* null */
                lua_pop(L, 1);
                lua_getfield(L, lua_upvalueindex(1), "null");
            }
        }
        double w = fluence_yaml_scalar_weight(len);
        remember_anchor(L, d, ev->data.scalar.anchor, w);
        return w;
    }
    case YAML_SEQUENCE_START_EVENT: {
        yaml_char_t *anchor = ev->data.sequence_start.anchor;
        if (anchor) lua_pushstring(L, (const char *)anchor); else lua_pushnil(L);
        int name = lua_gettop(L);
        lua_newtable(L);
        lua_getfield(L, lua_upvalueindex(1), "array_mt");
        lua_setmetatable(L, -2);
        if (anchor) register_anchor(L, d, name);
        push_mark(L, start);
        lua_pushvalue(L, -2);
        lua_insert(L, -2);
        lua_rawset(L, d->marks);
        double w = 1;
        lua_Integer n = 0;
        for (;;) {
            next_event(L, d);
            if (ev->type == YAML_SEQUENCE_END_EVENT) break;
            w += parse_node(L, d, depth + 1);
            lua_rawseti(L, -2, ++n);
        }
        if (anchor) set_anchor_weight(L, d, name, w);
        lua_remove(L, name);
        return w;
    }
    case YAML_MAPPING_START_EVENT: {
        yaml_char_t *anchor = ev->data.mapping_start.anchor;
        if (anchor) lua_pushstring(L, (const char *)anchor); else lua_pushnil(L);
        int name = lua_gettop(L);
        lua_newtable(L);
        int map = lua_gettop(L);
        lua_getfield(L, lua_upvalueindex(1), "object_mt");
        lua_setmetatable(L, -2);
        if (anchor) register_anchor(L, d, name);
        push_mark(L, start);
        int mark = lua_gettop(L);
        lua_newtable(L);
        lua_setfield(L, mark, "keys");
        lua_pushvalue(L, map);
        lua_pushvalue(L, mark);
        lua_rawset(L, d->marks);
        double w = 1;
        int merges = 0;
        for (;;) {
            next_event(L, d);
            if (ev->type == YAML_MAPPING_END_EVENT) break;
            yaml_mark_t kmark = ev->start_mark;
            if (ev->type != YAML_SCALAR_EVENT)
                fail_at(L, d, kmark, "only scalar mapping keys are supported");
            int is_merge = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
                           strcmp((const char *)ev->data.scalar.value, "<<") == 0;
            lua_pushlstring(L, (const char *)ev->data.scalar.value, ev->data.scalar.length);
            next_event(L, d);
            w += parse_node(L, d, depth + 1);
            if (is_merge) {
                /* applied after the explicit keys: those win */
                lua_remove(L, -2);
                merges++;
                continue;
            }
            lua_pushvalue(L, -2);
            if (lua_rawget(L, map) != LUA_TNIL) {
                lua_pushfstring(L, "duplicate key \"%s\"", lua_tostring(L, -3));
                fail_at(L, d, kmark, lua_tostring(L, -1));
            }
            lua_pop(L, 1);
            lua_getfield(L, mark, "keys");
            lua_pushvalue(L, -3);
            push_mark(L, kmark);
            lua_rawset(L, -3);
            lua_pop(L, 1);
            lua_rawset(L, map);
        }
        /* merge sources sit above mark, in document order */
        for (int i = 0; i < merges; i++) {
            lua_pushvalue(L, map);
            lua_pushvalue(L, mark + 1 + i);
            merge_into(L, d, start);
            lua_pop(L, 1);
        }
        lua_settop(L, map);
        if (anchor) set_anchor_weight(L, d, name, w);
        lua_remove(L, name);
        return w;
    }
    default:
        fail_at(L, d, start, "unexpected YAML event");
        return 0;
    }
}

/* The shared body of decode and decode_all, run inside a protected call:
 * stack 1 text, 2 name; leaves the documents array at index 6. */
static void decode_impl(lua_State *L, int all)
{
    size_t len;
    const char *text = luaL_checklstring(L, 1, &len);
    const char *name = luaL_optstring(L, 2, "<yaml>");
    lua_settop(L, 2);
    struct decoder *d = lua_newuserdatauv(L, sizeof *d, 0);   /* 3: owns libyaml state */
    memset(d, 0, sizeof *d);
    lua_newtable(L);
    lua_pushcfunction(L, decoder_gc);
    lua_setfield(L, -2, "__gc");
    lua_setmetatable(L, 3);
    if (!yaml_parser_initialize(&d->parser)) luaL_error(L, "not enough memory");
    d->parser_ready = 1;
    yaml_parser_set_input_string(&d->parser, (const unsigned char *)text, len);
    d->name = name;
    d->text = text;
    d->len = len;
    d->budget = fluence_yaml_alias_budget(len);                /* for every document together */
    lua_newtable(L);                                           /* 4: anchors */
    d->anchors = 4;
    lua_getfield(L, lua_upvalueindex(1), "marks");             /* 5: marks (weak) */
    d->marks = 5;
    lua_newtable(L);                                           /* 6: documents */
    lua_Integer ndocs = 0;
    for (;;) {
        next_event(L, d);
        if (d->event.type == YAML_STREAM_END_EVENT) break;
        if (d->event.type != YAML_DOCUMENT_START_EVENT) continue;
        next_event(L, d);
        lua_newtable(L);                    /* anchors are per document */
        lua_replace(L, d->anchors);
        parse_node(L, d, 0);
        lua_rawseti(L, 6, ++ndocs);
        next_event(L, d);                   /* DOCUMENT-END */
        if (!all) break;
    }
    /* free libyaml's state now rather than at the next collection */
    lua_pushcfunction(L, decoder_gc);
    lua_pushvalue(L, 3);
    lua_call(L, 1, 0);
}

static int decode_protected(lua_State *L)
{
    int all = (int)lua_tointeger(L, lua_upvalueindex(2));
    decode_impl(L, all);
    lua_settop(L, 6);
    return 1;
}

/* Wraps decode_impl in a pcall: parse errors return nil, message; the
 * decoder userdata's __gc frees libyaml's state either way. */
static int decode_entry(lua_State *L, int all)
{
    lua_settop(L, 2);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_pushinteger(L, all);
    lua_pushcclosure(L, decode_protected, 2);
    lua_insert(L, 1);
    int st = lua_pcall(L, 2, 1, 0);
    if (st != LUA_OK) {
        if (st == LUA_ERRMEM) return lua_error(L);
        lua_pushnil(L);
        lua_insert(L, -2);
        return 2;
    }
    if (!all) {
        lua_rawgeti(L, -1, 1);   /* first document or nil */
        if (lua_isnil(L, -1)) {
            lua_pop(L, 1);
            lua_getfield(L, lua_upvalueindex(1), "null");
        }
    }
    return 1;
}

static int yaml_decode(lua_State *L) { return decode_entry(L, 0); }
static int yaml_decode_all(lua_State *L) { return decode_entry(L, 1); }

static int yaml_marks(lua_State *L)
{
    lua_getfield(L, lua_upvalueindex(1), "marks");
    lua_pushvalue(L, 1);
    lua_rawget(L, -2);
    return 1;
}

int luaopen_fluence_yaml(lua_State *L)
{
    static const luaL_Reg funcs[] = {
        {"decode", yaml_decode}, {"decode_all", yaml_decode_all}, {"marks", yaml_marks}, {NULL, NULL}
    };
    /* upvalue: a private table with json's null and metatables, and the weak marks table */
    lua_getglobal(L, "require");
    lua_pushliteral(L, "fluence.json");
    lua_call(L, 1, 1);
    int json = lua_gettop(L);
    lua_newtable(L);
    int priv = lua_gettop(L);
    lua_getfield(L, json, "null");
    lua_setfield(L, priv, "null");
    lua_getfield(L, json, "array_mt");
    lua_setfield(L, priv, "array_mt");
    lua_getfield(L, json, "object_mt");
    lua_setfield(L, priv, "object_mt");
    lua_newtable(L);
    lua_newtable(L);
    lua_pushliteral(L, "k");
    lua_setfield(L, -2, "__mode");
    lua_setmetatable(L, -2);
    lua_setfield(L, priv, "marks");
    luaL_newlibtable(L, funcs);
    lua_pushvalue(L, priv);
    luaL_setfuncs(L, funcs, 1);
    lua_getfield(L, json, "null");
    lua_setfield(L, -2, "null");
    return 1;
}
