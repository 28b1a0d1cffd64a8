/* YAML scalars as kubectl reads them (yaml_kubectl.h).
 *
 * The resolver follows go-yaml v2's resolve.go step by step (the hint of a
 * scalar's first character, the table of words, strconv.ParseInt/ParseUint
 * with base 0 after removing every '_', the float regexp, the tag checks of
 * its deferred function); the number formats follow Go's strconv and
 * encoding/json.  Where the C library and Go differ (which digits are
 * "shortest", underscores in floats, octal with a leading 0) the Go rule is
 * written out here. */
#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "escape.h"
#include "yaml_kubectl.h"

#define TAG_PREFIX "tag:yaml.org,2002:"

int yk_tag(const char *tag)
{
    static const struct { const char *name; int tag; } tags[] = {
        {"str", YK_TAG_STR}, {"int", YK_TAG_INT}, {"float", YK_TAG_FLOAT}, {"bool", YK_TAG_BOOL},
        {"null", YK_TAG_NULL}, {"timestamp", YK_TAG_TIMESTAMP}, {"binary", YK_TAG_BINARY},
        {"merge", YK_TAG_MERGE},
    };
    if (!tag) return YK_TAG_NONE;
    size_t n = sizeof TAG_PREFIX - 1;
    if (strncmp(tag, TAG_PREFIX, n) != 0) return YK_TAG_OTHER;
    for (size_t i = 0; i < sizeof tags / sizeof tags[0]; i++)
        if (strcmp(tag + n, tags[i].name) == 0) return tags[i].tag;
    return YK_TAG_OTHER;
}

static const char *short_tag(int tag)
{
    switch (tag) {
    case YK_TAG_STR: return "!!str";
    case YK_TAG_INT: return "!!int";
    case YK_TAG_FLOAT: return "!!float";
    case YK_TAG_BOOL: return "!!bool";
    case YK_TAG_NULL: return "!!null";
    case YK_TAG_TIMESTAMP: return "!!timestamp";
    case YK_TAG_BINARY: return "!!binary";
    case YK_TAG_MERGE: return "!!merge";
    default: return "!?";
    }
}

/* ---- strconv ---- */

static int digit_value(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    c = (char)(c | 0x20);
    if (c >= 'a' && c <= 'z') return c - 'a' + 10;
    return 99;
}

/* strconv.ParseUint(s, 0, 64): 0 and *out, or -1 (syntax or range) */
static int parse_uint(const char *s, unsigned long long *out)
{
    if (!*s) return -1;
    unsigned base = 10;
    if (s[0] == '0') {
        size_t n = strlen(s);
        char c = (char)(s[1] | 0x20);
        if (n >= 3 && c == 'b') { base = 2; s += 2; }
        else if (n >= 3 && c == 'o') { base = 8; s += 2; }
        else if (n >= 3 && c == 'x') { base = 16; s += 2; }
        else { base = 8; s += 1; }
    }
    unsigned long long v = 0;
    for (; *s; s++) {
        unsigned d = (unsigned)digit_value(*s);
        if (d >= base) return -1;
        if (v > (ULLONG_MAX - d) / base) return -1;
        v = v * base + d;
    }
    *out = v;
    return 0;
}

/* strconv.ParseInt(s, 0, 64) */
static int parse_int(const char *s, long long *out)
{
    int neg = 0;
    if (*s == '+') s++;
    else if (*s == '-') { neg = 1; s++; }
    unsigned long long u;
    if (parse_uint(s, &u) != 0) return -1;
    if (!neg && u > (unsigned long long)LLONG_MAX) return -1;
    if (neg && u > (unsigned long long)LLONG_MAX + 1) return -1;
    *out = neg ? (u == (unsigned long long)LLONG_MAX + 1 ? LLONG_MIN : -(long long)u) : (long long)u;
    return 0;
}

/* go-yaml's yamlStyleFloat: ^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$ */
static int yaml_style_float(const char *s)
{
    if (*s == '-' || *s == '+') s++;
    if (*s == '.') {
        s++;
        if (!isdigit((unsigned char)*s)) return 0;
        while (isdigit((unsigned char)*s)) s++;
    } else {
        if (!isdigit((unsigned char)*s)) return 0;
        while (isdigit((unsigned char)*s)) s++;
        if (*s == '.') { s++; while (isdigit((unsigned char)*s)) s++; }
    }
    if (*s == 'e' || *s == 'E') {
        s++;
        if (*s == '-' || *s == '+') s++;
        if (!isdigit((unsigned char)*s)) return 0;
        while (isdigit((unsigned char)*s)) s++;
    }
    return *s == 0;
}

