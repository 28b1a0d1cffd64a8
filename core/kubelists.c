/* fluence.kubelists — what fluence needs from a cluster's NodeList and
 * PodList pages, read straight from the JSON text.
 *
 *   kubelists.nodes(text) -> nodes, continue | nil, message
 *     nodes: { {name =, cpu = cores, cpu_milli =, memory = bytes, gpu = n,
 *               unschedulable = bool, control_plane = bool,
 *               saturated = true | nil}, ... }
 *     (allocatable, else capacity, as Fluence reads them: cpu rounded up
 *      to whole cores (as Fluence; the graphs use cpu_milli rounded down:
 *      cluster.lua's M.whole), memory in bytes, GPUs "nvidia.com/gpu")
 *   kubelists.usage() -> acc
 *     acc:add(text) -> pods, continue | nil, message
 *         adds the requests of every pod bound to a node (spec.nodeName set)
 *         whose phase is not Succeeded or Failed (what `kubectl describe
 *         node` calls allocated): per resource, the larger of the
 *         containers' sum (plus sidecars) and the largest init container,
 *         plus the pod overhead
 *     acc:totals() -> { [node] = {cpu_milli =, memory =, gpu =, pods =,
 *                                 top = "NS/NAME", "NAME" or "" (the pod asking
 *                                 the most cpu; as decoded, cut to the API
 *                                 server's lengths on a character boundary),
 *                                 saturated = true | nil} }
 *
 * Quantities and sums are int64 and saturate at INT64_MAX rather than wrap
 * (or refuse the list): saturated marks a node whose figures did.
 *
 * Why not jansson: a list of 150,000 pods is ~80 MB of JSON; building its
 * DOM took 5 s here, and Lua tables would take more.  This scanner validates
 * the whole text (strict JSON: UTF-8 strings, no trailing commas; a key it
 * reads given twice in one object is refused) but keeps only the handful of
 * fields above, with no allocation per object; the accumulator holds one
 * small record per node.  Malformed text is an error naming the byte
 * offset.  The fuzz target `kubelists` holds it to RFC 8259's grammar and
 * checks the totals (lua/fluence/fuzz.lua). */
#include <ctype.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <lauxlib.h>
#include "jscan.h"

#define MAX_DEPTH 512
#define GPU_RESOURCE "nvidia.com/gpu"

/* ------------------------------------------------------------ the scanner */

/* jscan.h's scanner, and a tally of the quantities read past the int64
 * range (so that a node's figures can say they saturated). */
struct kscan {
    struct jscan s;            /* first: a struct jscan * is a struct kscan * */
    unsigned saturated;
};

static unsigned *saturated(struct jscan *s)
{
    return &((struct kscan *)s)->saturated;
}

/* A boolean (or null, as false). */
static int read_bool(struct jscan *s, int *out)
{
    int c = jscan_peek(s);
    if (c == 't') { *out = 1; return jscan_literal(s, "true"); }
    if (c == 'f') { *out = 0; return jscan_literal(s, "false"); }
    if (c == 'n') { *out = 0; return jscan_literal(s, "null"); }
    return jscan_fail(s, "expected true or false");
}

/* ------------------------------------------------------------ quantities */

/* a + b for amounts that are never negative, stopping at INT64_MAX instead
 * of wrapping (a full node summed past it would have shown free); *sat
 * counts the times it stopped */
static int64_t sat_add(int64_t a, int64_t b, unsigned *sat)
{
    if (b > 0 && a > INT64_MAX - b) { ++*sat; return INT64_MAX; }
    return a + b;
}

/* A Kubernetes quantity ("250m", "4Gi", "1e3", "2", "8Ei") scaled by
 * 10^scale_exp and rounded up, as resource.Quantity's ScaledValue does:
 * scale 0 for counts and bytes, 3 for millicores.  A JSON number is taken as
 * is.  What lies past the int64 range (10E of CPU in millicores, 8Ei, 1e400)
 * is a valid quantity to the API server: it is taken as INT64_MAX (or
 * INT64_MIN), as the server's own int64 arithmetic saturates, and counted in
 * s->saturated so that the caller can say so. */
