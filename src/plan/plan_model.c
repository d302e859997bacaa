/* SPDX-License-Identifier: Apache-2.0 */
/* The planner's model: the problem's times, energies and configurations, and evaluation. */
#include "plan/plan_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void mb__plan_prob_free(struct prob *P)
{
    free(P->t);
    free(P->d);
    free(P->norm);
    free(P->row);
    free(P->rank);
    free(P->base_t);
    free(P->base_d);
    free(P->cfg);
}

const char *mb_plan_objective_str(enum mb_plan_objective o)
{
    switch (o) {
    case MB_PLAN_ENERGY:
        return "energy";
    case MB_PLAN_MAKESPAN:
        return "makespan";
    case MB_PLAN_THROUGHPUT:
        return "throughput";
    }
    return "?";
}

/* ---- problem set-up ---------------------------------------------------------------------- */

static double size_mem(const struct prob *P, unsigned s)
{
    if (s == P->full)
        return P->model->total_memory_mib > 0 ? (double)P->model->total_memory_mib : INFINITY;
    int64_t m = P->model->profiles[s].memory_mib;
    return m > 0 ? (double)m : INFINITY;
}

unsigned mb__plan_size_cs(const struct prob *P, unsigned s)
{
    return s == P->full ? P->model->compute_slices : P->model->profiles[s].compute_slices;
}

/* Queue order's key: priority (higher first), deadline (earlier first, none last), file order. */
struct rank_key {
    int priority;
    double deadline;
    size_t j;
};

static int rank_cmp(const void *pa, const void *pb)
{
    const struct rank_key *x = pa, *y = pb;
    if (x->priority != y->priority)
        return x->priority > y->priority ? -1 : 1;
    if (x->deadline != y->deadline)
        return x->deadline < y->deadline ? -1 : 1;
    return x->j < y->j ? -1 : x->j > y->j ? 1 : 0;
}

/* P->rank: the jobs in queue order (n log n: a fleet's jobs may carry many priorities). */
static int prob_rank(struct prob *P, struct mb_error *err)
{
    struct rank_key *k = malloc(P->nj * sizeof(*k));
    if (!k)
        return mb_error_set(err, MB_ENOMEM, "out of memory");
    for (size_t j = 0; j < P->nj; j++)
        k[j] =
            (struct rank_key){P->jobs[j].priority,
                              isnan(P->jobs[j].deadline_s) ? INFINITY : P->jobs[j].deadline_s, j};
    qsort(k, P->nj, sizeof(*k), rank_cmp);
    for (size_t r = 0; r < P->nj; r++)
        P->rank[r] = k[r].j;
    free(k);
    return MB_OK;
}

struct cfg_collect {
    struct prob *P;
    size_t cap;
};

static int add_config(struct prob *P, size_t *cap, const struct config *c)
{
    if (P->ncfg == *cap) {
        size_t nc = *cap ? *cap * 2 : 32;
        struct config *v = realloc(P->cfg, nc * sizeof(*v));
        if (!v)
            return MB_ENOMEM;
        P->cfg = v;
        *cap = nc;
    }
    P->cfg[P->ncfg++] = *c;
    return MB_OK;
}

static int collect_layout(const struct mb_layout *layout, void *arg)
{
    struct cfg_collect *cc = arg;
    struct config c;
    memset(&c, 0, sizeof(c));
    c.mig = true;
    c.layout = *layout;
    c.n = layout->n;
    for (size_t i = 0; i < layout->n; i++) {
        c.size[i] = layout->items[i].profile;
        c.cs[i] = mb__plan_size_cs(cc->P, c.size[i]);
        c.csum += c.cs[i];
    }
    if (c.csum == 0)
        return MB_OK;
    return add_config(cc->P, &cc->cap, &c);
}

/* The rows of this GPU model and power limit, sorted by workload, then file order. */
struct wl_row {
    const char *workload;
    size_t r;
};

static int wl_row_cmp(const void *pa, const void *pb)
{
    const struct wl_row *x = pa, *y = pb;
    int c = strcmp(x->workload, y->workload);
    return c ? c : x->r < y->r ? -1 : x->r > y->r;
}

