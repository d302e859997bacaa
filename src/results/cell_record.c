/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cell.json's one encoder and one decoder (results/cell_record.h): the document's keys, their
 * order and their nulls are written down here and nowhere else.
 */
#include "results/cell_record.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "migbench/meter.h"
#include "migbench/results.h"
#include "results/energy_json.h"

/* ---- encoding -------------------------------------------------------------------------------- */

static void put_opt(cJSON *o, const char *k, struct mb_opt v)
{
    mb__json_num_or_null(o, k, v.valid != 0, v.v);
}

void mb_cell_slurm_json_add(cJSON *o, const struct mb_cell_slurm *s)
{
    if (!s->present)
        return;
    cJSON *x = cJSON_AddObjectToObject(o, "slurm");
    if (!x)
        return;
    cJSON_AddStringToObject(x, "job", s->job);
    cJSON_AddStringToObject(x, "job_id", s->job_id);
    mb__json_str_or_null(x, "array_job_id", s->array_job_id);
    mb__json_str_or_null(x, "array_task_id", s->array_task_id);
    mb__json_str_or_null(x, "node", s->node);
}

void mb_cell_slurm_from_env(struct mb_cell_slurm *s)
{
    memset(s, 0, sizeof(*s));
    const char *job = getenv("SLURM_JOB_ID");
    if (!job || !job[0])
        return;
    const char *array = getenv("SLURM_ARRAY_JOB_ID");
    const char *task = getenv("SLURM_ARRAY_TASK_ID");
    const char *node = getenv("SLURMD_NODENAME");
    s->present = true;
    if (array && array[0] && task && task[0])
        snprintf(s->job, sizeof(s->job), "%.60s_%.60s", array, task);
    else
        snprintf(s->job, sizeof(s->job), "%.60s", job);
    snprintf(s->job_id, sizeof(s->job_id), "%s", job);
    snprintf(s->array_job_id, sizeof(s->array_job_id), "%s", array ? array : "");
    snprintf(s->array_task_id, sizeof(s->array_task_id), "%s", task ? task : "");
    snprintf(s->node, sizeof(s->node), "%s", node ? node : "");
}

void mb_cell_cooldown_json_add(cJSON *o, const struct mb_cell_cooldown *cd)
{
    put_opt(o, "seconds", cd->seconds);
    mb__json_str_or_null(o, "ended", cd->ended);
    mb__json_str_or_null(o, "reference", cd->reference);
    put_opt(o, "reference_w", cd->reference_w);
    put_opt(o, "power_w", cd->power_w);
}

static cJSON *cooldown_json(const struct mb_cell_cooldown *cd)
{
    cJSON *o = cJSON_CreateObject();
    if (o)
        mb_cell_cooldown_json_add(o, cd);
    return o;
}

static void add_window(cJSON *o, const struct mb_cell_window *w)
{
    cJSON *x = cJSON_AddObjectToObject(o, "window");
    put_opt(x, "start_ns", w->start_ns);
    put_opt(x, "end_ns", w->end_ns);
    put_opt(x, "seconds", w->seconds);
}

static cJSON *mig_json(const struct mb_cell_device *d)
{
    cJSON *mig = cJSON_CreateObject();
    cJSON_AddNumberToObject(mig, "mode", d->mig_mode);
    cJSON *arr = cJSON_AddArrayToObject(mig, "instances");
    for (size_t i = 0; i < d->n_inst; i++) {
        const struct mb_cell_instance *in = &d->inst[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "profile", in->profile);
        cJSON_AddStringToObject(o, "requested", in->requested);
        cJSON *pl = cJSON_AddObjectToObject(o, "placement");
        cJSON_AddNumberToObject(pl, "start", in->placement.start);
        cJSON_AddNumberToObject(pl, "size", in->placement.size);
        cJSON_AddNumberToObject(o, "gi_id", in->gi_id);
        cJSON_AddNumberToObject(o, "ci_id", in->ci_id);
        mb__json_str_or_null(o, "uuid", in->uuid);
        cJSON_AddItemToArray(arr, o);
    }
    return mig;
}

