/* One libcurl transfer owned by a Lua userdata (see http_transfer.h). */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <lauxlib.h>
#include "http_transfer.h"
#include "progress.h"

#define TRANSFER_MT "fluence.http.transfer"

static void wipe_list(struct curl_slist *l)
{
    for (struct curl_slist *s = l; s; s = s->next) explicit_bzero(s->data, strlen(s->data));
}

void http_transfer_free(struct http_transfer *t)
{
    if (t->easy) curl_easy_cleanup(t->easy);
    wipe_list(t->headers);
    curl_slist_free_all(t->headers);
    curl_slist_free_all(t->connect_to);
    free(t->body);
    free(t->resp_headers);
    memset(t, 0, sizeof *t);
}

static int transfer_gc(lua_State *L)
{
    http_transfer_free(luaL_checkudata(L, 1, TRANSFER_MT));
    return 0;
}

static int grow(char **buf, size_t *len, size_t *cap, const char *data, size_t n)
{
    if (*len + n + 1 > *cap) {
        size_t c = *cap ? *cap : 4096;
        while (c < *len + n + 1) c *= 2;
        char *p = realloc(*buf, c);
        if (!p) return 0;
        *buf = p;
        *cap = c;
    }
    memcpy(*buf + *len, data, n);
    *len += n;
    (*buf)[*len] = 0;
    return 1;
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *ud)
{
    struct http_transfer *t = ud;
    size_t n = size * nmemb;
    if (t->body_len + n > t->max_body) { t->too_big = 1; return 0; }
    return grow(&t->body, &t->body_len, &t->body_cap, data, n) ? n : 0;
}

static size_t on_header(char *data, size_t size, size_t nmemb, void *ud)
{
    struct http_transfer *t = ud;
    size_t n = size * nmemb;
    /* a new status line (redirect, 100-continue) starts a new header block */
    if (n >= 5 && strncmp(data, "HTTP/", 5) == 0) t->hdr_len = 0;
    if (t->hdr_len + n > 1024 * 1024) return 0;
    return grow(&t->resp_headers, &t->hdr_len, &t->hdr_cap, data, n) ? n : 0;
}

/* libcurl calls this about once a second even while nothing moves: the
 * progress line (progress.c) then says what we are waiting for.  The host
 * only, never the path or query (they may carry tokens). */
static int on_progress(void *ud, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow)
{
    (void)dltotal; (void)dlnow; (void)ultotal; (void)ulnow;
    if (!fluence_progress_due()) return 0;
    struct http_transfer *t = ud;
    char *url = NULL, host[80] = "";
    double secs = 0;
    curl_easy_getinfo(t->easy, CURLINFO_EFFECTIVE_URL, &url);
    curl_easy_getinfo(t->easy, CURLINFO_TOTAL_TIME, &secs);
    if (url) {
        size_t keep, from, end;
        http_url_shown(url, &keep, &from, &end);
        size_t n = strcspn(url + from, "/?#");
        if (n > end - from) n = end - from;
        if (n >= sizeof host) n = sizeof host - 1;
        memcpy(host, url + from, n);
        host[n] = 0;
    }
    fluence_progress_waiting(host, secs);
    return 0;
}

void http_url_shown(const char *url, size_t *keep, size_t *from, size_t *end)
{
    const char *scheme = strstr(url, "://");
    /* a scheme is letters, digits, + - . before "://"; else no scheme */
    if (scheme) {
        for (const char *p = url; p < scheme; p++)
            if (!(isalnum((unsigned char)*p) || *p == '+' || *p == '-' || *p == '.')) { scheme = NULL; break; }
    }
    size_t auth = scheme ? (size_t)(scheme - url) + 3 : 0;
    size_t auth_end = auth + strcspn(url + auth, "/?#");
    size_t host = auth;
    for (size_t i = auth; i < auth_end; i++) if (url[i] == '@') host = i + 1;   /* the last '@' */
    *keep = auth;
    *from = host;
    *end = host + strcspn(url + host, "?#");
}

