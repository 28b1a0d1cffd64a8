/* fluence.aws — the AWS credentials chain and Signature Version 4 signing.
 *
 *   aws.credentials([{env =, profile =, home =}]) -> creds | nil, message
 *       env: a table or function(name) standing in for the process environment
 *       (tests); profile overrides AWS_PROFILE; home overrides $HOME.
 *   creds:region() creds:profile() creds:source() creds:has_session_token()
 *   creds:endpoint(service) -> URL | nil   (AWS_ENDPOINT_URL_<SERVICE>,
 *       AWS_ENDPOINT_URL, profile endpoint_url; AWS_IGNORE_CONFIGURED_ENDPOINT_URLS)
 *   creds:redact(text) -> text with the key id, secret and token replaced
 *   tostring(creds) -> "aws-credentials(AKID...PLE redacted; ...)"
 *   aws.static_credentials{access_key_id=, secret_access_key=, session_token=, region=}
 *   aws.sign(creds, {method=, url=, headers=, body=, region=, service=, time=,
 *                    content_sha256 = bool}) -> headers to add
 *   aws.canonical_request(req) -> canonical, signed_headers
 *   aws.string_to_sign(canonical, region, service, time) -> text
 *   aws.signature_for_test(key_id, secret, req) -> {authorization, signature,
 *       canonical_request, string_to_sign, signed_headers, headers}
 *   aws.uri_encode(s [, keep_slash]) / aws.sha256_hex(s)
 *   aws.backoff(attempt [, base, cap, at_least]) -> seconds slept (jittered)
 *
 * The secret and session token live only in C memory owned by the
 * credentials userdata, wiped (OPENSSL_cleanse) when it is collected or
 * closed; nothing hands them back to Lua except the X-Amz-Security-Token
 * header that must be sent.  Files holding them are read into wiped buffers.
 *
 * Canonical URIs follow the rules for every service but S3: the path is
 * normalised (dot segments, empty segments) and each segment is URI-encoded
 * again, so GetDevice's /device/arn%3Aaws%3A... signs as /device/arn%253Aaws...
 * (libcurl 7.88's CURLOPT_AWS_SIGV4 gets this wrong, hence our own signer). */
#include <errno.h>
#include <math.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "lazylib.h"
#include <lauxlib.h>
#include "aws_sigv4.h"
#include "readfile.h"
#include "strbuf.h"

#define CREDS_MT "fluence.aws.credentials"
#define SECRET_MT "fluence.aws.secretbuf"
#define MAX_HEADERS 128
#define MAX_FILE (1024 * 1024)

struct creds {
    char *key_id, *secret, *token;            /* secret and token: wiped on release */
    char *region, *profile, *source, *endpoint;
    int ignore_endpoints;
};

/* A malloc'd buffer that may hold secrets (a credentials file), wiped and
 * freed by __gc so an error while parsing cannot leak it. */
struct secretbuf {
    char *p;
    size_t n;
    char why[FLUENCE_READ_WHY];      /* why it could not be read, for messages */
};

static void wipe_free(char **p)
{
    if (*p) {
        OPENSSL_cleanse(*p, strlen(*p));
        free(*p);
        *p = NULL;
    }
}

static void creds_release(struct creds *c)
{
    wipe_free(&c->key_id);
    wipe_free(&c->secret);
    wipe_free(&c->token);
    free(c->region);
    free(c->profile);
    free(c->source);
    free(c->endpoint);
    c->region = c->profile = c->source = c->endpoint = NULL;
}

static int creds_gc(lua_State *L)
{
    creds_release(luaL_checkudata(L, 1, CREDS_MT));
    return 0;
}

static int secretbuf_gc(lua_State *L)
{
    struct secretbuf *b = luaL_checkudata(L, 1, SECRET_MT);
    if (b->p) {
        OPENSSL_cleanse(b->p, b->n);
        free(b->p);
        b->p = NULL;
    }
    return 0;
}

static struct creds *check_creds(lua_State *L, int i)
{
    struct creds *c = luaL_checkudata(L, i, CREDS_MT);
    if (!c->secret) luaL_error(L, "AWS credentials were released");
    return c;
}

static char *xstrndup(lua_State *L, const char *s, size_t n)
{
    char *p = malloc(n + 1);
    if (!p) luaL_error(L, "not enough memory");
    memcpy(p, s, n);
    p[n] = 0;
    return p;
}

static char *xstrdup(lua_State *L, const char *s) { return s ? xstrndup(L, s, strlen(s)) : NULL; }

/* ---------------------------------------------------------------- encoding */

static void add_encoded(lua_State *L, struct strbuf *b, const char *s, size_t n, int keep_slash)
{
    static const char hex[] = "0123456789ABCDEF";
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (sigv4_unreserved(c) || (keep_slash && c == '/')) strbuf_addc(L, b, (char)c);
        else {
            char e[3] = { '%', hex[c >> 4], hex[c & 15] };
            strbuf_add(L, b, e, 3);
        }
    }
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* [-0, +1, m]  Pushes s[0..n) percent-decoded then encoded canonically. */
static void push_recoded(lua_State *L, const char *s, size_t n)
{
    struct strbuf *dec = strbuf_push(L), *enc = strbuf_push(L);
    for (size_t i = 0; i < n; i++) {
        int h, l;
        if (s[i] == '%' && i + 2 < n && (h = hexval(s[i + 1])) >= 0 && (l = hexval(s[i + 2])) >= 0) {
            strbuf_addc(L, dec, (char)(h * 16 + l));
            i += 2;
        } else strbuf_addc(L, dec, s[i]);
    }
    add_encoded(L, enc, dec->data ? dec->data : "", dec->len, 0);
    strbuf_pushresult(L, enc);
    lua_replace(L, -3);
    lua_pop(L, 1);
}