static cJSON *device_json(const struct mb_cell_device *d)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "backend", d->backend);
    cJSON_AddBoolToObject(o, "emulated", d->emulated);
    if (d->has_gpu)
        cJSON_AddBoolToObject(o, "gpu", d->gpu);
    else
        cJSON_AddNullToObject(o, "gpu");
    mb__json_str_or_null(o, "name", d->name);
    mb__json_str_or_null(o, "model", d->model);
    mb__json_str_or_null(o, "uuid", d->uuid);
    mb__json_str_or_null(o, "driver_version", d->driver_version);
    mb__json_str_or_null(o, "nvml_version", d->nvml_version);
    put_opt(o, "power_limit_mw", d->power_limit_mw);
    if (d->has_sensor)
        mb__sensor_json_add(cJSON_AddObjectToObject(o, "sensor"), &d->sensor);
    else
        cJSON_AddNullToObject(o, "sensor");
    cJSON_AddItemToObject(o, "mig", d->has_mig ? mig_json(d) : cJSON_CreateNull());
    return o;
}

static cJSON *power_json(const struct mb_cell_power *p)
{
    if (!p->active)
        return cJSON_CreateNull();
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cJSON_AddStringToObject(o, "requested", p->requested);
    cJSON_AddStringToObject(o, "base_run", p->base_run);
    put_opt(o, "requested_mw", p->requested_mw);
    put_opt(o, "enforced_mw", p->enforced_mw);
    cJSON_AddBoolToObject(o, "set_by_migbench", p->set_by_migbench);
    if (!p->throttle_valid) {
        cJSON_AddNullToObject(o, "throttle_reasons");
        cJSON_AddNullToObject(o, "throttle_reason_names");
        return o;
    }
    cJSON_AddNumberToObject(o, "throttle_reasons", (double)p->throttle_reasons);
    char names[256];
    cJSON *arr = cJSON_AddArrayToObject(o, "throttle_reason_names");
    mb_throttle_reasons_str(p->throttle_reasons, names, sizeof(names));
    char *save = NULL;
    for (char *tok = strtok_r(names, ",", &save); arr && tok; tok = strtok_r(NULL, ",", &save))
        cJSON_AddItemToArray(arr, cJSON_CreateString(tok));
    return o;
}

static cJSON *mps_json(const struct mb_cell_record *r)
{
    if (!r->has_mps)
        return cJSON_CreateNull();
    cJSON *mp = cJSON_CreateObject();
    cJSON *arr = cJSON_AddArrayToObject(mp, "thread_percentage");
    for (size_t i = 0; i < r->n_mps_pct; i++)
        cJSON_AddItemToArray(arr, cJSON_CreateNumber(r->mps_pct[i]));
    cJSON_AddStringToObject(mp, "pipe_dir", r->mps_pipe_dir);
    cJSON_AddStringToObject(mp, "log_dir", r->mps_log_dir);
    cJSON_AddStringToObject(mp, "daemon", r->mps_daemon);
    return mp;
}

static cJSON *energy_json(const struct mb_cell_energy *e)
{
    cJSON *o = cJSON_CreateObject();
    put_opt(o, "counter_j", e->counter_j);
    put_opt(o, "integrated_j", e->integrated_j);
    put_opt(o, "gap_pct", e->gap_pct);
    cJSON_AddStringToObject(o, "flag", e->flag);
    mb__json_str_or_null(o, "method", e->method);
    mb__json_str_or_null(o, "refused_reason", e->refused_reason);
    mb__json_str_or_null(o, "note", e->note);
    put_opt(o, "idle_power_w", e->idle_power_w);
    put_opt(o, "mean_power_w", e->mean_power_w);
    put_opt(o, "peak_power_w", e->peak_power_w);
    cJSON_AddNumberToObject(o, "samples", e->samples);
    put_opt(o, "missed_updates", e->missed_updates);
    return o;
}

