/* fluence.manifest, part 1: a YAML stream -> one node tree per document, with
 * exact byte offsets.
 *
 * libyaml's marks count characters (and skip nothing but a BOM, which they
 * count as one character); edits need bytes.  A cursor walks the UTF-8 text
 * forward (and, rarely, backward) between successive marks, so converting
 * every mark of a stream costs time linear in its size.
 *
 * Keys are read as kubectl reads them (go-yaml v2): a key written twice
 * keeps its last value, a merge key ("<<") assigns its mapping's entries
 * where it stands (over the keys before it).  Duplicates are recorded, not
 * refused: manifest.c refuses them in Fluence objects and warns elsewhere.
 *
 * Hostile input (yaml_limits.h): an alias may only name a node that is
 * complete (no recursive structures); the total size the aliases of a stream
 * expand to is bounded by the stream's size (no "billion laughs"); nesting
 * depth is bounded. */
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <lauxlib.h>
#include "location.h"
#include "manifest_tree.h"
#include "strbuf.h"
#include "yaml_kubectl.h"
#include "yaml_limits.h"
#include "yaml_problem.h"

void mp_free(struct mparse *p)
{
    if (p->have_event) yaml_event_delete(&p->event);
    if (p->parser_ready) yaml_parser_delete(&p->parser);
    p->have_event = p->parser_ready = 0;
    struct mtree *t = &p->tree;
    free(t->nodes); free(t->arena); free(t->stack); free(t->anchors); free(t->keyhash); free(t->dups);
    memset(t, 0, sizeof *t);
}

static int mp_gc(lua_State *L)
{
    mp_free(lua_touserdata(L, 1));
    return 0;
}

#define HIGH_BITS 0x8080808080808080ull

/* Is every byte below 0x80?  Then character indexes are byte offsets. */
/* Extends the text's known ASCII prefix past byte idx (a block at a time),
 * or to its first byte >= 0x80, or to its end.  As far as the parse has
 * got, never the whole text up front: a mapped file's pages are read in
 * the parse's order, and handed back behind it (manifest.c). */
static void extend_ascii(struct mparse *p, size_t idx)
{
    const unsigned char *s = (const unsigned char *)p->text;
    size_t i = p->ascii_to;
    while (i <= idx && i < p->len) {
        if (i + 4096 <= p->len) {               /* blocks the compiler vectorises */
            uint64_t acc = 0;
            for (size_t j = 0; j < 4096; j += 8) {
                uint64_t w;
                memcpy(&w, s + i + j, 8);
                acc |= w;
            }
            if (!(acc & HIGH_BITS)) { i += 4096; continue; }
        }
        size_t e = i + 4096 < p->len ? i + 4096 : p->len;
        while (i < e && !(s[i] & 0x80)) i++;
        if (i < e) {
            p->ascii_to = i;
            p->ascii_end = 1;
            return;
        }
    }
    p->ascii_to = i;
    if (i >= p->len) p->ascii_end = 1;
}

int mp_init(struct mparse *p, const char *name, const char *text, size_t len)
{
    memset(p, 0, sizeof *p);
    if (!yaml_parser_initialize(&p->parser)) return -1;
    p->parser_ready = 1;
    yaml_parser_set_input_string(&p->parser, (const unsigned char *)text, len);
    p->name = name;
    p->text = text;
    p->len = len;
    p->budget = fluence_yaml_alias_budget(len);
    if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0) p->cur_byte = 3;
    else yaml_parser_set_encoding(&p->parser, YAML_UTF8_ENCODING);   /* no detection */
    return 0;
}

