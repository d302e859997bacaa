/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A Prometheus textfile kept up to date by a command that works for a while (`run`, `measure`,
 * `monitor --prometheus`): each mb_exporter_write samples the device through its own monitor
 * (migbench/monitor.h, read-only), adds the results finished so far, and replaces the file
 * atomically.
 *
 *   results   `run`: the experiment's results directory is analysed again on each
 *             mb_exporter_results call; per run, the whole-GPU energy of its finished cells is
 *             migbench_run_energy_joules_total and each attribution method's per-job parts are
 *             migbench_job_energy_joules_total{method=...}, which sum to it exactly.
 *   job       `measure`: one command's energy over its window (method "interval").
 *
 * Threads: one thread at a time.
 */
#ifndef MIGBENCH_EXPORTER_H
#define MIGBENCH_EXPORTER_H

#include <stdbool.h>

#include "migbench/status.h"

struct mb_exporter_opts {
    const char *path;        /* the textfile to keep */
    const char *device_spec; /* opened again, read-only, for the live values */
    const char *live_dir;    /* as struct mb_monitor_opts.live_dir */
};

struct mb_exporter;

/* Opens the device; *out is owned by the caller (mb_exporter_destroy). mb_monitor_create's codes.
 */
int mb_exporter_create(const struct mb_exporter_opts *opts, struct mb_exporter **out,
                       struct mb_error *err);

/* Frees; NULL is a no-op. The file stays as last written. */
void mb_exporter_destroy(struct mb_exporter *x);

/*
 * Analyses the results directory dir again (mb_analysis_load) and keeps its energies for the
 * following writes. A directory without finished cells yet is not an error (no results series).
 */
int mb_exporter_results(struct mb_exporter *x, const char *dir, struct mb_error *err);

/* Records one job's measured energy (measure): job name, joules, and the counter's source. */
void mb_exporter_job(struct mb_exporter *x, const char *job, double energy_j, const char *source);

/* Samples the device and replaces the file. MB_EIO etc. from the atomic writer. */
int mb_exporter_write(struct mb_exporter *x, struct mb_error *err);

#endif
