/* SPDX-License-Identifier: Apache-2.0 */
/* The journal's events as types: one encoder and one decoder per kind (journal_events.h). */
#include "results/journal_events.h"
#include "results/cell_record.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct mb_jev mb_jev_init(enum mb_jev_kind k)
{
    struct mb_jev e;
    memset(&e, 0, sizeof(e));
    e.kind = k;
    e.event = mb_jev_name(k);
    e.rep = -1;
    e.pid = -1;
    e.original_current = e.original_pending = e.mode = -1;
    e.seconds = e.removed = e.limit_mw = -1;
    return e;
}

/* ---- field helpers --------------------------------------------------------------------------- */

static const char *str_of(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static bool uint_of(const cJSON *o, const char *key, unsigned *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > 4294967295.0)
        return false;
    *out = (unsigned)v->valuedouble;
    return true;
}

static double num_of(const cJSON *o, const char *key, double dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

/* The number 0 or 1; -1 otherwise. */
static int bit_of(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (cJSON_IsNumber(v) && (v->valuedouble == 0 || v->valuedouble == 1))
        return (int)v->valuedouble;
    return -1;
}

static cJSON *str_or_null(const char *s)
{
    return s && s[0] ? cJSON_CreateString(s) : cJSON_CreateNull();
}

void mb_jev_add_slurm(cJSON *o)
{
    struct mb_cell_slurm s;
    mb_cell_slurm_from_env(&s);
    mb_cell_slurm_json_add(o, &s);
}

/* ---- one encoder and one decoder per kind ---------------------------------------------------- */

static void enc_experiment_finished(cJSON *o, const struct mb_jev *e)
{
    cJSON_AddNumberToObject(o, "ok", e->n_ok);
    cJSON_AddNumberToObject(o, "failed", e->n_failed);
    cJSON_AddNumberToObject(o, "skipped", e->n_skipped);
}

static void dec_experiment_finished(const cJSON *o, struct mb_jev *e)
{
    e->n_ok = num_of(o, "ok", -1);
    e->n_failed = num_of(o, "failed", -1);
    e->n_skipped = num_of(o, "skipped", -1);
}

static void enc_experiment_started(cJSON *o, const struct mb_jev *e)
{
    cJSON_AddStringToObject(o, "experiment", e->experiment ? e->experiment : "");
    cJSON_AddStringToObject(o, "experiment_sha", e->experiment_sha ? e->experiment_sha : "");
    cJSON_AddStringToObject(o, "file", e->file ? e->file : "");
    cJSON *ov = cJSON_AddArrayToObject(o, "overrides");
    for (size_t i = 0; ov && i < e->n_overrides; i++)
        cJSON_AddItemToArray(ov, cJSON_CreateString(e->overrides[i]));
    cJSON_AddStringToObject(o, "device", e->device ? e->device : "");
    cJSON *gl = cJSON_AddArrayToObject(o, "gpus");
    for (size_t g = 0; gl && g < e->n_gpus; g++)
        cJSON_AddItemToArray(gl, cJSON_CreateString(e->gpus[g]));
    cJSON_AddBoolToObject(o, "manage_mig_mode", e->manage_mig_mode);
    cJSON_AddStringToObject(o, "backend", e->backend ? e->backend : "");
    cJSON_AddNumberToObject(o, "cells", e->cells);
    if (e->cell_indices) {
        cJSON *arr = cJSON_AddArrayToObject(o, "cell_indices");
        for (size_t i = 0; arr && i < e->n_cell_indices; i++)
            cJSON_AddItemToArray(arr, cJSON_CreateNumber((double)e->cell_indices[i]));
    }
    cJSON_AddBoolToObject(o, "resume", e->resume);
    cJSON_AddNumberToObject(o, "pid", (double)e->pid);
    cJSON_AddStringToObject(o, "migbench_version", e->version ? e->version : "");
}

static void dec_experiment_started(const cJSON *o, struct mb_jev *e)
{
    e->experiment_sha = str_of(o, "experiment_sha");
}

static void enc_interrupted(cJSON *o, const struct mb_jev *e)
{
    cJSON_AddNumberToObject(o, "signal", e->signal);
}

static void dec_interrupted(const cJSON *o, struct mb_jev *e)
{
    e->signal = (int)num_of(o, "signal", 0);
}

static void enc_cell_started(cJSON *o, const struct mb_jev *e)
{
    cJSON_AddStringToObject(o, "mode", e->mode_name ? e->mode_name : "");
    cJSON_AddStringToObject(o, "gpu_uuid", e->gpu_uuid ? e->gpu_uuid : "");
}

static void dec_cell_started(const cJSON *o, struct mb_jev *e)
{
    e->mode_name = str_of(o, "mode");
    e->gpu_uuid = str_of(o, "gpu_uuid");
}

static void enc_cell_end(cJSON *o, const struct mb_jev *e)
{
    cJSON_AddStringToObject(o, "gpu_uuid", e->gpu_uuid ? e->gpu_uuid : "");
    cJSON_AddNumberToObject(o, "seconds", e->seconds);
    if (e->kind == MB_JEV_CELL_FAILED)
        cJSON_AddStringToObject(o, "reason", e->reason ? e->reason : "");
}

static void dec_cell_end(const cJSON *o, struct mb_jev *e)
{
    e->gpu_uuid = str_of(o, "gpu_uuid");
    e->seconds = num_of(o, "seconds", -1);
    e->reason = str_of(o, "reason");
}

/* mig_created of a GPU instance: profile and placement; of its compute instance: ci_id. */
static void enc_mig(cJSON *o, const struct mb_jev *e)
{
    cJSON_AddStringToObject(o, "gpu_uuid", e->gpu_uuid ? e->gpu_uuid : "");
    cJSON_AddNumberToObject(o, "gi_id", e->gi_id);
    if (e->profile) {
        cJSON_AddStringToObject(o, "profile", e->profile);
        cJSON *pl = cJSON_AddObjectToObject(o, "placement");
        cJSON_AddNumberToObject(pl, "start", e->placement.start);
        cJSON_AddNumberToObject(pl, "size", e->placement.size);
    }
    if (e->has_ci)
        cJSON_AddNumberToObject(o, "ci_id", e->ci_id);
    if (e->ledger)
        cJSON_AddStringToObject(o, "ledger", e->ledger);
}

static void dec_mig(const cJSON *o, struct mb_jev *e)
{
    e->gpu_uuid = str_of(o, "gpu_uuid");
    e->has_gi = uint_of(o, "gi_id", &e->gi_id);
    e->has_ci = uint_of(o, "ci_id", &e->ci_id);
    e->profile = str_of(o, "profile");
    const cJSON *pl = cJSON_GetObjectItemCaseSensitive(o, "placement");
    uint_of(pl, "start", &e->placement.start);
    uint_of(pl, "size", &e->placement.size);
    e->ledger = str_of(o, "ledger");
}

static void enc_mps_started(cJSON *o, const struct mb_jev *e)
{
    if (e->pid > 0)
        cJSON_AddNumberToObject(o, "pid", (double)e->pid);
    else
        cJSON_AddNullToObject(o, "pid");
    cJSON_AddStringToObject(o, "pipe_dir", e->pipe_dir ? e->pipe_dir : "");
    cJSON_AddStringToObject(o, "log_dir", e->log_dir ? e->log_dir : "");
}

static void dec_mps(const cJSON *o, struct mb_jev *e)
{
    double pid = num_of(o, "pid", -1);
    e->pid = pid >= 1 && pid <= INT_MAX ? (long)pid : -1;
    e->pipe_dir = str_of(o, "pipe_dir");
    e->log_dir = str_of(o, "log_dir");
    e->ok = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "ok"));
}