static void add_load(cJSON *o, const struct mb_cell_load *l)
{
    if (!l->present)
        return;
    cJSON *x = mb__hostload_json(&l->all);
    cJSON_AddStringToObject(x, "source", l->source);
    cJSON *arr = cJSON_AddArrayToObject(x, "windows");
    for (size_t i = 0; i < l->n_windows && i < MB_EXP_MAX_JOBS; i++)
        cJSON_AddItemToArray(arr, mb__hostload_json(&l->windows[i]));
    cJSON_AddItemToObject(o, "outside_load", x);
}

/* A job's name, workload, command, environment, instance and CPUs. */
static void job_setup_json(cJSON *o, const struct mb_cell_job *j)
{
    cJSON_AddStringToObject(o, "name", j->name);
    cJSON_AddStringToObject(o, "workload", j->workload);
    cJSON_AddStringToObject(o, "unit", j->unit);
    cJSON *argv = cJSON_AddArrayToObject(o, "argv");
    for (size_t k = 0; k < j->argc; k++)
        cJSON_AddItemToArray(argv, cJSON_CreateString(j->argv[k]));
    cJSON *env = cJSON_AddObjectToObject(o, "env");
    for (size_t k = 0; k < j->n_env; k++) {
        const char *eq = strchr(j->env[k], '=');
        char name[128];
        snprintf(name, sizeof(name), "%.*s", (int)(eq - j->env[k]), j->env[k]);
        cJSON_AddStringToObject(env, name, eq + 1);
    }
    if (j->has_instance) {
        cJSON *in = cJSON_AddObjectToObject(o, "instance");
        cJSON_AddStringToObject(in, "profile", j->inst_profile);
        cJSON_AddStringToObject(in, "requested", j->inst_requested);
        cJSON_AddStringToObject(in, "uuid", j->inst_uuid);
    } else {
        cJSON_AddNullToObject(o, "instance");
    }
    if (j->has_cpus) {
        cJSON *cp = cJSON_AddArrayToObject(o, "cpus");
        for (unsigned k = 0; k < j->cpus.n && k < MB_CPUSET_MAX / 8; k++)
            cJSON_AddItemToArray(cp, cJSON_CreateNumber(j->cpus.cpus[k]));
    } else {
        cJSON_AddNullToObject(o, "cpus");
    }
    put_opt(o, "cores", j->cores);
    put_opt(o, "omp_num_threads", j->omp_num_threads);
    put_opt(o, "thread_percentage", j->thread_percentage);
}

static cJSON *job_json(const struct mb_cell_job *j)
{
    cJSON *o = cJSON_CreateObject();
    job_setup_json(o, j);
    cJSON_AddItemToObject(o, "cooldown", cooldown_json(&j->cooldown));
    cJSON *ex = cJSON_AddObjectToObject(o, "exit");
    put_opt(ex, "code", j->exit_code);
    put_opt(ex, "signal", j->exit_signal);
    put_opt(o, "steps", j->steps);
    put_opt(o, "units", j->units);
    cJSON *tp = cJSON_AddObjectToObject(o, "throughput");
    put_opt(tp, "mean", j->tp_mean);
    put_opt(tp, "ci95", j->tp_ci95);
    cJSON_AddStringToObject(tp, "unit_per_s", j->tp_unit_per_s);
    if (j->tp_has_reason)
        cJSON_AddStringToObject(tp, "reason", j->tp_reason);
    add_window(o, &j->window);
    put_opt(o, "completion_s", j->completion_s);
    put_opt(o, "started_ns", j->started_ns);
    put_opt(o, "ended_ns", j->ended_ns);
    cJSON_AddStringToObject(o, "log", j->log);
    return o;
}

/* schema .. migbench_version and the Slurm block. */
static void head_json(cJSON *o, const struct mb_cell_record *r)
{
    cJSON_AddNumberToObject(o, "schema", r->schema);
    cJSON_AddStringToObject(o, "experiment", r->experiment);
    cJSON_AddStringToObject(o, "experiment_sha", r->experiment_sha);
    cJSON_AddStringToObject(o, "run", r->run);
    cJSON_AddStringToObject(o, "mode", r->mode);
    cJSON_AddNumberToObject(o, "rep", r->rep);
    cJSON_AddStringToObject(o, "status", r->ok ? "ok" : "failed");
    if (!r->ok) {
        cJSON *f = cJSON_AddObjectToObject(o, "failure");
        mb__json_str_or_null(f, "job", r->fail_job);
        cJSON_AddStringToObject(f, "reason", r->fail_reason);
        mb__json_str_or_null(f, "log_tail", r->fail_log_tail);
    } else {
        cJSON_AddNullToObject(o, "failure");
    }
    cJSON_AddStringToObject(o, "migbench_version", r->migbench_version);
    mb_cell_slurm_json_add(o, &r->slurm);
}

