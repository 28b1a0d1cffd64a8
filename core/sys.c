/* fluence.sys — the small operating-system surface the Lua side needs:
 * environment, files and directories, stdout/stderr, clocks, the embedded
 * sources, located error messages and the named exit codes.
 *
 * Plugins never see this module; they get the narrower API of
 * lua/fluence/plugin_api.lua. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <lauxlib.h>
#include "embed.h"
#include "exitcode.h"
#include "location.h"
#include "sys.h"

/* getenv(name) -> string | nil */
static int sys_getenv(lua_State *L)
{
    const char *v = getenv(luaL_checkstring(L, 1));
    if (v) lua_pushstring(L, v); else lua_pushnil(L);
    return 1;
}

static int push_errno(lua_State *L, const char *path, int err)
{
    lua_pushnil(L);
    lua_pushfstring(L, "%s: %s", path, strerror(err));
    return 2;
}

/* Inputs larger than this are refused rather than read: a hostile or
 * mistaken 1 GB manifest must fail fast with a clear message, not exhaust
 * memory.  FLUENCE_MAX_INPUT (bytes) changes it. */
#define DEFAULT_MAX_INPUT (512L * 1024 * 1024)

static size_t max_input(void)
{
    const char *v = getenv("FLUENCE_MAX_INPUT");
    long long n = v && *v ? strtoll(v, NULL, 10) : 0;
    return n > 0 ? (size_t)n : (size_t)DEFAULT_MAX_INPUT;
}

/* Reads a whole file (or stdin) into a buffer, at most max bytes.  Returns 0,
 * errno, or EFBIG when there is more. */
static int slurp(int fd, luaL_Buffer *b, size_t max)
{
    size_t total = 0;
    for (;;) {
        char *p = luaL_prepbuffsize(b, 65536);
        ssize_t n = read(fd, p, 65536);
        if (n < 0) { if (errno == EINTR) continue; return errno; }
        if (n == 0) return 0;
        total += (size_t)n;
        if (total > max) return EFBIG;
        luaL_addsize(b, (size_t)n);
    }
}

static int push_too_big(lua_State *L, const char *path, size_t max)
{
    lua_pushnil(L);
    lua_pushfstring(L, "%s: larger than %d MiB (FLUENCE_MAX_INPUT sets the limit in bytes)",
                    path, (int)(max / (1024 * 1024)));
    return 2;
}

static int read_regular(lua_State *L, const char *path, int opts);

/* read_file(path [, opts]) -> data | nil, "path: reason".  "-" reads stdin.
 * A directory is an error here, not an empty string; so is an input over the
 * size limit.  opts.regular: only a regular file (sys_read_regular), at most
 * opts.max bytes (default: the input limit). */
static int sys_read_file(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    if (lua_istable(L, 2)) {
        lua_getfield(L, 2, "regular");
        int regular = lua_toboolean(L, -1);
        lua_pop(L, 1);
        if (regular) return read_regular(L, path, 2);
    }
    size_t max = max_input();
    int fd = strcmp(path, "-") == 0 ? 0 : open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return push_errno(L, path, errno);
    struct stat st;
    if (fstat(fd, &st) == 0) {
        if (S_ISDIR(st.st_mode) || (S_ISREG(st.st_mode) && (size_t)st.st_size > max)) {
            if (fd) close(fd);
            if (S_ISDIR(st.st_mode)) {
                lua_pushnil(L);
                lua_pushfstring(L, "%s: is a directory", path);
                return 2;
            }
            return push_too_big(L, strcmp(path, "-") == 0 ? "<stdin>" : path, max);
        }
    }
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    int err = slurp(fd, &b, max);
    if (fd) close(fd);
    if (err == EFBIG) return push_too_big(L, strcmp(path, "-") == 0 ? "<stdin>" : path, max);
    if (err) return push_errno(L, path, err);
    luaL_pushresult(&b);
    return 1;
}

/* What a file that is not regular is, for messages. */
static const char *file_type(mode_t m)
{
    return S_ISFIFO(m) ? "a FIFO" : S_ISCHR(m) ? "a character device" : S_ISBLK(m) ? "a block device"
         : S_ISSOCK(m) ? "a socket" : "not a plain file";
}

static void say_limit(char *why, size_t whylen, size_t max)
{
    if (max % (1024 * 1024) == 0) snprintf(why, whylen, "larger than %zu MiB", max / (1024 * 1024));
    else snprintf(why, whylen, "larger than %zu bytes", max);
}

