/* fluence.kubelists — what fluence needs from a cluster's NodeList and
 * PodList pages, read straight from the JSON text.
 *
 *   kubelists.nodes(text) -> nodes, continue | nil, message
 *     nodes: { {name =, cpu = cores, cpu_milli =, memory = bytes, gpu = n,
 *               unschedulable = bool, control_plane = bool,
 *               saturated = true | nil}, ... }
 *     (allocatable, else capacity, as Fluence reads them: cpu rounded up
 *      to whole cores, memory in bytes, GPUs "nvidia.com/gpu")
 *   kubelists.usage() -> acc
 *     acc:add(text) -> pods, continue | nil, message
 *         adds the requests of every pod bound to a node (spec.nodeName set)
 *         whose phase is not Succeeded or Failed (what `kubectl describe
 *         node` calls allocated): per resource, the larger of the
 *         containers' sum (plus sidecars) and the largest init container,
 *         plus the pod overhead
 *     acc:totals() -> { [node] = {cpu_milli =, memory =, gpu =, pods =,
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
 * offset.  The fuzz target `kubelists` holds it to jansson. */
#include <ctype.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <lauxlib.h>

#define MAX_DEPTH 512
#define GPU_RESOURCE "nvidia.com/gpu"

/* ------------------------------------------------------------ the scanner */

struct js {
    const char *start, *p, *end;
    const char *err;           /* static message, set once */
    size_t errat;
    int depth;
    char *scratch;             /* decoded strings with escapes */
    size_t scap;
    unsigned saturated;        /* quantities read past the int64 range */
};

struct str { const char *p; size_t n; };

static int fail(struct js *s, const char *msg)
{
    if (!s->err) {
        s->err = msg;
        s->errat = (size_t)(s->p - s->start);
    }
    return -1;
}

static void ws(struct js *s)
{
    while (s->p < s->end && (*s->p == ' ' || *s->p == '\n' || *s->p == '\r' || *s->p == '\t')) s->p++;
}

static int peek(struct js *s)
{
    ws(s);
    return s->p < s->end ? (unsigned char)*s->p : -1;
}

static int expect(struct js *s, char c)
{
    if (peek(s) != (unsigned char)c) {
        static const char *const msgs[] = { "expected '{'", "expected '}'", "expected '['", "expected ']'",
                                            "expected ':'", "expected ','", "expected a string" };
        const char *m = c == '{' ? msgs[0] : c == '}' ? msgs[1] : c == '[' ? msgs[2] : c == ']' ? msgs[3]
                      : c == ':' ? msgs[4] : c == ',' ? msgs[5] : msgs[6];
        return fail(s, m);
    }
    s->p++;
    return 0;
}

