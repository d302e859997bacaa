/* SPDX-License-Identifier: Apache-2.0 */
/* migbench report --format json: the whole analysis, unmeasured values as null. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/json_io.h"
#include "power/poweraxis.h"
#include "migbench/status.h"
#include "report_internal.h"

/* Rounded so that output does not depend on the last bits of floating-point sums. */
static cJSON *num(int valid, double v, int decimals)
{
    if (!valid || !isfinite(v))
        return cJSON_CreateNull();
    double s = pow(10, decimals);
    double r = round(v * s) / s;
    return cJSON_CreateNumber(r == 0 ? 0 : r);
}

static cJSON *est(const struct mb_estimate *e, int decimals)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "mean", num(e->valid, e->mean, decimals));
    cJSON_AddItemToObject(o, "ci95", num(e->ci_valid, e->ci95, decimals));
    cJSON_AddNumberToObject(o, "n", (double)e->n);
    return o;
}

static cJSON *opt(struct mb_opt o, int decimals)
{
    return num(o.valid, o.v, decimals);
}

static cJSON *str_or_null(const char *s)
{
    return s && *s ? cJSON_CreateString(s) : cJSON_CreateNull();
}

static cJSON *mj_to_j(int64_t mj)
{
    return cJSON_CreateNumber((double)mj / 1000.0);
}

static cJSON *attribution(const struct mb_attribution *a, size_t njobs,
                          const struct mb_an_job *jobs)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddBoolToObject(o, "available", a->available);
    cJSON_AddItemToObject(o, "note", str_or_null(a->note));
    cJSON_AddItemToObject(o, "total_j", a->available ? mj_to_j(a->total_mj) : cJSON_CreateNull());
    cJSON *parts = cJSON_AddObjectToObject(o, "jobs_j");
    for (size_t i = 0; i < njobs; i++)
        cJSON_AddItemToObject(parts, jobs[i].name,
                              a->available ? mj_to_j(a->job_mj[i]) : cJSON_CreateNull());
    return o;
}

static cJSON *cell_json(const struct mb_an_run *r, const struct mb_an_cell *c)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "rep", c->rep);
    cJSON_AddStringToObject(o, "status", c->ok ? "ok" : "failed");
    cJSON_AddItemToObject(o, "failure", str_or_null(c->failure));
    cJSON_AddItemToObject(o, "window_s", opt(c->window_s, 3));
    cJSON_AddItemToObject(o, "energy_j", num(c->has_energy, (double)c->energy_mj / 1000.0, 3));
    cJSON_AddItemToObject(o, "energy_source", str_or_null(c->energy_source));
    cJSON_AddItemToObject(o, "counter_j", opt(c->counter_j, 3));
    cJSON_AddItemToObject(o, "integrated_j", opt(c->integrated_j, 3));
    cJSON_AddItemToObject(o, "gap_pct", opt(c->gap_pct, 2));
    cJSON_AddItemToObject(o, "flag", str_or_null(c->energy_flag));
    cJSON_AddItemToObject(o, "refused_reason", str_or_null(c->refused_reason));
    cJSON_AddItemToObject(o, "idle_power_w", opt(c->idle_power_w, 2));
    cJSON_AddItemToObject(o, "mean_power_w", opt(c->mean_power_w, 2));
    cJSON_AddItemToObject(o, "peak_power_w", opt(c->peak_power_w, 2));
    cJSON_AddItemToObject(o, "samples", opt(c->samples, 0));
    cJSON_AddItemToObject(o, "missed_updates", opt(c->missed_updates, 0));
    cJSON_AddItemToObject(o, "reconfigure_s", opt(c->reconfigure_s, 3));
    cJSON_AddItemToObject(o, "timeline_note", str_or_null(c->timeline_note));
    cJSON *attr = cJSON_AddObjectToObject(o, "attribution");
    for (int m = 0; m < MB_ATTR_COUNT; m++)
        cJSON_AddItemToObject(attr, mb_analysis_method_name(m),
                              attribution(&c->attr[m], r->njobs, r->jobs));
    return o;
}