cJSON *mb_cell_record_encode(const struct mb_cell_record *r)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    head_json(o, r);
    cJSON_AddNumberToObject(o, "started_unix", r->started_unix);
    cJSON_AddNumberToObject(o, "t0_ns", r->t0_ns);
    cJSON_AddNumberToObject(o, "start_offset_s", r->start_offset_s);
    cJSON_AddItemToObject(o, "cooldown", cooldown_json(&r->cooldown));
    add_window(o, &r->window);
    cJSON_AddItemToObject(o, "device", device_json(&r->device));
    cJSON_AddItemToObject(o, "power_limit", power_json(&r->power));
    cJSON_AddItemToObject(o, "mps", mps_json(r));
    put_opt(o, "reconfigure_seconds", r->reconfigure_seconds);
    if (r->has_on)
        cJSON_AddStringToObject(o, "on", r->on);
    cJSON_AddItemToObject(o, "energy", energy_json(&r->energy));
    add_load(o, &r->load);
    cJSON *jobs = cJSON_AddArrayToObject(o, "jobs");
    for (size_t i = 0; i < r->n_jobs && i < MB_EXP_MAX_JOBS; i++)
        cJSON_AddItemToArray(jobs, job_json(&r->jobs[i]));
    return o;
}

/* ---- decoding -------------------------------------------------------------------------------- */

static const cJSON *get(const cJSON *o, const char *k)
{
    return cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, k) : NULL;
}

static struct mb_opt get_opt(const cJSON *o, const char *k)
{
    const cJSON *v = get(o, k);
    return mb_cell_num(cJSON_IsNumber(v) && isfinite(v->valuedouble), v ? v->valuedouble : 0);
}

/* A number that must fit an unsigned field; 0 otherwise. */
static unsigned get_uint(const cJSON *o, const char *k)
{
    struct mb_opt v = get_opt(o, k);
    return v.valid && v.v >= 0 && v.v <= 4294967295.0 ? (unsigned)v.v : 0;
}

static void get_str(const cJSON *o, const char *k, char *out, size_t cap)
{
    const cJSON *v = get(o, k);
    snprintf(out, cap, "%s", cJSON_IsString(v) ? v->valuestring : "");
}

static bool get_true(const cJSON *o, const char *k)
{
    return cJSON_IsTrue(get(o, k));
}

void mb_cell_cooldown_json_read(const cJSON *o, struct mb_cell_cooldown *cd)
{
    cd->seconds = get_opt(o, "seconds");
    get_str(o, "ended", cd->ended, sizeof(cd->ended));
    get_str(o, "reference", cd->reference, sizeof(cd->reference));
    cd->reference_w = get_opt(o, "reference_w");
    cd->power_w = get_opt(o, "power_w");
}

static void dec_window(const cJSON *o, struct mb_cell_window *w)
{
    const cJSON *x = get(o, "window");
    w->start_ns = get_opt(x, "start_ns");
    w->end_ns = get_opt(x, "end_ns");
    w->seconds = get_opt(x, "seconds");
}

static void dec_slurm(const cJSON *o, struct mb_cell_slurm *s)
{
    const cJSON *x = get(o, "slurm");
    s->present = cJSON_IsObject(x);
    get_str(x, "job", s->job, sizeof(s->job));
    get_str(x, "job_id", s->job_id, sizeof(s->job_id));
    get_str(x, "array_job_id", s->array_job_id, sizeof(s->array_job_id));
    get_str(x, "array_task_id", s->array_task_id, sizeof(s->array_task_id));
    get_str(x, "node", s->node, sizeof(s->node));
}

