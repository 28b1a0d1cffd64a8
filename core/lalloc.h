/* The Lua runtime's allocator: small blocks (up to 256 bytes, in classes of
 * 16) come from free lists cut from 64 KiB chunks, larger ones from malloc.
 * Lua tells the allocator every block's size when it frees or resizes it, so
 * a small block needs no header and freeing one is two stores; most of what
 * a run allocates is small (strings, tables, closures), and glibc's malloc
 * and free were a fifth of a selection's instructions.  Chunks go back to
 * the system only with the whole allocator.
 *
 * Memory checkers (ASan, valgrind) must see every block: under them the
 * runtime uses plain realloc and free instead (runtime.c). */
#ifndef FLUENCE_LALLOC_H
#define FLUENCE_LALLOC_H
#include <stddef.h>

struct lalloc;
struct lalloc *fluence_lalloc_new(void);
void fluence_lalloc_free(struct lalloc *a);
/* a lua_Alloc over allocator ud */
void *fluence_lalloc(void *ud, void *ptr, size_t osize, size_t nsize);

#endif
