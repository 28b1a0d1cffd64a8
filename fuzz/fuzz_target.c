/* libFuzzer entry point for every fuzz target: require("fluence.fuzz")[TARGET]
 * runs on each input inside one fluence runtime per process (plugins and the
 * LPeg grammar load once), with a full garbage collection after every input
 * so whatever an input allocated is freed before the next one — libFuzzer's
 * leak check then sees only real leaks.
 *
 * What counts as a finding: a crash or sanitizer report (memory safety, UB,
 * leaks), or a plain Lua error — errors a user can cause are structured
 * ({code, message}) or returned as nil, message; anything else means fluence
 * failed to handle its input and aborts here so libFuzzer keeps the input.
 * Built by `make fuzz` with -DFUZZ_TARGET="name". */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <lauxlib.h>
#include "runtime.h"

#ifndef FUZZ_TARGET
#error "build with -DFUZZ_TARGET=\"name\""
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static lua_State *L;

static void setup(void)
{
    L = fluence_runtime_new();
    if (!L) abort();
    lua_getglobal(L, "require");
    lua_pushliteral(L, "fluence.fuzz");
    if (fluence_pcall(L, 1, 1) != LUA_OK) {
        fprintf(stderr, "cannot load fluence.fuzz: %s\n", lua_tostring(L, -1));
        abort();
    }
    lua_getfield(L, -1, FUZZ_TARGET);
    if (!lua_isfunction(L, -1)) {
        fprintf(stderr, "no fuzz target %s\n", FUZZ_TARGET);
        abort();
    }
    lua_setfield(L, LUA_REGISTRYINDEX, "fluence.fuzz.target");
    lua_settop(L, 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!L) setup();
    lua_getfield(L, LUA_REGISTRYINDEX, "fluence.fuzz.target");
    lua_pushlstring(L, (const char *)data, size);
    if (fluence_pcall(L, 1, 0) != LUA_OK) {
        if (!lua_istable(L, -1)) {
            fprintf(stderr, "fluence.fuzz.%s: unhandled error: %s\n", FUZZ_TARGET,
                    lua_tostring(L, -1) ? lua_tostring(L, -1) : "(non-string)");
            abort();
        }
    }
    lua_settop(L, 0);
    lua_gc(L, LUA_GCCOLLECT);
    return 0;
}
