/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `migbench plan --verify`: a plan's predictions against measured results. The results are read
 * through analysis.h (the one reader of cell.json); nothing here attributes energy a second way
 * beyond splitting each cell's power above idle by compute slices, which the plan's own model
 * assumes.
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/json_io.h"
#include "migbench/plan_io.h"
#include "base/text_internal.h"

/* Sums over the successful cells for one plan job. */
struct measured {
    double thr_sum, dyn_w_sum, idle_sum;
    size_t n, n_idle, n_power;
};

static const struct mb_an_job *run_job(const struct mb_an_run *r, const char *name)
{
    for (size_t i = 0; i < r->njobs; i++)
        if (strcmp(r->jobs[i].name, name) == 0)
            return &r->jobs[i];
    return NULL;
}

static double job_slices(const struct mb_gpu_model *model, const struct mb_an_job *rj)
{
    const struct mb_gi_profile *gp =
        rj && rj->instance[0] ? mb_model_profile(model, rj->instance) : NULL;
    return gp ? gp->compute_slices : 1;
}

/* The plan job a measured job stands for: one whose name is the job's workload or name. */
static long plan_job(const struct mb_plan_record *plan, const char *name, const char *workload)
{
    long hit = -1;
    for (size_t k = 0; k < plan->njobs; k++) {
        const char *pn = plan->jobs[k].name;
        if (pn[0] && ((workload && strcmp(pn, workload) == 0) || strcmp(pn, name) == 0))
            hit = (long)k;
    }
    return hit;
}

/* One successful cell: per plan job, its throughput and its share of the power above idle. */
static void add_cell(const struct mb_plan_record *plan, const struct mb_gpu_model *model,
                     const struct mb_an_run *r, const struct mb_an_cell *c, struct measured *m)
{
    double idle = c->idle_power_w.valid ? c->idle_power_w.v : plan->idle_power_w;
    double total_slices = 0;
    for (size_t i = 0; i < c->njobs; i++)
        total_slices += job_slices(model, run_job(r, c->jobs[i].name));
    for (size_t i = 0; i < c->njobs; i++) {
        const struct mb_an_cell_job *cj = &c->jobs[i];
        const struct mb_an_job *rj = run_job(r, cj->name);
        long hit = plan_job(plan, cj->name, rj ? rj->workload : NULL);
        if (hit < 0 || !cj->throughput.valid || !isfinite(cj->throughput.v))
            continue;
        double share = job_slices(model, rj) / total_slices;
        if (strcmp(r->mode, "exclusive") == 0)
            share = 1; /* one job at a time: the cell power is that job's */
        struct measured *x = &m[hit];
        x->thr_sum += cj->throughput.v;
        x->n++;
        if (c->mean_power_w.valid && isfinite(c->mean_power_w.v)) {
            x->dyn_w_sum += (c->mean_power_w.v - idle) * share;
            x->n_power++;
        }
        if (c->idle_power_w.valid && isfinite(c->idle_power_w.v)) {
            x->idle_sum += c->idle_power_w.v;
            x->n_idle++;
        }
    }
}

static size_t read_measurements(const struct mb_plan_record *plan, const struct mb_gpu_model *model,
                                const struct mb_analysis *a, struct measured *m)
{
    size_t cells = 0;
    for (size_t e = 0; e < a->nexp; e++)
        for (size_t i = 0; i < a->exps[e].nruns; i++) {
            const struct mb_an_run *r = &a->exps[e].runs[i];
            for (size_t k = 0; k < r->ncells; k++) {
                if (!r->cells[k].ok)
                    continue;
                cells++;
                add_cell(plan, model, r, &r->cells[k], m);
            }
        }
    return cells;
}

/* Replays each instance queue with the measured times: the makespan. */
static double replay(const struct mb_plan_record *plan, const struct mb_plan_check *out)
{
    double mk = 0;
    for (size_t k = 0; k < plan->njobs; k++) {
        const struct mb_plan_record_job *pj = &plan->jobs[k];
        /* The end of job k is the sum of measured times of its queue up to and including it. */
        double t = 0;
        for (size_t q = 0; q < plan->njobs; q++) {
            const struct mb_plan_record_job *o = &plan->jobs[q];
            if (o->gpu == pj->gpu && o->instance == pj->instance && o->order <= pj->order)
                t += out->jobs[q].measured_time_s;
        }
        mk = fmax(mk, t);
    }
    return mk;
}

