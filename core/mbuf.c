/* A growable string for plain C text (see mbuf.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mbuf.h"

/* room for need more bytes and the NUL */
static void mbuf_grow(mbuf *b, size_t need)
{
    if (b->oom || b->n + need + 1 <= b->cap) return;
    size_t nc = b->cap ? b->cap : 64;
    while (b->n + need + 1 > nc) nc *= 2;
    char *p = realloc(b->d, nc);
    if (!p) {
        b->oom = 1;
        return;
    }
    b->d = p;
    b->cap = nc;
}

void mbuf_add(mbuf *b, const char *s, size_t n)
{
    mbuf_grow(b, n);
    if (b->oom) return;
    memcpy(b->d + b->n, s, n);
    b->n += n;
    b->d[b->n] = 0;
}

void mbuf_puts(mbuf *b, const char *s)
{
    mbuf_add(b, s, strlen(s));
}

void mbuf_printf(mbuf *b, const char *fmt, ...)
{
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n < sizeof tmp) {
        mbuf_add(b, tmp, (size_t)n);
        return;
    }
    mbuf_grow(b, (size_t)n);
    if (b->oom) return;
    va_start(ap, fmt);
    vsnprintf(b->d + b->n, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->n += (size_t)n;
}