static struct wl_row *wl_rows(const struct prob *P, size_t *n)
{
    size_t nr = mb_plan_profiles_count(P->profiles), k = 0;
    struct wl_row *v = malloc((nr ? nr : 1) * sizeof(*v));
    if (!v)
        return NULL;
    for (size_t r = 0; r < nr; r++) {
        const struct mb_plan_profile *row = mb_plan_profiles_get(P->profiles, r);
        if (strcmp(row->gpu, P->model->name) == 0 && mb__plan_cap_match(row, P->cap_w))
            v[k++] = (struct wl_row){row->workload, r};
    }
    qsort(v, k, sizeof(*v), wl_row_cmp);
    *n = k;
    return v;
}

/* The range [*lo, return) of v[0..n-1] whose workload is w. */
static size_t wl_range(const struct wl_row *v, size_t n, const char *w, size_t *lo)
{
    size_t a = 0, b = n;
    while (a < b) {
        size_t m = a + (b - a) / 2;
        if (strcmp(v[m].workload, w) < 0)
            a = m + 1;
        else
            b = m;
    }
    *lo = a;
    while (b < n && strcmp(v[b].workload, w) == 0)
        b++;
    return b;
}

/*
 * Job j's time, dynamic energy and profile row on each partition size that can hold it (rows:
 * wl_rows' answer, n of them).
 */
static int prob_job(struct prob *P, size_t j, const struct mb_plan_options *opt,
                    const struct wl_row *rows, size_t n, bool partial, struct mb_error *err)
{
    const struct mb_plan_job *job = &P->jobs[j];
    const struct mb_gpu_model *model = P->model;
    size_t any = 0, fit = 0, lo;
    size_t hi = wl_range(rows, n, job->workload, &lo);
    P->base_t[j] = P->base_d[j] = NAN;
    double need_max = 0;
    double full_thr = NAN;
    for (size_t x = lo; x < hi; x++) {
        const struct mb_plan_profile *row = mb_plan_profiles_get(P->profiles, rows[x].r);
        if (strcmp(row->partition, MB_PLAN_FULL) == 0)
            full_thr = row->throughput;
    }
    for (size_t x = lo; x < hi; x++) {
        size_t r = rows[x].r;
        const struct mb_plan_profile *row = mb_plan_profiles_get(P->profiles, r);
        any++;
        unsigned s = P->full;
        if (strcmp(row->partition, MB_PLAN_FULL) != 0) {
            const struct mb_gi_profile *gp = mb_model_profile(model, row->partition);
            if (!gp)
                continue;
            s = (unsigned)(gp - model->profiles);
        }
        double need = !isnan(job->memory_mib) ? job->memory_mib : row->peak_mem_mib;
        if (!isnan(need) && need > need_max)
            need_max = need;
        if (!isnan(need) && need > size_mem(P, s))
            continue;
        if (s == P->full && !P->continuous) {
            P->base_t[j] = job->work / row->throughput;
            P->base_d[j] = (row->power_w - P->idle) * P->base_t[j];
        }
        if (s == P->full && opt->no_full)
            continue;
        size_t k = j * P->ns + s;
        fit++;
        P->row[k] = r;
        double dyn_w = row->power_w - P->idle;
        if (P->continuous) {
            P->t[k] = 0;
            P->d[k] = dyn_w;
            P->norm[k] = row->throughput / full_thr;
        } else {
            P->t[k] = job->work / row->throughput;
            P->d[k] = dyn_w * P->t[k];
        }
    }
    int st = MB_OK;
    if (partial) /* a job without rows here cannot go to a GPU on this limit, nothing more */
        return MB_OK;
    if (any == 0)
        st = mb_error_set(err, MB_EINVAL,
                          "job '%s': workload '%s' has no profile on %s; profile it "
                          "(migbench run) or add its rows to the profile CSV",
                          job->name, job->workload, model->name);
    else if (fit == 0) /* the answer is no, not bad input: no layout can hold the job */
        st = mb_error_set(err, MB_EINFEASIBLE,
                          "job '%s' needs %.0f MiB of GPU memory: it fits no profiled "
                          "partition of %s",
                          job->name, need_max, model->name);
    else if (P->continuous && isnan(full_thr))
        st = mb_error_set(err, MB_EINVAL,
                          "job '%s': workload '%s' has no 'full' row on %s, so its "
                          "throughput cannot be normalised",
                          job->name, job->workload, model->name);
    if (st != MB_OK)
        return job->line ? mb_error_prefix(err, "line %u: ", job->line) : st;
    return MB_OK;
}