struct mparse *mp_push(lua_State *L, const char *name, const char *text, size_t len)
{
    struct mparse *p = lua_newuserdatauv(L, sizeof *p, 0);
    memset(p, 0, sizeof *p);
    if (luaL_newmetatable(L, "fluence.manifest.parser")) {
        lua_pushcfunction(L, mp_gc);
        lua_setfield(L, -2, "__gc");
    }
    lua_setmetatable(L, -2);
    if (mp_init(p, name, text, len) != 0) luaL_error(L, "not enough memory");
    /* the byte offsets assume UTF-8; libyaml skips a UTF-8 BOM without
     * counting it, and would decode UTF-16 (marked by its BOM) */
    if (len >= 2 && ((unsigned char)text[0] == 0xFF || (unsigned char)text[0] == 0xFE) &&
        ((unsigned char)text[1] == 0xFE || (unsigned char)text[1] == 0xFF))
        mp_error(L, p, 0, "UTF-16 is not supported: convert the manifest to UTF-8");
    return p;
}

/* character index -> byte offset */
static size_t to_byte(struct mparse *p, size_t idx)
{
    if (!p->ascii_end && idx >= p->ascii_to) extend_ascii(p, idx);
    if (idx < p->ascii_to) return idx;
    if (p->ascii_to == p->len) return p->len;       /* all ASCII */
    if (p->cur_char < p->ascii_to) p->cur_char = p->cur_byte = p->ascii_to;   /* (no BOM: it is not ASCII) */
    const unsigned char *s = (const unsigned char *)p->text;
    while (p->cur_char < idx && p->cur_byte < p->len) {
        if (idx - p->cur_char >= 8 && p->len - p->cur_byte >= 8) {   /* 8 ASCII bytes at once */
            uint64_t w;
            memcpy(&w, s + p->cur_byte, 8);
            if (!(w & HIGH_BITS)) { p->cur_byte += 8; p->cur_char += 8; continue; }
        }
        unsigned char c = s[p->cur_byte];
        size_t w = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 1;
        p->cur_byte += w;
        if (p->cur_byte > p->len) p->cur_byte = p->len;
        p->cur_char++;
    }
    while (p->cur_char > idx && p->cur_byte > 0) {
        p->cur_byte--;
        while (p->cur_byte > 0 && (s[p->cur_byte] & 0xC0) == 0x80) p->cur_byte--;
        p->cur_char--;
    }
    return p->cur_byte;
}

const char *mp_position(const struct mparse *p, size_t byte, size_t *line, size_t *col)
{
    size_t l = 1, ls = 0;
    if (byte > p->len) byte = p->len;
    for (const char *q = p->text, *e = p->text + byte; (q = memchr(q, '\n', (size_t)(e - q))) != NULL; q++) {
        l++;
        ls = (size_t)(q - p->text) + 1;
    }
    *line = l;
    *col = byte - ls + 1;
    return strcmp(p->name, "-") == 0 ? "<stdin>" : p->name;
}

void mp_locate(lua_State *L, struct mparse *p, size_t byte, const char *msg)
{
    size_t line, col;
    const char *name = mp_position(p, byte, &line, &col);
    fluence_push_located(L, name, p->text, p->len, line, col, msg);
}

int mp_error(lua_State *L, struct mparse *p, size_t byte, const char *msg)
{
    mp_locate(L, p, byte, msg);
    return lua_error(L);
}

/* Every error and limit of the tree's building goes through these two: in a
 * parse on a second thread (p->fail set: manifest_split.c) they touch no
 * Lua state and jump back to the thread, whose caller then parses that part
 * again on the main thread, where the same error is raised as always. */
static void fail(lua_State *L, struct mparse *p, size_t byte, const char *msg)
{
    if (p->fail) longjmp(*p->fail, 1);
    mp_error(L, p, byte, msg);
}

static void *grow(lua_State *L, struct mparse *p, void *ptr, size_t *cap, size_t need, size_t size)
{
    if (!p->fail) return fluence_grow(L, ptr, cap, need, size);
    if (fluence_grow_to(&ptr, cap, need, size) != 0) longjmp(*p->fail, 1);
    return ptr;
}

/* An unrendered Helm template ("{{ .Values.x }}") reads as flow mappings
 * with mapping keys, or does not parse at all: when the document so far
 * has "{{" in it, the message says so first (pushes it), and *at moves
 * onto the "{{" it points inside. */
