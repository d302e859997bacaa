/* SPDX-License-Identifier: Apache-2.0 */
/* Internal text helpers shared by the library's source files. */
#ifndef MIGBENCH_TEXT_INTERNAL_H
#define MIGBENCH_TEXT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Copies src into dst (cap bytes, cap >= 1), cutting it to fit; always terminates dst. A NULL
 * src copies as "". Unlike snprintf it does not read src past what fits.
 */
void mb__copy_str(char *dst, size_t cap, const char *src);

/*
 * A set of strings, each with a number (an index into the caller's array): constant time per
 * look-up, so a check for repeated names over n entries of a hostile file costs O(n), not O(n^2).
 * Keys are copied. Zero-initialise; release with mb__strmap_clear.
 */
struct mb__strmap {
    size_t cap; /* slots, a power of two, or 0 */
    size_t n;
    char **keys;
    size_t *vals;
};

/* Adds key with *val when it is absent (returns 0); when present returns 1 and sets *val to the
 * stored number; -1 when out of memory. */
int mb__strmap_put(struct mb__strmap *m, const char *key, size_t *val);

/* Frees every key and the table; m can be used again. */
void mb__strmap_clear(struct mb__strmap *m);

#endif