/* --------------------------------------------------------------------- URL */

struct url {
    const char *host, *path, *query;
    size_t host_len, path_len, query_len;
};

/* Splits scheme://[userinfo@]host[:port]/path?query#fragment without judging
 * it: the test suite's paths hold spaces and raw UTF-8.  A default port
 * (443 for https, 80 for http) is dropped from the host, as curl sends it. */
static int parse_url(const char *u, struct url *out)
{
    memset(out, 0, sizeof *out);
    const char *p = strstr(u, "://");
    if (!p) return -1;
    int https = (size_t)(p - u) == 5 && strncasecmp(u, "https", 5) == 0;
    int http = (size_t)(p - u) == 4 && strncasecmp(u, "http", 4) == 0;
    const char *auth = p + 3, *end = auth + strcspn(auth, "/?#");
    const char *at = memchr(auth, '@', (size_t)(end - auth));
    if (at) auth = at + 1;
    size_t hl = (size_t)(end - auth);
    if (https && hl > 4 && memcmp(end - 4, ":443", 4) == 0) hl -= 4;
    if (http && hl > 3 && memcmp(end - 3, ":80", 3) == 0) hl -= 3;
    if (hl == 0) return -1;
    out->host = auth;
    out->host_len = hl;
    out->path = end;
    out->path_len = strcspn(end, "?#");
    if (end[out->path_len] == '?') {
        out->query = end + out->path_len + 1;
        out->query_len = strcspn(out->query, "#");
    }
    return 0;
}

struct span {
    const char *p;
    size_t n;
};

/* Canonical URI: dot and empty segments removed, each segment encoded again. */
static void add_canonical_uri(lua_State *L, struct strbuf *b, const char *path, size_t n)
{
    struct span *seg = lua_newuserdatauv(L, sizeof *seg * (n / 2 + 2), 0);
    size_t nseg = 0;
    int trailing = n > 0 && path[n - 1] == '/';
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && path[j] != '/') j++;
        size_t len = j - i;
        const char *s = path + i;
        trailing = trailing || (j == n && ((len == 1 && s[0] == '.') || (len == 2 && s[0] == '.' && s[1] == '.')));
        if (len == 0 || (len == 1 && s[0] == '.')) {
            /* skip */
        } else if (len == 2 && s[0] == '.' && s[1] == '.') {
            if (nseg) nseg--;
        } else {
            seg[nseg].p = s;
            seg[nseg].n = len;
            nseg++;
        }
        i = j + 1;
    }
    strbuf_addc(L, b, '/');
    for (size_t i = 0; i < nseg; i++) {
        if (i) strbuf_addc(L, b, '/');
        add_encoded(L, b, seg[i].p, seg[i].n, 0);
    }
    if (trailing && nseg) strbuf_addc(L, b, '/');
    lua_pop(L, 1);
}

struct kv {
    const char *k, *v;
    size_t kn, vn;
};

static int cmp_bytes(const char *a, size_t an, const char *b, size_t bn)
{
    int c = memcmp(a, b, an < bn ? an : bn);
    return c ? c : (an < bn ? -1 : an > bn);
}

static int cmp_kv(const void *x, const void *y)
{
    const struct kv *a = x, *b = y;
    int c = cmp_bytes(a->k, a->kn, b->k, b->kn);
    return c ? c : cmp_bytes(a->v, a->vn, b->v, b->vn);
}

/* Canonical query: every key and value decoded then encoded, sorted. */
static void add_canonical_query(lua_State *L, struct strbuf *b, const char *q, size_t n)
{
    size_t cap = 1;
    for (size_t i = 0; i < n; i++) cap += q[i] == '&';
    struct kv *kv = lua_newuserdatauv(L, sizeof *kv * cap, 0);
    lua_newtable(L);                                   /* anchors the recoded strings */
    int anchor = lua_gettop(L), k = 0;
    size_t nkv = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && q[j] != '&') j++;
        if (j > i) {
            const char *eq = memchr(q + i, '=', j - i);
            size_t klen = eq ? (size_t)(eq - (q + i)) : j - i;
            push_recoded(L, q + i, klen);
            kv[nkv].k = lua_tolstring(L, -1, &kv[nkv].kn);
            lua_rawseti(L, anchor, ++k);
            if (eq) push_recoded(L, eq + 1, (size_t)(q + j - eq - 1));
            else lua_pushliteral(L, "");
            kv[nkv].v = lua_tolstring(L, -1, &kv[nkv].vn);
            lua_rawseti(L, anchor, ++k);
            nkv++;
        }
        i = j + 1;
    }
    qsort(kv, nkv, sizeof *kv, cmp_kv);
    for (size_t i = 0; i < nkv; i++) {
        if (i) strbuf_addc(L, b, '&');
        strbuf_add(L, b, kv[i].k, kv[i].kn);
        strbuf_addc(L, b, '=');
        strbuf_add(L, b, kv[i].v, kv[i].vn);
    }
    lua_pop(L, 2);
}

/* ----------------------------------------------------------------- headers */

struct hdr {
    const char *name, *val;
    size_t nlen, vlen;
    int order;
};

