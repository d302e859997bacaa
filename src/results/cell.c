/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The one reader of cell.json (docs/results.md): a cell's status, window, energy, device, power
 * limit and jobs into struct mb_an_cell and the run's facts; runner_record.c is its one writer.
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

/* Bounds on outside input: a cell.json is small; telemetry is read line by line. */

/* The two-sided 95% Student t quantile (stats.h); df >= 1 wherever a CI is computed. */
#include "results/analysis_internal.h"
#include "results/cell.h"
#include "results/cell_record.h"

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

/* A job's jobs[].argv: its strings copied (anything else as ""); MB_ENOMEM or MB_OK. */
static int read_argv(struct run_meta *m, size_t i, const cJSON *argv)
{
    size_t n = cJSON_IsArray(argv) ? (size_t)cJSON_GetArraySize(argv) : 0;
    if (n == 0)
        return MB_OK;
    m->argv[i] = calloc(n, sizeof(char *));
    if (!m->argv[i])
        return MB_ENOMEM;
    m->argc[i] = n;
    size_t k = 0;
    const cJSON *a;
    cJSON_ArrayForEach(a, argv)
    {
        m->argv[i][k] = strdup(cJSON_IsString(a) ? a->valuestring : "");
        if (!m->argv[i][k++])
            return MB_ENOMEM;
    }
    return MB_OK;
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

static void read_device(struct mb_an_experiment *e, const cJSON *dev)
{
    if (!cJSON_IsObject(dev) || e->backend[0])
        return;
    mb__copy_str(e->backend, sizeof(e->backend), mb__an_json_str(dev, "backend"));
    mb__copy_str(e->device_name, sizeof(e->device_name), mb__an_json_str(dev, "name"));
    mb__copy_str(e->model, sizeof(e->model), mb__an_json_str(dev, "model"));
    mb__copy_str(e->uuid, sizeof(e->uuid), mb__an_json_str(dev, "uuid"));
    mb__copy_str(e->driver_version, sizeof(e->driver_version),
                 mb__an_json_str(dev, "driver_version"));
    /* Every cell.json since the first runner records "emulated". */
    e->emulated = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(dev, "emulated"));
    /* "gpu": the device's MB_CAP_GPU bit as recorded; cells written before the flag existed
     * record only the backend, and there the host backend was the one CPU device. */
    const cJSON *gpu = cJSON_GetObjectItemCaseSensitive(dev, "gpu");
    e->cpu_device = cJSON_IsBool(gpu) ? cJSON_IsFalse(gpu) : strcmp(e->backend, "host") == 0;
    struct mb_opt pl = mb__an_json_num(dev, "power_limit_mw");
    if (pl.valid) {
        e->power_limit_w.valid = 1;
        e->power_limit_w.v = pl.v / 1000.0;
    }
    const cJSON *sensor = cJSON_GetObjectItemCaseSensitive(dev, "sensor");
    const cJSON *it;
    size_t used = 0;
    cJSON_ArrayForEach(it, sensor)
    {
        char val[64];
        if (cJSON_IsString(it))
            snprintf(val, sizeof(val), "%s", it->valuestring);
        else if (cJSON_IsNumber(it))
            snprintf(val, sizeof(val), "%g", it->valuedouble);
        else if (cJSON_IsBool(it))
            snprintf(val, sizeof(val), "%s", cJSON_IsTrue(it) ? "true" : "false");
        else
            continue;
        int w = snprintf(e->sensor + used, sizeof(e->sensor) - used, "%s%s=%s", used ? ", " : "",
                         it->string ? it->string : "?", val);
        if (w < 0 || (size_t)w >= sizeof(e->sensor) - used)
            break;
        used += (size_t)w;
    }
}