static cJSON *run_json(const struct mb_an_run *r)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", r->name);
    cJSON_AddStringToObject(o, "mode", r->mode);
    cJSON_AddItemToObject(o, "layout", str_or_null(r->layout));
    cJSON_AddNumberToObject(o, "cells_ok", (double)r->nok);
    cJSON_AddNumberToObject(o, "cells_failed", (double)r->nfailed);
    cJSON_AddNumberToObject(o, "cells_with_energy", (double)r->nenergy);
    cJSON_AddBoolToObject(o, "has_baseline", r->has_baseline);
    cJSON_AddStringToObject(o, "default_attribution", mb_analysis_method_name(r->default_method));
    cJSON_AddItemToObject(o, "window_s", est(&r->window_s, 3));
    cJSON_AddItemToObject(o, "energy_j", est(&r->energy_j, 3));
    cJSON_AddItemToObject(o, "power_w", est(&r->power_w, 2));
    cJSON_AddItemToObject(o, "stp", est(&r->stp, 4));
    cJSON_AddItemToObject(o, "antt", est(&r->antt, 4));
    cJSON_AddItemToObject(o, "energy_ratio", est(&r->energy_ratio, 4));
    cJSON_AddItemToObject(o, "energy_saving", est(&r->energy_saving, 4));
    cJSON_AddItemToObject(o, "throughput_gain", est(&r->throughput_gain, 4));
    char h[512];
    mb__fmt_headline(h, sizeof(h), r);
    cJSON_AddItemToObject(o, "headline", str_or_null(h));
    int sd = r->static_mj >= 0;
    cJSON_AddItemToObject(o, "static_j", sd ? mj_to_j(r->static_mj) : cJSON_CreateNull());
    cJSON_AddItemToObject(o, "dynamic_j", sd ? mj_to_j(r->dynamic_mj) : cJSON_CreateNull());
    cJSON *jobs = cJSON_AddArrayToObject(o, "jobs");
    for (size_t i = 0; i < r->njobs; i++) {
        const struct mb_an_job *j = &r->jobs[i];
        cJSON *jo = cJSON_CreateObject();
        cJSON_AddStringToObject(jo, "name", j->name);
        cJSON_AddStringToObject(jo, "workload", j->workload);
        cJSON_AddStringToObject(jo, "unit", j->unit);
        cJSON_AddItemToObject(jo, "instance", str_or_null(j->instance));
        cJSON_AddItemToObject(jo, "thread_percentage", opt(j->thread_percentage, 2));
        cJSON_AddItemToObject(jo, "compute_weight",
                              num(j->compute_weight > 0, j->compute_weight, 0));
        cJSON_AddItemToObject(jo, "throughput", est(&j->throughput, 3));
        cJSON_AddItemToObject(jo, "normalised", est(&j->normalised, 4));
        cJSON_AddItemToObject(jo, "s_per_step", est(&j->s_per_step, 6));
        cJSON_AddItemToObject(jo, "j_per_unit", est(&j->j_per_unit, 7));
        cJSON_AddItemToArray(jobs, jo);
    }
    cJSON *attr = cJSON_AddObjectToObject(o, "attribution");
    for (int m = 0; m < MB_ATTR_COUNT; m++)
        cJSON_AddItemToObject(attr, mb_analysis_method_name(m),
                              attribution(&r->attr[m], r->njobs, r->jobs));
    cJSON *cells = cJSON_AddArrayToObject(o, "cells");
    for (size_t k = 0; k < r->ncells; k++)
        cJSON_AddItemToArray(cells, cell_json(r, &r->cells[k]));
    return o;
}

/* Adds the power-limit axis of an experiment (docs/power.md) to eo; nothing without it, so that
 * reports of experiments without the axis keep their shape. */
/* The answers a report opens with (src/report/answers.c). */
static cJSON *answers_json(const struct mb_an_experiment *e)
{
    struct mb__answer a[MB__Q_COUNT];
    size_t n = mb__answers(e, a, MB__Q_COUNT);
    cJSON *arr = cJSON_CreateArray();
    for (size_t i = 0; arr && i < n; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "question", mb__answer_question(a[i].question));
        cJSON_AddItemToObject(o, "winner", str_or_null(a[i].answered ? a[i].winner : ""));
        int ranked = a[i].answered && a[i].question != MB__Q_POWER;
        cJSON_AddItemToObject(o, "value", ranked ? est(&a[i].value, 4) : cJSON_CreateNull());
        cJSON_AddItemToObject(o, "runner_up", str_or_null(a[i].runner_up));
        cJSON_AddItemToObject(o, "margin",
                              a[i].has_runner_up ? est(&a[i].margin, 4) : cJSON_CreateNull());
        if (!ranked || !a[i].has_runner_up)
            cJSON_AddNullToObject(o, "clear_of_noise");
        else if (a[i].clear < 0)
            cJSON_AddNullToObject(o, "clear_of_noise");
        else
            cJSON_AddBoolToObject(o, "clear_of_noise", a[i].clear > 0);
        cJSON_AddStringToObject(o, "sentence", a[i].sentence);
        cJSON_AddItemToArray(arr, o);
    }
    return arr;
}

