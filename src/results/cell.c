/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cell.json for the analysis and the status readers (docs/results.md): the file decoded by the
 * record's one decoder (cell_record.c, whose encoder runner_record.c writes it with), then its
 * status, window, energy, device, power limit and jobs into struct mb_an_cell and the run's
 * facts. The document's keys are named in cell_record.c (here only in error messages).
 */
#include "base/json_io.h"
#include "migbench/analysis.h"
#include "migbench/stats.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "migbench/catalog.h"
#include "migbench/experiment.h"
#include "migbench/fileio.h"
#include "migbench/num.h"
#include "base/text_internal.h"

#include "results/analysis_internal.h"
#include "results/cell.h"
#include "results/cell_record.h"

/* The largest cell.json read (a cell that large is not one migbench wrote). */
#define CELL_JSON_MAX (16u << 20)

static int read_cell_file(const char *path, char **out, struct mb_error *err)
{
    int rc = mb_file_read(path, CELL_JSON_MAX, out, NULL, err);
    if (rc == MB_ERANGE)
        rc = mb_error_restatus(err, MB_EPARSE);
    return rc;
}

/* ---------------------------------------------------------------------------------------- */
/* Cells                                                                                      */

void mb__an_free_argv(char **argv, size_t argc)
{
    for (size_t i = 0; argv && i < argc; i++)
        free(argv[i]);
    free(argv);
}

void mb__an_free_meta(struct run_meta *m)
{
    for (size_t i = 0; i < MB_AN_JOBS_MAX; i++)
        mb__an_free_argv(m->argv[i], m->argc[i]);
    free(m);
}

int mb__an_profile_slices(const char *profile)
{
    /* "4g.40gb" -> 4 compute slices; "1c.4g.40gb" (a compute instance) -> 1. */
    if (!profile || !*profile)
        return 0;
    char *end;
    long v = strtol(profile, &end, 10);
    if (end == profile || v <= 0 || v > 64 || (*end != 'g' && *end != 'c'))
        return 0;
    return (int)v;
}

/* An integer figure (nanoseconds) of the record: 0 when unknown or out of range. */
static int64_t opt_i64(struct mb_opt o)
{
    return o.valid && mb_num_fits_i64(o.v) ? (int64_t)llround(o.v) : 0;
}

static void read_device(struct mb_an_experiment *e, const struct mb_cell_record *r)
{
    const struct mb_cell_device *d = &r->device;
    if (e->backend[0])
        return;
    mb__copy_str(e->backend, sizeof(e->backend), d->backend);
    mb__copy_str(e->device_name, sizeof(e->device_name), d->name);
    mb__copy_str(e->model, sizeof(e->model), d->model);
    mb__copy_str(e->uuid, sizeof(e->uuid), d->uuid);
    mb__copy_str(e->driver_version, sizeof(e->driver_version), d->driver_version);
    /* Every cell.json since the first runner records "emulated". */
    e->emulated = d->emulated;
    /* "gpu": the device's MB_CAP_GPU bit as recorded; in cells from before it the host
     * backend is the one CPU device. */
    e->cpu_device = d->has_gpu ? !d->gpu : strcmp(e->backend, "host") == 0;
    if (d->power_limit_mw.valid) {
        e->power_limit_w.valid = 1;
        e->power_limit_w.v = d->power_limit_mw.v / 1000.0;
    }
    mb__copy_str(e->sensor, sizeof(e->sensor), r->seen.sensor);
}

/* cell.json's "power_limit" (the power-limit axis): null or absent without it. */
static void read_power_limit(struct mb_an_cell *c, const struct mb_cell_power *p)
{
    if (!p->active)
        return;
    mb__copy_str(c->power_limit, sizeof(c->power_limit), p->requested);
    mb__copy_str(c->base_run, sizeof(c->base_run), p->base_run);
    if (p->enforced_mw.valid && p->enforced_mw.v > 0) {
        c->enforced_w.valid = 1;
        c->enforced_w.v = p->enforced_mw.v / 1000.0;
    }
    if (p->throttle_valid && p->throttle_reasons < (UINT64_C(1) << 63)) {
        c->throttle_valid = 1;
        c->throttle_reasons = p->throttle_reasons;
    }
}