/* cell.json's "power_limit" (the power-limit axis): null or absent without it. */
static void read_power_limit(struct mb_an_cell *c, const cJSON *pl)
{
    if (!cJSON_IsObject(pl))
        return;
    mb__copy_str(c->power_limit, sizeof(c->power_limit), mb__an_json_str(pl, "requested"));
    mb__copy_str(c->base_run, sizeof(c->base_run), mb__an_json_str(pl, "base_run"));
    struct mb_opt mw = mb__an_json_num(pl, "enforced_mw");
    if (mw.valid && mw.v > 0) {
        c->enforced_w.valid = 1;
        c->enforced_w.v = mw.v / 1000.0;
    }
    struct mb_opt bits = mb__an_json_num(pl, "throttle_reasons");
    if (bits.valid && bits.v >= 0 && bits.v < 0x1p63) {
        c->throttle_valid = 1;
        c->throttle_reasons = (uint64_t)bits.v;
    }
}

/*
 * Remembers a workload's definition: a hash of its argv with directories left out, so that the
 * same job on another machine (another interpreter path) still compares equal.
 */
static void record_workload(struct mb_an_experiment *e, const char *workload, const cJSON *argv)
{
    for (size_t i = 0; i < e->nworkloads; i++)
        if (strcmp(e->workload_names[i], workload) == 0)
            return;
    if (e->nworkloads == MB_AN_WORKLOADS_MAX)
        return;
    uint64_t h = 0;
    const cJSON *a;
    cJSON_ArrayForEach(a, argv)
    {
        if (!cJSON_IsString(a))
            continue;
        const char *base = strrchr(a->valuestring, '/');
        base = base ? base + 1 : a->valuestring;
        h = mb_fnv1a64(h ? h : MB_FNV1A_INIT, base, strlen(base) + 1);
    }
    mb__copy_str(e->workload_names[e->nworkloads], MB_AN_NAME_MAX, workload);
    e->workload_sig[e->nworkloads++] = h;
}