static int quantity(struct jscan *s, int scale_exp, int64_t *out)
{
    char buf[64];
    size_t n;
    int c = jscan_peek(s);
    if (c == '"') {
        struct jstr t;
        if (jscan_string(s, &t) < 0) return -1;
        if (t.n >= sizeof buf) return jscan_fail(s, "bad quantity");
        memcpy(buf, t.p, t.n);
        n = t.n;
    } else if (c == 'n') {
        *out = 0;
        return jscan_literal(s, "null");
    } else {
        struct jstr t;
        if (jscan_number(s, &t) < 0) return -1;
        n = t.n;
        if (n >= sizeof buf) return jscan_fail(s, "bad quantity");
        memcpy(buf, t.p, n);
    }
    buf[n] = 0;
    /* number: [+-] digits [. digits]; then a suffix or an exponent */
    const char *q = buf;
    int neg = 0;
    if (*q == '+' || *q == '-') neg = *q++ == '-';
    long double m = 0;
    int frac = 0, digits = 0;
    char dg[sizeof buf];             /* the significant digits, without the point */
    size_t nd = 0;
    while (isdigit((unsigned char)*q)) {
        if (nd || *q != '0') dg[nd++] = *q;
        m = m * 10 + (*q++ - '0');
        digits++;
    }
    if (*q == '.') {
        q++;
        while (isdigit((unsigned char)*q)) {
            if (nd || *q != '0') dg[nd++] = *q;
            m = m * 10 + (*q++ - '0');
            frac++;
            digits++;
        }
    }
    if (!digits) return jscan_fail(s, "bad quantity");
    int e10 = -frac, e2 = 0;
    /* "E" alone is the exa suffix; followed by [sign] digits, an exponent */
    const char *ed = q + 1 + (q[0] && (q[1] == '+' || q[1] == '-'));
    if ((*q == 'e' || *q == 'E') && isdigit((unsigned char)*ed)) {
        char *end;
        long e = strtol(q + 1, &end, 10);
        if (*end) return jscan_fail(s, "bad quantity");
        /* past +-6000 a long double is infinite or 0 either way */
        e10 += e > 6000 ? 6000 : e < -6000 ? -6000 : (int)e;
    } else if (*q) {
        static const struct { const char *sfx; int e10, e2; } sfx[] = {
            {"n", -9, 0}, {"u", -6, 0}, {"m", -3, 0}, {"k", 3, 0}, {"M", 6, 0}, {"G", 9, 0}, {"T", 12, 0},
            {"P", 15, 0}, {"E", 18, 0}, {"Ki", 0, 10}, {"Mi", 0, 20}, {"Gi", 0, 30}, {"Ti", 0, 40},
            {"Pi", 0, 50}, {"Ei", 0, 60}};
        size_t i;
        for (i = 0; i < sizeof sfx / sizeof *sfx; i++)
            if (strcmp(q, sfx[i].sfx) == 0) break;
        if (i == sizeof sfx / sizeof *sfx) return jscan_fail(s, "bad quantity suffix");
        e10 += sfx[i].e10;
        e2 = sfx[i].e2;
    }
    /* A whole number (the usual case: "4Gi", "250m" in millicores, "8Ei")
     * is computed exactly in 64 bits, saturating; a long double would round
     * 2^63-1 and 5Ei. */
    int e = e10 + scale_exp;
    while (nd && dg[nd - 1] == '0' && e < 0) { nd--; e++; }
    if (nd == 0) { *out = 0; return 0; }
    if (e >= 0) {
        uint64_t u = 0;
        int sat = 0;
        for (size_t i = 0; i < nd && !sat; i++) {
            unsigned d = (unsigned)(dg[i] - '0');
            if (u > (UINT64_MAX - d) / 10) sat = 1; else u = u * 10 + d;
        }
        for (int i = 0; i < e && !sat; i++) {
            if (u > UINT64_MAX / 10) sat = 1; else u *= 10;
        }
        if (!sat && e2 && u > (UINT64_MAX >> e2)) sat = 1;
        if (!sat) u <<= e2;
        if (!neg && (sat || u > (uint64_t)INT64_MAX)) { ++*saturated(s); *out = INT64_MAX; return 0; }
        if (neg && (sat || u > (uint64_t)INT64_MAX + 1)) { ++*saturated(s); *out = INT64_MIN; return 0; }
        *out = neg ? (u == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)u) : (int64_t)u;
        return 0;
    }
    long double v = m * powl(10.0L, (long double)(e10 + scale_exp)) * ldexpl(1.0L, e2);
    if (neg) v = -v;
    /* 2^63 exactly is past INT64_MAX; anything from there saturates */
    if (v >= 9223372036854775808.0L) { ++*saturated(s); *out = INT64_MAX; return 0; }
    if (v <= -9223372036854775808.0L) { ++*saturated(s); *out = INT64_MIN; return 0; }
    /* round up, but not past an exact value a decimal fraction missed */
    long double r = ceill(v - v * 1e-15L);
    *out = r >= 9223372036854775807.0L ? INT64_MAX : (int64_t)r;
    return 0;
}