static void enc_mps_stopped(cJSON *o, const struct mb_jev *e)
{
    cJSON_AddStringToObject(o, "pipe_dir", e->pipe_dir ? e->pipe_dir : "");
    cJSON_AddBoolToObject(o, "ok", e->ok);
}

static void enc_mig_mode(cJSON *o, const struct mb_jev *e)
{
    cJSON_AddStringToObject(o, "gpu_uuid", e->gpu_uuid ? e->gpu_uuid : "");
    cJSON_AddStringToObject(o, "device", e->device ? e->device : "");
    cJSON_AddNumberToObject(o, "original_current", e->original_current);
    cJSON_AddNumberToObject(o, "original_pending", e->original_pending);
    cJSON_AddNumberToObject(o, "mode", e->mode);
}

static void dec_mig_mode(const cJSON *o, struct mb_jev *e)
{
    e->gpu_uuid = str_of(o, "gpu_uuid");
    e->device = str_of(o, "device");
    e->original_current = bit_of(o, "original_current");
    e->original_pending = bit_of(o, "original_pending");
    e->mode = bit_of(o, "mode");
}

static void enc_cleanup(cJSON *o, const struct mb_jev *e)
{
    cJSON_AddStringToObject(o, "what", e->what ? e->what : "");
    if (e->pipe_dir)
        cJSON_AddStringToObject(o, "pipe_dir", e->pipe_dir);
    if (e->removed >= 0)
        cJSON_AddNumberToObject(o, "removed", e->removed);
    cJSON_AddBoolToObject(o, "ok", e->ok);
    cJSON_AddItemToObject(o, "reason", str_or_null(e->reason));
}