static int add_power_json(cJSON *eo, const struct mb_an_experiment *e,
                          const struct mb_power_rule_opts *rule)
{
    struct mb_paxis ax;
    struct mb_error err;
    int st = mb_paxis_build(e, rule, &ax, &err);
    if (st == MB_OK && ax.n) {
        cJSON *o = mb_paxis_json(&ax);
        if (o)
            cJSON_AddItemToObject(eo, "power_limits", o);
        else
            st = MB_ENOMEM;
    }
    mb_paxis_free(&ax);
    return st;
}

int mb__report_json(FILE *out, const struct mb_analysis *a, const struct mb_power_rule_opts *rule)
{
    cJSON *root = cJSON_CreateObject();
    if (!root)
        return MB_ENOMEM;
    cJSON_AddNumberToObject(root, "schema", 1);
    cJSON *exps = cJSON_AddArrayToObject(root, "experiments");
    for (size_t i = 0; i < a->nexp; i++) {
        const struct mb_an_experiment *e = &a->exps[i];
        cJSON *eo = cJSON_CreateObject();
        cJSON_AddItemToObject(eo, "answers", answers_json(e));
        cJSON_AddStringToObject(eo, "results_dir", e->dir);
        cJSON_AddStringToObject(eo, "experiment", e->name);
        cJSON_AddItemToObject(eo, "experiment_sha", str_or_null(e->sha));
        cJSON_AddItemToObject(eo, "migbench_version", str_or_null(e->migbench_version));
        cJSON *d = cJSON_AddObjectToObject(eo, "device");
        cJSON_AddItemToObject(d, "backend", str_or_null(e->backend));
        cJSON_AddBoolToObject(d, "emulated", e->emulated);
        cJSON_AddItemToObject(d, "name", str_or_null(e->device_name));
        cJSON_AddItemToObject(d, "model", str_or_null(e->model));
        cJSON_AddItemToObject(d, "uuid", str_or_null(e->uuid));
        cJSON_AddItemToObject(d, "driver_version", str_or_null(e->driver_version));
        cJSON_AddItemToObject(d, "power_limit_w", opt(e->power_limit_w, 1));
        cJSON_AddItemToObject(d, "sensor", str_or_null(e->sensor));
        cJSON *q = cJSON_AddObjectToObject(eo, "quality");
        cJSON_AddNumberToObject(q, "cells", (double)e->cells_total);
        cJSON_AddNumberToObject(q, "cells_failed", (double)e->cells_failed);
        cJSON_AddNumberToObject(q, "cells_unfinished", (double)e->cells_unfinished);
        cJSON_AddNumberToObject(q, "cells_without_energy", (double)e->cells_no_energy);
        cJSON_AddNumberToObject(q, "cells_gap_flagged", (double)e->cells_gap_flagged);
        cJSON_AddNumberToObject(q, "cells_outside_load", (double)e->cells_outside_load);
        cJSON_AddNumberToObject(q, "missed_updates", e->missed_updates);
        cJSON *notes = cJSON_AddArrayToObject(q, "notes");
        for (size_t k = 0; k < e->nnotes; k++)
            cJSON_AddItemToArray(notes, cJSON_CreateString(e->notes[k]));
        cJSON *runs = cJSON_AddArrayToObject(eo, "runs");
        for (size_t k = 0; k < e->nruns; k++)
            cJSON_AddItemToArray(runs, run_json(&e->runs[k]));
        int pst = add_power_json(eo, e, rule);
        cJSON_AddItemToArray(exps, eo);
        if (pst != MB_OK) {
            cJSON_Delete(root);
            return pst;
        }
    }
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    if (!text)
        return MB_ENOMEM;
    fputs(text, out);
    fputc('\n', out);
    free(text);
    return MB_OK;
}