/* A key read twice in one object would make the answer ambiguous (which
 * one counts?): every key read here is read once, or the text is refused.
 * Each walker keeps the keys it has read as bits. */
enum {
    K_METADATA = 1 << 0, K_SPEC = 1 << 1, K_STATUS = 1 << 2, K_NAME = 1 << 3, K_UNSCHEDULABLE = 1 << 4,
    K_TAINTS = 1 << 5, K_ALLOCATABLE = 1 << 6, K_CAPACITY = 1 << 7, K_NODENAME = 1 << 8,
    K_CONTAINERS = 1 << 9, K_INITCONTAINERS = 1 << 10, K_OVERHEAD = 1 << 11, K_PHASE = 1 << 12,
    K_ITEMS = 1 << 13, K_CONTINUE = 1 << 14, K_RESOURCES = 1 << 15, K_RESTARTPOLICY = 1 << 16,
    K_REQUESTS = 1 << 17, K_CPU = 1 << 18, K_MEMORY = 1 << 19, K_GPU = 1 << 20, K_KEY = 1 << 21,
    K_NAMESPACE = 1 << 22,
};

static int once(struct jscan *s, unsigned *seen, unsigned bit)
{
    if (*seen & bit) return jscan_fail(s, "a key given twice in one object");
    *seen |= bit;
    return 0;
}

/* ------------------------------------------------------------- node lists */

struct res { int64_t cpu, memory, gpu; int has_cpu, has_memory, has_gpu; unsigned seen; };

/* A node's resources; cpu in millicores. */
static int resources_member(struct jscan *s, struct jstr k, void *ud)
{
    struct res *r = ud;
    if (jstr_is(k, "cpu")) { r->has_cpu = 1; return once(s, &r->seen, K_CPU) < 0 ? -1 : quantity(s, 3, &r->cpu); }
    if (jstr_is(k, "memory")) {
        r->has_memory = 1;
        return once(s, &r->seen, K_MEMORY) < 0 ? -1 : quantity(s, 0, &r->memory);
    }
    if (jstr_is(k, GPU_RESOURCE)) { r->has_gpu = 1; return once(s, &r->seen, K_GPU) < 0 ? -1 : quantity(s, 0, &r->gpu); }
    return jscan_skip(s);
}

struct node {
    lua_State *L;
    struct res alloc, cap;
    int unschedulable, control_plane, has_name;
    unsigned seen, meta_seen, spec_seen, status_seen;
};

struct taint { struct node *n; unsigned seen; };

static int taint_member(struct jscan *s, struct jstr k, void *ud)
{
    struct taint *t = ud;
    struct node *n = t->n;
    if (!jstr_is(k, "key")) return jscan_skip(s);
    if (once(s, &t->seen, K_KEY) < 0) return -1;
    if (jscan_peek(s) != '"') return jscan_skip(s);
    struct jstr v;
    if (jscan_string(s, &v) < 0) return -1;
    if (jstr_is(v, "node-role.kubernetes.io/control-plane") || jstr_is(v, "node-role.kubernetes.io/master"))
        n->control_plane = 1;
    return 0;
}

static int taint_element(struct jscan *s, void *ud)
{
    if (jscan_peek(s) != '{') return jscan_skip(s);
    struct taint t = { ud, 0 };
    return jscan_object(s, taint_member, &t);
}

