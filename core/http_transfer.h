/* One libcurl transfer owned by a Lua userdata: the easy handle, its header
 * lists and the response buffers, freed by __gc or http_transfer_free (with
 * header lines wiped first: they may carry tokens).  Shared by fluence.http
 * (core/http.c) and the Kubernetes client (core/kube.c), which add
 * only their own options. */
#ifndef FLUENCE_HTTP_TRANSFER_H
#define FLUENCE_HTTP_TRANSFER_H
#include <stddef.h>
#include "lazylib.h"
#include <lua.h>

struct http_transfer {
    CURL *easy;
    struct curl_slist *headers, *connect_to;
    char *body, *resp_headers;
    size_t body_len, body_cap, hdr_len, hdr_cap, max_body;
    int too_big;
    char errbuf[CURL_ERROR_SIZE];
};

/* [-0, +1, e]  A new transfer with the common options set: URL, error
 * buffer, no signals, http(s) only, total and connect timeouts (seconds),
 * response callbacks (bodies over max_body fail), compression, user agent,
 * and no proxy from the environment (it would send credentials elsewhere).
 * Raises an error for a timeout outside 0..1e9 s or max_body outside 0..2^53. */
struct http_transfer *http_transfer_new(lua_State *L, const char *url, double timeout,
                                        double connect_timeout, double max_body);

/* Appends a request header line ("Name: value"); 0 when out of memory. */
int http_transfer_header(struct http_transfer *t, const char *line);

/* Appends a CURLOPT_CONNECT_TO entry; 0 when out of memory. */
int http_transfer_connect_to(struct http_transfer *t, const char *entry);

void http_transfer_free(struct http_transfer *t);

/* A URL as it may be shown or recorded (messages, -v logs, the progress
 * line, notes in the audit annotation): the one redaction of every URL
 * fluence shows.  Its userinfo (https://user:password@host: a password, or a
 * token as the user) and its query and fragment (tokens in parameters) are
 * left out; what stays is [0, *keep) and [*from, *end) of url, the host
 * starting at *from.  Works on text no URL parser takes. */
void http_url_shown(const char *url, size_t *keep, size_t *from, size_t *end);

/* [-0, +1]  Pushes url as http_url_shown makes it. */
const char *http_push_url_shown(lua_State *L, const char *url);

/* [-0, +1|+2, m]  After the transfer: pushes {status, time, body, headers
 * (lowercased names)} and returns 1, or pushes nil and "WHAT: reason" and
 * returns 2.  WHAT describes the request for the user: the caller makes sure
 * it holds no secret (no query string, no credentials). */
int http_transfer_result(lua_State *L, struct http_transfer *t, CURLcode rc, const char *what);

/* [-0, +0, m]  Performs every transfer of table `transfers` (indices 1..n; a
 * nil entry is skipped) at once on one curl multi handle, at most
 * max_parallel connections (0: no limit; multiplexed on HTTP/2), and stores
 * at results[i] the result table, or {error = message} (also for one that
 * never completed; an entry already in results is kept).  what(L, i, t, ud)
 * pushes the description of transfer i for messages.  Frees the transfers. */
typedef void (*http_transfer_what)(lua_State *L, lua_Integer i, struct http_transfer *t, void *ud);
void http_transfer_run_all(lua_State *L, int transfers, int results, lua_Integer n, long max_parallel,
                           http_transfer_what what, void *ud);

#endif
