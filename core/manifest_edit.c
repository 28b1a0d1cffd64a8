/* fluence.manifest, part 3: where annotations are written and what text is
 * inserted there.
 *
 * For every mapping that receives annotations (an object, a pod template) a
 * "site" records, at parse time, how to write there without touching other
 * bytes:
 *   - metadata.annotations is a mapping: replace existing values in place
 *     (the whole scalar, any style); add new keys after the last entry when
 *     that entry ends its line simply (a scalar, alias or flow node, maybe a
 *     comment), else before the first key, at the siblings' column;
 *   - a flow mapping ({a: b}, JSON) gets ", key: value" after its last entry
 *     (one line) or ",\n<indent>key: value" (a multi-line one, pretty JSON);
 *   - annotations/metadata that are null (empty, ~, null) are replaced by a
 *     mapping; absent ones are created (metadata: when needed);
 *   - metadata or annotations that are not mappings: an error site.
 * Aliases: an aliased metadata/annotations mapping is edited where its
 * anchor defines it (so every alias of it sees the new keys, as YAML data
 * shares it); an anchored annotation value cannot be replaced (other aliases
 * would break): an error.  Keys reached only through a merge key ("<<") are
 * overridden by an explicit key in the mapping itself.
 *
 * Values are written plain only when trivially safe ([A-Za-z_][A-Za-z0-9_./-]*
 * and not a null, boolean or number in YAML 1.1 or 1.2), otherwise as
 * double-quoted scalars with JSON escapes (also for the characters YAML 1.1
 * reads as line breaks: U+0085, U+2028, U+2029), which YAML reads back exactly.
 * In JSON documents every key and value is a JSON string. */
#include <stdint.h>
#include <string.h>
#include <lauxlib.h>
#include "json_write.h"
#include "manifest_edit.h"
#include "strbuf.h"
#include "utf8.h"

static const char *const bool11[] = {
    "y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO",
    "on", "On", "ON", "off", "Off", "OFF", NULL
};

static int plain_safe(const char *s, size_t len)
{
    if (len == 0 || len > 200) return 0;
    if (!((s[0] >= 'A' && s[0] <= 'Z') || (s[0] >= 'a' && s[0] <= 'z') || s[0] == '_')) return 0;
    for (size_t i = 1; i < len; i++) {
        char c = s[i];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '.' || c == '/' || c == '-'))
            return 0;
    }
    for (int i = 0; bool11[i]; i++) if (strlen(bool11[i]) == len && memcmp(s, bool11[i], len) == 0) return 0;
    return mt_plain_is_string(s, len);
}

/* Appends s as a YAML/JSON scalar: plain when trivially safe, else a JSON
 * string YAML reads back exactly.  Returns 0 when s is not valid UTF-8. */
int me_scalar(lua_State *L, struct strbuf *b, const char *s, size_t len, int quote)
{
    /* validate UTF-8 first: nothing is written for a bad value */
    if (!utf8_valid(s, len)) return 0;
    if (!quote && plain_safe(s, len)) { strbuf_add(L, b, s, len); return 1; }
    jw_string(L, b, s, len, JW_YAML);
    return 1;
}

static size_t store_str(lua_State *L, struct mstore *s, const char *str, size_t n)
{
    s->strs = fluence_grow(L, s->strs, &s->scap, s->slen + n + 1, 1);
    size_t at = s->slen;
    memcpy(s->strs + at, str, n);
    s->strs[at + n] = 0;
    s->slen += n + 1;
    return at;
}

/* Is key written "k":v, without a space (compact JSON)? */
static int compact_after(const struct mparse *p, size_t key)
{
    size_t q = p->tree.nodes[key].end;
    return q + 1 < p->len && p->text[q] == ':' && !strchr(" \t\r\n", p->text[q + 1]);
}

static int is_json_key(const struct mtree *t, size_t key)
{
    return key && t->nodes[key].type == MN_SCALAR && t->nodes[key].style == YAML_DOUBLE_QUOTED_SCALAR_STYLE;
}

