/* fluence.cachefile — the files fluence keeps for itself (the price cache,
 * lua/fluence/price_cache.lua): written whole and atomically, read bounded.
 *
 *   cachefile.write(path, data) -> true | nil, "path: reason"
 *       data goes to a new file beside path (mkstemp: a name no other run
 *       uses, mode 0600), every byte written and synced, then renamed over
 *       path.  A reader sees the old file or the new one, never part of one;
 *       runs writing the same path at once each rename a whole file and the
 *       last one wins.  The temporary file is removed on any failure.
 *   cachefile.read(path, limit) -> data | nil, "path: reason", missing
 *       a regular file only (a FIFO or a device put there is refused, not
 *       waited on), at most limit bytes; missing is true when there is no
 *       such file (a cache miss, not a problem worth a note).
 *   cachefile.path(dir, provider, key) -> "dir/PROVIDER/KEY-HASH.json"
 *       the file of one cache entry: provider and key with every byte but
 *       [A-Za-z0-9.-] made '_' (the key cut to 80 bytes), HASH the 32-bit
 *       FNV-1a of provider .. "\0" .. key in 8 hex digits -- the names the
 *       cache has always had, made here rather than byte by byte in Lua
 *       (where a price provider's clock ran: a warm cache's lookups were
 *       a tenth of a select).
 *   cachefile.mkdirs(path) -> true | nil, "path: reason"
 *       path and every missing directory above it, mode 0700 (less the
 *       umask).
 *
 * Lua can neither create a file exclusively nor rename over one safely
 * without this: io.open has no O_EXCL, and two runs writing through one
 * temporary name would interleave. */
#include <errno.h>
#include <stdint.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <lauxlib.h>
#include "readfile.h"

static void add_safe(luaL_Buffer *b, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        int keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-';
        luaL_addchar(b, keep ? (char)c : '_');
    }
}

static uint32_t fnv1a(uint32_t h, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 16777619u;
    return h;
}

static int cachefile_path(lua_State *L)
{
    size_t dl, pl, kl;
    const char *dir = luaL_checklstring(L, 1, &dl);
    const char *provider = luaL_checklstring(L, 2, &pl);
    const char *key = luaL_checklstring(L, 3, &kl);
    uint32_t h = fnv1a(2166136261u, provider, pl);
    h = fnv1a(h, "", 1);                        /* the NUL between them */
    h = fnv1a(h, key, kl);
    char hex[16];
    snprintf(hex, sizeof hex, "-%08x.json", h);
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    luaL_addlstring(&b, dir, dl);
    luaL_addchar(&b, '/');
    add_safe(&b, provider, pl);
    luaL_addchar(&b, '/');
    add_safe(&b, key, kl < 80 ? kl : 80);
    luaL_addstring(&b, hex);
    luaL_pushresult(&b);
    return 1;
}

static int fail(lua_State *L, const char *path, int err)
{
    lua_pushnil(L);
    lua_pushfstring(L, "%s: %s", path, strerror(err));
    return 2;
}

static int write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return errno;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static int cachefile_write(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    size_t len;
    const char *data = luaL_checklstring(L, 2, &len);
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    luaL_addstring(&b, path);
    luaL_addstring(&b, ".XXXXXX");
    luaL_pushresult(&b);
    /* mkstemp writes into the name: a copy of it, owned by Lua (nothing
     * to free when a later push raises) */
    size_t tlen;
    const char *tmpl = lua_tolstring(L, -1, &tlen);
    char *tmp = lua_newuserdatauv(L, tlen + 1, 0);
    memcpy(tmp, tmpl, tlen + 1);
    int fd = mkstemp(tmp);
    if (fd < 0) return fail(L, path, errno);
    int err = write_all(fd, data, len);
    if (!err && fsync(fd) != 0) err = errno;
    if (close(fd) != 0 && !err) err = errno;
    if (!err && rename(tmp, path) != 0) err = errno;
    if (err) {
        unlink(tmp);
        return fail(L, path, err);
    }
    lua_pushboolean(L, 1);
    return 1;
}

static int cachefile_read(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    lua_Integer limit = luaL_checkinteger(L, 2);
    luaL_argcheck(L, limit >= 0, 2, "a limit in bytes");
    char *data;
    size_t len;
    char why[FLUENCE_READ_WHY];
    int err = fluence_readfile(path, (size_t)limit, FLUENCE_READ_REGULAR, &data, &len, why);
    if (err) {
        lua_pushnil(L);
        fluence_push_read_error(L, path, why);
        lua_pushboolean(L, err == ENOENT);
        return 3;
    }
    lua_pushlstring(L, data, len);       /* (a failure to allocate leaks data: at exit only) */
    free(data);
    return 1;
}

static int cachefile_mkdirs(lua_State *L)
{
    size_t len;
    const char *path = luaL_checklstring(L, 1, &len);
    char *p = lua_newuserdatauv(L, len + 1, 0);   /* Lua's: freed by the collector */
    memcpy(p, path, len + 1);
    int err = 0;
    /* each prefix ending before a '/', then the whole path; the message
     * names the directory that could not be made */
    for (size_t i = 1; i <= len && !err; i++) {
        if (i < len && p[i] != '/') continue;
        char c = p[i];
        p[i] = '\0';
        if (mkdir(p, 0700) != 0 && errno != EEXIST) err = errno;
        else {
            struct stat st;
            if (stat(p, &st) != 0) err = errno;
            else if (!S_ISDIR(st.st_mode)) err = ENOTDIR;
        }
        if (!err) p[i] = c;
    }
    if (err) return fail(L, p, err);
    lua_pushboolean(L, 1);
    return 1;
}

int luaopen_fluence_cachefile(lua_State *L)
{
    static const luaL_Reg funcs[] = {
        {"write", cachefile_write}, {"read", cachefile_read}, {"mkdirs", cachefile_mkdirs},
        {"path", cachefile_path}, {NULL, NULL}
    };
    luaL_newlib(L, funcs);
    return 1;
}
