/* Command-line tables, parser and help (see cli.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <lauxlib.h>
#include "cli.h"
#include "exitcode.h"

enum { V_SELECT = 1 << 0, V_APPLY = 1 << 1, V_CREATE = 1 << 2, V_RUN = 1 << 3,
       V_EXPLAIN = 1 << 4, V_MATCH = 1 << 5, V_JOBSPEC = 1 << 6, V_POLICIES = 1 << 7,
       V_PROVIDERS = 1 << 8, V_COMPLETION = 1 << 9, V_VERSION = 1 << 10, V_HELP = 1 << 11 };
#define V_APPLYING (V_APPLY | V_CREATE)
#define V_SELECTING (V_SELECT | V_APPLYING | V_RUN | V_EXPLAIN)
#define V_ALL 0xffffu

struct verb {
    const char *name;
    unsigned bit;
    const char *args;
    const char *summary;
};

static const struct verb verbs[] = {
    {"select", V_SELECT, "-f FILE [options]", "choose a backend for each Fluence object and print the annotated manifest"},
    {"apply", V_APPLY, "-f FILE [options]", "select, then server-side apply every object to the cluster"},
    {"create", V_CREATE, "-f FILE [options]", "select, then create every object (fails if one exists)"},
    {"run", V_RUN, "POLICY.lua -f FILE [options]", "select with a policy written in Lua (a file returning a pipeline or a function)"},
    {"explain", V_EXPLAIN, "-f FILE [options]", "show, per object, every backend, its attributes and what each stage did"},
    {"match", V_MATCH, "--graph GRAPH.json [JOBSPEC...]", "Fluxion-compatible matching: resource-query commands on stdin, or jobspecs"},
    {"jobspec", V_JOBSPEC, "-f FILE", "print the Fluxion jobspecs Fluence builds for each group in the manifests"},
    {"policies", V_POLICIES, "[options]", "list the selection policies, where each comes from, and what it does"},
    {"providers", V_PROVIDERS, "[options]", "list the backend providers, where each comes from, and what it does"},
    {"completion", V_COMPLETION, "bash|zsh|kubectl", "print a shell completion script (kubectl: the kubectl_complete-fluence helper)"},
    {"version", V_VERSION, "", "print the version"},
    {"help", V_HELP, "[VERB]", "show help for a verb"},
};

enum arg { FLAG, VALUE, OPTIONAL, COUNT };

struct option {
    const char *name;   /* long name, also the key in opts */
    char shortname;
    enum arg arg;
    int repeat;         /* values collect into an array */
    unsigned verbs;
    const char *metavar;
    const char *help;
};

/* Sorted by long name. */
static const struct option options[] = {
    {"attributes", 0, VALUE, 1, V_SELECTING, "FILE", "attribute file (YAML or JSON, the Go client's format); repeatable"},
    {"confirm", 0, FLAG, 0, V_APPLYING, NULL, "show the selections and ask y/n on the terminal before applying"},
    {"context", 0, VALUE, 0, V_SELECTING, "NAME", "kubeconfig context to use"},
    {"cost-tol", 0, VALUE, 0, V_SELECTING, "X", "tolerance band of min-*/max-* rankers (default 0)"},
    {"dry-run", 0, OPTIONAL, 0, V_APPLYING, "MODE", "none, client (print only; the default when given alone) or server"},
    {"field-manager", 0, VALUE, 0, V_APPLYING, "NAME", "server-side apply field manager (default kubectl-fluence)"},
    {"filename", 'f', VALUE, 1, V_SELECTING | V_JOBSPEC, "FILE", "manifest file, directory, or - for stdin; repeatable"},
    {"fluence-ns", 0, VALUE, 0, V_SELECTING | V_JOBSPEC, "NS", "namespace of the fluence-resources ConfigMap (default kube-system)"},
    {"force-conflicts", 0, FLAG, 0, V_APPLYING, NULL, "take ownership of fields other managers set"},
    {"force-select", 0, FLAG, 0, V_SELECTING, NULL, "replace an existing require-backend pin"},
    {"format", 'F', VALUE, 0, V_MATCH, "FMT", "match output: simple (default), rv1, rv1_nosched or jgf"},
    {"graph", 0, VALUE, 1, V_SELECTING | V_MATCH | V_JOBSPEC, "FILE", "cluster resource graph (JGF) for fit checks / matching"},
    {"help", 'h', FLAG, 0, V_ALL, NULL, "show this help"},
    {"kubeconfig", 0, VALUE, 0, V_SELECTING, "FILE", "kubeconfig file (else KUBECONFIG, else ~/.kube/config)"},
    {"namespace", 'n', VALUE, 0, V_SELECTING, "NS", "namespace for objects that do not name one"},
    {"offline", 0, FLAG, 0, V_SELECTING, NULL, "do not contact the cluster (no offerings)"},
    {"output", 'o', VALUE, 0, V_SELECTING | V_JOBSPEC | V_POLICIES | V_PROVIDERS, "FMT", "yaml (default), json, or name (apply)"},
    {"policy", 'P', VALUE, 0, V_MATCH, "POLICY", "match policy: first (default), high, low, lonode, hinode, locality, variation, ..."},
    {"policy-dir", 0, VALUE, 1, V_SELECTING | V_POLICIES | V_COMPLETION, "DIR", "extra directory of policy plugins (searched first); repeatable"},
    {"provider", 0, VALUE, 1, V_SELECTING, "NAME", "also consult this provider; repeatable"},
    {"provider-dir", 0, VALUE, 1, V_SELECTING | V_PROVIDERS | V_COMPLETION, "DIR", "extra directory of provider plugins (searched first); repeatable"},
    {"recursive", 'R', FLAG, 0, V_SELECTING | V_JOBSPEC, NULL, "descend into directories given with -f"},
    {"request-timeout", 0, VALUE, 0, V_SELECTING, "SECONDS", "timeout of each cluster request (default 30)"},
    {"require-offerings", 0, FLAG, 0, V_SELECTING, NULL, "fail when the cluster's offerings cannot be read"},
    {"verbose", 'v', COUNT, 0, V_ALL, NULL, "more detail on stderr (repeat for more)"},
};