static int node_spec_member(struct jscan *s, struct jstr k, void *ud)
{
    struct node *n = ud;
    if (jstr_is(k, "unschedulable"))
        return once(s, &n->spec_seen, K_UNSCHEDULABLE) < 0 ? -1 : read_bool(s, &n->unschedulable);
    if (jstr_is(k, "taints") && jscan_peek(s) == '[')
        return once(s, &n->spec_seen, K_TAINTS) < 0 ? -1 : jscan_array(s, taint_element, n);
    return jscan_skip(s);
}

static int node_status_member(struct jscan *s, struct jstr k, void *ud)
{
    struct node *n = ud;
    if (jstr_is(k, "allocatable") && jscan_peek(s) == '{')
        return once(s, &n->status_seen, K_ALLOCATABLE) < 0 ? -1 : jscan_object(s, resources_member, &n->alloc);
    if (jstr_is(k, "capacity") && jscan_peek(s) == '{')
        return once(s, &n->status_seen, K_CAPACITY) < 0 ? -1 : jscan_object(s, resources_member, &n->cap);
    return jscan_skip(s);
}

static int node_meta_member(struct jscan *s, struct jstr k, void *ud)
{
    struct node *n = ud;
    if (!jstr_is(k, "name")) return jscan_skip(s);
    if (once(s, &n->meta_seen, K_NAME) < 0) return -1;
    struct jstr v;
    if (jscan_string(s, &v) < 0) return -1;
    lua_pushlstring(n->L, v.p, v.n);
    lua_setfield(n->L, -2, "name");
    n->has_name = 1;
    return 0;
}

static int node_member(struct jscan *s, struct jstr k, void *ud)
{
    struct node *n = ud;
    if (jstr_is(k, "metadata") && jscan_peek(s) == '{')
        return once(s, &n->seen, K_METADATA) < 0 ? -1 : jscan_object(s, node_meta_member, n);
    if (jstr_is(k, "spec") && jscan_peek(s) == '{')
        return once(s, &n->seen, K_SPEC) < 0 ? -1 : jscan_object(s, node_spec_member, n);
    if (jstr_is(k, "status") && jscan_peek(s) == '{')
        return once(s, &n->seen, K_STATUS) < 0 ? -1 : jscan_object(s, node_status_member, n);
    return jscan_skip(s);
}

/* One list page: items go to `item`; the continue token is stored at stack
 * index `cont`. */
struct list { lua_State *L; lua_Integer count; int has_items, cont; jscan_element_fn item; void *ud;
              unsigned seen, meta_seen; };

static int node_element(struct jscan *s, void *ud)
{
    struct list *l = ud;
    lua_State *L = l->L;
    struct node n;
    memset(&n, 0, sizeof n);
    n.L = L;
    lua_createtable(L, 0, 6);
    unsigned before = *saturated(s);
    if (jscan_object(s, node_member, &n) < 0) return -1;
    if (!n.has_name) return jscan_fail(s, "a node without metadata.name");
    int64_t cpu = n.alloc.has_cpu ? n.alloc.cpu : n.cap.cpu;
    int64_t mem = n.alloc.has_memory ? n.alloc.memory : n.cap.memory;
    int64_t gpu = n.alloc.has_gpu ? n.alloc.gpu : n.cap.gpu;
    if (cpu < 0) cpu = 0;
    if (*saturated(s) != before) {
        lua_pushboolean(L, 1);
        lua_setfield(L, -2, "saturated");
    }
    lua_pushinteger(L, cpu / 1000 + (cpu % 1000 != 0));   /* Quantity.Value(): rounded up */
    lua_setfield(L, -2, "cpu");
    lua_pushinteger(L, cpu);
    lua_setfield(L, -2, "cpu_milli");
    lua_pushinteger(L, mem > 0 ? mem : 0);
    lua_setfield(L, -2, "memory");
    lua_pushinteger(L, gpu > 0 ? gpu : 0);
    lua_setfield(L, -2, "gpu");
    lua_pushboolean(L, n.unschedulable);
    lua_setfield(L, -2, "unschedulable");
    lua_pushboolean(L, n.control_plane);
    lua_setfield(L, -2, "control_plane");
    lua_rawseti(L, -2, ++l->count);
    return 0;
}

