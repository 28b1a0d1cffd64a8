/* JGF text of a resource graph (see match_jgf.h).  It writes what
 * cluster.lua's json.encode of the same tables wrote, byte for byte: keys
 * sorted (property keys by strcmp: fluence runs in the C locale), integers
 * as %lld, strings through the one escaper (json_write.h), and an edge's
 * parent found as Lua's path:match("^(.+)/[^/]+$") found it, among paths
 * where the last vertex with a path wins. */
#include <stdlib.h>
#include <string.h>
#include "match_jgf.h"

struct w { jw_sink out; void *to; };

static void put(struct w *w, const char *s) { w->out(w->to, s, strlen(s)); }
/* an integer as %lld writes it (snprintf was a sixth of the writer) */
static void put_int(struct w *w, long long v)
{
    char buf[24], *e = buf + sizeof buf, *p = e;
    unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    do { *--p = (char)('0' + u % 10); u /= 10; } while (u);
    if (v < 0) *--p = '-';
    w->out(w->to, p, (size_t)(e - p));
}
static void put_str(struct w *w, const char *s) { jw_string_to(w->out, w->to, s, strlen(s), 0); }
static void indent(struct w *w, int depth)
{
    static const char spaces[] = "\n                                ";
    w->out(w->to, spaces, 1 + 2 * (size_t)depth);
}
/* "key": at depth (a line of its own, after a comma unless first); the
 * metadata's own keys need no escaping, a property's goes through it */
static void key_as(struct w *w, int depth, const char *k, int *first, int escape)
{
    char buf[64];                       /* ",\n" + indent + "\"key\": " in one piece */
    size_t n = 0, kl = escape ? 0 : strlen(k);
    if (!escape && 2 + 2 * (size_t)depth + kl + 4 <= sizeof buf) {
        if (!*first) buf[n++] = ',';
        buf[n++] = '\n';
        memset(buf + n, ' ', 2 * (size_t)depth);
        n += 2 * (size_t)depth;
        buf[n++] = '"';
        memcpy(buf + n, k, kl);
        n += kl;
        memcpy(buf + n, "\": ", 3);
        w->out(w->to, buf, n + 3);
        *first = 0;
        return;
    }
    if (!*first) put(w, ",");
    *first = 0;
    indent(w, depth);
    if (escape) put_str(w, k);
    else { put(w, "\""); put(w, k); put(w, "\""); }
    put(w, ": ");
}
static void key(struct w *w, int depth, const char *k, int *first) { key_as(w, depth, k, first, 0); }
static void int_field(struct w *w, int depth, const char *k, int *first, long long v)
{
    key(w, depth, k, first);
    put_int(w, v);
}
static void str_field(struct w *w, int depth, const char *k, int *first, const char *v)
{
    key(w, depth, k, first);
    put_str(w, v);
}

static const mgraph *sort_graph;
static int by_path(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    int c = strcmp(mg_str(sort_graph, sort_graph->v[x].path), mg_str(sort_graph, sort_graph->v[y].path));
    return c ? c : (x > y) - (x < y);
}
static int by_key(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    int c = strcmp(mg_str(sort_graph, sort_graph->props[2 * x]), mg_str(sort_graph, sort_graph->props[2 * y]));
    return c ? c : (x > y) - (x < y);
}

/* The last vertex whose path is the first n bytes of p, or -1. */
static int64_t find_path(const mgraph *g, const uint32_t *sorted, const char *p, size_t n)
{
    size_t lo = 0, hi = g->nv;            /* first entry whose path is greater */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const char *s = mg_str(g, g->v[sorted[mid]].path);
        int c = strncmp(s, p, n);
        if (c < 0 || (c == 0 && s[n] == '\0')) lo = mid + 1; else hi = mid;
    }
    if (lo == 0) return -1;
    const char *s = mg_str(g, g->v[sorted[lo - 1]].path);
    return strncmp(s, p, n) == 0 && s[n] == '\0' ? (int64_t)sorted[lo - 1] : -1;
}

/* The parent path's length as path:match("^(.+)/[^/]+$") has it, or 0. */
static size_t parent_len(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash || slash == path || slash[1] == '\0') return 0;
    return (size_t)(slash - path);
}

static uint32_t max_props(const mgraph *g)
{
    uint32_t m = 0;
    for (uint32_t i = 0; i < g->nv; i++)
        if (g->v[i].nprop > m) m = g->v[i].nprop;
    return m;
}

