/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The plan JSON: a plan's derived figures, the writer behind `migbench plan --json` and the
 * reader behind `--verify --plan`.
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/json_io.h"
#include "migbench/fileio.h"
#include "migbench/plan_io.h"
#include "base/text_internal.h"

/* A plan file larger than this is not one migbench wrote. */
#define PLAN_JSON_MAX_BYTES (256u << 20)

const struct mb_plan_profile *mb_plan_slot_row(const struct mb_plan_context *c,
                                               const struct mb_plan_slot *s)
{
    return mb_plan_profiles_get(c->profiles, s->profile);
}

unsigned mb_plan_slot_slices(const struct mb_plan_context *c, const struct mb_plan *p,
                             const struct mb_plan_slot *s)
{
    const struct mb_plan_gpu *g = &p->gpus[s->gpu];
    if (!g->mig)
        return c->model->compute_slices;
    return c->model->profiles[g->layout.items[s->instance].profile].compute_slices;
}

double mb_plan_slot_energy(const struct mb_plan_context *c, const struct mb_plan *p,
                           const struct mb_plan_slot *s)
{
    return s->dynamic_j +
           p->idle_power_w * s->time_s * mb_plan_slot_slices(c, p, s) / c->model->compute_slices;
}

const char *mb_plan_common_unit(const struct mb_plan_context *c, const struct mb_plan *p)
{
    const char *u = NULL;
    for (size_t j = 0; j < p->n_slots; j++) {
        const char *x = mb_plan_slot_row(c, &p->slots[j])->unit;
        if (u && strcmp(u, x) != 0)
            return NULL;
        u = x;
    }
    return u;
}

double mb_plan_total_work(const struct mb_plan_jobset *js)
{
    double w = 0;
    for (size_t j = 0; j < js->n_jobs; j++)
        w += js->jobs[j].work;
    return w;
}

double mb_plan_pct_less(double base, double x)
{
    if (!isfinite(base) || !isfinite(x) || base == 0)
        return NAN;
    return (base - x) / base * 100;
}

static cJSON *num_or_null(double v)
{
    return isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull();
}

/* ---------------------------------------------------------------------------------------------
 * Writer
 */