static void push_parse_message(lua_State *L, const struct mparse *p, size_t *at, const char *what)
{
    size_t from = p->prev_end, to = *at;
    while (to < p->len && p->text[to] != '\n') to++;
    for (size_t i = from; i + 1 < to; i++) {
        if (p->text[i] == '{' && p->text[i + 1] == '{') {
            lua_pushfstring(L, "this looks like an unrendered Helm template (\"{{ ... }}\"): render it first "
                            "(helm template) [YAML: %s]", what);
            if (*at > 0 && *at < p->len && p->text[*at] == '{' && p->text[*at - 1] == '{') (*at)--;
            return;
        }
    }
    lua_pushstring(L, what);
}

static void next_event(lua_State *L, struct mparse *p)
{
    if (p->have_event) { yaml_event_delete(&p->event); p->have_event = 0; }
    /* a second thread stops within an event of being told, not at the end
     * of a document that may be most of the stream */
    if (p->stop && atomic_load_explicit(p->stop, memory_order_relaxed)) longjmp(*p->fail, 1);
    if (!yaml_parser_parse(&p->parser, &p->event)) {
        if (p->fail) longjmp(*p->fail, 1);
        yaml_parser_t *y = &p->parser;
        if (y->error == YAML_MEMORY_ERROR) luaL_error(L, "not enough memory");
        size_t at = y->error == YAML_READER_ERROR ? y->problem_offset : to_byte(p, y->problem_mark.index);
        fluence_yaml_push_problem(L, y, p->text, p->len);
        push_parse_message(L, p, &at, lua_tostring(L, -1));
        mp_error(L, p, at, lua_tostring(L, -1));
    }
    p->have_event = 1;
}

static size_t arena_add(lua_State *L, struct mparse *p, const char *s, size_t n)
{
    struct mtree *t = &p->tree;
    t->arena = grow(L, p, t->arena, &t->acap, t->alen + n + 1, 1);
    size_t at = t->alen;
    if (n) memcpy(t->arena + at, s, n);
    t->arena[at + n] = 0;
    t->alen += n + 1;
    return at;
}

static size_t hash_str(const char *s, size_t n)
{
    size_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 16777619u;
    return h;
}

/* name_off: where the name already is in the arena, or (size_t)-1 to copy
 * it there (the arena may move, so a name inside it is passed by offset) */
static void anchor_set(lua_State *L, struct mparse *p, const char *name, size_t name_off, size_t node)
{
    struct mtree *t = &p->tree;
    if (name_off != (size_t)-1) name = NULL;
    if ((t->acount + 1) * 2 > t->anchcap) {           /* grow and rehash */
        size_t cap = t->anchcap ? t->anchcap * 2 : 16;
        struct anchor *a = calloc(cap, sizeof *a);
        if (!a) {
            if (p->fail) longjmp(*p->fail, 1);
            luaL_error(L, "not enough memory");
        }
        for (size_t i = 0; i < t->anchcap; i++) {
            if (!t->anchors[i].node) continue;
            const char *nm = t->arena + t->anchors[i].name;
            size_t h = hash_str(nm, strlen(nm)) & (cap - 1);
            while (a[h].node) h = (h + 1) & (cap - 1);
            a[h] = t->anchors[i];
        }
        free(t->anchors);
        t->anchors = a;
        t->anchcap = cap;
    }
    if (!name) name = t->arena + name_off;     /* after any rehash: no allocation below */
    size_t n = strlen(name), h = hash_str(name, n) & (t->anchcap - 1);
    while (t->anchors[h].node) {
        if (strcmp(t->arena + t->anchors[h].name, name) == 0) { t->anchors[h].node = node; return; }
        h = (h + 1) & (t->anchcap - 1);
    }
    t->anchors[h].name = name_off != (size_t)-1 ? name_off : arena_add(L, p, name, n);
    t->anchors[h].node = node;
    t->acount++;
}

