/* fluence.progress — the progress line's state and drawing, shared by Lua
 * (fluence.log's log.progress) and C transfer loops (progress.h), so both
 * draw the same one line.
 *
 *   progress.update(text)  the current operation's status; the clock starts
 *                          at the first update after a clear; drawn only on
 *                          a terminal once the operation has run for 1 s
 *   progress.update(nil)   erases the line and ends the operation
 *   progress.erase()       erases the line (before a verbose log line); the
 *                          next update or wait redraws it
 *   progress.due()         could an update now be drawn?  (Not before one
 *                          has started the clock, never off a terminal: a
 *                          caller updating per object need not format its
 *                          text 10,000 times for nobody.)
 *
 * A transfer that blocks calls fluence_progress_waiting() from libcurl's
 * progress callback (http_transfer.c), about once a second even when no
 * byte moves: the line then reads "TEXT (waiting for HOST, N s)".  Nothing
 * the callbacks reach raises or allocates.  The text is escaped when it is
 * set, the host when it is drawn (escape.h). */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <lauxlib.h>
#include "escape.h"
#include "progress.h"

#define DELAY 1.0           /* seconds before a progress line appears */
#define WIDTH 79            /* a wrapped line cannot be erased with \r */
#define CLEAR "\r\033[K"

static struct {
    char text[256];
    double started;         /* monotonic time of the operation's start */
    int active, tty, shown;
    long waited;            /* the seconds last drawn for a wait, -1: none */
} P = { .waited = -1 };

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void put(const char *s, size_t n)
{
    while (n > 0) {
        ssize_t w = write(2, s, n);
        if (w <= 0) return;            /* a progress line is not worth an error */
        s += w;
        n -= (size_t)w;
    }
}

static void erase(void)
{
    if (P.shown) put(CLEAR, sizeof CLEAR - 1);
    P.shown = 0;
}

/* Draws "fluence: TEXT[SUFFIX]" on one line: the text is cut ("...") so the
 * suffix always shows.  Both are escaped already. */
static void draw(const char *suffix)
{
    static const char head[] = CLEAR "fluence: ";
    char line[sizeof head + WIDTH];
    size_t hl = sizeof head - 1, sl = suffix ? strlen(suffix) : 0, tl = strlen(P.text);
    size_t room = WIDTH - (hl - (sizeof CLEAR - 1));           /* for text + suffix */
    if (sl > room) sl = room;
    memcpy(line, head, hl);
    size_t n = hl;
    if (tl + sl > room) {
        size_t keep = room - sl > 3 ? room - sl - 3 : 0;
        memcpy(line + n, P.text, keep);
        memcpy(line + n + keep, "...", 3);
        n += keep + 3;
    } else {
        memcpy(line + n, P.text, tl);
        n += tl;
    }
    if (sl) memcpy(line + n, suffix, sl);
    n += sl;
    put(line, n);
    P.shown = 1;
}

void fluence_progress_clear(void)
{
    erase();
    P.active = 0;
    P.waited = -1;
}

int fluence_progress_due(void)
{
    return P.active && P.tty && now() - P.started >= DELAY;
}

void fluence_progress_waiting(const char *host, double seconds)
{
    if (!fluence_progress_due()) return;
    long secs = (long)seconds;
    if (P.shown && secs == P.waited) return;
    P.waited = secs;
    char shown[68], suffix[128];
    if (host && *host) fluence_escape_into(shown, sizeof shown, host, strlen(host), 0);
    snprintf(suffix, sizeof suffix, " (waiting for %s, %ld s)", host && *host ? shown : "the network", secs);
    draw(suffix);
}

static int p_update(lua_State *L)
{
    if (lua_isnoneornil(L, 1)) {
        fluence_progress_clear();
        return 0;
    }
    size_t len;
    const char *s = luaL_checklstring(L, 1, &len);
    s = fluence_push_escaped(L, s, len, 0);          /* one line, whatever it names */
    len = lua_rawlen(L, -1);
    if (len >= sizeof P.text) len = sizeof P.text - 1;
    memcpy(P.text, s, len);
    P.text[len] = 0;
    if (!P.active) {
        P.active = 1;
        P.started = now();
        P.tty = isatty(2);
    }
    P.waited = -1;
    if (fluence_progress_due()) draw(NULL);
    return 0;
}

/* Before an operation has started the clock, an update is due only if it
 * could ever be drawn: off a terminal a caller would otherwise format its
 * first text (and load what it needs for that) for nobody.  Whether stderr
 * is a terminal is asked once; the first update asks again for P.tty. */
static int p_due(lua_State *L)
{
    static int stderr_tty = -1;
    if (!P.active && stderr_tty < 0) stderr_tty = isatty(2);
    lua_pushboolean(L, P.active ? fluence_progress_due() : stderr_tty);
    return 1;
}

static int p_erase(lua_State *L)
{
    (void)L;
    erase();
    return 0;
}

int luaopen_fluence_progress(lua_State *L)
{
    static const luaL_Reg funcs[] = {
        {"update", p_update}, {"erase", p_erase}, {"due", p_due}, {NULL, NULL}
    };
    luaL_newlib(L, funcs);
    return 1;
}
