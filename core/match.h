/* Fluxion-compatible matcher: resource graphs (JGF), canonical jobspecs v1,
 * the depth-first-and-up matcher and its writers.  Plain C, no Lua: the Lua
 * binding lives in match_lua.c.  See docs in core/match_dfu.c. */
#ifndef FLUENCE_MATCH_H
#define FLUENCE_MATCH_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------------------ graph */

/* One resource vertex.  Strings are offsets into mgraph.str (NUL-terminated);
 * children are a range of mgraph.children in JGF edge order. */
typedef struct mg_vertex {
    int32_t type;            /* index into mgraph.types */
    int32_t parent;          /* -1 for the root */
    uint32_t child0, nchild; /* range of mgraph.children */
    uint32_t back0, nback;   /* range of mgraph.backs: its other out-edges' targets */
    uint32_t fin_src;        /* the source of its first containment in-edge in JGF order */
    uint32_t fin_edge;       /* that edge in mgraph.children, or UINT32_MAX: a reverse edge
                              * (fin_src UINT32_MAX: none) */
    uint32_t name, basename, path, unit;
    uint32_t prop0, nprop;   /* range of mgraph.props (key, value pairs) */
    uint32_t jgf_id;         /* the JGF node "id" */
    int64_t id, uniq_id, rank, size;
    uint8_t status;          /* 0 up, 1 down */
    uint8_t exclusive;
} mg_vertex;

typedef struct mgraph {
    mg_vertex *v;
    uint32_t nv, cap;
    uint32_t *children;
    uint32_t *backs;         /* targets of out-edges that are not containment
                              * children (to a parent, another subsystem, a loop) */
    uint32_t *props;         /* 2 * nprops string offsets */
    uint32_t nprops, propcap;
    char *str;               /* string pool */
    size_t strlen, strcap;
    /* interning of pool strings (names, types, property keys ...) */
    uint32_t *ihash;
    size_t ihcap, ihn;
    uint32_t *types;         /* type name offsets, indexed by type id */
    int ntypes, typecap;
    int32_t root;
    int32_t node_type;       /* type id of "node", or -1 */
    int32_t core_type, gpu_type;
} mgraph;

/* Loads a JGF document.  Returns NULL and writes a message into err. */
mgraph *mg_load_jgf(const char *text, size_t len, char *err, size_t errlen);
/* The same from a file, mmap'd (NULL with err[0] == 0: not mappable, read it). */
mgraph *mg_load_jgf_file(const char *path, char *err, size_t errlen);
/* An empty graph to be filled with mg_add_vertex/mg_finish (graph builders). */
mgraph *mg_new(void);
void mg_free(mgraph *g);
const char *mg_str(const mgraph *g, uint32_t off);
uint32_t mg_intern(mgraph *g, const char *s, size_t n); /* (uint32_t)-1 on OOM */
int32_t mg_type_id(mgraph *g, const char *s, bool add);  /* -1 if absent */
const char *mg_type_name(const mgraph *g, int32_t t);
/* Graph building: vertex with parent (-1 root); props as key,value C strings. */
int32_t mg_add_vertex(mgraph *g, int32_t parent, const char *type, const char *basename,
                      const char *name, int64_t id, int64_t size, int64_t rank,
                      const char **props, int nprops);
/* Sorts out children arrays and paths after mg_add_vertex calls. */
int mg_finish(mgraph *g, char *err, size_t errlen);
bool mg_has_prop(const mgraph *g, uint32_t v, const char *key);

/* ---------------------------------------------------------------- jobspec */

enum { MJ_X_UNSPEC = -1, MJ_X_FALSE = 0, MJ_X_TRUE = 1 };

typedef struct mj_res {
    char *type;
    unsigned min, max;
    char oper;
    int operand;
    int exclusive;           /* MJ_X_* */
    char *label, *unit, *id;
    struct mj_res *with;
    int nwith;
} mj_res;

enum { MJC_PROPS, MJC_AND, MJC_OR, MJC_NOT, MJC_HOSTLIST, MJC_RANKS, MJC_TRUE };

typedef struct mj_cons {
    int op;
    char **items;            /* properties / hostnames / rank ranges */
    int nitems;
    struct mj_cons *kids;
    int nkids;
} mj_cons;

typedef struct mj_task {
    char *slot;
    int per_slot, total;     /* one of them > 0 */
} mj_task;

typedef struct mjobspec {
    int version;
    mj_res *res;
    int nres;
    double duration;
    mj_cons *constraint;     /* NULL: none */
    mj_task *tasks;
    int ntasks;
} mjobspec;

/* Parses and validates YAML or JSON.  NULL + message "NAME: path: problem". */
mjobspec *mj_parse(const char *text, size_t len, const char *name, char *err, size_t errlen);
/* Reads a jobspec as Fluxion v0.54 does (match_jobspec_fluxion.c), for
 * answers such as resource-query's: known(kctx, type) tells the resource
 * types Fluxion knows.  NULL + Fluxion's message. */
