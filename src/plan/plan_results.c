/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Planner profiles from `migbench run` results directories, read through the analysis module
 * (include/migbench/analysis.h): only cells whose measured power belongs to one job are used.
 */
#include "migbench/plan.h"
#include "migbench/analysis.h"
#include "plan/plan_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sample {
    char workload[MB_PLAN_NAME_MAX];
    char gpu[MB_MODEL_NAME_MAX];
    char partition[MB_PROFILE_NAME_MAX];
    char unit[MB_PLAN_UNIT_MAX];
    char run[MB_PLAN_NAME_MAX];
    bool proxy, emulated;
    double cap_w; /* the power limit measured under (W); 0: the default */
    double thr, power, idle;
    size_t n, n_idle;
};

struct acc {
    struct sample *v;
    size_t n, cap;
    size_t cells, used;
};

static void copy(char *dst, size_t cap, const char *src)
{
    size_t n = strnlen(src, cap - 1);
    memcpy(dst, src, n);
    dst[n] = '\0';
}

/* The MIG profile whose compute share matches an MPS thread percentage (within 3 points). */
static const struct mb_gi_profile *proxy_profile(const struct mb_gpu_model *m, double pct)
{
    const struct mb_gi_profile *best = NULL;
    double bd = 3.0;
    for (size_t i = 0; i < m->n_profiles; i++) {
        const struct mb_gi_profile *p = &m->profiles[i];
        if (p->media_extension)
            continue;
        double share = 100.0 * p->compute_slices / m->compute_slices;
        double d = fabs(share - pct);
        /* Among equal shares, the profile with the most memory (the MPS job had it all). */
        if (d < bd || (best && d == bd && p->memory_mib > best->memory_mib)) {
            bd = d;
            best = p;
        }
    }
    return best;
}

/* Adds one measurement of a workload on a partition (throughput, whole-GPU power, idle). */
static int add_sample(struct acc *a, const struct mb_gpu_model *m, const char *run,
                      const char *workload, const char *unit, const char *part, bool proxy,
                      bool emulated, double cap_w, double thr, double power, struct mb_opt idle)
{
    a->used++;
    struct sample *s = NULL;
    for (size_t i = 0; i < a->n && !s; i++) {
        struct sample *x = &a->v[i];
        if (strcmp(x->workload, workload) == 0 && strcmp(x->gpu, m->name) == 0 &&
            strcmp(x->partition, part) == 0 && x->proxy == proxy && x->cap_w == cap_w)
            s = x;
    }
    if (!s) {
        if (a->n == a->cap) {
            size_t nc = a->cap ? a->cap * 2 : 16;
            struct sample *v = realloc(a->v, nc * sizeof(*v));
            if (!v)
                return MB_ENOMEM;
            a->v = v;
            a->cap = nc;
        }
        s = &a->v[a->n++];
        memset(s, 0, sizeof(*s));
        copy(s->workload, sizeof(s->workload), workload);
        copy(s->gpu, sizeof(s->gpu), m->name);
        copy(s->partition, sizeof(s->partition), part);
        /* The analysis gives "images/s"; the planner counts units of work. */
        copy(s->unit, sizeof(s->unit), unit && unit[0] ? unit : "units");
        char *slash = strstr(s->unit, "/s");
        if (slash && slash[2] == '\0')
            *slash = '\0';
        copy(s->run, sizeof(s->run), run);
        s->proxy = proxy;
        s->cap_w = cap_w;
    }
    s->emulated |= emulated;
    s->thr += thr;
    s->power += power;
    s->n++;
    if (idle.valid) {
        s->idle += idle.v;
        s->n_idle++;
    }
    return MB_OK;
}

static const struct mb_an_job *run_job(const struct mb_an_run *r, const char *name)
{
    for (size_t k = 0; k < r->njobs; k++)
        if (strcmp(r->jobs[k].name, name) == 0)
            return &r->jobs[k];
    return NULL;
}

/*
 * One cell. A single job: its throughput with the cell's mean power (exclusive -> "full", mig ->
 * its instance's profile, mps -> the matching MIG size as a proxy). Exclusive cells with several
 * jobs: each job's throughput with the energy over its own interval (the analysis' interval
 * attribution, when it integrated measured power) over that interval.
 */
