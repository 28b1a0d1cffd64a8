/* Reading an outside file whole, bounded (see readfile.h). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <lua.h>
#include "exitcode.h"
#include "readfile.h"

#define DEFAULT_MAX_INPUT ((size_t)512 * 1024 * 1024)

size_t fluence_max_input(void)
{
    const char *v = getenv("FLUENCE_MAX_INPUT");
    long long n = v && *v ? strtoll(v, NULL, 10) : 0;
    return n > 0 ? (size_t)n : DEFAULT_MAX_INPUT;
}

static void drop(char *p, size_t n, int flags)
{
    if (p && (flags & FLUENCE_READ_SECRET)) explicit_bzero(p, n);
    free(p);
}

/* Grows *p (holding n bytes) to cap bytes; a secret is copied and the old
 * block wiped rather than realloc'd (realloc may leave a copy behind). */
static char *grow(char *p, size_t n, size_t cap, int flags)
{
    if (!(flags & FLUENCE_READ_SECRET)) return realloc(p, cap);
    char *q = malloc(cap);
    if (q && n) memcpy(q, p, n);
    if (q) drop(p, n, flags);
    return q;
}

/* What a file that is not regular is, for messages. */
static const char *file_type(mode_t m)
{
    return S_ISFIFO(m) ? "a FIFO" : S_ISCHR(m) ? "a character device" : S_ISBLK(m) ? "a block device"
         : S_ISSOCK(m) ? "a socket" : "not a plain file";
}

/* Is st /dev/null (under whatever name)? */
static int is_dev_null(const struct stat *st)
{
    struct stat n;
    return S_ISCHR(st->st_mode) && stat("/dev/null", &n) == 0 && S_ISCHR(n.st_mode) && n.st_rdev == st->st_rdev;
}

void fluence_read_reason(char *why, int err, mode_t type, size_t limit)
{
    if (!why) return;
    if (err == EISDIR) snprintf(why, FLUENCE_READ_WHY, "is a directory");
    else if (err == ENODEV) snprintf(why, FLUENCE_READ_WHY, "not a regular file (%s)", file_type(type));
    else if (err != EFBIG) snprintf(why, FLUENCE_READ_WHY, "%s", strerror(err));
    else {
        char n[48];
        if (limit % (1024 * 1024) == 0) snprintf(n, sizeof n, "%zu MiB", limit / (1024 * 1024));
        else snprintf(n, sizeof n, "%zu bytes", limit);
        snprintf(why, FLUENCE_READ_WHY, "larger than %s%s", n,
                 limit == fluence_max_input() ? " (FLUENCE_MAX_INPUT sets the limit in bytes)"
                 : limit == FLUENCE_READ_LIMIT ? ", the most fluence reads of a file that is not a manifest" : "");
    }
}

int fluence_readfile(const char *path, size_t limit, int flags, char **data, size_t *lenp, char *why)
{
    *data = NULL;
    *lenp = 0;
    if (why) why[0] = 0;
    int stdin_ = strcmp(path, "-") == 0, regular = flags & FLUENCE_READ_REGULAR;
    int fd = stdin_ ? 0 : open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | (regular ? O_NONBLOCK : 0));
    struct stat st;
    memset(&st, 0, sizeof st);
    if (fd < 0) { int err = errno; fluence_read_reason(why, err, st.st_mode, limit); return err; }
    int err = fstat(fd, &st) == 0 ? 0 : errno;
    if (!err && regular && is_dev_null(&st)) {     /* the one device taken: empty */
        close(fd);
        if (!(*data = calloc(1, 1))) { fluence_read_reason(why, ENOMEM, st.st_mode, limit); return ENOMEM; }
        return 0;
    }
    if (!err && S_ISDIR(st.st_mode)) err = EISDIR;
    else if (!err && regular && !S_ISREG(st.st_mode)) err = ENODEV;
    else if (!err && S_ISREG(st.st_mode) && (unsigned long long)st.st_size > limit) err = EFBIG;
    else if (err && !regular) err = 0;              /* no size hint: read on */
    if (err) {
        if (!stdin_) close(fd);
        fluence_read_reason(why, err, st.st_mode, limit);
        return err;
    }
    if (regular && !stdin_) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    /* a regular file's size + 1, so EOF is seen without growing (at least a
     * page: /proc and /sys files say 0) */
    size_t cap = S_ISREG(st.st_mode) ? (size_t)st.st_size + 1 : 65536;
    if (cap < 4096) cap = 4096;
    if (cap > limit + 1) cap = limit + 1;
    char *buf = malloc(cap);
    size_t len = 0;
    err = buf ? 0 : ENOMEM;
    while (!err) {
        if (len == cap) {
            /* one byte past the limit tells "too big" */
            if (len > limit) { err = EFBIG; break; }
            size_t ncap = cap > (limit + 1) / 2 ? limit + 1 : cap * 2;
            char *q = grow(buf, len, ncap, flags);
            if (!q) { err = ENOMEM; break; }
            buf = q;
            cap = ncap;
        }
        ssize_t n = read(fd, buf + len, cap - len);
        if (n < 0) { if (errno != EINTR) err = errno; continue; }
        if (n == 0) break;
        len += (size_t)n;
    }
    if (!err && len > limit) err = EFBIG;
    if (!stdin_) close(fd);
    if (!err && len == cap) {                 /* room for the NUL */
        char *q = grow(buf, len, len + 1, flags);
        if (!q) err = ENOMEM; else buf = q;
    }
    if (err) { drop(buf, cap, flags); fluence_read_reason(why, err, st.st_mode, limit); return err; }
    buf[len] = 0;
    *data = buf;
    *lenp = len;
    return 0;
}