static void fill(const struct mb_plan_record *plan, const struct measured *m,
                 struct mb_plan_check *out)
{
    double isum = 0;
    size_t in = 0;
    for (size_t j = 0; j < plan->njobs; j++) {
        isum += m[j].idle_sum;
        in += m[j].n_idle;
    }
    /* Measured idle power: the cells' baselines where they have one, else the plan's. */
    out->idle_measured = in > 0;
    out->idle_power_w = in ? isum / (double)in : plan->idle_power_w;
    out->complete = true;
    double dsum = 0;
    for (size_t k = 0; k < plan->njobs; k++) {
        const struct mb_plan_record_job *pj = &plan->jobs[k];
        struct mb_plan_check_job *j = &out->jobs[k];
        mb__copy_str(j->name, sizeof(j->name), pj->name);
        double thr = m[k].n ? m[k].thr_sum / (double)m[k].n : NAN;
        double dyn_w = m[k].n_power ? m[k].dyn_w_sum / (double)m[k].n_power : NAN;
        j->cells = m[k].n;
        j->predicted_throughput = pj->throughput;
        j->measured_throughput = thr;
        j->predicted_time_s = pj->time_s;
        j->measured_time_s = pj->work / thr;
        j->predicted_dynamic_j = pj->dynamic_j;
        j->measured_dynamic_j = dyn_w * j->measured_time_s;
        if (!isfinite(j->measured_time_s) || !isfinite(j->measured_dynamic_j))
            out->complete = false;
        dsum += j->measured_dynamic_j;
    }
    double mk = replay(plan, out);
    double em = plan->count * out->idle_power_w * mk + dsum;
    out->predicted_makespan_s = plan->makespan_s;
    out->predicted_energy_j = plan->energy_j;
    out->measured_makespan_s = out->complete ? mk : NAN;
    out->measured_energy_j = out->complete ? em : NAN;
}

int mb_plan_check(const struct mb_plan_record *plan, const struct mb_gpu_model *model,
                  const struct mb_analysis *a, struct mb_plan_check *out, struct mb_error *err)
{
    memset(out, 0, sizeof(*out));
    if (!isfinite(plan->makespan_s))
        return mb_error_set(err, MB_EINVAL, "--verify checks finite job sets only");
    size_t nj = plan->njobs;
    struct measured *m = calloc(nj ? nj : 1, sizeof(*m));
    out->jobs = calloc(nj ? nj : 1, sizeof(*out->jobs));
    if (!m || !out->jobs) {
        free(m);
        mb_plan_check_free(out);
        return mb_error_set(err, MB_ENOMEM, "out of memory");
    }
    out->njobs = nj;
    out->cells = read_measurements(plan, model, a, m);
    if (out->cells == 0) {
        free(m);
        mb_plan_check_free(out);
        return mb_error_set(err, MB_ENOTFOUND, "no successful cell.json found");
    }
    fill(plan, m, out);
    free(m);
    return MB_OK;
}

void mb_plan_check_free(struct mb_plan_check *c)
{
    if (!c)
        return;
    free(c->jobs);
    memset(c, 0, sizeof(*c));
}

static cJSON *num_or_null(double v)
{
    return isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull();
}

static cJSON *job_json(const struct mb_plan_check_job *j)
{
    cJSON *jo = cJSON_CreateObject();
    double tp = j->predicted_throughput, thr = j->measured_throughput;
    cJSON_AddStringToObject(jo, "name", j->name);
    cJSON_AddNumberToObject(jo, "predicted_throughput", tp);
    cJSON_AddItemToObject(jo, "measured_throughput", num_or_null(thr));
    cJSON_AddItemToObject(jo, "throughput_error_pct", num_or_null((tp - thr) / thr * 100));
    cJSON_AddItemToObject(jo, "predicted_time_s", num_or_null(j->predicted_time_s));
    cJSON_AddItemToObject(jo, "measured_time_s", num_or_null(j->measured_time_s));
    cJSON_AddItemToObject(jo, "predicted_dynamic_j", num_or_null(j->predicted_dynamic_j));
    cJSON_AddItemToObject(jo, "measured_dynamic_j", num_or_null(j->measured_dynamic_j));
    cJSON_AddNumberToObject(jo, "cells", (double)j->cells);
    return jo;
}

int mb_plan_check_json_write(FILE *out, const struct mb_plan_check *c, const char *plan_path,
                             const char *results_path)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return MB_ENOMEM;
    cJSON_AddStringToObject(o, "plan", plan_path);
    cJSON_AddStringToObject(o, "results", results_path);
    cJSON_AddNumberToObject(o, "cells", (double)c->cells);
    cJSON_AddItemToObject(o, "idle_power_w", num_or_null(c->idle_power_w));
    cJSON *ja = cJSON_AddArrayToObject(o, "jobs");
    for (size_t k = 0; k < c->njobs; k++)
        cJSON_AddItemToArray(ja, job_json(&c->jobs[k]));
    cJSON *tot = cJSON_AddObjectToObject(o, "total");
    double pmk = c->predicted_makespan_s, pe = c->predicted_energy_j;
    double mk = c->measured_makespan_s, em = c->measured_energy_j;
    cJSON_AddNumberToObject(tot, "predicted_makespan_s", pmk);
    cJSON_AddItemToObject(tot, "measured_makespan_s", num_or_null(mk));
    cJSON_AddItemToObject(tot, "makespan_error_pct", num_or_null((pmk - mk) / mk * 100));
    cJSON_AddNumberToObject(tot, "predicted_energy_j", pe);
    cJSON_AddItemToObject(tot, "measured_energy_j", num_or_null(em));
    cJSON_AddItemToObject(tot, "energy_error_pct", num_or_null((pe - em) / em * 100));
    char *s = cJSON_Print(o);
    cJSON_Delete(o);
    if (!s)
        return MB_ENOMEM;
    fputs(s, out);
    fputc('\n', out);
    free(s);
    return ferror(out) ? MB_EIO : MB_OK;
}
