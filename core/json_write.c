/* The one JSON string escaper (see json_write.h). */
#include <string.h>
#include "json_write.h"
#include "strbuf.h"
#include "utf8.h"

/* Is code point cp (past ASCII) escaped?  The C1 controls always; with
 * JW_YAML what YAML 1.1 reads as a line break or refuses. */
static int escaped(unsigned cp, int flags)
{
    if (cp <= 0x9F) return 1;
    return (flags & JW_YAML) && (cp == 0x2028 || cp == 0x2029 || cp == 0xFEFF || cp == 0xFFFE || cp == 0xFFFF);
}

void jw_string_to(jw_sink out, void *to, const char *s, size_t len, int flags)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *u = (const unsigned char *)s;
    out(to, "\"", 1);
    size_t run = 0;                               /* start of the bytes copied as they are */
    for (size_t i = 0; i < len;) {
        unsigned c = u[i];
        if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') { i++; continue; }
        size_t n = 1;
        unsigned cp = c;
        if (c >= 0x80) {
            n = utf8_decode(u + i, len - i, &cp);
            if (!n) {
                if (!(flags & JW_FFFD)) { i++; continue; }
                n = 1;
                cp = 0xFFFD;
            } else if (!escaped(cp, flags)) {
                i += n;
                continue;
            }
        }
        out(to, s + run, i - run);
        char e[6];
        switch (cp) {
        case '"': out(to, "\\\"", 2); break;
        case '\\': out(to, "\\\\", 2); break;
        case '\n': out(to, "\\n", 2); break;
        case '\r': out(to, "\\r", 2); break;
        case '\t': out(to, "\\t", 2); break;
        default:
            e[0] = '\\';
            e[1] = 'u';
            for (int k = 0; k < 4; k++) e[2 + k] = hex[(cp >> (12 - 4 * k)) & 15];
            out(to, e, 6);
        }
        i += n;
        run = i;
    }
    out(to, s + run, len - run);
    if (flags & JW_NL) out(to, "\\n", 2);
    out(to, "\"", 1);
}

struct to_strbuf { lua_State *L; struct strbuf *b; };

static void add(void *to, const char *s, size_t n)
{
    struct to_strbuf *t = to;
    strbuf_add(t->L, t->b, s, n);
}

void jw_string(lua_State *L, struct strbuf *b, const char *s, size_t len, int flags)
{
    struct to_strbuf t = { L, b };
    jw_string_to(add, &t, s, len, flags);
}

void jw_newline(lua_State *L, struct strbuf *b, int indent, int depth)
{
    if (!indent) return;
    strbuf_addc(L, b, '\n');
    for (int i = 0; i < indent * depth; i++) strbuf_addc(L, b, ' ');
}