/* Configurations: every maximal layout of the sizes some job can use, and MIG off. */
static int prob_configs(struct prob *P, const struct mb_gpu_model *model, struct mb_error *err)
{
    size_t nj = P->nj;
    uint32_t mask = 0;
    for (unsigned s = 0; s < P->full; s++)
        for (size_t j = 0; j < nj; j++)
            if (allowed(P, j, s)) {
                mask |= (uint32_t)1 << s;
                break;
            }
    size_t cap = 0;
    struct cfg_collect cc = {P, 0};
    if (mask) {
        int st =
            mb_layout_enumerate(model, mask, MB_LAYOUT_MAXIMAL, collect_layout, &cc, NULL, err);
        if (st != MB_OK)
            return st == MB_ENOMEM ? mb_error_set(err, MB_ENOMEM, "out of memory") : st;
        cap = cc.cap;
    }
    bool any_full = false;
    for (size_t j = 0; j < nj; j++)
        any_full |= allowed(P, j, P->full);
    if (any_full) {
        struct config c;
        memset(&c, 0, sizeof(c));
        c.n = 1;
        c.size[0] = P->full;
        c.cs[0] = model->compute_slices;
        c.csum = c.cs[0];
        if (add_config(P, &cap, &c) != MB_OK)
            return mb_error_set(err, MB_ENOMEM, "out of memory");
    }
    return MB_OK;
}

int mb__plan_prob_init(struct prob *P, const struct mb_gpu_model *model,
                       const struct mb_plan_profiles *profiles, const struct mb_plan_job *jobs,
                       size_t nj, const struct mb_plan_options *opt, struct mb_error *err)
{
    return mb__plan_prob_init_ex(P, model, profiles, jobs, nj, opt, false, err);
}

int mb__plan_prob_init_ex(struct prob *P, const struct mb_gpu_model *model,
                          const struct mb_plan_profiles *profiles, const struct mb_plan_job *jobs,
                          size_t nj, const struct mb_plan_options *opt, bool partial,
                          struct mb_error *err)
{
    memset(P, 0, sizeof(*P));
    P->model = model;
    P->profiles = profiles;
    P->cap_w = opt->power_limit_w;
    P->jobs = jobs;
    P->nj = nj;
    P->full = (unsigned)model->n_profiles;
    P->ns = P->full + 1;
    P->count = opt->count;
    P->obj = opt->objective;
    P->mcap = opt->makespan_cap_s > 0 ? opt->makespan_cap_s : INFINITY;
    P->ecap = opt->energy_cap_j > 0 ? opt->energy_cap_j : INFINITY;
    if (nj == 0)
        return mb_error_set(err, MB_EINVAL, "no jobs to plan");
    if (nj > MB_PLAN_MAX_JOBS)
        return mb_error_set(err, MB_EINVAL, "more than %d jobs", MB_PLAN_MAX_JOBS);
    if (opt->count < 1 || opt->count > MB_PLAN_MAX_GPUS)
        return mb_error_set(err, MB_EINVAL, "GPU count must be 1 to %d", MB_PLAN_MAX_GPUS);
    if (P->mcap < INFINITY && P->obj != MB_PLAN_ENERGY)
        return mb_error_set(err, MB_EINVAL, "a makespan cap applies to the energy objective");
    if (P->ecap < INFINITY && P->obj != MB_PLAN_MAKESPAN)
        return mb_error_set(err, MB_EINVAL, "an energy cap applies to the makespan objective");
    size_t n_cont = 0;
    for (size_t j = 0; j < nj; j++)
        n_cont += jobs[j].continuous;
    P->continuous = n_cont > 0;
    if (n_cont && n_cont < nj)
        return mb_error_set(err, MB_EINVAL,
                            "job set mixes continuous and finite jobs; plan them separately");
    if (P->continuous && P->obj != MB_PLAN_THROUGHPUT)
        return mb_error_set(err, MB_EINVAL,
                            "continuous jobs need 'objective: throughput' (they never finish, so "
                            "energy to finish and makespan are undefined)");
    if (!P->continuous && P->obj == MB_PLAN_THROUGHPUT)
        return mb_error_set(err, MB_EINVAL,
                            "the throughput objective is for continuous jobs ('work: continuous')");