static void dec_cleanup(const cJSON *o, struct mb_jev *e)
{
    e->what = str_of(o, "what");
    e->pipe_dir = str_of(o, "pipe_dir");
    e->removed = num_of(o, "removed", -1);
    e->ok = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "ok"));
    e->reason = str_of(o, "reason");
}

static void enc_job_started(cJSON *o, const struct mb_jev *e)
{
    cJSON_AddStringToObject(o, "job", e->job ? e->job : "");
    cJSON_AddNumberToObject(o, "pid", (double)e->pid);
}

static void dec_job_started(const cJSON *o, struct mb_jev *e)
{
    e->job = str_of(o, "job");
    double pid = num_of(o, "pid", -1);
    e->pid = pid >= 1 && pid <= INT_MAX ? (long)pid : -1;
}

/* A cool-down: cell.json's cooldown fields, after the exclusive job it came before. */
static void enc_cooldown(cJSON *o, const struct mb_jev *e)
{
    if (e->job)
        cJSON_AddStringToObject(o, "before_job", e->job);
    mb_cell_cooldown_json_add(o, &e->cooldown);
}

static void dec_cooldown(const cJSON *o, struct mb_jev *e)
{
    e->job = str_of(o, "before_job");
    mb_cell_cooldown_json_read(o, &e->cooldown);
}

static void enc_power_limit_set(cJSON *o, const struct mb_jev *e)
{
    cJSON_AddStringToObject(o, "requested", e->requested ? e->requested : "");
    cJSON_AddNumberToObject(o, "limit_mw", e->limit_mw);
    if (e->ledger) /* none where limits are set without one */
        cJSON_AddStringToObject(o, "ledger", e->ledger);
}

static void dec_power_limit(const cJSON *o, struct mb_jev *e)
{
    e->requested = str_of(o, "requested");
    e->limit_mw = num_of(o, "limit_mw", -1);
    e->ledger = str_of(o, "ledger");
    e->outcome = str_of(o, "outcome");
}

static void enc_power_limit_restored(cJSON *o, const struct mb_jev *e)
{
    if (e->outcome)
        cJSON_AddStringToObject(o, "outcome", e->outcome);
}

typedef void (*enc_fn)(cJSON *o, const struct mb_jev *e);
typedef void (*dec_fn)(const cJSON *o, struct mb_jev *e);