mjobspec *mj_parse_fluxion(const char *text, size_t len, bool (*known)(void *, const char *), void *kctx, char *err,
                           size_t errlen);
void mj_free(mjobspec *js);
void mj_cons_free(mj_cons *k); /* a constraint tree and its root */

/* ---------------------------------------------------------------- matcher */

enum { MOP_ALLOCATE, MOP_ALLOCATE_W_SAT, MOP_ALLOCATE_ORELSE_RESERVE, MOP_SATISFIABILITY };
/* resource-query's match formats (-F) */
enum { MFMT_SIMPLE, MFMT_RV1, MFMT_RV1_NOSCHED, MFMT_JGF };
int m_format(const char *name); /* MFMT_*, -1 when unknown */

typedef struct matcher matcher;

/* policy: a name (first, high, ...) or "policy=high node_centric=true ...";
 * format: MFMT_* of the resources each match writes */
matcher *m_new(mgraph *g, const char *policy, int format, char *err, size_t errlen);
void m_free(matcher *m);
/* 0 when policy is one the matcher knows, else -1 and the reason in err */
int m_check_policy(const char *policy, char *err, size_t errlen);

typedef struct mresult {
    bool matched;            /* allocated or reserved */
    bool satisfiable;
    bool reserved;
    bool counted;            /* the job id was used */
    int64_t jobid;
    int64_t at;
    char *R;                 /* the matched resources in the matcher's format ("" none) */
    char *info;              /* the INFO block */
    char *text;              /* R + info: resource-query's -t text of this command */
    char *msgs;              /* what resource-query prints on stderr for it ("" none) */
    char err[256];           /* when the command is an error rather than a verdict
                              * (its id unused): why, one line; else "" */
} mresult;

/* Runs one match command on a jobspec's text, as resource-query's `match
 * OP FILE` does: the jobspec read as Fluxion reads it, Fluxion's traversal,
 * its job ids, output and error lines. */
void m_match(matcher *m, int op, const char *text, size_t len, mresult *r);
void m_result_free(mresult *r);
int64_t m_next_jobid(const matcher *m);
/* Undoes every job from jobid on (cancels them) and makes jobid the next id
 * again: a trial match (fits:now) leaves no trace in the job ids. */
void m_rewind(matcher *m, int64_t jobid);
/* 0 ok, -1 no such job.  visits (may be NULL): the vertices the cancel
 * walk visits and those it finishes, as resource-query's `cancel N stats`
 * prints them. */
int m_cancel(matcher *m, int64_t jobid, unsigned visits[2]);
/* info: state "ALLOCATED" / "RESERVED" / "CANCELED"; -1 when unknown */
int m_info(const matcher *m, int64_t jobid, const char **state, int64_t *at, bool *reserved);

/* ---------------------------------------------------------------- writers */

/* What one match emitted, in resource-query's order: vertices post-order
 * (children before parents; a vertex reached through two parents twice)
 * with the amount taken and exclusivity, and the edges followed, each right
 * after its target's subtree. */
typedef struct memit {
    uint32_t *verts;
    unsigned *needs;
    uint8_t *excl;
    char **label;            /* per vertex, its label when emitted (NULL: none) */
    uint32_t n, cap, lcap;
    uint32_t *esrc, *etgt;
    uint32_t ne, ecap;
    int oom;
} memit;

/* The rv1 / rv1_nosched / jgf text of an emission (malloc'd, "" when the
 * format has nothing to say, NULL on error with errno set).  pending: what
 * earlier rv1 emissions without R_lite left in Fluxion's writer (they open
 * the next rv1 graph), kept by the caller across matches. */
char *mw_write(const mgraph *g, const memit *e, int format, int64_t starttime, int64_t expiration, memit *pending);
/* frees what a memit holds (and empties it) */
void mw_pending_free(memit *pending);
/* gives emitted vertex i a label (copied); -1 when out of memory */
int mw_label(memit *e, uint32_t i, const char *label);
/* The whole graph as a JGF document (compact), e.g. to hand it to Fluxion. */
char *mw_graph_jgf(const mgraph *g);
/* libstdc++'s std::sort of (key, index) pairs compared by key alone, so that
 * equal keys end up in the order Fluxion's C++ gets (idx is permuted). */
int m_std_sort(int64_t *keys, uint32_t *idx, uint32_t n, bool descending);
/* A growable NUL-terminated string for the matcher's text output (plain C:
 * the matcher runs without a Lua state).  An allocation failure sets oom
 * and turns later appends into no-ops; the caller checks oom once at the
 * end and frees d. */
typedef struct mbuf {
    char *d;
    size_t n, cap;
    int oom;
} mbuf;
void mbuf_add(mbuf *b, const char *s, size_t n);
void mbuf_puts(mbuf *b, const char *s);
void mbuf_printf(mbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* flux-core's hostlist encoding of names in order ("node[0-3,7],login1"). */
char *mw_hostlist(const char *const *names, size_t n);

#endif