/* The cell's window and energy; the energy used is the counter's, else the integrated one. */
static void parse_cell_energy(struct mb_an_cell *c, const cJSON *root)
{
    c->t0_ns = mb__an_json_i64(root, "t0_ns");
    const cJSON *win = cJSON_GetObjectItemCaseSensitive(root, "window");
    c->window_s = mb__an_json_num(win, "seconds");
    c->window_start_ns = mb__an_json_i64(win, "start_ns");
    c->window_end_ns = mb__an_json_i64(win, "end_ns");
    if (!c->window_s.valid && c->window_end_ns > c->window_start_ns && c->window_start_ns > 0) {
        c->window_s.valid = 1;
        c->window_s.v = (double)(c->window_end_ns - c->window_start_ns) * 1e-9;
    }
    c->reconfigure_s = mb__an_json_num(root, "reconfigure_seconds");
    const cJSON *en = cJSON_GetObjectItemCaseSensitive(root, "energy");
    c->counter_j = mb__an_json_num(en, "counter_j");
    c->integrated_j = mb__an_json_num(en, "integrated_j");
    c->gap_pct = mb__an_json_num(en, "gap_pct");
    c->idle_power_w = mb__an_json_num(en, "idle_power_w");
    c->mean_power_w = mb__an_json_num(en, "mean_power_w");
    c->peak_power_w = mb__an_json_num(en, "peak_power_w");
    c->samples = mb__an_json_num(en, "samples");
    c->missed_updates = mb__an_json_num(en, "missed_updates");
    mb__copy_str(c->energy_flag, sizeof(c->energy_flag), mb__an_json_str(en, "flag"));
    mb__copy_str(c->refused_reason, sizeof(c->refused_reason),
                 mb__an_json_str(en, "refused_reason"));
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

/* The job's MIG instance: its GPU instance id (for its gi<id>_* telemetry columns) and profile. */
static void parse_job_instance(struct mb_an_cell_job *cj, struct run_meta *m, size_t i,
                               const cJSON *j, const cJSON *mig_inst)
{
    const cJSON *inst = cJSON_GetObjectItemCaseSensitive(j, "instance");
    const char *prof = mb__an_json_str(inst, "profile");
    /* The job's GPU instance id, to find its gi<id>_* telemetry columns. */
    cj->gi_id = -1;
    const char *iuuid = mb__an_json_str(inst, "uuid");
    const cJSON *mi;
    cJSON_ArrayForEach(mi, mig_inst)
    {
        const char *u = mb__an_json_str(mi, "uuid");
        struct mb_opt g = mb__an_json_num(mi, "gi_id");
        if (iuuid && u && strcmp(iuuid, u) == 0 && g.valid)
            cj->gi_id = mb__an_opt_int(g, -1);
    }
    if (cj->gi_id < 0 && !iuuid) {
        struct mb_opt g = mb__an_json_num(cJSON_GetArrayItem(mig_inst, (int)i), "gi_id");
        if (g.valid)
            cj->gi_id = mb__an_opt_int(g, -1);
    }
    if (!prof)
        prof = mb__an_json_str(cJSON_GetArrayItem(mig_inst, (int)i), "profile");
    if (prof)
        mb__copy_str(m->instance[i], sizeof(m->instance[i]), prof);
}

/* Job i of a cell (j: its jobs[i]); the run-level facts go to m. */
static int parse_cell_job(struct mb_an_cell *c, struct run_meta *m, size_t i, const cJSON *j,
                          const cJSON *mig_inst, const cJSON *mps_pct, const char *path,
                          struct mb_error *err)
{
    struct mb_an_cell_job *cj = &c->jobs[i];
    const char *name = mb__an_json_str(j, "name");
    if (!name) {
        return mb_error_set(err, MB_EPARSE, "%s: field 'jobs[%zu].name': missing", path, i);
    }
    mb__copy_str(cj->name, sizeof(cj->name), name);
    mb__copy_str(m->job[i], sizeof(m->job[i]), name);
    mb__copy_str(m->workload[i], sizeof(m->workload[i]),
                 mb__an_json_str(j, "workload") ? mb__an_json_str(j, "workload") : name);
    const cJSON *tp = cJSON_GetObjectItemCaseSensitive(j, "throughput");
    cj->throughput = mb__an_json_num(tp, "mean");
    cj->throughput_ci95 = mb__an_json_num(tp, "ci95");
    const char *ups = mb__an_json_str(tp, "unit_per_s");
    if (ups)
        mb__copy_str(m->unit[i], sizeof(m->unit[i]), ups);
    else if (mb__an_json_str(j, "unit"))
        snprintf(m->unit[i], sizeof(m->unit[i]), "%.100s/s", mb__an_json_str(j, "unit"));
    cj->steps = mb__an_json_num(j, "steps");
    cj->units = mb__an_json_num(j, "units");
    /* Rates and counts are never negative: such a file is damaged, not a measurement. */
    const char *neg = cj->throughput.valid && cj->throughput.v < 0 ? "throughput.mean"
                      : cj->steps.valid && cj->steps.v < 0         ? "steps"
                      : cj->units.valid && cj->units.v < 0         ? "units"
                                                                   : NULL;
    if (neg) {
        return mb_error_set(err, MB_EPARSE, "%s: field 'jobs[%zu].%s': negative", path, i, neg);
    }
    cj->steps_unit = ups && strcmp(ups, "steps/s") == 0;
    const cJSON *jw = cJSON_GetObjectItemCaseSensitive(j, "window");
    if (!cJSON_IsObject(jw))
        jw = cJSON_GetObjectItemCaseSensitive(tp, "window");
    cj->window_s = mb__an_json_num(jw, "seconds");
    if (cj->window_s.valid && cj->window_s.v < 0) {
        return mb_error_set(err, MB_EPARSE, "%s: field 'jobs[%zu].window.seconds': negative", path,
                            i);
    }
    cj->window_start_ns = mb__an_json_i64(jw, "start_ns");
    cj->window_end_ns = mb__an_json_i64(jw, "end_ns");
    cj->has_window = cj->window_start_ns > 0 && cj->window_end_ns > cj->window_start_ns;
    if (!cj->window_s.valid && cj->has_window) {
        cj->window_s.valid = 1;
        cj->window_s.v = (double)(cj->window_end_ns - cj->window_start_ns) * 1e-9;
    }
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
    int64_t s = mb__an_json_i64(j, "started_ns"), en_ns = mb__an_json_i64(j, "ended_ns");
    if (s > 0 && en_ns > s) {
        cj->has_times = 1;
        cj->started_ns = s;
        cj->ended_ns = en_ns;
    }
    parse_job_instance(cj, m, i, j, mig_inst);
    struct mb_opt pct = mb__an_json_num(j, "thread_percentage");
    if (!pct.valid) {
        const cJSON *p = cJSON_GetArrayItem(mps_pct, (int)i);
        if (cJSON_IsNumber(p)) {
            pct.valid = 1;
            pct.v = p->valuedouble;
        }
    }
    m->pct[i] = pct;
    const cJSON *cpus = cJSON_GetObjectItemCaseSensitive(j, "cpus");
    m->cpus[i] = cJSON_IsArray(cpus) ? cJSON_GetArraySize(cpus) : 0;
    m->cores[i] = mb__an_json_num(j, "cores");
    if (read_argv(m, i, cJSON_GetObjectItemCaseSensitive(j, "argv")) != MB_OK)
        return mb_error_set(err, MB_ENOMEM, "%s: out of memory", path);
    return MB_OK;
}

/* The cell.json at path as a JSON object of a schema this migbench reads. */
static int cell_root(const char *path, cJSON **out, struct mb_error *err)
{
    *out = NULL;
    char *text = NULL;
    int st = mb__an_read_file(path, &text, err);
    if (st != MB_OK)
        return st;
    cJSON *root;
    st = mb_json_parse(text, strlen(text), path, &root, err);
    free(text);
    if (st != MB_OK)
        return st;
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return mb_error_set(err, MB_EPARSE, "%s: field '(root)': expected a JSON object", path);
    }
    struct mb_opt schema = mb__an_json_num(root, "schema");
    if (schema.valid && schema.v != 1) {
        cJSON_Delete(root);
        return mb_error_set(err, MB_EPARSE,
                            "%s: field 'schema': version %g is not supported (this migbench "
                            "reads 1)",
                            path, schema.v);
    }
    *out = root;
    return MB_OK;
}

