/* SPDX-License-Identifier: Apache-2.0 */
/*
 * An experiment session: an experiment opened on one device into one results directory, and
 * the engine that runs all of its cells or a selected subset of them (docs/run.md).
 *
 *   mb_session_open     device, catalog model, cells (runs that apply to the device, --only,
 *                       MIG-mode filtering, profile checks), results-directory policy, the
 *                       resume check, {python} and {workloads}; changes nothing anywhere
 *   mb_session_select   keep a subset of the cells: an index list ("0-2,5"), run names, or a
 *                       shard "I/N" (cells I, I+N, I+2N, ... of the list)
 *   mb_session_check    results-directory policy and preflight; changes nothing
 *   mb_session_start    results directory and journal (locked), a dead run's
 *                       leftovers removed (resume), the experiment_started entry
 *   mb_session_run_cell / mb_session_run
 *                       run one selected cell / every selected cell not yet done, journaling
 *                       every event; the stop flag interrupts between and inside cells
 *   mb_session_close    journal closed, device closed, everything freed
 *
 * Cells are numbered by their position in the experiment's full cell list for the device (run
 * order, then repetition), before any selection, so that two invocations that select "0-2" and
 * "3-5" of the same file split one experiment. A results directory that already holds this
 * experiment (same file and --set options: same sha) is joined when a selection is given or
 * with resume; cells already done there are skipped. Only resume removes what a dead run left.
 *
 * Several GPUs (a device spec such as "nvml:0,1,2,3", "nvml:all" or "emu:H100-80GB:count=4",
 * mb_device_spec_expand) make one session: mb_session_run runs one cell per GPU at a time
 * (src/run/multirun.h), repetitions spread over the GPUs unless pin_reps. With manage_mig_mode
 * the cells run in MIG-mode phases on each GPU, the original mode journaled and restored at the
 * end (and by a resumed run); the MIG-mode filter is then not applied.
 *
 * The library never prints: what the CLI shows comes through the events callback.
 * Threads: a session belongs to one thread; the stop flag may be set from a signal handler. On
 * several GPUs or with phases, the callbacks are called from worker threads, one at a time, and
 * the runner's events arrive as NOTE events only (no live progress from several cells at once).
 */
#ifndef MIGBENCH_SESSION_H
#define MIGBENCH_SESSION_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "migbench/catalog.h"
#include "migbench/device.h"
#include "migbench/experiment.h"
#include "migbench/runner.h"
#include "migbench/status.h"

enum mb_session_event_kind {
    MB_SESSION_NOTE = 0, /* text: something the user should know ("run 'x' skipped: ...") */
    MB_SESSION_WARN,     /* text: a warning */
    MB_SESSION_CELL,     /* a cell is about to run: cell, run, rep, estimates */
    MB_SESSION_CELL_DONE /* a cell was recorded: failed tells how */
};

struct mb_session_event {
    enum mb_session_event_kind kind;
    const char *text;         /* NOTE, WARN */
    size_t cell;              /* CELL, CELL_DONE: position in the selection */
    size_t n_cells;           /* selected cells */
    const char *run;          /* CELL, CELL_DONE */
    const char *mode;         /* CELL: the run's mode ("mig") */
    unsigned rep;             /* CELL, CELL_DONE */
    double cell_estimate_s;   /* CELL: this cell's estimated time */
    double remaining_after_s; /* CELL: estimated time of the selected cells after it */
    bool failed;              /* CELL_DONE */
};

typedef void (*mb_session_event_fn)(void *ctx, const struct mb_session_event *ev);

struct mb_session_opts {
    const char *device_spec; /* required */
    const char *results_dir; /* NULL: results/<experiment name> */
    /* NULL: journal.jsonl. Else this invocation's own journal in the results directory,
     * journal-NAME.jsonl for a NAME (or that whole file name): invocations that run at once into
     * one shared directory (the tasks of a Slurm job array, on other nodes) each write their own,
     * and none waits for another's lock. The directory's other journals must be of the same
     * experiment. */
    const char *journal_name;
    /* --only RUN,...; NULL: every run. A selection as --cells is (joins a results directory of
     * the same experiment), of these runs' cells; mb_session_select's list then indexes them. */
    const char *only;
    bool resume;                        /* continue a dead run: its leftovers are removed */
    volatile sig_atomic_t *stop;        /* non-zero: stop now (the signal number); required */
    mb_session_event_fn on_event;       /* may be NULL */
    mb_runner_event_fn on_runner_event; /* the runner's progress events; may be NULL */
    void *ctx;                          /* passed to both callbacks */
    bool manage_mig_mode;               /* MIG-mode phases (switch, journal, restore) */
    bool pin_reps;                      /* several GPUs: a run's repetitions on one GPU */
};

