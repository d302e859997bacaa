/* SPDX-License-Identifier: Apache-2.0 */
/*
 * An experiment's cells on one or many GPUs, in MIG-mode phases.
 *
 * Cells are assigned to GPUs with mb_gpuqueue_assign (repetitions spread, or pinned). On each GPU
 * its cells are ordered into phases (mb_migmode_order_cells: the GPU's current mode first, then
 * the other), and one worker per GPU runs them through the caller's run_cell hook. With
 * manage_mig_mode, a worker switches its GPU's MIG mode between its phases (mb_migmode: preflight,
 * original journaled once per GPU, switch, verify) and every switched GPU gets its original mode
 * back at the end, after an interruption or a failure too. Without it, the cells run as given, in
 * their order (the caller leaves out what the GPU's mode cannot run). A resumed run passes the old
 * journal: a GPU whose original mode a crashed run journaled is restored to that original at the
 * end, never to the mode it has now.
 *
 * Threads: run_cell, journal, owns and note are called from worker threads (one per GPU); each
 * GPU's device is used by its worker only, and by the calling thread after the workers ended.
 */
#ifndef MIGBENCH_PHASED_H
#define MIGBENCH_PHASED_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "migbench/device.h"
#include "migbench/experiment.h"
#include "migbench/status.h"

/* The caller's side; every member but run_cell may be NULL. ctx is passed back unchanged. */
struct mb_phased_hooks {
    /*
     * Runs cells[cell] on GPU gpu. MB_OK to go on (also when the cell failed and was recorded as
     * failed); any other status stops every worker after its current cell.
     */
    int (*run_cell)(void *ctx, size_t gpu, size_t cell, struct mb_error *err);
    /* Writes one journal event durably; must be safe to call from several threads at once. */
    int (*journal)(void *ctx, const cJSON *ev, struct mb_error *err);
    /* True when migbench made this MIG instance on GPU gpu (the ownership ledger). */
    bool (*owns)(void *ctx, size_t gpu, const struct mb_mig_instance *inst);
    /* One line for the user (a switch about to happen, a skipped cell, a restore), no newline. */
    void (*note)(void *ctx, size_t gpu, const char *line);
    void *ctx;
};

struct mb_phased_opts {
    const struct mb_experiment *exp;
    const struct mb_cell *cells;
    size_t n_cells;
    const double *est_s;         /* per cell estimate for balancing; NULL: all equal */
    struct mb_device **gpus;     /* n_gpus open devices, borrowed */
    size_t n_gpus;               /* 1..MB_MAX_DEVICES */
    bool manage_mig_mode;        /* switch MIG modes between phases */
    bool pin_reps;               /* all repetitions of a run on one GPU */
    const cJSON *old_journal;    /* a resumed run's events (mb_journal_read); NULL when fresh */
    volatile sig_atomic_t *stop; /* non-zero: stop after the current cells */
};

struct mb_phased_result {
    size_t cells_run;    /* run_cell returned MB_OK */
    size_t switches;     /* MIG-mode switches between phases (restores not counted) */
    size_t restores;     /* GPUs put back in their journaled original mode */
    int status;          /* MB_OK or the first error (a cell hook, a switch, a restore) */
    size_t failed_gpu;   /* with status != MB_OK */
    struct mb_error err; /* with status != MB_OK */
};

/*
 * Runs the cells as described above. gpu_of (n_cells entries, may be NULL) receives each cell's
 * GPU. Returns result->status. Invalid options: MB_EINVAL before anything ran.
 */
int mb_phased_run(const struct mb_phased_opts *opts, const struct mb_phased_hooks *hooks,
                  size_t *gpu_of, struct mb_phased_result *result);

#endif