/* The list's metadata: its continue token. */
static int list_meta_member(struct jscan *s, struct jstr k, void *ud)
{
    struct list *l = ud;
    if (!jstr_is(k, "continue")) return jscan_skip(s);
    if (once(s, &l->meta_seen, K_CONTINUE) < 0) return -1;
    struct jstr v;
    if (jscan_string(s, &v) < 0) return -1;
    if (v.n) {
        lua_pushlstring(l->L, v.p, v.n);
        lua_replace(l->L, l->cont);
    }
    return 0;
}

static int list_member(struct jscan *s, struct jstr k, void *ud)
{
    struct list *l = ud;
    if (jstr_is(k, "items")) {
        if (once(s, &l->seen, K_ITEMS) < 0) return -1;
        if (jscan_peek(s) == 'n') return jscan_literal(s, "null");
        l->has_items = 1;
        return jscan_array(s, l->item, l->ud);
    }
    if (jstr_is(k, "metadata") && jscan_peek(s) == '{')
        return once(s, &l->seen, K_METADATA) < 0 ? -1 : jscan_object(s, list_meta_member, l);
    return jscan_skip(s);
}

/* Scans one list page; on error pushes nil, message and returns 2. */
static int scan_list(lua_State *L, struct jscan *s, struct list *l, const char *what)
{
    int rc = jscan_object(s, list_member, l);
    if (rc == 0 && jscan_peek(s) != -1) rc = jscan_fail(s, "text after the list");
    if (rc == 0 && !l->has_items) rc = jscan_fail(s, "not a list (no items)");
    jscan_free(s);
    if (rc < 0) {
        lua_pushnil(L);
        lua_pushfstring(L, "the %s is not valid: %s at byte %d", what, s->err, (int)s->errat);
        return 2;
    }
    return 0;
}

static int kl_nodes(lua_State *L)
{
    size_t len;
    const char *text = luaL_checklstring(L, 1, &len);
    lua_settop(L, 1);
    lua_pushnil(L);                  /* 2: continue */
    lua_newtable(L);                 /* 3: nodes */
    struct kscan ks = { .saturated = 0 };
    struct jscan *s = &ks.s;
    jscan_init(s, text, len, MAX_DEPTH);
    struct list l = { .L = L, .cont = 2, .item = node_element };
    l.ud = &l;
    if (scan_list(L, s, &l, "NodeList")) return 2;
    lua_insert(L, 2);                /* nodes, continue */
    return 2;
}

/* ---------------------------------------------------- pod usage per node */

#define USAGE_MT "fluence.kubelists.usage"

/* top: "NAMESPACE/NAME" of the pod asking for the most cpu there (the first
 * of equals), for why a group does not fit ("12 used by default/busy");
 * top_len bytes, as decoded (a NUL in a name is kept, and escaped where
 * shown) */
struct usage_node { char *name; int64_t cpu_milli, memory, gpu, pods, top_cpu; char *top; size_t top_len; int saturated; };

struct usage {
    struct usage_node *slots;        /* open addressing by name */
    size_t cap, count;
};

static uint64_t hash(const char *p, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) { h ^= (unsigned char)p[i]; h *= 1099511628211ull; }
    return h;
}

static struct usage_node *usage_find(struct usage *u, const char *p, size_t n)
{
    if (u->count * 2 >= u->cap) {
        size_t cap = u->cap ? u->cap * 2 : 64;
        struct usage_node *ns = calloc(cap, sizeof *ns);
        if (!ns) return NULL;
        for (size_t i = 0; i < u->cap; i++) {
            if (!u->slots[i].name) continue;
            size_t j = hash(u->slots[i].name, strlen(u->slots[i].name)) & (cap - 1);
            while (ns[j].name) j = (j + 1) & (cap - 1);
            ns[j] = u->slots[i];
        }
        free(u->slots);
        u->slots = ns;
        u->cap = cap;
    }
    size_t j = hash(p, n) & (u->cap - 1);
    while (u->slots[j].name) {
        if (strlen(u->slots[j].name) == n && memcmp(u->slots[j].name, p, n) == 0) return &u->slots[j];
        j = (j + 1) & (u->cap - 1);
    }
    char *name = malloc(n + 1);
    if (!name) return NULL;
    memcpy(name, p, n);
    name[n] = 0;
    u->slots[j].name = name;
    u->count++;
    return &u->slots[j];
}

