/* fluence.manifest, part 2: a document tree -> the JSON kubectl sends, for
 * server-side apply and `-o json`.
 *
 * kubectl (sigs.k8s.io/yaml over go-yaml v2) reads YAML 1.1-ishly: every
 * scalar resolves as yaml_kubectl.c says (0777 is 511, yes is true, .inf
 * refuses the document), mapping keys too (y: becomes "true":), a key
 * written twice keeps its last value, a merge key ("<<") assigns its
 * mapping's entries where it stands, and a literal or folded block that
 * ends the input without a line break still gets its "\n".  Key order is
 * the document's (kubectl sorts; the server does not care).  The object's
 * metadata.managedFields is left out (server-side apply refuses it); a
 * document's own object has its metadata checked as kubectl checks it
 * (manifest_meta.c). */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <lauxlib.h>
#include "json_write.h"
#include "manifest_json.h"
#include "strbuf.h"
#include "yaml_kubectl.h"

#define MERGE_DEPTH 64

/* A literal or folded block scalar that ends the input without a line
 * break: libyaml leaves its last line without "\n", go-yaml clips (or
 * keeps) one as if the break were there.  Not when its header says strip
 * ("|-"), which never has one. */
static int block_needs_newline(const struct mparse *p, const struct mnode *n)
{
    if (n->style != YAML_LITERAL_SCALAR_STYLE && n->style != YAML_FOLDED_SCALAR_STYLE) return 0;
    if (n->len == 0 || p->tree.arena[n->val + n->len - 1] == '\n') return 0;
    const char *s = p->text + n->start, *e = p->text + p->len;
    while (s < e && (*s == '&' || *s == '!')) {              /* its anchor and tag */
        while (s < e && !isspace((unsigned char)*s)) s++;
        while (s < e && (*s == ' ' || *s == '\t')) s++;
    }
    if (s < e && (*s == '|' || *s == '>')) s++;
    for (int i = 0; i < 2 && s < e; i++, s++) if (*s == '-') return 0;
    return 1;
}

static int scalar_error(lua_State *L, struct mparse *p, const struct mnode *n, const char *what)
{
    lua_pushfstring(L, "%s: kubectl refuses this document too", what);
    return mp_error(L, p, n->start, lua_tostring(L, -1));
}

/* A !!binary scalar's bytes (base64-decoded), pushed as a Lua string */
static void push_binary(lua_State *L, struct mparse *p, const struct mnode *n)
{
    char *out = lua_newuserdatauv(L, n->len / 4 * 3 + 3, 0);
    size_t k = yk_base64(p->tree.arena + n->val, n->len, out);
    if (k == (size_t)-1) scalar_error(L, p, n, "yaml: !!binary value contains invalid base64 data");
    lua_pushlstring(L, out, k);
    lua_remove(L, -2);
}

static void scalar(lua_State *L, struct mparse *p, struct strbuf *b, size_t i)
{
    const struct mnode *n = &p->tree.nodes[i];
    struct yk_value v;
    mt_kubectl(&p->tree, i, &v);
    char buf[40];
    switch (v.kind) {
    case YK_NULL: strbuf_adds(L, b, "null"); return;
    case YK_BOOL: strbuf_adds(L, b, v.b ? "true" : "false"); return;
    case YK_STR: jw_string(L, b, p->tree.arena + n->val, n->len, JW_FFFD | (block_needs_newline(p, n) ? JW_NL : 0)); return;
    case YK_BINARY: {
        size_t len;
        push_binary(L, p, n);
        const char *s = lua_tolstring(L, -1, &len);
        jw_string(L, b, s, len, JW_FFFD);
        lua_pop(L, 1);
        return;
    }
    case YK_ERROR:
        lua_pushfstring(L, "yaml: %s", v.err);
        scalar_error(L, p, n, lua_tostring(L, -1));
        return;
    default:
        if (yk_json_number(&v, buf)) { strbuf_adds(L, b, buf); return; }
        lua_pushfstring(L, "%s is %s, which JSON cannot carry (json: unsupported value: %s)",
                        p->tree.arena + n->val, isnan(v.d) ? "not a number" : "infinite",
                        isnan(v.d) ? "NaN" : v.d > 0 ? "+Inf" : "-Inf");
        scalar_error(L, p, n, lua_tostring(L, -1));
    }
}

