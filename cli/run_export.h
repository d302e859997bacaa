/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `migbench run`'s outside view: the live file that `migbench monitor` reads (always, best
 * effort) and, with --prometheus FILE, a textfile with the device's live values and the energies
 * of the cells finished so far (migbench/exporter.h). Problems are warned about once and never
 * stop the experiment.
 */
#ifndef MIGBENCH_CLI_RUN_EXPORT_H
#define MIGBENCH_CLI_RUN_EXPORT_H

#include <stdbool.h>
#include <stddef.h>

#include "migbench/exporter.h"
#include "migbench/live.h"
#include "migbench/runner.h"

struct mb_cli_run_export {
    char live_dir[MB_LIVE_PATH_MAX];
    struct mb_live_cell cell;
    struct mb_exporter *prom; /* NULL without --prometheus */
    char results_dir[MB_LIVE_PATH_MAX];
    bool live_warned, prom_warned;
};

/* Starts both; prom_path may be NULL. Returns 0, or 1 after printing why the textfile failed. */
int mb_cli_run_export_open(struct mb_cli_run_export *x, const char *prom_path,
                           const char *device_spec, const char *device_uuid, const char *experiment,
                           const char *results_dir);

/* Updates both from a runner event (mode: the cell's sharing mode). */
void mb_cli_run_export_event(struct mb_cli_run_export *x, const struct mb_runner_event *ev,
                             const char *mode, size_t cell_index, size_t n_cells);

/* A cell was recorded: the textfile gets its energies. */
void mb_cli_run_export_cell_done(struct mb_cli_run_export *x);

/* Removes the live file and closes the exporter (the textfile stays). Safe to call twice. */
void mb_cli_run_export_close(struct mb_cli_run_export *x);

#endif
