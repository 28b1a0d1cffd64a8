/* Command-line tables, parser and help (see clispec.h). */
#include <math.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <lauxlib.h>
#include "clispec.h"
#include "escape.h"
#include "exitcode.h"
#include "utf8.h"

enum { V_SELECT = 1 << 0, V_APPLY = 1 << 1, V_CREATE = 1 << 2, V_RUN = 1 << 3,
       V_EXPLAIN = 1 << 4, V_MATCH = 1 << 5, V_JOBSPEC = 1 << 6, V_POLICIES = 1 << 7,
       V_PROVIDERS = 1 << 8, V_COMPLETION = 1 << 9, V_VERSION = 1 << 10, V_HELP = 1 << 11,
       V_GRAPH = 1 << 12, V_TEST = 1 << 13, V_CHECK = 1 << 14, V_NEW = 1 << 15,
       V_FN = 1 << 16, V_PRICES = 1 << 17, V_RBAC = 1 << 18, V_DIFF = 1 << 19 };
#define V_APPLYING (V_APPLY | V_CREATE)
#define V_SELECTING (V_SELECT | V_APPLYING | V_RUN | V_EXPLAIN | V_FN | V_DIFF)
#define V_FILES (V_SELECTING & ~V_FN)   /* the selecting verbs reading -f: fn reads a ResourceList */
#define V_PLUGINS (V_TEST | V_CHECK)   /* the plugin authors' verbs that load plugins */
#define V_ALL 0xffffffffu

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
    {"diff", V_DIFF, "-f FILE [options]", "show, per context, what apply would create, change, move or leave (server dry run)"},
    {"run", V_RUN, "POLICY.lua -f FILE [options]", "select with a policy written in Lua (a file returning a pipeline or a function)"},
    {"explain", V_EXPLAIN, "-f FILE [options]", "show, per object, every backend, its attributes and what each stage did"},
    {"fn", V_FN, "[options] < ResourceList", "run as a KRM function (kpt, kustomize): select in a ResourceList read on stdin"},
    {"match", V_MATCH, "--graph GRAPH.json [JOBSPEC...]", "Fluxion-compatible matching: resource-query commands on stdin, or jobspecs"},
    {"jobspec", V_JOBSPEC, "-f FILE", "print the Fluxion jobspecs Fluence builds for each group in the manifests"},
    {"graph", V_GRAPH, "[--context NAME]... [-o jgf|tree] [--now]", "print the resource graph Fluence builds from a cluster's nodes and offerings"},
    {"rbac", V_RBAC, "[--user NAME]... [--group NAME]... [--serviceaccount NS:NAME]...", "print the least-privilege ClusterRole and Role fluence needs to read a cluster (and bindings to the subjects named)"},
    {"policies", V_POLICIES, "[options]", "list the selection policies, where each comes from, and what it does"},
    {"providers", V_PROVIDERS, "[options]", "list the backend providers, where each comes from, and what it does"},
    {"prices", V_PRICES, "--cloud CLOUD -t TYPE -r REGION... | --attributes FILE", "list the live prices the price providers see (Azure, AWS, GCP), with their source and age"},
    {"new", V_NEW, "policy|provider NAME [--dir DIR]", "create a plugin with a spec and a test case that pass 'fluence test'"},
    {"check", V_CHECK, "[PATH...] [options]", "check manifests' select-policy and plugin files, located, without selecting"},
    {"test", V_TEST, "[PATH...] [options]", "run plugin tests: busted specs (*_spec.lua) and cases (*.test.yaml), in process"},
    {"completion", V_COMPLETION, "bash|zsh|fish|kubectl", "print a shell completion script (kubectl: the kubectl_complete-fluence helper)"},
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
    {"attributes", 0, VALUE, 1, V_SELECTING | V_CHECK | V_PRICES, "FILE", "attribute file (YAML or JSON, the Go client's format); repeatable"},
    {"cloud", 0, VALUE, 0, V_PRICES, "CLOUD", "azure, aws or gcp: the cloud of every --instance-type"},
    {"color", 0, OPTIONAL, 0, V_ALL, "WHEN", "colour: auto (a terminal, unless NO_COLOR is set), always (the default of --color alone) or never"},
    {"confirm", 0, FLAG, 0, V_APPLYING, NULL, "show the selections and ask y/n on the terminal before applying"},
    {"context", 0, VALUE, 1, V_SELECTING | V_GRAPH, "NAME", "kubeconfig context; repeat to choose among clusters"},
    {"cost-tol", 0, VALUE, 0, V_SELECTING, "N[%]", "band of the cost and queue rankers: N absolute (default 0), N% of the best"},
    {"coverage", 0, FLAG, 0, V_TEST, NULL, "report which lines of each plugin file the tests ran"},
    {"coverage-min", 0, VALUE, 0, V_TEST, "PERCENT", "exit 1 when the tests ran fewer than PERCENT of the plugins' lines (implies --coverage)"},
    {"dir", 0, VALUE, 0, V_NEW, "DIR", "where to create the plugin and its tests (default ~/.fluence)"},
    {"dry-run", 0, OPTIONAL, 0, V_APPLYING, "MODE", "none, client (print only; the default when given alone) or server"},
    {"field-manager", 0, VALUE, 0, V_APPLYING | V_DIFF, "NAME", "server-side apply field manager (default kubectl-fluence)"},
    {"filename", 'f', VALUE, 1, V_FILES | V_JOBSPEC, "FILE", "manifest file, directory, or - for stdin; repeatable"},
    {"fits-best-effort", 0, FLAG, 0, V_SELECTING | V_GRAPH, NULL, "fits, fits:now and graph --now: when the cluster's nodes or pods cannot be read, keep every backend (match capacity) with a note, instead of exit 4"},
    {"fluence-ns", 0, VALUE, 0, V_SELECTING | V_JOBSPEC | V_GRAPH | V_RBAC, "NS", "namespace of the fluence-resources ConfigMap (default kube-system)"},
    {"force-conflicts", 0, FLAG, 0, V_APPLYING | V_DIFF, NULL, "take ownership of fields other managers set"},
    {"force-select", 0, FLAG, 0, V_SELECTING, NULL, "replace an existing require-backend pin"},
    {"format", 'F', VALUE, 0, V_MATCH, "FMT", "match output: simple (default), rv1, rv1_nosched or jgf"},
    {"graph", 0, VALUE, 1, V_SELECTING | V_MATCH | V_JOBSPEC, "FILE", "cluster resource graph (JGF) for fit checks / matching"},
    {"group", 0, VALUE, 1, V_RBAC, "NAME", "bind the rights to this group; repeatable"},
    {"help", 'h', FLAG, 0, V_ALL, NULL, "show this help"},
    {"instance-type", 't', VALUE, 1, V_PRICES, "TYPE", "an instance type, VM size or GPU name of --cloud; repeatable"},
    {"kubeconfig", 0, VALUE, 0, V_SELECTING | V_GRAPH, "FILE", "kubeconfig file (else KUBECONFIG, else ~/.kube/config)"},
    {"move", 0, FLAG, 0, V_APPLYING | V_DIFF, NULL, "with several --context: delete the copy an earlier apply placed in another context, once the new one is accepted"},
    {"namespace", 'n', VALUE, 0, V_SELECTING, "NS", "namespace for objects that do not name one"},
    {"now", 0, FLAG, 0, V_GRAPH, NULL, "what is free now: less what the pods bound to each node request"},
    {"offline", 0, FLAG, 0, V_SELECTING, NULL, "do not contact the cluster (no offerings); prices from the cache only"},
    {"offline", 0, FLAG, 0, V_PRICES, NULL, "prices from the cache only: no network"},
    /* -o: one entry per meaning (find_long) */
    {"output", 'o', VALUE, 0, V_SELECT | V_RUN, "FMT", "yaml (default), json or name"},
    {"output", 'o', VALUE, 0, V_JOBSPEC, "FMT", "yaml (default) or json"},
    {"output", 'o', VALUE, 0, V_APPLYING, "FMT", "name, yaml or json (default: each object and what was done)"},
    {"output", 'o', VALUE, 0, V_EXPLAIN, "FMT", "table (default), wide (every attribute), json or yaml"},
    {"output", 'o', VALUE, 0, V_POLICIES | V_PROVIDERS, "FMT", "table (default), wide, name, json or yaml"},
    {"output", 'o', VALUE, 0, V_PRICES, "FMT", "table (default) or json"},
    {"output", 'o', VALUE, 0, V_GRAPH, "FMT", "jgf (default; json is the same), yaml or tree"},
    {"output", 'o', VALUE, 0, V_TEST, "FMT", "text (default), junit or tap"},
    {"output", 'o', VALUE, 0, V_CHECK, "FMT", "text (default) or json: every problem as fields (file, line, column, message)"},
    {"plugin-timeout", 0, VALUE, 0, V_SELECTING | V_POLICIES | V_PROVIDERS | V_PLUGINS | V_PRICES, "SECONDS", "time limit of each plugin call, network waits aside (default 5; 0: none)"},
    {"policy", 'P', VALUE, 0, V_MATCH, "POLICY", "match policy: first (default), high, low, lonode, hinode, locality, variation, ..."},
    {"policy-dir", 0, VALUE, 1, V_SELECTING | V_POLICIES | V_COMPLETION | V_PLUGINS, "DIR", "extra directory of policy plugins (searched first); repeatable"},
    {"provider", 0, VALUE, 1, V_SELECTING | V_CHECK, "NAME", "also consult this provider; repeatable"},
    {"provider-dir", 0, VALUE, 1, V_SELECTING | V_PROVIDERS | V_COMPLETION | V_PLUGINS | V_PRICES, "DIR", "extra directory of provider plugins (searched first); repeatable"},
    {"recursive", 'R', FLAG, 0, V_FILES | V_JOBSPEC, NULL, "descend into directories given with -f"},
    {"region", 'r', VALUE, 1, V_PRICES, "REGION", "a region of --cloud (eastus, us-east-1, us-central1); repeatable"},
    {"request-timeout", 0, VALUE, 0, V_SELECTING | V_GRAPH | V_PRICES, "SECONDS", "time limit of each request to a cluster or a cloud API, retries included (default 30; price requests 10)"},
    {"require-offerings", 0, FLAG, 0, V_SELECTING, NULL, "fail when the cluster's offerings cannot be read"},
    {"serviceaccount", 0, VALUE, 1, V_RBAC, "NS:NAME", "bind the rights to this service account; repeatable"},
    {"user", 0, VALUE, 1, V_RBAC, "NAME", "bind the rights to this user; repeatable"},
    {"verbose", 'v', COUNT, 0, V_ALL, NULL, "more detail on stderr (repeat for more)"},
};

