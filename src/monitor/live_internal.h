/* SPDX-License-Identifier: Apache-2.0 */
/* The live files' reader and the runtime directory's check, private to the library and tests. */
#ifndef MIGBENCH_LIVE_INTERNAL_H
#define MIGBENCH_LIVE_INTERNAL_H

#include <stddef.h>

#include "migbench/live.h"

/*
 * Checks that dir (when it exists) is a directory, not a link, owned by this user and writable
 * by no one else: the runtime directory is shared ground (/tmp), and a directory another user
 * made or can write to holds files that user wrote. A missing dir passes. MB_EPERM names the
 * reason; MB_EIO when it cannot be examined.
 */
int mb__live_dir_check(const char *dir, struct mb_error *err);

/*
 * Parses one live file (len bytes at text, NUL-terminated; src names it in messages) into *c.
 * Every string must be UTF-8 without control characters, every number finite and in its range
 * (cell_index below cells, times up to a year, power up to 100 kW, rates not negative); the
 * first field that is not refuses the whole file with MB_EPARSE naming it, and *c is zeroed.
 */
int mb__live_parse(const char *text, size_t len, const char *src, struct mb_live_cell *c,
                   struct mb_error *err);

#endif
