/* A growable NUL-terminated string for text built without a Lua state (the
 * matcher's output and messages run in plain C).  An allocation failure sets
 * oom and turns later appends into no-ops: the caller checks oom once at the
 * end and frees d.  (strbuf.h is the one for code that may raise a Lua
 * error instead.) */
#ifndef FLUENCE_MBUF_H
#define FLUENCE_MBUF_H
#include <stddef.h>

typedef struct mbuf {
    char *d;
    size_t n, cap;
    int oom;
} mbuf;

void mbuf_add(mbuf *b, const char *s, size_t n);
void mbuf_puts(mbuf *b, const char *s);
void mbuf_printf(mbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