#define COUNTOF(a) (sizeof(a) / sizeof((a)[0]))

/* Options whose value is a number, checked while parsing: a typo ("abc",
 * "nan", "inf", "1e400", "0x10", "-1") is a usage error naming the option
 * and the value, never a silent 0 or a band that drops every backend.  A
 * number is decimal (digits, a point, an exponent), finite and not negative.
 * (Kept apart from the options table so the rows stay one line each.) */
enum numkind {
    NUM_BAND,       /* N, or N% (relative to the best value, as ~N% in a policy) */
    NUM_DURATION,   /* N seconds, or a kubectl duration: 30s, 1m30s, 500ms, 1h */
    NUM_PLAIN,      /* N only */
};

static const struct numeric {
    const char *name;
    enum numkind kind;
    const char *expected;
} numerics[] = {
    {"cost-tol", NUM_BAND, "a number >= 0, or a percentage of the best value (like 0.05 or 5%)"},
    {"coverage-min", NUM_PLAIN, "a percentage from 0 to 100"},
    {"plugin-timeout", NUM_PLAIN, "a number of seconds >= 0 (0: no limit)"},
    {"request-timeout", NUM_DURATION, "a duration >= 0 (seconds, or like 30s, 1m, 500ms)"},
};

/* Length of the decimal number at s ([+-] digits [. digits] [e [+-] digits],
 * or .digits), 0 when there is none; exponent: whether one may follow. */