const char *http_push_url_shown(lua_State *L, const char *url)
{
    size_t keep, from, end;
    http_url_shown(url, &keep, &from, &end);
    lua_pushlstring(L, url, keep);
    lua_pushlstring(L, url + from, end - from);
    lua_concat(L, 2);
    return lua_tostring(L, -1);
}

/* The numbers may come from a plugin's request table: out of range (or
 * NaN), casting them to long or size_t would be undefined behaviour. */
static void check_range(lua_State *L, const char *key, double v, double max)
{
    if (!(v >= 0 && v <= max)) luaL_error(L, "http request: %s must be a number from 0 to %I", key, (lua_Integer)max);
}

struct http_transfer *http_transfer_new(lua_State *L, const char *url, double timeout,
                                        double connect_timeout, double max_body)
{
    /* 1e9 s (31 years) is beyond any wait and keeps milliseconds inside a
     * long.  A total timeout of 0 would be none at all for libcurl: every
     * transfer has one, of at least a millisecond. */
    check_range(L, "timeout", timeout, 1e9);
    if (timeout == 0) luaL_error(L, "http request: timeout must be more than 0 seconds (every request has a limit)");
    check_range(L, "connect_timeout", connect_timeout, 1e9);
    check_range(L, "max_body", max_body, 0x1p53);
    lazylib_curl(L);
    struct http_transfer *t = lua_newuserdatauv(L, sizeof *t, 1);
    memset(t, 0, sizeof *t);
    if (luaL_newmetatable(L, TRANSFER_MT)) {
        lua_pushcfunction(L, transfer_gc);
        lua_setfield(L, -2, "__gc");
    }
    lua_setmetatable(L, -2);
    if (!(t->easy = curl_easy_init())) luaL_error(L, "cannot create a curl handle");
    t->max_body = (size_t)max_body;
    CURL *e = t->easy;
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, t->errbuf);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)ceil(timeout * 1000));
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)ceil(connect_timeout * 1000));
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, t);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, t);
    curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");
    curl_easy_setopt(e, CURLOPT_USERAGENT, "fluence/" FLUENCE_VERSION);
    curl_easy_setopt(e, CURLOPT_NOPROXY, "*");
    curl_easy_setopt(e, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(e, CURLOPT_XFERINFODATA, t);
    curl_easy_setopt(e, CURLOPT_NOPROGRESS, 0L);
    return t;
}

int http_transfer_header(struct http_transfer *t, const char *line)
{
    struct curl_slist *n = curl_slist_append(t->headers, line);
    if (!n) return 0;
    t->headers = n;
    return 1;
}

int http_transfer_connect_to(struct http_transfer *t, const char *entry)
{
    struct curl_slist *n = curl_slist_append(t->connect_to, entry);
    if (!n) return 0;
    t->connect_to = n;
    return 1;
}

