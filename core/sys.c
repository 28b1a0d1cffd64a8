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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <lauxlib.h>
#include "embed.h"
#include "exitcode.h"
#include "escape.h"
#include "location.h"
#include "output.h"
#include "readfile.h"

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

/* read_file(path [, {limit = bytes, regular = true}]) -> data | nil,
 * "path: reason" (readfile.h: the one bounded read).  "-" reads stdin.  A
 * directory is an error here, not an empty string; so is a file over the
 * limit (default FLUENCE_READ_LIMIT, for any file but a manifest:
 * max_input() is a manifest's).  regular: a regular file only, opened
 * without blocking (a FIFO or a device refused; /dev/null read as empty). */
static int sys_read_file(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    lua_Integer limit = (lua_Integer)FLUENCE_READ_LIMIT;
    int flags = 0;
    if (!lua_isnoneornil(L, 2)) {
        luaL_checktype(L, 2, LUA_TTABLE);
        lua_getfield(L, 2, "limit");
        limit = luaL_optinteger(L, -1, limit);
        luaL_argcheck(L, limit >= 0, 2, "limit: a number of bytes");
        if (lua_getfield(L, 2, "regular") != LUA_TNIL && lua_toboolean(L, -1)) flags |= FLUENCE_READ_REGULAR;
        lua_pop(L, 2);
    }
    char *data, why[FLUENCE_READ_WHY];
    size_t len;
    if (fluence_readfile(path, (size_t)limit, flags, &data, &len, why) != 0) {
        lua_pushnil(L);
        fluence_push_read_error(L, path, why);
        return 2;
    }
    lua_pushlstring(L, data, len);       /* (a failure to allocate leaks data: at exit only) */
    free(data);
    return 1;
}

/* max_input() -> bytes: the size limit of a manifest (FLUENCE_MAX_INPUT) */
static int sys_max_input(lua_State *L)
{
    lua_pushinteger(L, (lua_Integer)fluence_max_input());
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

/* write(fd, ...) writes strings to 1 (stdout) or 2 (stderr), all or error
 * (output.h: a failure on stdout also fails the run at exit).  What goes to
 * stderr is for a terminal: its control characters are escaped (escape.h),
 * lines and tabs kept; stdout carries data (manifests, JSON) and is written
 * as it is. */
static int sys_write(lua_State *L)
{
    int fd = (int)luaL_checkinteger(L, 1);
    luaL_argcheck(L, fd == 1 || fd == 2, 1, "only 1 or 2");
    int top = lua_gettop(L);
    for (int i = 2; i <= top; i++) {
        size_t len;
        const char *s = luaL_checklstring(L, i, &len);
        if (fd == 2 && fluence_needs_escape(s, len, FLUENCE_ESC_KEEP_LINES)) {
            luaL_checkstack(L, 1, "write");
            fluence_push_escaped(L, s, len, FLUENCE_ESC_KEEP_LINES);
            s = lua_tolstring(L, -1, &len);
        }
        int err = fluence_write(fd, s, len);
        if (err) {
            lua_pushnil(L);
            lua_pushstring(L, strerror(err));
            return 2;
        }
    }
    lua_pushboolean(L, 1);
    return 1;
}

/* quote(s) -> s in double quotes, escaped as Go's %q (escape.h): for a
 * string from outside shown in a message */
static int sys_quote(lua_State *L)
{
    size_t len;
    const char *s = luaL_checklstring(L, 1, &len);
    fluence_push_escaped(L, s, len, FLUENCE_ESC_QUOTE);
    return 1;
}

/* escape(s [, keep_lines]) -> s with its control characters (newlines too)
 * escaped, so that it stays on one line, without quotes; keep_lines: a text
 * of several lines, its newlines and tabs kept */
static int sys_escape(lua_State *L)
{
    size_t len;
    const char *s = luaL_checklstring(L, 1, &len);
    fluence_push_escaped(L, s, len, lua_toboolean(L, 2) ? FLUENCE_ESC_KEEP_LINES : 0);
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
    const struct fluence_embedded *e = fluence_embedded_find(path);
    if (e) lua_pushlstring(L, e->data, e->len); else lua_pushnil(L);
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
    {"max_input", sys_max_input},
    {"write_file", sys_write_file},
    {"kind", sys_kind},
    {"list_dir", sys_list_dir},
    {"mkdir", sys_mkdir},
    {"write", sys_write},
    {"quote", sys_quote},
    {"escape", sys_escape},
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
        {"OUTPUT", FLUENCE_EXIT_OUTPUT},
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