static size_t anchor_get(const struct mtree *t, const char *name)
{
    if (!t->anchcap) return 0;
    size_t h = hash_str(name, strlen(name)) & (t->anchcap - 1);
    while (t->anchors[h].node) {
        if (strcmp(t->arena + t->anchors[h].name, name) == 0) return t->anchors[h].node;
        h = (h + 1) & (t->anchcap - 1);
    }
    return 0;
}

const struct mnode *mt_resolve(const struct mtree *t, size_t i, size_t *out)
{
    if (i && t->nodes[i].type == MN_ALIAS) i = t->nodes[i].val;
    if (out) *out = i;
    return i ? &t->nodes[i] : NULL;
}

const char *mt_str(const struct mtree *t, size_t i)
{
    const struct mnode *n = mt_resolve(t, i, NULL);
    return n && n->type == MN_SCALAR ? t->arena + n->val : NULL;
}

void mt_kubectl(const struct mtree *t, size_t i, struct yk_value *v)
{
    const struct mnode *n = mt_resolve(t, i, NULL);
    yk_resolve(t->arena + n->val, n->len, n->style == YAML_PLAIN_SCALAR_STYLE, n->tag, v);
}

int mt_is_null(const struct mtree *t, size_t i)
{
    const struct mnode *n = mt_resolve(t, i, NULL);
    if (!n || n->type != MN_SCALAR) return 0;
    if (n->tag == YK_TAG_NONE) {     /* the common case, without a resolver call */
        if (n->style != YAML_PLAIN_SCALAR_STYLE) return 0;
        const char *s = t->arena + n->val;
        return n->len == 0 || strcmp(s, "~") == 0 || strcmp(s, "null") == 0 ||
               strcmp(s, "Null") == 0 || strcmp(s, "NULL") == 0;
    }
    struct yk_value v;
    mt_kubectl(t, i, &v);
    return v.kind == YK_NULL;
}

/* go-yaml v2's isMerge: "<<" plain and untagged, or tagged !!merge (an
 * alias to one is not a merge key) */
int mt_is_merge_key(const struct mtree *t, size_t k)
{
    const struct mnode *n = &t->nodes[k];
    return n->type == MN_SCALAR && n->len == 2 && memcmp(t->arena + n->val, "<<", 2) == 0 &&
           ((n->style == YAML_PLAIN_SCALAR_STYLE && n->tag == YK_TAG_NONE) || n->tag == YK_TAG_MERGE);
}

/* The value of key in map as kubectl reads it: entries assign in order, the
 * last one wins; a merge key assigns its mapping's entries where it stands
 * (of a list of mappings, the first wins).  *found: an assignment seen. */
static size_t get_depth(const struct mtree *t, size_t map, const char *key, size_t klen,
                        size_t *keynode, int depth)
{
    const struct mnode *m = mt_resolve(t, map, &map);
    if (!m || m->type != MN_MAP || depth > 8) return 0;
    int simple = !(m->flags & (MF_MERGE | MF_DUPS));
    size_t got = 0, gotkey = 0;
    for (size_t k = m->first; k; k = t->nodes[t->nodes[k].next].next) {
        if (m->flags & MF_MERGE && mt_is_merge_key(t, k)) {
            size_t v, kn = 0, r = 0;
            const struct mnode *vn = mt_resolve(t, t->nodes[k].next, &v);
            if (vn->type == MN_MAP) r = get_depth(t, v, key, klen, &kn, depth + 1);
            else if (vn->type == MN_SEQ)
                for (size_t c = vn->first; c && !r; c = t->nodes[c].next) r = get_depth(t, c, key, klen, &kn, depth + 1);
            if (r) { got = r; gotkey = kn; }
            continue;
        }
        const struct mnode *kn = mt_resolve(t, k, NULL);
        if (kn->type == MN_SCALAR && kn->len == klen && memcmp(t->arena + kn->val, key, klen) == 0) {
            got = t->nodes[k].next;
            gotkey = k;
            if (simple) break;
        }
    }
    if (got && keynode) *keynode = gotkey;
    return got;
}