/* Slots by GPU, instance and queue position: idx[] sorted, the queues read off in order. */
static int slot_cmp(const size_t *a, const size_t *b, const struct mb_plan_slot *s)
{
    const struct mb_plan_slot *x = &s[*a], *y = &s[*b];
    if (x->gpu != y->gpu)
        return x->gpu < y->gpu ? -1 : 1;
    if (x->instance != y->instance)
        return x->instance < y->instance ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

static size_t *slots_sorted(const struct mb_plan *p)
{
    size_t *idx = malloc((p->n_slots ? p->n_slots : 1) * sizeof(size_t));
    if (!idx)
        return NULL;
    for (size_t j = 0; j < p->n_slots; j++)
        idx[j] = j;
    /* Shell sort: the slot array is the key, and insertion would be quadratic for 10^5 jobs. */
    for (size_t gap = p->n_slots / 2; gap > 0; gap /= 2)
        for (size_t x = gap; x < p->n_slots; x++) {
            size_t v = idx[x], y = x;
            while (y >= gap && slot_cmp(&idx[y - gap], &v, p->slots) > 0) {
                idx[y] = idx[y - gap];
                y -= gap;
            }
            idx[y] = v;
        }
    return idx;
}

/* GPU g: its instances with their queues; *k walks idx[] (sorted slots) past GPU g's. */
static cJSON *gpu_json(const struct mb_plan_context *c, const struct mb_plan *p, unsigned g,
                       const size_t *idx, size_t *k)
{
    const struct mb_plan_gpu *pg = &p->gpus[g];
    cJSON *go = cJSON_CreateObject();
    cJSON_AddNumberToObject(go, "gpu", g);
    cJSON_AddBoolToObject(go, "mig", pg->mig);
    cJSON *insts = cJSON_AddArrayToObject(go, "instances");
    size_t ninst = pg->mig ? pg->layout.n : 1;
    for (size_t i = 0; i < ninst; i++) {
        cJSON *io = cJSON_CreateObject();
        cJSON_AddNumberToObject(io, "instance", (double)i);
        if (pg->mig) {
            const struct mb_layout_item *it = &pg->layout.items[i];
            cJSON_AddStringToObject(io, "profile", c->model->profiles[it->profile].name);
            cJSON *pl = cJSON_AddObjectToObject(io, "placement");
            cJSON_AddNumberToObject(pl, "start", it->placement.start);
            cJSON_AddNumberToObject(pl, "size", it->placement.size);
        } else {
            cJSON_AddStringToObject(io, "profile", MB_PLAN_FULL);
            cJSON_AddNullToObject(io, "placement");
        }
        cJSON *q = cJSON_AddArrayToObject(io, "queue");
        for (; *k < p->n_slots && p->slots[idx[*k]].gpu == g && p->slots[idx[*k]].instance == i;
             (*k)++)
            cJSON_AddItemToArray(q, cJSON_CreateString(c->js->jobs[idx[*k]].name));
        if (cJSON_GetArraySize(q) == 0 && !pg->mig) {
            cJSON_Delete(io);
            continue;
        }
        cJSON_AddItemToArray(insts, io);
    }
    cJSON_AddItemToObject(go, "power_limit_w", num_or_null(pg->power_limit_w));
    cJSON_AddItemToObject(go, "peak_power_w", num_or_null(pg->peak_power_w));
    cJSON_AddBoolToObject(go, "over_limit", pg->over_limit);
    return go;
}

static cJSON *job_json(const struct mb_plan_context *c, const struct mb_plan *p,
                       const struct mb_plan_slot *s)
{
    bool cont = p->objective == MB_PLAN_THROUGHPUT;
    const struct mb_plan_profile *r = mb_plan_slot_row(c, s);
    const struct mb_plan_job *job = &c->js->jobs[s->job];
    cJSON *jo = cJSON_CreateObject();
    cJSON_AddStringToObject(jo, "name", job->name);
    cJSON_AddStringToObject(jo, "workload", job->workload);
    if (cont)
        cJSON_AddStringToObject(jo, "work", "continuous");
    else
        cJSON_AddNumberToObject(jo, "work", job->work);
    cJSON_AddStringToObject(jo, "unit", r->unit);
    cJSON_AddNumberToObject(jo, "gpu", s->gpu);
    cJSON_AddNumberToObject(jo, "instance", s->instance);
    cJSON_AddStringToObject(jo, "partition", r->partition);
    cJSON_AddNumberToObject(jo, "compute_slices", mb_plan_slot_slices(c, p, s));
    cJSON_AddNumberToObject(jo, "order", s->order);
    cJSON_AddItemToObject(jo, "start_s", num_or_null(s->start_s));
    cJSON_AddItemToObject(jo, "time_s", num_or_null(s->time_s));
    cJSON_AddItemToObject(jo, "end_s", num_or_null(s->start_s + s->time_s));
    cJSON_AddNumberToObject(jo, "throughput", s->throughput);
    cJSON_AddItemToObject(jo, "normalised", num_or_null(s->normalised));
    cJSON_AddNumberToObject(jo, "power_w", r->power_w);
    cJSON_AddItemToObject(jo, "dynamic_j", num_or_null(s->dynamic_j));
    double e = cont ? NAN : mb_plan_slot_energy(c, p, s);
    cJSON_AddItemToObject(jo, "energy_j", num_or_null(e));
    cJSON_AddItemToObject(jo, "energy_per_unit_j", num_or_null(cont ? NAN : e / job->work));
    cJSON_AddItemToObject(jo, "peak_mem_mib", num_or_null(r->peak_mem_mib));
    cJSON_AddStringToObject(jo, "source", r->source);
    cJSON_AddBoolToObject(jo, "proxy", r->proxy);
    cJSON_AddBoolToObject(jo, "emulated", r->emulated);
    return jo;
}

/* predicted, baseline, gain and bound. */
static void totals_json(cJSON *o, const struct mb_plan_context *c, const struct mb_plan *p)
{
    cJSON *pr = cJSON_AddObjectToObject(o, "predicted");
    cJSON *ba = cJSON_AddObjectToObject(o, "baseline");
    if (p->objective == MB_PLAN_THROUGHPUT) {
        cJSON_AddNumberToObject(pr, "system_throughput", p->system_throughput);
        cJSON_AddNumberToObject(pr, "power_w", p->power_w);
        cJSON_AddNumberToObject(ba, "system_throughput",
                                p->count < p->n_slots ? p->count : (double)p->n_slots);
    } else {
        cJSON_AddNumberToObject(pr, "makespan_s", p->makespan_s);
        cJSON_AddNumberToObject(pr, "energy_j", p->energy_j);
        cJSON_AddNumberToObject(pr, "idle_energy_j", p->idle_energy_j);
        cJSON_AddNumberToObject(pr, "dynamic_energy_j", p->dynamic_energy_j);
        const char *u = mb_plan_common_unit(c, p);
        cJSON_AddItemToObject(pr, "energy_per_unit_j",
                              num_or_null(u ? p->energy_j / mb_plan_total_work(c->js) : NAN));
        if (u)
            cJSON_AddStringToObject(pr, "unit", u);
        else
            cJSON_AddNullToObject(pr, "unit");
        cJSON_AddItemToObject(ba, "makespan_s", num_or_null(p->base_makespan_s));
        cJSON_AddItemToObject(ba, "energy_j", num_or_null(p->base_energy_j));
        cJSON *gain = cJSON_AddObjectToObject(o, "gain");
        cJSON_AddItemToObject(gain, "energy_saving_pct",
                              num_or_null(mb_plan_pct_less(p->base_energy_j, p->energy_j)));
        cJSON_AddItemToObject(gain, "makespan_reduction_pct",
                              num_or_null(mb_plan_pct_less(p->base_makespan_s, p->makespan_s)));
    }
    cJSON *bo = cJSON_AddObjectToObject(o, "bound");
    cJSON_AddItemToObject(bo, "makespan_s", num_or_null(p->exact ? NAN : p->bound_makespan_s));
    cJSON_AddItemToObject(bo, "energy_j", num_or_null(p->exact ? NAN : p->bound_energy_j));
    cJSON_AddItemToObject(bo, "system_throughput",
                          num_or_null(p->exact ? NAN : p->bound_throughput));
    cJSON_AddNumberToObject(bo, "gap_pct", p->exact ? 0 : p->gap_pct);
}

static cJSON *plan_json(const struct mb_plan_context *c, const struct mb_plan *p)
{
    size_t *idx = slots_sorted(p);
    if (!idx)
        return NULL;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "schema", 1);
    cJSON_AddStringToObject(o, "gpu_model", c->model->name);
    cJSON_AddNumberToObject(o, "count", p->count);
    cJSON_AddStringToObject(o, "objective", mb_plan_objective_str(p->objective));
    cJSON_AddStringToObject(o, "method", p->exact ? "exact" : "heuristic");
    cJSON_AddNumberToObject(o, "search_nodes", (double)p->nodes);
    if (!p->exact) {
        cJSON *so = cJSON_AddObjectToObject(o, "search");
        cJSON_AddNumberToObject(so, "seconds", p->search_s);
        cJSON_AddNumberToObject(so, "threads", p->threads);
        cJSON_AddStringToObject(so, "stopped", p->time_limited ? "time limit" : "converged");
    }
    cJSON_AddStringToObject(o, "profiles", c->sources);
    cJSON_AddItemToObject(o, "idle_power_w", num_or_null(p->idle_power_w));
    cJSON_AddNumberToObject(o, "idle_power_rows", (double)p->idle_rows);
    cJSON *gpus = cJSON_AddArrayToObject(o, "gpus");
    size_t k = 0;
    for (unsigned g = 0; g < p->count; g++)
        cJSON_AddItemToArray(gpus, gpu_json(c, p, g, idx, &k));
    cJSON_AddNumberToObject(o, "over_limit_gpus", (double)p->over_limit);
    cJSON *jobs = cJSON_AddArrayToObject(o, "jobs");
    for (size_t j = 0; j < p->n_slots; j++)
        cJSON_AddItemToArray(jobs, job_json(c, p, &p->slots[j]));
    totals_json(o, c, p);
    cJSON_AddStringToObject(o, "timeslice_mps", "not profiled");
    free(idx);
    return o;
}