static size_t decimal_len(const char *s, int exponent)
{
    size_t i = 0, digits = 0;
    if (s[i] == '+' || s[i] == '-') i++;
    while (s[i] >= '0' && s[i] <= '9') i++, digits++;
    if (s[i] == '.') {
        i++;
        while (s[i] >= '0' && s[i] <= '9') i++, digits++;
    }
    if (!digits) return 0;
    if (exponent && (s[i] == 'e' || s[i] == 'E')) {
        size_t j = i + 1;
        if (s[j] == '+' || s[j] == '-') j++;
        if (s[j] >= '0' && s[j] <= '9') {
            while (s[j] >= '0' && s[j] <= '9') j++;
            i = j;
        }
    }
    return i;
}

/* The value of the decimal s[0..n) (n bytes, as decimal_len measured). */
static double decimal_value(const char *s, size_t n)
{
    char buf[64];
    if (n >= sizeof buf) return HUGE_VAL;   /* 64 digits: not a tolerance anyone means */
    memcpy(buf, s, n);
    buf[n] = 0;
    return strtod(buf, NULL);
}

/* Is value a valid number of this kind?  (v: its value in its unit.) */
static int numeric_ok(enum numkind kind, const char *value, double *v)
{
    size_t n = decimal_len(value, 1);
    if (n && (value[n] == 0 || (kind == NUM_BAND && value[n] == '%' && value[n + 1] == 0))) {
        *v = decimal_value(value, n);
    } else if (kind == NUM_DURATION && n) {
        /* 1h2m3.5s500ms: number-unit pairs, no exponents */
        static const struct { const char *unit; double secs; } units[] = {
            {"ms", 0.001}, {"h", 3600}, {"m", 60}, {"s", 1},
        };
        const char *p = value;
        *v = 0;
        while (*p) {
            size_t k = decimal_len(p, 0);
            if (!k || p[0] == '+' || p[0] == '-') return 0;
            double part = decimal_value(p, k);
            p += k;
            size_t u = 0;
            while (u < COUNTOF(units) && strncmp(p, units[u].unit, strlen(units[u].unit)) != 0) u++;
            if (u == COUNTOF(units)) return 0;
            *v += part * units[u].secs;
            p += strlen(units[u].unit);
        }
    } else return 0;
    return isfinite(*v) && !(*v < 0) && value[0] != '-';
}

