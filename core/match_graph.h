/* Resource graphs for the matcher (match_graph.c): a containment tree read
 * from JGF, or built vertex by vertex (match.c's graph builders).  Plain C,
 * no Lua. */
#ifndef FLUENCE_MATCH_GRAPH_H
#define FLUENCE_MATCH_GRAPH_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

/* Loads a JGF document.  Returns NULL and writes a message into err.
 * mapped: text is a file's mapping (readfile.h), whose pages are handed
 * back to the kernel once parsed, so the peak memory is the graph's. */
mgraph *mg_load_jgf(const char *text, size_t len, bool mapped, char *err, size_t errlen);
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

#endif
