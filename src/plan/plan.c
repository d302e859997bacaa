/* SPDX-License-Identifier: Apache-2.0 */
/* The planner's entry points: the search chosen, the plan built from its answer, the front. */
#include "migbench/plan.h"
#include "migbench/clock.h"
#include "plan/plan_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One GPU with at most this many jobs (--exact-max): the exact search. */
#define EXACT_MAX_DEFAULT 16
/* Up to this many jobs the exact search runs alone; beyond, seeded and under EXACT_NODES. */
#define EXACT_PLAIN 10
#define EXACT_NODES ((size_t)20 * 1000 * 1000)

/* Only instances that got a job stay in GPU g's layout; remap[] gets their new index. */
static void build_layouts(const struct prob *P, unsigned G, const size_t *cfg, const size_t *asg,
                          struct mb_plan *pl, unsigned *remap, unsigned char *used)
{
    size_t I = (size_t)G * MAXI;
    memset(used, 0, I);
    for (size_t j = 0; j < P->nj; j++)
        used[asg[j]] = 1;
    for (size_t i = 0; i < I; i++)
        remap[i] = UINT32_MAX;
    for (unsigned g = 0; g < G; g++) {
        const struct config *c = &P->cfg[cfg[g]];
        struct mb_plan_gpu *pg = &pl->gpus[g];
        pg->mig = c->mig;
        for (size_t i = 0; i < c->n; i++) {
            if (!used[(size_t)g * MAXI + i])
                continue;
            remap[(size_t)g * MAXI + i] = (unsigned)pg->layout.n;
            if (c->mig)
                pg->layout.items[pg->layout.n] = c->layout.items[i];
            pg->layout.n++;
        }
        if (!c->mig)
            pg->layout.n = 0;
    }
}

static void fill_slots(const struct prob *P, const size_t *cfg, const size_t *asg,
                       const double *start, const unsigned *remap, unsigned *qpos,
                       struct mb_plan *pl)
{
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
}

static void fill_totals(const struct prob *P, unsigned G, bool exact, const struct metrics *m,
                        struct mb_plan *pl)
{
    double mlb, elb, sub;
    mb__plan_bounds(P, G, &mlb, &elb, &sub);
    pl->bound_makespan_s = pl->bound_energy_j = pl->bound_throughput = NAN;
    pl->makespan_s = pl->energy_j = pl->idle_energy_j = pl->dynamic_energy_j = NAN;
    pl->base_makespan_s = pl->base_energy_j = NAN;
    pl->system_throughput = pl->power_w = NAN;
    if (P->continuous) {
        pl->system_throughput = m->S;
        pl->power_w = m->P;
        if (!exact) {
            pl->bound_throughput = sub;
            pl->gap_pct = sub > 0 ? (sub - m->S) / sub * 100 : 0;
        }
        return;
    }
    pl->makespan_s = m->M;
    pl->dynamic_energy_j = m->D;
    pl->idle_energy_j = (double)G * P->idle * m->M;
    pl->energy_j = mb__plan_energy(P, G, m->M, m->D);
    mb__plan_baseline(P, G, &pl->base_makespan_s, &pl->base_energy_j);
    if (!exact) {
        pl->bound_makespan_s = mlb;
        pl->bound_energy_j = elb;
        if (P->obj == MB_PLAN_MAKESPAN)
            pl->gap_pct = mlb > 0 ? (m->M - mlb) / mlb * 100 : 0;
        else
            pl->gap_pct = elb > 0 ? (pl->energy_j - elb) / elb * 100 : 0;
    }
}

struct pev {
    unsigned gpu;
    double t, w; /* +w at a start, -w at an end */
};

static int pev_cmp(const void *a, const void *b)
{
    const struct pev *x = a, *y = b;
    if (x->gpu != y->gpu)
        return x->gpu < y->gpu ? -1 : 1;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    return (x->w > y->w) - (x->w < y->w); /* ends (negative) before starts */
}

/*
 * Each GPU's highest modelled power: idle plus the power above idle of the jobs running at the
 * same moment (every job of a continuous plan runs at once); flagged where it exceeds the
 * GPU's limit. Returns MB_ENOMEM or MB_OK.
 */
