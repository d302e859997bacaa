/* SPDX-License-Identifier: Apache-2.0 */
/* The planner's model and search: exact branch and bound for one GPU, a heuristic for fleets. */
#include "migbench/plan.h"
#include "plan/plan_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXI MB_LAYOUT_MAX
/* Relative tolerance for ties between objective values. */
#define TIE 1e-9

/* One way to run a GPU: MIG off (one instance, the whole GPU) or a MIG layout. */
struct config {
    bool mig;
    size_t n;
    unsigned size[MAXI]; /* size index: a profile index, or n_profiles for the whole GPU */
    unsigned cs[MAXI];   /* compute slices */
    unsigned csum;
    struct mb_layout layout;
};

struct prob {
    const struct mb_gpu_model *model;
    const struct mb_plan_profiles *profiles;
    double cap_w; /* rows measured under this power limit (W); 0 or NaN: the default */
    const struct mb_plan_job *jobs;
    size_t nj;
    unsigned ns;             /* sizes: model profiles plus the whole GPU */
    unsigned full;           /* size index of the whole GPU */
    double *t;               /* nj x ns: time on that size, INFINITY where not allowed */
    double *d;               /* nj x ns: dynamic energy (J) or, continuous, dynamic power (W) */
    double *norm;            /* nj x ns: normalised throughput (continuous jobs) */
    size_t *row;             /* nj x ns: profile row, SIZE_MAX where none */
    size_t *rank;            /* queue order: rank[k] is the k-th job to run */
    double *base_t, *base_d; /* alone on the whole GPU (baseline), NaN where not possible */
    double idle;
    size_t idle_rows;
    unsigned count;
    bool continuous;
    enum mb_plan_objective obj;
    double mcap, ecap; /* INFINITY when unused */
    struct config *cfg;
    size_t ncfg;
    size_t nodes;
};

struct metrics {
    double M, D, S, P;
    bool ok; /* caps and deadlines met */
};

static double T(const struct prob *P, size_t j, unsigned s)
{
    return P->t[j * P->ns + s];
}
static double Dy(const struct prob *P, size_t j, unsigned s)
{
    return P->d[j * P->ns + s];
}
static bool allowed(const struct prob *P, size_t j, unsigned s)
{
    return P->row[j * P->ns + s] != SIZE_MAX;
}

static void prob_free(struct prob *P)
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

static unsigned size_cs(const struct prob *P, unsigned s)
{
    return s == P->full ? P->model->compute_slices : P->model->profiles[s].compute_slices;
}

static int rank_cmp_ctx(const struct mb_plan_job *jobs, size_t a, size_t b)
{
    const struct mb_plan_job *x = &jobs[a], *y = &jobs[b];
    if (x->priority != y->priority)
        return x->priority > y->priority ? -1 : 1;
    double dx = isnan(x->deadline_s) ? INFINITY : x->deadline_s;
    double dy = isnan(y->deadline_s) ? INFINITY : y->deadline_s;
    if (dx != dy)
        return dx < dy ? -1 : 1;
    return a < b ? -1 : a > b ? 1 : 0;
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
        c.cs[i] = size_cs(cc->P, c.size[i]);
        c.csum += c.cs[i];
    }
    if (c.csum == 0)
        return MB_OK;
    return add_config(cc->P, &cc->cap, &c);
}