static void dec_sensor(const cJSON *o, struct mb_sensor_info *s)
{
    const cJSON *k = get(o, "power_kind");
    s->power_kind = MB_POWER_UNKNOWN;
    for (int i = MB_POWER_UNKNOWN; i <= MB_POWER_NONE; i++)
        if (cJSON_IsString(k) && strcmp(k->valuestring, mb_power_kind_str(i)) == 0)
            s->power_kind = i;
    s->power_update_period_ms = get_uint(o, "power_update_period_ms");
    s->power_avg_window_ms = get_uint(o, "power_avg_window_ms");
    s->has_energy_counter = get_true(o, "has_energy_counter");
    s->energy_update_period_ms = get_uint(o, "energy_update_period_ms");
    get_str(o, "scope", s->scope, sizeof(s->scope));
    get_str(o, "source", s->source, sizeof(s->source));
}

static void dec_mig(const cJSON *mig, struct mb_cell_device *d)
{
    d->has_mig = cJSON_IsObject(mig);
    d->mig_mode = (int)get_uint(mig, "mode");
    const cJSON *it;
    cJSON_ArrayForEach(it, get(mig, "instances"))
    {
        if (d->n_inst == MB_EXP_MAX_JOBS)
            break;
        struct mb_cell_instance *in = &d->inst[d->n_inst++];
        get_str(it, "profile", in->profile, sizeof(in->profile));
        get_str(it, "requested", in->requested, sizeof(in->requested));
        in->placement.start = get_uint(get(it, "placement"), "start");
        in->placement.size = get_uint(get(it, "placement"), "size");
        in->gi_id = get_uint(it, "gi_id");
        in->ci_id = get_uint(it, "ci_id");
        get_str(it, "uuid", in->uuid, sizeof(in->uuid));
    }
}

static void dec_device(const cJSON *o, struct mb_cell_device *d)
{
    get_str(o, "backend", d->backend, sizeof(d->backend));
    d->emulated = get_true(o, "emulated");
    const cJSON *gpu = get(o, "gpu");
    d->has_gpu = cJSON_IsBool(gpu);
    d->gpu = cJSON_IsTrue(gpu);
    get_str(o, "name", d->name, sizeof(d->name));
    get_str(o, "model", d->model, sizeof(d->model));
    get_str(o, "uuid", d->uuid, sizeof(d->uuid));
    get_str(o, "driver_version", d->driver_version, sizeof(d->driver_version));
    get_str(o, "nvml_version", d->nvml_version, sizeof(d->nvml_version));
    d->power_limit_mw = get_opt(o, "power_limit_mw");
    d->has_sensor = cJSON_IsObject(get(o, "sensor"));
    if (d->has_sensor)
        dec_sensor(get(o, "sensor"), &d->sensor);
    dec_mig(get(o, "mig"), d);
}

static void dec_power(const cJSON *o, struct mb_cell_power *p)
{
    p->active = cJSON_IsObject(o);
    get_str(o, "requested", p->requested, sizeof(p->requested));
    get_str(o, "base_run", p->base_run, sizeof(p->base_run));
    p->requested_mw = get_opt(o, "requested_mw");
    p->enforced_mw = get_opt(o, "enforced_mw");
    p->set_by_migbench = get_true(o, "set_by_migbench");
    struct mb_opt bits = get_opt(o, "throttle_reasons");
    p->throttle_valid = bits.valid && bits.v >= 0 && bits.v < 0x1p64;
    p->throttle_reasons = p->throttle_valid ? (uint64_t)bits.v : 0;
}

static void dec_mps(const cJSON *o, struct mb_cell_record *r)
{
    r->has_mps = cJSON_IsObject(o);
    const cJSON *it;
    cJSON_ArrayForEach(it, get(o, "thread_percentage"))
    {
        if (r->n_mps_pct == MB_EXP_MAX_JOBS)
            break;
        r->mps_pct[r->n_mps_pct++] =
            cJSON_IsNumber(it) && it->valuedouble >= 0 && it->valuedouble <= 100
                ? (unsigned)it->valuedouble
                : 0;
    }
    get_str(o, "pipe_dir", r->mps_pipe_dir, sizeof(r->mps_pipe_dir));
    get_str(o, "log_dir", r->mps_log_dir, sizeof(r->mps_log_dir));
    get_str(o, "daemon", r->mps_daemon, sizeof(r->mps_daemon));
}