/* Pushes the string key node k (unresolved) becomes in the JSON. */
static void push_key(lua_State *L, struct mparse *p, size_t k)
{
    const struct mtree *t = &p->tree;
    size_t r;
    const struct mnode *n = mt_resolve(t, k, &r);
    struct yk_value v;
    mt_kubectl(t, r, &v);
    char buf[80];
    if (v.kind == YK_STR) {
        lua_pushlstring(L, t->arena + n->val, n->len);
        if (block_needs_newline(p, n)) { lua_pushliteral(L, "\n"); lua_concat(L, 2); }
    } else if (v.kind == YK_BINARY) {
        push_binary(L, p, n);
    } else if (v.kind == YK_ERROR) {
        lua_pushfstring(L, "yaml: %s", v.err);
        scalar_error(L, p, n, lua_tostring(L, -1));
    } else if (yk_key(&v, buf)) {
        lua_pushstring(L, buf);
    } else {
        lua_pushfstring(L, "a mapping key kubectl cannot use: %s", buf);
        mp_error(L, p, t->nodes[k].start, lua_tostring(L, -1));
    }
}

/* Applies the entries of mapping map to the effective entries being
 * collected: E at index e (key, value node, key, value node ...), I at
 * index ix (key -> position of its key in E). */
static void apply_entries(lua_State *L, struct mparse *p, size_t map, int e, int ix, int level)
{
    const struct mtree *t = &p->tree;
    const struct mnode *m = mt_resolve(t, map, &map);
    luaL_checkstack(L, 8, "YAML nesting");
    if (level > MERGE_DEPTH) mp_error(L, p, m->start, "merge keys nested too deep");
    for (size_t k = m->first; k; k = t->nodes[t->nodes[k].next].next) {
        size_t v = t->nodes[k].next;
        if (mt_is_merge_key(t, k)) {
            size_t src;
            const struct mnode *vn = mt_resolve(t, v, &src);
            if (vn->type == MN_MAP) { apply_entries(L, p, src, e, ix, level + 1); continue; }
            if (vn->type == MN_SEQ) {
                /* earlier mappings of the list win: applied last to first */
                lua_newtable(L);
                lua_Integer n = 0;
                for (size_t c = vn->first; c; c = t->nodes[c].next) {
                    if (mt_resolve(t, c, NULL)->type != MN_MAP) { n = -1; break; }
                    lua_pushinteger(L, (lua_Integer)c);
                    lua_rawseti(L, -2, ++n);
                }
                for (lua_Integer j = n; j >= 1; j--) {
                    lua_rawgeti(L, -1, j);
                    size_t c = (size_t)lua_tointeger(L, -1);
                    lua_pop(L, 1);
                    apply_entries(L, p, c, e, ix, level + 1);
                }
                lua_pop(L, 1);
                if (n >= 0) continue;
            }
            mp_error(L, p, t->nodes[k].start, "merge key \"<<\" needs a mapping or a list of mappings "
                     "(kubectl: map merge requires map or sequence of maps as the value)");
        }
        push_key(L, p, k);
        lua_pushvalue(L, -1);
        if (lua_rawget(L, ix) == LUA_TNUMBER) {             /* written before: the last wins */
            lua_Integer at = lua_tointeger(L, -1);
            lua_pop(L, 2);
            lua_pushinteger(L, (lua_Integer)v);
            lua_rawseti(L, e, at + 1);
            continue;
        }
        lua_pop(L, 1);
        lua_Integer at = (lua_Integer)lua_rawlen(L, e) + 1;
        lua_pushvalue(L, -1);
        lua_rawseti(L, e, at);
        lua_pushinteger(L, at);
        lua_rawset(L, ix);
        lua_pushinteger(L, (lua_Integer)v);
        lua_rawseti(L, e, at + 1);
    }
}

int mj_entries(lua_State *L, struct mparse *p, size_t map)
{
    lua_newtable(L);
    lua_newtable(L);
    apply_entries(L, p, map, lua_gettop(L) - 1, lua_gettop(L), 0);
    lua_pop(L, 1);
    return (int)(lua_rawlen(L, -1) / 2);
}

static void entry(lua_State *L, struct mparse *p, struct strbuf *b, const char *key, size_t klen, size_t v,
                  int indent, int depth, int flags, size_t *count)
{
    if ((flags & MJ_META) && klen == 13 && memcmp(key, "managedFields", 13) == 0) return;
    if ((*count)++) strbuf_addc(L, b, ',');
    jw_newline(L, b, indent, depth + 1);
    jw_string(L, b, key, klen, JW_FFFD);
    strbuf_adds(L, b, indent ? ": " : ":");
    int sub = (flags & MJ_OBJECT) && klen == 8 && memcmp(key, "metadata", 8) == 0 ? MJ_META : 0;
    mj_emit(L, p, b, v, indent, depth + 1, sub);
}