/* NULL when o takes no number or value is a good one; else what it expects. */
static const char *numeric_problem(const struct option *o, const char *value)
{
    for (size_t i = 0; i < COUNTOF(numerics); i++) {
        if (strcmp(numerics[i].name, o->name) != 0) continue;
        double v;
        return numeric_ok(numerics[i].kind, value, &v) ? NULL : numerics[i].expected;
    }
    return NULL;
}

static const struct verb *find_verb(const char *name)
{
    for (size_t i = 0; i < COUNTOF(verbs); i++)
        if (strcmp(verbs[i].name, name) == 0) return &verbs[i];
    return NULL;
}

/* An option may stand more than once, for disjoint sets of verbs, when its
 * values mean something else per verb (-o): the entry for vbit, else NULL. */
static const struct option *find_long(const char *name, size_t len, unsigned vbit)
{
    for (size_t i = 0; i < COUNTOF(options); i++)
        if (strlen(options[i].name) == len && strncmp(options[i].name, name, len) == 0 &&
            (options[i].verbs & vbit))
            return &options[i];
    return NULL;
}

static const struct option *find_short(char c, unsigned vbit)
{
    for (size_t i = 0; i < COUNTOF(options); i++)
        if (options[i].shortname == c && (options[i].verbs & vbit)) return &options[i];
    return NULL;
}