static void dec_energy(const cJSON *o, struct mb_cell_energy *e)
{
    e->counter_j = get_opt(o, "counter_j");
    e->integrated_j = get_opt(o, "integrated_j");
    e->gap_pct = get_opt(o, "gap_pct");
    get_str(o, "flag", e->flag, sizeof(e->flag));
    get_str(o, "method", e->method, sizeof(e->method));
    get_str(o, "refused_reason", e->refused_reason, sizeof(e->refused_reason));
    get_str(o, "note", e->note, sizeof(e->note));
    e->idle_power_w = get_opt(o, "idle_power_w");
    e->mean_power_w = get_opt(o, "mean_power_w");
    e->peak_power_w = get_opt(o, "peak_power_w");
    e->samples = get_opt(o, "samples").v;
    e->missed_updates = get_opt(o, "missed_updates");
}

static void dec_load_window(const cJSON *o, struct mb_hostload *w)
{
    const cJSON *loaded = get(o, "loaded");
    w->verdict_ok = cJSON_IsBool(loaded);
    w->loaded = cJSON_IsTrue(loaded);
    get_str(o, "why", w->why, sizeof(w->why));
    struct mb_opt v = get_opt(o, "steal_pct");
    w->steal_ok = v.valid, w->steal_pct = v.v;
    v = get_opt(o, "other_cpu_pct");
    w->other_ok = v.valid, w->other_pct = v.v;
    v = get_opt(o, "load1");
    w->load_ok = v.valid, w->load1 = v.v;
    w->cpus = get_uint(o, "cpus");
    v = get_opt(o, "job_cores");
    w->job_cores = v.valid && v.v > 0 ? v.v : 0;
}

static void dec_load(const cJSON *o, struct mb_cell_load *l)
{
    l->present = cJSON_IsObject(o);
    if (!l->present)
        return;
    dec_load_window(o, &l->all);
    get_str(o, "source", l->source, sizeof(l->source));
    const cJSON *it;
    cJSON_ArrayForEach(it, get(o, "windows"))
    {
        if (l->n_windows == MB_EXP_MAX_JOBS)
            break;
        dec_load_window(it, &l->windows[l->n_windows++]);
    }
}

static int dec_job_setup(const cJSON *o, struct mb_cell_job *j)
{
    get_str(o, "name", j->name, sizeof(j->name));
    get_str(o, "workload", j->workload, sizeof(j->workload));
    get_str(o, "unit", j->unit, sizeof(j->unit));
    const cJSON *argv = get(o, "argv");
    size_t n = cJSON_IsArray(argv) ? (size_t)cJSON_GetArraySize(argv) : 0;
    if (n > MB_CELL_ARGV_MAX)
        n = MB_CELL_ARGV_MAX;
    if (n && !(j->argv = calloc(n, sizeof(*j->argv))))
        return MB_ENOMEM;
    const cJSON *it;
    cJSON_ArrayForEach(it, argv)
    {
        if (j->argc == n)
            break;
        if (!(j->argv[j->argc] = strdup(cJSON_IsString(it) ? it->valuestring : "")))
            return MB_ENOMEM;
        j->argc++;
    }
    cJSON_ArrayForEach(it, get(o, "env"))
    {
        if (cJSON_IsString(it) && it->string &&
            mb_cell_job_add_env(j, it->string, it->valuestring) != MB_OK)
            return MB_ENOMEM;
    }
    const cJSON *in = get(o, "instance");
    j->has_instance = cJSON_IsObject(in);
    get_str(in, "profile", j->inst_profile, sizeof(j->inst_profile));
    get_str(in, "requested", j->inst_requested, sizeof(j->inst_requested));
    get_str(in, "uuid", j->inst_uuid, sizeof(j->inst_uuid));
    const cJSON *cpus = get(o, "cpus");
    j->has_cpus = cJSON_IsArray(cpus);
    cJSON_ArrayForEach(it, cpus)
    {
        if (j->cpus.n < MB_CPUSET_MAX / 8 && cJSON_IsNumber(it) && it->valuedouble >= 0 &&
            it->valuedouble < MB_CPUSET_MAX)
            j->cpus.cpus[j->cpus.n++] = (unsigned)it->valuedouble;
    }
    j->cores = get_opt(o, "cores");
    j->omp_num_threads = get_opt(o, "omp_num_threads");
    j->thread_percentage = get_opt(o, "thread_percentage");
    return MB_OK;
}