/*
 * Remembers a workload's definition: a hash of its argv with directories left out, so that the
 * same job on another machine (another interpreter path) still compares equal.
 */
static void record_workload(struct mb_an_experiment *e, const char *workload, char *const *argv,
                            size_t argc)
{
    for (size_t i = 0; i < e->nworkloads; i++)
        if (strcmp(e->workload_names[i], workload) == 0)
            return;
    if (e->nworkloads == MB_AN_WORKLOADS_MAX)
        return;
    uint64_t h = 0;
    for (size_t k = 0; k < argc; k++) {
        const char *base = strrchr(argv[k], '/');
        base = base ? base + 1 : argv[k];
        h = mb_fnv1a64(h ? h : MB_FNV1A_INIT, base, strlen(base) + 1);
    }
    mb__copy_str(e->workload_names[e->nworkloads], MB_AN_NAME_MAX, workload);
    e->workload_sig[e->nworkloads++] = h;
}

/* The cell's window and energy; the energy used is the counter's, else the integrated one. */
static void parse_cell_energy(struct mb_an_cell *c, const struct mb_cell_record *r)
{
    const struct mb_cell_energy *en = &r->energy;
    c->t0_ns = opt_i64(mb_cell_num(true, r->t0_ns));
    c->window_s = r->window.seconds;
    c->window_start_ns = opt_i64(r->window.start_ns);
    c->window_end_ns = opt_i64(r->window.end_ns);
    if (!c->window_s.valid && c->window_end_ns > c->window_start_ns && c->window_start_ns > 0) {
        c->window_s.valid = 1;
        c->window_s.v = (double)(c->window_end_ns - c->window_start_ns) * 1e-9;
    }
    c->reconfigure_s = r->reconfigure_seconds;
    c->counter_j = en->counter_j;
    c->integrated_j = en->integrated_j;
    c->gap_pct = en->gap_pct;
    c->idle_power_w = en->idle_power_w;
    c->mean_power_w = en->mean_power_w;
    c->peak_power_w = en->peak_power_w;
    c->samples = mb_cell_num(r->seen.samples, en->samples);
    c->missed_updates = en->missed_updates;
    mb__copy_str(c->energy_flag, sizeof(c->energy_flag), en->flag);
    mb__copy_str(c->refused_reason, sizeof(c->refused_reason), en->refused_reason);
    if (!c->gap_pct.valid && c->counter_j.valid && c->integrated_j.valid && c->counter_j.v > 0) {
        c->gap_pct.valid = 1;
        c->gap_pct.v = 100.0 * (c->integrated_j.v - c->counter_j.v) / c->counter_j.v;
    }
    if (!c->refused_reason[0] && c->counter_j.valid && c->counter_j.v >= 0) {
        c->has_energy = 1;
        c->energy_mj = llround(c->counter_j.v * 1000.0);
        c->energy_source = "counter";
    } else if (!c->refused_reason[0] && c->integrated_j.valid && c->integrated_j.v >= 0) {
        c->has_energy = 1;
        c->energy_mj = llround(c->integrated_j.v * 1000.0);
        c->energy_source = "integrated";
    }
}

/* A GPU instance's id as the analysis keeps it: -1 when not recorded or out of int range. */
static int inst_gi(const struct mb_cell_record *r, size_t k)
{
    return r->seen.gi_id[k] && r->device.inst[k].gi_id <= INT_MAX ? (int)r->device.inst[k].gi_id
                                                                  : -1;
}