struct hdrs {
    struct hdr v[MAX_HEADERS];
    int n, anchor, k;
};

static int cmp_hdr(const void *x, const void *y)
{
    const struct hdr *a = x, *b = y;
    int c = cmp_bytes(a->name, a->nlen, b->name, b->nlen);
    return c ? c : (a->order > b->order) - (a->order < b->order);
}

/* Adds one header: the name lowercased and trimmed, the value trimmed with
 * inner runs of blanks collapsed to one space. */
static void hdr_add(lua_State *L, struct hdrs *h, const char *name, size_t nlen, const char *val, size_t vlen)
{
    if (h->n >= MAX_HEADERS) luaL_error(L, "too many headers to sign (more than %d)", MAX_HEADERS);
    while (nlen && (*name == ' ' || *name == '\t')) name++, nlen--;
    while (nlen && (name[nlen - 1] == ' ' || name[nlen - 1] == '\t')) nlen--;
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    for (size_t i = 0; i < nlen; i++) {
        char c = name[i];
        luaL_addchar(&b, (char)(c >= 'A' && c <= 'Z' ? c + 32 : c));
    }
    luaL_pushresult(&b);
    struct hdr *e = &h->v[h->n];
    e->name = lua_tolstring(L, -1, &e->nlen);
    lua_rawseti(L, h->anchor, ++h->k);
    luaL_buffinit(L, &b);
    int blank = 0, any = 0;
    for (size_t i = 0; i < vlen; i++) {
        char c = val[i];
        if (c == ' ' || c == '\t' || c == '\r' || c == '\n') { blank = 1; continue; }
        if (blank && any) luaL_addchar(&b, ' ');
        luaL_addchar(&b, c);
        blank = 0;
        any = 1;
    }
    luaL_pushresult(&b);
    e->val = lua_tolstring(L, -1, &e->vlen);
    lua_rawseti(L, h->anchor, ++h->k);
    e->order = h->n++;
}

static const struct hdr *hdr_find(const struct hdrs *h, const char *name)
{
    size_t n = strlen(name);
    for (int i = 0; i < h->n; i++)
        if (h->v[i].nlen == n && memcmp(h->v[i].name, name, n) == 0) return &h->v[i];
    return NULL;
}

/* Collects req.headers: {Name = value}, {Name = {v1, v2}} or {"Name: value"}. */
static void hdr_collect(lua_State *L, int req, struct hdrs *h)
{
    lua_getfield(L, req, "headers");
    if (lua_istable(L, -1)) {
        int t = lua_gettop(L);
        lua_pushnil(L);
        while (lua_next(L, t)) {
            if (lua_type(L, -2) == LUA_TSTRING) {
                size_t nl, vl;
                const char *n = lua_tolstring(L, -2, &nl);
                if (lua_istable(L, -1)) {
                    for (lua_Integer i = 1; lua_rawgeti(L, -1, i) != LUA_TNIL; i++) {
                        const char *v = luaL_checklstring(L, -1, &vl);
                        hdr_add(L, h, n, nl, v, vl);
                        lua_pop(L, 1);
                    }
                    lua_pop(L, 1);
                } else {
                    const char *v = luaL_checklstring(L, -1, &vl);
                    hdr_add(L, h, n, nl, v, vl);
                }
            } else {
                size_t ll;
                const char *line = luaL_checklstring(L, -1, &ll);
                const char *colon = memchr(line, ':', ll);
                if (!colon) luaL_error(L, "header line without a colon");
                hdr_add(L, h, line, (size_t)(colon - line), colon + 1, ll - (size_t)(colon - line) - 1);
            }
            lua_pop(L, 1);
        }
    } else if (!lua_isnil(L, -1)) luaL_error(L, "headers must be a table");
    lua_pop(L, 1);
}

/* ------------------------------------------------------- canonical request */

static const char *opt_field(lua_State *L, int t, const char *key, const char *dflt)
{
    lua_getfield(L, t, key);
    const char *s = lua_isnil(L, -1) ? dflt : luaL_checkstring(L, -1);
    lua_pop(L, 1);                      /* s stays alive: referenced from t */
    return s;
}

/* [-0, +2, e]  Pushes the canonical request and the signed-header list for
 * the request table at req, with h's headers (already collected).  A host
 * header is added from the URL when the request names none. */
static void push_canonical(lua_State *L, int req, struct hdrs *h, const char *payload_hash)
{
    const char *url = opt_field(L, req, "url", NULL);
    if (!url) luaL_error(L, "request without url");
    struct url u;
    if (parse_url(url, &u)) luaL_error(L, "cannot parse URL for signing (scheme://host/path expected)");
    if (!hdr_find(h, "host")) hdr_add(L, h, "host", 4, u.host, u.host_len);
    const char *method = opt_field(L, req, "method", "GET");

    struct strbuf *b = strbuf_push(L), *sh = strbuf_push(L);
    for (const char *m = method; *m; m++) strbuf_addc(L, b, (char)(*m >= 'a' && *m <= 'z' ? *m - 32 : *m));
    strbuf_addc(L, b, '\n');
    add_canonical_uri(L, b, u.path, u.path_len);
    strbuf_addc(L, b, '\n');
    add_canonical_query(L, b, u.query ? u.query : "", u.query_len);
    strbuf_addc(L, b, '\n');
    qsort(h->v, (size_t)h->n, sizeof h->v[0], cmp_hdr);
    for (int i = 0; i < h->n; i++) {
        int same = i > 0 && cmp_bytes(h->v[i].name, h->v[i].nlen, h->v[i - 1].name, h->v[i - 1].nlen) == 0;
        if (same) strbuf_addc(L, b, ',');
        else {
            if (i) strbuf_addc(L, b, '\n');
            if (i) strbuf_addc(L, sh, ';');
            strbuf_add(L, b, h->v[i].name, h->v[i].nlen);
            strbuf_add(L, sh, h->v[i].name, h->v[i].nlen);
            strbuf_addc(L, b, ':');
        }
        strbuf_add(L, b, h->v[i].val, h->v[i].vlen);
    }
    if (h->n) strbuf_addc(L, b, '\n');
    strbuf_addc(L, b, '\n');
    strbuf_add(L, b, sh->data ? sh->data : "", sh->len);
    strbuf_addc(L, b, '\n');
    strbuf_adds(L, b, payload_hash);
    strbuf_pushresult(L, b);
    strbuf_pushresult(L, sh);
    lua_replace(L, -3);                 /* ... canonical signed */
    lua_replace(L, -3);
}

