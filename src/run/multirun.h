/* SPDX-License-Identifier: Apache-2.0 */
/*
 * An experiment's cells through the cell runner on one or many GPUs, in MIG-mode phases
 * (migbench/phased.h): one worker per GPU with its own device, meter and cool-down state, one
 * journal shared by all (its appends are locked), every cell.json naming the GPU it ran on.
 *
 * The caller prepares one struct mb_runner_opts per GPU (its own device, device spec, model and
 * power state; results directory, journal, python, stop flag shared) and its cell step, and gets
 * back the counts. Which cells are skipped (done, claimed elsewhere) is the cell step's answer:
 * the session's, the one place cells are claimed. The note and cell_done hooks are
 * called one at a time (under the run's lock) from worker threads; the runner's on_event hook of
 * each GPU is called from that GPU's worker.
 */
#ifndef MIGBENCH_MULTIRUN_H
#define MIGBENCH_MULTIRUN_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "run/phased.h"
#include "migbench/results.h"
#include "migbench/runner.h"

struct mb_multirun_opts {
    const struct mb_experiment *exp;
    const struct mb_cell *cells;
    size_t n_cells;
    struct mb_runner_opts *gpus; /* n_gpus runner options, one per GPU, borrowed */
    size_t n_gpus;
    struct mb_journal *journal; /* the experiment's journal (MIG-mode events go there too) */
    const cJSON *old_journal;   /* --resume: the journal read before this run; else NULL */
    bool manage_mig_mode;
    bool pin_reps;
    const double *est_s; /* per cell, for balancing; NULL: equal */
    volatile sig_atomic_t *stop;
    /*
     * Runs cell `cell` (an index into cells) with GPU ro's runner options: *skipped when it did
     * not run (done already, or running elsewhere), else *failed says whether it was recorded as
     * failed. MB_OK, MB_EINTR when stopped, or an error. Called from the workers, not under the
     * lock. Required.
     */
    int (*run_cell)(void *ctx, struct mb_runner_opts *ro, size_t cell, bool *failed, bool *skipped,
                    struct mb_error *err);
    /* A line for the user (a switch, a restore), no newline. May be NULL. */
    void (*note)(void *ctx, size_t gpu, const char *line);
    /* A cell ended: status MB_OK (failed says whether it was recorded as failed) or MB_EINTR.
     * May be NULL. */
    void (*cell_done)(void *ctx, size_t gpu, size_t cell, int status, bool failed);
    void *ctx;
};

struct mb_multirun_result {
    size_t ok, failed, skipped;
    bool interrupted;        /* the stop flag ended it; the GPUs were restored */
    size_t interrupted_cell; /* with interrupted: a cell that was stopped */
    size_t interrupted_gpu;
    struct mb_phased_result phased; /* switches, restores, and the first error */
};

/*
 * Runs the cells. gpu_of (n_cells entries, may be NULL) receives each cell's GPU. Returns MB_OK,
 * MB_EINTR when stopped (result->interrupted), or the first error (result->phased.err has it).
 */
int mb_multirun(const struct mb_multirun_opts *opts, size_t *gpu_of,
                struct mb_multirun_result *result);

#endif