/* The job's MIG instance: its GPU instance id (for its gi<id>_* telemetry columns) and profile. */
static void parse_job_instance(struct mb_an_cell_job *cj, struct run_meta *m, size_t i,
                               const struct mb_cell_record *r)
{
    const struct mb_cell_job *j = &r->jobs[i];
    const struct mb_cell_device *d = &r->device;
    const char *prof = j->inst_profile[0] ? j->inst_profile : NULL;
    /* The job's GPU instance id, to find its gi<id>_* telemetry columns. */
    cj->gi_id = -1;
    const char *iuuid = j->inst_uuid[0] ? j->inst_uuid : NULL;
    for (size_t k = 0; iuuid && k < d->n_inst; k++)
        if (d->inst[k].uuid[0] && strcmp(iuuid, d->inst[k].uuid) == 0 && r->seen.gi_id[k])
            cj->gi_id = inst_gi(r, k);
    if (cj->gi_id < 0 && !iuuid && i < d->n_inst && r->seen.gi_id[i])
        cj->gi_id = inst_gi(r, i);
    if (!prof && i < d->n_inst && d->inst[i].profile[0])
        prof = d->inst[i].profile;
    if (prof)
        mb__copy_str(m->instance[i], sizeof(m->instance[i]), prof);
}

/* Job i's rates, counts and window; MB_EPARSE for a negative one (a damaged file). */
static int parse_job_figures(struct mb_an_cell_job *cj, struct run_meta *m, size_t i,
                             const struct mb_cell_job *j, const char *path, struct mb_error *err)
{
    cj->throughput = j->tp_mean;
    cj->throughput_ci95 = j->tp_ci95;
    const char *ups = j->tp_unit_per_s[0] ? j->tp_unit_per_s : NULL;
    if (ups)
        mb__copy_str(m->unit[i], sizeof(m->unit[i]), ups);
    else if (j->unit[0])
        snprintf(m->unit[i], sizeof(m->unit[i]), "%.100s/s", j->unit);
    cj->steps = j->steps;
    cj->units = j->units;
    /* Rates and counts are never negative: such a file is damaged, not a measurement. */
    const char *neg = cj->throughput.valid && cj->throughput.v < 0 ? "throughput.mean"
                      : cj->steps.valid && cj->steps.v < 0         ? "steps"
                      : cj->units.valid && cj->units.v < 0         ? "units"
                                                                   : NULL;
    if (neg)
        return mb_error_set(err, MB_EPARSE, "%s: field 'jobs[%zu].%s': negative", path, i, neg);
    cj->steps_unit = ups && strcmp(ups, "steps/s") == 0;
    cj->window_s = j->window.seconds;
    if (cj->window_s.valid && cj->window_s.v < 0)
        return mb_error_set(err, MB_EPARSE, "%s: field 'jobs[%zu].window.seconds': negative", path,
                            i);
    cj->window_start_ns = opt_i64(j->window.start_ns);
    cj->window_end_ns = opt_i64(j->window.end_ns);
    cj->has_window = cj->window_start_ns > 0 && cj->window_end_ns > cj->window_start_ns;
    if (!cj->window_s.valid && cj->has_window) {
        cj->window_s.valid = 1;
        cj->window_s.v = (double)(cj->window_end_ns - cj->window_start_ns) * 1e-9;
    }
    return MB_OK;
}