/* Can the mapping's entries be written as they stand: no merge key, no key
 * twice, every key a string as kubectl reads it? */
static int plain_entries(const struct mtree *t, const struct mnode *m)
{
    if (m->flags & (MF_MERGE | MF_DUPS)) return 0;
    for (size_t k = m->first; k; k = t->nodes[t->nodes[k].next].next) {
        const struct mnode *kn = mt_resolve(t, k, NULL);
        if (kn->style == YAML_PLAIN_SCALAR_STYLE || kn->tag != YK_TAG_NONE) {
            struct yk_value v;
            mt_kubectl(t, k, &v);
            if (v.kind != YK_STR) return 0;
        } else if (kn->style == YAML_LITERAL_SCALAR_STYLE || kn->style == YAML_FOLDED_SCALAR_STYLE) return 0;
    }
    return 1;
}

void mj_emit(lua_State *L, struct mparse *p, struct strbuf *b, size_t i, int indent, int depth, int flags)
{
    const struct mtree *t = &p->tree;
    const struct mnode *n = mt_resolve(t, i, &i);
    if (!n) { strbuf_adds(L, b, "null"); return; }
    luaL_checkstack(L, 8, "YAML nesting");
    switch (n->type) {
    case MN_SCALAR: scalar(L, p, b, i); return;
    case MN_SEQ: {
        strbuf_addc(L, b, '[');
        size_t c = n->first, k = 0;
        for (; c; c = t->nodes[c].next, k++) {
            if (k) strbuf_addc(L, b, ',');
            jw_newline(L, b, indent, depth + 1);
            mj_emit(L, p, b, c, indent, depth + 1, 0);
        }
        if (k) jw_newline(L, b, indent, depth);
        strbuf_addc(L, b, ']');
        return;
    }
    case MN_MAP: {
        size_t count = 0;
        strbuf_addc(L, b, '{');
        if (plain_entries(t, n)) {
            for (size_t k = n->first; k; k = t->nodes[t->nodes[k].next].next) {
                const struct mnode *kn = mt_resolve(t, k, NULL);
                entry(L, p, b, t->arena + kn->val, kn->len, t->nodes[k].next, indent, depth, flags, &count);
            }
        } else {
            int e = lua_gettop(L) + 1;
            int nent = mj_entries(L, p, i);
            for (int j = 0; j < nent; j++) {
                size_t klen;
                lua_rawgeti(L, e, 2 * j + 1);
                const char *key = lua_tolstring(L, -1, &klen);
                lua_rawgeti(L, e, 2 * j + 2);
                size_t v = (size_t)lua_tointeger(L, -1);
                lua_pop(L, 1);
                entry(L, p, b, key, klen, v, indent, depth, flags, &count);   /* key anchored on the stack */
                lua_pop(L, 1);
            }
            lua_pop(L, 1);
        }
        if (count) jw_newline(L, b, indent, depth);
        strbuf_addc(L, b, '}');
        return;
    }
    default:
        strbuf_adds(L, b, "null");
    }
}

/* Re-indents compact JSON text (as mj_emit writes it) without reading its
 * values: numbers stay exactly as written. */
void mj_indent(lua_State *L, struct strbuf *b, const char *s, size_t len, int indent, int depth)
{
    int in_str = 0;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (in_str) {
            strbuf_addc(L, b, c);
            if (c == '\\' && i + 1 < len) strbuf_addc(L, b, s[++i]);
            else if (c == '"') in_str = 0;
            continue;
        }
        switch (c) {
        case '"': in_str = 1; strbuf_addc(L, b, c); break;
        case '{': case '[':
            strbuf_addc(L, b, c);
            if (i + 1 < len && (s[i + 1] == '}' || s[i + 1] == ']')) { strbuf_addc(L, b, s[++i]); break; }
            jw_newline(L, b, indent, ++depth);
            break;
        case '}': case ']': jw_newline(L, b, indent, --depth); strbuf_addc(L, b, c); break;
        case ',': strbuf_addc(L, b, c); jw_newline(L, b, indent, depth); break;
        case ':': strbuf_adds(L, b, ": "); break;
        default: strbuf_addc(L, b, c);
        }
    }
}