/* strconv's underscoreOK: an '_' only between digits (the forms here have
 * no sign or base prefix: they start with '.') */
static int underscore_ok(const char *s)
{
    char saw = '^';
    for (; *s; s++) {
        if (isdigit((unsigned char)*s)) { saw = '0'; continue; }
        if (*s == '_') {
            if (saw != '0') return 0;
            saw = '_';
            continue;
        }
        if (saw == '_') return 0;
        saw = '!';
    }
    return saw != '_';
}

/* strconv.ParseFloat(s, 64) for a decimal s starting with '.' (all that
 * reaches it un-regexed): 0 and *out, or -1 (syntax, or beyond the range) */
static int parse_dot_float(const char *s, double *out)
{
    char buf[128];
    size_t n = 0, digits = 0;
    const char *p = s;
    int dot = 0;
    for (; *p && (isdigit((unsigned char)*p) || *p == '_' || (*p == '.' && !dot)); p++) {
        if (*p == '.') dot = 1;
        if (isdigit((unsigned char)*p)) digits++;
    }
    if (!digits) return -1;
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-') p++;
        if (!isdigit((unsigned char)*p)) return -1;
        while (isdigit((unsigned char)*p) || *p == '_') p++;
    }
    if (*p || !underscore_ok(s)) return -1;
    for (p = s; *p && n + 1 < sizeof buf; p++) if (*p != '_') buf[n++] = *p;
    if (*p) return -1;                            /* too long to be a float anyone writes */
    buf[n] = 0;
    double d = strtod(buf, NULL);
    if (isinf(d)) return -1;
    *out = d;
    return 0;
}

/* ---- timestamps (only an explicit !!timestamp tag needs the answer) ---- */

static int num(const char **s, int min_digits, int max_digits, int *out)
{
    int n = 0, v = 0;
    while (n < max_digits && isdigit((unsigned char)(*s)[n])) v = v * 10 + ((*s)[n++] - '0');
    if (n < min_digits) return 0;
    *s += n;
    *out = v;
    return 1;
}

/* go-yaml's parseTimestamp: time.Parse with the layouts
 * "2006-1-2T15:4:5.999999999Z07:00" (also 't'), "2006-1-2 15:4:5.999999999"
 * and "2006-1-2" */
static int is_timestamp(const char *s)
{
    static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int y, m, d, hh, mm, ss;
    if (!num(&s, 4, 4, &y) || *s++ != '-' || !num(&s, 1, 2, &m) || *s++ != '-' || !num(&s, 1, 2, &d)) return 0;
    if (m < 1 || m > 12 || d < 1 || d > mdays[m - 1]) return 0;
    if (m == 2 && d == 29 && !(y % 4 == 0 && (y % 100 != 0 || y % 400 == 0))) return 0;
    if (!*s) return 1;
    char sep = *s++;
    if (sep != 'T' && sep != 't' && sep != ' ') return 0;
    if (!num(&s, 1, 2, &hh) || *s++ != ':' || !num(&s, 1, 2, &mm) || *s++ != ':' || !num(&s, 1, 2, &ss)) return 0;
    if (hh > 23 || mm > 59 || ss > 59) return 0;
    if ((s[0] == '.' || s[0] == ',') && isdigit((unsigned char)s[1])) {
        s++;
        while (isdigit((unsigned char)*s)) s++;
    }
    if (sep == ' ') return *s == 0;
    if (*s == 'Z') return s[1] == 0;
    if ((*s == '+' || *s == '-') && strlen(s) == 6 && isdigit((unsigned char)s[1]) && isdigit((unsigned char)s[2]) &&
        s[3] == ':' && isdigit((unsigned char)s[4]) && isdigit((unsigned char)s[5]))
        return 1;
    return 0;
}

/* ---- resolve ---- */