/* Sets st to insert entries (wrapped in `level` mappings) into mapping x. */
static void insert_into(lua_State *L, struct mparse *p, struct msite *st, size_t x, size_t holder_key,
                        size_t parent, int level)
{
    const struct mtree *t = &p->tree;
    const struct mnode *m = &t->nodes[x];
    const char *text = p->text;
    st->mode = SITE_INSERT;
    st->level = level;
    st->target = m->start * 4 + (size_t)level;
    st->flow = (m->flags & MF_FLOW) != 0;
    if (m->flags & MF_PAIR) {
        st->mode = SITE_ERROR;
        st->errmsg = "cannot add annotations to a single-pair mapping ([key: value]); write it with braces";
        st->errpos = m->start;
        return;
    }
    if (st->flow) {
        st->json = is_json_key(t, m->first) || (!m->first && is_json_key(t, holder_key));
        if (!m->count) {
            size_t q = m->end;
            while (q > m->start && text[q - 1] != '}') q--;
            st->pos = q ? q - 1 : 0;
            st->empty = 1;
            st->compact = st->json && holder_key && compact_after(p, holder_key);
            /* {} in a multi-line mapping: open it over lines too */
            if (holder_key && parent && t->nodes[t->nodes[parent].first].line != t->nodes[parent].line) {
                st->pretty = 1;
                st->indent = t->nodes[holder_key].col + st->step;
            }
        } else {
            const struct mnode *first = &t->nodes[m->first], *last = &t->nodes[m->last];
            st->pos = last->end;
            st->pretty = first->line != m->line;
            st->indent = first->col;
            st->compact = st->json && compact_after(p, m->first);
        }
        st->del_end = st->pos;
        return;
    }
    const struct mnode *k0 = &t->nodes[m->first], *lv = &t->nodes[m->last];
    st->indent = k0->col;
    int simple = lv->type == MN_ALIAS || (lv->flags & MF_FLOW) ||
                 (lv->type == MN_SCALAR && lv->style != YAML_LITERAL_SCALAR_STYLE &&
                  lv->style != YAML_FOLDED_SCALAR_STYLE);
    if (simple) {
        size_t q = lv->end;
        while (q < p->len && (text[q] == ' ' || text[q] == '\t')) q++;
        if (q < p->len && text[q] == '#' && q > lv->end)
            while (q < p->len && text[q] != '\n' && text[q] != '\r') q++;
        if (q >= p->len || text[q] == '\n' || text[q] == '\r') {
            st->pos = st->del_end = q;
            return;
        }
    }
    size_t q = k0->start;
    while (q > 0 && text[q - 1] == ' ') q--;
    if (q > 0 && text[q - 1] == '?') {
        st->mode = SITE_ERROR;
        st->errmsg = "cannot add annotations to a mapping written with explicit \"? key\" entries";
        st->errpos = k0->start;
        return;
    }
    st->at_begin = 1;
    st->pos = st->del_end = k0->start;
}

/* Sets st to replace the null value v (of key in mapping parent) by a mapping. */
static void replace_null(struct mparse *p, struct msite *st, size_t v, size_t key, size_t parent, int level)
{
    const struct mtree *t = &p->tree;
    const struct mnode *n = &t->nodes[v], *pm = &t->nodes[parent];
    st->mode = SITE_REPLACE_NULL;
    st->level = level;
    st->target = n->start * 4 + 3;
    st->flow = (pm->flags & MF_FLOW) != 0;
    st->pos = n->start;
    st->del_end = n->end;
    if (st->flow) {
        st->json = is_json_key(t, key);
        st->compact = st->json && compact_after(p, key);
        st->pretty = t->nodes[pm->first].line != pm->line;
        st->indent = t->nodes[key].col;
    } else {
        while (st->pos > 0 && (p->text[st->pos - 1] == ' ' || p->text[st->pos - 1] == '\t')) st->pos--;
        st->indent = t->nodes[key].col + st->step;
    }
}

static void site_error(struct msite *st, const char *msg, size_t pos)
{
    st->mode = SITE_ERROR;
    st->errmsg = msg;
    st->errpos = pos;
}