int mb__plan_peak_power(const struct prob *P, struct mb_plan *pl)
{
    size_t n = 0;
    struct pev *ev = malloc(2 * P->nj * sizeof(*ev) + 1);
    if (!ev)
        return MB_ENOMEM;
    for (size_t j = 0; j < P->nj; j++) {
        const struct mb_plan_slot *sl = &pl->slots[j];
        double w = P->continuous ? sl->dynamic_j : 0;
        if (P->continuous) {
            unsigned s = 0;
            while (P->row[j * P->ns + s] != sl->profile)
                s++;
            w = Dy(P, j, s);
            ev[n++] = (struct pev){sl->gpu, 0, w};
            continue;
        }
        w = sl->time_s > 0 ? sl->dynamic_j / sl->time_s : 0;
        ev[n++] = (struct pev){sl->gpu, sl->start_s, w};
        ev[n++] = (struct pev){sl->gpu, sl->start_s + sl->time_s, -w};
    }
    qsort(ev, n, sizeof(*ev), pev_cmp);
    for (unsigned g = 0; g < pl->count; g++)
        pl->gpus[g].peak_power_w = P->idle;
    pl->over_limit = 0;
    double cur = 0;
    for (size_t k = 0; k < n; k++) {
        if (k == 0 || ev[k].gpu != ev[k - 1].gpu)
            cur = 0;
        cur += ev[k].w;
        struct mb_plan_gpu *pg = &pl->gpus[ev[k].gpu];
        pg->peak_power_w = fmax(pg->peak_power_w, P->idle + cur);
    }
    for (unsigned g = 0; g < pl->count; g++) {
        struct mb_plan_gpu *pg = &pl->gpus[g];
        pg->over_limit =
            isfinite(pg->power_limit_w) && pg->peak_power_w > pg->power_limit_w * (1 + 1e-9);
        pl->over_limit += pg->over_limit;
    }
    free(ev);
    return MB_OK;
}