/* "fluence: PRE WHAT POST (see 'PROG VERB --help')"; WHAT, a word of the
 * command line, escaped (an escape sequence in it cannot paint the terminal). */
static int usage_error(const char *prog, const char *verb, const char *pre, const char *what,
                       const char *post)
{
    char shown[512];
    fluence_escape_into(shown, sizeof shown, what, strlen(what), 0);
    fprintf(stderr, "fluence: %s %s%s", pre, shown, post);
    fprintf(stderr, " (see '%s %s--help')\n", prog, verb ? verb : "");
    return FLUENCE_EXIT_USAGE;
}

/* [-0, +0]  The word of words[0..n) closest to word, as "did you mean"
 * finds it everywhere (lua/fluence/suggest.lua: the one rule, so a verb or
 * an option is suggested as a policy or a provider name is), written into
 * buf; "" when none is within a typo's reach or Lua cannot say. */
static void nearest(lua_State *L, const char *word, const char *const *words, size_t n, char *buf, size_t size)
{
    buf[0] = 0;
    int top = lua_gettop(L);
    lua_getglobal(L, "require");
    lua_pushliteral(L, "fluence.suggest");
    if (lua_pcall(L, 1, 1, 0) == LUA_OK && lua_getfield(L, -1, "closest") == LUA_TFUNCTION) {
        lua_pushstring(L, word);
        lua_createtable(L, (int)n, 0);
        for (size_t i = 0; i < n; i++) {
            lua_pushstring(L, words[i]);
            lua_rawseti(L, -2, (lua_Integer)i + 1);
        }
        if (lua_pcall(L, 2, 1, 0) == LUA_OK && lua_type(L, -1) == LUA_TSTRING)
            snprintf(buf, size, "%s", lua_tostring(L, -1));
    }
    lua_settop(L, top);
}

/* An unknown verb: the usage error, with the nearest verb when there is one. */
static int unknown_verb(lua_State *L, const char *prog, const char *word)
{
    const char *names[COUNTOF(verbs)];
    for (size_t i = 0; i < COUNTOF(verbs); i++) names[i] = verbs[i].name;
    char near[64], post[96] = "";
    nearest(L, word, names, COUNTOF(verbs), near, sizeof near);
    if (near[0]) snprintf(post, sizeof post, "; did you mean \"%s\"?", near);
    return usage_error(prog, NULL, "unknown verb", word, post);
}

/* An unknown long option (arg: as given, "--atributes=x"): the usage error,
 * with the nearest option of this verb when there is one. */
static int unknown_option(lua_State *L, const char *prog, const char *vname, unsigned vbit, const char *arg)
{
    const char *names[COUNTOF(options)];
    char given[128], near[64], post[96] = "";
    size_t n = 0;
    for (size_t i = 0; i < COUNTOF(options); i++)
        if ((options[i].verbs & vbit) && (n == 0 || strcmp(names[n - 1], options[i].name) != 0))
            names[n++] = options[i].name;
    snprintf(given, sizeof given, "%.*s", (int)strcspn(arg + 2, "="), arg + 2);
    nearest(L, given, names, n, near, sizeof near);
    if (near[0]) snprintf(post, sizeof post, "; did you mean --%s?", near);
    return usage_error(prog, vname, "unknown option", arg, post);
}