static void record_entries(lua_State *L, struct mparse *p, struct mstore *s, struct msite *st, size_t x)
{
    const struct mtree *t = &p->tree;
    st->ent_first = s->nents;
    for (size_t k = t->nodes[x].first; k; k = t->nodes[t->nodes[k].next].next) {
        const struct mnode *kn = mt_resolve(t, k, NULL);
        size_t v = t->nodes[k].next;
        const struct mnode *vn = &t->nodes[v];
        if (kn->len == 2 && !(kn->flags & MF_STR) && memcmp(t->arena + kn->val, "<<", 2) == 0) continue;
        s->ents = fluence_grow(L, s->ents, &s->capents, s->nents + 1, sizeof *s->ents);
        struct mentry *e = &s->ents[s->nents++];
        memset(e, 0, sizeof *e);
        e->key = store_str(L, s, t->arena + kn->val, kn->len);
        e->klen = kn->len;
        e->vstart = vn->start;
        e->vend = vn->end;
        e->vlen = (size_t)-1;
        if (vn->type == MN_SCALAR && (vn->flags & MF_ANCHORED))
            e->err = "the annotation's value has an anchor (&name): replacing it would break its aliases";
        else if (vn->type == MN_SCALAR || vn->type == MN_ALIAS) {
            const struct mnode *r = mt_resolve(t, v, NULL);
            if (vn->type == MN_SCALAR && (r->flags & MF_STR || mt_plain_is_string(t->arena + r->val, r->len))) {
                e->val = store_str(L, s, t->arena + r->val, r->len);
                e->vlen = r->len;
            }
            if (vn->style == YAML_LITERAL_SCALAR_STYLE || vn->style == YAML_FOLDED_SCALAR_STYLE) {
                /* the mark runs to the next line with content: keep the breaks */
                while (e->vend > e->vstart + 1 && strchr(" \t\r\n", p->text[e->vend - 1])) e->vend--;
            }
            e->quote = e->vend < p->len && p->text[e->vend] == '#';
        } else e->err = "the annotation's value is not a string";
    }
    st->ent_count = s->nents - st->ent_first;
}

void me_sites_for(lua_State *L, struct mparse *p, struct mstore *s, int obj, size_t map,
                  const char *outer, int crlf, uint32_t step)
{
    const struct mtree *t = &p->tree;
    struct msite st;
    memset(&st, 0, sizeof st);
    st.obj = obj;
    st.crlf = crlf;
    st.step = step;
    st.outer = outer;
    /* the messages name the mapping: an object's or pod template's metadata,
     * a MiniCluster's spec.pod, an Argo Workflow's spec.podMetadata */
    int pod = strcmp(outer, "pod") == 0, podmeta = strcmp(outer, "podMetadata") == 0;
    mt_resolve(t, map, &map);
    size_t mkey, meta = mt_get(t, map, outer, &mkey), metai;
    const struct mnode *md = mt_resolve(t, meta, &metai);
    if (!meta) insert_into(L, p, &st, map, 0, 0, 2);
    else if (mt_is_null(t, meta)) replace_null(p, &st, meta, mkey, map, 1);
    else if (md->type != MN_MAP)
        site_error(&st, pod ? "spec.pod is not a mapping" : podmeta ? "podMetadata is not a mapping" : "metadata is not a mapping",
                   t->nodes[meta].start);
    else {
        size_t akey, ann = mt_get(t, metai, "annotations", &akey), anni;
        const struct mnode *an = mt_resolve(t, ann, &anni);
        if (!ann) insert_into(L, p, &st, metai, mkey, map, 1);
        else if (mt_is_null(t, ann)) replace_null(p, &st, ann, akey, metai, 0);
        else if (an->type != MN_MAP)
            site_error(&st, pod ? "spec.pod.annotations is not a mapping" :
                            podmeta ? "podMetadata.annotations is not a mapping" : "metadata.annotations is not a mapping",
                       t->nodes[ann].start);
        else {
            insert_into(L, p, &st, anni, akey, metai, 0);
            if (st.mode == SITE_INSERT) record_entries(L, p, s, &st, anni);
        }
    }
    s->sites = fluence_grow(L, s->sites, &s->capsites, s->nsites + 1, sizeof *s->sites);
    s->sites[s->nsites++] = st;
}

/* ---- the text written at a site ---- */

static void put_nl(lua_State *L, struct strbuf *b, const struct msite *st, uint32_t col)
{
    strbuf_adds(L, b, st->crlf ? "\r\n" : "\n");
    for (uint32_t i = 0; i < col; i++) strbuf_addc(L, b, ' ');
}