/* Job i of a cell (r->jobs[i]); the run-level facts go to m, which takes the job's argv. */
static int parse_cell_job(struct mb_an_cell *c, struct run_meta *m, size_t i,
                          struct mb_cell_record *r, const char *path, struct mb_error *err)
{
    struct mb_an_cell_job *cj = &c->jobs[i];
    struct mb_cell_job *j = &r->jobs[i];
    if (!j->name[0])
        return mb_error_set(err, MB_EPARSE, "%s: field 'jobs[%zu].name': missing", path, i);
    mb__copy_str(cj->name, sizeof(cj->name), j->name);
    mb__copy_str(m->job[i], sizeof(m->job[i]), j->name);
    mb__copy_str(m->workload[i], sizeof(m->workload[i]), j->workload[0] ? j->workload : j->name);
    int st = parse_job_figures(cj, m, i, j, path, err);
    if (st != MB_OK)
        return st;
    /* Work in the window: rate x the job's own window, else x the cell's window (shared
     * modes, where all jobs share it), else the reported units (which may include the
     * warm-up: said in work_basis). */
    int excl = strcmp(m->mode, "exclusive") == 0;
    if (cj->throughput.valid && cj->window_s.valid) {
        cj->work.valid = 1;
        cj->work.v = cj->throughput.v * cj->window_s.v;
        cj->work_basis = "rate x job window";
    } else if (cj->throughput.valid && !excl && c->window_s.valid) {
        cj->work.valid = 1;
        cj->work.v = cj->throughput.v * c->window_s.v;
        cj->work_basis = "rate x cell window";
    } else if (cj->units.valid && !cj->steps_unit) {
        cj->work = cj->units;
        cj->work_basis = "reported units";
    }
    int64_t s = opt_i64(j->started_ns), en_ns = opt_i64(j->ended_ns);
    if (s > 0 && en_ns > s) {
        cj->has_times = 1;
        cj->started_ns = s;
        cj->ended_ns = en_ns;
    }
    parse_job_instance(cj, m, i, r);
    struct mb_opt pct = j->thread_percentage;
    if (!pct.valid && i < r->n_mps_pct)
        pct = mb_cell_num(true, r->mps_pct[i]);
    m->pct[i] = pct;
    m->cpus[i] = j->has_cpus ? (int)j->cpus.n : 0;
    m->cores[i] = j->cores;
    m->argv[i] = j->argv; /* taken: the record no longer frees it */
    m->argc[i] = j->argc;
    j->argv = NULL;
    j->argc = 0;
    return MB_OK;
}

/* The cell.json at path decoded by its one decoder (cell_record.c); *out is the caller's
 * (mb_cell_record_free, free). */
static int cell_read(const char *path, struct mb_cell_record **out, struct mb_error *err)
{
    *out = NULL;
    char *text = NULL;
    int st = read_cell_file(path, &text, err);
    if (st != MB_OK)
        return st;
    cJSON *root;
    st = mb_json_parse(text, strlen(text), path, &root, err);
    free(text);
    if (st != MB_OK)
        return st;
    struct mb_cell_record *r = malloc(sizeof(*r));
    if (!r) {
        cJSON_Delete(root);
        return mb_error_set(err, MB_ENOMEM, "out of memory");
    }
    st = mb_cell_record_decode(root, r, err);
    cJSON_Delete(root);
    if (st != MB_OK) {
        mb_error_prefix(err, "%s: ", path);
        free(r);
        return st;
    }
    *out = r;
    return MB_OK;
}

static void cell_done(struct mb_cell_record *r)
{
    if (r)
        mb_cell_record_free(r);
    free(r);
}

int mb__cell_read_json(const char *path, char **json, struct mb_error *err)
{
    *json = NULL;
    struct mb_cell_record *r = NULL;
    int st = cell_read(path, &r, err);
    if (st != MB_OK)
        return st;
    cJSON *doc = mb_cell_record_encode(r);
    cell_done(r);
    char *text = doc ? cJSON_PrintUnformatted(doc) : NULL;
    cJSON_Delete(doc);
    if (!text)
        return mb_error_set(err, MB_ENOMEM, "%s: out of memory", path);
    *json = text;
    return MB_OK;
}

int mb__cell_read_status(const char *path, struct mb_cell_status *out, struct mb_error *err)
{
    memset(out, 0, sizeof(*out));
    struct mb_cell_record *r;
    int st = cell_read(path, &r, err);
    if (st != MB_OK)
        return st;
    out->ok = r->ok;
    out->failed = strcmp(r->seen.status, "failed") == 0;
    mb__copy_str(out->reason, sizeof(out->reason), r->fail_reason);
    mb__copy_str(out->slurm_job, sizeof(out->slurm_job), r->slurm.job);
    cell_done(r);
    return MB_OK;
}

/* The cell's run, mode, repetition, status and the experiment's facts; MB_EPARSE for a cell
 * without a sharing mode. */