    size_t nr = mb_plan_profiles_count(profiles);
    double idle_sum = 0;
    for (size_t r = 0; r < nr; r++) {
        const struct mb_plan_profile *row = mb_plan_profiles_get(profiles, r);
        if (strcmp(row->gpu, model->name) == 0 && !isnan(row->idle_power_w)) {
            idle_sum += row->idle_power_w;
            P->idle_rows++;
        }
    }
    if (P->idle_rows == 0)
        return mb_error_set(err, MB_EINVAL,
                            "no profile row for %s gives idle_power_w; the energy model needs the "
                            "GPU's idle power",
                            model->name);
    P->idle = idle_sum / (double)P->idle_rows;

    size_t cells = nj * P->ns;
    P->t = malloc(cells * sizeof(double));
    P->d = malloc(cells * sizeof(double));
    P->norm = malloc(cells * sizeof(double));
    P->row = malloc(cells * sizeof(size_t));
    P->rank = malloc(nj * sizeof(size_t));
    P->base_t = malloc(nj * sizeof(double));
    P->base_d = malloc(nj * sizeof(double));
    if (!P->t || !P->d || !P->norm || !P->row || !P->rank || !P->base_t || !P->base_d)
        return mb_error_set(err, MB_ENOMEM, "out of memory");
    for (size_t k = 0; k < cells; k++) {
        P->t[k] = INFINITY;
        P->d[k] = INFINITY;
        P->norm[k] = NAN;
        P->row[k] = SIZE_MAX;
    }
    size_t nrows = 0;
    struct wl_row *rows = wl_rows(P, &nrows);
    if (!rows)
        return mb_error_set(err, MB_ENOMEM, "out of memory");
    for (size_t j = 0; j < nj; j++) {
        int st = prob_job(P, j, opt, rows, nrows, partial, err);
        if (st != MB_OK) {
            free(rows);
            return st;
        }
    }
    free(rows);
    int st = prob_rank(P, err);
    if (st == MB_OK)
        st = prob_configs(P, model, err);
    if (st != MB_OK)
        return st;
    if (P->ncfg == 0 && !partial)
        return mb_error_set(err, MB_EINFEASIBLE, "no layout of %s can run these jobs", model->name);
    return MB_OK;
}

/*
 * The relaxation of n problems that differ only in their power limit: each job's time and dynamic
 * energy on each size the least over the limits that allow it, the configurations of every size
 * some limit allows. Its bounds are valid for any plan that gives each GPU one of the limits.
 */
