/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The cell runner: runs one cell (a run x one repetition) of an experiment on an open device and
 * describes it as cell.json (docs/results.md).
 *
 * A cell: cool down (after an earlier cell) -> set the run's power limit (recorded in the restore
 * ledger first, migbench/powercap.h) -> prepare the sharing mode (MIG instances, MPS
 * daemon, CPU partitions) -> idle baseline -> spawn the jobs (own process groups, bounded logs,
 * progress pipes) -> warm-up -> measurement window -> stop the jobs (SIGTERM, SIGKILL after the
 * grace period) -> tear the mode down -> restore the power limit. In exclusive mode the jobs run
 * one after another, each with its own warm-up and window. Telemetry is sampled from the device
 * throughout and kept in the cell's telemetry.csv.
 *
 * Every MIG instance and MPS daemon is written to the journal before the runner goes on, and
 * removed (and journaled as removed) on every exit path, including interruption.
 *
 * Threads: one thread; the stop flag may be set from a signal handler.
 */
#ifndef MIGBENCH_RUNNER_H
#define MIGBENCH_RUNNER_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "migbench/catalog.h"
#include "migbench/device.h"
#include "migbench/experiment.h"
#include "migbench/results.h"
#include "migbench/status.h"

/* What the runner reports while it works (for a progress line or log lines). */
enum mb_runner_event_kind {
    MB_RUNNER_CELL_START = 0,
    MB_RUNNER_PHASE_START, /* jobs spawned (exclusive: one per job) */
    MB_RUNNER_WINDOW_START,
    MB_RUNNER_TICK, /* about once a second */
    MB_RUNNER_STOPPING,
    MB_RUNNER_NOTE, /* text holds a message (a job failed, an instance was created, ...) */
};

struct mb_runner_event {
    enum mb_runner_event_kind kind;
    const char *run;
    unsigned rep;
    const char *text;       /* NOTE: the message; else NULL */
    double elapsed_s;       /* since the cell began */
    double window_s;        /* time in the window so far; 0 before it */
    double window_target_s; /* the window's planned length; 0 when not a time */
    size_t n_jobs;          /* jobs running now */
    const char *job_names[MB_EXP_MAX_JOBS];
    double rate[MB_EXP_MAX_JOBS]; /* current throughput per job; < 0 unknown */
    const char *rate_unit[MB_EXP_MAX_JOBS];
    double power_w; /* latest power reading; < 0 unknown */
};

typedef void (*mb_runner_event_fn)(void *ctx, const struct mb_runner_event *ev);

/*
 * What the cool-downs of one experiment share from cell to cell; the caller zeroes it once per
 * invocation and passes the same one to every cell. A cell cools down first when an earlier
 * cell of this invocation ran (cells_run): it waits, at most measure.cooldown, until the
 * device's power reading is within measure.cooldown_margin of the reference: the first idle
 * baseline of the experiment (measure.idle), else the lowest power reading seen so far.
 */
struct mb_runner_power {
    bool idle_ok; /* the first idle baseline measured in this invocation */
    double idle_w;
    bool lowest_ok; /* the lowest power reading seen (telemetry, windows, cool-down polls) */
    double lowest_w;
    bool cells_run;      /* a cell ran: the next one cools down first */
    bool fallback_noted; /* "no power reading, fixed wait" was said */
};

/* Everything a cell needs; all pointers are borrowed for the duration of the call. */
struct mb_runner_opts {
    const struct mb_experiment *exp;
    struct mb_device *dev;
    const char *device_spec;          /* the meter opens its own handle from it */
    const struct mb_gpu_model *model; /* the device's catalog model; NULL on the host */
    const char *results_dir;          /* the experiment's results directory */
    const char *python;               /* resolved interpreter for {python}; NULL when not needed */
    const char *workloads_dir;
    struct mb_journal *journal;
    volatile sig_atomic_t *stop; /* non-zero: stop now (holds the signal number) */
    mb_runner_event_fn on_event; /* may be NULL */
    void *ctx;
    uint64_t seed;                 /* for the random start offset of repetitions */
    struct mb_runner_power *power; /* experiment-wide cool-down state; NULL: no cool-downs */
    /* The power-limit axis (a run with power_limit): the device's restore-ledger record
     * (mb_powercap_ledger_path) and the site's privileged helper (NULL: set through the device).
     * A capped run without a ledger path fails its cells. */
    const char *power_ledger;
    const char *power_helper;
};

/*
 * Runs cell and writes <results_dir>/<run>/<rep>/cell.json. Returns MB_OK when the cell was
 * recorded (*failed tells whether its status is "failed": a job exited non-zero, hung, was
 * killed, or the mode could not be prepared); MB_EINTR when *opts->stop was set (the jobs and
 * the mode were torn down, no cell.json written, "interrupted" not yet journaled); other codes
 * when the results could not be written.
 */
int mb_runner_run_cell(const struct mb_runner_opts *opts, const struct mb_cell *cell, bool *failed,
                       struct mb_error *err);

/*
 * Checks, before anything runs, that each cell's mode can run here: mps needs the nvml backend
 * and nvidia-cuda-mps-control on PATH; mig needs MIG mode enabled and the layout to fit beside
 * the instances that exist now. MB_EUNSUPPORTED / MB_ENORESOURCES with the run named in err.
 */
int mb_runner_preflight(const struct mb_runner_opts *opts, const struct mb_cell *cells,
                        size_t n_cells, struct mb_error *err);

/*
 * Resume: how many MIG instances the dead run of opts->results_dir left on this GPU, by the one
 * record of them, the MIG ledger (mig.h). Instances that only an older migbench's journal names
 * (left->mig: "mig_created" events without a ledger reference) are first recorded in the ledger
 * when still there with the recorded profile and placement.
 */
int mb_runner_mig_leftovers(const struct mb_runner_opts *opts, const struct mb_leftovers *left,
                            size_t *n, struct mb_error *err);

/*
 * Removes what a dead run left behind: the MIG instances the ledger records as that run's (after
 * the adoption above; mb_mig_clear_run) and each outstanding MPS daemon of the journal (told to
 * quit through its pipe directory). Each removal is journaled. *removed counts what was removed;
 * problems that leave something behind are returned as MB_EBUSY with the first one in err.
 */
int mb_runner_cleanup(const struct mb_runner_opts *opts, const struct mb_leftovers *left,
                      size_t *removed, struct mb_error *err);

#endif