static int hexval(int c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static int put(struct js *s, size_t at, const char *b, size_t n)
{
    if (at + n + 1 > s->scap) {
        size_t cap = s->scap ? s->scap : 256;
        while (cap < at + n + 1) cap *= 2;
        char *q = realloc(s->scratch, cap);
        if (!q) return fail(s, "out of memory");
        s->scratch = q;
        s->scap = cap;
    }
    memcpy(s->scratch + at, b, n);
    return 0;
}

/* Is any byte of w a quote, a backslash, below 0x20 or above 0x7F (UTF-8
 * to check)?  Eight at a time: most of a list is string bytes to step over. */
#define ONES 0x0101010101010101ull
#define HIGHS 0x8080808080808080ull
static inline int stops(uint64_t w)
{
    uint64_t q = w ^ (ONES * '"'), b = w ^ (ONES * '\\');
    return (((q - ONES) & ~q) | ((b - ONES) & ~b) | ((w - ONES * 0x20) & ~w) | w) & HIGHS ? 1 : 0;
}

/* The length of the valid UTF-8 sequence at q (a byte >= 0x80), 0 when it is
 * not one: strict JSON text is UTF-8 (no overlong forms, no surrogates,
 * nothing past U+10FFFF). */
static size_t utf8_seq(const char *q, const char *end)
{
    const unsigned char *u = (const unsigned char *)q;
    unsigned c = u[0];
    size_t w = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
    if (!w || (size_t)(end - q) < w) return 0;
    unsigned cp = w == 2 ? c & 0x1F : w == 3 ? c & 0x0F : c & 0x07;
    for (size_t k = 1; k < w; k++) {
        if ((u[k] & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (u[k] & 0x3F);
    }
    if ((w == 2 && cp < 0x80) || (w == 3 && cp < 0x800) || (w == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
        (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return w;
}

/* Reads a string.  Without escapes out points into the text; with them, the
 * decoded bytes are in the scratch buffer (valid until the next decode). */
static int read_str(struct js *s, struct str *out)
{
    if (peek(s) != '"') return fail(s, "expected a string");
    const char *b = ++s->p;
    const char *q = b;
    for (;;) {
        uint64_t w;
        if (s->end - q < 8) break;
        memcpy(&w, q, 8);
        if (stops(w)) break;
        q += 8;
    }
    while (q < s->end && *q != '"' && *q != '\\') {
        if ((unsigned char)*q < 0x20) { s->p = q; return fail(s, "control character in a string"); }
        if ((unsigned char)*q >= 0x80) {
            size_t w = utf8_seq(q, s->end);
            if (!w) { s->p = q; return fail(s, "invalid UTF-8 in a string"); }
            q += w;
            continue;
        }
        q++;
    }
    if (q < s->end && *q == '"') {
        out->p = b;
        out->n = (size_t)(q - b);
        s->p = q + 1;
        return 0;
    }
    size_t n = 0;
    if (put(s, 0, b, (size_t)(q - b)) < 0) return -1;
    n = (size_t)(q - b);
    while (q < s->end && *q != '"') {
        if ((unsigned char)*q < 0x20) { s->p = q; return fail(s, "control character in a string"); }
        if ((unsigned char)*q >= 0x80) {
            size_t w = utf8_seq(q, s->end);
            if (!w) { s->p = q; return fail(s, "invalid UTF-8 in a string"); }
            if (put(s, n, q, w) < 0) return -1;
            n += w;
            q += w;
            continue;
        }
        if (*q != '\\') {
            if (put(s, n++, q++, 1) < 0) return -1;
            continue;
        }
        if (q + 1 >= s->end) break;
        char c = q[1], e;
        q += 2;
        switch (c) {
        case '"': e = '"'; break;
        case '\\': e = '\\'; break;
        case '/': e = '/'; break;
        case 'b': e = '\b'; break;
        case 'f': e = '\f'; break;
        case 'n': e = '\n'; break;
        case 'r': e = '\r'; break;
        case 't': e = '\t'; break;
        case 'u': {
            unsigned cp = 0;
            for (int i = 0; i < 4; i++) {
                int h = q + i < s->end ? hexval((unsigned char)q[i]) : -1;
                if (h < 0) { s->p = q; return fail(s, "bad \\u escape"); }
                cp = cp * 16 + (unsigned)h;
            }
            q += 4;
            if (cp >= 0xD800 && cp <= 0xDBFF) {          /* a surrogate pair */
                unsigned lo = 0;
                if (q + 6 > s->end || q[0] != '\\' || q[1] != 'u') { s->p = q; return fail(s, "lone surrogate"); }
                for (int i = 0; i < 4; i++) {
                    int h = hexval((unsigned char)q[2 + i]);
                    if (h < 0) { s->p = q; return fail(s, "bad \\u escape"); }
                    lo = lo * 16 + (unsigned)h;
                }
                if (lo < 0xDC00 || lo > 0xDFFF) { s->p = q; return fail(s, "lone surrogate"); }
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                q += 6;
            } else if (cp >= 0xDC00 && cp <= 0xDFFF) { s->p = q; return fail(s, "lone surrogate"); }
            char u[4];
            size_t k;
            if (cp < 0x80) { u[0] = (char)cp; k = 1; }
            else if (cp < 0x800) { u[0] = (char)(0xC0 | cp >> 6); u[1] = (char)(0x80 | (cp & 63)); k = 2; }
            else if (cp < 0x10000) {
                u[0] = (char)(0xE0 | cp >> 12); u[1] = (char)(0x80 | ((cp >> 6) & 63)); u[2] = (char)(0x80 | (cp & 63)); k = 3;
            } else {
                u[0] = (char)(0xF0 | cp >> 18); u[1] = (char)(0x80 | ((cp >> 12) & 63));
                u[2] = (char)(0x80 | ((cp >> 6) & 63)); u[3] = (char)(0x80 | (cp & 63)); k = 4;
            }
            if (put(s, n, u, k) < 0) return -1;
            n += k;
            continue;
        }
        default: s->p = q - 1; return fail(s, "bad escape in a string");
        }
        if (put(s, n++, &e, 1) < 0) return -1;
    }
    if (q >= s->end) { s->p = q; return fail(s, "unterminated string"); }
    s->p = q + 1;
    out->p = s->scratch;
    out->n = n;
    return 0;
}

static int skip_number(struct js *s)
{
    const char *q = s->p;
    if (q < s->end && *q == '-') q++;
    if (q < s->end && *q == '0') q++;
    else if (q < s->end && *q >= '1' && *q <= '9') while (q < s->end && isdigit((unsigned char)*q)) q++;
    else return fail(s, "expected a value");
    if (q < s->end && *q == '.') {
        q++;
        if (q >= s->end || !isdigit((unsigned char)*q)) { s->p = q; return fail(s, "bad number"); }
        while (q < s->end && isdigit((unsigned char)*q)) q++;
    }
    if (q < s->end && (*q == 'e' || *q == 'E')) {
        q++;
        if (q < s->end && (*q == '+' || *q == '-')) q++;
        if (q >= s->end || !isdigit((unsigned char)*q)) { s->p = q; return fail(s, "bad number"); }
        while (q < s->end && isdigit((unsigned char)*q)) q++;
    }
    s->p = q;
    return 0;
}

static int skip_value(struct js *s);

/* Iterates an object: fn(s, key, ud) must consume the member's value. */
typedef int (*member_fn)(struct js *s, struct str key, void *ud);
typedef int (*element_fn)(struct js *s, void *ud);

static int each_member(struct js *s, member_fn fn, void *ud)
{
    if (expect(s, '{') < 0) return -1;
    if (++s->depth > MAX_DEPTH) return fail(s, "nested too deeply");
    if (peek(s) == '}') { s->p++; s->depth--; return 0; }
    for (;;) {
        struct str k;
        if (read_str(s, &k) < 0 || expect(s, ':') < 0) return -1;
        if (fn(s, k, ud) < 0) return -1;
        int c = peek(s);
        if (c == ',') { s->p++; continue; }
        if (c == '}') { s->p++; break; }
        return fail(s, "expected ',' or '}'");
    }
    s->depth--;
    return 0;
}

static int each_element(struct js *s, element_fn fn, void *ud)
{
    if (expect(s, '[') < 0) return -1;
    if (++s->depth > MAX_DEPTH) return fail(s, "nested too deeply");
    if (peek(s) == ']') { s->p++; s->depth--; return 0; }
    for (;;) {
        if (fn(s, ud) < 0) return -1;
        int c = peek(s);
        if (c == ',') { s->p++; continue; }
        if (c == ']') { s->p++; break; }
        return fail(s, "expected ',' or ']'");
    }
    s->depth--;
    return 0;
}

static int skip_member(struct js *s, struct str k, void *ud) { (void)k; (void)ud; return skip_value(s); }
static int skip_element(struct js *s, void *ud) { (void)ud; return skip_value(s); }

static int literal(struct js *s, const char *word)
{
    size_t n = strlen(word);
    if ((size_t)(s->end - s->p) < n || memcmp(s->p, word, n) != 0) return fail(s, "expected a value");
    s->p += n;
    return 0;
}

static int skip_value(struct js *s)
{
    switch (peek(s)) {
    case '{': return each_member(s, skip_member, NULL);
    case '[': return each_element(s, skip_element, NULL);
    case '"': { struct str t; return read_str(s, &t); }
    case 't': return literal(s, "true");
    case 'f': return literal(s, "false");
    case 'n': return literal(s, "null");
    case -1: return fail(s, "unexpected end of text");
    default: return skip_number(s);
    }
}

static int key_is(struct str k, const char *w)
{
    size_t n = strlen(w);
    return k.n == n && memcmp(k.p, w, n) == 0;
}

/* A boolean (or null, as false). */
static int read_bool(struct js *s, int *out)
{
    int c = peek(s);
    if (c == 't') { *out = 1; return literal(s, "true"); }
    if (c == 'f') { *out = 0; return literal(s, "false"); }
    if (c == 'n') { *out = 0; return literal(s, "null"); }
    return fail(s, "expected true or false");
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
static int quantity(struct js *s, int scale_exp, int64_t *out)
{
    char buf[64];
    size_t n;
    int c = peek(s);
    if (c == '"') {
        struct str t;
        if (read_str(s, &t) < 0) return -1;
        if (t.n >= sizeof buf) return fail(s, "bad quantity");
        memcpy(buf, t.p, t.n);
        n = t.n;
    } else if (c == 'n') {
        *out = 0;
        return literal(s, "null");
    } else {
        const char *b = s->p;
        if (skip_number(s) < 0) return -1;
        n = (size_t)(s->p - b);
        if (n >= sizeof buf) return fail(s, "bad quantity");
        memcpy(buf, b, n);
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
    if (!digits) return fail(s, "bad quantity");
    int e10 = -frac, e2 = 0;
    /* "E" alone is the exa suffix; followed by [sign] digits, an exponent */
    const char *ed = q + 1 + (q[0] && (q[1] == '+' || q[1] == '-'));
    if ((*q == 'e' || *q == 'E') && isdigit((unsigned char)*ed)) {
        char *end;
        long e = strtol(q + 1, &end, 10);
        if (*end) return fail(s, "bad quantity");
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
        if (i == sizeof sfx / sizeof *sfx) return fail(s, "bad quantity suffix");
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
        if (!neg && (sat || u > (uint64_t)INT64_MAX)) { s->saturated++; *out = INT64_MAX; return 0; }
        if (neg && (sat || u > (uint64_t)INT64_MAX + 1)) { s->saturated++; *out = INT64_MIN; return 0; }
        *out = neg ? (u == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)u) : (int64_t)u;
        return 0;
    }
    long double v = m * powl(10.0L, (long double)(e10 + scale_exp)) * ldexpl(1.0L, e2);
    if (neg) v = -v;
    /* 2^63 exactly is past INT64_MAX; anything from there saturates */
    if (v >= 9223372036854775808.0L) { s->saturated++; *out = INT64_MAX; return 0; }
    if (v <= -9223372036854775808.0L) { s->saturated++; *out = INT64_MIN; return 0; }
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
};

static int once(struct js *s, unsigned *seen, unsigned bit)
{
    if (*seen & bit) return fail(s, "a key given twice in one object");
    *seen |= bit;
    return 0;
}

/* ------------------------------------------------------------- node lists */

struct res { int64_t cpu, memory, gpu; int has_cpu, has_memory, has_gpu; unsigned seen; };

/* A node's resources; cpu in millicores. */
static int resources_member(struct js *s, struct str k, void *ud)
{
    struct res *r = ud;
    if (key_is(k, "cpu")) { r->has_cpu = 1; return once(s, &r->seen, K_CPU) < 0 ? -1 : quantity(s, 3, &r->cpu); }
    if (key_is(k, "memory")) {
        r->has_memory = 1;
        return once(s, &r->seen, K_MEMORY) < 0 ? -1 : quantity(s, 0, &r->memory);
    }
    if (key_is(k, GPU_RESOURCE)) { r->has_gpu = 1; return once(s, &r->seen, K_GPU) < 0 ? -1 : quantity(s, 0, &r->gpu); }
    return skip_value(s);
}

struct node {
    lua_State *L;
    struct res alloc, cap;
    int unschedulable, control_plane, has_name;
    unsigned seen, meta_seen, spec_seen, status_seen;
};

struct taint { struct node *n; unsigned seen; };

static int taint_member(struct js *s, struct str k, void *ud)
{
    struct taint *t = ud;
    struct node *n = t->n;
    if (!key_is(k, "key")) return skip_value(s);
    if (once(s, &t->seen, K_KEY) < 0) return -1;
    if (peek(s) != '"') return skip_value(s);
    struct str v;
    if (read_str(s, &v) < 0) return -1;
    if (key_is(v, "node-role.kubernetes.io/control-plane") || key_is(v, "node-role.kubernetes.io/master"))
        n->control_plane = 1;
    return 0;
}

static int taint_element(struct js *s, void *ud)
{
    if (peek(s) != '{') return skip_value(s);
    struct taint t = { ud, 0 };
    return each_member(s, taint_member, &t);
}

static int node_spec_member(struct js *s, struct str k, void *ud)
{
    struct node *n = ud;
    if (key_is(k, "unschedulable"))
        return once(s, &n->spec_seen, K_UNSCHEDULABLE) < 0 ? -1 : read_bool(s, &n->unschedulable);
    if (key_is(k, "taints") && peek(s) == '[')
        return once(s, &n->spec_seen, K_TAINTS) < 0 ? -1 : each_element(s, taint_element, n);
    return skip_value(s);
}

static int node_status_member(struct js *s, struct str k, void *ud)
{
    struct node *n = ud;
    if (key_is(k, "allocatable") && peek(s) == '{')
        return once(s, &n->status_seen, K_ALLOCATABLE) < 0 ? -1 : each_member(s, resources_member, &n->alloc);
    if (key_is(k, "capacity") && peek(s) == '{')
        return once(s, &n->status_seen, K_CAPACITY) < 0 ? -1 : each_member(s, resources_member, &n->cap);
    return skip_value(s);
}

static int node_meta_member(struct js *s, struct str k, void *ud)
{
    struct node *n = ud;
    if (!key_is(k, "name")) return skip_value(s);
    if (once(s, &n->meta_seen, K_NAME) < 0) return -1;
    struct str v;
    if (read_str(s, &v) < 0) return -1;
    lua_pushlstring(n->L, v.p, v.n);
    lua_setfield(n->L, -2, "name");
    n->has_name = 1;
    return 0;
}

static int node_member(struct js *s, struct str k, void *ud)
{
    struct node *n = ud;
    if (key_is(k, "metadata") && peek(s) == '{')
        return once(s, &n->seen, K_METADATA) < 0 ? -1 : each_member(s, node_meta_member, n);
    if (key_is(k, "spec") && peek(s) == '{')
        return once(s, &n->seen, K_SPEC) < 0 ? -1 : each_member(s, node_spec_member, n);
    if (key_is(k, "status") && peek(s) == '{')
        return once(s, &n->seen, K_STATUS) < 0 ? -1 : each_member(s, node_status_member, n);
    return skip_value(s);
}

/* One list page: items go to `item`; the continue token is stored at stack
 * index `cont`. */
struct list { lua_State *L; lua_Integer count; int has_items, cont; element_fn item; void *ud;
              unsigned seen, meta_seen; };

static int node_element(struct js *s, void *ud)
{
    struct list *l = ud;
    lua_State *L = l->L;
    struct node n;
    memset(&n, 0, sizeof n);
    n.L = L;
    lua_createtable(L, 0, 6);
    unsigned before = s->saturated;
    if (each_member(s, node_member, &n) < 0) return -1;
    if (!n.has_name) return fail(s, "a node without metadata.name");
    int64_t cpu = n.alloc.has_cpu ? n.alloc.cpu : n.cap.cpu;
    int64_t mem = n.alloc.has_memory ? n.alloc.memory : n.cap.memory;
    int64_t gpu = n.alloc.has_gpu ? n.alloc.gpu : n.cap.gpu;
    if (cpu < 0) cpu = 0;
    if (s->saturated != before) {
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
static int list_meta_member(struct js *s, struct str k, void *ud)
{
    struct list *l = ud;
    if (!key_is(k, "continue")) return skip_value(s);
    if (once(s, &l->meta_seen, K_CONTINUE) < 0) return -1;
    struct str v;
    if (read_str(s, &v) < 0) return -1;
    if (v.n) {
        lua_pushlstring(l->L, v.p, v.n);
        lua_replace(l->L, l->cont);
    }
    return 0;
}

static int list_member(struct js *s, struct str k, void *ud)
{
    struct list *l = ud;
    if (key_is(k, "items")) {
        if (once(s, &l->seen, K_ITEMS) < 0) return -1;
        if (peek(s) == 'n') return literal(s, "null");
        l->has_items = 1;
        return each_element(s, l->item, l->ud);
    }
    if (key_is(k, "metadata") && peek(s) == '{')
        return once(s, &l->seen, K_METADATA) < 0 ? -1 : each_member(s, list_meta_member, l);
    return skip_value(s);
}

/* Scans one list page; on error pushes nil, message and returns 2. */
static int scan_list(lua_State *L, struct js *s, struct list *l, const char *what)
{
    int rc = each_member(s, list_member, l);
    if (rc == 0 && peek(s) != -1) rc = fail(s, "text after the list");
    if (rc == 0 && !l->has_items) rc = fail(s, "not a list (no items)");
    free(s->scratch);
    s->scratch = NULL;
    if (rc < 0) {
        lua_pushnil(L);
        lua_pushfstring(L, "the %s is not valid: %s at byte %d", what, s->err, (int)s->errat);
        return 2;
    }
    return 0;
}

static void js_init(struct js *s, const char *text, size_t len)
{
    memset(s, 0, sizeof *s);
    s->start = s->p = text;
    s->end = text + len;
}

static int kl_nodes(lua_State *L)
{
    size_t len;
    const char *text = luaL_checklstring(L, 1, &len);
    lua_settop(L, 1);
    lua_pushnil(L);                  /* 2: continue */
    lua_newtable(L);                 /* 3: nodes */
    struct js s;
    js_init(&s, text, len);
    struct list l = { .L = L, .cont = 2, .item = node_element };
    l.ud = &l;
    if (scan_list(L, &s, &l, "NodeList")) return 2;
    lua_insert(L, 2);                /* nodes, continue */
    return 2;
}

/* ---------------------------------------------------- pod usage per node */

#define USAGE_MT "fluence.kubelists.usage"

struct usage_node { char *name; int64_t cpu_milli, memory, gpu, pods; int saturated; };

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
    for (size_t i = 0; i < u->cap; i++) free(u->slots[i].name);
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

static int container_resources_member(struct js *s, struct str k, void *ud)
{
    struct container *c = ud;
    if (key_is(k, "requests") && peek(s) == '{')
        return once(s, &c->res_seen, K_REQUESTS) < 0 ? -1 : each_member(s, requests_member, &c->req);
    return skip_value(s);
}

static int container_member(struct js *s, struct str k, void *ud)
{
    struct container *c = ud;
    if (key_is(k, "resources") && peek(s) == '{')
        return once(s, &c->seen, K_RESOURCES) < 0 ? -1 : each_member(s, container_resources_member, c);
    if (key_is(k, "restartPolicy") && peek(s) == '"') {
        if (once(s, &c->seen, K_RESTARTPOLICY) < 0) return -1;
        struct str v;
        if (read_str(s, &v) < 0) return -1;
        c->sidecar = key_is(v, "Always");
        return 0;
    }
    return skip_value(s);
}

struct pod {
    struct usage *u;
    struct str node;                 /* copied into node_buf: the scratch moves */
    char node_buf[256];
    int has_node, finished;
    int64_t sum[3], sidecars[3], init_max[3], overhead[3];
    unsigned seen, spec_seen, status_seen;
};

/* A request as the sums take it: never negative (the API server refuses a
 * negative request; one here would make a node look freer than it is). */
static int64_t request_of(int64_t v) { return v > 0 ? v : 0; }

/* a += r's requests, saturating */
static void add3(struct js *s, int64_t *a, const struct res *r)
{
    a[0] = sat_add(a[0], request_of(r->cpu), &s->saturated);
    a[1] = sat_add(a[1], request_of(r->memory), &s->saturated);
    a[2] = sat_add(a[2], request_of(r->gpu), &s->saturated);
}

static int container_element(struct js *s, void *ud)
{
    struct pod *p = ud;
    struct container c;
    memset(&c, 0, sizeof c);
    if (each_member(s, container_member, &c) < 0) return -1;
    add3(s, p->sum, &c.req);
    return 0;
}

static int init_container_element(struct js *s, void *ud)
{
    struct pod *p = ud;
    struct container c;
    memset(&c, 0, sizeof c);
    if (each_member(s, container_member, &c) < 0) return -1;
    int64_t v[3] = { request_of(c.req.cpu), request_of(c.req.memory), request_of(c.req.gpu) };
    for (int i = 0; i < 3; i++) {
        if (c.sidecar) {
            p->sidecars[i] = sat_add(p->sidecars[i], v[i], &s->saturated);
            if (p->sidecars[i] > p->init_max[i]) p->init_max[i] = p->sidecars[i];
        } else {
            int64_t with = sat_add(p->sidecars[i], v[i], &s->saturated);
            if (with > p->init_max[i]) p->init_max[i] = with;
        }
    }
    return 0;
}

static int pod_spec_member(struct js *s, struct str k, void *ud)
{
    struct pod *p = ud;
    if (key_is(k, "nodeName") && peek(s) == '"') {
        if (once(s, &p->spec_seen, K_NODENAME) < 0) return -1;
        struct str v;
        if (read_str(s, &v) < 0) return -1;
        if (v.n >= sizeof p->node_buf) return fail(s, "a node name that long");
        memcpy(p->node_buf, v.p, v.n);
        p->node.p = p->node_buf;
        p->node.n = v.n;
        p->has_node = v.n > 0;
        return 0;
    }
    if (key_is(k, "containers") && peek(s) == '[')
        return once(s, &p->spec_seen, K_CONTAINERS) < 0 ? -1 : each_element(s, container_element, p);
    if (key_is(k, "initContainers") && peek(s) == '[')
        return once(s, &p->spec_seen, K_INITCONTAINERS) < 0 ? -1 : each_element(s, init_container_element, p);
    if (key_is(k, "overhead") && peek(s) == '{') {
        if (once(s, &p->spec_seen, K_OVERHEAD) < 0) return -1;
        struct res r;
        memset(&r, 0, sizeof r);
        if (each_member(s, requests_member, &r) < 0) return -1;
        add3(s, p->overhead, &r);
        return 0;
    }
    return skip_value(s);
}

static int pod_status_member(struct js *s, struct str k, void *ud)
{
    struct pod *p = ud;
    if (!key_is(k, "phase") || peek(s) != '"') return skip_value(s);
    if (once(s, &p->status_seen, K_PHASE) < 0) return -1;
    struct str v;
    if (read_str(s, &v) < 0) return -1;
    p->finished = key_is(v, "Succeeded") || key_is(v, "Failed");
    return 0;
}

static int pod_member(struct js *s, struct str k, void *ud)
{
    struct pod *p = ud;
    if (key_is(k, "spec") && peek(s) == '{')
        return once(s, &p->seen, K_SPEC) < 0 ? -1 : each_member(s, pod_spec_member, p);
    if (key_is(k, "status") && peek(s) == '{')
        return once(s, &p->seen, K_STATUS) < 0 ? -1 : each_member(s, pod_status_member, p);
    return skip_value(s);
}

struct usage_list { struct list l; struct usage *u; };

static int usage_pod_element(struct js *s, void *ud)
{
    struct usage_list *ul = ud;
    struct pod p;
    memset(&p, 0, sizeof p);
    unsigned before = s->saturated;
    if (each_member(s, pod_member, &p) < 0) return -1;
    if (!p.has_node || p.finished) { s->saturated = before; return 0; }   /* not counted: not said */
    struct usage_node *n = usage_find(ul->u, p.node.p, p.node.n);
    if (!n) return fail(s, "out of memory");
    int64_t r[3];
    for (int i = 0; i < 3; i++) {
        int64_t run = sat_add(p.sum[i], p.sidecars[i], &s->saturated);
        r[i] = sat_add(run > p.init_max[i] ? run : p.init_max[i], p.overhead[i], &s->saturated);
    }
    n->cpu_milli = sat_add(n->cpu_milli, r[0], &s->saturated);
    n->memory = sat_add(n->memory, r[1], &s->saturated);
    n->gpu = sat_add(n->gpu, r[2], &s->saturated);
    n->pods++;
    if (s->saturated != before) n->saturated = 1;
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
    struct js s;
    js_init(&s, text, len);
    struct usage_list ul = { { .L = L, .cont = 3, .item = usage_pod_element }, u };
    ul.l.ud = &ul;
    if (scan_list(L, &s, &ul.l, "PodList")) return 2;
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