size_t mg_jgf_scratch(const mgraph *g) { return (size_t)g->nv + max_props(g) + 1; }

static void vertex(struct w *w, const mgraph *g, uint32_t i, uint32_t *order)
{
    const mg_vertex *x = &g->v[i];
    const char *type = mg_type_name(g, x->type);
    put(w, "{");
    int first = 1;
    key(w, 4, "id", &first);
    put(w, "\"");
    put_int(w, i);
    put(w, "\"");
    key(w, 4, "metadata", &first);
    put(w, "{");
    int f = 1;
    str_field(w, 5, "basename", &f, mg_str(g, x->basename));
    key(w, 5, "exclusive", &f);
    put(w, "false");
    if (strcmp(type, "node") == 0 && mg_has_prop(g, i, "virtual=false"))
        str_field(w, 5, "hostname", &f, mg_str(g, x->name));
    int_field(w, 5, "id", &f, (long long)x->id);
    str_field(w, 5, "name", &f, mg_str(g, x->name));
    key(w, 5, "paths", &f);
    put(w, "{");
    int pf = 1;
    str_field(w, 6, "containment", &pf, mg_str(g, x->path));
    indent(w, 5);
    put(w, "}");
    if (x->nprop > 0) {
        /* sorted by key; of equal keys the last (a Lua table kept it) */
        for (uint32_t p = 0; p < x->nprop; p++) order[p] = x->prop0 + p;
        sort_graph = g;
        qsort(order, x->nprop, sizeof *order, by_key);
        key(w, 5, "properties", &f);
        put(w, "{");
        int kf = 1;
        for (uint32_t p = 0; p < x->nprop; p++) {
            if (p + 1 < x->nprop && strcmp(mg_str(g, g->props[2 * order[p]]),
                                           mg_str(g, g->props[2 * order[p + 1]])) == 0) continue;
            key_as(w, 6, mg_str(g, g->props[2 * order[p]]), &kf, 1);
            put_str(w, mg_str(g, g->props[2 * order[p] + 1]));
        }
        indent(w, 5);
        put(w, "}");
    }
    int_field(w, 5, "rank", &f, (long long)x->rank);
    int_field(w, 5, "size", &f, (long long)x->size);
    str_field(w, 5, "type", &f, type);
    int_field(w, 5, "uniq_id", &f, (long long)i);
    str_field(w, 5, "unit", &f, mg_str(g, x->unit));
    indent(w, 4);
    put(w, "}");
    indent(w, 3);
    put(w, "}");
}

void mg_write_jgf(const mgraph *g, uint32_t *scratch, jw_sink out, void *to)
{
    struct w w = { out, to };
    uint32_t *sorted = scratch, *order = scratch + g->nv;
    for (uint32_t i = 0; i < g->nv; i++) sorted[i] = i;
    sort_graph = g;
    qsort(sorted, g->nv, sizeof *sorted, by_path);

    put(&w, "{");
    indent(&w, 1);
    put(&w, "\"graph\": {");
    indent(&w, 2);
    put(&w, "\"nodes\": [");
    for (uint32_t i = 0; i < g->nv; i++) {
        if (i > 0) put(&w, ",");
        indent(&w, 3);
        vertex(&w, g, i, order);
    }
    if (g->nv > 0) indent(&w, 2);
    put(&w, "],");
    indent(&w, 2);
    put(&w, "\"edges\": [");
    int any = 0;
    for (uint32_t i = 0; i < g->nv; i++) {
        const char *path = mg_str(g, g->v[i].path);
        size_t n = parent_len(path);
        int64_t p = n ? find_path(g, sorted, path, n) : -1;
        if (p < 0) continue;
        if (any) put(&w, ",");
        any = 1;
        indent(&w, 3);
        put(&w, "{");
        int f = 1;
        key(&w, 4, "source", &f);
        put(&w, "\"");
        put_int(&w, p);
        put(&w, "\"");
        key(&w, 4, "target", &f);
        put(&w, "\"");
        put_int(&w, i);
        put(&w, "\"");
        key(&w, 4, "metadata", &f);
        put(&w, "{");
        int mf = 1;
        str_field(&w, 5, "subsystem", &mf, "containment");
        indent(&w, 4);
        put(&w, "}");
        indent(&w, 3);
        put(&w, "}");
    }
    if (any) indent(&w, 2);
    put(&w, "]");
    indent(&w, 1);
    put(&w, "}");
    indent(&w, 0);
    put(&w, "}\n");
}
