/* SPDX-License-Identifier: Apache-2.0 */
/* What `migbench run` shows outside itself while it works: its live file and a textfile. */
#include "run_export.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

#define CMD "run"

int mb_cli_run_export_open(struct mb_cli_run_export *x, const char *prom_path,
                           const char *device_spec, const char *device_uuid, const char *experiment,
                           const char *results_dir)
{
    memset(x, 0, sizeof(*x));
    struct mb_error err;
    if (mb_live_dir(x->live_dir, sizeof(x->live_dir), &err) != MB_OK) {
        mb_cli_warn(CMD, "no live status for 'migbench monitor': %s", err.msg);
        x->live_dir[0] = '\0';
    }
    struct mb_live_cell *c = &x->cell;
    c->pid = (long)getpid();
    snprintf(c->experiment, sizeof(c->experiment), "%s", experiment);
    snprintf(c->results_dir, sizeof(c->results_dir), "%s", results_dir);
    snprintf(c->device_spec, sizeof(c->device_spec), "%s", device_spec);
    snprintf(c->device_uuid, sizeof(c->device_uuid), "%s", device_uuid);
    if (!prom_path)
        return MB_EXIT_OK;
    snprintf(x->results_dir, sizeof(x->results_dir), "%s", results_dir);
    struct mb_exporter_opts eo = {
        .path = prom_path, .device_spec = device_spec, .live_dir = x->live_dir};
    if (mb_exporter_create(&eo, &x->prom, &err) != MB_OK ||
        mb_exporter_results(x->prom, results_dir, &err) != MB_OK ||
        mb_exporter_write(x->prom, &err) != MB_OK) {
        mb_cli_error(CMD, "--prometheus %s: %s", prom_path, err.msg);
        mb_exporter_destroy(x->prom);
        x->prom = NULL;
        return MB_EXIT_FAIL;
    }
    return MB_EXIT_OK;
}

static void write_out(struct mb_cli_run_export *x)
{
    struct mb_error err;
    if (x->live_dir[0] && mb_live_write(x->live_dir, &x->cell, &err) != MB_OK && !x->live_warned) {
        mb_cli_warn(CMD, "live status for 'migbench monitor': %s", err.msg);
        x->live_warned = true;
    }
    if (x->prom && mb_exporter_write(x->prom, &err) != MB_OK && !x->prom_warned) {
        mb_cli_warn(CMD, "--prometheus: %s", err.msg);
        x->prom_warned = true;
    }
}

void mb_cli_run_export_event(struct mb_cli_run_export *x, const struct mb_runner_event *ev,
                             const char *mode, size_t cell_index, size_t n_cells)
{
    if (ev->kind == MB_RUNNER_NOTE)
        return;
    struct mb_live_cell *c = &x->cell;
    snprintf(c->run, sizeof(c->run), "%s", ev->run ? ev->run : "");
    snprintf(c->mode, sizeof(c->mode), "%s", mode);
    c->rep = ev->rep;
    c->cell_index = cell_index;
    c->n_cells = n_cells;
    const char *phase = ev->kind == MB_RUNNER_CELL_START                         ? "starting"
                        : ev->kind == MB_RUNNER_STOPPING                         ? "stopping"
                        : ev->window_s > 0 || ev->kind == MB_RUNNER_WINDOW_START ? "window"
                                                                                 : "warm-up";
    snprintf(c->phase, sizeof(c->phase), "%s", phase);
    c->elapsed_s = ev->elapsed_s;
    c->window_s = ev->window_s;
    c->window_target_s = ev->window_target_s;
    c->power_valid = ev->power_w >= 0;
    c->power_w = c->power_valid ? ev->power_w : 0;
    c->n_jobs = 0;
    for (size_t i = 0; i < ev->n_jobs && i < MB_LIVE_JOBS_MAX; i++) {
        struct mb_live_job *j = &c->jobs[c->n_jobs++];
        snprintf(j->name, sizeof(j->name), "%s", ev->job_names[i] ? ev->job_names[i] : "");
        snprintf(j->unit, sizeof(j->unit), "%s", ev->rate_unit[i] ? ev->rate_unit[i] : "");
        j->rate_valid = ev->rate[i] >= 0;
        j->rate = j->rate_valid ? ev->rate[i] : 0;
    }
    write_out(x);
}

void mb_cli_run_export_cell_done(struct mb_cli_run_export *x)
{
    struct mb_error err;
    if (x->prom && mb_exporter_results(x->prom, x->results_dir, &err) != MB_OK && !x->prom_warned) {
        mb_cli_warn(CMD, "--prometheus: %s", err.msg);
        x->prom_warned = true;
    }
    x->cell.n_jobs = 0;
    snprintf(x->cell.phase, sizeof(x->cell.phase), "between cells");
    write_out(x);
}

void mb_cli_run_export_close(struct mb_cli_run_export *x)
{
    if (x->live_dir[0] && x->cell.pid)
        mb_live_remove(x->live_dir, x->cell.pid);
    x->cell.pid = 0;
    mb_exporter_destroy(x->prom);
    x->prom = NULL;
}