static int usage_gc(lua_State *L)
{
    struct usage *u = luaL_checkudata(L, 1, USAGE_MT);
    for (size_t i = 0; i < u->cap; i++) { free(u->slots[i].name); free(u->slots[i].top); }
    free(u->slots);
    memset(u, 0, sizeof *u);
    return 0;
}

/* One container's requests, and whether it is a sidecar (an init container
 * with restartPolicy Always). */
struct container { struct res req; int sidecar; unsigned seen, res_seen; };

/* Requests are resources with the same three names (resources_member), the
 * cpu scaled the same way: millicores. */
#define requests_member resources_member

static int container_resources_member(struct jscan *s, struct jstr k, void *ud)
{
    struct container *c = ud;
    if (jstr_is(k, "requests") && jscan_peek(s) == '{')
        return once(s, &c->res_seen, K_REQUESTS) < 0 ? -1 : jscan_object(s, requests_member, &c->req);
    return jscan_skip(s);
}

static int container_member(struct jscan *s, struct jstr k, void *ud)
{
    struct container *c = ud;
    if (jstr_is(k, "resources") && jscan_peek(s) == '{')
        return once(s, &c->seen, K_RESOURCES) < 0 ? -1 : jscan_object(s, container_resources_member, c);
    if (jstr_is(k, "restartPolicy") && jscan_peek(s) == '"') {
        if (once(s, &c->seen, K_RESTARTPOLICY) < 0) return -1;
        struct jstr v;
        if (jscan_string(s, &v) < 0) return -1;
        c->sidecar = jstr_is(v, "Always");
        return 0;
    }
    return jscan_skip(s);
}

struct pod {
    struct usage *u;
    struct jstr node;                 /* copied into node_buf: the scratch moves */
    char node_buf[256];
    char ns[64], name[254];           /* metadata: a DNS label (63), a DNS subdomain (253) */
    size_t ns_len, name_len;          /* as decoded: a \u0000 in one is kept */
    unsigned meta_seen;
    int has_node, finished;
    int64_t sum[3], sidecars[3], init_max[3], overhead[3];
    unsigned seen, spec_seen, status_seen;
};

/* A request as the sums take it: never negative (the API server refuses a
 * negative request; one here would make a node look freer than it is). */
static int64_t request_of(int64_t v) { return v > 0 ? v : 0; }

/* a += r's requests, saturating */
static void add3(struct jscan *s, int64_t *a, const struct res *r)
{
    a[0] = sat_add(a[0], request_of(r->cpu), saturated(s));
    a[1] = sat_add(a[1], request_of(r->memory), saturated(s));
    a[2] = sat_add(a[2], request_of(r->gpu), saturated(s));
}

static int container_element(struct jscan *s, void *ud)
{
    struct pod *p = ud;
    struct container c;
    memset(&c, 0, sizeof c);
    if (jscan_object(s, container_member, &c) < 0) return -1;
    add3(s, p->sum, &c.req);
    return 0;
}

static int init_container_element(struct jscan *s, void *ud)
{
    struct pod *p = ud;
    struct container c;
    memset(&c, 0, sizeof c);
    if (jscan_object(s, container_member, &c) < 0) return -1;
    int64_t v[3] = { request_of(c.req.cpu), request_of(c.req.memory), request_of(c.req.gpu) };
    for (int i = 0; i < 3; i++) {
        if (c.sidecar) {
            p->sidecars[i] = sat_add(p->sidecars[i], v[i], saturated(s));
            if (p->sidecars[i] > p->init_max[i]) p->init_max[i] = p->sidecars[i];
        } else {
            int64_t with = sat_add(p->sidecars[i], v[i], saturated(s));
            if (with > p->init_max[i]) p->init_max[i] = with;
        }
    }
    return 0;
}

