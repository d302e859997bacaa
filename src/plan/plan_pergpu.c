/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One power limit per GPU (--power-limits with several candidates, finite jobs on a fleet). From
 * each shared-limit plan a local search with two moves: "GPU g takes limit k" (each of its jobs
 * re-timed on the rows measured under k; a job without a row there keeps the GPU from k) and
 * "job j moves to another instance" (timed on the rows of the target GPU's limit). Only improving
 * moves are taken, so the answer is never worse than the best shared-limit plan; the search is
 * sequential and its budget counts moves, so it is deterministic (unless the time limit stops it).
 */
#include "migbench/clock.h"
#include "plan/plan_internal.h"

#include <stdlib.h>
#include <string.h>

/* Moves tried over all starts. */
#define PG_WORK ((size_t)20 * 1000 * 1000)
/* Most job x size x limit cells the per-limit tables may hold (8 bytes x 4 arrays each). */
#define PG_CELLS ((size_t)8 * 1000 * 1000)
#define NONE SIZE_MAX
/* Up to this many jobs every descent also tries trades of two jobs (jobs^2 per round). */
#define SWAP_JOBS 2000

struct pgs {
    const struct prob *Pk; /* one per candidate limit; Pk[k].ns == 0: unusable */
    size_t nk;
    unsigned G;
    size_t nj, ni_all;
    enum mb_plan_objective obj;
    bool polish; /* the makespan objective's second phase: energy breaks ties, not balance */
    double idle, mcap, ecap;
    bool deadlines;
    unsigned *lim;               /* G: index into Pk */
    unsigned *ni;                /* G: instances */
    unsigned *sz;                /* G x MAXI: size index */
    size_t *asg;                 /* nj: g x MAXI + i */
    size_t *head, *next, *prev;  /* jobs of each GPU, doubly linked */
    double *load, *tmp, *bstart; /* G x MAXI, MAXI, G x MAXI */
    double M, D, sq;             /* makespan, dynamic energy, sum of squared loads */
    size_t late;                 /* jobs past their deadline */
    bool frozen;                 /* limits stay while the jobs settle after a kick */
    size_t work, budget;
    double t0, limit_s;
    bool stopped;
};

static bool ok_at(const struct pgs *s, unsigned k, size_t j, unsigned size)
{
    const struct prob *P = &s->Pk[k];
    return P->ns && P->row[j * P->ns + size] != NONE;
}

static double t_at(const struct pgs *s, unsigned k, size_t j, unsigned size)
{
    return T(&s->Pk[k], j, size);
}

static double d_at(const struct pgs *s, unsigned k, size_t j, unsigned size)
{
    return Dy(&s->Pk[k], j, size);
}

/*
 * The search's key, smaller is better: first how far the state breaks the caps and deadlines
 * (0 for a plan that meets them; a forced limit change may break them until the jobs move), then
 * the objective, then a tie-break (the makespan objective: the sum of squared loads, which
 * rewards unloading a critical instance even while another keeps the makespan; polished: energy).
 */
struct key {
    double v, p, s;
};

static struct key key_of(const struct pgs *s, double M, double D, double sq, size_t late)
{
    double E = (double)s->G * s->idle * M + D;
    struct key k = {(double)late, E, M};
    if (M > s->mcap * (1 + TIE))
        k.v += M / s->mcap - 1;
    if (E > s->ecap * (1 + TIE))
        k.v += E / s->ecap - 1;
    if (s->obj == MB_PLAN_MAKESPAN) {
        k.p = M;
        k.s = s->polish ? E : sq;
    }
    return k;
}

static bool key_better(struct key a, struct key b)
{
    if (a.v < b.v - 1e-12)
        return true;
    if (b.v < a.v - 1e-12)
        return false;
    return mb__plan_better(a.p, a.s, b.p, b.s);
}

/* Loads and totals from scratch; the number of jobs past their deadline. */
static size_t recompute(struct pgs *s)
{
    size_t late = 0;
    memset(s->load, 0, s->ni_all * sizeof(double));
    s->D = s->M = s->sq = 0;
    const size_t *rank = s->Pk[s->lim[0]].rank;
    for (size_t r = 0; r < s->nj; r++) {
        size_t j = rank[r], x = s->asg[j];
        unsigned k = s->lim[x / MAXI];
        s->load[x] += t_at(s, k, j, s->sz[x]);
        s->D += d_at(s, k, j, s->sz[x]);
        const struct mb_plan_job *job = &s->Pk[k].jobs[j];
        late += !isnan(job->deadline_s) && s->load[x] > job->deadline_s * (1 + TIE);
    }
    for (size_t x = 0; x < s->ni_all; x++) {
        s->M = fmax(s->M, s->load[x]);
        s->sq += s->load[x] * s->load[x];
    }
    s->late = late;
    return late;
}

static struct key key_now(const struct pgs *s)
{
    return key_of(s, s->M, s->D, s->sq, s->late);
}

static bool out_of_time(struct pgs *s)
{
    if (s->work >= s->budget)
        return true;
    if ((s->work & 1023) == 0 && (double)mb_clock_monotonic_ns() * 1e-9 - s->t0 > s->limit_s)
        s->stopped = true;
    return s->stopped;
}

/* With deadlines: the key of the state as it is now, from scratch. */
static struct key key_full(struct pgs *s)
{
    s->work += s->nj / 64 + 1;
    recompute(s);
    return key_now(s);
}

/* GPU g takes limit k: if that is better, or (force) whenever its jobs have rows there. */
static bool try_limit(struct pgs *s, unsigned g, unsigned k, bool force)
{
    struct key k0 = key_now(s);
    unsigned old = s->lim[g];
    double D = s->D, mo = 0, sq = s->sq;
    for (unsigned i = 0; i < s->ni[g]; i++)
        s->tmp[i] = 0;
    for (size_t j = s->head[g]; j != NONE; j = s->next[j]) {
        size_t x = s->asg[j];
        unsigned z = s->sz[x];
        if (!ok_at(s, k, j, z))
            return false;
        s->tmp[x % MAXI] += t_at(s, k, j, z);
        D += d_at(s, k, j, z) - d_at(s, old, j, z);
    }
    s->work += s->G * MAXI;
    if (s->deadlines) {
        s->lim[g] = k;
        bool take = force || key_better(key_full(s), k0);
        if (!take) {
            s->lim[g] = old;
            recompute(s);
        }
        return take;
    }
    for (size_t x = 0; x < s->ni_all; x++)
        if (x / MAXI != g)
            mo = fmax(mo, s->load[x]);
    for (unsigned i = 0; i < s->ni[g]; i++) {
        double l = s->load[(size_t)g * MAXI + i];
        sq += s->tmp[i] * s->tmp[i] - l * l;
        mo = fmax(mo, s->tmp[i]);
    }
    if (!force && !key_better(key_of(s, mo, D, sq, 0), k0))
        return false;
    s->lim[g] = k;
    for (unsigned i = 0; i < s->ni[g]; i++)
        s->load[(size_t)g * MAXI + i] = s->tmp[i];
    s->M = mo;
    s->D = D;
    s->sq = sq;
    return true;
}

static void unlink_job(struct pgs *s, size_t j)
{
    unsigned g = (unsigned)(s->asg[j] / MAXI);
    if (s->prev[j] != NONE)
        s->next[s->prev[j]] = s->next[j];
    else
        s->head[g] = s->next[j];
    if (s->next[j] != NONE)
        s->prev[s->next[j]] = s->prev[j];
}

static void link_job(struct pgs *s, size_t j, size_t x)
{
    unsigned g = (unsigned)(x / MAXI);
    s->asg[j] = x;
    s->prev[j] = NONE;
    s->next[j] = s->head[g];
    if (s->head[g] != NONE)
        s->prev[s->head[g]] = j;
    s->head[g] = j;
}

/* The three largest loads (index, value): the makespan without any two instances in O(1). */
struct top3 {
    size_t x[3];
    double v[3];
};

static void top3_of(const struct pgs *s, struct top3 *t)
{
    for (int q = 0; q < 3; q++) {
        t->x[q] = NONE;
        t->v[q] = 0;
    }
    for (size_t x = 0; x < s->ni_all; x++) {
        double v = s->load[x];
        int q = v > t->v[0] ? 0 : v > t->v[1] ? 1 : v > t->v[2] ? 2 : 3;
        for (int r = 2; r > q; r--) {
            t->x[r] = t->x[r - 1];
            t->v[r] = t->v[r - 1];
        }
        if (q < 3) {
            t->x[q] = x;
            t->v[q] = v;
        }
    }
}

static double max_without(const struct top3 *t, size_t a, size_t b)
{
    for (int q = 0; q < 3; q++)
        if (t->x[q] != a && t->x[q] != b)
            return t->v[q];
    return 0;
}

/* A move or trade kept: instances x and y now carry lx and ly, and the plan's makespan, energy
 * and sum of squared loads are msq[0..2]. */
static void keep_move(struct pgs *s, size_t x, size_t y, double lx, double ly, const double *msq)
{
    s->load[x] = lx;
    s->load[y] = ly;
    s->M = msq[0];
    s->D = msq[1];
    s->sq = msq[2];
}

/* Job j goes to the first instance that makes the plan better, if any. */
static bool try_moves(struct pgs *s, size_t j)
{
    struct key k0 = key_now(s);
    struct top3 t3;
    top3_of(s, &t3);
    s->work += s->ni_all / 8 + 1;
    size_t x = s->asg[j];
    unsigned kx = s->lim[x / MAXI];
    double tx = t_at(s, kx, j, s->sz[x]), dx = d_at(s, kx, j, s->sz[x]);
    for (size_t y = 0; y < s->ni_all; y++) {
        unsigned g = (unsigned)(y / MAXI), k = s->lim[g];
        if (y == x || y % MAXI >= s->ni[g] || !ok_at(s, k, j, s->sz[y]))
            continue;
        s->work++;
        double ty = t_at(s, k, j, s->sz[y]), lx = s->load[x] - tx, ly = s->load[y] + ty;
        double M = fmax(max_without(&t3, x, y), fmax(lx, ly));
        double D = s->D - dx + d_at(s, k, j, s->sz[y]);
        double sq = s->sq + lx * lx + ly * ly - s->load[x] * s->load[x] - s->load[y] * s->load[y];
        /* Without deadlines the key is exact; with them, the late count comes from scratch. */
        if (!key_better(key_of(s, M, D, sq, s->deadlines ? 0 : s->late), k0))
            continue;
        unlink_job(s, j);
        link_job(s, j, y);
        if (s->deadlines && !key_better(key_full(s), k0)) {
            unlink_job(s, j);
            link_job(s, j, x);
            recompute(s);
            continue;
        }
        keep_move(s, x, y, lx, ly, (double[]){M, D, sq});
        return true;
    }
    return false;
}

/* Job j trades places with the first job whose trade makes the plan better, if any. */
static bool try_swaps(struct pgs *s, size_t j)
{
    struct key k0 = key_now(s);
    struct top3 t3;
    top3_of(s, &t3);
    s->work += s->ni_all / 8 + 1;
    size_t x = s->asg[j];
    unsigned kx = s->lim[x / MAXI], zx = s->sz[x];
    double tjx = t_at(s, kx, j, zx), djx = d_at(s, kx, j, zx);
    for (size_t i = 0; i < s->nj; i++) {
        size_t y = s->asg[i];
        if (y == x)
            continue;
        unsigned ky = s->lim[y / MAXI], zy = s->sz[y];
        s->work++;
        if (!ok_at(s, ky, j, zy) || !ok_at(s, kx, i, zx))
            continue;
        double lx = s->load[x] - tjx + t_at(s, kx, i, zx);
        double ly = s->load[y] - t_at(s, ky, i, zy) + t_at(s, ky, j, zy);
        double M = fmax(max_without(&t3, x, y), fmax(lx, ly));
        double D = s->D - djx - d_at(s, ky, i, zy) + d_at(s, kx, i, zx) + d_at(s, ky, j, zy);
        double sq = s->sq + lx * lx + ly * ly - s->load[x] * s->load[x] - s->load[y] * s->load[y];
        if (!key_better(key_of(s, M, D, sq, s->deadlines ? 0 : s->late), k0))
            continue;
        unlink_job(s, j);
        unlink_job(s, i);
        link_job(s, j, y);
        link_job(s, i, x);
        if (s->deadlines && !key_better(key_full(s), k0)) {
            unlink_job(s, j);
            unlink_job(s, i);
            link_job(s, j, x);
            link_job(s, i, y);
            recompute(s);
            continue;
        }
        keep_move(s, x, y, lx, ly, (double[]){M, D, sq});
        return true;
    }
    return false;
}

/* Rounds of limit changes then job moves until a round changes nothing. */
static void descend(struct pgs *s)
{
    bool improved = true;
    while (improved && !out_of_time(s)) {
        improved = false;
        recompute(s);
        for (unsigned g = 0; g < s->G && !out_of_time(s); g++)
            for (unsigned k = 0; k < s->nk && !s->frozen; k++)
                if (k != s->lim[g] && s->Pk[k].ns && try_limit(s, g, k, false))
                    improved = true;
        const size_t *rank = s->Pk[s->lim[0]].rank;
        for (size_t r = 0; r < s->nj && !out_of_time(s); r++)
            improved |= try_moves(s, rank[r]);
        /* Trades only where relocations are stuck: cheap enough on small fleets, or repairing
           a kick. */
        bool swaps = !improved && (s->nj <= SWAP_JOBS || s->frozen);
        for (size_t r = 0; swaps && r < s->nj && !out_of_time(s); r++)
            improved |= try_swaps(s, rank[r]);
    }
    recompute(s);
}

/*
 * Before GPU g is forced to limit k: each of its jobs without a row under k goes to the instance
 * of another GPU, on that GPU's limit, where it ends soonest. False when one has nowhere to go.
 */
static bool evict(struct pgs *s, unsigned g, unsigned k)
{
    size_t j = s->head[g];
    while (j != NONE) {
        size_t nx = s->next[j], x = s->asg[j], best = NONE;
        double end = INFINITY;
        if (ok_at(s, k, j, s->sz[x])) {
            j = nx;
            continue;
        }
        for (size_t y = 0; y < s->ni_all; y++) {
            unsigned h = (unsigned)(y / MAXI);
            if (h == g || y % MAXI >= s->ni[h] || !ok_at(s, s->lim[h], j, s->sz[y]))
                continue;
            double e = s->load[y] + t_at(s, s->lim[h], j, s->sz[y]);
            if (e < end) {
                end = e;
                best = y;
            }
        }
        s->work += s->ni_all / 8 + 1;
        if (best == NONE)
            return false;
        unlink_job(s, j);
        link_job(s, j, best);
        recompute(s);
        j = nx;
    }
    return true;
}

/*
 * Kicks: GPU g is forced to limit k (which may break a cap), the descent moves jobs (limits
 * held) until it settles, then changes limits too, and the result is kept only if it beats the
 * state before the kick. This is what finds "the jobs that barely slow on the low limit, together
 * on one GPU".
 */
static void restore(struct pgs *s, const unsigned *lim, const size_t *asg)
{
    memcpy(s->lim, lim, s->G * sizeof(unsigned));
    for (unsigned h = 0; h < s->G; h++)
        s->head[h] = NONE;
    for (size_t j = 0; j < s->nj; j++)
        link_job(s, j, asg[j]);
    recompute(s);
}

static void kicks(struct pgs *s)
{
    unsigned *lim = malloc(s->G * sizeof(unsigned));
    size_t *asg = malloc(s->nj * sizeof(size_t));
    for (unsigned g = 0; lim && asg && g < s->G && !out_of_time(s); g++)
        for (unsigned k = 0; k < s->nk && !out_of_time(s); k++) {
            if (k == s->lim[g] || !s->Pk[k].ns)
                continue;
            struct key k0 = key_now(s);
            memcpy(lim, s->lim, s->G * sizeof(unsigned));
            memcpy(asg, s->asg, s->nj * sizeof(size_t));
            if (!evict(s, g, k) || !try_limit(s, g, k, true)) {
                restore(s, lim, asg);
                continue;
            }
            s->frozen = true;
            descend(s);
            s->frozen = false;
            descend(s);
            if (!key_better(key_now(s), k0))
                restore(s, lim, asg);
        }
    free(lim);
    free(asg);
}

/* The state of a shared-limit plan on candidate k. */
static void load_plan(struct pgs *s, const struct mb_plan *pl, unsigned k)
{
    unsigned full = s->Pk[k].full;
    for (unsigned g = 0; g < s->G; g++) {
        const struct mb_plan_gpu *pg = &pl->gpus[g];
        s->lim[g] = k;
        s->head[g] = NONE;
        s->ni[g] = pg->mig ? (unsigned)pg->layout.n : 1;
        for (unsigned i = 0; i < MAXI; i++)
            s->sz[(size_t)g * MAXI + i] =
                pg->mig && i < pg->layout.n ? pg->layout.items[i].profile : full;
    }
    for (size_t j = 0; j < s->nj; j++)
        link_job(s, j, (size_t)pl->slots[j].gpu * MAXI + pl->slots[j].instance);
}

static struct mb_plan *copy_plan(const struct mb_plan *a)
{
    struct mb_plan *p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    *p = *a;
    p->gpus = calloc(a->count, sizeof(*p->gpus));
    p->slots = calloc(a->n_slots, sizeof(*p->slots));
    if (!p->gpus || !p->slots) {
        mb_plan_destroy(p);
        return NULL;
    }
    memcpy(p->gpus, a->gpus, a->count * sizeof(*p->gpus));
    memcpy(p->slots, a->slots, a->n_slots * sizeof(*p->slots));
    return p;
}

/* Layouts without the instances left empty; remap[] gets the kept instances' new index. */
static void pg_layouts(const struct pgs *s, struct mb_plan *pl, unsigned *remap)
{
    for (unsigned g = 0; g < s->G; g++) {
        struct mb_plan_gpu *pg = &pl->gpus[g];
        struct mb_layout old = pg->layout;
        unsigned n = 0;
        for (unsigned i = 0; i < s->ni[g]; i++) {
            size_t x = (size_t)g * MAXI + i;
            bool used = false;
            for (size_t j = s->head[g]; j != NONE && !used; j = s->next[j])
                used = s->asg[j] == x;
            remap[x] = n;
            if (!used)
                continue;
            if (pg->mig)
                pg->layout.items[n] = old.items[i];
            n++;
        }
        pg->layout.n = pg->mig ? n : 0;
    }
}

/* The plan of the state: pl is a copy of its start, rewritten. */
static int pg_plan(const struct pgs *s, const double *caps_w, struct mb_plan *pl)
{
    unsigned *remap = malloc(s->ni_all * sizeof(unsigned));
    unsigned *qpos = calloc(s->ni_all, sizeof(unsigned));
    double *b = calloc(s->ni_all, sizeof(double));
    if (!remap || !qpos || !b) {
        free(remap);
        free(qpos);
        free(b);
        return MB_ENOMEM;
    }
    pg_layouts(s, pl, remap);
    const size_t *rank = s->Pk[s->lim[0]].rank;
    for (size_t r = 0; r < s->nj; r++) {
        size_t j = rank[r], x = s->asg[j];
        unsigned g = (unsigned)(x / MAXI), k = s->lim[g], z = s->sz[x];
        const struct prob *P = &s->Pk[k];
        struct mb_plan_slot *sl = &pl->slots[j];
        sl->gpu = g;
        sl->instance = pl->gpus[g].mig ? remap[x] : 0;
        sl->order = qpos[x]++;
        sl->profile = P->row[j * P->ns + z];
        sl->throughput = mb_plan_profiles_get(P->profiles, sl->profile)->throughput;
        sl->start_s = b[x];
        sl->time_s = T(P, j, z);
        sl->dynamic_j = Dy(P, j, z);
        sl->normalised = isnan(P->base_t[j]) ? NAN : P->base_t[j] / sl->time_s;
        b[x] += sl->time_s;
    }
    bool same = true;
    for (unsigned g = 0; g < s->G; g++) {
        double w = caps_w[s->lim[g]];
        pl->gpus[g].power_limit_w = w > 0 ? w : NAN;
        double w0 = caps_w[s->lim[0]];
        same &= s->lim[g] == s->lim[0] || w == w0 || (!(w > 0) && !(w0 > 0)); /* 0, NaN: default */
    }
    pl->power_limit_w = same ? pl->gpus[0].power_limit_w : NAN;
    pl->makespan_s = s->M;
    pl->dynamic_energy_j = s->D;
    pl->idle_energy_j = (double)s->G * s->idle * s->M;
    pl->energy_j = pl->idle_energy_j + s->D;
    pl->exact = false;
    free(remap);
    free(qpos);
    free(b);
    return mb__plan_peak_power(&s->Pk[0], pl);
}

/* Whether a beats b under the objective (ties: b). */
static bool plan_better(const struct mb_plan *a, const struct mb_plan *b)
{
    if (a->objective == MB_PLAN_ENERGY)
        return mb__plan_better(a->energy_j, a->makespan_s, b->energy_j, b->makespan_s);
    return mb__plan_better(a->makespan_s, a->energy_j, b->makespan_s, b->energy_j);
}

static int pg_alloc(struct pgs *s)
{
    s->ni_all = (size_t)s->G * MAXI;
    s->lim = calloc(s->G, sizeof(unsigned));
    s->ni = calloc(s->G, sizeof(unsigned));
    s->sz = calloc(s->ni_all, sizeof(unsigned));
    s->asg = calloc(s->nj, sizeof(size_t));
    s->head = calloc(s->G, sizeof(size_t));
    s->next = calloc(s->nj, sizeof(size_t));
    s->prev = calloc(s->nj, sizeof(size_t));
    s->load = calloc(s->ni_all, sizeof(double));
    s->tmp = calloc(MAXI, sizeof(double));
    bool ok =
        s->lim && s->ni && s->sz && s->asg && s->head && s->next && s->prev && s->load && s->tmp;
    return ok ? MB_OK : MB_ENOMEM;
}

static void pg_free(struct pgs *s)
{
    free(s->lim);
    free(s->ni);
    free(s->sz);
    free(s->asg);
    free(s->head);
    free(s->next);
    free(s->prev);
    free(s->load);
    free(s->tmp);
}

/* From each start, a descent; the best plan found, if it beats *best, replaces it. */
static int pg_search(struct pgs *s, const double *caps_w, struct mb_plan *const *starts,
                     struct mb_plan **best)
{
    size_t n_starts = 0;
    for (size_t k = 0; k < s->nk; k++)
        n_starts += starts[k] != NULL;
    size_t per = PG_WORK / (n_starts ? n_starts : 1);
    struct mb_plan *win = NULL;
    int st = MB_OK;
    for (unsigned k = 0; k < s->nk && st == MB_OK && !s->stopped; k++) {
        if (!starts[k] || !s->Pk[k].ns)
            continue;
        s->budget = s->work + per;
        s->polish = false;
        s->frozen = false;
        load_plan(s, starts[k], k);
        descend(s);
        kicks(s);
        if (s->obj == MB_PLAN_MAKESPAN) {
            s->polish = true;
            s->budget += per / 4;
            descend(s);
        }
        struct mb_plan *pl = copy_plan(starts[k]);
        st = pl ? pg_plan(s, caps_w, pl) : MB_ENOMEM;
        if (st == MB_OK && (!win || plan_better(pl, win))) {
            mb_plan_destroy(win);
            win = pl;
        } else {
            mb_plan_destroy(pl);
        }
    }
    if (st == MB_OK && win && plan_better(win, *best)) {
        *best = win; /* the start it replaces stays its caller's */
        win = NULL;
    }
    mb_plan_destroy(win);
    return st;
}

int mb__plan_per_gpu(const struct mb_gpu_model *model, const struct mb_plan_profiles *profiles,
                     const struct mb_plan_job *jobs, size_t nj, const struct mb_plan_options *opt,
                     const double *caps_w, size_t n_caps, struct mb_plan *const *starts,
                     struct mb_plan **best, struct mb_error *err)
{
    struct mb_plan *b = *best;
    if (!b || b->count < 2 || n_caps < 2 || b->objective == MB_PLAN_THROUGHPUT ||
        nj * (model->n_profiles + 1) * n_caps > PG_CELLS)
        return MB_OK;
    double t0 = (double)mb_clock_monotonic_ns() * 1e-9;
    struct prob *Pk = calloc(n_caps, sizeof(*Pk));
    struct pgs s = {.Pk = Pk, .nk = n_caps, .G = b->count, .nj = nj, .obj = b->objective};
    int st = Pk ? pg_alloc(&s) : MB_ENOMEM;
    size_t usable = 0;
    for (size_t k = 0; k < n_caps && st == MB_OK; k++) {
        struct mb_plan_options o = *opt;
        o.power_limit_w = caps_w[k] > 0 ? caps_w[k] : 0;
        struct mb_error e;
        int pst = mb__plan_prob_init_ex(&Pk[k], model, profiles, jobs, nj, &o, true, &e);
        if (pst == MB_ENOMEM)
            st = MB_ENOMEM;
        if (pst != MB_OK) {
            mb__plan_prob_free(&Pk[k]);
            memset(&Pk[k], 0, sizeof(Pk[k])); /* ns 0: unusable */
            continue;
        }
        usable++;
        s.idle = Pk[k].idle;
        s.mcap = Pk[k].mcap;
        s.ecap = Pk[k].ecap;
    }
    for (size_t j = 0; j < nj; j++)
        s.deadlines |= !isnan(jobs[j].deadline_s);
    s.t0 = t0;
    s.limit_s = opt->time_limit_s > 0 ? opt->time_limit_s : 5;
    if (st == MB_OK && usable >= 2)
        st = pg_search(&s, caps_w, starts, best);
    /* The bounds hold for every plan with one of the limits on each GPU. */
    struct prob pmin;
    memset(&pmin, 0, sizeof(pmin));
    struct prob *use = NULL;
    for (size_t k = 0; k < n_caps && !use; k++)
        if (Pk[k].ns)
            use = &Pk[k];
    struct prob *u = calloc(usable ? usable : 1, sizeof(*u));
    size_t nu = 0;
    for (size_t k = 0; u && k < n_caps; k++)
        if (Pk[k].ns)
            u[nu++] = Pk[k];
    if (st == MB_OK && use && u && mb__plan_prob_min(&pmin, u, nu, err) == MB_OK) {
        struct mb_plan *p = *best;
        double mlb, elb, sub;
        mb__plan_bounds(&pmin, p->count, &mlb, &elb, &sub);
        p->bound_makespan_s = mlb;
        p->bound_energy_j = elb;
        if (p->objective == MB_PLAN_MAKESPAN)
            p->gap_pct = mlb > 0 ? (p->makespan_s - mlb) / mlb * 100 : 0;
        else
            p->gap_pct = elb > 0 ? (p->energy_j - elb) / elb * 100 : 0;
        p->nodes += s.work;
        p->search_s += (double)mb_clock_monotonic_ns() * 1e-9 - t0;
        p->time_limited |= s.stopped;
    }
    free(u);
    mb__plan_prob_free(&pmin);
    for (size_t k = 0; Pk && k < n_caps; k++)
        mb__plan_prob_free(&Pk[k]);
    free(Pk);
    pg_free(&s);
    return st == MB_ENOMEM ? mb_error_set(err, MB_ENOMEM, "out of memory") : MB_OK;
}