/* What mb_session_run did. */
struct mb_session_summary {
    size_t ok, failed, skipped; /* skipped: already done in the results directory */
    int signal;                 /* the stop signal when interrupted; else 0 */
};

struct mb_session;

/*
 * Opens exp (borrowed; it must outlive the session) for running. Bad input (device spec,
 * --only, results directory, resume of another experiment, no run for this device, {python}
 * not found) returns MB_EINVAL; a device that cannot be opened or read, MB_EDEVICE or its own
 * status. err names what and where.
 */
int mb_session_open(const struct mb_experiment *exp, const struct mb_session_opts *opts,
                    struct mb_session **out, struct mb_error *err);
void mb_session_close(struct mb_session *s);

/*
 * Selects cells: list is a comma-separated list of cell indices and ranges ("0-2,5") and run
 * names (every cell of that run), NULL for all; shard "I/N" (0 <= I < N) then keeps every N-th
 * of those from the I-th, NULL for all. A bad list or shard: MB_EINVAL. Call before
 * mb_session_start.
 */
int mb_session_select(struct mb_session *s, const char *list, const char *shard,
                      struct mb_error *err);

/* The selected cells (experiment order) and, for each, its index in the full cell list. */
size_t mb_session_cells(const struct mb_session *s, const struct mb_cell **cells,
                        const size_t **index);

/* The number of GPUs the session runs on (1 unless the device spec names several). */
size_t mb_session_gpus(const struct mb_session *s);

/*
 * Without manage_mig_mode, on a GPU: how many cells the GPU's MIG mode removed (runs that need
 * the other mode, noted as skipped), and in *cells the experiment's cells for this device before
 * that (experiment order; every mode), from which the two phases a user could run by hand are
 * spelled out. 0 (and *cells NULL or all kept) when nothing was removed.
 */
size_t mb_session_mig_mode_cells(const struct mb_session *s, const struct mb_cell **cells,
                                 size_t *n_cells);

/* The experiment, the device (the first GPU), its MB_CAP_* bits, its catalog model (NULL when
 * none). */
const struct mb_experiment *mb_session_experiment(const struct mb_session *s);
struct mb_device *mb_session_device(const struct mb_session *s);
uint32_t mb_session_caps(const struct mb_session *s);
const struct mb_gpu_model *mb_session_model(const struct mb_session *s);
const struct mb_device_info *mb_session_device_info(const struct mb_session *s);
const char *mb_session_results_dir(const struct mb_session *s);

/*
 * {python} (when a cell's command uses it; else python is "") and {workloads} for cells:
 * MB_EINVAL when python cannot be found.
 */
int mb_session_resolve_tools(const struct mb_experiment *exp, const struct mb_cell *cells, size_t n,
                             char *python, size_t python_cap, char *wdir, size_t wdir_cap,
                             struct mb_error *err);

/*
 * The estimated time of one cell in seconds (idle baseline, warm-up, window, cool-down);
 * *unknown is set when steps, completion or "stable" decide part of it.
 */
double mb_session_cell_estimate(const struct mb_experiment *exp, const struct mb_exp_run *r,
                                bool *unknown);

/*
 * Checks, changing nothing, that the selection can start: the results-directory policy (a
 * directory with results needs resume, or a selection of the same experiment) and the preflight
 * (MB_EINVAL when a selected cell cannot run here; MB_ENORESOURCES when a layout does not fit
 * beside the instances there now). mb_session_start calls it when the caller has not.
 */
int mb_session_check(struct mb_session *s, struct mb_error *err);

/*
 * Makes ready to run: results directory and journal (MB_EBUSY when another migbench run holds
 * it), resume cleanup (an error ending "; nothing else was run" when something the dead run left
 * cannot be removed), the preflight again after a resume's cleanup, and the experiment_started
 * journal entry.
 */
int mb_session_start(struct mb_session *s, struct mb_error *err);

/*
 * Runs selected cell i (0 <= i < mb_session_cells) unless it is already done in the results
 * directory (*skipped), on the session's first GPU and in the MIG mode that GPU has. MB_EINTR when
 * stopped (journaled as interrupted); *failed as from mb_runner_run_cell.
 */
int mb_session_run_cell(struct mb_session *s, size_t i, bool *failed, bool *skipped,
                        struct mb_error *err);

/*
 * Runs every selected cell in order, then journals experiment_finished. MB_EINTR when stopped
 * (sum->signal says by what); other codes when results could not be written.
 */
int mb_session_run(struct mb_session *s, struct mb_session_summary *sum, struct mb_error *err);

#endif