/* The device number of /dev/null (0 when there is none) */
static dev_t null_dev(void)
{
    struct stat st;
    return stat("/dev/null", &st) == 0 && S_ISCHR(st.st_mode) ? st.st_rdev : 0;
}

char *sys_read_regular(const char *path, size_t max, size_t *len, char *why, size_t whylen)
{
    char scratch[8];
    if (!why || !whylen) { why = scratch; whylen = sizeof scratch; }
    why[0] = 0;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        int e = errno;
        snprintf(why, whylen, "%s", strerror(e));
        errno = e;
        return NULL;
    }
    struct stat st;
    int err = 0;
    if (fstat(fd, &st) != 0) err = errno;
    else if (S_ISDIR(st.st_mode)) { err = EISDIR; snprintf(why, whylen, "is a directory"); }
    else if (S_ISCHR(st.st_mode) && st.st_rdev == null_dev()) {
        /* /dev/null (under any name) reads as empty: KUBECONFIG=/dev/null
         * is a common way to say "no configuration" */
        close(fd);
        char *empty = calloc(1, 1);
        if (!empty) { snprintf(why, whylen, "%s", strerror(ENOMEM)); errno = ENOMEM; return NULL; }
        if (len) *len = 0;
        return empty;
    } else if (!S_ISREG(st.st_mode)) {
        err = EINVAL;
        snprintf(why, whylen, "not a regular file (%s)", file_type(st.st_mode));
    } else if ((uintmax_t)st.st_size > (uintmax_t)max) { err = EFBIG; say_limit(why, whylen, max); }
    if (err) {
        close(fd);
        if (!why[0]) snprintf(why, whylen, "%s", strerror(err));
        errno = err;
        return NULL;
    }
    /* the size fstat gave, plus room to see that the file goes on (it may
     * grow, or be a /proc file that says 0) */
    size_t cap = (size_t)st.st_size + 1 < 4096 ? 4096 : (size_t)st.st_size + 1, n = 0;
    if (cap > max + 1 && max + 1 > (size_t)st.st_size) cap = max + 1;
    char *buf = malloc(cap);
    while (buf) {
        if (n + 1 == cap) {                 /* full: more than fstat said */
            if (n > max) break;
            size_t nc = cap > max / 2 ? max + 2 : cap * 2;
            char *grown = malloc(nc);
            if (grown) memcpy(grown, buf, n);
            explicit_bzero(buf, n);
            free(buf);
            buf = grown;
            cap = nc;
            continue;
        }
        ssize_t r = read(fd, buf + n, cap - 1 - n);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) { err = errno; break; }
        if (r == 0) break;
        n += (size_t)r;
    }
    close(fd);
    if (!buf) err = ENOMEM;
    else if (!err && n > max) { err = EFBIG; say_limit(why, whylen, max); }
    if (err) {
        if (buf) { explicit_bzero(buf, n); free(buf); }
        if (!why[0]) snprintf(why, whylen, "%s", strerror(err));
        errno = err;
        return NULL;
    }
    buf[n] = 0;
    if (len) *len = n;
    return buf;
}

/* read_file(path, {regular = true, max = bytes}): sys_read_regular, for the
 * files that must not be a FIFO or a device.  Lua strings cannot be wiped:
 * never for a secret. */
static int read_regular(lua_State *L, const char *path, int opts)
{
    lua_getfield(L, opts, "max");
    lua_Integer max = luaL_optinteger(L, -1, (lua_Integer)max_input());
    lua_pop(L, 1);
    luaL_argcheck(L, max >= 0, 2, "max must not be negative");
    char why[128];
    size_t len;
    char *data = sys_read_regular(path, (size_t)max, &len, why, sizeof why);
    if (!data) {
        lua_pushnil(L);
        lua_pushfstring(L, "%s: %s", path, why);
        return 2;
    }
    lua_pushlstring(L, data, len);         /* may raise: data is then lost, at exit */
    free(data);
    return 1;
}

/* write_file(path, data) -> true | nil, err  (atomic: temp file + rename) */
static int sys_write_file(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    size_t len;
    const char *data = luaL_checklstring(L, 2, &len);
    FILE *f = fopen(path, "wb");
    if (!f) return push_errno(L, path, errno);
    size_t n = fwrite(data, 1, len, f);
    int err = ferror(f) ? errno : 0;
    if (fclose(f) != 0 && !err) err = errno;
    if (n != len || err) return push_errno(L, path, err ? err : EIO);
    lua_pushboolean(L, 1);
    return 1;
}

