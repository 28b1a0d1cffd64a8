/* fluence.manifest, part 2: a document tree -> JSON text, for server-side
 * apply and `-o json`.
 *
 * Scalars resolve by the YAML 1.2 core schema, as fluence.yaml does (quoted
 * or !!str -> string; plain null/true/false/integers/floats).  Key order is
 * the document's; aliases are expanded (their total size is bounded when the
 * tree is built); merge keys ("<<") are applied, explicit keys winning. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <lauxlib.h>
#include "manifest.h"
#include "strbuf.h"

void mj_string(lua_State *L, struct strbuf *b, const char *s, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    strbuf_addc(L, b, '"');
    size_t run = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\' && c != 0x7f) { run++; continue; }
        strbuf_add(L, b, s + i - run, run);
        run = 0;
        switch (c) {
        case '"': strbuf_adds(L, b, "\\\""); break;
        case '\\': strbuf_adds(L, b, "\\\\"); break;
        case '\n': strbuf_adds(L, b, "\\n"); break;
        case '\r': strbuf_adds(L, b, "\\r"); break;
        case '\t': strbuf_adds(L, b, "\\t"); break;
        default: {
            char u[7] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15], 0};
            strbuf_adds(L, b, u);
        }
        }
    }
    strbuf_add(L, b, s + len - run, run);
    strbuf_addc(L, b, '"');
}

static void number(lua_State *L, struct mparse *p, struct strbuf *b, const struct mnode *n)
{
    const char *s = p->tree.arena + n->val;
    char buf[64];
    const char *q = s + (s[0] == '-' || s[0] == '+');
    if (q[0] == '0' && (q[1] == 'x' || q[1] == 'o')) {
        if (q != s) goto bad;
        char *end;
        errno = 0;
        unsigned long long v = strtoull(q + 2, &end, q[1] == 'x' ? 16 : 8);
        if (*end || errno || v > (unsigned long long)LLONG_MAX) goto bad;
        snprintf(buf, sizeof buf, "%llu", v);
        strbuf_adds(L, b, buf);
        return;
    }
    size_t i = 0;
    while (q[i] >= '0' && q[i] <= '9') i++;
    if (i > 0 && q[i] == 0) {
        char *end;
        errno = 0;
        long long v = strtoll(s, &end, 10);
        if (errno == 0) {
            snprintf(buf, sizeof buf, "%lld", v);
            strbuf_adds(L, b, buf);
            return;
        }
    }
    double d = strtod(s, NULL);
    if (!isfinite(d)) goto bad;
    if (d == floor(d) && fabs(d) < 9007199254740992.0) {
        snprintf(buf, sizeof buf, "%.0f", d);
        if (d == 0 && signbit(d)) snprintf(buf, sizeof buf, "-0");
    } else {
        for (int prec = 15; prec <= 17; prec++) {
            snprintf(buf, sizeof buf, "%.*g", prec, d);
            if (strtod(buf, NULL) == d) break;
        }
    }
    strbuf_adds(L, b, buf);
    return;
bad:
    lua_pushfstring(L, "cannot represent %s in JSON", s);
    mp_error(L, p, n->start, lua_tostring(L, -1));
}

static void scalar(lua_State *L, struct mparse *p, struct strbuf *b, const struct mnode *n)
{
    const char *s = p->tree.arena + n->val;
    if (n->flags & MF_STR) { mj_string(L, b, s, n->len); return; }
    if (mt_is_null(&p->tree, (size_t)(n - p->tree.nodes))) { strbuf_adds(L, b, "null"); return; }
    if (!strcmp(s, "true") || !strcmp(s, "True") || !strcmp(s, "TRUE")) { strbuf_adds(L, b, "true"); return; }
    if (!strcmp(s, "false") || !strcmp(s, "False") || !strcmp(s, "FALSE")) { strbuf_adds(L, b, "false"); return; }
    if (mt_plain_is_string(s, n->len)) { mj_string(L, b, s, n->len); return; }
    number(L, p, b, n);
}

static void newline(lua_State *L, struct strbuf *b, int indent, int depth)
{
    if (!indent) return;
    strbuf_addc(L, b, '\n');
    for (int i = 0; i < indent * depth; i++) strbuf_addc(L, b, ' ');
}

static int is_merge(const struct mtree *t, size_t k)
{
    const struct mnode *n = &t->nodes[k];
    return n->type == MN_SCALAR && !(n->flags & MF_STR) && n->len == 2 &&
           memcmp(t->arena + n->val, "<<", 2) == 0;
}

/* Emits the entries of map (and, through merge keys, of its sources) that
 * are the effective ones of origin. */
static void entries(lua_State *L, struct mparse *p, struct strbuf *b, size_t map, size_t origin,
                    int indent, int depth, int drop, size_t *count, int level)
{
    const struct mtree *t = &p->tree;
    const struct mnode *m = mt_resolve(t, map, &map);
    if (!m || m->type != MN_MAP || level > 8) return;
    for (size_t k = m->first; k; k = t->nodes[t->nodes[k].next].next) {
        if (is_merge(t, k)) continue;
        const struct mnode *kn = mt_resolve(t, k, NULL);
        const char *key = t->arena + kn->val;
        size_t v = t->nodes[k].next;
        if (drop == 2 && strcmp(key, "managedFields") == 0) continue;
        if (map != origin) {
            size_t kn2;
            if (mt_get(t, origin, key, &kn2) != v) continue;
        }
        if ((*count)++) strbuf_addc(L, b, ',');
        newline(L, b, indent, depth + 1);
        mj_string(L, b, key, kn->len);
        strbuf_adds(L, b, indent ? ": " : ":");
        mj_emit(L, p, b, v, indent, depth + 1, drop == 1 && strcmp(key, "metadata") == 0 ? 2 : 0);
    }
    for (size_t k = m->first; k; k = t->nodes[t->nodes[k].next].next) {
        if (!is_merge(t, k)) continue;
        size_t v;
        const struct mnode *vn = mt_resolve(t, t->nodes[k].next, &v);
        if (vn->type == MN_MAP) entries(L, p, b, v, origin, indent, depth, drop, count, level + 1);
        else if (vn->type == MN_SEQ)
            for (size_t c = vn->first; c; c = t->nodes[c].next)
                entries(L, p, b, c, origin, indent, depth, drop, count, level + 1);
        else mp_error(L, p, t->nodes[k].start, "merge key \"<<\" needs a mapping or a list of mappings");
    }
}

void mj_emit(lua_State *L, struct mparse *p, struct strbuf *b, size_t i, int indent,
             int depth, int drop_managed)
{
    const struct mtree *t = &p->tree;
    const struct mnode *n = mt_resolve(t, i, &i);
    if (!n) { strbuf_adds(L, b, "null"); return; }
    switch (n->type) {
    case MN_SCALAR: scalar(L, p, b, n); return;
    case MN_SEQ: {
        strbuf_addc(L, b, '[');
        size_t c = n->first, k = 0;
        for (; c; c = t->nodes[c].next, k++) {
            if (k) strbuf_addc(L, b, ',');
            newline(L, b, indent, depth + 1);
            mj_emit(L, p, b, c, indent, depth + 1, 0);
        }
        if (k) newline(L, b, indent, depth);
        strbuf_addc(L, b, ']');
        return;
    }
    case MN_MAP: {
        size_t count = 0;
        strbuf_addc(L, b, '{');
        entries(L, p, b, i, i, indent, depth, drop_managed, &count, 0);
        if (count) newline(L, b, indent, depth);
        strbuf_addc(L, b, '}');
        return;
    }
    default:
        strbuf_adds(L, b, "null");
    }
}