/* Prints o with a trailing newline to out and frees it. */
static int print_json(FILE *out, cJSON *o)
{
    if (!o)
        return MB_ENOMEM;
    char *s = cJSON_Print(o);
    cJSON_Delete(o);
    if (!s)
        return MB_ENOMEM;
    fputs(s, out);
    fputc('\n', out);
    free(s);
    return ferror(out) ? MB_EIO : MB_OK;
}

int mb_plan_json_write_caps(FILE *out, const struct mb_plan_context *c, const struct mb_plan *p,
                            const struct mb_plan_cap_result *res, size_t n)
{
    cJSON *o = plan_json(c, p);
    if (!o)
        return MB_ENOMEM;
    cJSON_AddItemToObject(o, "power_limit_w", num_or_null(p->power_limit_w));
    cJSON *arr = cJSON_AddArrayToObject(o, "power_limits");
    for (size_t i = 0; arr && i < n; i++) {
        cJSON *x = cJSON_CreateObject();
        if (!x)
            break;
        cJSON_AddItemToArray(arr, x);
        cJSON_AddItemToObject(x, "power_limit_w", num_or_null(res[i].power_limit_w));
        cJSON_AddStringToObject(x, "status", res[i].status == MB_OK ? "ok" : "no plan");
        cJSON_AddItemToObject(x, "energy_j", num_or_null(res[i].energy_j));
        cJSON_AddItemToObject(x, "makespan_s", num_or_null(res[i].makespan_s));
        cJSON_AddItemToObject(x, "system_throughput", num_or_null(res[i].system_throughput));
    }
    return print_json(out, o);
}