int mb__cell_read_status(const char *path, struct mb_cell_status *out, struct mb_error *err)
{
    memset(out, 0, sizeof(*out));
    cJSON *root;
    int st = cell_root(path, &root, err);
    if (st != MB_OK)
        return st;
    struct mb_cell_record *r = malloc(sizeof(*r));
    if (!r) {
        cJSON_Delete(root);
        return mb_error_set(err, MB_ENOMEM, "out of memory");
    }
    st = mb_cell_record_decode(root, r, err);
    cJSON_Delete(root);
    if (st == MB_OK) {
        out->ok = r->ok;
        mb__copy_str(out->reason, sizeof(out->reason), r->fail_reason);
        mb__copy_str(out->slurm_job, sizeof(out->slurm_job), r->slurm.job);
        mb_cell_record_free(r);
    } else {
        mb_error_prefix(err, "%s: ", path);
    }
    free(r);
    return st;
}

int mb__an_parse_cell(struct mb_an_experiment *e, struct mb_an_cell *c, struct run_meta *m,
                      const char *path, const char *dirname_run, int dir_rep, struct mb_error *err)
{
    cJSON *root;
    int st = cell_root(path, &root, err);
    if (st != MB_OK)
        return st;
    mb__copy_str(c->path, sizeof(c->path), path);
    mb__copy_str(m->run, sizeof(m->run),
                 mb__an_json_str(root, "run") ? mb__an_json_str(root, "run") : dirname_run);
    mb__copy_str(m->mode, sizeof(m->mode), mb__an_json_str(root, "mode"));
    mb__copy_str(m->on, sizeof(m->on), mb__an_json_str(root, "on"));
    if (!m->mode[0]) {
        cJSON_Delete(root);
        return mb_error_set(err, MB_EPARSE, "%s: field 'mode': missing", path);
    }
    static const char *const modes[] = {"exclusive", "timeslice", "partition", "mig", "mps"};
    bool known = false;
    for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
        known = known || strcmp(m->mode, modes[i]) == 0;
    if (!known) {
        cJSON_Delete(root);
        return mb_error_set(err, MB_EPARSE,
                            "%s: field 'mode': '%s' is not a sharing mode (exclusive, timeslice, "
                            "partition, mig, mps)",
                            path, m->mode);
    }
    struct mb_opt rep = mb__an_json_num(root, "rep");
    c->rep = mb__an_opt_int(rep, dir_rep);
    const char *status = mb__an_json_str(root, "status");
    c->ok = status && strcmp(status, "ok") == 0;
    if (!c->ok) {
        const cJSON *fl = cJSON_GetObjectItemCaseSensitive(root, "failure");
        const char *job = mb__an_json_str(fl, "job"), *reason = mb__an_json_str(fl, "reason");
        snprintf(c->failure, sizeof(c->failure), "%s%s%s", job ? job : "", job ? ": " : "",
                 reason ? reason : (status ? status : "no status"));
    }
    if (!e->name[0]) {
        mb__copy_str(e->name, sizeof(e->name), mb__an_json_str(root, "experiment"));
        mb__copy_str(e->sha, sizeof(e->sha), mb__an_json_str(root, "experiment_sha"));
        mb__copy_str(e->migbench_version, sizeof(e->migbench_version),
                     mb__an_json_str(root, "migbench_version"));
    }
    read_device(e, cJSON_GetObjectItemCaseSensitive(root, "device"));
    read_power_limit(c, cJSON_GetObjectItemCaseSensitive(root, "power_limit"));
    mb__copy_str(c->gpu_uuid, sizeof(c->gpu_uuid),
                 mb__an_json_str(cJSON_GetObjectItemCaseSensitive(root, "device"), "uuid"));
    parse_cell_energy(c, root);
    const cJSON *ol = cJSON_GetObjectItemCaseSensitive(root, "outside_load");
    const cJSON *loaded = cJSON_GetObjectItemCaseSensitive(ol, "loaded");
    c->outside_load = cJSON_IsBool(loaded) ? cJSON_IsTrue(loaded) : -1;
    mb__copy_str(c->outside_load_why, sizeof(c->outside_load_why), mb__an_json_str(ol, "why"));
    const cJSON *mig_inst = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, "device"), "mig"),
        "instances");
    const cJSON *mps_pct = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(root, "mps"), "thread_percentage");
    const cJSON *jobs = cJSON_GetObjectItemCaseSensitive(root, "jobs");
    size_t nj = (size_t)cJSON_GetArraySize(jobs);
    if (!cJSON_IsArray(jobs) || nj == 0) {
        cJSON_Delete(root);
        return mb_error_set(err, MB_EPARSE, "%s: field 'jobs': missing or empty", path);
    }
    if (nj > MB_AN_JOBS_MAX) {
        cJSON_Delete(root);
        return mb_error_set(err, MB_EPARSE, "%s: field 'jobs': more than %d jobs", path,
                            MB_AN_JOBS_MAX);
    }
    c->njobs = nj;
    m->njobs = nj;
    for (size_t i = 0; i < nj; i++) {
        st =
            parse_cell_job(c, m, i, cJSON_GetArrayItem(jobs, (int)i), mig_inst, mps_pct, path, err);
        if (st != MB_OK) {
            cJSON_Delete(root);
            return st;
        }
        record_workload(e, m->workload[i],
                        cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(jobs, (int)i), "argv"));
    }
    cJSON_Delete(root);
    return MB_OK;
}