static void payload_hash(lua_State *L, int req, char out[SIGV4_HEX_SIZE])
{
    lua_getfield(L, req, "payload_hash");
    if (lua_type(L, -1) == LUA_TSTRING) {
        size_t n;
        const char *s = lua_tolstring(L, -1, &n);
        if (n >= SIGV4_HEX_SIZE) luaL_error(L, "payload_hash too long");
        memcpy(out, s, n + 1);
        lua_pop(L, 1);
        return;
    }
    lua_pop(L, 1);
    lua_getfield(L, req, "body");
    size_t n = 0;
    const char *body = lua_isnil(L, -1) ? "" : luaL_checklstring(L, -1, &n);
    sigv4_sha256_hex(body, n, out);
    lua_pop(L, 1);
}

static int valid_amz_time(const char *t)
{
    if (strlen(t) != 16 || t[8] != 'T' || t[15] != 'Z') return 0;
    for (int i = 0; i < 15; i++)
        if (i != 8 && (t[i] < '0' || t[i] > '9')) return 0;
    return 1;
}

/* [-0, +1, m] */
static void push_sts(lua_State *L, const char *canonical, size_t clen, const char *region,
                     const char *service, const char *amzdate)
{
    char hash[SIGV4_HEX_SIZE];
    char date8[9];
    sigv4_sha256_hex(canonical, clen, hash);
    memcpy(date8, amzdate, 8);
    date8[8] = 0;
    lua_pushfstring(L, "AWS4-HMAC-SHA256\n%s\n%s/%s/%s/aws4_request\n%s", amzdate, date8, region, service, hash);
}

/* The signing core shared by aws.sign and aws.signature_for_test.
 * [-0, +1, e]  Pushes the headers to add, or (detail) the full record. */
static int sign_request(lua_State *L, int req, const char *key_id, const char *secret, size_t slen,
                        const char *token, const char *region, const char *service, int detail)
{
    struct hdrs *h = lua_newuserdatauv(L, sizeof *h, 0);
    memset(h, 0, sizeof *h);
    lua_newtable(L);
    h->anchor = lua_gettop(L);
    hdr_collect(L, req, h);

    char amzdate[17], hash[SIGV4_HEX_SIZE];
    const char *t = opt_field(L, req, "time", NULL);
    const struct hdr *given = hdr_find(h, "x-amz-date");
    if (!t && given) t = given->val;
    if (t) {
        if (!valid_amz_time(t)) luaL_error(L, "time must look like 20150830T123600Z");
        memcpy(amzdate, t, 17);
    } else {
        time_t now = time(NULL);
        struct tm tm;
        gmtime_r(&now, &tm);
        strftime(amzdate, sizeof amzdate, "%Y%m%dT%H%M%SZ", &tm);
    }
    payload_hash(L, req, hash);
    lua_getfield(L, req, "content_sha256");
    int want_sha = lua_toboolean(L, -1);
    lua_pop(L, 1);

    lua_newtable(L);                                  /* headers to add */
    int out = lua_gettop(L);
    if (!given) {
        hdr_add(L, h, "x-amz-date", 10, amzdate, 16);
        lua_pushstring(L, amzdate);
        lua_setfield(L, out, "X-Amz-Date");
    }
    if (token && *token && !hdr_find(h, "x-amz-security-token")) {
        hdr_add(L, h, "x-amz-security-token", 20, token, strlen(token));
        lua_pushstring(L, token);
        lua_setfield(L, out, "X-Amz-Security-Token");
    }
    if (want_sha && !hdr_find(h, "x-amz-content-sha256")) {
        hdr_add(L, h, "x-amz-content-sha256", 20, hash, strlen(hash));
        lua_pushstring(L, hash);
        lua_setfield(L, out, "X-Amz-Content-Sha256");
    }

    push_canonical(L, req, h, hash);                 /* canonical signed */
    size_t clen;
    const char *canonical = lua_tolstring(L, -2, &clen);
    push_sts(L, canonical, clen, region, service, amzdate);
    size_t stslen;
    const char *sts = lua_tolstring(L, -1, &stslen);
    char date8[9], sig[SIGV4_HEX_SIZE];
    memcpy(date8, amzdate, 8);
    date8[8] = 0;
    if (sigv4_signature(secret, slen, date8, region, service, sts, stslen, sig))
        luaL_error(L, "cannot compute the SigV4 signature (secret too long or libcrypto failure)");
    lua_pushfstring(L, "AWS4-HMAC-SHA256 Credential=%s/%s/%s/%s/aws4_request, SignedHeaders=%s, Signature=%s",
                    key_id, date8, region, service, lua_tostring(L, -2), sig);
    OPENSSL_cleanse(sig, sizeof sig);
    lua_pushvalue(L, -1);
    lua_setfield(L, out, "Authorization");           /* out ... canonical signed sts auth */
    if (!detail) {
        lua_pushvalue(L, out);
        return 1;
    }
    int top = lua_gettop(L);
    lua_createtable(L, 0, 6);
    lua_pushvalue(L, top);
    lua_setfield(L, -2, "authorization");
    lua_pushvalue(L, top - 1);
    lua_setfield(L, -2, "string_to_sign");
    lua_pushvalue(L, top - 2);
    lua_setfield(L, -2, "signed_headers");
    lua_pushvalue(L, top - 3);
    lua_setfield(L, -2, "canonical_request");
    const char *a = lua_tostring(L, top), *s = strstr(a, "Signature=");
    lua_pushstring(L, s ? s + 10 : "");
    lua_setfield(L, -2, "signature");
    lua_pushvalue(L, out);
    lua_setfield(L, -2, "headers");
    return 1;
}

