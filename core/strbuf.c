/* Growable buffers owned by Lua userdata (see strbuf.h). */
#include <stdlib.h>
#include <string.h>
#include <lauxlib.h>
#include "strbuf.h"

static int strbuf_gc(lua_State *L)
{
    struct strbuf *b = lua_touserdata(L, 1);
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
    return 0;
}

struct strbuf *strbuf_push(lua_State *L)
{
    struct strbuf *b = lua_newuserdatauv(L, sizeof *b, 0);
    memset(b, 0, sizeof *b);
    if (luaL_newmetatable(L, "fluence.strbuf")) {
        lua_pushcfunction(L, strbuf_gc);
        lua_setfield(L, -2, "__gc");
    }
    lua_setmetatable(L, -2);
    return b;
}

int fluence_grow_to(void **p, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap) return 0;
    size_t c = *cap ? *cap : 16;
    while (c < need) {
        if (c > ((size_t)-1) / 4 / size) return -1;
        c *= 2;
    }
    void *q = realloc(*p, c * size);
    if (!q) return -1;
    *p = q;
    *cap = c;
    return 0;
}

void *fluence_grow(lua_State *L, void *p, size_t *cap, size_t need, size_t size)
{
    if (fluence_grow_to(&p, cap, need, size) != 0) luaL_error(L, "not enough memory");
    return p;
}

void strbuf_add(lua_State *L, struct strbuf *b, const char *s, size_t n)
{
    if (b->len + n > b->cap) {
        if (n > (size_t)-1 - b->len) luaL_error(L, "not enough memory");
        /* a text of a few hundred bytes at least: fewer first steps */
        b->data = fluence_grow(L, b->data, &b->cap, b->len + n < 256 ? 256 : b->len + n, 1);
    }
    if (n) memcpy(b->data + b->len, s, n);
    b->len += n;
}

void strbuf_addc(lua_State *L, struct strbuf *b, char c) { strbuf_add(L, b, &c, 1); }
void strbuf_adds(lua_State *L, struct strbuf *b, const char *s) { strbuf_add(L, b, s, strlen(s)); }

void strbuf_pushresult(lua_State *L, struct strbuf *b)
{
    lua_pushlstring(L, b->data ? b->data : "", b->len);
}
