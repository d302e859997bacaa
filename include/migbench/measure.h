/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `measure` as a library call: one command run with the meter around it (an idle window first
 * when asked), its progress read from the progress pipe or a regex over its stdout, and the
 * figures of struct mb_measure_report (report_verbs.h) filled in: windows of the whole job and
 * of its steady part after the warm-up, throughput, energy per unit.
 *
 * Threads: one call at a time per process (the caller's signal flag is shared, and r->unit may
 * point to storage of this module until the next call).
 */
#ifndef MIGBENCH_MEASURE_H
#define MIGBENCH_MEASURE_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "migbench/report_verbs.h"
#include "migbench/status.h"

struct mb_measure_opts {
    const char *device; /* spec; CUDA_VISIBLE_DEVICES (the environment's) is resolved against it */
    char **argv;        /* the command, NULL-terminated; no shell */
    int64_t interval_ns;
    int64_t idle_ns;       /* > 0: an idle window of this length before the command */
    int64_t warmup_ns;     /* warm-up by time, left out of the throughput and steady window */
    uint64_t warmup_steps; /* or by steps */
    const char *regex;     /* POSIX ERE over stdout (step, optional own clock); NULL: the pipe */
    double samples_per_step;
    const char *unit;      /* the work unit's name; NULL: what the job reports */
    const char *csv;       /* every sample to this file; NULL none */
    int64_t min_window_ns; /* 0: the meter's rule */
    bool stdout_to_stderr; /* the command's stdout goes to stderr (the caller's stdout is JSON) */
    bool pty;              /* the command's stdout on a pseudo-terminal */
    bool python_buffered;  /* do not set PYTHONUNBUFFERED=1 */
    /* Set by the caller's signal handler: forwarded to the command (SIGINT, SIGTERM); before the
     * command started it ends the call with MB_EINTR. NULL: none. */
    volatile sig_atomic_t *signal;
    /* Called once the meter exists, before it starts (the caller's exports may open); a failure
     * ends the call with it. NULL: none. */
    int (*ready)(void *ctx, const struct mb_measure_report *r, struct mb_error *err);
    /* Called about every 100 ms while the command runs. NULL: none. */
    void (*tick)(void *ctx);
    void *ctx;
};

/* What ended a call that did not return MB_OK. */
enum mb_measure_stage {
    MB_MEASURE_DONE = 0,
    MB_MEASURE_USAGE,       /* bad options: the regex, the device spec, CUDA_VISIBLE_DEVICES */
    MB_MEASURE_SPAWN,       /* the command could not be started (mb_proc_spawn_exit_code) */
    MB_MEASURE_INTERRUPTED, /* a signal before the command started (*o->signal says which) */
    MB_MEASURE_FAILED,      /* the meter, the device or memory */
};

/*
 * Runs o->argv with the meter around it and fills *r (r->exit_code is the command's, as
 * timeout(1) gives it). On failure *stage says what failed and err why; for MB_MEASURE_SPAWN the
 * returned status maps to an exit code with mb_proc_spawn_exit_code.
 */
int mb_measure_run(const struct mb_measure_opts *o, struct mb_measure_report *r,
                   enum mb_measure_stage *stage, struct mb_error *err);

/* The energy a window used: its counter's, else its power integral's; false when it has neither. */
bool mb_energy_best(const struct mb_energy *e, double *j);

/* Fills r's energy per unit (steady mean power over steady throughput, both after the warm-up)
 * and its static/dynamic split (idle power x duration, the rest), each only when its inputs are
 * known: epu_valid and split_valid say so. */
void mb_measure_report_derive(struct mb_measure_report *r);

#endif
