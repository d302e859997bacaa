/* SPDX-License-Identifier: Apache-2.0 */
/* A Prometheus textfile kept up to date while a command works (see migbench/exporter.h). */
#include "migbench/exporter.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "migbench/analysis.h"
#include "migbench/monitor.h"
#include "migbench/prom.h"

/* A job label is the command as given (measure: its argv[0], a path of up to PATH_MAX bytes):
 * never cut, so the label does not depend on where the command lives. */
#define JOB_NAME_MAX 4096

struct mb_exporter {
    char path[4096];
    struct mb_monitor *mon;
    struct mb_prom *prom;
    struct mb_monitor_snapshot snap;
    struct mb_analysis *an;
    bool have_job;
    char job[JOB_NAME_MAX];
    char source[32];
    double job_j;
};

int mb_exporter_create(const struct mb_exporter_opts *opts, struct mb_exporter **out,
                       struct mb_error *err)
{
    *out = NULL;
    struct mb_exporter *x = calloc(1, sizeof(*x));
    if (!x)
        return mb_error_set(err, MB_ENOMEM, "prometheus: out of memory");
    if (snprintf(x->path, sizeof(x->path), "%s", opts->path) >= (int)sizeof(x->path)) {
        free(x);
        return mb_error_set(err, MB_ERANGE, "prometheus: path too long");
    }
    const char *specs[1] = {opts->device_spec};
    struct mb_monitor_opts mo = {.specs = specs, .n_specs = 1, .live_dir = opts->live_dir};
    int rc = mb_prom_create(&x->prom, err);
    if (rc == MB_OK)
        rc = mb_monitor_create(&mo, &x->mon, err);
    if (rc != MB_OK) {
        mb_exporter_destroy(x);
        return rc;
    }
    *out = x;
    return MB_OK;
}

void mb_exporter_destroy(struct mb_exporter *x)
{
    if (!x)
        return;
    mb_monitor_destroy(x->mon);
    mb_prom_destroy(x->prom);
    mb_analysis_destroy(x->an);
    free(x);
}

int mb_exporter_results(struct mb_exporter *x, const char *dir, struct mb_error *err)
{
    struct mb_analysis *an = NULL;
    const char *dirs[1] = {dir};
    struct mb_error e;
    int rc = mb_analysis_load(&an, dirs, 1, &e);
    if (rc == MB_ENOTFOUND)
        return MB_OK; /* no cell finished yet */
    if (rc != MB_OK) {
        if (err)
            *err = e;
        return rc;
    }
    mb_analysis_destroy(x->an);
    x->an = an;
    return MB_OK;
}

void mb_exporter_job(struct mb_exporter *x, const char *job, double energy_j, const char *source)
{
    x->have_job = true;
    snprintf(x->job, sizeof(x->job), "%s", job);
    snprintf(x->source, sizeof(x->source), "%s", source);
    x->job_j = energy_j;
}

static int add_results(struct mb_exporter *x, struct mb_error *err)
{
    for (size_t e = 0; x->an && e < x->an->nexp; e++) {
        const struct mb_an_experiment *ex = &x->an->exps[e];
        for (size_t r = 0; r < ex->nruns; r++) {
            const struct mb_an_run *run = &ex->runs[r];
            int64_t total_mj = 0;
            size_t cells = 0;
            for (size_t c = 0; c < run->ncells; c++) {
                if (run->cells[c].ok && run->cells[c].has_energy) {
                    total_mj += run->cells[c].energy_mj;
                    cells++;
                }
            }
            struct mb_prom_label l[6] = {
                {"experiment", ex->name}, {"run", run->name}, {"mode", run->mode},
                {"backend", ex->backend}, {"UUID", ex->uuid},
            };
            int rc = mb_prom_add(x->prom, "migbench_run_cells_done", MB_PROM_GAUGE,
                                 "Cells of the run recorded, ok or failed.", l, 5,
                                 (double)run->ncells, err);
            if (rc)
                return rc;
            if (cells == 0)
                continue;
            rc = mb_prom_add(x->prom, "migbench_run_energy_joules_total", MB_PROM_COUNTER,
                             "Whole-GPU energy of the run's measurement windows, summed over its "
                             "finished cells, in J.",
                             l, 5, (double)total_mj / 1000.0, err);
            if (rc)
                return rc;
            for (int m = 0; m < MB_ATTR_COUNT; m++) {
                const struct mb_attribution *a = &run->attr[m];
                if (!a->available)
                    continue;
                for (size_t j = 0; j < run->njobs; j++) {
                    struct mb_prom_label jl[6] = {
                        {"experiment", ex->name},   {"run", run->name},
                        {"mode", run->mode},        {"backend", ex->backend},
                        {"job", run->jobs[j].name}, {"method", mb_analysis_method_name(m)},
                    };
                    rc = mb_prom_add(x->prom, "migbench_job_energy_joules_total", MB_PROM_COUNTER,
                                     "Energy attributed to a job by the named method, in J; per "
                                     "run and method the jobs' parts sum to the run's energy.",
                                     jl, 6, (double)a->job_mj[j] / 1000.0, err);
                    if (rc)
                        return rc;
                }
            }
            for (size_t j = 0; j < run->njobs; j++) {
                const struct mb_estimate *t = &run->jobs[j].throughput;
                if (!t->valid)
                    continue;
                struct mb_prom_label tl[6] = {
                    {"experiment", ex->name},   {"run", run->name},
                    {"mode", run->mode},        {"backend", ex->backend},
                    {"job", run->jobs[j].name}, {"unit", run->jobs[j].unit},
                };
                rc = mb_prom_add(x->prom, "migbench_run_job_throughput", MB_PROM_GAUGE,
                                 "A job's measured throughput, mean over the run's finished "
                                 "repetitions, in its units per second.",
                                 tl, 6, t->mean, err);
                if (rc)
                    return rc;
            }
        }
    }
    return MB_OK;
}

int mb_exporter_write(struct mb_exporter *x, struct mb_error *err)
{
    mb_prom_reset(x->prom);
    int rc = mb_monitor_sample(x->mon, &x->snap, err);
    if (rc == MB_OK)
        rc = mb_monitor_prom(&x->snap, x->prom, err);
    if (rc == MB_OK)
        rc = add_results(x, err);
    if (rc == MB_OK && x->have_job) {
        const struct mb_monitor_gpu *g = x->snap.n_gpus ? &x->snap.gpus[0] : NULL;
        struct mb_prom_label l[5] = {
            {"job", x->job},
            {"method", "interval"},
            {"source", x->source},
            {"backend", g ? g->info.backend : ""},
            {"UUID", g ? g->info.uuid : ""},
        };
        rc = mb_prom_add(x->prom, "migbench_job_energy_joules_total", MB_PROM_COUNTER,
                         "Energy attributed to a job by the named method, in J.", l, 5, x->job_j,
                         err);
    }
    if (rc == MB_OK)
        rc = mb_prom_write(x->prom, x->path, err);
    return rc;
}