/* "fluence: --cost-tol: "abc" is not ... (see 'PROG VERB --help')" */
static int bad_number(const char *prog, const char *verb, const struct option *o, const char *value,
                      const char *expected)
{
    char shown[512];
    fluence_escape_into(shown, sizeof shown, value, strlen(value), FLUENCE_ESC_QUOTE);
    fprintf(stderr, "fluence: --%s: %s is not %s", o->name, shown, expected);
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
                    return unknown_verb(L, prog, a);
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
            const struct option *o = find_long(name, eq ? (size_t)(eq - name) : strlen(name), vbit);
            if (!o) {
                lua_pop(L, 3);
                return unknown_option(L, prog, vname, vbit, a);
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
            const char *want = value ? numeric_problem(o, value) : NULL;
            if (want) {
                lua_pop(L, 3);
                return bad_number(prog, vname, o, value, want);
            }
            store(L, o, value);
            continue;
        }
        /* short options, bundled: -vv, -fFILE, -f FILE */
        for (char *p = a + 1; *p; p++) {
            const struct option *o = find_short(*p, vbit);
            char bad[3] = {'-', *p, 0};
            if (!o) {
                /* named whole: a character beyond ASCII is several bytes */
                unsigned cp;
                size_t len = utf8_decode((const unsigned char *)p, strlen(p), &cp);
                char whole[8];
                snprintf(whole, sizeof whole, "-%.*s", (int)(len ? len : 1), p);
                lua_pop(L, 3);
                return usage_error(prog, vname, "unknown option", whole, "");
            }
            if (o->arg == VALUE) {
                const char *value = p[1] ? p + 1 : (i + 1 < argc ? argv[++i] : NULL);
                if (!value) { lua_pop(L, 3); return usage_error(prog, vname, "option", bad, " needs a value"); }
                const char *want = numeric_problem(o, value);
                if (want) { lua_pop(L, 3); return bad_number(prog, vname, o, value, want); }
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

/* "-f, --filename FILE" / "    --dry-run[=MODE]": the left column of a help line. */
static int option_left(const struct option *o, char *left, size_t size)
{
    int n = snprintf(left, size, "%s%c%s--%s", o->shortname ? "-" : "",
                     o->shortname ? o->shortname : ' ', o->shortname ? ", " : "   ", o->name);
    if (o->metavar && n > 0 && (size_t)n < size)
        n += snprintf(left + n, size - (size_t)n, o->arg == OPTIONAL ? "[=%s]" : " %s", o->metavar);
    return n;
}

/* One line per option of the verb; the descriptions start in one column, two
 * spaces after the longest left part (so a long name never runs into them). */
static void print_options(FILE *f, unsigned vbit)
{
    char left[96];
    int width = 0;
    for (size_t i = 0; i < COUNTOF(options); i++) {
        int n = options[i].verbs & vbit ? option_left(&options[i], left, sizeof left) : 0;
        if (n > width) width = n;
    }
    for (size_t i = 0; i < COUNTOF(options); i++) {
        const struct option *o = &options[i];
        if (!(o->verbs & vbit)) continue;
        option_left(o, left, sizeof left);
        fprintf(f, "  %-*s  %s\n", width, left, o->help);
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
    {FLUENCE_EXIT_OUTPUT, "output error (stdout could not be written: a full disk, a closed stdout)"},
};

/* Every environment variable the program reads, once: `fluence help`, the man
 * page (tools/gen-man.lua, through fluence.clispec) and the docs list these,
 * and spec/environment_spec.lua holds the list to the getenv calls of the
 * sources.  A name ending in "_*" stands for a family (AWS_ENDPOINT_URL_*). */
static const struct envvar {
    const char *name, *help;
} environment[] = {
    {"FLUENCE_PLUGIN_TIMEOUT", "seconds a plugin call may run (as --plugin-timeout; default 5)"},
    {"FLUENCE_POLICY_PATH", "colon-separated policy plugin directories (after --policy-dir)"},
    {"FLUENCE_PROVIDER_PATH", "colon-separated provider plugin directories (after --provider-dir)"},
    {"FLUENCE_SOURCE_DIR", "load lua/, policies/, providers/ from this source tree first"},
    {"FLUENCE_DEBUG", "internal errors (exit 70) carry a Lua traceback"},
    {"FLUENCE_MAX_INPUT", "the size limit of a manifest, in bytes (default 512 MiB)"},
    {"FLUENCE_MANIFEST_SPLIT", "bytes from which a manifest stream is parsed on two threads (default 4 MiB; 0: one)"},
    {"FLUENCE_FLUXION_LIB", "flux-sched's libreapi_cli.so: match and fits run in Fluxion itself"},
    {"FLUENCE_SERVICEACCOUNT_DIR", "in a pod: the service account's token and CA (default the standard one)"},
    {"KUBECONFIG", "kubeconfig files, colon-separated (else ~/.kube/config)"},
    {"KUBERNETES_SERVICE_HOST", "in a pod without a kubeconfig: the API server's address"},
    {"KUBERNETES_SERVICE_PORT", "in a pod without a kubeconfig: the API server's port"},
    {"HOME", "where ~/.kube/config, ~/.fluence and ~/.aws are"},
    {"AWS_ACCESS_KEY_ID", "Braket and AWS price credentials (with AWS_SECRET_ACCESS_KEY), else the profile's"},
    {"AWS_SECRET_ACCESS_KEY", "Braket and AWS price credentials (with AWS_ACCESS_KEY_ID)"},
    {"AWS_SESSION_TOKEN", "the session token of temporary AWS credentials"},
    {"AWS_PROFILE", "the profile of the shared credentials and config files (default: default)"},
    {"AWS_SHARED_CREDENTIALS_FILE", "another place for ~/.aws/credentials"},
    {"AWS_CONFIG_FILE", "another place for ~/.aws/config"},
    {"AWS_REGION", "the region of Braket simulators (QPUs use their ARN's)"},
    {"AWS_DEFAULT_REGION", "the region when AWS_REGION is not set"},
    {"AWS_ENDPOINT_URL", "send AWS requests to this endpoint instead (tests, proxies)"},
    {"AWS_ENDPOINT_URL_*", "the same for one service (AWS_ENDPOINT_URL_BRAKET, _PRICING, _EC2)"},
    {"AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "set to true: ignore the two above"},
    {"FLUENCE_AZURE_PRICES_URL", "the Azure Retail Prices endpoint (azure-prices)"},
    {"FLUENCE_GCP_BILLING_URL", "the Cloud Billing Catalog endpoint (gcp-prices)"},
    {"FLUENCE_GCP_API_KEY", "the API key of gcp-prices (else GOOGLE_API_KEY); never shown"},
    {"GOOGLE_API_KEY", "the API key of gcp-prices when FLUENCE_GCP_API_KEY is not set"},
    {"FLUENCE_PRICE_TTL", "how long a cached price is fresh: seconds or 6h (default 6h; spot a sixth)"},
    {"XDG_CACHE_HOME", "the price cache is $XDG_CACHE_HOME/fluence/prices (else ~/.cache/fluence/prices)"},
    {"NO_COLOR", "no colour (as --color=never; https://no-color.org)"},
    {"SOURCE_DATE_EPOCH", "the time in the select-result audit (reproducible output)"},
    {"LD_PRELOAD", "naming valgrind's preload: the Lua state is freed at exit (leak checks)"},
};

/* Where the selecting verbs read a request from (docs/policy-language.md). */
static const char selecting_note[] =
    "The fluence.flux-framework.org/select-* annotations are read from the object,\n"
    "else from its Fluence pod template (spec.template.metadata.annotations):\n"
    "when both have one, the object's wins.  The pin goes to both places.\n\n";

/* What the exit codes mean for the plugin authors' verbs. */
static const char plugin_tests_note[] =
    "test exits 0 when every test passed, 1 when one failed, 3 for a malformed test\n"
    "file; check exits 3 for any error, 0 with warnings only (docs/testing-plugins.md).\n\n";

static void print_exit_codes(FILE *f)
{
    fputs("Exit codes:\n", f);
    for (size_t i = 0; i < COUNTOF(exit_codes); i++)
        fprintf(f, "  %-3d %s\n", exit_codes[i].code, exit_codes[i].meaning);
}

int fluence_cli_help(lua_State *L, FILE *f, const char *prog, const char *verb_name)
{
    if (verb_name) {
        const struct verb *v = find_verb(verb_name);
        if (!v) return unknown_verb(L, prog, verb_name);
        fprintf(f, "Usage: %s %s %s\n\n%c%s.\n\nOptions:\n", prog, v->name, v->args,
                toupper((unsigned char)v->summary[0]), v->summary + 1);
        print_options(f, v->bit);
        fputc('\n', f);
        if (v->bit & V_SELECTING) fputs(selecting_note, f);
        if (v->bit & V_PLUGINS) fputs(plugin_tests_note, f);
        print_exit_codes(f);
        return 0;
    }
    fprintf(f, "Usage: %s VERB [options]\n\n"
               "Chooses, on your machine, the backend a Kubernetes workload runs on in a\n"
               "cluster scheduled by Fluence, following its select-policy annotation.\n\n"
               "Verbs:\n", prog);
    for (size_t i = 0; i < COUNTOF(verbs); i++)
        fprintf(f, "  %-11s %s\n", verbs[i].name, verbs[i].summary);
    fprintf(f, "\nRun '%s VERB --help' for a verb's options.\n\nEnvironment:\n", prog);
    int width = 0;
    for (size_t i = 0; i < COUNTOF(environment); i++)
        if ((int)strlen(environment[i].name) > width) width = (int)strlen(environment[i].name);
    for (size_t i = 0; i < COUNTOF(environment); i++)
        fprintf(f, "  %-*s  %s\n", width, environment[i].name, environment[i].help);
    fputc('\n', f);
    print_exit_codes(f);
    return 0;
}

/* fluence.clispec: the same tables as Lua data, for shell completion, the man
 * page generator (tools/gen-man.lua) and specs, so none of them can drift:
 *   { verbs = { {name=, args=, summary=}, ... },
 *     options = { {name=, short=, arg="flag"|"value"|"optional"|"count",
 *                  ["repeat"]=bool, verbs={"select", ...}, metavar=, help=}, ... },
 *     exit_codes = { {code=, meaning=}, ... },
 *     environment = { {name=, help=}, ... },
 *     check = function(name, value) } */
static void set_string(lua_State *L, const char *key, const char *value)
{
    if (!value) return;
    lua_pushstring(L, value);
    lua_setfield(L, -2, key);
}

/* clispec.check(name, value) -> nil | what the option expects: the command
 * line's own check of a numeric option's value, for values that come from
 * elsewhere (fluence fn's functionConfig). */
static int clispec_check(lua_State *L)
{
    const char *name = luaL_checkstring(L, 1), *value = luaL_checkstring(L, 2);
    const struct option *o = find_long(name, strlen(name), V_ALL);
    const char *want = o ? numeric_problem(o, value) : NULL;
    if (want) lua_pushstring(L, want); else lua_pushnil(L);
    return 1;
}

int luaopen_fluence_clispec(lua_State *L)
{
    static const char *const argkinds[] = {"flag", "value", "optional", "count"};
    lua_createtable(L, 0, 5);
    lua_pushcfunction(L, clispec_check);
    lua_setfield(L, -2, "check");
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
    lua_createtable(L, (int)COUNTOF(environment), 0);
    for (size_t i = 0; i < COUNTOF(environment); i++) {
        lua_createtable(L, 0, 2);
        set_string(L, "name", environment[i].name);
        set_string(L, "help", environment[i].help);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    lua_setfield(L, -2, "environment");
    return 1;
}