static int parse_cell_head(struct mb_an_experiment *e, struct mb_an_cell *c, struct run_meta *m,
                           const struct mb_cell_record *r, const char *path,
                           const char *dirname_run, int dir_rep, struct mb_error *err)
{
    mb__copy_str(c->path, sizeof(c->path), path);
    mb__copy_str(m->run, sizeof(m->run), r->run[0] ? r->run : dirname_run);
    mb__copy_str(m->mode, sizeof(m->mode), r->mode);
    mb__copy_str(m->on, sizeof(m->on), r->on);
    if (!m->mode[0])
        return mb_error_set(err, MB_EPARSE, "%s: field 'mode': missing", path);
    static const char *const modes[] = {"exclusive", "timeslice", "partition", "mig", "mps"};
    bool known = false;
    for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
        known = known || strcmp(m->mode, modes[i]) == 0;
    if (!known)
        return mb_error_set(err, MB_EPARSE,
                            "%s: field 'mode': '%s' is not a sharing mode (exclusive, timeslice, "
                            "partition, mig, mps)",
                            path, m->mode);
    c->rep = r->seen.rep ? (int)r->rep : dir_rep;
    c->ok = r->ok;
    if (!c->ok) {
        const char *status = r->seen.status[0] ? r->seen.status : NULL;
        const char *why = r->fail_reason[0] ? r->fail_reason : (status ? status : "no status");
        size_t used = 0;
        if (r->fail_job[0]) {
            snprintf(c->failure, sizeof(c->failure), "%.*s: ", (int)sizeof(c->failure) / 2,
                     r->fail_job);
            used = strlen(c->failure);
        }
        mb__copy_str(c->failure + used, sizeof(c->failure) - used, why); /* cut to the field */
    }
    if (!e->name[0]) {
        mb__copy_str(e->name, sizeof(e->name), r->experiment);
        mb__copy_str(e->sha, sizeof(e->sha), r->experiment_sha);
        mb__copy_str(e->migbench_version, sizeof(e->migbench_version), r->migbench_version);
    }
    return MB_OK;
}

static int parse_cell(struct mb_an_experiment *e, struct mb_an_cell *c, struct run_meta *m,
                      struct mb_cell_record *r, const char *path, const char *dirname_run,
                      int dir_rep, struct mb_error *err)
{
    int st = parse_cell_head(e, c, m, r, path, dirname_run, dir_rep, err);
    if (st != MB_OK)
        return st;
    read_device(e, r);
    read_power_limit(c, &r->power);
    mb__copy_str(c->gpu_uuid, sizeof(c->gpu_uuid), r->device.uuid);
    parse_cell_energy(c, r);
    c->outside_load = r->load.present && r->load.all.verdict_ok ? r->load.all.loaded : -1;
    mb__copy_str(c->outside_load_why, sizeof(c->outside_load_why), r->load.all.why);
    size_t nj = r->seen.n_jobs;
    if (nj == 0)
        return mb_error_set(err, MB_EPARSE, "%s: field 'jobs': missing or empty", path);
    if (nj > MB_AN_JOBS_MAX)
        return mb_error_set(err, MB_EPARSE, "%s: field 'jobs': more than %d jobs", path,
                            MB_AN_JOBS_MAX);
    c->njobs = nj;
    m->njobs = nj;
    for (size_t i = 0; i < nj; i++) {
        if ((st = parse_cell_job(c, m, i, r, path, err)) != MB_OK)
            return st;
        record_workload(e, m->workload[i], m->argv[i], m->argc[i]);
    }
    return MB_OK;
}

int mb__an_parse_cell(struct mb_an_experiment *e, struct mb_an_cell *c, struct run_meta *m,
                      const char *path, const char *dirname_run, int dir_rep, struct mb_error *err)
{
    struct mb_cell_record *r;
    int st = cell_read(path, &r, err);
    if (st != MB_OK)
        return st;
    st = parse_cell(e, c, m, r, path, dirname_run, dir_rep, err);
    cell_done(r);
    return st;
}