/* The value node (unresolved) of key in mapping map, or 0. */
size_t mt_get(const struct mtree *t, size_t map, const char *key, size_t *keynode)
{
    if (keynode) *keynode = 0;
    return get_depth(t, map, key, strlen(key), keynode, 0);
}

/* Does a plain scalar resolve to a string in the YAML 1.2 core schema (and
 * is not a YAML 1.1 boolean either, to be safe with other readers)? */
int mt_plain_is_string(const char *s, size_t len)
{
    static const char *const words[] = {
        "null", "Null", "NULL", "~", "true", "True", "TRUE", "false", "False", "FALSE",
        ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF",
        ".nan", ".NaN", ".NAN", NULL
    };
    if (len == 0) return 0;
    for (int i = 0; words[i]; i++) if (strlen(words[i]) == len && memcmp(s, words[i], len) == 0) return 0;
    /* numbers: [-+]?(0x|0o)?[0-9a-fA-F.eE+-]* starting with a digit or .digit */
    size_t i = (s[0] == '-' || s[0] == '+') ? 1 : 0;
    if (i < len && (s[i] >= '0' && s[i] <= '9')) {
        if (i + 1 < len && s[i] == '0' && (s[i + 1] == 'x' || s[i + 1] == 'o')) return 0;
        size_t j = i, digits = 0;
        while (j < len && s[j] >= '0' && s[j] <= '9') { j++; digits++; }
        if (j < len && s[j] == '.') { j++; while (j < len && s[j] >= '0' && s[j] <= '9') j++; }
        if (j < len && (s[j] == 'e' || s[j] == 'E')) {
            size_t k = j + 1;
            if (k < len && (s[k] == '-' || s[k] == '+')) k++;
            size_t e = 0;
            while (k < len && s[k] >= '0' && s[k] <= '9') { k++; e++; }
            if (e) j = k;
        }
        if (j == len && digits) return 0;
    } else if (i < len && s[i] == '.' && i + 1 < len && s[i + 1] >= '0' && s[i + 1] <= '9') {
        size_t j = i + 1;
        while (j < len && s[j] >= '0' && s[j] <= '9') j++;
        if (j < len && (s[j] == 'e' || s[j] == 'E')) {
            size_t k = j + 1;
            if (k < len && (s[k] == '-' || s[k] == '+')) k++;
            while (k < len && s[k] >= '0' && s[k] <= '9') k++;
            j = k;
        }
        if (j == len) return 0;
    }
    return 1;
}

static size_t new_node(lua_State *L, struct mparse *p, int type, yaml_mark_t sm, yaml_mark_t em)
{
    struct mtree *t = &p->tree;
    t->nodes = grow(L, p, t->nodes, &t->cap, t->n + 1, sizeof *t->nodes);
    size_t i = t->n++;
    struct mnode *n = &t->nodes[i];
    memset(n, 0, sizeof *n);
    n->type = (uint8_t)type;
    n->line = (uint32_t)sm.line;
    n->col = (uint32_t)sm.column;
    n->start = to_byte(p, sm.index);
    n->end = to_byte(p, em.index);
    n->weight = 1;
    if (t->depth) {                                  /* link under the open collection */
        struct mnode *parent = &t->nodes[t->stack[t->depth - 1]];
        if (parent->last) t->nodes[parent->last].next = i; else parent->first = i;
        parent->last = i;
        parent->count++;
    }
    return i;
}

/* Keys must be scalars (kubectl: "invalid map key"); a key written twice is
 * recorded (t->dups) and the mapping flagged; so is a merge key. */