static int aws_sign(lua_State *L)
{
    struct creds *c = check_creds(L, 1);
    luaL_checktype(L, 2, LUA_TTABLE);
    const char *region = opt_field(L, 2, "region", c->region);
    const char *service = opt_field(L, 2, "service", NULL);
    if (!region) return luaL_error(L, "no AWS region to sign with (set AWS_REGION or pass region)");
    if (!service) return luaL_error(L, "aws.sign: service required");
    return sign_request(L, 2, c->key_id, c->secret, strlen(c->secret), c->token, region, service, 0);
}

static int aws_signature_for_test(lua_State *L)
{
    const char *key_id = luaL_checkstring(L, 1);
    size_t slen;
    const char *secret = luaL_checklstring(L, 2, &slen);
    luaL_checktype(L, 3, LUA_TTABLE);
    const char *token = opt_field(L, 3, "session_token", NULL);
    const char *region = opt_field(L, 3, "region", "us-east-1");
    const char *service = opt_field(L, 3, "service", "service");
    return sign_request(L, 3, key_id, secret, slen, token, region, service, 1);
}

static int aws_canonical_request(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    struct hdrs *h = lua_newuserdatauv(L, sizeof *h, 0);
    memset(h, 0, sizeof *h);
    lua_newtable(L);
    h->anchor = lua_gettop(L);
    hdr_collect(L, 1, h);
    char hash[SIGV4_HEX_SIZE];
    payload_hash(L, 1, hash);
    push_canonical(L, 1, h, hash);
    return 2;
}

static int aws_string_to_sign(lua_State *L)
{
    size_t n;
    const char *canonical = luaL_checklstring(L, 1, &n);
    const char *region = luaL_checkstring(L, 2), *service = luaL_checkstring(L, 3);
    const char *t = luaL_checkstring(L, 4);
    if (!valid_amz_time(t)) return luaL_error(L, "time must look like 20150830T123600Z");
    push_sts(L, canonical, n, region, service, t);
    return 1;
}

static int aws_uri_encode(lua_State *L)
{
    size_t n;
    const char *s = luaL_checklstring(L, 1, &n);
    int keep_slash = lua_toboolean(L, 2);
    struct strbuf *b = strbuf_push(L);
    add_encoded(L, b, s, n, keep_slash);
    strbuf_pushresult(L, b);
    return 1;
}

static int aws_sha256_hex(lua_State *L)
{
    size_t n;
    const char *s = luaL_checklstring(L, 1, &n);
    char out[SIGV4_HEX_SIZE];
    sigv4_sha256_hex(s, n, out);
    lua_pushstring(L, out);
    return 1;
}

/* backoff(attempt [, base, cap, at_least]) sleeps "equal jitter": half the
 * exponential delay plus a random part of the other half, never less than
 * at_least (a server's Retry-After), never more than 30 s. */
static int aws_backoff(lua_State *L)
{
    lua_Integer attempt = luaL_checkinteger(L, 1);
    double base = luaL_optnumber(L, 2, 0.1), cap = luaL_optnumber(L, 3, 2.0);
    double at_least = luaL_optnumber(L, 4, 0);
    if (attempt < 1) attempt = 1;
    if (attempt > 30) attempt = 30;
    double d = base * ldexp(1.0, (int)attempt - 1);
    if (d > cap) d = cap;
    unsigned int r = 0;
    if (RAND_bytes((unsigned char *)&r, sizeof r) != 1) r = (unsigned int)rand();
    double delay = d / 2 + (d / 2) * ((double)r / 4294967296.0);
    if (delay < at_least) delay = at_least;
    if (delay > 30) delay = 30;
    if (delay < 0 || delay != delay) delay = 0;
    struct timespec ts = { (time_t)delay, (long)((delay - (double)(time_t)delay) * 1e9) };
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {}
    lua_pushnumber(L, delay);
    return 1;
}

/* ------------------------------------------------------------- credentials */

/* Environment lookups go to the table or function at index env, or to the
 * process environment when env is 0.  The value stays on the stack; empty
 * counts as unset. */
