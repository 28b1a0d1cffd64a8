/* A resource graph written as the JGF `fluence graph` prints (match_jgf.c):
 * vertices in order with Fluxion's metadata (keys sorted, as Fluence's
 * builder writes them) and one containment edge per vertex whose parent
 * path is a vertex's, indented by two, piece by piece into a sink, so the
 * text of a 16,000-node cluster is never held whole.  Plain C, no Lua. */
#ifndef FLUENCE_MATCH_JGF_H
#define FLUENCE_MATCH_JGF_H
#include <stddef.h>
#include <stdint.h>
#include "json_write.h"
#include "match_graph.h"

/* The scratch mg_write_jgf needs, in uint32_t: the caller allocates it (so
 * a sink that unwinds leaks nothing). */
size_t mg_jgf_scratch(const mgraph *g);
void mg_write_jgf(const mgraph *g, uint32_t *scratch, jw_sink out, void *to);

#endif