static void check_keys(lua_State *L, struct mparse *p, size_t map)
{
    struct mtree *t = &p->tree;
    struct mnode *m = &t->nodes[map];
    size_t nkeys = m->count / 2;
    for (size_t k = m->first; k; k = t->nodes[t->nodes[k].next].next) {
        const struct mnode *kn = mt_resolve(t, k, NULL);
        if (kn->type != MN_SCALAR) {
            size_t at = t->nodes[k].start;
            if (p->fail) longjmp(*p->fail, 1);
            push_parse_message(L, p, &at, "a mapping key must be a scalar (kubectl: invalid map key)");
            mp_error(L, p, at, lua_tostring(L, -1));
        }
        if (mt_is_merge_key(t, k)) m->flags |= MF_MERGE;
    }
    if (nkeys < 2) return;
    size_t cap = 16;
    while (cap < nkeys * 2) cap *= 2;
    t->keyhash = grow(L, p, t->keyhash, &t->khcap, cap, sizeof *t->keyhash);
    memset(t->keyhash, 0, cap * sizeof *t->keyhash);
    for (size_t k = m->first; k; k = t->nodes[t->nodes[k].next].next) {
        if (mt_is_merge_key(t, k)) continue;
        const struct mnode *kn = mt_resolve(t, k, NULL);
        const char *s = t->arena + kn->val;
        size_t h = hash_str(s, kn->len) & (cap - 1);
        int dup = 0;
        while (t->keyhash[h]) {
            const struct mnode *o = mt_resolve(t, t->keyhash[h], NULL);
            if (o->len == kn->len && memcmp(t->arena + o->val, s, kn->len) == 0) { dup = 1; break; }
            h = (h + 1) & (cap - 1);
        }
        if (dup) {
            m = &t->nodes[map];
            m->flags |= MF_DUPS;
            t->dups = grow(L, p, t->dups, &t->capdups, t->ndups + 1, sizeof *t->dups);
            t->dups[t->ndups++] = k;
            continue;
        }
        t->keyhash[h] = k;
    }
}

/* Adds node i's weight to its open collection's. */
static void add_weight(struct mtree *t, size_t i)
{
    if (t->depth) t->nodes[t->stack[t->depth - 1]].weight += t->nodes[i].weight;
}

/* An alias naming no complete node: is its anchor on a collection still
 * open, that is, would the alias be inside what it names? */
static int names_open_node(const struct mtree *t, const char *name)
{
    for (size_t d = 0; d < t->depth; d++) {
        const struct mnode *n = &t->nodes[t->stack[d]];
        if ((n->flags & MF_ANCHORED) && strcmp(t->arena + n->val, name) == 0) return 1;
    }
    return 0;
}