static int pod_spec_member(struct jscan *s, struct jstr k, void *ud)
{
    struct pod *p = ud;
    if (jstr_is(k, "nodeName") && jscan_peek(s) == '"') {
        if (once(s, &p->spec_seen, K_NODENAME) < 0) return -1;
        struct jstr v;
        if (jscan_string(s, &v) < 0) return -1;
        if (v.n >= sizeof p->node_buf) return jscan_fail(s, "a node name that long");
        memcpy(p->node_buf, v.p, v.n);
        p->node.p = p->node_buf;
        p->node.n = v.n;
        p->has_node = v.n > 0;
        return 0;
    }
    if (jstr_is(k, "containers") && jscan_peek(s) == '[')
        return once(s, &p->spec_seen, K_CONTAINERS) < 0 ? -1 : jscan_array(s, container_element, p);
    if (jstr_is(k, "initContainers") && jscan_peek(s) == '[')
        return once(s, &p->spec_seen, K_INITCONTAINERS) < 0 ? -1 : jscan_array(s, init_container_element, p);
    if (jstr_is(k, "overhead") && jscan_peek(s) == '{') {
        if (once(s, &p->spec_seen, K_OVERHEAD) < 0) return -1;
        struct res r;
        memset(&r, 0, sizeof r);
        if (jscan_object(s, requests_member, &r) < 0) return -1;
        add3(s, p->overhead, &r);
        return 0;
    }
    return jscan_skip(s);
}

static int pod_status_member(struct jscan *s, struct jstr k, void *ud)
{
    struct pod *p = ud;
    if (!jstr_is(k, "phase") || jscan_peek(s) != '"') return jscan_skip(s);
    if (once(s, &p->status_seen, K_PHASE) < 0) return -1;
    struct jstr v;
    if (jscan_string(s, &v) < 0) return -1;
    p->finished = jstr_is(v, "Succeeded") || jstr_is(v, "Failed");
    return 0;
}

/* metadata.name and .namespace, copied (cut short if longer than the API
 * server allows: they only name the pod in a message), whole characters
 * only: the scanner has checked the text is UTF-8, and a cut must not make
 * it otherwise */
static int pod_meta_member(struct jscan *s, struct jstr k, void *ud)
{
    struct pod *p = ud;
    int is_name = jstr_is(k, "name"), is_ns = !is_name && jstr_is(k, "namespace");
    if ((!is_name && !is_ns) || jscan_peek(s) != '"') return jscan_skip(s);
    if (once(s, &p->meta_seen, is_name ? K_NAME : K_NAMESPACE) < 0) return -1;
    struct jstr v;
    if (jscan_string(s, &v) < 0) return -1;
    char *dst = is_name ? p->name : p->ns;
    size_t cap = (is_name ? sizeof p->name : sizeof p->ns) - 1, n = v.n;
    if (n > cap) {
        n = cap;
        while (n > 0 && ((unsigned char)v.p[n] & 0xC0) == 0x80) n--;   /* v.p[n]: a continuation byte */
    }
    memcpy(dst, v.p, n);
    *(is_name ? &p->name_len : &p->ns_len) = n;
    return 0;
}

static int pod_member(struct jscan *s, struct jstr k, void *ud)
{
    struct pod *p = ud;
    if (jstr_is(k, "metadata") && jscan_peek(s) == '{')
        return once(s, &p->seen, K_METADATA) < 0 ? -1 : jscan_object(s, pod_meta_member, p);
    if (jstr_is(k, "spec") && jscan_peek(s) == '{')
        return once(s, &p->seen, K_SPEC) < 0 ? -1 : jscan_object(s, pod_spec_member, p);
    if (jstr_is(k, "status") && jscan_peek(s) == '{')
        return once(s, &p->seen, K_STATUS) < 0 ? -1 : jscan_object(s, pod_status_member, p);
    return jscan_skip(s);
}

struct usage_list { struct list l; struct usage *u; };

