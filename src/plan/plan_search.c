/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The fleet search for finite jobs (docs/plan.md, "Search"): several starts (one layout on every
 * GPU, layouts mixed to the sizes the bounds favour, longest-first list scheduling, a cover that
 * gives every job a partition, and for the makespan objective the energy objective's plan), each
 * improved by per-GPU layout changes, job moves and swaps; then, on every thread, ruin and
 * recreate of a few GPUs followed by local improvement until the iteration budget or the time
 * limit runs out. Deterministic for a given seed and thread count unless the time limit stops it.
 */
#include "plan/plan_heur.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "migbench/clock.h"

#define DEFAULT_TIME_LIMIT_S 5.0
#define MAX_THREADS 64
/* The share of the budget that the other objective's search (energy for the makespan objective,
   makespan for the energy objective) may use. */
#define OTHER_SHARE 0.1
/* The share of the makespan search's own budget after which a thread with a plan runs no other
   start (at 10,000 jobs one start with its improvement takes about a second). */
#define STARTS_SHARE 0.3

static double now_s(void)
{
    return (double)mb_clock_monotonic_ns() * 1e-9;
}

static bool past(double deadline)
{
    return deadline > 0 && now_s() > deadline;
}

/* ---- starts ---------------------------------------------------------------------------------- */

/* Places every job, longest first, on the current configurations; false if one fits nowhere. */
static bool place_all(struct hs *h)
{
    mb__hs_reset(h, h->cfg);
    for (size_t k = 0; k < h->P->nj; k++)
        if (!mb__hs_place(h, h->order[k]))
            return false;
    return true;
}

/* The size job j takes for a target makespan: the bound's favourite among sizes within it. */
static unsigned demand_size(const struct prob *P, size_t j, double target, bool area)
{
    double lam = P->idle / P->model->compute_slices;
    unsigned bs = UINT32_MAX, fast = UINT32_MAX;
    double bv = INFINITY;
    for (unsigned s = 0; s < P->ns; s++) {
        if (!allowed(P, j, s))
            continue;
        if (fast == UINT32_MAX || T(P, j, s) < T(P, j, fast))
            fast = s;
        if (T(P, j, s) > target)
            continue;
        double a = T(P, j, s) * mb__plan_size_cs(P, s);
        double v = area ? a : Dy(P, j, s) + lam * a;
        if (v < bv) {
            bv = v;
            bs = s;
        }
    }
    return bs == UINT32_MAX ? fast : bs;
}

/*
 * Configurations for a target makespan: each job takes demand_size; the instances each size then
 * needs (its total time over the target) are covered GPU by GPU with the configuration that
 * covers the most compute slices of what is still needed. GPUs first..G-1 only.
 */
static void demand_cfg(struct hs *h, unsigned first, double target, bool area, size_t fallback)
{
    const struct prob *P = h->P;
    double load[MB_MAX_PROFILES + 1] = {0}, need[MB_MAX_PROFILES + 1];
    for (size_t j = 0; j < P->nj; j++) {
        unsigned s = demand_size(P, j, target, area);
        if (s != UINT32_MAX)
            load[s] += T(P, j, s);
    }
    for (unsigned s = 0; s < P->ns; s++)
        need[s] = ceil(load[s] / target - 1e-9);
    for (unsigned g = first; g < h->G; g++) {
        size_t bc = NONE;
        double bcov = 0;
        for (size_t c = 0; c < P->ncfg; c++) {
            const struct config *cf = &P->cfg[c];
            double taken[MB_MAX_PROFILES + 1] = {0}, cov = 0;
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
        h->cfg[g] = bc != NONE ? bc : fallback;
        if (bc == NONE)
            continue;
        const struct config *cf = &P->cfg[bc];
        for (size_t i = 0; i < cf->n; i++)
            if (need[cf->size[i]] > 0)
                need[cf->size[i]] -= 1;
    }
}

/* The configuration that, on every GPU, gives the cheapest greedy plan (NONE if none holds all). */
static size_t best_uniform(struct hs *h, double deadline)
{
    size_t best_c = NONE;
    double best = INFINITY;
    /* Each trial places every job: skipped on very large instances, where mixed starts do. */
    if ((double)h->P->ncfg * (double)h->P->nj > 4e6)
        return NONE;
    for (size_t c = 0; c < h->P->ncfg && !past(deadline); c++) {
        for (unsigned g = 0; g < h->G; g++)
            h->cfg[g] = c;
        if (!place_all(h))
            continue;
        double cost = mb__hs_cur(h);
        if (cost < best) {
            best = cost;
            best_c = c;
        }
    }
    return best_c;
}

/* ---- improvement ----------------------------------------------------------------------------- */

/* Layout changes, moves and busiest-instance steps until none helps (bounded rounds). */
static void improve(struct hs *h, size_t *buf, double deadline)
{
    for (int round = 0; round < 6 && !past(deadline); round++) {
        size_t changed = mb__hs_configs(h, buf, deadline);
        for (int pass = 0; pass < 20 && !past(deadline); pass++) {
            size_t m = mb__hs_moves(h, NULL, h->P->nj);
            m += mb__hs_critical(h, 4 * (size_t)h->G * MAXI, deadline);
            changed += m;
            if (m == 0)
                break;
        }
        if (changed == 0)
            break;
    }
}

/* ---- workers --------------------------------------------------------------------------------- */

struct shared {
    const struct prob *P;
    unsigned G;
    enum mb_plan_objective obj;
    const size_t *order, *rk;
    double deadline;
    double starts_until; /* a worker with a plan starts no other start after this (0: none) */
    double mlb;
    size_t iters; /* ruin-and-recreate steps per worker */
    unsigned threads;
    uint64_t seed;
    const size_t *cover; /* configurations that give every job a partition, or NULL */
    size_t n_cover;
    const size_t *given_cfg, *given_asg; /* a plan to start from, or NULL */
    size_t n_starts;
};

struct worker {
    const struct shared *S;
    unsigned id;
    size_t *cfg, *asg; /* best found */
    double cost;
    bool found;
    bool stopped; /* by the time limit */
    size_t nodes;
    int st;
};

/* Start k of the list (docs/plan.md); false when it cannot place every job. */
static bool start(struct hs *h, const struct shared *S, size_t k, double deadline)
{
    static const double targets[] = {1.0, 1.1, 1.25};
    size_t fallback = 0;
    bool mk = S->obj == MB_PLAN_MAKESPAN;
    if (k == 0 && S->given_cfg) {
        mb__hs_load(h, S->given_cfg, S->given_asg);
        return true;
    }
    k -= S->given_cfg ? 1 : 0;
    if (k == 1) {
        size_t c = best_uniform(h, deadline);
        if (c == NONE)
            return false;
        for (unsigned g = 0; g < h->G; g++)
            h->cfg[g] = c;
        return place_all(h);
    }
    k -= k > 1;
    if (k < 2 * sizeof(targets) / sizeof(targets[0])) {
        size_t t = k / 2;
        /* Even starts: the objective's sizes; odd: the other objective's (least area). */
        bool area = (k % 2 == 0) ? mk : !mk;
        for (unsigned g = 0; g < S->n_cover && g < h->G; g++)
            h->cfg[g] = S->cover[g];
        demand_cfg(h, (unsigned)(S->n_cover < h->G ? S->n_cover : h->G), targets[t] * S->mlb, area,
                   fallback);
        return place_all(h);
    }
    return false;
}

static size_t n_starts(const struct shared *S)
{
    return (S->given_cfg ? 1 : 0) + 1 + 6;
}

/*
 * The x-th start to run. The makespan objective runs the strongest first (on bench_plan_fleet's
 * fleets: the energy objective's plan, the mixed layouts for the energy objective's sizes at 1.0
 * and 1.25 times the bound, the best single layout, then the rest), so that each thread has a
 * good one when the clock cuts the list.
 */
static size_t start_order(const struct shared *S, size_t x)
{
    static const size_t mk[] = {0, 3, 7, 2, 6, 4, 5, 1};
    if (S->obj != MB_PLAN_MAKESPAN || !S->given_cfg || x >= sizeof(mk) / sizeof(mk[0]))
        return x;
    return mk[x];
}

/* The compute-slice seconds GPU g's instances stand idle before the makespan M. */
static double gpu_slack(const struct hs *h, unsigned g, double M)
{
    const struct config *cf = &h->P->cfg[h->cfg[g]];
    double idle = 0;
    for (size_t i = 0; i < cf->n; i++)
        idle += (M - h->B[(size_t)g * MAXI + i]) * cf->cs[i];
    return idle;
}

/* Of a few random GPUs, the one with the most idle compute before the makespan M. */
static unsigned slack_gpu(struct hs *h, double M)
{
    unsigned best = (unsigned)(mb__hs_rand(h) % h->G);
    double bv = gpu_slack(h, best, M);
    for (int t = 0; t < 3; t++) {
        unsigned g = (unsigned)(mb__hs_rand(h) % h->G);
        double v = gpu_slack(h, g, M);
        if (v > bv) {
            bv = v;
            best = g;
        }
    }
    return best;
}

/*
 * Ruin and recreate: empties a few GPUs (one of them the busiest), gives them other layouts and
 * puts their jobs back, longest first, wherever the greedy rule says; then local steps. Under the
 * makespan objective half the emptied GPUs take the layout of a random GPU of the fleet, and a
 * job goes, among the sizes where it still ends within the makespan before the ruin, to the one
 * where it takes the least area (earliest end only when none): the plan's instances are all near
 * the makespan, so what lowers it is less area for the same work.
 */
static bool perturb(struct hs *h, size_t *mine, double deadline)
{
    const struct prob *P = h->P;
    double target = h->obj == MB_PLAN_MAKESPAN ? mb__hs_makespan(h) : 0;
    unsigned k = h->G < 3 ? h->G : 2 + (unsigned)(mb__hs_rand(h) % 2);
    unsigned gs[4];
    size_t n = 0;
    /* Under the makespan objective, every other step ruins, next to the busiest GPU, the one with
       the most idle compute of a few (its small instances that end early): its new layout and
       the busiest GPU's jobs are placed together. */
    bool pull = h->obj == MB_PLAN_MAKESPAN && mb__hs_rand(h) % 2 == 0;
    for (unsigned q = 0; q < k; q++) {
        unsigned g =
            q == 0 && h->mn ? (unsigned)(h->mh[0] / MAXI) : (unsigned)(mb__hs_rand(h) % h->G);
        if (q == 1 && pull)
            g = slack_gpu(h, target);
        bool dup = false;
        for (unsigned r = 0; r < q; r++)
            dup |= gs[r] == g;
        if (dup) {
            k = q;
            break;
        }
        gs[q] = g;
    }
    for (unsigned q = 0; q < k; q++) {
        for (size_t i = 0; i < MAXI; i++)
            for (size_t j = h->head[(size_t)gs[q] * MAXI + i]; j != NONE;) {
                size_t nx = h->next[j];
                mine[n++] = j;
                mb__hs_take(h, j);
                j = nx;
            }
        size_t c = (size_t)(mb__hs_rand(h) % P->ncfg);
        if (h->obj == MB_PLAN_MAKESPAN && mb__hs_rand(h) % 2 == 0)
            c = h->cfg[mb__hs_rand(h) % h->G]; /* a layout the fleet already uses */
        else if (mb__hs_rand(h) % 4 == 0)
            c = h->cfg[gs[q]];
        mb__hs_set_cfg(h, gs[q], c);
    }
    /* Longest first. */
    for (size_t x = 1; x < n; x++) {
        size_t v = mine[x], y = x;
        while (y > 0 && h->rk[mine[y - 1]] > h->rk[v]) {
            mine[y] = mine[y - 1];
            y--;
        }
        mine[y] = v;
    }
    h->target = target;
    bool placed = true;
    for (size_t q = 0; q < n && placed; q++)
        placed = mb__hs_place(h, mine[q]);
    h->target = 0;
    if (!placed)
        return false;
    for (int pass = 0; pass < 5; pass++)
        if (mb__hs_moves(h, mine, n) == 0)
            break;
    mb__hs_critical(h, 2 * n + 16, deadline);
    return true;
}

static void keep(struct worker *w, const struct hs *h)
{
    memcpy(w->cfg, h->cfg, h->G * sizeof(size_t));
    memcpy(w->asg, h->asg, h->P->nj * sizeof(size_t));
    w->cost = mb__hs_cur(h);
    w->found = true;
}

/* Whether the state after a step is accepted over the state before it (its cost cur). */
static bool accept(const struct hs *h, double cur)
{
    return !mb__plan_lt(cur, mb__hs_cur(h));
}

static void ils(struct worker *w, struct hs *h, size_t *buf, size_t *mine)
{
    const struct shared *S = w->S;
    /* A whole-fleet improvement pass costs many steps; under the makespan objective the steps
       themselves do the work (at 1,000 jobs / 64 GPUs, one pass per 256 steps: the same plan
       quality at a third of the CPU time of one per 16). */
    size_t improve_every = S->obj == MB_PLAN_MAKESPAN ? 256 : 16;
    for (size_t it = 0; it < S->iters; it++) {
        if ((it & 7) == 0 && past(S->deadline)) {
            w->stopped = true;
            break;
        }
        double cur = mb__hs_cur(h);
        mb__hs_mark(h);
        bool ok = perturb(h, mine, S->deadline);
        if (ok && it % improve_every == improve_every - 1)
            improve(h, buf, S->deadline);
        if (!ok || !accept(h, cur)) {
            if (!mb__hs_undo(h))
                mb__hs_load(h, w->cfg, w->asg);
            continue;
        }
        h->logging = false;
        if (mb__plan_lt(mb__hs_cur(h), w->cost))
            keep(w, h);
    }
}

static void *work(void *arg)
{
    struct worker *w = arg;
    const struct shared *S = w->S;
    const struct prob *P = S->P;
    struct hs h;
    size_t *buf = malloc(P->nj * sizeof(size_t));
    size_t *mine = malloc(P->nj * sizeof(size_t));
    if (mb__hs_init(&h, P, S->G, S->obj, S->order, S->rk) != MB_OK || !buf || !mine) {
        w->st = MB_ENOMEM;
        goto out;
    }
    h.rng ^= S->seed * 0x9e3779b97f4a7c15ull + w->id * 0xbf58476d1ce4e5b9ull;
    for (size_t x = w->id; x < S->n_starts; x += S->threads) {
        if (w->found && past(S->deadline)) {
            w->stopped = true;
            break;
        }
        if (w->found && past(S->starts_until)) {
            w->stopped = true; /* the rest of the budget goes to ruin and recreate */
            break;
        }
        size_t k = start_order(S, x);
        if (!start(&h, S, k, S->deadline))
            continue;
        improve(&h, buf, S->deadline);
        if (!w->found || mb__plan_lt(mb__hs_cur(&h), w->cost))
            keep(w, &h);
    }
    if (w->found) {
        mb__hs_load(&h, w->cfg, w->asg);
        ils(w, &h, buf, mine);
    }
out:
    w->nodes = h.nodes;
    mb__hs_free(&h);
    free(buf);
    free(mine);
    return NULL;
}

/* ---- driver ---------------------------------------------------------------------------------- */

static unsigned thread_count(const struct mb_plan_options *opt, size_t n_starts)
{
    long n = opt->threads ? (long)opt->threads : sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1)
        n = 1;
    if (n > MAX_THREADS)
        n = MAX_THREADS;
    (void)n_starts;
    return (unsigned)n;
}

/* Runs the workers; the best plan (ties: the lowest worker) into cfg_out / asg_out. */
static int run_workers(struct shared *S, size_t *cfg_out, size_t *asg_out, bool *found,
                       double *cost, bool *stopped, size_t *nodes)
{
    const struct prob *P = S->P;
    struct worker w[MAX_THREADS];
    pthread_t th[MAX_THREADS];
    bool started[MAX_THREADS] = {false};
    int st = MB_OK;
    S->n_starts = n_starts(S);
    memset(w, 0, sizeof(w));
    for (unsigned t = 0; t < S->threads; t++) {
        w[t].S = S;
        w[t].id = t;
        w[t].cfg = malloc(S->G * sizeof(size_t));
        w[t].asg = malloc(P->nj * sizeof(size_t));
        if (!w[t].cfg || !w[t].asg)
            st = MB_ENOMEM;
    }
    for (unsigned t = 1; st == MB_OK && t < S->threads; t++)
        started[t] = pthread_create(&th[t], NULL, work, &w[t]) == 0;
    if (st == MB_OK)
        work(&w[0]);
    for (unsigned t = 1; t < S->threads; t++) {
        if (started[t])
            pthread_join(th[t], NULL);
        else if (st == MB_OK)
            work(&w[t]); /* no thread: the same work, here */
    }
    for (unsigned t = 0; t < S->threads && st == MB_OK; t++) {
        st = w[t].st;
        *nodes += w[t].nodes;
        *stopped |= w[t].stopped;
        if (w[t].found && (!*found || mb__plan_lt(w[t].cost, *cost))) {
            *found = true;
            *cost = w[t].cost;
            memcpy(cfg_out, w[t].cfg, S->G * sizeof(size_t));
            memcpy(asg_out, w[t].asg, P->nj * sizeof(size_t));
        }
    }
    for (unsigned t = 0; t < S->threads; t++) {
        free(w[t].cfg);
        free(w[t].asg);
    }
    return st;
}

/* Jobs longest first (by their least time); rk[j] is j's position. */
static void lpt_order(const struct prob *P, size_t *order, size_t *rk, double *key)
{
    for (size_t j = 0; j < P->nj; j++) {
        double mt = INFINITY;
        for (unsigned s = 0; s < P->ns; s++)
            if (allowed(P, j, s) && T(P, j, s) < mt)
                mt = T(P, j, s);
        key[j] = mt;
        order[j] = j;
    }
    /* Shell sort (ties by index: a stable order, whatever the gaps do). */
    for (size_t gap = P->nj / 2; gap > 0; gap /= 2)
        for (size_t x = gap; x < P->nj; x++) {
            size_t v = order[x], y = x;
            while (y >= gap && (key[order[y - gap]] < key[v] ||
                                (key[order[y - gap]] == key[v] && order[y - gap] > v))) {
                order[y] = order[y - gap];
                y -= gap;
            }
            order[y] = v;
        }
    for (size_t k = 0; k < P->nj; k++)
        rk[order[k]] = k;
}

/* One search under objective obj; the cover is used when the plain starts place nothing. */
static int search(struct shared *S, size_t *cfg_out, size_t *asg_out, bool *found,
                  struct mb_plan_search *info)
{
    double cost = INFINITY;
    size_t nodes = 0;
    bool stopped = false;
    *found = false;
    int st = run_workers(S, cfg_out, asg_out, found, &cost, &stopped, &nodes);
    if (st == MB_OK && !*found) {
        size_t *cover = malloc(S->G * sizeof(size_t));
        size_t n = 0;
        if (!cover)
            return MB_ENOMEM;
        enum cover_result cr = mb__plan_cover(S->P, S->G, cover, &n);
        info->cover = cr;
        if (cr == COVER_FOUND) {
            S->cover = cover;
            S->n_cover = n;
            st = run_workers(S, cfg_out, asg_out, found, &cost, &stopped, &nodes);
            S->cover = NULL;
            S->n_cover = 0;
        }
        free(cover);
    }
    info->nodes += nodes;
    info->stopped |= stopped;
    return st;
}

/* Whether plan a is better than plan b under the problem's objective (caps and deadlines met
   first). */
static bool beats(const struct prob *P, unsigned G, const size_t *acfg, const size_t *aasg,
                  const size_t *bcfg, const size_t *basg)
{
    struct metrics ma = mb__plan_evaluate(P, acfg, aasg, G, NULL);
    struct metrics mb = mb__plan_evaluate(P, bcfg, basg, G, NULL);
    if (ma.ok != mb.ok)
        return ma.ok;
    double pa, sa, pb, sb;
    mb__plan_objective(P, G, &ma, &pa, &sa);
    mb__plan_objective(P, G, &mb, &pb, &sb);
    return mb__plan_better(pa, sa, pb, sb);
}

int mb__plan_solve_heuristic(struct prob *P, unsigned G, const struct mb_plan_options *opt,
                             size_t *cfg_out, size_t *asg_out, bool *found,
                             struct mb_plan_search *info, struct mb_error *err)
{
    double ts = now_s(), t0 = info->t0 > 0 ? info->t0 : ts;
    /* The limit counts from the solve's start; the last tenth is left for building the plan. */
    double limit = 0.9 * (opt->time_limit_s > 0 ? opt->time_limit_s : DEFAULT_TIME_LIMIT_S);
    size_t *order = malloc(P->nj * sizeof(size_t));
    size_t *rk = malloc(P->nj * sizeof(size_t));
    double *key = malloc(P->nj * sizeof(double));
    size_t *ecfg = malloc(G * sizeof(size_t));
    size_t *easg = malloc(P->nj * sizeof(size_t));
    int st = MB_OK;
    *found = false;
    if (!order || !rk || !key || !ecfg || !easg) {
        st = MB_ENOMEM;
        goto done;
    }
    lpt_order(P, order, rk, key);
    double mlb, elb, sub;
    mb__plan_bounds(P, G, &mlb, &elb, &sub);
    struct shared S = {.P = P,
                       .G = G,
                       .order = order,
                       .rk = rk,
                       .mlb = mlb > 0 ? mlb : 1,
                       .seed = opt->seed,
                       .threads = thread_count(opt, 0)};
    /* At 10,000 jobs / 512 GPUs a thread makes about 5,000 makespan steps a second: 20 x G
       ended that search at 6.5 s of a 10 s budget, still improving. */
    S.iters = 3000 + 100 * (size_t)G;
    info->threads = S.threads;
    info->cover = COVER_UNKNOWN;
    /*
     * Both objectives run the same two searches, the energy objective's and then the makespan
     * objective's from the energy plan (one more start), and return the better of the two plans
     * on their objective: the makespan plan is never longer than the energy plan, and the energy
     * plan never uses more energy than the makespan plan (a shorter plan can use less: the idle
     * energy it saves can outweigh the dynamic energy it adds). The other objective's search
     * gets OTHER_SHARE of the budget. Given as a start to the energy search, the makespan plan
     * led it to a worse plan on a small fleet (+0.49 % over CBC's optimum, from 0).
     */
    S.obj = MB_PLAN_ENERGY;
    S.deadline = t0 + limit * (P->obj == MB_PLAN_ENERGY ? 1 - OTHER_SHARE : OTHER_SHARE);
    bool efound = false;
    st = search(&S, ecfg, easg, &efound, info);
    if (st == MB_OK && efound) {
        S.given_cfg = ecfg;
        S.given_asg = easg;
    }
    S.obj = MB_PLAN_MAKESPAN;
    S.deadline = t0 + limit;
    double t = now_s();
    S.starts_until = t + STARTS_SHARE * (S.deadline - t);
    if (st == MB_OK)
        st = search(&S, cfg_out, asg_out, found, info);
    /* The objective's own search's plan unless the other is better on the objective. */
    bool energy_plan = efound && (!*found || (P->obj == MB_PLAN_MAKESPAN
                                                  ? beats(P, G, ecfg, easg, cfg_out, asg_out)
                                                  : !beats(P, G, cfg_out, asg_out, ecfg, easg)));
    if (st == MB_OK && energy_plan) {
        memcpy(cfg_out, ecfg, G * sizeof(size_t));
        memcpy(asg_out, easg, P->nj * sizeof(size_t));
        *found = true;
    }
    info->seconds = now_s() - ts;
done:
    free(order);
    free(rk);
    free(key);
    free(ecfg);
    free(easg);
    if (st == MB_ENOMEM)
        return mb_error_set(err, MB_ENOMEM, "out of memory");
    return st;
}