/* mkdir(path) -> true | nil, "path: reason"  (mode 0755 less the umask; a
 * directory already there is fine: `fluence new` makes DIR/policies ...) */
static int sys_mkdir(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    struct stat st;
    int err = mkdir(path, 0755) == 0 ? 0 : errno;
    if (err == EEXIST) err = stat(path, &st) == 0 && S_ISDIR(st.st_mode) ? 0 : ENOTDIR;
    if (err) return push_errno(L, path, err);
    lua_pushboolean(L, 1);
    return 1;
}

/* kind(path) -> "file" | "dir" | "other", identity, is_link | nil
 * (of what path names, following symbolic links; identity "DEV:INODE" tells
 * two names of one file apart; is_link: path itself is a symbolic link) */
static int sys_kind(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    struct stat st;
    int link = lstat(path, &st) == 0 && S_ISLNK(st.st_mode);
    if (stat(path, &st) != 0) { lua_pushnil(L); return 1; }
    lua_pushstring(L, S_ISDIR(st.st_mode) ? "dir" : S_ISREG(st.st_mode) ? "file" : "other");
    lua_pushfstring(L, "%I:%I", (lua_Integer)st.st_dev, (lua_Integer)st.st_ino);
    lua_pushboolean(L, link);
    return 3;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* list_dir(path) -> sorted array of entry names (no . and ..) | nil, err */
static int sys_list_dir(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    DIR *d = opendir(path);
    if (!d) return push_errno(L, path, errno);
    size_t n = 0, cap = 16;
    char **names = malloc(cap * sizeof *names);
    struct dirent *de;
    while (names && (de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) continue;
        if (n == cap) {
            char **grown = realloc(names, (cap *= 2) * sizeof *names);
            if (!grown) break;
            names = grown;
        }
        if (!(names[n] = strdup(de->d_name))) break;
        n++;
    }
    closedir(d);
    if (!names) return luaL_error(L, "out of memory");
    qsort(names, n, sizeof *names, cmp_str);
    lua_createtable(L, (int)n, 0);
    for (size_t i = 0; i < n; i++) {
        lua_pushstring(L, names[i]);   /* may raise on OOM: names leak then, acceptable only at exit */
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    for (size_t i = 0; i < n; i++) free(names[i]);
    free(names);
    return 1;
}

/* write(fd, ...) writes strings to 1 (stdout) or 2 (stderr), all or error. */
static int sys_write(lua_State *L)
{
    int fd = (int)luaL_checkinteger(L, 1);
    luaL_argcheck(L, fd == 1 || fd == 2, 1, "only 1 or 2");
    int top = lua_gettop(L);
    for (int i = 2; i <= top; i++) {
        size_t len;
        const char *s = luaL_checklstring(L, i, &len);
        while (len > 0) {
            ssize_t w = write(fd, s, len);
            if (w < 0) {
                if (errno == EINTR) continue;
                lua_pushnil(L);
                lua_pushstring(L, strerror(errno));
                return 2;
            }
            s += w; len -= (size_t)w;
        }
    }
    lua_pushboolean(L, 1);
    return 1;
}

static int sys_isatty(lua_State *L)
{
    lua_pushboolean(L, isatty((int)luaL_checkinteger(L, 1)));
    return 1;
}

/* now() -> seconds since the epoch (float); monotonic() -> seconds (float) */
static int sys_now(lua_State *L)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    lua_pushnumber(L, (lua_Number)ts.tv_sec + ts.tv_nsec / 1e9);
    return 1;
}

static int sys_monotonic(lua_State *L)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    lua_pushnumber(L, (lua_Number)ts.tv_sec + ts.tv_nsec / 1e9);
    return 1;
}

/* rfc3339([seconds]) -> "2026-11-22T09:38:05Z".  SOURCE_DATE_EPOCH, when set,
 * fixes the clock so golden files and reproducible builds are possible. */
static int sys_rfc3339(lua_State *L)
{
    time_t t;
    const char *sde = getenv("SOURCE_DATE_EPOCH");
    if (!lua_isnoneornil(L, 1)) t = (time_t)luaL_checknumber(L, 1);
    else if (sde && *sde) t = (time_t)strtoll(sde, NULL, 10);
    else t = time(NULL);
    struct tm tm;
    char buf[32];
    gmtime_r(&t, &tm);
    strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    lua_pushstring(L, buf);
    return 1;
}