#define COUNTOF(a) (sizeof(a) / sizeof((a)[0]))

static const struct verb *find_verb(const char *name)
{
    for (size_t i = 0; i < COUNTOF(verbs); i++)
        if (strcmp(verbs[i].name, name) == 0) return &verbs[i];
    return NULL;
}

static const struct option *find_long(const char *name, size_t len)
{
    for (size_t i = 0; i < COUNTOF(options); i++)
        if (strlen(options[i].name) == len && strncmp(options[i].name, name, len) == 0)
            return &options[i];
    return NULL;
}

static const struct option *find_short(char c)
{
    for (size_t i = 0; i < COUNTOF(options); i++)
        if (options[i].shortname == c) return &options[i];
    return NULL;
}

/* "fluence: PRE WHAT POST (see 'PROG VERB --help')" */
static int usage_error(const char *prog, const char *verb, const char *pre, const char *what,
                       const char *post)
{
    fprintf(stderr, "fluence: %s %s%s", pre, what, post);
    fprintf(stderr, " (see '%s %s--help')\n", prog, verb ? verb : "");
    return FLUENCE_EXIT_USAGE;
}

/* Stores one option occurrence into the opts table at the top of the stack. */
static void store(lua_State *L, const struct option *o, const char *value)
{
    if (o->arg == COUNT) {
        lua_getfield(L, -1, o->name);
        lua_Integer n = lua_tointeger(L, -1);
        lua_pop(L, 1);
        lua_pushinteger(L, n + 1);
        lua_setfield(L, -2, o->name);
    } else if (o->repeat) {
        if (lua_getfield(L, -1, o->name) != LUA_TTABLE) {
            lua_pop(L, 1);
            lua_newtable(L);
            lua_pushvalue(L, -1);
            lua_setfield(L, -3, o->name);
        }
        lua_pushstring(L, value);
        lua_rawseti(L, -2, (lua_Integer)luaL_len(L, -2) + 1);
        lua_pop(L, 1);
    } else {
        if (value) lua_pushstring(L, value); else lua_pushboolean(L, 1);
        lua_setfield(L, -2, o->name);
    }
}