/* Job j's time, dynamic energy and profile row on each partition size that can hold it. */
static int prob_job(struct prob *P, size_t j, const struct mb_plan_options *opt,
                    struct mb_error *err)
{
    const struct mb_plan_job *job = &P->jobs[j];
    const struct mb_gpu_model *model = P->model;
    size_t nr = mb_plan_profiles_count(P->profiles);
    size_t any = 0, fit = 0;
    P->base_t[j] = P->base_d[j] = NAN;
    double need_max = 0;
    double full_thr = NAN;
    for (size_t r = 0; r < nr; r++) {
        const struct mb_plan_profile *row = mb_plan_profiles_get(P->profiles, r);
        if (strcmp(row->gpu, model->name) == 0 && strcmp(row->workload, job->workload) == 0 &&
            strcmp(row->partition, MB_PLAN_FULL) == 0 && mb__plan_cap_match(row, P->cap_w))
            full_thr = row->throughput;
    }
    for (size_t r = 0; r < nr; r++) {
        const struct mb_plan_profile *row = mb_plan_profiles_get(P->profiles, r);
        if (strcmp(row->gpu, model->name) != 0 || strcmp(row->workload, job->workload) != 0 ||
            !mb__plan_cap_match(row, P->cap_w))
            continue;
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

static int prob_init(struct prob *P, const struct mb_gpu_model *model,
                     const struct mb_plan_profiles *profiles, const struct mb_plan_job *jobs,
                     size_t nj, const struct mb_plan_options *opt, struct mb_error *err)
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
    for (size_t j = 0; j < nj; j++) {
        int st = prob_job(P, j, opt, err);
        if (st != MB_OK)
            return st;
    }
    /* Queue order: priority, then deadline, then file order (insertion sort keeps it stable). */
    for (size_t j = 0; j < nj; j++) {
        size_t x = j, k = j;
        while (k > 0 && rank_cmp_ctx(jobs, P->rank[k - 1], x) > 0) {
            P->rank[k] = P->rank[k - 1];
            k--;
        }
        P->rank[k] = x;
    }

    /* Configurations: every maximal layout of the sizes some job can use, and MIG off. */
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
    if (P->ncfg == 0)
        return mb_error_set(err, MB_EINFEASIBLE, "no layout of %s can run these jobs", model->name);
    return MB_OK;
}

/* ---- evaluation -------------------------------------------------------------------------- */

/*
 * Full evaluation of an assignment: asg[j] = g * MAXI + i on configuration cfg[g]. Queue order
 * follows P->rank; deadlines are checked; start[] (optional) gets each job's start time.
 */
static struct metrics evaluate(const struct prob *P, const size_t *cfg, const size_t *asg,
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

static double energy(const struct prob *P, unsigned G, double M, double D)
{
    return (double)G * P->idle * M + D;
}

/* Primary and secondary objective values, smaller is better. */
static void objective(const struct prob *P, unsigned G, const struct metrics *m, double *pri,
                      double *sec)
{
    *pri = *sec = 0;
    switch (P->obj) {
    case MB_PLAN_ENERGY:
        *pri = energy(P, G, m->M, m->D);
        *sec = m->M;
        break;
    case MB_PLAN_MAKESPAN:
        *pri = m->M;
        *sec = energy(P, G, m->M, m->D);
        break;
    case MB_PLAN_THROUGHPUT:
        *pri = -m->S;
        *sec = m->P;
        break;
    }
}

static bool lt(double a, double b)
{
    return a < b - TIE * fmax(fabs(a), fabs(b));
}

/* Whether (pa, sa) beats (pb, sb) lexicographically, with ties on the primary value. */
static bool better(double pa, double sa, double pb, double sb)
{
    if (lt(pa, pb))
        return true;
    if (lt(pb, pa))
        return false;
    return lt(sa, sb);
}

/* ---- exact search on one GPU ------------------------------------------------------------- */

struct bb {
    struct prob *P;
    const struct config *c;
    size_t ci;
    size_t *order;   /* jobs, longest first, identical jobs next to each other */
    bool *same_prev; /* order[k] is identical to order[k - 1] */
    double *sufMaxT, *sufArea, *sufD, *sufComb, *sufNorm;
    double B[MAXI];
    unsigned cnt[MAXI];
    size_t *asg;
    size_t *cfgv;
    double D, S, Pw;
    /* incumbent */
    bool have;
    double bp, bs;
    size_t best_cfg;
    size_t *best_asg;
};

static void bb_leaf(struct bb *b)
{
    struct metrics m = evaluate(b->P, b->cfgv, b->asg, 1, NULL);
    if (!m.ok)
        return;
    double p, s;
    objective(b->P, 1, &m, &p, &s);
    if (!b->have || better(p, s, b->bp, b->bs)) {
        b->have = true;
        b->bp = p;
        b->bs = s;
        b->best_cfg = b->ci;
        memcpy(b->best_asg, b->asg, b->P->nj * sizeof(size_t));
    }
}

/* Lower bound on the primary objective below this node; false if the node can be cut. */
static bool bb_keep(struct bb *b, size_t k)
{
    const struct prob *P = b->P;
    const struct config *c = b->c;
    if (P->continuous) {
        if (!b->have)
            return true;
        double lb = -(b->S + b->sufNorm[k]);
        return !lt(b->bp, lb);
    }
    double cur = 0, area = 0;
    for (size_t i = 0; i < c->n; i++) {
        if (b->B[i] > cur)
            cur = b->B[i];
        area += b->B[i] * c->cs[i];
    }
    double mlb = fmax(cur, fmax(b->sufMaxT[k], (area + b->sufArea[k]) / c->csum));
    double elb =
        fmax(P->idle * mlb + b->D + b->sufD[k], P->idle * area / c->csum + b->D + b->sufComb[k]);
    if (mlb > P->mcap * (1 + TIE) || elb > P->ecap * (1 + TIE))
        return false;
    if (!b->have)
        return true;
    double lb = P->obj == MB_PLAN_ENERGY ? elb : mlb;
    return !lt(b->bp, lb);
}

static void bb_rec(struct bb *b, size_t k)
{
    struct prob *P = b->P;
    P->nodes++;
    if (k == P->nj) {
        bb_leaf(b);
        return;
    }
    if (!bb_keep(b, k))
        return;
    size_t j = b->order[k];
    const struct config *c = b->c;
    /* Identical jobs are interchangeable: they take instances in non-decreasing order. */
    size_t i0 = k > 0 && b->same_prev[k] ? b->asg[b->order[k - 1]] : 0;
    for (size_t i = i0; i < c->n; i++) {
        unsigned s = c->size[i];
        if (!allowed(P, j, s))
            continue;
        if (P->continuous && b->cnt[i])
            continue;
        if (b->cnt[i] == 0) {
            /* Identical empty instances are interchangeable: only the first is tried. */
            bool dup = false;
            for (size_t q = 0; q < i && !dup; q++)
                dup = b->cnt[q] == 0 && c->size[q] == s;
            if (dup)
                continue;
        }
        b->asg[j] = i;
        b->cnt[i]++;
        if (P->continuous) {
            b->S += P->norm[j * P->ns + s];
            bb_rec(b, k + 1);
            b->S -= P->norm[j * P->ns + s];
        } else {
            b->B[i] += T(P, j, s);
            b->D += Dy(P, j, s);
            bb_rec(b, k + 1);
            b->B[i] -= T(P, j, s);
            b->D -= Dy(P, j, s);
        }
        b->cnt[i]--;
    }
}

static double min_over(const struct prob *P, const struct config *c, size_t j, int what)
{
    double best = INFINITY;
    for (size_t i = 0; i < c->n; i++) {
        unsigned s = c->size[i];
        if (!allowed(P, j, s))
            continue;
        double v;
        switch (what) {
        case 0:
            v = T(P, j, s);
            break;
        case 1:
            v = T(P, j, s) * c->cs[i];
            break;
        case 2:
            v = Dy(P, j, s);
            break;
        case 3:
            v = Dy(P, j, s) + P->idle * T(P, j, s) * c->cs[i] / c->csum;
            break;
        default:
            v = -P->norm[j * P->ns + s];
            break;
        }
        if (v < best)
            best = v;
    }
    return best;
}

static bool same_num(double a, double b)
{
    return (isnan(a) && isnan(b)) || a == b;
}

/* Jobs the model cannot tell apart: same workload, work, priority, deadline and memory. */
static bool same_job(const struct prob *P, size_t a, size_t b)
{
    const struct mb_plan_job *x = &P->jobs[a], *y = &P->jobs[b];
    return strcmp(x->workload, y->workload) == 0 && same_num(x->work, y->work) &&
           x->continuous == y->continuous && x->priority == y->priority &&
           same_num(x->deadline_s, y->deadline_s) && same_num(x->memory_mib, y->memory_mib);
}

/* Search order: longest first; among equally long jobs, identical ones together. */
static bool order_before(const struct prob *P, const struct config *c, size_t a, size_t b)
{
    double ta = min_over(P, c, a, 0), tb = min_over(P, c, b, 0);
    if (ta != tb)
        return ta > tb;
    int w = strcmp(P->jobs[a].workload, P->jobs[b].workload);
    if (w)
        return w < 0;
    if (P->jobs[a].work != P->jobs[b].work)
        return P->jobs[a].work > P->jobs[b].work;
    return false;
}

static int solve_exact(struct prob *P, size_t *best_cfg, size_t *best_asg, bool *found,
                       struct mb_error *err)
{
    size_t nj = P->nj;
    struct bb b;
    memset(&b, 0, sizeof(b));
    b.P = P;
    b.order = malloc(nj * sizeof(size_t));
    b.same_prev = malloc(nj * sizeof(bool));
    b.asg = malloc(nj * sizeof(size_t));
    b.best_asg = best_asg;
    double *buf = malloc(5 * (nj + 1) * sizeof(double));
    size_t cfg_one[1];
    b.cfgv = cfg_one;
    if (!b.order || !b.same_prev || !b.asg || !buf) {
        free(b.order);
        free(b.same_prev);
        free(b.asg);
        free(buf);
        return mb_error_set(err, MB_ENOMEM, "out of memory");
    }
    b.sufMaxT = buf;
    b.sufArea = buf + (nj + 1);
    b.sufD = buf + 2 * (nj + 1);
    b.sufComb = buf + 3 * (nj + 1);
    b.sufNorm = buf + 4 * (nj + 1);
    for (size_t ci = 0; ci < P->ncfg; ci++) {
        const struct config *c = &P->cfg[ci];
        b.c = c;
        b.ci = ci;
        cfg_one[0] = ci;
        /* Every job must fit somewhere in this configuration. */
        bool ok = true;
        for (size_t j = 0; j < nj && ok; j++)
            ok = isfinite(min_over(P, c, j, 0));
        if (!ok || (P->continuous && nj > c->n))
            continue;
        /* Longest jobs first: tight bounds early. */
        for (size_t j = 0; j < nj; j++)
            b.order[j] = j;
        for (size_t x = 1; x < nj; x++) {
            size_t v = b.order[x], y = x;
            while (y > 0 && order_before(P, c, v, b.order[y - 1])) {
                b.order[y] = b.order[y - 1];
                y--;
            }
            b.order[y] = v;
        }
        for (size_t k = 0; k < nj; k++)
            b.same_prev[k] = k > 0 && same_job(P, b.order[k], b.order[k - 1]);
        b.sufMaxT[nj] = b.sufArea[nj] = b.sufD[nj] = b.sufComb[nj] = b.sufNorm[nj] = 0;
        for (size_t k = nj; k-- > 0;) {
            size_t j = b.order[k];
            b.sufMaxT[k] = fmax(b.sufMaxT[k + 1], min_over(P, c, j, 0));
            b.sufArea[k] = b.sufArea[k + 1] + min_over(P, c, j, 1);
            b.sufD[k] = b.sufD[k + 1] + min_over(P, c, j, 2);
            b.sufComb[k] = b.sufComb[k + 1] + min_over(P, c, j, 3);
            b.sufNorm[k] = b.sufNorm[k + 1] - min_over(P, c, j, 4);
        }
        memset(b.B, 0, sizeof(b.B));
        memset(b.cnt, 0, sizeof(b.cnt));
        b.D = b.S = 0;
        bb_rec(&b, 0);
    }
    *found = b.have;
    *best_cfg = b.best_cfg;
    free(b.order);
    free(b.same_prev);
    free(b.asg);
    free(buf);
    return MB_OK;
}

/* Plain enumeration for tests: every configuration, every assignment, no pruning. */
static int solve_brute(struct prob *P, size_t *best_cfg, size_t *best_asg, bool *found,
                       struct mb_error *err)
{
    size_t nj = P->nj;
    size_t *asg = calloc(nj, sizeof(size_t));
    if (!asg)
        return mb_error_set(err, MB_ENOMEM, "out of memory");
    bool have = false;
    double bp = 0, bs = 0;
    for (size_t ci = 0; ci < P->ncfg; ci++) {
        const struct config *c = &P->cfg[ci];
        size_t cfgv[1] = {ci};
        memset(asg, 0, nj * sizeof(size_t));
        for (;;) {
            bool ok = true;
            for (size_t j = 0; j < nj && ok; j++)
                ok = allowed(P, j, c->size[asg[j]]);
            if (ok) {
                struct metrics m = evaluate(P, cfgv, asg, 1, NULL);
                double p, s;
                objective(P, 1, &m, &p, &s);
                if (m.ok && (!have || better(p, s, bp, bs))) {
                    have = true;
                    bp = p;
                    bs = s;
                    *best_cfg = ci;
                    memcpy(best_asg, asg, nj * sizeof(size_t));
                }
            }
            size_t j = 0;
            while (j < nj && ++asg[j] == c->n)
                asg[j++] = 0;
            if (j == nj)
                break;
        }
    }
    *found = have;
    free(asg);
    return MB_OK;
}

/* ---- heuristic for fleets ---------------------------------------------------------------- */

struct heur {
    struct prob *P;
    unsigned G;
    size_t *cfg; /* per GPU */
    size_t *asg; /* per job: g * MAXI + i */
    double *B;   /* per instance */
    unsigned *cnt;
    double D, M;
    size_t *order; /* jobs, longest first */
};

static double hcost(const struct heur *h, double M, double D)
{
    const struct prob *P = h->P;
    double gi = (double)h->G * P->idle;
    double E = gi * M + D;
    double scale = gi > 0 ? gi : 1;
    switch (P->obj) {
    case MB_PLAN_MAKESPAN:
        return M + 1e-6 * D / scale + (E > P->ecap ? 1e3 * (E - P->ecap) / scale : 0);
    default:
        return E + (M > P->mcap ? 1e6 * scale * (M - P->mcap) : 0);
    }
}

static unsigned inst_size(const struct heur *h, size_t inst)
{
    return h->P->cfg[h->cfg[inst / MAXI]].size[inst % MAXI];
}

static void recompute_max(struct heur *h)
{
    h->M = 0;
    for (size_t i = 0; i < (size_t)h->G * MAXI; i++)
        if (h->B[i] > h->M)
            h->M = h->B[i];
}

/* Puts job j where it adds least cost, among GPUs g0 .. g1-1. False if it fits nowhere. */
static bool place_greedy(struct heur *h, size_t j, unsigned g0, unsigned g1)
{
    const struct prob *P = h->P;
    double base = hcost(h, h->M, h->D);
    double best = INFINITY, best_end = INFINITY;
    size_t bi = SIZE_MAX;
    for (unsigned g = g0; g < g1; g++) {
        const struct config *c = &P->cfg[h->cfg[g]];
        for (size_t i = 0; i < c->n; i++) {
            unsigned s = c->size[i];
            if (!allowed(P, j, s))
                continue;
            size_t inst = (size_t)g * MAXI + i;
            double end = h->B[inst] + T(P, j, s);
            double delta = hcost(h, fmax(h->M, end), h->D + Dy(P, j, s)) - base;
            if (delta < best - 1e-12 * fabs(best) || (delta <= best && end < best_end)) {
                best = delta;
                best_end = end;
                bi = inst;
            }
        }
    }
    if (bi == SIZE_MAX)
        return false;
    unsigned s = inst_size(h, bi);
    h->asg[j] = bi;
    h->B[bi] += T(P, j, s);
    h->cnt[bi]++;
    h->D += Dy(P, j, s);
    if (h->B[bi] > h->M)
        h->M = h->B[bi];
    return true;
}

static void heur_clear(struct heur *h)
{
    memset(h->B, 0, (size_t)h->G * MAXI * sizeof(double));
    memset(h->cnt, 0, (size_t)h->G * MAXI * sizeof(unsigned));
    h->D = h->M = 0;
}

static bool greedy_all(struct heur *h)
{
    heur_clear(h);
    for (size_t k = 0; k < h->P->nj; k++)
        if (!place_greedy(h, h->order[k], 0, h->G))
            return false;
    return true;
}

/* The three largest instance loads, for the makespan without two given instances. */
struct top3 {
    double v[3];
    size_t i[3];
};

static struct top3 top3_of(const struct heur *h)
{
    struct top3 t = {{0, 0, 0}, {SIZE_MAX, SIZE_MAX, SIZE_MAX}};
    for (size_t i = 0; i < (size_t)h->G * MAXI; i++) {
        double x = h->B[i];
        if (x > t.v[2]) {
            int p = 2;
            while (p > 0 && x > t.v[p - 1]) {
                t.v[p] = t.v[p - 1];
                t.i[p] = t.i[p - 1];
                p--;
            }
            t.v[p] = x;
            t.i[p] = i;
        }
    }
    return t;
}

static double max_without(const struct top3 *t, size_t a, size_t b)
{
    for (int p = 0; p < 3; p++)
        if (t->i[p] != a && t->i[p] != b)
            return t->v[p];
    return 0;
}

/*
 * The cost change of a move that leaves instances a and b at loads Ba and Bb and the dynamic
 * energy at D2, from base. Makespan plateaus: also rewards unloading the busier of the two.
 */
static double move_delta(const struct heur *h, const struct top3 *t3, size_t a, size_t b, double Ba,
                         double Bb, double D2, double base)
{
    double M2 = fmax(max_without(t3, a, b), fmax(Ba, Bb));
    double delta = hcost(h, M2, D2) - base;
    if (h->P->obj == MB_PLAN_MAKESPAN && M2 <= h->M)
        delta += 1e-3 * (fmax(Ba, Bb) - fmax(h->B[a], h->B[b]));
    return delta;
}

/* One pass of single-job moves; returns the number of improving moves made. */
static size_t local_moves(struct heur *h)
{
    struct prob *P = h->P;
    size_t moved = 0;
    struct top3 t3 = top3_of(h);
    for (size_t k = 0; k < P->nj; k++) {
        size_t j = h->order[k];
        size_t a = h->asg[j];
        unsigned sa = inst_size(h, a);
        double base = hcost(h, h->M, h->D);
        double best = -1e-9 * fabs(base);
        size_t bi = SIZE_MAX;
        for (unsigned g = 0; g < h->G; g++) {
            const struct config *c = &P->cfg[h->cfg[g]];
            for (size_t i = 0; i < c->n; i++) {
                size_t b = (size_t)g * MAXI + i;
                unsigned sb = c->size[i];
                if (b == a || !allowed(P, j, sb))
                    continue;
                P->nodes++;
                double Ba = h->B[a] - T(P, j, sa), Bb = h->B[b] + T(P, j, sb);
                double delta =
                    move_delta(h, &t3, a, b, Ba, Bb, h->D - Dy(P, j, sa) + Dy(P, j, sb), base);
                if (delta < best) {
                    best = delta;
                    bi = b;
                }
            }
        }
        if (bi != SIZE_MAX) {
            unsigned sb = inst_size(h, bi);
            h->cnt[a]--;
            /* An emptied instance is exactly idle, whatever the rounding. */
            h->B[a] = h->cnt[a] ? h->B[a] - T(P, j, sa) : 0;
            h->B[bi] += T(P, j, sb);
            h->cnt[bi]++;
            h->D += Dy(P, j, sb) - Dy(P, j, sa);
            h->asg[j] = bi;
            moved++;
            t3 = top3_of(h);
            recompute_max(h);
        }
    }
    return moved;
}

/* Removes GPU g's jobs (mine[0..n-1]) from it and empties its instances. */
static void take_out(struct heur *h, unsigned g, const size_t *mine, size_t n)
{
    const struct prob *P = h->P;
    for (size_t q = 0; q < n; q++) {
        size_t j = mine[q];
        h->D -= Dy(P, j, inst_size(h, h->asg[j]));
    }
    for (size_t i = 0; i < MAXI; i++) {
        h->B[(size_t)g * MAXI + i] = 0;
        h->cnt[(size_t)g * MAXI + i] = 0;
    }
    recompute_max(h);
}

/* Places mine[] on GPU g under configuration c, greedily; false if some job fits nowhere. */
static bool put_on(struct heur *h, unsigned g, size_t c, const size_t *mine, size_t n)
{
    h->cfg[g] = c;
    for (size_t q = 0; q < n; q++)
        if (!place_greedy(h, mine[q], g, g + 1))
            return false;
    return true;
}

/* Tries every configuration on each GPU in turn, re-placing that GPU's jobs greedily. */
static size_t config_moves(struct heur *h, size_t *mine, size_t *saved_asg)
{
    struct prob *P = h->P;
    size_t changed = 0;
    for (unsigned g = 0; g < h->G; g++) {
        size_t n = 0;
        for (size_t k = 0; k < P->nj; k++)
            if (h->asg[h->order[k]] / MAXI == g)
                mine[n++] = h->order[k];
        size_t orig = h->cfg[g];
        double saveB[MAXI];
        unsigned saveC[MAXI];
        memcpy(saveB, h->B + (size_t)g * MAXI, sizeof(saveB));
        memcpy(saveC, h->cnt + (size_t)g * MAXI, sizeof(saveC));
        for (size_t q = 0; q < n; q++)
            saved_asg[q] = h->asg[mine[q]];
        double saveD = h->D, saveM = h->M;
        double best = hcost(h, h->M, h->D);
        size_t best_c = orig;
        for (size_t c = 0; c < P->ncfg; c++) {
            if (c == orig)
                continue;
            P->nodes++;
            take_out(h, g, mine, n);
            if (put_on(h, g, c, mine, n)) {
                double cost = hcost(h, h->M, h->D);
                if (cost < best - 1e-9 * fabs(best)) {
                    best = cost;
                    best_c = c;
                }
            }
            /* Restore the original state of GPU g. */
            h->cfg[g] = orig;
            memcpy(h->B + (size_t)g * MAXI, saveB, sizeof(saveB));
            memcpy(h->cnt + (size_t)g * MAXI, saveC, sizeof(saveC));
            for (size_t q = 0; q < n; q++)
                h->asg[mine[q]] = saved_asg[q];
            h->D = saveD;
            h->M = saveM;
        }
        if (best_c != orig) {
            take_out(h, g, mine, n);
            put_on(h, g, best_c, mine, n); /* deterministic: succeeds as in the trial */
            changed++;
        }
    }
    return changed;
}

static void bounds(const struct prob *P, unsigned G, double *mlb, double *elb, double *sub);

/* Configuration moves and job moves until neither helps (bounded rounds). */
/*
 * Swaps between a job on a busiest instance and any job elsewhere, for plateaus that single moves
 * cannot leave (every other instance too full to take a job whole). Returns the swaps made.
 */
static size_t swap_moves(struct heur *h)
{
    struct prob *P = h->P;
    size_t swapped = 0;
    for (size_t k = 0; k < P->nj; k++) {
        size_t j = h->order[k];
        size_t a = h->asg[j];
        if (h->B[a] < h->M)
            continue;
        struct top3 t3 = top3_of(h);
        double base = hcost(h, h->M, h->D);
        double best = -1e-9 * fabs(base);
        size_t bj = SIZE_MAX;
        unsigned sa = inst_size(h, a);
        for (size_t q = 0; q < P->nj; q++) {
            size_t b = h->asg[q];
            if (b == a)
                continue;
            unsigned sb = inst_size(h, b);
            if (!allowed(P, j, sb) || !allowed(P, q, sa))
                continue;
            P->nodes++;
            double Ba = h->B[a] - T(P, j, sa) + T(P, q, sa);
            double Bb = h->B[b] - T(P, q, sb) + T(P, j, sb);
            double D2 = h->D - Dy(P, j, sa) - Dy(P, q, sb) + Dy(P, j, sb) + Dy(P, q, sa);
            double delta = move_delta(h, &t3, a, b, Ba, Bb, D2, base);
            if (delta < best) {
                best = delta;
                bj = q;
            }
        }
        if (bj != SIZE_MAX) {
            size_t b = h->asg[bj];
            unsigned sb = inst_size(h, b);
            h->B[a] += T(P, bj, sa) - T(P, j, sa);
            h->B[b] += T(P, j, sb) - T(P, bj, sb);
            h->D += Dy(P, j, sb) + Dy(P, bj, sa) - Dy(P, j, sa) - Dy(P, bj, sb);
            h->asg[j] = b;
            h->asg[bj] = a;
            recompute_max(h);
            swapped++;
        }
    }
    return swapped;
}

static void improve(struct heur *h, size_t *buf, size_t *keep_asg, bool swaps)
{
    for (int round = 0; round < 3; round++) {
        size_t changed = config_moves(h, buf, keep_asg);
        size_t moved = 0;
        for (int pass = 0; pass < 30; pass++) {
            size_t m = local_moves(h);
            if (m == 0 && swaps)
                m = swap_moves(h);
            moved += m;
            if (m == 0)
                break;
        }
        if (changed == 0 && moved == 0)
            break;
    }
}

/*
 * Chooses a configuration per GPU for a target makespan T: each job takes the size the energy
 * bound favours among those finishing within T (the least area for the makespan objective); the
 * instances each size then needs (its total time over T) are covered GPU by GPU with the
 * configuration that covers the most compute slices of what is still needed.
 */
static void demand_start(struct heur *h, double target, size_t fallback)
{
    const struct prob *P = h->P;
    double load[MB_MAX_PROFILES + 1];
    double need[MB_MAX_PROFILES + 1];
    memset(load, 0, sizeof(load));
    double lam = P->idle / P->model->compute_slices;
    for (size_t j = 0; j < P->nj; j++) {
        unsigned bs = UINT32_MAX, fast = UINT32_MAX;
        double bv = INFINITY;
        for (unsigned s = 0; s < P->ns; s++) {
            if (!allowed(P, j, s))
                continue;
            if (fast == UINT32_MAX || T(P, j, s) < T(P, j, fast))
                fast = s;
            if (T(P, j, s) > target)
                continue;
            double v = P->obj == MB_PLAN_MAKESPAN ? T(P, j, s) * size_cs(P, s)
                                                  : Dy(P, j, s) + lam * T(P, j, s) * size_cs(P, s);
            if (v < bv) {
                bv = v;
                bs = s;
            }
        }
        if (bs == UINT32_MAX)
            bs = fast;
        if (bs != UINT32_MAX)
            load[bs] += T(P, j, bs);
    }
    for (unsigned s = 0; s < P->ns; s++)
        need[s] = ceil(load[s] / target - 1e-9);
    for (unsigned g = 0; g < h->G; g++) {
        size_t bc = SIZE_MAX;
        double bcov = 0;
        for (size_t c = 0; c < P->ncfg; c++) {
            const struct config *cf = &P->cfg[c];
            double taken[MB_MAX_PROFILES + 1];
            memset(taken, 0, sizeof(taken));
            double cov = 0;
            for (size_t i = 0; i < cf->n; i++)
                if (need[cf->size[i]] > taken[cf->size[i]]) {
                    taken[cf->size[i]] += 1;
                    cov += cf->cs[i];
                }
            if (cov > bcov) {
                bcov = cov;
                bc = c;
            }
        }
        if (bc == SIZE_MAX) {
            h->cfg[g] = fallback != SIZE_MAX ? fallback : 0;
            continue;
        }
        h->cfg[g] = bc;
        const struct config *cf = &P->cfg[bc];
        for (size_t i = 0; i < cf->n; i++)
            if (need[cf->size[i]] > 0)
                need[cf->size[i]] -= 1;
    }
}

static int solve_heuristic(struct prob *P, unsigned G, size_t *cfg_out, size_t *asg_out,
                           bool *found, struct mb_error *err)
{
    struct heur h;
    memset(&h, 0, sizeof(h));
    h.P = P;
    h.G = G;
    h.cfg = calloc(G, sizeof(size_t));
    h.asg = calloc(P->nj, sizeof(size_t));
    h.B = calloc((size_t)G * MAXI, sizeof(double));
    h.cnt = calloc((size_t)G * MAXI, sizeof(unsigned));
    h.order = malloc(P->nj * sizeof(size_t));
    size_t *buf = malloc(P->nj * sizeof(size_t));
    size_t *keep_asg = malloc(P->nj * sizeof(size_t));
    double *key = malloc(P->nj * sizeof(double));
    int st = MB_OK;
    *found = false;
    if (!h.cfg || !h.asg || !h.B || !h.cnt || !h.order || !buf || !keep_asg || !key) {
        st = mb_error_set(err, MB_ENOMEM, "out of memory");
        goto done;
    }
    for (size_t j = 0; j < P->nj; j++) {
        double mt = INFINITY;
        for (unsigned s = 0; s < P->ns; s++)
            if (allowed(P, j, s) && T(P, j, s) < mt)
                mt = T(P, j, s);
        key[j] = mt;
        h.order[j] = j;
    }
    /* Longest first (LPT); a simple insertion sort would be quadratic for 10^5 jobs. */
    for (size_t gap = P->nj / 2; gap > 0; gap /= 2)
        for (size_t x = gap; x < P->nj; x++) {
            size_t v = h.order[x], y = x;
            while (y >= gap && key[h.order[y - gap]] < key[v]) {
                h.order[y] = h.order[y - gap];
                y -= gap;
            }
            h.order[y] = v;
        }
    /* Starts: the same configuration on every GPU (the cheapest one), and layouts mixed to
       match the sizes the lower bound would give the jobs at a few target makespans. */
    double best = INFINITY;
    size_t best_c = SIZE_MAX;
    for (size_t c = 0; c < P->ncfg; c++) {
        for (unsigned g = 0; g < G; g++)
            h.cfg[g] = c;
        if (!greedy_all(&h))
            continue;
        double cost = hcost(&h, h.M, h.D);
        if (cost < best) {
            best = cost;
            best_c = c;
        }
    }
    double mlb, elb, sub;
    bounds(P, G, &mlb, &elb, &sub);
    static const double targets[] = {0, 1.0, 1.15, 1.3};
    double best_final = INFINITY;
    for (size_t k = 0; k < sizeof(targets) / sizeof(targets[0]); k++) {
        if (k == 0) {
            if (best_c == SIZE_MAX)
                continue;
            for (unsigned g = 0; g < G; g++)
                h.cfg[g] = best_c;
        } else {
            demand_start(&h, targets[k] * mlb, best_c);
        }
        if (!greedy_all(&h))
            continue;
        improve(&h, buf, keep_asg, P->obj == MB_PLAN_MAKESPAN);
        double cost = hcost(&h, h.M, h.D);
        if (cost < best_final) {
            best_final = cost;
            *found = true;
            memcpy(cfg_out, h.cfg, G * sizeof(size_t));
            memcpy(asg_out, h.asg, P->nj * sizeof(size_t));
        }
    }
    /* The best start gets the costlier swap moves too. */
    if (*found) {
        memcpy(h.cfg, cfg_out, G * sizeof(size_t));
        memcpy(h.asg, asg_out, P->nj * sizeof(size_t));
        heur_clear(&h);
        for (size_t j = 0; j < P->nj; j++) {
            size_t inst = h.asg[j];
            unsigned s = inst_size(&h, inst);
            h.B[inst] += T(P, j, s);
            h.cnt[inst]++;
            h.D += Dy(P, j, s);
        }
        recompute_max(&h);
        improve(&h, buf, keep_asg, true);
        if (hcost(&h, h.M, h.D) < best_final) {
            memcpy(cfg_out, h.cfg, G * sizeof(size_t));
            memcpy(asg_out, h.asg, P->nj * sizeof(size_t));
        }
    }
done:
    free(h.cfg);
    free(h.asg);
    free(h.B);
    free(h.cnt);
    free(h.order);
    free(buf);
    free(keep_asg);
    free(key);
    return st;
}

static bool cont_split(struct prob *P, unsigned G, size_t *cfg_out, size_t *asg_out);

/* Continuous jobs on a fleet: one configuration on every GPU, jobs greedily to free instances. */
static int solve_cont_heuristic(struct prob *P, unsigned G, size_t *cfg_out, size_t *asg_out,
                                bool *found, struct mb_error *err)
{
    size_t ninst = (size_t)G * MAXI;
    unsigned char *used = malloc(ninst);
    size_t *asg = malloc(P->nj * sizeof(size_t));
    if (!used || !asg) {
        free(used);
        free(asg);
        return mb_error_set(err, MB_ENOMEM, "out of memory");
    }
    double bestS = -INFINITY, bestP = INFINITY;
    *found = false;
    for (size_t c = 0; c < P->ncfg; c++) {
        const struct config *cf = &P->cfg[c];
        memset(used, 0, ninst);
        double S = 0, Pw = 0;
        bool ok = true;
        for (size_t k = 0; k < P->nj && ok; k++) {
            size_t j = P->rank[k];
            double bv = -INFINITY, bd = INFINITY;
            size_t bi = SIZE_MAX;
            for (unsigned g = 0; g < G; g++)
                for (size_t i = 0; i < cf->n; i++) {
                    size_t inst = (size_t)g * MAXI + i;
                    unsigned s = cf->size[i];
                    if (used[inst] || !allowed(P, j, s))
                        continue;
                    P->nodes++;
                    double v = P->norm[j * P->ns + s];
                    if (v > bv || (v == bv && Dy(P, j, s) < bd)) {
                        bv = v;
                        bd = Dy(P, j, s);
                        bi = inst;
                    }
                }
            if (bi == SIZE_MAX) {
                ok = false;
                break;
            }
            used[bi] = 1;
            asg[j] = bi;
            S += bv;
            Pw += bd;
        }
        if (ok && better(-S, Pw, -bestS, bestP)) {
            bestS = S;
            bestP = Pw;
            *found = true;
            for (unsigned g = 0; g < G; g++)
                cfg_out[g] = c;
            memcpy(asg_out, asg, P->nj * sizeof(size_t));
        }
    }
    size_t *cfg2 = malloc(G * sizeof(size_t));
    if (cfg2 && cont_split(P, G, cfg2, asg)) {
        struct metrics m = evaluate(P, cfg2, asg, G, NULL);
        if (m.ok && (!*found || better(-m.S, m.P, -bestS, bestP + (double)G * P->idle))) {
            *found = true;
            memcpy(cfg_out, cfg2, G * sizeof(size_t));
            memcpy(asg_out, asg, P->nj * sizeof(size_t));
        }
    }
    free(cfg2);
    free(used);
    free(asg);
    return MB_OK;
}

/* The best normalised throughput of job j over every size, negated (as min_all's 4). */
static double min_over_all_norm(const struct prob *P, size_t j)
{
    double best = INFINITY;
    for (unsigned s = 0; s < P->ns; s++)
        if (allowed(P, j, s))
            best = fmin(best, -P->norm[j * P->ns + s]);
    return best;
}

/* Continuous jobs sub[0..n-1] on one GPU: the best configuration and distinct instances. */
struct cont_search {
    const struct prob *P;
    const struct config *c;
    const size_t *sub;
    size_t n;
    size_t cur[MAXI], best[MAXI];
    bool used[MAXI];
    double S, Pw, bestS, bestP;
    size_t best_cfg, ci;
    bool have;
};

static void cont_rec(struct cont_search *cs, size_t k, double rem_max)
{
    const struct prob *P = cs->P;
    if (k == cs->n) {
        if (!cs->have || better(-cs->S, cs->Pw, -cs->bestS, cs->bestP)) {
            cs->have = true;
            cs->bestS = cs->S;
            cs->bestP = cs->Pw;
            cs->best_cfg = cs->ci;
            memcpy(cs->best, cs->cur, sizeof(cs->cur));
        }
        return;
    }
    if (cs->have && lt(cs->S + rem_max, cs->bestS))
        return;
    size_t j = cs->sub[k];
    double mx = 0;
    for (size_t i = 0; i < cs->c->n; i++)
        if (allowed(P, j, cs->c->size[i]))
            mx = fmax(mx, P->norm[j * P->ns + cs->c->size[i]]);
    for (size_t i = 0; i < cs->c->n; i++) {
        unsigned s = cs->c->size[i];
        if (cs->used[i] || !allowed(P, j, s))
            continue;
        bool dup = false;
        for (size_t q = 0; q < i && !dup; q++)
            dup = !cs->used[q] && cs->c->size[q] == s;
        if (dup)
            continue;
        cs->used[i] = true;
        cs->cur[k] = i;
        cs->S += P->norm[j * P->ns + s];
        cs->Pw += Dy(P, j, s);
        cont_rec(cs, k + 1, rem_max - mx);
        cs->S -= P->norm[j * P->ns + s];
        cs->Pw -= Dy(P, j, s);
        cs->used[i] = false;
    }
}

/*
 * Continuous jobs on a fleet, second start: the most constrained jobs first, dealt round-robin
 * to the GPUs, then each GPU's share solved exactly. False if some GPU's share fits no layout.
 */
static bool cont_split(struct prob *P, unsigned G, size_t *cfg_out, size_t *asg_out)
{
    size_t *ord = malloc(P->nj * sizeof(size_t));
    size_t *sub = malloc(P->nj * sizeof(size_t));
    size_t *nallow = malloc(P->nj * sizeof(size_t));
    bool ok = ord && sub && nallow;
    for (size_t j = 0; ok && j < P->nj; j++) {
        ord[j] = j;
        nallow[j] = 0;
        for (unsigned s = 0; s < P->ns; s++)
            nallow[j] += allowed(P, j, s);
    }
    for (size_t x = 1; ok && x < P->nj; x++) {
        size_t v = ord[x], y = x;
        while (y > 0 && nallow[ord[y - 1]] > nallow[v]) {
            ord[y] = ord[y - 1];
            y--;
        }
        ord[y] = v;
    }
    for (unsigned g = 0; ok && g < G; g++) {
        size_t n = 0;
        for (size_t k = g; k < P->nj; k += G)
            sub[n++] = ord[k];
        if (n == 0) {
            cfg_out[g] = 0;
            continue;
        }
        if (n > MAXI) {
            ok = false;
            break;
        }
        struct cont_search cs;
        memset(&cs, 0, sizeof(cs));
        cs.P = P;
        cs.sub = sub;
        cs.n = n;
        double rem = 0;
        for (size_t q = 0; q < n; q++)
            rem -= min_over_all_norm(P, sub[q]);
        for (size_t c = 0; c < P->ncfg; c++) {
            if (P->cfg[c].n < n)
                continue;
            cs.c = &P->cfg[c];
            cs.ci = c;
            cont_rec(&cs, 0, rem);
            P->nodes++;
        }
        if (!cs.have) {
            ok = false;
            break;
        }
        cfg_out[g] = cs.best_cfg;
        for (size_t q = 0; q < n; q++)
            asg_out[sub[q]] = (size_t)g * MAXI + cs.best[q];
    }
    free(ord);
    free(sub);
    free(nallow);
    return ok;
}

static double min_all(const struct prob *P, size_t j, int what)
{
    double best = INFINITY;
    double C = P->model->compute_slices;
    for (unsigned s = 0; s < P->ns; s++) {
        if (!allowed(P, j, s))
            continue;
        double v = what == 0   ? T(P, j, s)
                   : what == 1 ? T(P, j, s) * size_cs(P, s)
                   : what == 2 ? Dy(P, j, s)
                   : what == 3 ? Dy(P, j, s) + P->idle * T(P, j, s) * size_cs(P, s) / C
                               : -P->norm[j * P->ns + s];
        if (v < best)
            best = v;
    }
    return best;
}

struct event {
    double t;
    size_t j;
    unsigned s;
};

static int event_cmp(const void *a, const void *b)
{
    double x = ((const struct event *)a)->t, y = ((const struct event *)b)->t;
    return x < y ? -1 : x > y;
}

/* Total over jobs of the least compute-slice-seconds among sizes finishing within M. */
static double area_within(const struct prob *P, double M)
{
    double area = 0;
    for (size_t j = 0; j < P->nj; j++) {
        double best = INFINITY;
        for (unsigned s = 0; s < P->ns; s++)
            if (allowed(P, j, s) && T(P, j, s) <= M)
                best = fmin(best, T(P, j, s) * size_cs(P, s));
        area += best;
    }
    return area;
}

/*
 * Lower bounds over every plan on G GPUs (docs/plan.md). Makespan: the least M such that every
 * job fits on some size finishing within M and the jobs' least compute-slice-seconds among those
 * sizes fit into G x C x M. Energy: for a multiplier l in [0, idle/C], since G x C x M is at least
 * the area used, E >= (G idle - l G C) M + sum_j min over sizes within M of (d + l t cs); its
 * minimum over M >= the makespan bound is found by a sweep over the times t.
 */
static void bounds(const struct prob *P, unsigned G, double *mlb, double *elb, double *sub)
{
    double maxT = 0, hi = 0, nsum = 0;
    for (size_t j = 0; j < P->nj; j++) {
        maxT = fmax(maxT, min_all(P, j, 0));
        nsum -= min_all(P, j, 4);
        for (unsigned s = 0; s < P->ns; s++)
            if (allowed(P, j, s))
                hi = fmax(hi, T(P, j, s));
    }
    *sub = nsum;
    *elb = NAN;
    *mlb = NAN;
    if (P->continuous)
        return;
    double C = P->model->compute_slices, GC = (double)G * C;
    hi = fmax(hi, area_within(P, INFINITY) / GC);
    double lo = maxT;
    if (area_within(P, lo) <= GC * lo) {
        hi = lo;
    } else {
        for (int it = 0; it < 60; it++) {
            double mid = 0.5 * (lo + hi);
            if (area_within(P, mid) <= GC * mid)
                hi = mid;
            else
                lo = mid;
        }
    }
    double M0 = hi; /* feasible side of the search: a valid bound up to rounding */
    *mlb = M0;
    size_t K = 0;
    for (size_t j = 0; j < P->nj; j++)
        for (unsigned s = 0; s < P->ns; s++)
            K += allowed(P, j, s);
    struct event *ev = malloc(K * sizeof(*ev));
    double *cur = malloc(P->nj * sizeof(double));
    if (!ev || !cur) {
        free(ev);
        free(cur);
        return;
    }
    K = 0;
    for (size_t j = 0; j < P->nj; j++)
        for (unsigned s = 0; s < P->ns; s++)
            if (allowed(P, j, s))
                ev[K++] = (struct event){T(P, j, s), j, s};
    qsort(ev, K, sizeof(*ev), event_cmp);
    double best = 0;
    for (int step = 0; step <= 8; step++) {
        double l = P->idle / C * step / 8;
        for (size_t j = 0; j < P->nj; j++)
            cur[j] = INFINITY;
        double sum = 0;
        size_t k = 0, unset = P->nj;
        double val = INFINITY;
        for (; k < K && ev[k].t <= M0; k++) {
            size_t j = ev[k].j;
            double c = Dy(P, j, ev[k].s) + l * ev[k].t * size_cs(P, ev[k].s);
            if (c < cur[j]) {
                if (isinf(cur[j]))
                    unset--;
                else
                    sum -= cur[j];
                cur[j] = c;
                sum += c;
            }
        }
        double slope = (double)G * P->idle - l * GC;
        if (unset == 0)
            val = slope * M0 + sum;
        for (; k < K; k++) {
            size_t j = ev[k].j;
            double c = Dy(P, j, ev[k].s) + l * ev[k].t * size_cs(P, ev[k].s);
            if (c < cur[j]) {
                if (isinf(cur[j]))
                    unset--;
                else
                    sum -= cur[j];
                cur[j] = c;
                sum += c;
            }
            if (unset == 0)
                val = fmin(val, slope * ev[k].t + sum);
        }
        if (isfinite(val))
            best = fmax(best, val);
    }
    *elb = best;
    free(ev);
    free(cur);
}

/* The study's baseline: each job alone on a whole GPU, one after another (LPT over a fleet). */
static void baseline(const struct prob *P, unsigned G, double *M, double *E)
{
    *M = *E = NAN;
    double D = 0;
    for (size_t j = 0; j < P->nj; j++) {
        if (isnan(P->base_t[j]))
            return;
        D += P->base_d[j];
    }
    double *load = calloc(G, sizeof(double));
    size_t *ord = malloc(P->nj * sizeof(size_t));
    if (!load || !ord) {
        free(load);
        free(ord);
        return;
    }
    for (size_t j = 0; j < P->nj; j++)
        ord[j] = j;
    for (size_t gap = P->nj / 2; gap > 0; gap /= 2)
        for (size_t x = gap; x < P->nj; x++) {
            size_t v = ord[x], y = x;
            while (y >= gap && P->base_t[ord[y - gap]] < P->base_t[v]) {
                ord[y] = ord[y - gap];
                y -= gap;
            }
            ord[y] = v;
        }
    for (size_t k = 0; k < P->nj; k++) {
        unsigned lo = 0;
        for (unsigned g = 1; g < G; g++)
            if (load[g] < load[lo])
                lo = g;
        load[lo] += P->base_t[ord[k]];
    }
    double m = 0;
    for (unsigned g = 0; g < G; g++)
        m = fmax(m, load[g]);
    *M = m;
    *E = energy(P, G, m, D);
    free(load);
    free(ord);
}

static int build_plan(const struct prob *P, unsigned G, const size_t *cfg, const size_t *asg,
                      bool exact, struct mb_plan **out, struct mb_error *err)
{
    struct mb_plan *pl = calloc(1, sizeof(*pl));
    double *start = calloc(P->nj, sizeof(double));
    unsigned *remap = malloc((size_t)G * MAXI * sizeof(unsigned));
    unsigned *qpos = calloc((size_t)G * MAXI, sizeof(unsigned));
    if (!pl || !start || !remap || !qpos)
        goto nomem;
    pl->gpus = calloc(G, sizeof(*pl->gpus));
    pl->slots = calloc(P->nj, sizeof(*pl->slots));
    if (!pl->gpus || !pl->slots)
        goto nomem;
    struct metrics m = evaluate(P, cfg, asg, G, start);
    pl->objective = P->obj;
    pl->exact = exact;
    pl->count = G;
    pl->n_slots = P->nj;
    pl->idle_power_w = P->idle;
    pl->idle_rows = P->idle_rows;
    for (size_t i = 0; i < (size_t)G * MAXI; i++)
        remap[i] = UINT32_MAX;
    /* Only instances that got a job stay in the layout; the rest need not be created. */
    for (unsigned g = 0; g < G; g++) {
        const struct config *c = &P->cfg[cfg[g]];
        struct mb_plan_gpu *pg = &pl->gpus[g];
        pg->mig = c->mig;
        for (size_t i = 0; i < c->n; i++) {
            bool usedi = false;
            for (size_t j = 0; j < P->nj && !usedi; j++)
                usedi = asg[j] == (size_t)g * MAXI + i;
            if (!usedi)
                continue;
            remap[(size_t)g * MAXI + i] = (unsigned)pg->layout.n;
            if (c->mig)
                pg->layout.items[pg->layout.n] = c->layout.items[i];
            pg->layout.n++;
        }
        if (!c->mig)
            pg->layout.n = 0;
    }
    for (size_t k = 0; k < P->nj; k++) {
        size_t j = P->rank[k];
        size_t inst = asg[j];
        unsigned s = P->cfg[cfg[inst / MAXI]].size[inst % MAXI];
        struct mb_plan_slot *sl = &pl->slots[j];
        const struct mb_plan_profile *row =
            mb_plan_profiles_get(P->profiles, P->row[j * P->ns + s]);
        sl->job = j;
        sl->gpu = (unsigned)(inst / MAXI);
        sl->instance = P->cfg[cfg[inst / MAXI]].mig ? remap[inst] : 0;
        sl->order = qpos[inst]++;
        sl->profile = P->row[j * P->ns + s];
        sl->throughput = row->throughput;
        sl->normalised = NAN;
        if (P->continuous) {
            sl->start_s = sl->time_s = NAN;
            sl->dynamic_j = NAN;
            sl->normalised = P->norm[j * P->ns + s];
        } else {
            sl->start_s = start[j];
            sl->time_s = T(P, j, s);
            sl->dynamic_j = Dy(P, j, s);
            if (!isnan(P->base_t[j]))
                sl->normalised = P->base_t[j] / T(P, j, s);
        }
    }
    double mlb, elb, sub;
    bounds(P, G, &mlb, &elb, &sub);
    pl->bound_makespan_s = pl->bound_energy_j = pl->bound_throughput = NAN;
    pl->makespan_s = pl->energy_j = pl->idle_energy_j = pl->dynamic_energy_j = NAN;
    pl->base_makespan_s = pl->base_energy_j = NAN;
    pl->system_throughput = pl->power_w = NAN;
    if (P->continuous) {
        pl->system_throughput = m.S;
        pl->power_w = m.P;
        pl->base_makespan_s = NAN;
        if (!exact) {
            pl->bound_throughput = sub;
            pl->gap_pct = sub > 0 ? (sub - m.S) / sub * 100 : 0;
        }
    } else {
        pl->makespan_s = m.M;
        pl->dynamic_energy_j = m.D;
        pl->idle_energy_j = (double)G * P->idle * m.M;
        pl->energy_j = energy(P, G, m.M, m.D);
        baseline(P, G, &pl->base_makespan_s, &pl->base_energy_j);
        if (!exact) {
            pl->bound_makespan_s = mlb;
            pl->bound_energy_j = elb;
            if (P->obj == MB_PLAN_MAKESPAN)
                pl->gap_pct = mlb > 0 ? (m.M - mlb) / mlb * 100 : 0;
            else
                pl->gap_pct = elb > 0 ? (pl->energy_j - elb) / elb * 100 : 0;
        }
    }
    pl->nodes = P->nodes;
    free(start);
    free(remap);
    free(qpos);
    *out = pl;
    return MB_OK;
nomem:
    mb_plan_destroy(pl);
    free(start);
    free(remap);
    free(qpos);
    return mb_error_set(err, MB_ENOMEM, "out of memory");
}

void mb_plan_destroy(struct mb_plan *plan)
{
    if (!plan)
        return;
    free(plan->gpus);
    free(plan->slots);
    free(plan);
}

static int infeasible(const struct prob *P, unsigned G, bool exact, struct mb_error *err)
{
    double mlb, elb, sub;
    bounds(P, G, &mlb, &elb, &sub);
    bool deadlines = false;
    for (size_t j = 0; j < P->nj; j++)
        deadlines |= !isnan(P->jobs[j].deadline_s);
    const char *how = exact ? "no plan" : "the heuristic found no plan that";
    if (P->continuous)
        return mb_error_set(err, MB_EINFEASIBLE,
                            "%s gives each of the %zu continuous jobs its own instance on %u %s",
                            exact ? "no plan" : "the heuristic found no plan that", P->nj, G,
                            P->model->name);
    if (P->mcap < INFINITY)
        return mb_error_set(err, MB_EINFEASIBLE,
                            "%s meets the makespan cap of %.6g s%s (no plan can be faster than "
                            "%.6g s)",
                            how, P->mcap, deadlines ? " and every deadline" : "", mlb);
    if (P->ecap < INFINITY)
        return mb_error_set(err, MB_EINFEASIBLE,
                            "%s meets the energy cap of %.6g J%s (no plan can use less than "
                            "%.6g J)",
                            how, P->ecap, deadlines ? " and every deadline" : "", elb);
    if (deadlines)
        return mb_error_set(err, MB_EINFEASIBLE, "%s meets every deadline", how);
    return mb_error_set(err, MB_EINFEASIBLE,
                        "%s runs every job: no single layout of %s has a partition for each", how,
                        P->model->name);
}

static int solve_with(const struct mb_gpu_model *model, const struct mb_plan_profiles *profiles,
                      const struct mb_plan_job *jobs, size_t n_jobs,
                      const struct mb_plan_options *opt, bool brute, struct mb_plan **out,
                      struct mb_error *err)
{
    *out = NULL;
    struct prob P;
    size_t *cfg = NULL, *asg = NULL;
    int st = prob_init(&P, model, profiles, jobs, n_jobs, opt, err);
    if (st != MB_OK)
        goto done;
    unsigned G = opt->count;
    size_t exact_max = opt->exact_max_jobs ? opt->exact_max_jobs : 10;
    bool exact = brute || (G == 1 && n_jobs <= exact_max && !opt->heuristic);
    cfg = calloc(G, sizeof(size_t));
    asg = calloc(n_jobs, sizeof(size_t));
    if (!cfg || !asg) {
        st = mb_error_set(err, MB_ENOMEM, "out of memory");
        goto done;
    }
    bool found = false;
    if (brute)
        st = solve_brute(&P, &cfg[0], asg, &found, err);
    else if (exact)
        st = solve_exact(&P, &cfg[0], asg, &found, err);
    else if (P.continuous)
        st = solve_cont_heuristic(&P, G, cfg, asg, &found, err);
    else
        st = solve_heuristic(&P, G, cfg, asg, &found, err);
    if (st != MB_OK)
        goto done;
    if (found && !exact) {
        struct metrics m = evaluate(&P, cfg, asg, G, NULL);
        found = m.ok;
    }
    if (!found) {
        st = infeasible(&P, G, exact, err);
        goto done;
    }
    st = build_plan(&P, G, cfg, asg, exact, out, err);
    if (st == MB_OK)
        (*out)->power_limit_w = opt->power_limit_w > 0 ? opt->power_limit_w : NAN;
done:
    free(cfg);
    free(asg);
    prob_free(&P);
    return st;
}

int mb_plan_solve(const struct mb_gpu_model *model, const struct mb_plan_profiles *profiles,
                  const struct mb_plan_job *jobs, size_t n_jobs, const struct mb_plan_options *opt,
                  struct mb_plan **out, struct mb_error *err)
{
    return solve_with(model, profiles, jobs, n_jobs, opt, false, out, err);
}

int mb_plan_solve_brute(const struct mb_gpu_model *model, const struct mb_plan_profiles *profiles,
                        const struct mb_plan_job *jobs, size_t n_jobs,
                        const struct mb_plan_options *opt, struct mb_plan **out,
                        struct mb_error *err)
{
    struct mb_plan_options o = *opt;
    o.count = 1;
    return solve_with(model, profiles, jobs, n_jobs, &o, true, out, err);
}

int mb_plan_pareto(const struct mb_gpu_model *model, const struct mb_plan_profiles *profiles,
                   const struct mb_plan_job *jobs, size_t n_jobs, const struct mb_plan_options *opt,
                   struct mb_plan **out, size_t cap, size_t *n, struct mb_error *err)
{
    *n = 0;
    struct mb_plan_options o = *opt;
    o.objective = MB_PLAN_ENERGY;
    o.energy_cap_j = NAN;
    o.makespan_cap_s = NAN;
    while (*n < cap) {
        struct mb_plan *pl = NULL;
        int st = mb_plan_solve(model, profiles, jobs, n_jobs, &o, &pl, err);
        if (st == MB_EINFEASIBLE && *n > 0)
            break;
        if (st != MB_OK) {
            for (size_t i = 0; i < *n; i++)
                mb_plan_destroy(out[i]);
            *n = 0;
            return st;
        }
        if (pl->objective == MB_PLAN_THROUGHPUT) {
            mb_plan_destroy(pl);
            return mb_error_set(err, MB_EINVAL, "--pareto needs finite jobs");
        }
        /* A heuristic may return a point no faster than the last; the front ends there. */
        if (*n > 0 && !(pl->makespan_s < out[*n - 1]->makespan_s)) {
            mb_plan_destroy(pl);
            break;
        }
        out[(*n)++] = pl;
        o.makespan_cap_s = pl->makespan_s * (1 - 1e-6);
    }
    if (err)
        mb_error_clear(err);
    return MB_OK;
}