static int dec_job(const cJSON *o, struct mb_cell_job *j)
{
    int rc = dec_job_setup(o, j);
    if (rc != MB_OK)
        return rc;
    mb_cell_cooldown_json_read(get(o, "cooldown"), &j->cooldown);
    j->exit_code = get_opt(get(o, "exit"), "code");
    j->exit_signal = get_opt(get(o, "exit"), "signal");
    j->steps = get_opt(o, "steps");
    j->units = get_opt(o, "units");
    const cJSON *tp = get(o, "throughput");
    j->tp_mean = get_opt(tp, "mean");
    j->tp_ci95 = get_opt(tp, "ci95");
    get_str(tp, "unit_per_s", j->tp_unit_per_s, sizeof(j->tp_unit_per_s));
    j->tp_has_reason = cJSON_IsString(get(tp, "reason"));
    get_str(tp, "reason", j->tp_reason, sizeof(j->tp_reason));
    dec_window(cJSON_IsObject(get(o, "window")) ? o : tp, &j->window); /* older: in throughput */
    j->completion_s = get_opt(o, "completion_s");
    j->started_ns = get_opt(o, "started_ns");
    j->ended_ns = get_opt(o, "ended_ns");
    get_str(o, "log", j->log, sizeof(j->log));
    return MB_OK;
}

static void dec_head(const cJSON *root, struct mb_cell_record *r)
{
    r->schema = (int)get_uint(root, "schema");
    get_str(root, "experiment", r->experiment, sizeof(r->experiment));
    get_str(root, "experiment_sha", r->experiment_sha, sizeof(r->experiment_sha));
    get_str(root, "run", r->run, sizeof(r->run));
    get_str(root, "mode", r->mode, sizeof(r->mode));
    r->rep = get_uint(root, "rep");
    const cJSON *st = get(root, "status");
    r->ok = cJSON_IsString(st) && strcmp(st->valuestring, "ok") == 0;
    const cJSON *f = get(root, "failure");
    get_str(f, "job", r->fail_job, sizeof(r->fail_job));
    get_str(f, "reason", r->fail_reason, sizeof(r->fail_reason));
    get_str(f, "log_tail", r->fail_log_tail, sizeof(r->fail_log_tail));
    get_str(root, "migbench_version", r->migbench_version, sizeof(r->migbench_version));
    dec_slurm(root, &r->slurm);
}

/* The device's "sensor" object as "key=value, ..." in the file's order (strings, numbers and
 * booleans; anything else left out), cut where the text is full. */
static void sensor_text(const cJSON *sensor, char *out, size_t cap)
{
    size_t used = 0;
    const cJSON *it;
    out[0] = '\0';
    const cJSON *obj = cJSON_IsObject(sensor) ? sensor : NULL;
    cJSON_ArrayForEach(it, obj)
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
        int w = snprintf(out + used, cap - used, "%s%s=%s", used ? ", " : "",
                         it->string ? it->string : "?", val);
        if (w < 0 || (size_t)w >= cap - used)
            break;
        used += (size_t)w;
    }
}

