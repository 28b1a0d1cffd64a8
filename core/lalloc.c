/* The Lua runtime's allocator (see lalloc.h). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "lalloc.h"

#define GRAIN 16                    /* size classes: 16, 32, ... SMALL bytes */
#define SMALL 512
#define NCLASS (SMALL / GRAIN)
#define CHUNK (64 * 1024)           /* small blocks are cut from chunks this big */
#define HUGE_CHUNK (2 * 1024 * 1024)   /* ... and, once the heap is big, this big */
#define HUGE_AFTER 32               /* chunks before that: small runs stay small */

struct chunk { struct chunk *next; size_t mapped; };
struct free_block { struct free_block *next; };

struct lalloc {
    struct free_block *free[NCLASS];
    char *cur, *end;                /* the rest of the newest chunk */
    struct chunk *chunks;
    size_t nchunks;
};

/* A 2 MiB chunk on a 2 MiB boundary, the kernel asked for a huge page: one
 * page fault and one TLB entry instead of 512 (a 20 MB heap took 5,000
 * faults, and its hash lookups missed the TLB).  NULL when refused. */
static struct chunk *huge_chunk(void)
{
    size_t span = 2 * HUGE_CHUNK;
    char *p = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return NULL;
    char *q = (char *)(((uintptr_t)p + HUGE_CHUNK - 1) & ~(uintptr_t)(HUGE_CHUNK - 1));
    if (q > p) munmap(p, (size_t)(q - p));
    if (q + HUGE_CHUNK < p + span) munmap(q + HUGE_CHUNK, (size_t)(p + span - (q + HUGE_CHUNK)));
#ifdef MADV_HUGEPAGE
    madvise(q, HUGE_CHUNK, MADV_HUGEPAGE);     /* a hint: fine if refused */
#endif
    return (struct chunk *)q;
}

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
        struct chunk *ch = a->nchunks >= HUGE_AFTER ? huge_chunk() : NULL;
        size_t len = HUGE_CHUNK;
        if (!ch) {
            ch = malloc(CHUNK);
            len = CHUNK;
            if (!ch) return NULL;
            ch->mapped = 0;
        } else ch->mapped = HUGE_CHUNK;
        ch->next = a->chunks;
        a->chunks = ch;
        a->nchunks++;
        a->cur = (char *)ch + GRAIN;        /* the header keeps blocks 16-aligned */
        a->end = (char *)ch + len;
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
        if (c->mapped) munmap(c, c->mapped); else free(c);
    }
    free(a);
}
