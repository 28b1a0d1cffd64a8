/* startup: the floor of a `select` in fluence's shape, for `make bench`.
 * Linked with libfluence.a exactly as bin/fluence is (same embedded
 * bytecode, same static libraries), so the only difference between the two
 * processes is what they do after the Lua state exists.
 *
 *   startup trace LIST -- ARGS...
 *       runs `fluence ARGS` in this process, as bin/fluence's main does
 *       (fluence_command, core/command.h), and
 *       writes to LIST what the run loaded, one item a line, in load order:
 *         module NAME     a require'd module (package.loaded gained NAME)
 *         plugin PATH     a built-in plugin (policies/x.lua, providers/x.lua)
 *         parse TEXT      a policy the grammar parsed
 *       Its exit code and output are the run's.
 *   startup load LIST [--report]
 *       the floor: a fresh runtime (state, standard libraries), every item
 *       of LIST loaded as the run did (modules required, plugins loaded
 *       through fluence.plugins' registry, policies parsed: the grammar
 *       built and compiled), then exit.  --report prints what is loaded at
 *       the end in LIST's format, for spec/startup_floor_spec.lua to check
 *       that the floor loads exactly what the select loaded.
 *
 * The list is derived from a run (bench/run.lua traces the quickstart's
 * select first), not kept by hand: when select loads more or less, so does
 * the floor. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <lauxlib.h>
#include "command.h"
#include "exitcode.h"
#include "output.h"
#include "runtime.h"
#include "timelimit.h"

/* Lua run in a fresh state before anything else: wraps require (and, as
 * they load, fluence.sys's embedded and fluence.grammar's parse) to record
 * what the run loads, requiring nothing itself.  Returns report(): the
 * recorded items in load order, then anything package.loaded gained some
 * other way, then the policies parsed. */
static const char TRACE[] =
    "local before = {}\n"
    "for k in pairs(package.loaded) do before[k] = true end\n"
    "local items, seen, parsed = {}, {}, {}\n"
    "local function add(kind, v)\n"
    "  local key = kind .. ' ' .. v\n"
    "  if not seen[key] then seen[key] = true; items[#items + 1] = key end\n"
    "end\n"
    "local hooks = {\n"
    "  ['fluence.sys'] = function(m)\n"
    "    local embedded = m.embedded\n"
    "    m.embedded = function(path)\n"
    "      if path:match('^policies/') or path:match('^providers/') then add('plugin', path) end\n"
    "      return embedded(path)\n"
    "    end\n"
    "  end,\n"
    "  ['fluence.grammar'] = function(m)\n"
    "    local parse = m.parse\n"
    "    m.parse = function(text, ...)\n"
    "      if type(text) == 'string' and not text:find('\\n', 1, true) and not seen['parse ' .. text] then\n"
    "        seen['parse ' .. text] = true; parsed[#parsed + 1] = 'parse ' .. text\n"
    "      end\n"
    "      return parse(text, ...)\n"
    "    end\n"
    "  end,\n"
    "}\n"
    "local real_require = require\n"
    "function require(name)\n"
    "  local had = package.loaded[name] ~= nil\n"
    "  local m, x = real_require(name)\n"
    "  if not had then\n"
    "    add('module', name)\n"
    "    if hooks[name] then hooks[name](m) end\n"
    "  end\n"
    "  return m, x\n"
    "end\n"
    "return function()\n"
    "  local out = {}\n"
    "  for _, v in ipairs(items) do out[#out + 1] = v end\n"
    "  local extra = {}\n"
    "  for k in pairs(package.loaded) do\n"
    "    if not before[k] and not seen['module ' .. k] then extra[#extra + 1] = 'module ' .. k end\n"
    "  end\n"
    "  table.sort(extra)\n"
    "  for _, v in ipairs(extra) do out[#out + 1] = v end\n"
    "  for _, v in ipairs(parsed) do out[#out + 1] = v end\n"
    "  return table.concat(out, '\\n') .. '\\n'\n"
    "end\n";

static int fail(lua_State *L)
{
    int rc = fluence_report(L);
    fluence_runtime_exit(L);
    return fluence_close_stdout(rc);
}

static int trace(int argc, char **argv)
{
    const char *list = argv[0];
    lua_State *L = fluence_runtime_new();
    if (!L) return FLUENCE_EXIT_INTERNAL;
    if (luaL_loadbuffer(L, TRACE, sizeof TRACE - 1, "=trace") != LUA_OK ||
        fluence_pcall(L, 0, 1) != LUA_OK)
        return fail(L);
    int report = lua_gettop(L);
    /* what bin/fluence does with the words, the same code (command.h) */
    int rc = fluence_command(L, "fluence", argc - 2, argv + 2);
    lua_pushvalue(L, report);
    if (fluence_pcall(L, 0, 1) != LUA_OK) return fail(L);
    FILE *f = fopen(list, "w");
    size_t n;
    const char *s = lua_tolstring(L, -1, &n);
    if (!f || fwrite(s, 1, n, f) != n || fclose(f) != 0) {
        perror(list);
        rc = FLUENCE_EXIT_INTERNAL;
    }
    fluence_runtime_exit(L);
    return fluence_close_stdout(rc);
}