static const char *env_get(lua_State *L, int env, const char *name)
{
    const char *v = NULL;
    luaL_checkstack(L, 4, "environment");
    if (env == 0) v = getenv(name);
    else {
        if (lua_istable(L, env)) lua_getfield(L, env, name);
        else {
            lua_pushvalue(L, env);
            lua_pushstring(L, name);
            lua_call(L, 1, 1);
        }
        v = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
    }
    return v && *v ? v : NULL;
}

/* [-0, +1, m]  Reads a whole file (a regular one, at most MAX_FILE bytes:
 * readfile.h; a FIFO or a device named by AWS_SHARED_CREDENTIALS_FILE is
 * refused, not waited on) into a wiped-on-collect buffer.  Returns 0 or an
 * errno value (the buffer is then empty and b->why says why). */
static int read_secret_file(lua_State *L, const char *path, struct secretbuf **out)
{
    struct secretbuf *b = lua_newuserdatauv(L, sizeof *b, 0);
    memset(b, 0, sizeof *b);
    luaL_setmetatable(L, SECRET_MT);
    *out = b;
    if (!path) return ENOENT;
    return fluence_readfile(path, MAX_FILE, FLUENCE_READ_SECRET | FLUENCE_READ_REGULAR, &b->p, &b->n, b->why);
}

static int is_blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

/* Looks key up in the profile's section of an INI text: "[NAME]" in the
 * credentials file, "[profile NAME]" (or "[default]") in the config file.
 * Indented lines are sub-properties (s3 = ...) and are skipped.  Returns 1
 * when the section exists; *val and *vlen point into text when the key does. */
static int ini_get(const char *text, size_t len, const char *profile, int config,
                   const char *key, const char **val, size_t *vlen)
{
    int found = 0, in = 0;
    size_t plen = strlen(profile), klen = strlen(key);
    *val = NULL;
    *vlen = 0;
    for (size_t i = 0; i < len;) {
        size_t e = i;
        while (e < len && text[e] != '\n') e++;
        const char *l = text + i;
        size_t n = e - i;
        i = e + 1;
        if (n == 0 || is_blank(l[0])) continue;
        while (n && is_blank(l[n - 1])) n--;
        if (l[0] == '#' || l[0] == ';' || n == 0) continue;
        if (l[0] == '[') {
            const char *s = l + 1, *end = memchr(l, ']', n);
            if (!end) { in = 0; continue; }
            while (s < end && is_blank(*s)) s++;
            while (end > s && is_blank(end[-1])) end--;
            size_t sn = (size_t)(end - s);
            if (config && sn > 8 && memcmp(s, "profile", 7) == 0 && is_blank(s[7])) {
                s += 8;
                while (s < end && is_blank(*s)) s++;
                sn = (size_t)(end - s);
                in = sn == plen && memcmp(s, profile, plen) == 0;
            } else
                in = sn == plen && memcmp(s, profile, plen) == 0 && (!config || strcmp(profile, "default") == 0);
            found |= in;
            continue;
        }
        if (!in || *val) continue;
        const char *eq = memchr(l, '=', n);
        if (!eq) continue;
        const char *ke = eq;
        while (ke > l && is_blank(ke[-1])) ke--;
        if ((size_t)(ke - l) != klen || memcmp(l, key, klen) != 0) continue;
        const char *v = eq + 1;
        while (v < l + n && is_blank(*v)) v++;
        *val = v;
        *vlen = (size_t)(l + n - v);
    }
    return found;
}

/* A file's status for messages: "missing", why it could not be read, or "read". */
static const char *file_status(int err, const struct secretbuf *b)
{
    return err == 0 ? "read" : err == ENOENT ? "missing" : b->why;
}

static void set_from_ini(lua_State *L, struct secretbuf *b, const char *profile, int config,
                         const char *key, char **dst)
{
    const char *v;
    size_t n;
    if (!*dst && b->p && ini_get(b->p, b->n, profile, config, key, &v, &n) && v && n)
        *dst = xstrndup(L, v, n);
}

