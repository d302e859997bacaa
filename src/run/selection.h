/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The selection syntax of `run --cells` (and `--only`, the same selection) and `--shard`: one
 * parser, shared by the session and the fuzz target. Private to the library.
 */
#ifndef MIGBENCH_SELECTION_H
#define MIGBENCH_SELECTION_H

#include <stdbool.h>
#include <stddef.h>

#include "migbench/status.h"

/*
 * True when name reads as a cell index ("1") or a range ("0-1"): such a run name could never be
 * selected by name, and a list naming it would pick cells of other runs instead. The experiment
 * reader refuses these names.
 */
bool mb__selection_is_index(const char *name, size_t len);

/* What a selection chooses from: cells (each by its run's name) and the experiment's runs. */
struct mb__selection_cells {
    const char *const *names; /* names[i]: the run of cell i */
    size_t n;                 /* cells */
    const char *const *runs;  /* every run of the experiment, also those skipped here */
    size_t n_runs;
};

/*
 * Marks in keep[0..c->n-1] the cells that list names. list is comma-separated items, each a
 * cell index "N", a range "A-B" (A <= B) or a run name (every cell of that run; none when the
 * run is skipped on this device, which its note says). opt ("--cells", "--only") starts each
 * message. MB_EINVAL for an empty list or item, an empty range, an index past the last cell
 * (however many digits it has) or a name of no run; keep may then be partly set.
 */
int mb__selection_mark(const char *list, const char *opt, const struct mb__selection_cells *c,
                       bool *keep, struct mb_error *err);

/* "I/N" with 0 <= I < N into *i and *n; MB_EINVAL otherwise. */
int mb__selection_shard(const char *shard, size_t *i, size_t *n, struct mb_error *err);

#endif
