/* Escaping outside text for the terminal, as Go's %q does (see escape.h). */
#include <string.h>
#include "escape.h"
#include "utf8.h"

/* Characters a terminal does not show as themselves: controls, and format
 * characters that reorder, hide or break lines (Go's strconv.IsPrint says
 * no to these, among others). */
static int hidden(unsigned c)
{
    return c < 0x20 || (c >= 0x7F && c <= 0x9F) || c == 0xAD ||
           (c >= 0x200B && c <= 0x200F) || (c >= 0x2028 && c <= 0x202E) ||
           (c >= 0x2060 && c <= 0x206F) || c == 0xFEFF || (c >= 0xFFF9 && c <= 0xFFFB);
}

static int plain(unsigned char c, int flags)
{
    if (c < 0x20) return (flags & FLUENCE_ESC_KEEP_LINES) && (c == '\n' || c == '\t');
    if (c == 0x7F) return 0;
    if ((flags & FLUENCE_ESC_QUOTE) && (c == '"' || c == '\\')) return 0;
    return 1;
}

int fluence_needs_escape(const char *s, size_t len, int flags)
{
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < len; i++) {
        if (u[i] >= 0x80) {
            unsigned cp;
            size_t n = utf8_decode(u + i, len - i, &cp);
            if (!n || hidden(cp)) return 1;
            i += n - 1;
        } else if (!plain(u[i], flags)) return 1;
    }
    return 0;
}

/* The one escaping loop; out receives the text piece by piece (whole: an
 * escape or a quote, never to be cut) and may say stop (a fixed buffer that
 * is full) by returning 0. */
typedef int (*sink)(void *to, const char *s, size_t n, int whole);

/* FLUENCE_ESC_COLUMNS: each byte one column */
static void columns_to(sink out, void *to, const char *s, size_t len)
{
    size_t run = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != 0x7F) continue;
        if (!out(to, s + run, i - run, 0) || !out(to, c == '\t' ? " " : "?", 1, 1)) return;
        run = i + 1;
    }
    out(to, s + run, len - run, 0);
}

static void escape_to(sink out, void *to, const char *s, size_t len, int flags)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *u = (const unsigned char *)s;
    if (flags & FLUENCE_ESC_COLUMNS) {
        columns_to(out, to, s, len);
        return;
    }
    if ((flags & FLUENCE_ESC_QUOTE) && !out(to, "\"", 1, 1)) return;
    size_t run = 0;                               /* start of the plain run */
    for (size_t i = 0; i < len;) {
        unsigned cp = u[i];
        size_t n = 1;
        int esc;
        if (cp >= 0x80) {
            n = utf8_decode(u + i, len - i, &cp);
            esc = !n || hidden(cp);
            if (!n) { n = 1; cp = 0x110000; }     /* a byte that is not UTF-8 */
        } else esc = !plain((unsigned char)cp, flags);
        if (!esc) { i += n; continue; }
        if (!out(to, s + run, i - run, 0)) return;
        char e[12];
        size_t k = 0;
        e[k++] = '\\';
        switch (cp) {
        case '\a': e[k++] = 'a'; break;
        case '\b': e[k++] = 'b'; break;
        case '\f': e[k++] = 'f'; break;
        case '\n': e[k++] = 'n'; break;
        case '\r': e[k++] = 'r'; break;
        case '\t': e[k++] = 't'; break;
        case '\v': e[k++] = 'v'; break;
        case '"': e[k++] = '"'; break;
        case '\\': e[k++] = '\\'; break;
        default:
            if (cp > 0x10FFFF) cp = u[i];
            if (cp < 0x100 && (cp < 0x80 || n == 1)) {       /* \xNN: a control, or a stray byte */
                e[k++] = 'x';
                e[k++] = hex[cp >> 4];
                e[k++] = hex[cp & 15];
            } else {
                e[k++] = 'u';
                for (int sh = 12; sh >= 0; sh -= 4) e[k++] = hex[(cp >> sh) & 15];
            }
        }
        if (!out(to, e, k, 1)) return;
        i += n;
        run = i;
    }
    if (!out(to, s + run, len - run, 0)) return;
    if (flags & FLUENCE_ESC_QUOTE) out(to, "\"", 1, 1);
}

static int to_buffer(void *to, const char *s, size_t n, int whole)
{
    luaL_addlstring((luaL_Buffer *)to, s, n);
    return 1;
}

void fluence_escape(luaL_Buffer *b, const char *s, size_t len, int flags)
{
    escape_to(to_buffer, b, s, len, flags);
}

/* A fixed buffer: whole pieces only, so an escape is never cut in two. */
struct fixed { char *out; size_t cap, n; int cut; };

static int to_fixed(void *to, const char *s, size_t n, int whole)
{
    struct fixed *f = to;
    if (f->n + n + 4 > f->cap) {                  /* room kept for "..." and the NUL */
        size_t room = f->cap - f->n > 4 ? f->cap - f->n - 4 : 0;
        /* a plain run may be cut, but not inside a UTF-8 sequence */
        if (room && !whole) {
            while (room && ((unsigned char)s[room] & 0xC0) == 0x80) room--;
            memcpy(f->out + f->n, s, room);
            f->n += room;
        }
        f->cut = 1;
        return 0;
    }
    memcpy(f->out + f->n, s, n);
    f->n += n;
    return 1;
}

size_t fluence_escape_into(char *out, size_t cap, const char *s, size_t len, int flags)
{
    if (cap < 5) { if (cap) out[0] = 0; return 0; }
    struct fixed f = { out, cap, 0, 0 };
    escape_to(to_fixed, &f, s, len, flags);
    if (f.cut) { memcpy(out + f.n, "...", 3); f.n += 3; }
    out[f.n] = 0;
    return f.n;
}

const char *fluence_push_escaped(lua_State *L, const char *s, size_t len, int flags)
{
    if (!(flags & FLUENCE_ESC_QUOTE) && !fluence_needs_escape(s, len, flags)) {
        lua_pushlstring(L, s, len);
        return lua_tostring(L, -1);
    }
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    fluence_escape(&b, s, len, flags);
    luaL_pushresult(&b);
    return lua_tostring(L, -1);
}
