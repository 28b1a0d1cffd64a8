/* fluence.http — HTTP(S) over libcurl for providers, the Kubernetes client
 * and the AWS client: one request, or many at once on one multi handle (total
 * time close to the slowest call, not the sum).
 *
 *   http.request(req) -> resp | nil, message
 *   http.request_many({req, ...} [, {max_parallel = 16}]) -> {resp | {error = message}, ...}
 *   http.url_shown(url) -> url without userinfo, query or fragment: how
 *                          every URL is shown or recorded (http_transfer.h)
 *
 * req:  url (required), method ("GET"), headers ({name = value} or {"N: v"}),
 *       body, timeout (total seconds, default 30), connect_timeout (10),
 *       ca_file, ca_data (PEM text), cert_file, key_file, cert_data, key_data,
 *       insecure (skip TLS verification), connect_to ({"host:port:host2:port2"}),
 *       max_body (bytes, default 64 MiB: a larger answer is an error).
 * resp: status, headers ({lowercased name = value}), body, time (seconds).
 *
 * Error messages carry curl's reason and the URL as url_shown makes it;
 * never header values (they may hold tokens). */
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "lazylib.h"
#include <lauxlib.h>

#include "http_transfer.h"

#define DEFAULT_MAX_BODY (64L * 1024 * 1024)

static const char *opt_string(lua_State *L, int req, const char *key)
{
    lua_getfield(L, req, key);
    const char *s = lua_isnil(L, -1) ? NULL : luaL_checkstring(L, -1);
    lua_pop(L, 1);   /* the string stays alive: it is referenced from req */
    return s;
}

static double opt_number(lua_State *L, int req, const char *key, double dflt)
{
    lua_getfield(L, req, key);
    double v = lua_isnil(L, -1) ? dflt : luaL_checknumber(L, -1);
    lua_pop(L, 1);
    return v;
}

static int opt_bool(lua_State *L, int req, const char *key)
{
    lua_getfield(L, req, key);
    int v = lua_toboolean(L, -1);
    lua_pop(L, 1);
    return v;
}

static void set_blob(CURL *easy, CURLoption opt, const char *data)
{
    struct curl_blob blob = { (void *)data, strlen(data), CURL_BLOB_COPY };
    curl_easy_setopt(easy, opt, &blob);
}

/* [-0, +1, e]  Builds a transfer userdata from the request table at req. */
static struct http_transfer *prepare(lua_State *L, int req)
{
    luaL_checktype(L, req, LUA_TTABLE);
    const char *url = opt_string(L, req, "url");
    if (!url) luaL_error(L, "http request without url");
    const char *method = opt_string(L, req, "method");
    double timeout = opt_number(L, req, "timeout", 30);
    double connect_timeout = opt_number(L, req, "connect_timeout", 10);
    double max_body = opt_number(L, req, "max_body", (double)DEFAULT_MAX_BODY);
    struct http_transfer *t = http_transfer_new(L, url, timeout, connect_timeout, max_body);
    lua_pushvalue(L, req);            /* keep the request's strings alive */
    lua_setiuservalue(L, -2, 1);
    CURL *e = t->easy;
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
    /* Waiting to multiplex only pays on HTTP/2 (TLS); on plain HTTP/1.1 it
     * would hold every request to a host until the first one answers. */
    if (strncasecmp(url, "https:", 6) == 0) curl_easy_setopt(e, CURLOPT_PIPEWAIT, 1L);