static int usage_pod_element(struct jscan *s, void *ud)
{
    struct usage_list *ul = ud;
    struct pod p;
    memset(&p, 0, sizeof p);
    unsigned before = *saturated(s);
    if (jscan_object(s, pod_member, &p) < 0) return -1;
    if (!p.has_node || p.finished) { *saturated(s) = before; return 0; }   /* not counted: not said */
    struct usage_node *n = usage_find(ul->u, p.node.p, p.node.n);
    if (!n) return jscan_fail(s, "out of memory");
    int64_t r[3];
    for (int i = 0; i < 3; i++) {
        int64_t run = sat_add(p.sum[i], p.sidecars[i], saturated(s));
        r[i] = sat_add(run > p.init_max[i] ? run : p.init_max[i], p.overhead[i], saturated(s));
    }
    n->cpu_milli = sat_add(n->cpu_milli, r[0], saturated(s));
    n->memory = sat_add(n->memory, r[1], saturated(s));
    n->gpu = sat_add(n->gpu, r[2], saturated(s));
    n->pods++;
    if (!n->top || r[0] > n->top_cpu) {
        /* "NAMESPACE/NAME", "NAME", or "" for a pod without a name */
        size_t ns = p.name_len ? p.ns_len : 0, len = ns + (ns ? 1 : 0) + p.name_len;
        char *top = malloc(len + 1);
        if (!top) return jscan_fail(s, "out of memory");
        memcpy(top, p.ns, ns);
        if (ns) top[ns] = '/';
        memcpy(top + ns + (ns ? 1 : 0), p.name, p.name_len);
        free(n->top);
        n->top = top;
        n->top_len = len;
        n->top_cpu = r[0];
    }
    if (*saturated(s) != before) n->saturated = 1;
    ul->l.count++;
    return 0;
}

static int usage_add(lua_State *L)
{
    struct usage *u = luaL_checkudata(L, 1, USAGE_MT);
    size_t len;
    const char *text = luaL_checklstring(L, 2, &len);
    lua_settop(L, 2);
    lua_pushnil(L);                  /* 3: continue */
    struct kscan ks = { .saturated = 0 };
    struct jscan *s = &ks.s;
    jscan_init(s, text, len, MAX_DEPTH);
    struct usage_list ul = { { .L = L, .cont = 3, .item = usage_pod_element }, u };
    ul.l.ud = &ul;
    if (scan_list(L, s, &ul.l, "PodList")) return 2;
    lua_pushinteger(L, ul.l.count);
    lua_pushvalue(L, 3);
    return 2;
}

static int usage_totals(lua_State *L)
{
    struct usage *u = luaL_checkudata(L, 1, USAGE_MT);
    lua_createtable(L, 0, (int)u->count);
    for (size_t i = 0; i < u->cap; i++) {
        const struct usage_node *n = &u->slots[i];
        if (!n->name) continue;
        lua_createtable(L, 0, 4);
        lua_pushinteger(L, n->cpu_milli);
        lua_setfield(L, -2, "cpu_milli");
        lua_pushinteger(L, n->memory);
        lua_setfield(L, -2, "memory");
        lua_pushinteger(L, n->gpu);
        lua_setfield(L, -2, "gpu");
        lua_pushinteger(L, n->pods);
        lua_setfield(L, -2, "pods");
        if (n->top) {
            lua_pushlstring(L, n->top, n->top_len);
            lua_setfield(L, -2, "top");
        }
        if (n->saturated) {
            lua_pushboolean(L, 1);
            lua_setfield(L, -2, "saturated");
        }
        lua_setfield(L, -2, n->name);
    }
    return 1;
}

static int kl_usage(lua_State *L)
{
    struct usage *u = lua_newuserdatauv(L, sizeof *u, 0);
    memset(u, 0, sizeof *u);
    luaL_setmetatable(L, USAGE_MT);
    return 1;
}

int luaopen_fluence_kubelists(lua_State *L)
{
    static const luaL_Reg methods[] = { {"add", usage_add}, {"totals", usage_totals}, {NULL, NULL} };
    luaL_newmetatable(L, USAGE_MT);
    lua_pushcfunction(L, usage_gc);
    lua_setfield(L, -2, "__gc");
    luaL_newlib(L, methods);
    lua_setfield(L, -2, "__index");
    lua_pop(L, 1);
    static const luaL_Reg funcs[] = { {"nodes", kl_nodes}, {"usage", kl_usage}, {NULL, NULL} };
    luaL_newlib(L, funcs);
    return 1;
}
