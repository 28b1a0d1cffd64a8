/* libcurl and libcrypto loaded on first use (see lazylib.h). */
#define LAZYLIB_IMPLEMENTATION
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <lauxlib.h>
#include "lazylib.h"

struct lazylib_curl lazylib_curl_fn;
struct lazylib_crypto lazylib_crypto_fn;

static int curl_loaded, crypto_loaded;

/* Fills the pointers at table from the library's symbols; returns NULL or
 * the name of the first missing symbol. */
static const char *bind_symbols(void *lib, char *table, const char *const *names)
{
    for (size_t i = 0; names[i]; i++) {
        void *p = dlsym(lib, names[i]);
        if (!p) return names[i];
        memcpy(table + i * sizeof p, &p, sizeof p);   /* POSIX: dlsym's pointer is the function */
    }
    return NULL;
}

/* The release binary needs only libc (docs/install.md): on a machine
 * without the library the message names the package that brings it. */
static void load(lua_State *L, const char *what, const char *package, const char *const *sonames,
                 char *table, const char *const *names, int *loaded)
{
    if (*loaded) return;
    void *lib = NULL;
    char first[256] = "";   /* why the first soname failed: the one that matters */
    /* RTLD_LAZY: the functions of libcurl and of everything under it
     * (OpenSSL, nghttp2, LDAP, Kerberos ...) are bound when first called,
     * as a program linked with them is, not every one of them up front
     * (a select over HTTPS: 2.7 M instructions of its 42 M) */
    for (size_t i = 0; sonames[i] && !lib; i++) {
        lib = dlopen(sonames[i], RTLD_LAZY | RTLD_LOCAL);
        const char *why = lib ? NULL : dlerror();
        if (i == 0 && why) snprintf(first, sizeof first, "%s", why);
    }
    if (!lib) {
        luaL_error(L, "cannot load %s (%s): %s; install it (Debian, Ubuntu: apt-get install %s)",
                   what, sonames[0], first, package);
        return;
    }
    const char *missing = bind_symbols(lib, table, names);
    if (missing) luaL_error(L, "%s (%s) has no %s", what, sonames[0], missing);
    *loaded = 1;
}

/* The names in the order of the struct's members. */
static const char *const curl_names[] = {
    "curl_global_init", "curl_easy_init", "curl_easy_setopt", "curl_easy_perform",
    "curl_easy_getinfo", "curl_easy_cleanup", "curl_easy_strerror", "curl_slist_append",
    "curl_slist_free_all", "curl_free", "curl_url", "curl_url_set", "curl_url_get",
    "curl_url_cleanup", "curl_multi_init", "curl_multi_setopt", "curl_multi_add_handle",
    "curl_multi_remove_handle", "curl_multi_perform", "curl_multi_poll",
    "curl_multi_info_read", "curl_multi_cleanup", NULL
};
static const char *const crypto_names[] = {
    "HMAC", "EVP_sha256", "SHA256", "OPENSSL_cleanse", "RAND_bytes", NULL
};
static const char *const curl_sonames[] = { "libcurl.so.4", "libcurl.so", NULL };
static const char *const crypto_sonames[] = { "libcrypto.so.3", "libcrypto.so", NULL };

/* The tables are filled slot by slot: every member is a function pointer of
 * the same size, in the order of the names above. */
_Static_assert(sizeof lazylib_curl_fn == 22 * sizeof(void *), "curl table and names differ");
_Static_assert(sizeof lazylib_crypto_fn == 5 * sizeof(void *), "crypto table and names differ");

void lazylib_curl(lua_State *L)
{
    if (curl_loaded) return;
    load(L, "libcurl", "libcurl4", curl_sonames, (char *)&lazylib_curl_fn, curl_names, &curl_loaded);
    /* once, on first use: libcurl and OpenSSL under it initialise here */
    if (lazylib_curl_fn.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        curl_loaded = 0;
        luaL_error(L, "cannot initialise libcurl");
    }
}

void lazylib_crypto(lua_State *L)
{
    load(L, "libcrypto", "libssl3", crypto_sonames, (char *)&lazylib_crypto_fn, crypto_names, &crypto_loaded);
}