int http_transfer_result(lua_State *L, struct http_transfer *t, CURLcode rc, const char *what)
{
    if (rc != CURLE_OK) {
        lua_pushnil(L);
        if (t->too_big)
            lua_pushfstring(L, "%s: answer larger than %I bytes", what, (lua_Integer)t->max_body);
        else
            lua_pushfstring(L, "%s: %s", what, t->errbuf[0] ? t->errbuf : curl_easy_strerror(rc));
        return 2;
    }
    long status = 0;
    double secs = 0;
    curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_getinfo(t->easy, CURLINFO_TOTAL_TIME, &secs);
    lua_createtable(L, 0, 4);
    lua_pushinteger(L, status);
    lua_setfield(L, -2, "status");
    lua_pushnumber(L, secs);
    lua_setfield(L, -2, "time");
    lua_pushlstring(L, t->body ? t->body : "", t->body_len);
    lua_setfield(L, -2, "body");
    lua_newtable(L);
    const char *p = t->resp_headers, *end = p ? p + t->hdr_len : NULL;
    while (p && p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        const char *lend = eol ? eol : end;
        const char *colon = memchr(p, ':', (size_t)(lend - p));
        if (colon && strncmp(p, "HTTP/", 5) != 0) {
            luaL_Buffer b;
            luaL_buffinit(L, &b);
            for (const char *q = p; q < colon; q++) luaL_addchar(&b, (char)(*q >= 'A' && *q <= 'Z' ? *q + 32 : *q));
            luaL_pushresult(&b);
            const char *v = colon + 1, *ve = lend;
            while (v < ve && (*v == ' ' || *v == '\t')) v++;
            while (ve > v && (ve[-1] == '\r' || ve[-1] == ' ')) ve--;
            lua_pushlstring(L, v, (size_t)(ve - v));
            lua_rawset(L, -3);
        }
        p = eol ? eol + 1 : end;
    }
    lua_setfield(L, -2, "headers");
    return 1;
}

void http_transfer_run_all(lua_State *L, int transfers, int results, lua_Integer n, long max_parallel,
                           http_transfer_what what, void *ud)
{
    transfers = lua_absindex(L, transfers);
    results = lua_absindex(L, results);
    CURLM *multi = curl_multi_init();
    if (!multi) luaL_error(L, "cannot create a curl multi handle");
    if (max_parallel > 0) curl_multi_setopt(multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, max_parallel);
    curl_multi_setopt(multi, CURLMOPT_PIPELINING, (long)CURLPIPE_MULTIPLEX);
    for (lua_Integer i = 1; i <= n; i++) {
        if (lua_rawgeti(L, transfers, i) != LUA_TNIL) {
            struct http_transfer *t = lua_touserdata(L, -1);
            curl_easy_setopt(t->easy, CURLOPT_PRIVATE, (void *)(intptr_t)i);
            curl_multi_add_handle(multi, t->easy);
        }
        lua_pop(L, 1);
    }
    int running = 1;
    while (running) {
        CURLMcode mc = curl_multi_perform(multi, &running);
        if (mc == CURLM_OK && running) mc = curl_multi_poll(multi, NULL, 0, 1000, NULL);
        if (mc != CURLM_OK) break;
    }
    CURLMsg *msg;
    int left;
    while ((msg = curl_multi_info_read(multi, &left))) {
        if (msg->msg != CURLMSG_DONE) continue;
        void *priv = NULL;
        curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &priv);
        lua_Integer i = (lua_Integer)(intptr_t)priv;
        lua_rawgeti(L, transfers, i);
        struct http_transfer *t = lua_touserdata(L, -1);
        int top = lua_gettop(L);
        what(L, i, t, ud);
        int k = http_transfer_result(L, t, msg->data.result, lua_tostring(L, -1));
        if (k == 2) {                              /* nil, message -> {error = message} */
            lua_createtable(L, 0, 1);
            lua_insert(L, -2);
            lua_setfield(L, -2, "error");
            lua_remove(L, -2);
        }
        lua_rawseti(L, results, i);
        lua_settop(L, top - 1);
    }
    for (lua_Integer i = 1; i <= n; i++) {
        if (lua_rawgeti(L, transfers, i) != LUA_TNIL) {
            struct http_transfer *t = lua_touserdata(L, -1);
            curl_multi_remove_handle(multi, t->easy);
            http_transfer_free(t);
        }
        lua_pop(L, 1);
        if (lua_rawgeti(L, results, i) == LUA_TNIL) {     /* never finished: say so */
            lua_pop(L, 1);
            lua_createtable(L, 0, 1);
            lua_pushliteral(L, "transfer did not complete");
            lua_setfield(L, -2, "error");
            lua_rawseti(L, results, i);
        } else lua_pop(L, 1);
    }
    curl_multi_cleanup(multi);
}