int mb__plan_prob_min(struct prob *out, const struct prob *Pk, size_t n, struct mb_error *err)
{
    const struct prob *P0 = &Pk[0];
    *out = *P0;
    size_t cells = P0->nj * P0->ns;
    out->t = malloc(cells * sizeof(double));
    out->d = malloc(cells * sizeof(double));
    out->norm = malloc(cells * sizeof(double));
    out->row = malloc(cells * sizeof(size_t));
    out->rank = malloc(P0->nj * sizeof(size_t));
    out->base_t = malloc(P0->nj * sizeof(double));
    out->base_d = malloc(P0->nj * sizeof(double));
    out->cfg = NULL;
    out->ncfg = 0;
    out->bounded = false;
    if (!out->t || !out->d || !out->norm || !out->row || !out->rank || !out->base_t || !out->base_d)
        return mb_error_set(err, MB_ENOMEM, "out of memory");
    for (size_t k = 0; k < cells; k++) {
        out->t[k] = out->d[k] = INFINITY;
        out->norm[k] = NAN;
        out->row[k] = SIZE_MAX;
        for (size_t c = 0; c < n; c++) {
            if (Pk[c].row[k] == SIZE_MAX)
                continue;
            out->row[k] = Pk[c].row[k];
            out->t[k] = fmin(out->t[k], Pk[c].t[k]);
            out->d[k] = fmin(out->d[k], Pk[c].d[k]);
        }
    }
    memcpy(out->rank, P0->rank, P0->nj * sizeof(size_t));
    memcpy(out->base_t, P0->base_t, P0->nj * sizeof(double));
    memcpy(out->base_d, P0->base_d, P0->nj * sizeof(double));
    return prob_configs(out, P0->model, err);
}

/* ---- evaluation -------------------------------------------------------------------------- */

/*
 * Full evaluation of an assignment: asg[j] = g * MAXI + i on configuration cfg[g]. Queue order
 * follows P->rank; deadlines are checked; start[] (optional) gets each job's start time.
 */
struct metrics mb__plan_evaluate(const struct prob *P, const size_t *cfg, const size_t *asg,
                                 unsigned G, double *start)
{
    struct metrics m = {0, 0, 0, 0, true};
    double *B = calloc((size_t)G * MAXI, sizeof(double));
    unsigned char *used = calloc((size_t)G * MAXI, 1);
    if (!B || !used) {
        free(B);
        free(used);
        m.ok = false;
        m.M = INFINITY;
        return m;
    }
    for (size_t k = 0; k < P->nj; k++) {
        size_t j = P->rank[k];
        size_t inst = asg[j];
        const struct config *c = &P->cfg[cfg[inst / MAXI]];
        unsigned s = c->size[inst % MAXI];
        if (P->continuous) {
            if (used[inst])
                m.ok = false;
            used[inst] = 1;
            m.S += P->norm[j * P->ns + s];
            m.P += Dy(P, j, s);
            continue;
        }
        if (start)
            start[j] = B[inst];
        B[inst] += T(P, j, s);
        m.D += Dy(P, j, s);
        if (!isnan(P->jobs[j].deadline_s) && B[inst] > P->jobs[j].deadline_s * (1 + TIE))
            m.ok = false;
    }
    for (size_t i = 0; i < (size_t)G * MAXI; i++)
        if (B[i] > m.M)
            m.M = B[i];
    free(B);
    free(used);
    m.P += (double)G * P->idle;
    if (m.M > P->mcap * (1 + TIE))
        m.ok = false;
    if ((double)G * P->idle * m.M + m.D > P->ecap * (1 + TIE))
        m.ok = false;
    return m;
}

double mb__plan_energy(const struct prob *P, unsigned G, double M, double D)
{
    return (double)G * P->idle * M + D;
}

/* Primary and secondary objective values, smaller is better. */
void mb__plan_objective(const struct prob *P, unsigned G, const struct metrics *m, double *pri,
                        double *sec)
{
    *pri = *sec = 0;
    switch (P->obj) {
    case MB_PLAN_ENERGY:
        *pri = mb__plan_energy(P, G, m->M, m->D);
        *sec = m->M;
        break;
    case MB_PLAN_MAKESPAN:
        *pri = m->M;
        *sec = mb__plan_energy(P, G, m->M, m->D);
        break;
    case MB_PLAN_THROUGHPUT:
        *pri = -m->S;
        *sec = m->P;
        break;
    }
}

bool mb__plan_lt(double a, double b)
{
    return a < b - TIE * fmax(fabs(a), fabs(b));
}

/* Whether (pa, sa) beats (pb, sb) lexicographically, with ties on the primary value. */
bool mb__plan_better(double pa, double sa, double pb, double sb)
{
    if (mb__plan_lt(pa, pb))
        return true;
    if (mb__plan_lt(pb, pa))
        return false;
    return mb__plan_lt(sa, sb);
}