/* embedded(path) -> source | nil: a file compiled into the binary */
static int sys_embedded(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    for (const struct fluence_embedded *e = fluence_embedded_files; e->path; e++)
        if (strcmp(e->path, path) == 0) { lua_pushlstring(L, e->data, e->len); return 1; }
    lua_pushnil(L);
    return 1;
}

/* embedded_list(prefix) -> sorted array of embedded paths under prefix */
static int sys_embedded_list(lua_State *L)
{
    size_t plen;
    const char *prefix = luaL_optlstring(L, 1, "", &plen);
    lua_newtable(L);
    lua_Integer n = 0;
    for (const struct fluence_embedded *e = fluence_embedded_files; e->path; e++)
        if (strncmp(e->path, prefix, plen) == 0) {
            lua_pushstring(L, e->path);
            lua_rawseti(L, -2, ++n);
        }
    return 1;
}

/* home() -> $HOME, else the password database's entry, else nil */
static int sys_home(lua_State *L)
{
    const char *h = getenv("HOME");
    if (!h || !*h) {
        struct passwd *pw = getpwuid(getuid());
        h = pw ? pw->pw_dir : NULL;
    }
    if (h) lua_pushstring(L, h); else lua_pushnil(L);
    return 1;
}

/* locate(name, text, line, col, message) -> "name:line:col: message\n  src\n  ^" */
static int sys_locate(lua_State *L)
{
    const char *name = luaL_checkstring(L, 1);
    size_t len;
    const char *text = luaL_optlstring(L, 2, "", &len);
    lua_Integer line = luaL_checkinteger(L, 3), col = luaL_optinteger(L, 4, 0);
    const char *msg = luaL_checkstring(L, 5);
    fluence_push_located(L, name, text, len, line > 0 ? (size_t)line : 1,
                         col > 0 ? (size_t)col : 0, msg);
    return 1;
}

/* read_tty_line(prompt) -> line | nil: asks on the controlling terminal, so
 * --confirm works while stdin carries a manifest. */
static int sys_read_tty_line(lua_State *L)
{
    const char *prompt = luaL_checkstring(L, 1);
    FILE *tty = fopen("/dev/tty", "r+");
    if (!tty) { lua_pushnil(L); return 1; }
    fputs(prompt, tty);
    fflush(tty);
    char buf[256];
    char *r = fgets(buf, sizeof buf, tty);
    fclose(tty);
    if (!r) { lua_pushnil(L); return 1; }
    buf[strcspn(buf, "\r\n")] = 0;
    lua_pushstring(L, buf);
    return 1;
}

static const luaL_Reg sys_funcs[] = {
    {"getenv", sys_getenv},
    {"read_file", sys_read_file},
    {"write_file", sys_write_file},
    {"kind", sys_kind},
    {"list_dir", sys_list_dir},
    {"mkdir", sys_mkdir},
    {"write", sys_write},
    {"isatty", sys_isatty},
    {"now", sys_now},
    {"monotonic", sys_monotonic},
    {"rfc3339", sys_rfc3339},
    {"embedded", sys_embedded},
    {"embedded_list", sys_embedded_list},
    {"home", sys_home},
    {"locate", sys_locate},
    {"read_tty_line", sys_read_tty_line},
    {NULL, NULL}
};

int luaopen_fluence_sys(lua_State *L)
{
    luaL_newlib(L, sys_funcs);
    lua_createtable(L, 0, 6);
    static const struct { const char *name; int code; } codes[] = {
        {"OK", FLUENCE_EXIT_OK}, {"SELECT", FLUENCE_EXIT_SELECT},
        {"USAGE", FLUENCE_EXIT_USAGE}, {"INPUT", FLUENCE_EXIT_INPUT},
        {"CLUSTER", FLUENCE_EXIT_CLUSTER}, {"INTERNAL", FLUENCE_EXIT_INTERNAL},
    };
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
        lua_pushinteger(L, codes[i].code);
        lua_setfield(L, -2, codes[i].name);
    }
    lua_setfield(L, -2, "EXIT");
    lua_pushstring(L, FLUENCE_VERSION);
    lua_setfield(L, -2, "VERSION");
    return 1;
}
