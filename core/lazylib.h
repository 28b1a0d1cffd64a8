/* libcurl and libcrypto, loaded on first use with dlopen instead of linked.
 *
 * Why: linking libcurl alone cost ~15 ms at every start (it brings in 33
 * shared libraries and their relocations), more than everything else a
 * selection does, and most runs (an offline selection) make no request at
 * all.  Code that uses them includes this header instead of <curl/curl.h>
 * or the OpenSSL headers; the usual names are macros for the loaded
 * functions.  Call lazylib_curl(L) / lazylib_crypto(L) before the first use
 * (cheap once loaded; lazylib_curl also runs curl_global_init once); they
 * raise a clear error when the library is missing. */
#ifndef FLUENCE_LAZYLIB_H
#define FLUENCE_LAZYLIB_H
#define CURL_DISABLE_TYPECHECK 1
#include <curl/curl.h>
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <lua.h>

struct lazylib_curl {
    CURLcode (*global_init)(long);
    CURL *(*easy_init)(void);
    CURLcode (*easy_setopt)(CURL *, CURLoption, ...);
    CURLcode (*easy_perform)(CURL *);
    CURLcode (*easy_getinfo)(CURL *, CURLINFO, ...);
    void (*easy_cleanup)(CURL *);
    const char *(*easy_strerror)(CURLcode);
    struct curl_slist *(*slist_append)(struct curl_slist *, const char *);
    void (*slist_free_all)(struct curl_slist *);
    void (*free)(void *);
    CURLU *(*url)(void);
    CURLUcode (*url_set)(CURLU *, CURLUPart, const char *, unsigned int);
    CURLUcode (*url_get)(const CURLU *, CURLUPart, char **, unsigned int);
    void (*url_cleanup)(CURLU *);
    CURLM *(*multi_init)(void);
    CURLMcode (*multi_setopt)(CURLM *, CURLMoption, ...);
    CURLMcode (*multi_add_handle)(CURLM *, CURL *);
    CURLMcode (*multi_remove_handle)(CURLM *, CURL *);
    CURLMcode (*multi_perform)(CURLM *, int *);
    CURLMcode (*multi_poll)(CURLM *, struct curl_waitfd *, unsigned int, int, int *);
    CURLMsg *(*multi_info_read)(CURLM *, int *);
    CURLMcode (*multi_cleanup)(CURLM *);
};

struct lazylib_crypto {
    unsigned char *(*hmac)(const EVP_MD *, const void *, int, const unsigned char *, size_t,
                           unsigned char *, unsigned int *);
    const EVP_MD *(*evp_sha256)(void);
    unsigned char *(*sha256)(const unsigned char *, size_t, unsigned char *);
    void (*cleanse)(void *, size_t);
    int (*rand_bytes)(unsigned char *, int);
};

extern struct lazylib_curl lazylib_curl_fn;
extern struct lazylib_crypto lazylib_crypto_fn;

/* [-0, +0, e]  Loads the library once; raises on failure. */
void lazylib_curl(lua_State *L);
void lazylib_crypto(lua_State *L);

#ifndef LAZYLIB_IMPLEMENTATION
/* curl.h's own argument-count macros for these four */
#undef curl_easy_setopt
#undef curl_easy_getinfo
#undef curl_share_setopt
#undef curl_multi_setopt
#define curl_global_init (lazylib_curl_fn.global_init)
#define curl_easy_init (lazylib_curl_fn.easy_init)
#define curl_easy_setopt (lazylib_curl_fn.easy_setopt)
#define curl_easy_perform (lazylib_curl_fn.easy_perform)
#define curl_easy_getinfo (lazylib_curl_fn.easy_getinfo)
#define curl_easy_cleanup (lazylib_curl_fn.easy_cleanup)
#define curl_easy_strerror (lazylib_curl_fn.easy_strerror)
#define curl_slist_append (lazylib_curl_fn.slist_append)
#define curl_slist_free_all (lazylib_curl_fn.slist_free_all)
#define curl_free (lazylib_curl_fn.free)
#define curl_url (lazylib_curl_fn.url)
#define curl_url_set (lazylib_curl_fn.url_set)
#define curl_url_get (lazylib_curl_fn.url_get)
#define curl_url_cleanup (lazylib_curl_fn.url_cleanup)
#define curl_multi_init (lazylib_curl_fn.multi_init)
#define curl_multi_setopt (lazylib_curl_fn.multi_setopt)
#define curl_multi_add_handle (lazylib_curl_fn.multi_add_handle)
#define curl_multi_remove_handle (lazylib_curl_fn.multi_remove_handle)
#define curl_multi_perform (lazylib_curl_fn.multi_perform)
#define curl_multi_poll (lazylib_curl_fn.multi_poll)
#define curl_multi_info_read (lazylib_curl_fn.multi_info_read)
#define curl_multi_cleanup (lazylib_curl_fn.multi_cleanup)
#define HMAC (lazylib_crypto_fn.hmac)
#define EVP_sha256 (lazylib_crypto_fn.evp_sha256)
#define SHA256 (lazylib_crypto_fn.sha256)
#define OPENSSL_cleanse (lazylib_crypto_fn.cleanse)
#define RAND_bytes (lazylib_crypto_fn.rand_bytes)
#endif

#endif
