/* The one hand-written JSON scanner (see jscan.h). */
#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "jscan.h"
#include "utf8.h"

void jscan_init(struct jscan *s, const char *text, size_t len, int max_depth)
{
    memset(s, 0, sizeof *s);
    s->start = s->p = text;
    s->end = text + len;
    s->max_depth = max_depth;
}

void jscan_free(struct jscan *s)
{
    free(s->scratch);
    s->scratch = NULL;
    s->scap = 0;
}

void jscan_line_col(const struct jscan *s, size_t at, int *line, int *col)
{
    int l = 1, c = 1;
    for (const char *q = s->start; q < s->start + at && q < s->end; q++) {
        if (*q == '\n') l++, c = 1;
        else c++;
    }
    *line = l;
    *col = c;
}

int jscan_fail(struct jscan *s, const char *msg)
{
    if (!s->err) {
        s->err = msg;
        s->errat = (size_t)(s->p - s->start);
    }
    return -1;
}

int jscan_expect(struct jscan *s, char c)
{
    if (jscan_peek(s) != (unsigned char)c) {
        static const char *const msgs[] = { "expected '{'", "expected '}'", "expected '['", "expected ']'",
                                            "expected ':'", "expected ','", "expected a string" };
        const char *m = c == '{' ? msgs[0] : c == '}' ? msgs[1] : c == '[' ? msgs[2] : c == ']' ? msgs[3]
                      : c == ':' ? msgs[4] : c == ',' ? msgs[5] : msgs[6];
        return jscan_fail(s, m);
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

static int put(struct jscan *s, size_t at, const char *b, size_t n)
{
    if (at + n + 1 > s->scap) {
        size_t cap = s->scap ? s->scap : 256;
        while (cap < at + n + 1) cap *= 2;
        char *q = realloc(s->scratch, cap);
        if (!q) return jscan_fail(s, "out of memory");
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

/* Reads a string.  Without escapes out points into the text; with them, the
 * decoded bytes are in the scratch buffer (valid until the next decode). */
int jscan_string(struct jscan *s, struct jstr *out)
{
    if (jscan_peek(s) != '"') return jscan_fail(s, "expected a string");
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
        if ((unsigned char)*q < 0x20) { s->p = q; return jscan_fail(s, "control character in a string"); }
        if ((unsigned char)*q >= 0x80) {
            unsigned cp;
            size_t w = utf8_decode((const unsigned char *)q, (size_t)(s->end - q), &cp);
            if (!w) { s->p = q; return jscan_fail(s, "invalid UTF-8 in a string"); }
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
        if ((unsigned char)*q < 0x20) { s->p = q; return jscan_fail(s, "control character in a string"); }
        if ((unsigned char)*q >= 0x80) {
            unsigned cp;
            size_t w = utf8_decode((const unsigned char *)q, (size_t)(s->end - q), &cp);
            if (!w) { s->p = q; return jscan_fail(s, "invalid UTF-8 in a string"); }
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
                if (h < 0) { s->p = q; return jscan_fail(s, "bad \\u escape"); }
                cp = cp * 16 + (unsigned)h;
            }
            q += 4;
            if (cp >= 0xD800 && cp <= 0xDBFF) {          /* a surrogate pair */
                unsigned lo = 0;
                if (q + 6 > s->end || q[0] != '\\' || q[1] != 'u') { s->p = q; return jscan_fail(s, "lone surrogate"); }
                for (int i = 0; i < 4; i++) {
                    int h = hexval((unsigned char)q[2 + i]);
                    if (h < 0) { s->p = q; return jscan_fail(s, "bad \\u escape"); }
                    lo = lo * 16 + (unsigned)h;
                }
                if (lo < 0xDC00 || lo > 0xDFFF) { s->p = q; return jscan_fail(s, "lone surrogate"); }
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                q += 6;
            } else if (cp >= 0xDC00 && cp <= 0xDFFF) { s->p = q; return jscan_fail(s, "lone surrogate"); }
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
        default: s->p = q - 1; return jscan_fail(s, "bad escape in a string");
        }
        if (put(s, n++, &e, 1) < 0) return -1;
    }
    if (q >= s->end) { s->p = q; return jscan_fail(s, "unterminated string"); }
    s->p = q + 1;
    out->p = s->scratch;
    out->n = n;
    return 0;
}

int jscan_number(struct jscan *s, struct jstr *text)
{
    jscan_ws(s);
    const char *q = s->p;
    if (q < s->end && *q == '-') q++;
    if (q < s->end && *q == '0') q++;
    else if (q < s->end && *q >= '1' && *q <= '9') while (q < s->end && isdigit((unsigned char)*q)) q++;
    else return jscan_fail(s, "expected a value");
    if (q < s->end && *q == '.') {
        q++;
        if (q >= s->end || !isdigit((unsigned char)*q)) { s->p = q; return jscan_fail(s, "bad number"); }
        while (q < s->end && isdigit((unsigned char)*q)) q++;
    }
    if (q < s->end && (*q == 'e' || *q == 'E')) {
        q++;
        if (q < s->end && (*q == '+' || *q == '-')) q++;
        if (q >= s->end || !isdigit((unsigned char)*q)) { s->p = q; return jscan_fail(s, "bad number"); }
        while (q < s->end && isdigit((unsigned char)*q)) q++;
    }
    text->p = s->p;
    text->n = (size_t)(q - s->p);
    s->p = q;
    return 0;
}

int jscan_literal(struct jscan *s, const char *word)
{
    size_t n = strlen(word);
    jscan_ws(s);
    if ((size_t)(s->end - s->p) < n || memcmp(s->p, word, n) != 0) return jscan_fail(s, "expected a value");
    s->p += n;
    return 0;
}

int jscan_next_member(struct jscan *s, int *state, struct jstr *key)
{
    if (*state == 0) {
        if (jscan_expect(s, '{') < 0) return -1;
        if (++s->depth > s->max_depth) return jscan_fail(s, "nested too deeply");
        *state = 1;
        if (jscan_peek(s) == '}') { s->p++; s->depth--; return 0; }
    } else {
        int c = jscan_peek(s);
        if (c == '}') { s->p++; s->depth--; return 0; }
        if (c != ',') return jscan_fail(s, "expected ',' or '}'");
        s->p++;
    }
    if (jscan_string(s, key) < 0 || jscan_expect(s, ':') < 0) return -1;
    return 1;
}

int jscan_next_element(struct jscan *s, int *state)
{
    if (*state == 0) {
        if (jscan_expect(s, '[') < 0) return -1;
        if (++s->depth > s->max_depth) return jscan_fail(s, "nested too deeply");
        *state = 1;
        if (jscan_peek(s) == ']') { s->p++; s->depth--; return 0; }
        return 1;
    }
    int c = jscan_peek(s);
    if (c == ']') { s->p++; s->depth--; return 0; }
    if (c != ',') return jscan_fail(s, "expected ',' or ']'");
    s->p++;
    return 1;
}

/* The loops of jscan_next_member and jscan_next_element, with a callback:
 * a list page is mostly objects passed over, so these are the hot ones. */
int jscan_object(struct jscan *s, jscan_member_fn fn, void *ud)
{
    if (jscan_expect(s, '{') < 0) return -1;
    if (++s->depth > s->max_depth) return jscan_fail(s, "nested too deeply");
    if (jscan_peek(s) == '}') { s->p++; s->depth--; return 0; }
    for (;;) {
        struct jstr k;
        if (jscan_string(s, &k) < 0 || jscan_expect(s, ':') < 0) return -1;
        if (fn(s, k, ud) < 0) return -1;
        int c = jscan_peek(s);
        if (c == ',') { s->p++; continue; }
        if (c == '}') { s->p++; break; }
        return jscan_fail(s, "expected ',' or '}'");
    }
    s->depth--;
    return 0;
}

int jscan_array(struct jscan *s, jscan_element_fn fn, void *ud)
{
    if (jscan_expect(s, '[') < 0) return -1;
    if (++s->depth > s->max_depth) return jscan_fail(s, "nested too deeply");
    if (jscan_peek(s) == ']') { s->p++; s->depth--; return 0; }
    for (;;) {
        if (fn(s, ud) < 0) return -1;
        int c = jscan_peek(s);
        if (c == ',') { s->p++; continue; }
        if (c == ']') { s->p++; break; }
        return jscan_fail(s, "expected ',' or ']'");
    }
    s->depth--;
    return 0;
}

static int skip_member(struct jscan *s, struct jstr k, void *ud) { (void)k; (void)ud; return jscan_skip(s); }
static int skip_element(struct jscan *s, void *ud) { (void)ud; return jscan_skip(s); }

int jscan_skip(struct jscan *s)
{
    struct jstr t;
    switch (jscan_peek(s)) {
    case '{': return jscan_object(s, skip_member, NULL);
    case '[': return jscan_array(s, skip_element, NULL);
    case '"': return jscan_string(s, &t);
    case 't': return jscan_literal(s, "true");
    case 'f': return jscan_literal(s, "false");
    case 'n': return jscan_literal(s, "null");
    case -1: return jscan_fail(s, "unexpected end of text");
    default: return jscan_number(s, &t);
    }
}