static void dec_seen(const cJSON *root, struct mb_cell_seen *s)
{
    get_str(root, "status", s->status, sizeof(s->status));
    struct mb_opt rep = get_opt(root, "rep");
    s->rep = rep.valid && rep.v >= 0 && rep.v <= INT_MAX && rep.v == floor(rep.v);
    const cJSON *jobs = get(root, "jobs");
    s->n_jobs = cJSON_IsArray(jobs) ? (size_t)cJSON_GetArraySize(jobs) : 0;
    const cJSON *dev = get(root, "device");
    sensor_text(get(dev, "sensor"), s->sensor, sizeof(s->sensor));
    struct mb_opt samples = get_opt(get(root, "energy"), "samples");
    s->samples = samples.valid;
    size_t i = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, get(get(dev, "mig"), "instances"))
    {
        if (i == MB_EXP_MAX_JOBS)
            break;
        struct mb_opt g = get_opt(it, "gi_id");
        s->gi_id[i++] = g.valid && g.v >= 0 && g.v <= 4294967295.0;
    }
}

int mb_cell_record_decode(const cJSON *root, struct mb_cell_record *r, struct mb_error *err)
{
    memset(r, 0, sizeof(*r));
    if (!cJSON_IsObject(root))
        return mb_error_set(err, MB_EPARSE, "field '(root)': expected a JSON object");
    struct mb_opt schema = get_opt(root, "schema");
    if (schema.valid && schema.v != MB_RESULTS_SCHEMA)
        return mb_error_set(err, MB_EPARSE,
                            "field 'schema': version %g is not supported (this migbench reads %d)",
                            schema.v, MB_RESULTS_SCHEMA);
    dec_head(root, r);
    dec_seen(root, &r->seen);
    r->started_unix = get_opt(root, "started_unix").v;
    r->t0_ns = get_opt(root, "t0_ns").v;
    r->start_offset_s = get_opt(root, "start_offset_s").v;
    mb_cell_cooldown_json_read(get(root, "cooldown"), &r->cooldown);
    dec_window(root, &r->window);
    dec_device(get(root, "device"), &r->device);
    dec_power(get(root, "power_limit"), &r->power);
    dec_mps(get(root, "mps"), r);
    r->reconfigure_seconds = get_opt(root, "reconfigure_seconds");
    r->has_on = cJSON_IsString(get(root, "on"));
    get_str(root, "on", r->on, sizeof(r->on));
    dec_energy(get(root, "energy"), &r->energy);
    dec_load(get(root, "outside_load"), &r->load);
    const cJSON *it;
    cJSON_ArrayForEach(it, get(root, "jobs"))
    {
        if (r->n_jobs == MB_EXP_MAX_JOBS)
            break;
        if (dec_job(it, &r->jobs[r->n_jobs++]) != MB_OK) {
            mb_cell_record_free(r);
            return mb_error_set(err, MB_ENOMEM, "out of memory");
        }
    }
    return MB_OK;
}

/* ---- ownership ------------------------------------------------------------------------------- */

int mb_cell_job_set_argv(struct mb_cell_job *j, char *const *argv)
{
    size_t n = 0;
    while (argv && argv[n])
        n++;
    if (n == 0)
        return MB_OK;
    if (!(j->argv = calloc(n, sizeof(*j->argv))))
        return MB_ENOMEM;
    for (; j->argc < n; j->argc++)
        if (!(j->argv[j->argc] = strdup(argv[j->argc])))
            return MB_ENOMEM;
    return MB_OK;
}

int mb_cell_job_add_env(struct mb_cell_job *j, const char *name, const char *value)
{
    if (j->n_env == MB_CELL_ENV_MAX)
        return MB_OK; /* more than a job is given: the first ones are kept */
    size_t len = strlen(name) + 1 + strlen(value) + 1;
    char *kv = malloc(len);
    if (!kv)
        return MB_ENOMEM;
    snprintf(kv, len, "%s=%s", name, value);
    j->env[j->n_env++] = kv;
    return MB_OK;
}

void mb_cell_record_free(struct mb_cell_record *r)
{
    for (size_t i = 0; i < r->n_jobs && i < MB_EXP_MAX_JOBS; i++) {
        struct mb_cell_job *j = &r->jobs[i];
        for (size_t k = 0; k < j->argc; k++)
            free(j->argv[k]);
        free(j->argv);
        j->argv = NULL;
        j->argc = 0;
        for (size_t k = 0; k < j->n_env; k++)
            free(j->env[k]);
        j->n_env = 0;
    }
}