static void wrap_key(lua_State *L, struct strbuf *b, const struct msite *st, int level)
{
    const char *k = level == 2 ? st->outer : "annotations";
    me_scalar(L, b, k, strlen(k), st->json);
}

static void entry(lua_State *L, struct strbuf *b, const struct msite *st, const struct mkv *kv)
{
    me_scalar(L, b, kv->k, kv->kl, st->json);
    strbuf_adds(L, b, st->compact ? ":" : ": ");
    if (kv->ev) strbuf_add(L, b, kv->ev, kv->evl);
    else me_scalar(L, b, kv->v, kv->vl, st->json);
}

/* block lines: wrappers then entries, each on its own line at its column */
static void block_lines(lua_State *L, struct strbuf *b, const struct msite *st, uint32_t col,
                        int lead, const struct mkv *kv, size_t n)
{
    int first = 1;
    for (int l = st->level; l > 0; l--, col += st->step) {
        if (!first || lead) put_nl(L, b, st, col);
        first = 0;
        wrap_key(L, b, st, l);
        strbuf_addc(L, b, ':');
    }
    for (size_t i = 0; i < n; i++) {
        if (!first || lead) put_nl(L, b, st, col);
        first = 0;
        entry(L, b, st, &kv[i]);
    }
}

static void flow_items(lua_State *L, struct strbuf *b, const struct msite *st, int level,
                       const struct mkv *kv, size_t n)
{
    if (level > 0) {
        wrap_key(L, b, st, level);
        strbuf_adds(L, b, st->compact ? ":{" : ": {");
        flow_items(L, b, st, level - 1, kv, n);
        strbuf_addc(L, b, '}');
        return;
    }
    for (size_t i = 0; i < n; i++) {
        if (i) strbuf_adds(L, b, st->compact ? "," : ", ");
        entry(L, b, st, &kv[i]);
    }
}

static void pretty_map(lua_State *L, struct strbuf *b, const struct msite *st, int level, uint32_t col,
                       const struct mkv *kv, size_t n);

static void pretty_items(lua_State *L, struct strbuf *b, const struct msite *st, int level, uint32_t col,
                         int lead_comma, const struct mkv *kv, size_t n)
{
    if (level > 0) {
        if (lead_comma) strbuf_addc(L, b, ',');
        put_nl(L, b, st, col);
        wrap_key(L, b, st, level);
        strbuf_adds(L, b, ": ");
        pretty_map(L, b, st, level - 1, col, kv, n);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        if (lead_comma || i) strbuf_addc(L, b, ',');
        put_nl(L, b, st, col);
        entry(L, b, st, &kv[i]);
    }
}

static void pretty_map(lua_State *L, struct strbuf *b, const struct msite *st, int level, uint32_t col,
                       const struct mkv *kv, size_t n)
{
    strbuf_addc(L, b, '{');
    pretty_items(L, b, st, level, col + st->step, 0, kv, n);
    put_nl(L, b, st, col);
    strbuf_addc(L, b, '}');
}

void me_site_text(lua_State *L, struct strbuf *b, const struct msite *st, const struct mkv *kv, size_t n)
{
    if (st->flow) {
        if (st->mode == SITE_REPLACE_NULL) {
            if (st->pretty) pretty_map(L, b, st, st->level, st->indent, kv, n);
            else { strbuf_addc(L, b, '{'); flow_items(L, b, st, st->level, kv, n); strbuf_addc(L, b, '}'); }
        } else if (st->pretty && st->empty) {
            pretty_items(L, b, st, st->level, st->indent, 0, kv, n);
            put_nl(L, b, st, st->indent - st->step);
        } else if (st->pretty) pretty_items(L, b, st, st->level, st->indent, 1, kv, n);
        else {
            if (!st->empty) strbuf_adds(L, b, st->compact ? "," : ", ");
            flow_items(L, b, st, st->level, kv, n);
        }
        return;
    }
    if (st->mode == SITE_INSERT && st->at_begin) {
        block_lines(L, b, st, st->indent, 0, kv, n);
        put_nl(L, b, st, st->indent);
    } else block_lines(L, b, st, st->indent, 1, kv, n);
}
