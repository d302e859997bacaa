/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The one number parser for text from outside (files, options, progress lines): decimal only,
 * finite, range-checked before any conversion to an integer type.
 *
 * Threads: every function is pure and safe to call from any thread.
 */
#ifndef MIGBENCH_NUM_H
#define MIGBENCH_NUM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Parses a decimal number at the start of s: an optional sign, digits with an optional '.'
 * fraction (at least one digit in all), an optional exponent "e[+-]digits". No leading space,
 * hex ("0x10"), "inf" or "nan". When rest is NULL the whole of s must be the number; otherwise
 * *rest points after it. Returns MB_OK with *out; MB_EPARSE when s does not start with such a
 * number (or has text after it and rest is NULL); MB_ERANGE when it is one but too large or too
 * small in magnitude for a double ("1e400", "1e-400"; "1e-308", which only a denormal holds).
 */
int mb_num_parse(const char *s, double *out, const char **rest);

/* True when v is finite and converts to int64_t without overflow (after truncation). */
bool mb_num_fits_i64(double v);

/* True when v is finite and converts to uint64_t without overflow (after truncation). */
bool mb_num_fits_u64(double v);

/*
 * Converts v to an integer within lo..hi: MB_OK with *out when v is finite, whole and in range;
 * MB_ERANGE otherwise (*out untouched). The range check happens on the double, before any cast.
 */
int mb_num_to_i64(double v, int64_t lo, int64_t hi, int64_t *out);

/*
 * Writes v rounded to sig significant digits into buf (cap bytes) without trailing zeros, as
 * every output of migbench shows a measured figure: 149.6 with 2 digits gives "150", 0.4000 gives
 * "0.4"; 0 and non-finite values print as "%.0f" does. Returns buf.
 */
char *mb_num_fmt_sig(char *buf, size_t cap, double v, int sig);

/* FNV-1a 64 over bytes, continuing from h (start with MB_FNV1A_INIT). */
#define MB_FNV1A_INIT 0xcbf29ce484222325ULL
uint64_t mb_fnv1a64(uint64_t h, const void *data, size_t len);

#endif