static int aws_credentials(lua_State *L)
{
    int env = 0, opts = 1;
    if (lua_istable(L, 1)) lua_settop(L, 1);
    else {
        lua_settop(L, 0);
        lua_newtable(L);
    }
    lua_getfield(L, opts, "env");
    if (lua_istable(L, -1) || lua_isfunction(L, -1)) env = lua_gettop(L);
    else lua_pop(L, 1);
    if (!env) lua_pushnil(L);
    int envslot = lua_gettop(L);                     /* nil: process environment */

    struct creds *c = lua_newuserdatauv(L, sizeof *c, 1);
    memset(c, 0, sizeof *c);
    luaL_setmetatable(L, CREDS_MT);
    int cidx = lua_gettop(L);
    lua_pushvalue(L, envslot);
    lua_setiuservalue(L, cidx, 1);

    const char *profile = opt_field(L, opts, "profile", NULL);
    const char *profile_from = "profile option";
    if (!profile) { profile = env_get(L, env, "AWS_PROFILE"); profile_from = "AWS_PROFILE"; }
    if (!profile) { profile = "default"; profile_from = "default"; }
    c->profile = xstrdup(L, profile);

    const char *home = opt_field(L, opts, "home", NULL);
    if (!home) home = env_get(L, env, "HOME");
    if (!home && !env) {
        struct passwd *pw = getpwuid(getuid());
        home = pw ? pw->pw_dir : NULL;
    }
    const char *cred_path = env_get(L, env, "AWS_SHARED_CREDENTIALS_FILE");
    const char *cred_var = cred_path ? " (AWS_SHARED_CREDENTIALS_FILE)" : "";
    if (!cred_path && home) cred_path = lua_pushfstring(L, "%s/.aws/credentials", home);
    const char *conf_path = env_get(L, env, "AWS_CONFIG_FILE");
    const char *conf_var = conf_path ? " (AWS_CONFIG_FILE)" : "";
    if (!conf_path && home) conf_path = lua_pushfstring(L, "%s/.aws/config", home);

    struct secretbuf *conf = NULL, *cred = NULL;
    int conf_err = read_secret_file(L, conf_path, &conf);

    /* region and endpoint: environment, then the profile in the config file */
    const char *r = env_get(L, env, "AWS_REGION");
    if (!r) r = env_get(L, env, "AWS_DEFAULT_REGION");
    c->region = xstrdup(L, r);
    set_from_ini(L, conf, profile, 1, "region", &c->region);
    c->endpoint = xstrdup(L, env_get(L, env, "AWS_ENDPOINT_URL"));
    set_from_ini(L, conf, profile, 1, "endpoint_url", &c->endpoint);
    const char *ign = env_get(L, env, "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS");
    char *ign_conf = NULL;
    set_from_ini(L, conf, profile, 1, "ignore_configured_endpoint_urls", &ign_conf);
    c->ignore_endpoints = (ign && strcasecmp(ign, "true") == 0) ||
                          (!ign && ign_conf && strcasecmp(ign_conf, "true") == 0);
    free(ign_conf);

    /* keys: the environment wins */
    const char *ak = env_get(L, env, "AWS_ACCESS_KEY_ID"), *sk = env_get(L, env, "AWS_SECRET_ACCESS_KEY");
    if (ak || sk) {
        if (!ak || !sk) {
            lua_pushnil(L);
            lua_pushfstring(L, "AWS credentials incomplete: %s is set but %s is not",
                            ak ? "AWS_ACCESS_KEY_ID" : "AWS_SECRET_ACCESS_KEY",
                            ak ? "AWS_SECRET_ACCESS_KEY" : "AWS_ACCESS_KEY_ID");
            return 2;
        }
        c->key_id = xstrdup(L, ak);
        c->secret = xstrdup(L, sk);
        c->token = xstrdup(L, env_get(L, env, "AWS_SESSION_TOKEN"));
        c->source = xstrdup(L, "environment");
        lua_pushvalue(L, cidx);
        return 1;
    }

    int cred_err = read_secret_file(L, cred_path, &cred);
    struct secretbuf *from = NULL;
    const char *from_path = NULL;
    const char *v;
    size_t n;
    if (cred->p && ini_get(cred->p, cred->n, profile, 0, "aws_access_key_id", &v, &n)) {
        from = cred;
        from_path = cred_path;
    } else if (conf->p && ini_get(conf->p, conf->n, profile, 1, "aws_access_key_id", &v, &n)) {
        const char *v2;
        size_t n2;
        ini_get(conf->p, conf->n, profile, 1, "aws_secret_access_key", &v2, &n2);
        if (v || v2) {                  /* a config profile with keys in it */
            from = conf;
            from_path = conf_path;
        }
    }
    if (!from) {
        lua_pushnil(L);
        if (!home && !cred_path)
            lua_pushfstring(L, "no AWS credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set, "
                               "and no home directory to find ~/.aws/credentials");
        else
            lua_pushfstring(L, "no AWS credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set, "
                               "and profile \"%s\" (%s) is not in %s%s [%s] or %s%s [%s]",
                            profile, profile_from, cred_path ? cred_path : "~/.aws/credentials", cred_var,
                            file_status(cred_err, cred), conf_path ? conf_path : "~/.aws/config", conf_var,
                            file_status(conf_err, conf));
        return 2;
    }
    int is_conf = from == conf;
    set_from_ini(L, from, profile, is_conf, "aws_access_key_id", &c->key_id);
    set_from_ini(L, from, profile, is_conf, "aws_secret_access_key", &c->secret);
    set_from_ini(L, from, profile, is_conf, "aws_session_token", &c->token);
    if (!c->key_id || !c->secret) {
        const char *missing = !c->key_id ? "aws_access_key_id" : "aws_secret_access_key";
        creds_release(c);
        lua_pushnil(L);
        lua_pushfstring(L, "AWS credentials incomplete: profile \"%s\" in %s has no %s",
                        profile, from_path, missing);
        return 2;
    }
    c->source = xstrdup(L, lua_pushfstring(L, "profile %s in %s", profile, from_path));
    lua_pushvalue(L, cidx);
    return 1;
}

static int aws_static_credentials(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    const char *ak = opt_field(L, 1, "access_key_id", NULL), *sk = opt_field(L, 1, "secret_access_key", NULL);
    if (!ak || !*ak || !sk || !*sk) return luaL_error(L, "access_key_id and secret_access_key required");
    struct creds *c = lua_newuserdatauv(L, sizeof *c, 1);
    memset(c, 0, sizeof *c);
    luaL_setmetatable(L, CREDS_MT);
    lua_pushboolean(L, 0);                           /* endpoints: none from the environment */
    lua_setiuservalue(L, -2, 1);
    c->key_id = xstrdup(L, ak);
    c->secret = xstrdup(L, sk);
    const char *tok = opt_field(L, 1, "session_token", NULL);
    if (tok && *tok) c->token = xstrdup(L, tok);
    c->region = xstrdup(L, opt_field(L, 1, "region", NULL));
    c->endpoint = xstrdup(L, opt_field(L, 1, "endpoint_url", NULL));
    c->profile = xstrdup(L, "static");
    c->source = xstrdup(L, "static");
    return 1;
}