int fluence_cli_parse(lua_State *L, const char *prog, int argc, char **argv)
{
    const struct verb *verb = NULL;
    int i = 0;
    /* The verb is the first word that is not an option; options before it
     * are only the global ones (-v, -h). */
    lua_createtable(L, 0, 4);
    lua_pushstring(L, prog);
    lua_setfield(L, -2, "prog");
    lua_newtable(L);                 /* positional */
    lua_newtable(L);                 /* opts */
    int only_positional = 0;
    for (i = 0; i < argc; i++) {
        char *a = argv[i];
        if (only_positional || a[0] != '-' || a[1] == '\0') {
            if (!verb) {
                verb = find_verb(a);
                if (!verb) {
                    lua_pop(L, 3);
                    return usage_error(prog, NULL, "unknown verb", a, "");
                }
                lua_pushstring(L, verb->name);
                lua_setfield(L, -4, "verb");
                continue;
            }
            lua_pushstring(L, a);
            lua_rawseti(L, -3, (lua_Integer)luaL_len(L, -3) + 1);
            continue;
        }
        if (strcmp(a, "--") == 0) { only_positional = 1; continue; }
        unsigned vbit = verb ? verb->bit : V_HELP;
        const char *vname = verb ? verb->name : NULL;
        char vbuf[64];
        if (vname) { snprintf(vbuf, sizeof vbuf, "%s ", vname); vname = vbuf; }
        if (a[1] == '-') {
            if (!verb && strcmp(a, "--version") == 0) {
                lua_pushliteral(L, "version");
                lua_setfield(L, -4, "verb");
                verb = find_verb("version");
                continue;
            }
            const char *name = a + 2, *eq = strchr(name, '=');
            const struct option *o = find_long(name, eq ? (size_t)(eq - name) : strlen(name));
            if (!o || !(o->verbs & vbit)) {
                lua_pop(L, 3);
                return usage_error(prog, vname, "unknown option", a, "");
            }
            const char *value = NULL;
            if (o->arg == VALUE) {
                if (eq) value = eq + 1;
                else if (i + 1 < argc) value = argv[++i];
                else { lua_pop(L, 3); return usage_error(prog, vname, "option", a, " needs a value"); }
            } else if (o->arg == OPTIONAL) {
                value = eq ? eq + 1 : NULL;
            } else if (eq) {
                lua_pop(L, 3);
                return usage_error(prog, vname, "option", a, " takes no value");
            }
            store(L, o, value);
            continue;
        }
        /* short options, bundled: -vv, -fFILE, -f FILE */
        for (char *p = a + 1; *p; p++) {
            const struct option *o = find_short(*p);
            char bad[3] = {'-', *p, 0};
            if (!o || !(o->verbs & vbit)) {
                lua_pop(L, 3);
                return usage_error(prog, vname, "unknown option", bad, "");
            }
            if (o->arg == VALUE) {
                const char *value = p[1] ? p + 1 : (i + 1 < argc ? argv[++i] : NULL);
                if (!value) { lua_pop(L, 3); return usage_error(prog, vname, "option", bad, " needs a value"); }
                store(L, o, value);
                break;
            }
            store(L, o, NULL);
        }
    }
    lua_setfield(L, -3, "opts");
    lua_setfield(L, -2, "positional");
    if (!verb) {                     /* no verb: the overview */
        lua_pushliteral(L, "help");
        lua_setfield(L, -2, "verb");
        lua_pushboolean(L, 1);
        lua_setfield(L, -2, "implicit_verb");
    }
    return 0;
}

static void print_options(FILE *f, unsigned vbit)
{
    for (size_t i = 0; i < COUNTOF(options); i++) {
        const struct option *o = &options[i];
        if (!(o->verbs & vbit)) continue;
        char left[64];
        int n = snprintf(left, sizeof left, "%s%c%s--%s", o->shortname ? "-" : "",
                         o->shortname ? o->shortname : ' ', o->shortname ? ", " : "   ", o->name);
        if (o->metavar && n > 0 && (size_t)n < sizeof left)
            snprintf(left + n, sizeof left - (size_t)n, o->arg == OPTIONAL ? "[=%s]" : " %s", o->metavar);
        fprintf(f, "  %-28s %s\n", left, o->help);
    }
}

static const struct exit_code {
    int code;
    const char *meaning;
} exit_codes[] = {
    {FLUENCE_EXIT_OK, "success"},
    {FLUENCE_EXIT_SELECT, "selection failed (no backend satisfies the policy)"},
    {FLUENCE_EXIT_USAGE, "usage error (bad command line)"},
    {FLUENCE_EXIT_INPUT, "bad input (manifest, attribute file, policy text, plugin)"},
    {FLUENCE_EXIT_CLUSTER, "cluster or network error (API server, cloud API)"},
    {FLUENCE_EXIT_INTERNAL, "internal error (a bug in fluence: please report it)"},
};