/* [-0, +0] loads one item of the list; errors are raised. */
static int load_item(lua_State *L)
{
    const char *kind = lua_tostring(L, 1), *v = lua_tostring(L, 2);
    if (strcmp(kind, "module") == 0) {
        lua_getglobal(L, "require");
        lua_pushvalue(L, 2);
        lua_call(L, 1, 0);
    } else if (strcmp(kind, "plugin") == 0) {
        /* policies/NAME.lua -> require("fluence.plugins").load_policies{}.get(NAME).plugin,
         * one registry of each kind, as a select makes */
        int policy = strncmp(v, "policies/", 9) == 0;
        const char *name = strchr(v, '/') + 1;
        const char *dot = strrchr(name, '.');
        const char *load = policy ? "load_policies" : "load_providers";
        if (lua_getfield(L, LUA_REGISTRYINDEX, load) != LUA_TTABLE) {
            lua_pop(L, 1);
            lua_getglobal(L, "require");
            lua_pushliteral(L, "fluence.plugins");
            lua_call(L, 1, 1);
            lua_getfield(L, -1, load);
            lua_newtable(L);
            lua_call(L, 1, 1);
            lua_pushvalue(L, -1);
            lua_setfield(L, LUA_REGISTRYINDEX, load);
        }
        lua_getfield(L, -1, "get");
        lua_pushlstring(L, name, dot ? (size_t)(dot - name) : strlen(name));
        lua_call(L, 1, 1);
        if (!lua_istable(L, -1)) return luaL_error(L, "no built-in plugin %s", v);
        lua_getfield(L, -1, "plugin");
        if (!lua_istable(L, -1)) return luaL_error(L, "plugin %s did not load", v);
    } else if (strcmp(kind, "parse") == 0) {
        lua_getglobal(L, "require");
        lua_pushliteral(L, "fluence.grammar");
        lua_call(L, 1, 1);
        lua_getfield(L, -1, "parse");
        lua_pushvalue(L, 2);
        lua_call(L, 1, 1);
        if (!lua_istable(L, -1)) return luaL_error(L, "policy %s does not parse", v);
    } else return luaL_error(L, "unknown item %s", kind);
    return 0;
}

/* [-0, +1] what package.loaded gained since `before` (a table), sorted,
 * then the plugins and policies loaded, in the list's format. */
static const char REPORT[] =
    "local before, items = ...\n"
    "local out = {}\n"
    "for k in pairs(package.loaded) do if not before[k] then out[#out + 1] = 'module ' .. k end end\n"
    "table.sort(out)\n"
    "for _, v in ipairs(items) do if not v:match('^module ') then out[#out + 1] = v end end\n"
    "return table.concat(out, '\\n') .. '\\n'\n";

static int load(const char *list, int report)
{
    FILE *f = fopen(list, "r");
    if (!f) {
        perror(list);
        return FLUENCE_EXIT_INPUT;
    }
    lua_State *L = fluence_runtime_new();
    if (!L) {
        fclose(f);
        return FLUENCE_EXIT_INTERNAL;
    }
    if (report) {                          /* what the state holds before */
        lua_newtable(L);
        lua_getglobal(L, "package");
        lua_getfield(L, -1, "loaded");
        lua_remove(L, -2);
        lua_pushnil(L);
        while (lua_next(L, -2)) {
            lua_pop(L, 1);
            lua_pushvalue(L, -1);
            lua_pushboolean(L, 1);
            lua_rawset(L, -5);
        }
        lua_pop(L, 1);
        lua_newtable(L);
    }
    char line[4096];
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        char *sp = strchr(line, ' ');
        if (!sp) continue;
        *sp = 0;
        lua_pushcfunction(L, load_item);
        lua_pushstring(L, line);
        lua_pushstring(L, sp + 1);
        if (report) {
            lua_pushfstring(L, "%s %s", line, sp + 1);
            lua_rawseti(L, -5, (lua_Integer)lua_rawlen(L, -5) + 1);
        }
        if (fluence_pcall(L, 2, 0) != LUA_OK) {
            fclose(f);
            return fail(L);
        }
    }
    fclose(f);
    if (report) {
        if (luaL_loadbuffer(L, REPORT, sizeof REPORT - 1, "=report") != LUA_OK) return fail(L);
        lua_insert(L, -3);
        if (fluence_pcall(L, 2, 1) != LUA_OK) return fail(L);
        fputs(lua_tostring(L, -1), stdout);
    }
    fluence_runtime_exit(L);
    return fluence_close_stdout(FLUENCE_EXIT_OK);
}

int main(int argc, char **argv)
{
    fluence_guard_std_fds();
    fluence_timelimit_enable_hard_stop();
    if (argc >= 4 && strcmp(argv[1], "trace") == 0 && strcmp(argv[3], "--") == 0)
        return trace(argc - 2, argv + 2);
    if ((argc == 3 || argc == 4) && strcmp(argv[1], "load") == 0 &&
        (argc == 3 || strcmp(argv[3], "--report") == 0))
        return load(argv[2], argc == 4);
    fprintf(stderr, "usage: startup trace LIST -- ARGS... | startup load LIST [--report]\n");
    return FLUENCE_EXIT_USAGE;
}