static void set_error(struct yk_value *v, int rtag, const char *s, size_t len, int tag)
{
    char shown[64];
    fluence_escape_into(shown, sizeof shown, s, len, 0);    /* one line, clipped */
    v->kind = YK_ERROR;
    snprintf(v->err, sizeof v->err, "cannot decode %s `%s` as a %s", short_tag(rtag), shown, short_tag(tag));
}

/* the words go-yaml's resolve table knows */
static int word(const char *s, struct yk_value *v, int *rtag)
{
    static const struct { const char *w; int kind, b, sign; } words[] = {
        {"y", YK_BOOL, 1, 0}, {"Y", YK_BOOL, 1, 0}, {"yes", YK_BOOL, 1, 0}, {"Yes", YK_BOOL, 1, 0},
        {"YES", YK_BOOL, 1, 0}, {"true", YK_BOOL, 1, 0}, {"True", YK_BOOL, 1, 0}, {"TRUE", YK_BOOL, 1, 0},
        {"on", YK_BOOL, 1, 0}, {"On", YK_BOOL, 1, 0}, {"ON", YK_BOOL, 1, 0},
        {"n", YK_BOOL, 0, 0}, {"N", YK_BOOL, 0, 0}, {"no", YK_BOOL, 0, 0}, {"No", YK_BOOL, 0, 0},
        {"NO", YK_BOOL, 0, 0}, {"false", YK_BOOL, 0, 0}, {"False", YK_BOOL, 0, 0}, {"FALSE", YK_BOOL, 0, 0},
        {"off", YK_BOOL, 0, 0}, {"Off", YK_BOOL, 0, 0}, {"OFF", YK_BOOL, 0, 0},
        {"", YK_NULL, 0, 0}, {"~", YK_NULL, 0, 0}, {"null", YK_NULL, 0, 0}, {"Null", YK_NULL, 0, 0},
        {"NULL", YK_NULL, 0, 0},
        {".nan", YK_FLOAT, 0, 0}, {".NaN", YK_FLOAT, 0, 0}, {".NAN", YK_FLOAT, 0, 0},
        {".inf", YK_FLOAT, 0, 1}, {".Inf", YK_FLOAT, 0, 1}, {".INF", YK_FLOAT, 0, 1},
        {"+.inf", YK_FLOAT, 0, 1}, {"+.Inf", YK_FLOAT, 0, 1}, {"+.INF", YK_FLOAT, 0, 1},
        {"-.inf", YK_FLOAT, 0, -1}, {"-.Inf", YK_FLOAT, 0, -1}, {"-.INF", YK_FLOAT, 0, -1},
    };
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
        if (strcmp(s, words[i].w) != 0) continue;
        v->kind = words[i].kind;
        v->b = words[i].b;
        if (v->kind == YK_FLOAT) v->d = words[i].sign ? words[i].sign * HUGE_VAL : NAN;
        *rtag = v->kind == YK_BOOL ? YK_TAG_BOOL : v->kind == YK_NULL ? YK_TAG_NULL : YK_TAG_FLOAT;
        return 1;
    }
    return 0;
}

/* The numbers of a scalar starting with a sign or a digit: go-yaml's 'D'
 * and 'S' hints.  Returns its tag (YK_TAG_STR: not a number). */
static int number(const char *s, size_t len, struct yk_value *v)
{
    char stack[128], *plain = len < sizeof stack ? stack : malloc(len + 1);
    if (!plain) return YK_TAG_STR;
    size_t n = 0;
    for (size_t i = 0; i < len; i++) if (s[i] != '_') plain[n++] = s[i];
    plain[n] = 0;
    int rtag = YK_TAG_STR;
    if (parse_int(plain, &v->i) == 0) { v->kind = YK_INT; rtag = YK_TAG_INT; }
    else if (parse_uint(plain, &v->u) == 0) { v->kind = YK_UINT; rtag = YK_TAG_INT; }
    else if (yaml_style_float(plain)) {
        double d = strtod(plain, NULL);
        if (!isinf(d)) { v->kind = YK_FLOAT; v->d = d; rtag = YK_TAG_FLOAT; }
    }
    if (plain != stack) free(plain);
    return rtag;
}