static void print_exit_codes(FILE *f)
{
    fputs("Exit codes:\n", f);
    for (size_t i = 0; i < COUNTOF(exit_codes); i++)
        fprintf(f, "  %-3d %s\n", exit_codes[i].code, exit_codes[i].meaning);
}

int fluence_cli_help(FILE *f, const char *prog, const char *verb_name)
{
    if (verb_name) {
        const struct verb *v = find_verb(verb_name);
        if (!v) {
            fprintf(stderr, "fluence: unknown verb \"%s\" (see '%s --help')\n", verb_name, prog);
            return FLUENCE_EXIT_USAGE;
        }
        fprintf(f, "Usage: %s %s %s\n\n%c%s.\n\nOptions:\n", prog, v->name, v->args,
                v->summary[0] - 32, v->summary + 1);
        print_options(f, v->bit);
        fputc('\n', f);
        print_exit_codes(f);
        return 0;
    }
    fprintf(f, "Usage: %s VERB [options]\n\n"
               "Chooses, on your machine, the backend a Kubernetes workload runs on in a\n"
               "cluster scheduled by Fluence, following its select-policy annotation.\n\n"
               "Verbs:\n", prog);
    for (size_t i = 0; i < COUNTOF(verbs); i++)
        fprintf(f, "  %-11s %s\n", verbs[i].name, verbs[i].summary);
    fprintf(f, "\nRun '%s VERB --help' for a verb's options.\n\n"
               "Environment:\n"
               "  FLUENCE_POLICY_PATH    colon-separated policy plugin directories\n"
               "  FLUENCE_PROVIDER_PATH  colon-separated provider plugin directories\n"
               "  FLUENCE_SOURCE_DIR     load lua/, policies/, providers/ from this source tree\n"
               "  KUBECONFIG             kubeconfig files, colon-separated\n"
               "  NO_COLOR               no colour in explain output\n\n",
            prog);
    print_exit_codes(f);
    return 0;
}

/* fluence.clispec: the same tables as Lua data, for shell completion, the man
 * page generator (tools/gen-man.lua) and specs, so none of them can drift:
 *   { verbs = { {name=, args=, summary=}, ... },
 *     options = { {name=, short=, arg="flag"|"value"|"optional"|"count",
 *                  ["repeat"]=bool, verbs={"select", ...}, metavar=, help=}, ... },
 *     exit_codes = { {code=, meaning=}, ... } } */
static void set_string(lua_State *L, const char *key, const char *value)
{
    if (!value) return;
    lua_pushstring(L, value);
    lua_setfield(L, -2, key);
}

int luaopen_fluence_clispec(lua_State *L)
{
    static const char *const argkinds[] = {"flag", "value", "optional", "count"};
    lua_createtable(L, 0, 3);
    lua_createtable(L, (int)COUNTOF(verbs), 0);
    for (size_t i = 0; i < COUNTOF(verbs); i++) {
        lua_createtable(L, 0, 3);
        set_string(L, "name", verbs[i].name);
        set_string(L, "args", verbs[i].args);
        set_string(L, "summary", verbs[i].summary);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    lua_setfield(L, -2, "verbs");
    lua_createtable(L, (int)COUNTOF(options), 0);
    for (size_t i = 0; i < COUNTOF(options); i++) {
        const struct option *o = &options[i];
        lua_createtable(L, 0, 7);
        set_string(L, "name", o->name);
        if (o->shortname) {
            char s[2] = {o->shortname, 0};
            set_string(L, "short", s);
        }
        set_string(L, "arg", argkinds[o->arg]);
        lua_pushboolean(L, o->repeat);
        lua_setfield(L, -2, "repeat");
        lua_newtable(L);
        lua_Integer n = 0;
        for (size_t j = 0; j < COUNTOF(verbs); j++)
            if (o->verbs & verbs[j].bit) {
                lua_pushstring(L, verbs[j].name);
                lua_rawseti(L, -2, ++n);
            }
        lua_setfield(L, -2, "verbs");
        set_string(L, "metavar", o->metavar);
        set_string(L, "help", o->help);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    lua_setfield(L, -2, "options");
    lua_createtable(L, (int)COUNTOF(exit_codes), 0);
    for (size_t i = 0; i < COUNTOF(exit_codes); i++) {
        lua_createtable(L, 0, 2);
        lua_pushinteger(L, exit_codes[i].code);
        lua_setfield(L, -2, "code");
        set_string(L, "meaning", exit_codes[i].meaning);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    lua_setfield(L, -2, "exit_codes");
    return 1;
}