/* The kinds, their names and codecs (docs/results.md lists the fields). */
static const struct {
    const char *name;
    enc_fn enc; /* NULL: MB_JEV_OTHER (only the common fields) */
    dec_fn dec;
} kinds[MB_JEV_KINDS] = {
    [MB_JEV_OTHER] = {"", NULL, NULL},
    [MB_JEV_EXPERIMENT_STARTED] = {"experiment_started", enc_experiment_started,
                                   dec_experiment_started},
    [MB_JEV_EXPERIMENT_FINISHED] = {"experiment_finished", enc_experiment_finished,
                                    dec_experiment_finished},
    [MB_JEV_INTERRUPTED] = {"interrupted", enc_interrupted, dec_interrupted},
    [MB_JEV_CELL_STARTED] = {"cell_started", enc_cell_started, dec_cell_started},
    [MB_JEV_CELL_FINISHED] = {"cell_finished", enc_cell_end, dec_cell_end},
    [MB_JEV_CELL_FAILED] = {"cell_failed", enc_cell_end, dec_cell_end},
    [MB_JEV_MIG_CREATED] = {"mig_created", enc_mig, dec_mig},
    [MB_JEV_MIG_DESTROYED] = {"mig_destroyed", enc_mig, dec_mig},
    [MB_JEV_MPS_STARTED] = {"mps_started", enc_mps_started, dec_mps},
    [MB_JEV_MPS_STOPPED] = {"mps_stopped", enc_mps_stopped, dec_mps},
    [MB_JEV_MIG_MODE_ORIGINAL] = {"mig_mode_original", enc_mig_mode, dec_mig_mode},
    [MB_JEV_MIG_MODE_SWITCHED] = {"mig_mode_switched", enc_mig_mode, dec_mig_mode},
    [MB_JEV_MIG_MODE_RESTORED] = {"mig_mode_restored", enc_mig_mode, dec_mig_mode},
    [MB_JEV_CLEANUP] = {"cleanup", enc_cleanup, dec_cleanup},
    [MB_JEV_JOB_STARTED] = {"job_started", enc_job_started, dec_job_started},
    [MB_JEV_COOLDOWN] = {"cooldown", enc_cooldown, dec_cooldown},
    [MB_JEV_POWER_LIMIT_SET] = {"power_limit_set", enc_power_limit_set, dec_power_limit},
    [MB_JEV_POWER_LIMIT_RESTORED] = {"power_limit_restored", enc_power_limit_restored,
                                     dec_power_limit},
};

enum mb_jev_kind mb_jev_kind_of(const char *name)
{
    for (int k = 1; name && k < MB_JEV_KINDS; k++)
        if (strcmp(kinds[k].name, name) == 0)
            return (enum mb_jev_kind)k;
    return MB_JEV_OTHER;
}

const char *mb_jev_name(enum mb_jev_kind k)
{
    return (unsigned)k < MB_JEV_KINDS ? kinds[k].name : "";
}

bool mb_jev_decode(const cJSON *obj, struct mb_jev *out)
{
    const char *name = str_of(obj, "event");
    if (!cJSON_IsObject(obj) || !name)
        return false;
    *out = mb_jev_init(mb_jev_kind_of(name));
    out->event = name;
    out->run = str_of(obj, "run");
    const cJSON *rep = cJSON_GetObjectItemCaseSensitive(obj, "rep");
    if (cJSON_IsNumber(rep) && rep->valuedouble >= 0 && rep->valuedouble <= INT_MAX)
        out->rep = (int)rep->valuedouble;
    const cJSON *slurm = cJSON_GetObjectItemCaseSensitive(obj, "slurm");
    out->slurm_job = str_of(slurm, "job");
    if (out->slurm_job && !out->slurm_job[0])
        out->slurm_job = NULL;
    if (kinds[out->kind].dec)
        kinds[out->kind].dec(obj, out);
    return true;
}

cJSON *mb_jev_encode(const struct mb_jev *ev)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cJSON_AddStringToObject(o, "event", ev->event ? ev->event : mb_jev_name(ev->kind));
    if (ev->run) {
        cJSON_AddStringToObject(o, "run", ev->run);
        cJSON_AddNumberToObject(o, "rep", ev->rep);
    }
    if (ev->with_slurm)
        mb_jev_add_slurm(o);
    if ((unsigned)ev->kind < MB_JEV_KINDS && kinds[ev->kind].enc)
        kinds[ev->kind].enc(o, ev);
    return o;
}