int mb_plan_json_write(FILE *out, const struct mb_plan_context *c, const struct mb_plan *p)
{
    return print_json(out, plan_json(c, p));
}

int mb_plan_json_write_pareto(FILE *out, const struct mb_plan_context *c,
                              struct mb_plan *const *plans, size_t n)
{
    cJSON *arr = cJSON_CreateArray();
    cJSON *root = cJSON_CreateObject();
    if (!arr || !root) {
        cJSON_Delete(arr);
        cJSON_Delete(root);
        return MB_ENOMEM;
    }
    for (size_t i = 0; i < n; i++)
        cJSON_AddItemToArray(arr, plan_json(c, plans[i]));
    cJSON_AddItemToObject(root, "pareto", arr);
    return print_json(out, root);
}

/* ---------------------------------------------------------------------------------------------
 * Reader
 */

static double jnum(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

static const char *jstr(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static void read_job(struct mb_plan_record_job *j, const cJSON *pj)
{
    mb__copy_str(j->name, sizeof(j->name), jstr(pj, "name"));
    mb__copy_str(j->workload, sizeof(j->workload), jstr(pj, "workload"));
    j->work = jnum(pj, "work");
    j->gpu = jnum(pj, "gpu");
    j->instance = jnum(pj, "instance");
    j->order = jnum(pj, "order");
    j->throughput = jnum(pj, "throughput");
    j->time_s = jnum(pj, "time_s");
    j->dynamic_j = jnum(pj, "dynamic_j");
}

int mb_plan_record_parse(const char *text, size_t len, const char *source,
                         struct mb_plan_record *out, struct mb_error *err)
{
    memset(out, 0, sizeof(*out));
    cJSON *plan = NULL;
    int st = mb_json_parse(text, len, source, &plan, err);
    if (st != MB_OK)
        return st;
    const cJSON *pjobs = cJSON_GetObjectItemCaseSensitive(plan, "jobs");
    const char *model = jstr(plan, "gpu_model");
    const cJSON *pred = cJSON_GetObjectItemCaseSensitive(plan, "predicted");
    if (!cJSON_IsArray(pjobs) || !model || !cJSON_IsObject(pred)) {
        cJSON_Delete(plan);
        return mb_error_set(err, MB_EPARSE, "%s: not a plan written by 'migbench plan --json'",
                            source);
    }
    size_t n = (size_t)cJSON_GetArraySize(pjobs);
    out->jobs = calloc(n ? n : 1, sizeof(*out->jobs));
    if (!out->jobs) {
        cJSON_Delete(plan);
        return mb_error_set(err, MB_ENOMEM, "%s: out of memory", source);
    }
    out->njobs = n;
    mb__copy_str(out->gpu_model, sizeof(out->gpu_model), model);
    out->count = jnum(plan, "count");
    out->idle_power_w = jnum(plan, "idle_power_w");
    out->makespan_s = jnum(pred, "makespan_s");
    out->energy_j = jnum(pred, "energy_j");
    size_t k = 0;
    const cJSON *pj;
    cJSON_ArrayForEach(pj, pjobs) read_job(&out->jobs[k++], pj);
    cJSON_Delete(plan);
    return MB_OK;
}

int mb_plan_record_read(const char *path, struct mb_plan_record *out, struct mb_error *err)
{
    memset(out, 0, sizeof(*out));
    char *text = NULL;
    int st = mb_file_read(path, PLAN_JSON_MAX_BYTES, &text, NULL, err);
    if (st != MB_OK)
        return st;
    st = mb_plan_record_parse(text, strlen(text), path, out, err);
    free(text);
    return st;
}

void mb_plan_record_free(struct mb_plan_record *r)
{
    if (!r)
        return;
    free(r->jobs);
    memset(r, 0, sizeof(*r));
}