/* Reads the next document into p->tree.  Returns 0 at the end of the stream. */
int mp_next_doc(lua_State *L, struct mparse *p, struct mdoc *doc)
{
    struct mtree *t = &p->tree;
    for (;;) {
        next_event(L, p);
        if (p->event.type == YAML_STREAM_END_EVENT) return 0;
        if (p->event.type == YAML_DOCUMENT_START_EVENT) break;
    }
    t->n = 1;                                   /* node 0 is "none" */
    t->nodes = grow(L, p, t->nodes, &t->cap, 1, sizeof *t->nodes);
    memset(&t->nodes[0], 0, sizeof t->nodes[0]);
    t->alen = 0;
    t->depth = 0;
    t->acount = 0;
    t->ndups = 0;
    if (t->anchcap) memset(t->anchors, 0, t->anchcap * sizeof *t->anchors);
    doc->start = p->prev_end;
    doc->root = 0;
    for (;;) {
        next_event(L, p);
        yaml_event_t *ev = &p->event;
        const char *anchor = NULL;
        size_t i = 0;
        switch (ev->type) {
        case YAML_DOCUMENT_END_EVENT:
            doc->end = p->prev_end = to_byte(p, ev->end_mark.index);
            p->prev_line = ev->end_mark.line;
            if (!doc->root && t->n > 1) doc->root = 1;
            return 1;
        case YAML_ALIAS_EVENT: {
            const char *name = (const char *)ev->data.alias.anchor;
            size_t target = anchor_get(t, name);
            if (!target) {
                size_t at = to_byte(p, ev->start_mark.index);
                if (!names_open_node(t, name)) fail(L, p, at, "unknown alias");
                if (p->fail) longjmp(*p->fail, 1);
                lua_pushfstring(L, "alias *%s names a node that contains it (a recursive alias)", name);
                mp_error(L, p, at, lua_tostring(L, -1));
            }
            i = new_node(L, p, MN_ALIAS, ev->start_mark, ev->end_mark);
            t->nodes[i].val = target;
            t->nodes[i].weight = t->nodes[target].weight;
            p->expanded += t->nodes[i].weight;
            if (p->expanded > p->budget) fail(L, p, t->nodes[i].start, FLUENCE_YAML_TOO_BIG);
            add_weight(t, i);
            break;
        }
        case YAML_SCALAR_EVENT: {
            i = new_node(L, p, MN_SCALAR, ev->start_mark, ev->end_mark);
            size_t at = arena_add(L, p, (const char *)ev->data.scalar.value, ev->data.scalar.length);
            struct mnode *n = &t->nodes[i];
            n->val = at;
            n->len = ev->data.scalar.length;
            n->style = (uint8_t)ev->data.scalar.style;
            const char *tag = (const char *)ev->data.scalar.tag;
            n->tag = (uint8_t)yk_tag(tag);
            if (ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE || (tag && strcmp(tag, YAML_STR_TAG) == 0))
                n->flags |= MF_STR;
            n->weight = fluence_yaml_scalar_weight(n->len);
            anchor = (const char *)ev->data.scalar.anchor;
            add_weight(t, i);
            break;
        }
        case YAML_SEQUENCE_START_EVENT:
        case YAML_MAPPING_START_EVENT: {
            int map = ev->type == YAML_MAPPING_START_EVENT;
            if (t->depth >= FLUENCE_YAML_MAX_DEPTH) fail(L, p, to_byte(p, ev->start_mark.index), FLUENCE_YAML_TOO_DEEP);
            i = new_node(L, p, map ? MN_MAP : MN_SEQ, ev->start_mark, ev->end_mark);
            int flow = map ? ev->data.mapping_start.style == YAML_FLOW_MAPPING_STYLE
                           : ev->data.sequence_start.style == YAML_FLOW_SEQUENCE_STYLE;
            if (flow) t->nodes[i].flags |= MF_FLOW;
            /* a single-pair mapping inside a flow sequence has no braces: its
             * start event is zero-width */
            if (flow && map && ev->start_mark.index == ev->end_mark.index) t->nodes[i].flags |= MF_PAIR;
            const yaml_char_t *a = map ? ev->data.mapping_start.anchor : ev->data.sequence_start.anchor;
            if (a) {   /* remembered in the arena until the collection ends */
                t->nodes[i].flags |= MF_ANCHORED;
                t->nodes[i].val = arena_add(L, p, (const char *)a, strlen((const char *)a));
            }
            t->stack = grow(L, p, t->stack, &t->scap, t->depth + 1, sizeof *t->stack);
            t->stack[t->depth++] = i;
            if (!doc->root) doc->root = i;
            continue;
        }
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT: {
            i = t->stack[--t->depth];
            struct mnode *n = &t->nodes[i];
            n->end = to_byte(p, ev->end_mark.index);
            if (n->type == MN_MAP) check_keys(L, p, i);
            add_weight(t, i);
            if (t->nodes[i].flags & MF_ANCHORED) anchor_set(L, p, NULL, t->nodes[i].val, i);
            continue;
        }
        default:
            continue;
        }
        if (!doc->root) doc->root = i;
        if (anchor) {
            t->nodes[i].flags |= MF_ANCHORED;
            anchor_set(L, p, anchor, (size_t)-1, i);
        }
    }
}
