/* fluence.manifest, part 2: a large stream read on two threads
 * (manifest_split.c).  The main thread parses [0, seam) as always; a second
 * thread parses [seam, len), a document start at column 0 near the middle,
 * with its own libyaml parser and trees and no Lua state, keeping per
 * document only what manifest.c needs afterwards.  manifest.c uses the
 * second thread's documents only when its own parse ends a document exactly
 * at the seam and the second thread met no error or limit; otherwise it
 * parses on from the seam itself, so every result, error and position is
 * the sequential parse's. */
#ifndef FLUENCE_MANIFEST_SPLIT_H
#define FLUENCE_MANIFEST_SPLIT_H
#include <pthread.h>
#include <stdatomic.h>
#include "manifest_tree.h"

/* What manifest.c needs of a document: nothing (empty), its place (an
 * object that takes no part in a selection), or its tree. */
enum { MS_EMPTY, MS_INERT, MS_TREE };
typedef int (*ms_classify)(const struct mtree *t, size_t root, int active_only);

struct msdoc {
    struct mdoc d;                  /* offsets relative to the seam */
    int kind;                       /* MS_* */
    struct mtree tree;              /* MS_TREE: nodes, arena and dups (relative) */
};

struct msplit {
    pthread_t thread;
    int started, joined;
    atomic_int stop;                /* the main thread no longer wants the result */
    int failed;                     /* an error, a limit, memory, or stopped */
    size_t seam;
    int active_only, release;       /* release: hand the mapped text's pages back */
    ms_classify classify;
    struct mparse p;                /* over text + seam */
    struct msdoc *docs;
    size_t ndocs, cap;
};

/* The byte from which a split is worth it (below, one thread parses). */
#define MS_MIN_LEN ((size_t)4 << 20)

/* The seam at or after byte from: the start of a line "---" followed by a
 * blank, a line break or the end; 0 when there is none. */
size_t ms_find_seam(const char *text, size_t len, size_t from);
/* Starts the second thread on [seam, len) of text.  0, or -1 (nothing
 * started: parse on one thread). */
int ms_start(struct msplit *ms, const char *name, const char *text, size_t len, size_t seam,
             int active_only, int release, ms_classify classify);
/* Waits for the second thread.  Then ms->failed says whether its documents
 * may be used. */
void ms_join(struct msplit *ms);
/* Stops and waits for the second thread (if any) and frees what it kept. */
void ms_free(struct msplit *ms);
/* Shifts document i's tree to the whole text's offsets and lines. */
void ms_shift(struct msdoc *doc, size_t seam, size_t seam_line);

#endif
