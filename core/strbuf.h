/* A growable byte buffer owned by a Lua userdata, so raising a Lua error while
 * building output never leaks it (__gc frees the bytes).  Unlike luaL_Buffer
 * it does not occupy the top of the stack, so recursive encoders may push
 * temporaries freely. */
#ifndef FLUENCE_STRBUF_H
#define FLUENCE_STRBUF_H
#include <stddef.h>
#include <lua.h>

struct strbuf {
    char *data;
    size_t len, cap;
};

/* [-0, +1, m]  Pushes a new buffer userdata and returns it. */
struct strbuf *strbuf_push(lua_State *L);
/* Appending raises a Lua "not enough memory" error on allocation failure. */
void strbuf_add(lua_State *L, struct strbuf *b, const char *s, size_t n);
void strbuf_addc(lua_State *L, struct strbuf *b, char c);
void strbuf_adds(lua_State *L, struct strbuf *b, const char *s);
/* Room for need elements of size bytes in the array p of *cap elements
 * (kept by a userdata with __gc, so raising cannot leak it): returns the
 * array, grown by doubling; raises "not enough memory". */
void *fluence_grow(lua_State *L, void *p, size_t *cap, size_t need, size_t size);
/* The same without Lua (a parse off the main thread): 0, or -1 when memory
 * runs out (*p and *cap untouched). */
int fluence_grow_to(void **p, size_t *cap, size_t need, size_t size);
/* [-0, +1, m]  Pushes the contents as a Lua string. */
void strbuf_pushresult(lua_State *L, struct strbuf *b);

#endif