    lua_getfield(L, req, "body");
    if (!lua_isnil(L, -1)) {
        size_t blen;
        const char *body = luaL_checklstring(L, -1, &blen);
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)blen);
        curl_easy_setopt(e, CURLOPT_COPYPOSTFIELDS, body);
    }
    lua_pop(L, 1);
    if (method) curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
    if (method && strcmp(method, "HEAD") == 0) curl_easy_setopt(e, CURLOPT_NOBODY, 1L);

    lua_getfield(L, req, "headers");
    if (lua_istable(L, -1)) {
        lua_pushnil(L);
        while (lua_next(L, -2)) {
            const char *line;
            if (lua_type(L, -2) == LUA_TSTRING)
                line = lua_pushfstring(L, "%s: %s", lua_tostring(L, -2), luaL_checkstring(L, -1));
            else
                line = lua_pushstring(L, luaL_checkstring(L, -1));
            if (!http_transfer_header(t, line)) luaL_error(L, "not enough memory");
            lua_pop(L, 2);
        }
    }
    lua_pop(L, 1);
    /* curl adds "Expect: 100-continue" for large bodies: a needless round trip */
    if (!http_transfer_header(t, "Expect:")) luaL_error(L, "not enough memory");
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, t->headers);

    lua_getfield(L, req, "connect_to");
    if (lua_istable(L, -1)) {
        for (lua_Integer i = 1; lua_rawgeti(L, -1, i) == LUA_TSTRING; i++) {
            if (!http_transfer_connect_to(t, lua_tostring(L, -1))) luaL_error(L, "not enough memory");
            lua_pop(L, 1);
        }
        lua_pop(L, 1);
        curl_easy_setopt(e, CURLOPT_CONNECT_TO, t->connect_to);
    }
    lua_pop(L, 1);

    const char *s;
    if ((s = opt_string(L, req, "ca_file"))) curl_easy_setopt(e, CURLOPT_CAINFO, s);
    if ((s = opt_string(L, req, "ca_data"))) set_blob(e, CURLOPT_CAINFO_BLOB, s);
    if ((s = opt_string(L, req, "cert_file"))) curl_easy_setopt(e, CURLOPT_SSLCERT, s);
    if ((s = opt_string(L, req, "key_file"))) curl_easy_setopt(e, CURLOPT_SSLKEY, s);
    if ((s = opt_string(L, req, "cert_data"))) {
        set_blob(e, CURLOPT_SSLCERT_BLOB, s);
        curl_easy_setopt(e, CURLOPT_SSLCERTTYPE, "PEM");
    }
    if ((s = opt_string(L, req, "key_data"))) {
        set_blob(e, CURLOPT_SSLKEY_BLOB, s);
        curl_easy_setopt(e, CURLOPT_SSLKEYTYPE, "PEM");
    }
    if (opt_bool(L, req, "insecure")) {
        curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    return t;
}

/* The URL for messages (http_url_shown: no userinfo, no query). */
static void push_safe_url(lua_State *L, struct http_transfer *t)
{
    char *url = NULL;
    curl_easy_getinfo(t->easy, CURLINFO_EFFECTIVE_URL, &url);
    if (url) http_push_url_shown(L, url); else lua_pushliteral(L, "(url)");
}

static int http_url_shown_lua(lua_State *L)
{
    http_push_url_shown(L, luaL_checkstring(L, 1));
    return 1;
}

static int push_result(lua_State *L, struct http_transfer *t, CURLcode rc)
{
    push_safe_url(L, t);
    int n = http_transfer_result(L, t, rc, lua_tostring(L, -1));
    lua_remove(L, -n - 1);
    return n;
}

static int http_request(lua_State *L)
{
    struct http_transfer *t = prepare(L, 1);
    CURLcode rc = curl_easy_perform(t->easy);
    int n = push_result(L, t, rc);
    http_transfer_free(t);       /* now rather than at the next collection */
    return n;
}

static void what_url(lua_State *L, lua_Integer i, struct http_transfer *t, void *ud)
{
    (void)i;
    (void)ud;
    push_safe_url(L, t);
}

static int http_request_many(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    lazylib_curl(L);
    long max_parallel = 16;
    if (lua_istable(L, 2)) {
        lua_getfield(L, 2, "max_parallel");
        max_parallel = (long)luaL_optinteger(L, -1, 16);
        lua_pop(L, 1);
    }
    lua_settop(L, 1);
    lua_Integer n = (lua_Integer)luaL_len(L, 1);
    lua_createtable(L, (int)n, 0);                 /* 2: transfers */
    lua_createtable(L, (int)n, 0);                 /* 3: results */
    for (lua_Integer i = 1; i <= n; i++) {
        lua_rawgeti(L, 1, i);
        prepare(L, lua_gettop(L));
        lua_rawseti(L, 2, i);
        lua_pop(L, 1);
    }
    http_transfer_run_all(L, 2, 3, n, max_parallel, what_url, NULL);
    return 1;
}

int luaopen_fluence_http(lua_State *L)
{
    static const luaL_Reg funcs[] = {
        {"request", http_request}, {"request_many", http_request_many}, {"url_shown", http_url_shown_lua},
        {NULL, NULL}
    };
    luaL_newlib(L, funcs);
    return 1;
}
