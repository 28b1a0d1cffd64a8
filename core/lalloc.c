/* The Lua runtime's allocator (see lalloc.h). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "lalloc.h"

#define GRAIN 16                    /* size classes: 16, 32, ... SMALL bytes */
#define SMALL 256
#define NCLASS (SMALL / GRAIN)
#define CHUNK (64 * 1024)           /* small blocks are cut from chunks this big */

struct chunk { struct chunk *next; };
struct free_block { struct free_block *next; };

struct lalloc {
    struct free_block *free[NCLASS];
    char *cur, *end;                /* the rest of the newest chunk */
    struct chunk *chunks;
};

static size_t class_of(size_t n) { return (n + GRAIN - 1) / GRAIN - 1; }

static void *small_get(struct lalloc *a, size_t n)
{
    size_t c = class_of(n);
    struct free_block *b = a->free[c];
    if (b) {
        a->free[c] = b->next;
        return b;
    }
    size_t size = (c + 1) * GRAIN;
    if ((size_t)(a->end - a->cur) < size) {
        /* the rest of the old chunk goes to the free lists, largest first */
        while (a->end - a->cur >= GRAIN) {
            size_t left = (size_t)(a->end - a->cur), k = (left > SMALL ? SMALL : left) / GRAIN - 1;
            struct free_block *r = (struct free_block *)a->cur;
            r->next = a->free[k];
            a->free[k] = r;
            a->cur += (k + 1) * GRAIN;
        }
        struct chunk *ch = malloc(CHUNK);
        if (!ch) return NULL;
        ch->next = a->chunks;
        a->chunks = ch;
        a->cur = (char *)ch + GRAIN;        /* the header keeps blocks 16-aligned */
        a->end = (char *)ch + CHUNK;
    }
    void *p = a->cur;
    a->cur += size;
    return p;
}

static void small_put(struct lalloc *a, void *p, size_t n)
{
    struct free_block *b = p;
    size_t c = class_of(n);
    b->next = a->free[c];
    a->free[c] = b;
}

void *fluence_lalloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
    struct lalloc *a = ud;
    if (!ptr) osize = 0;                    /* then osize is the type of a new object */
    if (nsize == 0) {
        if (ptr) {
            if (osize <= SMALL) small_put(a, ptr, osize);
            else free(ptr);
        }
        return NULL;
    }
    if (nsize <= SMALL) {
        if (ptr && osize <= SMALL && class_of(osize) == class_of(nsize)) return ptr;
        void *q = small_get(a, nsize);
        if (!q) return NULL;
        if (ptr) {
            memcpy(q, ptr, osize < nsize ? osize : nsize);
            if (osize <= SMALL) small_put(a, ptr, osize); else free(ptr);
        }
        return q;
    }
    if (ptr && osize > SMALL) return realloc(ptr, nsize);
    void *q = malloc(nsize);
    if (!q) return NULL;
    if (ptr) {
        memcpy(q, ptr, osize);              /* osize <= SMALL < nsize */
        small_put(a, ptr, osize);
    }
    return q;
}

struct lalloc *fluence_lalloc_new(void)
{
    return calloc(1, sizeof(struct lalloc));
}

void fluence_lalloc_free(struct lalloc *a)
{
    if (!a) return;
    for (struct chunk *c = a->chunks, *n; c; c = n) {
        n = c->next;
        free(c);
    }
    free(a);
}
