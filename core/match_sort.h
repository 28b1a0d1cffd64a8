/* libstdc++'s std::sort (introsort) reproduced, so that what Fluxion's C++
 * sorts comes out here in the same order, equal keys included: the
 * matcher's candidates (match_score.c) and the nodes of an rv1 nodelist
 * (match_writers.c).  It sorts (key, index) pairs compared by key alone:
 * the comparisons, hence the result, are those of sorting the items
 * themselves, with 16-byte moves. */
#ifndef FLUENCE_MATCH_SORT_H
#define FLUENCE_MATCH_SORT_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct msort_key {
    int64_t score;
    uint32_t idx;
} msort_key;

/* hi: descending (larger keys first), else ascending */

/* Keys already in strict order (1), or in strict reverse order (-1), else
 * 0: children are visited by id and most are scored by id, and then the
 * one order any sort gives is found in one pass (no equal keys, so
 * std::sort's instability cannot show). */
int msort_monotone(const msort_key *first, ptrdiff_t n, bool hi);
/* std::sort proper, without looking for an order first. */
void msort_introsort(msort_key *first, msort_key *last, bool hi);
/* std::sort, a list in order or reversed found in one pass. */
void msort_keys(msort_key *first, msort_key *last, bool hi);
/* The same on parallel arrays: keys[i] and idx[i] move together; -1 when
 * out of memory. */
int msort_pairs(int64_t *keys, uint32_t *idx, uint32_t n, bool descending);

#endif