const char *fluence_push_read_error(lua_State *L, const char *path, const char *why)
{
    return lua_pushfstring(L, "%s: %s", strcmp(path, "-") == 0 ? "<stdin>" : path, why);
}

/* ---- mapped files ---- */

#define MAX_MAPS 64
static struct { const char *start; size_t len; char path[512]; } maps[MAX_MAPS];
static volatile sig_atomic_t map_used[MAX_MAPS];

static void on_sigbus(int sig, siginfo_t *si, void *ctx)
{
    (void)ctx;
    const char *at = si ? (const char *)si->si_addr : NULL;
    for (int i = 0; i < MAX_MAPS; i++) {
        if (map_used[i] && at >= maps[i].start && at < maps[i].start + maps[i].len) {
            static const char a[] = "fluence: ", b[] = ": the file changed (was truncated) while it was being read\n";
            ssize_t r = write(2, a, sizeof a - 1);
            r = write(2, maps[i].path, strlen(maps[i].path));
            r = write(2, b, sizeof b - 1);
            (void)r;
            _exit(FLUENCE_EXIT_INPUT);
        }
    }
    signal(sig, SIG_DFL);                   /* not ours: as without the handler */
    raise(sig);
}

const char *fluence_map(int fd, size_t len, const char *path, int flags)
{
    static int installed;
    int slot = -1;
    for (int i = 0; i < MAX_MAPS; i++) if (!map_used[i]) { slot = i; break; }
    if (slot < 0 || len == 0) return NULL;
    if (!installed) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_sigbus;
        sa.sa_flags = SA_SIGINFO;
        sigemptyset(&sa.sa_mask);
        if (sigaction(SIGBUS, &sa, NULL) != 0) return NULL;
        installed = 1;
    }
    void *p = mmap(NULL, len, PROT_READ, MAP_PRIVATE | (flags & FLUENCE_MAP_POPULATE ? MAP_POPULATE : 0), fd, 0);
    if (p == MAP_FAILED) return NULL;
    if (!(flags & FLUENCE_MAP_POPULATE)) madvise(p, len, MADV_SEQUENTIAL);
    maps[slot].start = p;
    maps[slot].len = len;
    snprintf(maps[slot].path, sizeof maps[slot].path, "%s", path);
    map_used[slot] = 1;
    return p;
}

void fluence_release(const char *from, const char *to)
{
    long pg = sysconf(_SC_PAGESIZE);
    if (pg <= 0 || !from || to <= from) return;
    uintptr_t a = ((uintptr_t)from + (uintptr_t)pg - 1) & ~((uintptr_t)pg - 1);
    uintptr_t b = (uintptr_t)to & ~((uintptr_t)pg - 1);
    if (b > a) madvise((void *)a, b - a, MADV_DONTNEED);
}

void fluence_release_behind(const char *text, size_t *released, size_t at)
{
    if (at > *released + 2 * FLUENCE_RELEASE_LAG) {
        fluence_release(text + *released, text + at - FLUENCE_RELEASE_LAG);
        *released = at - FLUENCE_RELEASE_LAG;
    }
}

void fluence_unmap(const char *p, size_t len)
{
    if (!p) return;
    for (int i = 0; i < MAX_MAPS; i++)
        if (map_used[i] && maps[i].start == p) map_used[i] = 0;
    munmap((void *)p, len);
}
