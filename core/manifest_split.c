/* fluence.manifest, part 2: the second thread of a large stream's parse
 * (manifest_split.h says what and why).
 *
 * libyaml's scan is three quarters of reading a big stream, and documents
 * are independent: the state libyaml carries past a document that ends at
 * a "---" line (no directive: those need a "..." before them) is none a
 * fresh parser does not also start with.  What a stream does carry, the
 * alias budget (yaml_limits.h), manifest.c checks over both halves before
 * it uses any of this thread's documents.
 *
 * This thread never touches the Lua state: mparse's fail jump catches every
 * error, limit and allocation failure as "failed", and manifest.c then
 * parses the second half itself, so the message, position and exit code are
 * the sequential parse's.  It hands the mapped text's pages back behind it,
 * as the main thread does (readfile.h), so two parses in flight hold no
 * more of the text than one. */
#include <signal.h>
#include <stdlib.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <string.h>
#include "manifest_split.h"
#include "readfile.h"
#include "yaml_limits.h"

size_t ms_find_seam(const char *text, size_t len, size_t from)
{
    size_t at = from > 0 ? from - 1 : 0;
    while (at < len) {
        const char *nl = memchr(text + at, '\n', len - at);
        if (!nl) return 0;
        size_t i = (size_t)(nl - text) + 1;
        if (i + 3 <= len && memcmp(text + i, "---", 3) == 0 &&
            (i + 3 == len || (text[i + 3] && strchr(" \t\r\n", text[i + 3]))))
            return i;
        at = i;
    }
    return 0;
}

/* Moves the current document's tree into doc (its nodes, scalars and
 * duplicate keys; the anchors and scratch stay with the parser). */
static int keep_tree(struct mparse *p, struct msdoc *doc)
{
    const struct mtree *t = &p->tree;
    struct mtree *k = &doc->tree;
    k->nodes = malloc(t->n * sizeof *t->nodes);
    k->arena = malloc(t->alen ? t->alen : 1);
    k->dups = t->ndups ? malloc(t->ndups * sizeof *t->dups) : NULL;
    if (!k->nodes || !k->arena || (t->ndups && !k->dups)) return -1;
    memcpy(k->nodes, t->nodes, t->n * sizeof *t->nodes);
    if (t->alen) memcpy(k->arena, t->arena, t->alen);
    if (t->ndups) memcpy(k->dups, t->dups, t->ndups * sizeof *t->dups);
    k->n = k->cap = t->n;
    k->alen = k->acap = t->alen;
    k->ndups = k->capdups = t->ndups;
    return 0;
}

static void tree_free(struct mtree *k)
{
    free(k->nodes); free(k->arena); free(k->dups);
    memset(k, 0, sizeof *k);
}

static void *run(void *arg)
{
    struct msplit *ms = arg;
    struct mparse *p = &ms->p;
    jmp_buf jb;
    if (setjmp(jb)) {
        ms->failed = 1;
        return NULL;
    }
    p->fail = &jb;
    size_t released = 0;
    struct mdoc d;
    while (mp_next_doc(NULL, p, &d)) {
        if (ms->release) fluence_release_behind(p->text, &released, d.end);
        if (ms->ndocs == ms->cap) {
            size_t cap = ms->cap ? ms->cap * 2 : 256;
            struct msdoc *q = realloc(ms->docs, cap * sizeof *q);
            if (!q) longjmp(jb, 1);
            ms->docs = q;
            ms->cap = cap;
        }
        struct msdoc *doc = &ms->docs[ms->ndocs++];
        memset(doc, 0, sizeof *doc);
        doc->d = d;
        doc->kind = !d.root || mt_is_null(&p->tree, d.root) ? MS_EMPTY
                    : ms->classify(&p->tree, d.root, ms->active_only);
        if (doc->kind == MS_TREE && keep_tree(p, doc) != 0) longjmp(jb, 1);
    }
    return NULL;
}

int ms_start(struct msplit *ms, const char *name, const char *text, size_t len, size_t seam,
             int active_only, int release, ms_classify classify)
{
    memset(ms, 0, sizeof *ms);
    if (seam == 0 || seam >= len) return -1;
    if (mp_init(&ms->p, name, text + seam, len - seam) != 0) { mp_free(&ms->p); return -1; }
    ms->p.budget = fluence_yaml_alias_budget(len);
    ms->seam = seam;
    ms->active_only = active_only;
    ms->release = release;
    ms->classify = classify;
    atomic_init(&ms->stop, 0);
    ms->p.stop = &ms->stop;
    /* the thread takes no asynchronous signal (^C, a closed pipe's, a
     * plugin run's handlers are the main thread's); the synchronous ones
     * stay: a mapped file truncated under it still ends the run with its
     * name (readfile.h) */
    sigset_t all, old;
    sigfillset(&all);
    sigdelset(&all, SIGBUS);
    sigdelset(&all, SIGSEGV);
    sigdelset(&all, SIGFPE);
    sigdelset(&all, SIGILL);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    int err = pthread_create(&ms->thread, NULL, run, ms);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (err != 0) { mp_free(&ms->p); return -1; }
    ms->started = 1;
    return 0;
}

void ms_join(struct msplit *ms)
{
    if (ms->started && !ms->joined) {
        pthread_join(ms->thread, NULL);
        ms->joined = 1;
    }
}

void ms_free(struct msplit *ms)
{
    if (ms->started && !ms->joined) atomic_store(&ms->stop, 1);
    ms_join(ms);
    for (size_t i = 0; i < ms->ndocs; i++) tree_free(&ms->docs[i].tree);
    free(ms->docs);
    if (ms->started) mp_free(&ms->p);
#ifdef __GLIBC__
    /* the kept trees came from the second thread's own malloc arena, which
     * keeps freed memory: the 94 MB stream's 5,000 Jobs (21 MB) would stay
     * in the peak RSS through the selections (103 -> 82 MiB) */
    if (ms->started) malloc_trim(0);
#endif
    memset(ms, 0, sizeof *ms);
}

void ms_shift(struct msdoc *doc, size_t seam, size_t seam_line)
{
    doc->d.start += seam;
    doc->d.end += seam;
    struct mtree *t = &doc->tree;
    for (size_t i = 1; i < t->n; i++) {
        t->nodes[i].start += seam;
        t->nodes[i].end += seam;
        t->nodes[i].line += (uint32_t)seam_line;
    }
}