void yk_resolve(const char *s, size_t len, int plain, int tag, struct yk_value *v)
{
    v->kind = YK_STR;
    v->err[0] = 0;
    if (tag == YK_TAG_NONE && !plain) return;          /* quoted or a block: a string */
    if (tag == YK_TAG_BINARY) { v->kind = YK_BINARY; return; }
    if (tag == YK_TAG_OTHER || tag == YK_TAG_MERGE || tag == YK_TAG_STR) return;
    /* the first character hints at what the scalar may be */
    unsigned char c = len ? (unsigned char)s[0] : 'N';
    int rtag = YK_TAG_STR;
    if (strlen(s) != len) {
        /* a NUL inside: no word or number has one */
    } else if (c == '+' || c == '-' || isdigit(c)) {
        if (!word(s, v, &rtag)) {
            if (tag == YK_TAG_TIMESTAMP && is_timestamp(s)) return;       /* kept as written */
            rtag = number(s, len, v);
        }
    } else if (strchr("yYnNtTfFoO~", c) || len == 0) {
        word(s, v, &rtag);
    } else if (c == '.') {
        if (!word(s, v, &rtag) && parse_dot_float(s, &v->d) == 0) { v->kind = YK_FLOAT; rtag = YK_TAG_FLOAT; }
    }
    if (rtag == YK_TAG_STR) v->kind = YK_STR;
    /* an explicit tag must agree with what the scalar is (!!float takes an
     * integer that fits int64) */
    if (tag == YK_TAG_NONE || tag == rtag) return;
    if (tag == YK_TAG_FLOAT && rtag == YK_TAG_INT && v->kind == YK_INT) {
        v->kind = YK_FLOAT;
        v->d = (double)v->i;
        return;
    }
    set_error(v, rtag, s, len, tag);
}

/* ---- numbers as Go prints them ---- */

/* Does digits dig[0..n) times 10^(e - n + 1) read back as d? */
static int reads_back(const char *dig, int n, int e, double d, int f32)
{
    char buf[64];
    snprintf(buf, sizeof buf, "%c.%.*se%d", dig[0], n - 1, dig + 1, e);
    if (n == 1) snprintf(buf, sizeof buf, "%ce%d", dig[0], e);
    return f32 ? strtof(buf, NULL) == (float)d : strtod(buf, NULL) == d;
}

/* The shortest decimal that reads back as d (> 0, finite), as Go's
 * strconv finds it: of the shortest length, the nearest, or else the
 * neighbour on the other side (an asymmetric interval at a power of two).
 * Digits into dig (no trailing zeros), *dp: the decimal point's position
 * (d = 0.dig * 10^dp).  Returns the number of digits. */
static int shortest(double d, int f32, char dig[24], int *dp)
{
    int maxn = f32 ? 9 : 17;
    for (int n = 1; n <= maxn; n++) {
        char buf[64];
        snprintf(buf, sizeof buf, "%.*e", n - 1, d);
        char m[24];
        int k = 0;
        const char *p = buf;
        for (; *p && *p != 'e'; p++) if (isdigit((unsigned char)*p)) m[k++] = *p;
        int e = atoi(p + 1);
        if (!reads_back(m, k, e, d, f32)) {
            /* the neighbour one unit away in the last digit */
            double near = strtod(buf, NULL);
            int i = k - 1;
            if (near < d) {
                while (i >= 0 && m[i] == '9') m[i--] = '0';
                if (i < 0) { memmove(m + 1, m, (size_t)k - 1); m[0] = '1'; e++; }
                else m[i]++;
            } else {
                while (i >= 0 && m[i] == '0') m[i--] = '9';
                if (i < 0) continue;
                m[i]--;
                if (m[0] == '0') { memmove(m, m + 1, (size_t)k - 1); m[k - 1] = '9'; e--; }
            }
            if (!reads_back(m, k, e, d, f32)) continue;
        }
        while (k > 1 && m[k - 1] == '0') k--;
        memcpy(dig, m, (size_t)k);
        *dp = e + 1;
        return k;
    }
    /* unreachable: 17 (9) digits always read back */
    dig[0] = '0';
    *dp = 1;
    return 1;
}

/* Go's %f of the shortest digits */
static size_t fmt_f(char *out, int neg, const char *dig, int nd, int dp)
{
    size_t n = 0;
    if (neg) out[n++] = '-';
    if (dp > 0) {
        for (int i = 0; i < dp; i++) out[n++] = i < nd ? dig[i] : '0';
    } else out[n++] = '0';
    if (nd > dp) {
        out[n++] = '.';
        for (int i = dp; i < nd; i++) out[n++] = i < 0 ? '0' : dig[i];
    }
    out[n] = 0;
    return n;
}