static int build_plan(const struct prob *P, unsigned G, const size_t *cfg, const size_t *asg,
                      bool exact, struct mb_plan **out, struct mb_error *err)
{
    size_t I = (size_t)G * MAXI;
    struct mb_plan *pl = calloc(1, sizeof(*pl));
    double *start = calloc(P->nj, sizeof(double));
    unsigned *remap = malloc(I * sizeof(unsigned));
    unsigned *qpos = calloc(I, sizeof(unsigned));
    unsigned char *used = malloc(I);
    if (!pl || !start || !remap || !qpos || !used)
        goto nomem;
    pl->gpus = calloc(G, sizeof(*pl->gpus));
    pl->slots = calloc(P->nj, sizeof(*pl->slots));
    if (!pl->gpus || !pl->slots)
        goto nomem;
    struct metrics m = mb__plan_evaluate(P, cfg, asg, G, start);
    pl->objective = P->obj;
    pl->exact = exact;
    pl->count = G;
    pl->n_slots = P->nj;
    pl->idle_power_w = P->idle;
    pl->idle_rows = P->idle_rows;
    build_layouts(P, G, cfg, asg, pl, remap, used);
    fill_slots(P, cfg, asg, start, remap, qpos, pl);
    fill_totals(P, G, exact, &m, pl);
    for (unsigned g = 0; g < G; g++)
        pl->gpus[g].power_limit_w = P->cap_w > 0 ? P->cap_w : NAN;
    if (mb__plan_peak_power(P, pl) != MB_OK)
        goto nomem;
    pl->nodes = P->nodes;
    free(start);
    free(remap);
    free(qpos);
    free(used);
    *out = pl;
    return MB_OK;
nomem:
    mb_plan_destroy(pl);
    free(start);
    free(remap);
    free(qpos);
    free(used);
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

/* No plan runs every job: a proof from the cover search, or an honest "not decided". */
static int no_cover(const struct prob *P, unsigned G, struct mb_error *err)
{
    size_t *cover = malloc(G * sizeof(size_t)), n = 0;
    enum cover_result cr = cover ? mb__plan_cover(P, G, cover, &n) : COVER_UNKNOWN;
    free(cover);
    if (cr == COVER_NONE)
        return mb__plan_cover_explain(P, G, err);
    return mb_error_set(err, MB_EINFEASIBLE,
                        "the search found no plan that runs every job on %u %s (whether one "
                        "exists was not decided)",
                        G, P->model->name);
}

static int infeasible(const struct prob *P, unsigned G, bool exact, struct mb_error *err)
{
    double mlb, elb, sub;
    mb__plan_bounds(P, G, &mlb, &elb, &sub);
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
    return no_cover(P, G, err);
}

/*
 * One GPU, exactly: up to EXACT_PLAIN jobs a plain branch and bound; more, the fleet search's plan
 * first as the incumbent to beat (tight pruning from the start) and a node limit, past which the
 * plan is the best found and is not called exact (*exact false).
 */
static int solve_exact(struct prob *P, const struct mb_plan_options *opt, size_t *cfg, size_t *asg,
                       bool *found, bool *exact, struct mb_plan_search *info, struct mb_error *err)
{
    bool complete = true;
    if (P->nj <= EXACT_PLAIN || P->continuous)
        return mb__plan_solve_exact(P, &cfg[0], asg, found, 0, &complete, err);
    int st = mb__plan_solve_heuristic(P, 1, opt, cfg, asg, found, info, err);
    if (st == MB_OK && *found && !mb__plan_evaluate(P, cfg, asg, 1, NULL).ok)
        *found = false;
    if (st == MB_OK)
        st = mb__plan_solve_exact(P, &cfg[0], asg, found, EXACT_NODES, &complete, err);
    *exact = complete;
    return st;
}

static int solve_with(const struct mb_gpu_model *model, const struct mb_plan_profiles *profiles,
                      const struct mb_plan_job *jobs, size_t n_jobs,
                      const struct mb_plan_options *opt, bool brute, struct mb_plan **out,
                      struct mb_error *err)
{
    *out = NULL;
    struct prob P;
    size_t *cfg = NULL, *asg = NULL;
    /* The time limit counts from here: set-up and bounds are part of the budget. */
    double t0 = (double)mb_clock_monotonic_ns() * 1e-9;
    int st = mb__plan_prob_init(&P, model, profiles, jobs, n_jobs, opt, err);
    if (st != MB_OK)
        goto done;
    unsigned G = opt->count;
    size_t exact_max = opt->exact_max_jobs ? opt->exact_max_jobs : EXACT_MAX_DEFAULT;
    bool exact = brute || (G == 1 && n_jobs <= exact_max && !opt->heuristic);
    cfg = calloc(G, sizeof(size_t));
    asg = calloc(n_jobs, sizeof(size_t));
    if (!cfg || !asg) {
        st = mb_error_set(err, MB_ENOMEM, "out of memory");
        goto done;
    }
    /* The bounds once: the search and the plan both use them. */
    mb__plan_bounds(&P, G, &P.b_mlb, &P.b_elb, &P.b_sub);
    P.bounded = true;
    P.bounded_G = G;
    bool found = false;
    struct mb_plan_search info;
    memset(&info, 0, sizeof(info));
    info.t0 = t0;
    if (brute)
        st = mb__plan_solve_brute(&P, &cfg[0], asg, &found, err);
    else if (exact)
        st = solve_exact(&P, opt, cfg, asg, &found, &exact, &info, err);
    else if (P.continuous)
        st = mb__plan_solve_cont(&P, G, cfg, asg, &found, err);
    else
        st = mb__plan_solve_heuristic(&P, G, opt, cfg, asg, &found, &info, err);
    if (st != MB_OK)
        goto done;
    if (found && !exact) {
        struct metrics m = mb__plan_evaluate(&P, cfg, asg, G, NULL);
        found = m.ok;
    }
    if (!found) {
        st = infeasible(&P, G, exact, err);
        goto done;
    }
    P.nodes += info.nodes;
    st = build_plan(&P, G, cfg, asg, exact, out, err);
    if (st == MB_OK) {
        (*out)->power_limit_w = opt->power_limit_w > 0 ? opt->power_limit_w : NAN;
        /* An exact plan reports no fleet search, even when one gave its first incumbent. */
        (*out)->search_s = exact ? 0 : info.seconds;
        (*out)->threads = exact ? 0 : info.threads;
        (*out)->time_limited = !exact && info.stopped;
    }
done:
    free(cfg);
    free(asg);
    mb__plan_prob_free(&P);
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

bool mb_plan_limits_differ(const struct mb_plan *plan)
{
    double a = plan->count ? plan->gpus[0].power_limit_w : NAN;
    for (unsigned g = 1; g < plan->count; g++) {
        double b = plan->gpus[g].power_limit_w;
        bool da = !(a > 0), db = !(b > 0); /* NaN or 0: the default limit */
        if (da != db || (!da && a != b))
            return true;
    }
    return false;
}
