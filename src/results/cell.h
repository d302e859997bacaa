/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cell.json's one reader (library-private), for modules outside the analysis: the cell's status
 * with the same limits and schema check as mb_analysis_load (results/cell.c). Its one writer is
 * run/runner_record.c.
 */
#ifndef MIGBENCH_CELL_H
#define MIGBENCH_CELL_H

#include <stdbool.h>

#include "migbench/status.h"

struct mb_cell_status {
    bool ok;             /* status "ok" */
    bool failed;         /* status "failed" (neither: a status this migbench does not write) */
    char reason[512];    /* failure.reason of a failed cell; "" when none */
    char slurm_job[160]; /* slurm.job: the Slurm job that ran it; "" outside Slurm */
};

/* Reads the cell.json at path: MB_ENOTFOUND when there is none, MB_EPARSE when it is damaged. */
int mb__cell_read_status(const char *path, struct mb_cell_status *out, struct mb_error *err);

/* The cell.json at path as its one decoder reads it, encoded again by its one encoder
 * (cell_record.c), as JSON text in *json (caller frees); errors as mb__cell_read_status. Used by
 * the stable API's mb_cell_json. */
int mb__cell_read_json(const char *path, char **json, struct mb_error *err);

#endif
