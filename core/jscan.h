/* The one hand-written JSON scanner (jscan.c), for texts too large to build
 * a DOM of: a cluster's NodeList and PodList pages (kubelists.c: 150,000
 * pods are ~80 MB of JSON) and JGF resource graphs (match_graph.c: 100,000
 * vertices).  It validates the whole text as strict JSON (RFC 8259: UTF-8
 * strings, no lone surrogates, no trailing commas, numbers by the grammar)
 * while the caller keeps only the fields it wants, with no allocation per
 * value: a string without escapes is handed out where it lies in the text.
 * (Fluxion reads JGF with jansson, as strict.  The fuzz targets kubelists
 * and jgf check that whatever the scanner accepts is JSON text by RFC
 * 8259's grammar, lua/fluence/fuzz.lua.)
 *
 * Every call returns 0 (1: a member or element follows) or -1 after a
 * failure, whose static message and byte offset stay in err and errat (the
 * first failure's); the caller words the error (a byte offset, a line and
 * column). */
#ifndef FLUENCE_JSCAN_H
#define FLUENCE_JSCAN_H
#include <stddef.h>
#include <string.h>

struct jscan {
    const char *start, *p, *end;
    const char *err;           /* static message, set once */
    size_t errat;              /* where, from start */
    int depth, max_depth;
    char *scratch;             /* decoded strings with escapes */
    size_t scap;
};

/* A string's bytes: in the text, or (decoded escapes) in the scanner's
 * scratch, valid until the next string is read. */
struct jstr { const char *p; size_t n; };

void jscan_init(struct jscan *s, const char *text, size_t len, int max_depth);
void jscan_free(struct jscan *s);
/* Records msg at s->p (unless a failure is recorded already); -1. */
int jscan_fail(struct jscan *s, const char *msg);
/* The line and column (1-based, in bytes) of offset at. */
void jscan_line_col(const struct jscan *s, size_t at, int *line, int *col);

static inline void jscan_ws(struct jscan *s)
{
    while (s->p < s->end && (*s->p == ' ' || *s->p == '\n' || *s->p == '\r' || *s->p == '\t')) s->p++;
}

/* The next byte after blanks, -1 at the end. */
static inline int jscan_peek(struct jscan *s)
{
    jscan_ws(s);
    return s->p < s->end ? (unsigned char)*s->p : -1;
}

static inline int jstr_is(struct jstr k, const char *w)
{
    size_t n = strlen(w);
    return k.n == n && memcmp(k.p, w, n) == 0;
}

/* Consumes c (one of { } [ ] : ,) after blanks. */
int jscan_expect(struct jscan *s, char c);
int jscan_string(struct jscan *s, struct jstr *out);
/* A number; text: its characters as written. */
int jscan_number(struct jscan *s, struct jstr *text);
/* true, false or null (word), as written. */
int jscan_literal(struct jscan *s, const char *word);
/* Any value, validated and passed over. */
int jscan_skip(struct jscan *s);

/* An object's members one by one: state 0 before the first call; returns
 * 1 with the key read (and its ':'), the caller then consumes the value; 0
 * after the closing brace; -1 on failure.  jscan_next_element: the same
 * for an array (1: an element follows). */
int jscan_next_member(struct jscan *s, int *state, struct jstr *key);
int jscan_next_element(struct jscan *s, int *state);

/* The same as callbacks: fn consumes the member's value / the element. */
typedef int (*jscan_member_fn)(struct jscan *s, struct jstr key, void *ud);
typedef int (*jscan_element_fn)(struct jscan *s, void *ud);
int jscan_object(struct jscan *s, jscan_member_fn fn, void *ud);
int jscan_array(struct jscan *s, jscan_element_fn fn, void *ud);

#endif
