/* libstdc++'s std::sort reproduced (see match_sort.h): the same
 * comparisons in the same order as GCC's <bits/stl_algo.h>, so equal keys
 * end up where Fluxion's C++ puts them. */
#include <stdlib.h>
#include <string.h>
#include "match_sort.h"

#define LESS(a, b) (hi ? (a)->score > (b)->score : (a)->score < (b)->score)

static void sk_swap(msort_key *a, msort_key *b)
{
    msort_key t = *a;
    *a = *b;
    *b = t;
}

static void move_median_to_first(msort_key *result, msort_key *a, msort_key *b, msort_key *c, bool hi)
{
    if (LESS(a, b)) {
        if (LESS(b, c)) sk_swap(result, b);
        else if (LESS(a, c)) sk_swap(result, c);
        else sk_swap(result, a);
    } else if (LESS(a, c)) sk_swap(result, a);
    else if (LESS(b, c)) sk_swap(result, c);
    else sk_swap(result, b);
}

static msort_key *unguarded_partition(msort_key *first, msort_key *last, msort_key *pivot, bool hi)
{
    for (;;) {
        while (LESS(first, pivot)) ++first;
        --last;
        while (LESS(pivot, last)) --last;
        if (!(first < last)) return first;
        sk_swap(first, last);
        ++first;
    }
}

static void adjust_heap(msort_key *first, ptrdiff_t hole, ptrdiff_t len, msort_key value, bool hi)
{
    ptrdiff_t top = hole, second = hole;
    while (second < (len - 1) / 2) {
        second = 2 * (second + 1);
        if (LESS(&first[second], &first[second - 1])) second--;
        first[hole] = first[second];
        hole = second;
    }
    if ((len & 1) == 0 && second == (len - 2) / 2) {
        second = 2 * (second + 1);
        first[hole] = first[second - 1];
        hole = second - 1;
    }
    ptrdiff_t parent = (hole - 1) / 2;
    while (hole > top && LESS(&first[parent], &value)) {
        first[hole] = first[parent];
        hole = parent;
        parent = (hole - 1) / 2;
    }
    first[hole] = value;
}

static void heap_sort_all(msort_key *first, msort_key *last, bool hi)
{
    ptrdiff_t len = last - first;
    if (len >= 2) {
        ptrdiff_t parent = (len - 2) / 2;
        for (;;) {
            msort_key v = first[parent];
            adjust_heap(first, parent, len, v, hi);
            if (parent == 0) break;
            parent--;
        }
    }
    while (last - first > 1) {
        --last;
        msort_key v = *last;
        *last = *first;
        adjust_heap(first, 0, last - first, v, hi);
    }
}

static void introsort_loop(msort_key *first, msort_key *last, int depth, bool hi)
{
    while (last - first > 16) {
        if (depth == 0) {
            heap_sort_all(first, last, hi);
            return;
        }
        --depth;
        msort_key *mid = first + (last - first) / 2;
        move_median_to_first(first, first + 1, mid, last - 1, hi);
        msort_key *cut = unguarded_partition(first + 1, last, first, hi);
        introsort_loop(cut, last, depth, hi);
        last = cut;
    }
}

static void unguarded_linear_insert(msort_key *last, bool hi)
{
    msort_key val = *last;
    msort_key *next = last - 1;
    while (LESS(&val, next)) {
        *last = *next;
        last = next;
        --next;
    }
    *last = val;
}

static void insertion_sort(msort_key *first, msort_key *last, bool hi)
{
    if (first == last) return;
    for (msort_key *i = first + 1; i != last; ++i) {
        if (LESS(i, first)) {
            msort_key val = *i;
            memmove(first + 1, first, (size_t)(i - first) * sizeof *i);
            *first = val;
        } else {
            unguarded_linear_insert(i, hi);
        }
    }
}

int msort_monotone(const msort_key *first, ptrdiff_t n, bool hi)
{
    bool up = true, down = true;
    for (ptrdiff_t i = 1; i < n && (up || down); i++) {
        if (!LESS(&first[i - 1], &first[i])) up = false;
        if (!LESS(&first[i], &first[i - 1])) down = false;
    }
    return up ? 1 : down ? -1 : 0;
}

void msort_introsort(msort_key *first, msort_key *last, bool hi)
{
    ptrdiff_t n = last - first;
    int lg = 0;
    for (ptrdiff_t k = n; k > 1; k >>= 1) lg++;
    introsort_loop(first, last, 2 * lg, hi);
    if (n > 16) {
        insertion_sort(first, first + 16, hi);
        for (msort_key *i = first + 16; i != last; ++i) unguarded_linear_insert(i, hi);
    } else {
        insertion_sort(first, last, hi);
    }
}

void msort_keys(msort_key *first, msort_key *last, bool hi)
{
    ptrdiff_t n = last - first;
    if (n < 2) return;
    int mono = msort_monotone(first, n, hi);
    if (mono > 0) return;
    if (mono < 0) {
        for (msort_key *a = first, *b = last - 1; a < b; a++, b--) sk_swap(a, b);
        return;
    }
    msort_introsort(first, last, hi);
}

#undef LESS

int msort_pairs(int64_t *keys, uint32_t *idx, uint32_t n, bool descending)
{
    if (n < 2) return 0;
    msort_key *k = malloc((size_t)n * sizeof *k);
    if (!k) return -1;
    for (uint32_t i = 0; i < n; i++) {
        k[i].score = keys[i];
        k[i].idx = idx[i];
    }
    msort_keys(k, k + n, descending);
    for (uint32_t i = 0; i < n; i++) {
        keys[i] = k[i].score;
        idx[i] = k[i].idx;
    }
    free(k);
    return 0;
}