/* Go's %e of the shortest digits: d.ddde±XX (at least two exponent digits) */
static size_t fmt_e(char *out, int neg, const char *dig, int nd, int dp)
{
    size_t n = 0;
    if (neg) out[n++] = '-';
    out[n++] = dig[0];
    if (nd > 1) {
        out[n++] = '.';
        for (int i = 1; i < nd; i++) out[n++] = dig[i];
    }
    int e = dp - 1;
    n += (size_t)sprintf(out + n, "e%c%02d", e < 0 ? '-' : '+', e < 0 ? -e : e);
    return n;
}

int yk_json_number(const struct yk_value *v, char buf[40])
{
    if (v->kind == YK_INT) { snprintf(buf, 40, "%lld", v->i); return 1; }
    double d = v->kind == YK_UINT ? (double)v->u : v->d;
    if (!isfinite(d)) return 0;
    /* a float64 as encoding/json writes it; -0 comes back as the integer 0
     * when kubectl decodes the JSON, so 0 is what it sends */
    if (d == 0) { strcpy(buf, "0"); return 1; }
    char dig[24];
    int dp, nd = shortest(fabs(d), 0, dig, &dp);
    double a = fabs(d);
    if (a < 1e-6 || a >= 1e21) {
        size_t n = fmt_e(buf, d < 0, dig, nd, dp);
        /* encoding/json's clean-up: e-07 -> e-7 */
        if (n >= 4 && buf[n - 4] == 'e' && buf[n - 3] == '-' && buf[n - 2] == '0') {
            buf[n - 2] = buf[n - 1];
            buf[n - 1] = 0;
        }
    } else fmt_f(buf, d < 0, dig, nd, dp);
    return 1;
}

int yk_key(const struct yk_value *v, char buf[80])
{
    switch (v->kind) {
    case YK_BOOL: strcpy(buf, v->b ? "true" : "false"); return 1;
    case YK_INT: snprintf(buf, 80, "%lld", v->i); return 1;
    case YK_UINT:
        snprintf(buf, 80, "an integer beyond int64 (kubectl: unsupported map key of type: uint64)");
        return 0;
    case YK_NULL:
        snprintf(buf, 80, "null (kubectl: unsupported map key of type: <nil>)");
        return 0;
    case YK_FLOAT: {
        /* sigs.k8s.io/yaml: strconv.FormatFloat(key, 'g', -1, 32) */
        float f = (float)v->d;
        if (isnan(f)) { strcpy(buf, ".nan"); return 1; }
        if (isinf(f)) { strcpy(buf, f > 0 ? ".inf" : "-.inf"); return 1; }
        if (f == 0) { strcpy(buf, signbit(f) ? "-0" : "0"); return 1; }
        char dig[24];
        int dp, nd = shortest(fabs((double)f), 1, dig, &dp);
        int e = dp - 1;
        if (e < -4 || e >= 6) fmt_e(buf, f < 0, dig, nd, dp);
        else fmt_f(buf, f < 0, dig, nd, dp);
        return 1;
    }
    default:
        buf[0] = 0;
        return 0;
    }
}

size_t yk_base64(const char *s, size_t len, char *out)
{
    static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    unsigned q[4];
    size_t n = 0;
    int k = 0, pads = 0, done = 0;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (c == '\r' || c == '\n') continue;
        if (done) return (size_t)-1;                 /* data after the padding */
        if (c == '=') {
            if (k < 2) return (size_t)-1;
            pads++;
            q[k++] = 0;
        } else {
            const char *at = c ? strchr(alphabet, c) : NULL;
            if (!at || pads) return (size_t)-1;
            q[k++] = (unsigned)(at - alphabet);
        }
        if (k == 4) {
            out[n++] = (char)(q[0] << 2 | q[1] >> 4);
            if (pads < 2) out[n++] = (char)(q[1] << 4 | q[2] >> 2);
            if (pads < 1) out[n++] = (char)(q[2] << 6 | q[3]);
            done = pads > 0;
            k = 0;
        }
    }
    return k ? (size_t)-1 : n;
}