static int take_cell(struct acc *a, const struct mb_gpu_model *m, bool emulated,
                     const struct mb_an_run *r, const struct mb_an_cell *c)
{
    a->cells++;
    if (!c->ok || c->njobs == 0)
        return MB_OK;
    /* The power-limit axis: a limit other than the default keys its own rows, in watts. */
    double cap_w = 0;
    if (c->power_limit[0] && strcmp(c->power_limit, "default") != 0) {
        if (!c->enforced_w.valid)
            return MB_OK;
        cap_w = c->enforced_w.v;
    }
    bool excl = strcmp(r->mode, "exclusive") == 0;
    if (c->njobs == 1) {
        const struct mb_an_cell_job *cj = &c->jobs[0];
        const struct mb_an_job *rj = run_job(r, cj->name);
        if (!rj || !cj->throughput.valid || cj->throughput.v <= 0 || !c->mean_power_w.valid)
            return MB_OK;
        const char *part = NULL;
        bool proxy = false;
        if (excl) {
            part = MB_PLAN_FULL;
        } else if (strcmp(r->mode, "mig") == 0) {
            part = mb_model_profile(m, rj->instance) ? rj->instance : NULL;
        } else if (strcmp(r->mode, "mps") == 0 && rj->thread_percentage.valid) {
            const struct mb_gi_profile *p = proxy_profile(m, rj->thread_percentage.v);
            part = p ? p->name : NULL;
            proxy = true;
        }
        if (!part)
            return MB_OK;
        return add_sample(a, m, r->name, rj->workload[0] ? rj->workload : cj->name, rj->unit, part,
                          proxy, emulated, cap_w, cj->throughput.v, c->mean_power_w.v,
                          c->idle_power_w);
    }
    const struct mb_attribution *at = &c->attr[MB_ATTR_INTERVAL];
    if (!excl || !at->available || !strstr(at->note, "integrated power"))
        return MB_OK;
    for (size_t i = 0; i < c->njobs && i < MB_AN_JOBS_MAX; i++) {
        const struct mb_an_cell_job *cj = &c->jobs[i];
        const struct mb_an_job *rj = run_job(r, cj->name);
        if (!rj || !cj->throughput.valid || cj->throughput.v <= 0 || !cj->window_s.valid ||
            cj->window_s.v <= 0)
            continue;
        double power = (double)at->job_mj[i] / 1000.0 / cj->window_s.v;
        int st = add_sample(a, m, r->name, rj->workload[0] ? rj->workload : cj->name, rj->unit,
                            MB_PLAN_FULL, false, emulated, cap_w, cj->throughput.v, power,
                            c->idle_power_w);
        if (st)
            return st;
    }
    return MB_OK;
}

int mb_plan_profiles_load_results(struct mb_plan_profiles *p, const struct mb_catalog *cat,
                                  const char *dir, struct mb_error *err)
{
    struct mb_analysis *an = NULL;
    const char *dirs[1] = {dir};
    int st = mb_analysis_load(&an, dirs, 1, err);
    if (st != MB_OK)
        return st;
    struct acc a;
    memset(&a, 0, sizeof(a));
    size_t n_before = mb_plan_profiles_count(p);
    for (size_t e = 0; st == MB_OK && e < an->nexp; e++) {
        const struct mb_an_experiment *x = &an->exps[e];
        const struct mb_gpu_model *m = NULL;
        const char *names[] = {x->model, x->device_name};
        for (size_t i = 0; i < 2 && !m; i++)
            if (names[i][0] && mb_catalog_find(cat, names[i], &m, NULL) != MB_OK)
                m = NULL;
        if (!m)
            continue; /* the host, or a GPU without MIG: nothing for the planner */
        for (size_t r = 0; st == MB_OK && r < x->nruns; r++)
            for (size_t c = 0; st == MB_OK && c < x->runs[r].ncells; c++)
                st = take_cell(&a, m, x->emulated != 0, &x->runs[r], &x->runs[r].cells[c]);
    }
    if (st == MB_ENOMEM)
        mb_error_set(err, st, "out of memory");
    if (st == MB_OK && a.n == 0)
        st = mb_error_set(err, MB_ENOTFOUND,
                          "%s: none of its %zu cells can profile a workload (the planner needs "
                          "successful cells on a MIG-capable GPU model in which one job ran: "
                          "exclusive, mig with one instance, or mps with one job)",
                          dir, a.cells);
    for (size_t i = 0; st == MB_OK && i < a.n; i++) {
        const struct sample *s = &a.v[i];
        struct mb_plan_profile row;
        memset(&row, 0, sizeof(row));
        copy(row.workload, sizeof(row.workload), s->workload);
        copy(row.gpu, sizeof(row.gpu), s->gpu);
        copy(row.partition, sizeof(row.partition), s->partition);
        copy(row.unit, sizeof(row.unit), s->unit);
        row.throughput = s->thr / (double)s->n;
        row.power_w = s->power / (double)s->n;
        row.idle_power_w = s->n_idle ? s->idle / (double)s->n_idle : NAN;
        row.peak_mem_mib = NAN; /* cell.json records no per-job memory peak */
        row.proxy = s->proxy;
        row.emulated = s->emulated;
        row.power_limit_w = s->cap_w > 0 ? s->cap_w : NAN;
        snprintf(row.source, sizeof(row.source), "%s/%s (%zu cell%s%s%s)", dir, s->run, s->n,
                 s->n == 1 ? "" : "s", s->proxy ? ", MPS proxy" : "",
                 s->emulated ? ", EMULATED" : "");
        st = mb_plan_profiles_add(p, cat, &row, err);
        if (st != MB_OK)
            mb_error_prefix(err, "%s: ", dir);
    }
    if (st != MB_OK) {
        /* Leave the collection as it was. */
        while (mb_plan_profiles_count(p) > n_before)
            mb__plan_profiles_pop(p);
    }
    free(a.v);
    mb_analysis_destroy(an);
    return st;
}