/* ------------------------------------------------------- creds methods */

static int push_opt(lua_State *L, const char *s)
{
    if (s) lua_pushstring(L, s); else lua_pushnil(L);
    return 1;
}

static int creds_region(lua_State *L) { return push_opt(L, check_creds(L, 1)->region); }
static int creds_profile(lua_State *L) { return push_opt(L, check_creds(L, 1)->profile); }
static int creds_source(lua_State *L) { return push_opt(L, check_creds(L, 1)->source); }

static int creds_has_session_token(lua_State *L)
{
    lua_pushboolean(L, check_creds(L, 1)->token != NULL);
    return 1;
}

static int creds_endpoint(lua_State *L)
{
    struct creds *c = check_creds(L, 1);
    const char *service = luaL_checkstring(L, 2);
    if (c->ignore_endpoints) return push_opt(L, NULL);
    int t = lua_getiuservalue(L, 1, 1);
    if (t == LUA_TBOOLEAN) return push_opt(L, c->endpoint);     /* static credentials */
    int env = t == LUA_TNIL ? 0 : lua_gettop(L);
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    luaL_addstring(&b, "AWS_ENDPOINT_URL_");
    for (const char *s = service; *s; s++) {
        char ch = *s;
        luaL_addchar(&b, (char)(ch >= 'a' && ch <= 'z' ? ch - 32 : (ch == '-' || ch == ' ') ? '_' : ch));
    }
    luaL_pushresult(&b);
    const char *v = env_get(L, env, lua_tostring(L, -1));
    return push_opt(L, v ? v : c->endpoint);
}

static void add_redacted_text(lua_State *L, struct strbuf *out, const char *s, size_t n, const char *const *secrets)
{
    for (size_t i = 0; i < n;) {
        size_t hit = 0;
        for (int k = 0; k < 3; k++) {
            size_t sl = secrets[k] ? strlen(secrets[k]) : 0;
            if (sl >= 4 && sl <= n - i && memcmp(s + i, secrets[k], sl) == 0) { hit = sl; break; }
        }
        if (hit) {
            strbuf_adds(L, out, "[redacted]");
            i += hit;
        } else strbuf_addc(L, out, s[i++]);
    }
}

static int creds_redact(lua_State *L)
{
    struct creds *c = check_creds(L, 1);
    size_t n;
    const char *s = luaL_checklstring(L, 2, &n);
    const char *secrets[3] = { c->secret, c->token, c->key_id };
    struct strbuf *b = strbuf_push(L);
    add_redacted_text(L, b, s, n, secrets);
    strbuf_pushresult(L, b);
    return 1;
}

static int creds_close(lua_State *L)
{
    creds_release(luaL_checkudata(L, 1, CREDS_MT));
    return 0;
}

static int creds_tostring(lua_State *L)
{
    struct creds *c = luaL_checkudata(L, 1, CREDS_MT);
    if (!c->key_id) {
        lua_pushliteral(L, "aws-credentials(released)");
        return 1;
    }
    size_t n = strlen(c->key_id);
    if (n >= 10)
        lua_pushfstring(L, "aws-credentials(%s...%s redacted; %s; region %s)",
                        lua_pushlstring(L, c->key_id, 4), c->key_id + n - 3, c->source ? c->source : "?", c->region ? c->region : "unset");
    else
        lua_pushfstring(L, "aws-credentials(redacted; %s; region %s)", c->source ? c->source : "?",
                        c->region ? c->region : "unset");
    return 1;
}

int luaopen_fluence_aws(lua_State *L)
{
    lazylib_crypto(L);      /* HMAC, SHA-256 and RAND_bytes from here on */
    static const luaL_Reg methods[] = {
        {"region", creds_region}, {"profile", creds_profile}, {"source", creds_source},
        {"has_session_token", creds_has_session_token}, {"endpoint", creds_endpoint},
        {"redact", creds_redact}, {"close", creds_close}, {NULL, NULL}
    };
    if (luaL_newmetatable(L, CREDS_MT)) {
        lua_pushcfunction(L, creds_gc);
        lua_setfield(L, -2, "__gc");
        lua_pushcfunction(L, creds_close);
        lua_setfield(L, -2, "__close");
        lua_pushcfunction(L, creds_tostring);
        lua_setfield(L, -2, "__tostring");
        luaL_newlib(L, methods);
        lua_setfield(L, -2, "__index");
        lua_pushliteral(L, "aws-credentials");
        lua_setfield(L, -2, "__metatable");
    }
    lua_pop(L, 1);
    if (luaL_newmetatable(L, SECRET_MT)) {
        lua_pushcfunction(L, secretbuf_gc);
        lua_setfield(L, -2, "__gc");
        lua_pushliteral(L, "secret");
        lua_setfield(L, -2, "__metatable");
    }
    lua_pop(L, 1);
    static const luaL_Reg funcs[] = {
        {"credentials", aws_credentials}, {"static_credentials", aws_static_credentials},
        {"sign", aws_sign}, {"canonical_request", aws_canonical_request},
        {"string_to_sign", aws_string_to_sign}, {"signature_for_test", aws_signature_for_test},
        {"uri_encode", aws_uri_encode}, {"sha256_hex", aws_sha256_hex}, {"backoff", aws_backoff},
        {NULL, NULL}
    };
    luaL_newlib(L, funcs);
    return 1;
}
