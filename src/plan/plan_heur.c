/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The fleet search's state and its improvement steps (plan_heur.h): job-to-instance moves to the
 * least-loaded instance of each size, swaps off the busiest instance, and per-GPU layout changes.
 */
#include "plan/plan_heur.h"

#include <stdlib.h>
#include <string.h>

#include "migbench/clock.h"

/* ---- heaps ----------------------------------------------------------------------------------- */

/* The larger of two loads (never NaN here): inlined, where fmax is a call into libm. */
static inline double dmax(double a, double b)
{
    return a > b ? a : b;
}

/* Min-heap order of the size heaps: load, then instance index (deterministic ties). */
static bool sless(const struct hs *h, size_t a, size_t b)
{
    return h->B[a] < h->B[b] || (h->B[a] == h->B[b] && a < b);
}

/* Max-heap order: load, then the lower instance index. */
static bool mgreater(const struct hs *h, size_t a, size_t b)
{
    return h->B[a] > h->B[b] || (h->B[a] == h->B[b] && a < b);
}

static void sswap(size_t *v, size_t *pos, size_t x, size_t y)
{
    size_t t = v[x];
    v[x] = v[y];
    v[y] = t;
    pos[v[x]] = x;
    pos[v[y]] = y;
}

/* Restores the heap property at position x of heap v (n long); min-heap when mx is false. */
static void sift(struct hs *h, size_t *v, size_t n, size_t *pos, size_t x, bool mx)
{
    while (x > 0) {
        size_t p = (x - 1) / 2;
        bool up = mx ? mgreater(h, v[x], v[p]) : sless(h, v[x], v[p]);
        if (!up)
            break;
        sswap(v, pos, x, p);
        x = p;
    }
    for (;;) {
        size_t l = 2 * x + 1, r = l + 1, m = x;
        if (l < n && (mx ? mgreater(h, v[l], v[m]) : sless(h, v[l], v[m])))
            m = l;
        if (r < n && (mx ? mgreater(h, v[r], v[m]) : sless(h, v[r], v[m])))
            m = r;
        if (m == x)
            break;
        sswap(v, pos, x, m);
        x = m;
    }
}

static void heap_add(struct hs *h, size_t *v, size_t *n, size_t *pos, size_t inst, bool mx)
{
    v[*n] = inst;
    pos[inst] = *n;
    (*n)++;
    sift(h, v, *n, pos, *n - 1, mx);
}

static void heap_del(struct hs *h, size_t *v, size_t *n, size_t *pos, size_t inst, bool mx)
{
    size_t x = pos[inst];
    (*n)--;
    if (x != *n) {
        sswap(v, pos, x, *n);
        sift(h, v, *n, pos, x, mx);
    }
    pos[inst] = NONE;
}

static void heap_fix(struct hs *h, size_t inst)
{
    unsigned s = mb__hs_size(h, inst);
    sift(h, h->sh[s], h->sn[s], h->spos, h->spos[inst], false);
    sift(h, h->mh, h->mn, h->mpos, h->mpos[inst], true);
}

/* ---- state ----------------------------------------------------------------------------------- */

uint64_t mb__hs_rand(struct hs *h)
{
    h->rng ^= h->rng >> 12;
    h->rng ^= h->rng << 25;
    h->rng ^= h->rng >> 27;
    return h->rng * 2685821657736338717ull;
}

int mb__hs_init(struct hs *h, const struct prob *P, unsigned G, enum mb_plan_objective obj,
                const size_t *order, const size_t *rk)
{
    memset(h, 0, sizeof(*h));
    size_t I = (size_t)G * MAXI, nj = P->nj;
    h->P = P;
    h->G = G;
    h->obj = obj;
    h->order = order;
    h->rk = rk;
    h->rng = 0x243f6a8885a308d3ull;
    h->cfg = calloc(G, sizeof(size_t));
    h->asg = malloc(nj * sizeof(size_t));
    h->next = malloc(nj * sizeof(size_t));
    h->prev = malloc(nj * sizeof(size_t));
    h->B = calloc(I, sizeof(double));
    h->cnt = calloc(I, sizeof(unsigned));
    h->head = malloc(I * sizeof(size_t));
    h->spos = malloc(I * sizeof(size_t));
    h->mpos = malloc(I * sizeof(size_t));
    h->mh = malloc(I * sizeof(size_t));
    h->sn = calloc(P->ns, sizeof(size_t));
    h->sh = calloc(P->ns, sizeof(size_t *));
    h->min_dy = malloc((nj ? nj : 1) * sizeof(double));
    h->rest = malloc((nj + 1) * sizeof(double));
    if (!h->cfg || !h->asg || !h->next || !h->prev || !h->B || !h->cnt || !h->head || !h->spos ||
        !h->mpos || !h->mh || !h->sn || !h->sh || !h->min_dy || !h->rest)
        return MB_ENOMEM;
    for (size_t j = 0; j < nj; j++)
        h->min_dy[j] = mb__plan_min_all(P, j, 2);
    for (unsigned s = 0; s < P->ns; s++) {
        /* A size appears at most MAXI times per GPU. */
        bool used = false;
        for (size_t c = 0; c < P->ncfg && !used; c++)
            for (size_t i = 0; i < P->cfg[c].n && !used; i++)
                used = P->cfg[c].size[i] == s;
        if (used && !(h->sh[s] = malloc(I * sizeof(size_t))))
            return MB_ENOMEM;
    }
    return MB_OK;
}

void mb__hs_free(struct hs *h)
{
    if (h->sh)
        for (unsigned s = 0; s < h->P->ns; s++)
            free(h->sh[s]);
    free(h->sh);
    free(h->sn);
    free(h->cfg);
    free(h->asg);
    free(h->next);
    free(h->prev);
    free(h->B);
    free(h->cnt);
    free(h->head);
    free(h->spos);
    free(h->mpos);
    free(h->mh);
    free(h->log);
    free(h->min_dy);
    free(h->rest);
    memset(h, 0, sizeof(*h));
}

unsigned mb__hs_size(const struct hs *h, size_t inst)
{
    return h->P->cfg[h->cfg[inst / MAXI]].size[inst % MAXI];
}

static void gpu_add(struct hs *h, unsigned g)
{
    const struct config *c = &h->P->cfg[h->cfg[g]];
    for (size_t i = 0; i < c->n; i++) {
        size_t inst = (size_t)g * MAXI + i;
        unsigned s = c->size[i];
        heap_add(h, h->sh[s], &h->sn[s], h->spos, inst, false);
        heap_add(h, h->mh, &h->mn, h->mpos, inst, true);
    }
}

static void gpu_del(struct hs *h, unsigned g)
{
    const struct config *c = &h->P->cfg[h->cfg[g]];
    for (size_t i = 0; i < c->n; i++) {
        size_t inst = (size_t)g * MAXI + i;
        unsigned s = c->size[i];
        heap_del(h, h->sh[s], &h->sn[s], h->spos, inst, false);
        heap_del(h, h->mh, &h->mn, h->mpos, inst, true);
    }
}

void mb__hs_reset(struct hs *h, const size_t *cfg)
{
    const struct prob *P = h->P;
    size_t I = (size_t)h->G * MAXI;
    if (cfg != h->cfg)
        memcpy(h->cfg, cfg, h->G * sizeof(size_t));
    memset(h->B, 0, I * sizeof(double));
    memset(h->cnt, 0, I * sizeof(unsigned));
    for (size_t i = 0; i < I; i++)
        h->head[i] = h->spos[i] = h->mpos[i] = NONE;
    for (size_t j = 0; j < P->nj; j++)
        h->asg[j] = h->next[j] = h->prev[j] = NONE;
    memset(h->sn, 0, P->ns * sizeof(size_t));
    h->mn = 0;
    h->D = 0;
    for (unsigned g = 0; g < h->G; g++)
        gpu_add(h, g);
}

static void log_op(struct hs *h, unsigned char kind, size_t a, size_t b)
{
    if (!h->logging)
        return;
    if (h->nlog == h->caplog) {
        size_t nc = h->caplog ? 2 * h->caplog : 1024;
        struct hs_op *v = nc <= (size_t)1 << 24 ? realloc(h->log, nc * sizeof(*v)) : NULL;
        if (!v) {
            h->log_overflow = true;
            h->logging = false;
            return;
        }
        h->log = v;
        h->caplog = nc;
    }
    h->log[h->nlog++] = (struct hs_op){kind, a, b};
}

void mb__hs_mark(struct hs *h)
{
    h->nlog = 0;
    h->logging = true;
    h->log_overflow = false;
}

bool mb__hs_undo(struct hs *h)
{
    h->logging = false;
    if (h->log_overflow)
        return false;
    for (size_t k = h->nlog; k-- > 0;) {
        const struct hs_op *op = &h->log[k];
        if (op->kind == 0)
            mb__hs_take(h, op->a);
        else if (op->kind == 1)
            mb__hs_put(h, op->a, op->b);
        else
            mb__hs_set_cfg(h, (unsigned)op->a, op->b);
    }
    h->nlog = 0;
    return true;
}

void mb__hs_put(struct hs *h, size_t j, size_t inst)
{
    const struct prob *P = h->P;
    log_op(h, 0, j, inst);
    unsigned s = mb__hs_size(h, inst);
    h->asg[j] = inst;
    h->prev[j] = NONE;
    h->next[j] = h->head[inst];
    if (h->head[inst] != NONE)
        h->prev[h->head[inst]] = j;
    h->head[inst] = j;
    h->cnt[inst]++;
    h->B[inst] += T(P, j, s);
    h->D += Dy(P, j, s);
    heap_fix(h, inst);
}

void mb__hs_take(struct hs *h, size_t j)
{
    const struct prob *P = h->P;
    size_t inst = h->asg[j];
    unsigned s = mb__hs_size(h, inst);
    log_op(h, 1, j, inst);
    if (h->prev[j] != NONE)
        h->next[h->prev[j]] = h->next[j];
    else
        h->head[inst] = h->next[j];
    if (h->next[j] != NONE)
        h->prev[h->next[j]] = h->prev[j];
    h->asg[j] = h->next[j] = h->prev[j] = NONE;
    h->cnt[inst]--;
    /* An emptied instance is exactly idle, whatever the rounding. */
    h->B[inst] = h->cnt[inst] ? h->B[inst] - T(P, j, s) : 0;
    h->D -= Dy(P, j, s);
    heap_fix(h, inst);
}

void mb__hs_load(struct hs *h, const size_t *cfg, const size_t *asg)
{
    mb__hs_reset(h, cfg);
    for (size_t k = 0; k < h->P->nj; k++) {
        size_t j = h->order[k];
        mb__hs_put(h, j, asg[j]);
    }
}

void mb__hs_set_cfg(struct hs *h, unsigned g, size_t c)
{
    log_op(h, 2, g, h->cfg[g]);
    gpu_del(h, g);
    h->cfg[g] = c;
    gpu_add(h, g);
}

double mb__hs_makespan(const struct hs *h)
{
    return h->mn ? h->B[h->mh[0]] : 0;
}

/* mb__hs_cost, inlined in the hot loops of this file. */
static inline double cost(const struct hs *h, double M, double D)
{
    const struct prob *P = h->P;
    double gi = (double)h->G * P->idle;
    double E = gi * M + D;
    double scale = gi > 0 ? gi : 1;
    if (h->obj == MB_PLAN_MAKESPAN)
        return M + 1e-9 * D / scale + (E > P->ecap ? 1e3 * (E - P->ecap) / scale : 0);
    return E + (M > P->mcap ? 1e6 * scale * (M - P->mcap) : 0);
}

double mb__hs_cost(const struct hs *h, double M, double D)
{
    return cost(h, M, D);
}

double mb__hs_cur(const struct hs *h)
{
    return cost(h, mb__hs_makespan(h), h->D);
}

/* The largest load of an instance other than a and b: a walk that only descends through them. */
double mb__hs_max_without(const struct hs *h, size_t a, size_t b)
{
    size_t stack[16], n = 0;
    double best = 0;
    if (h->mn)
        stack[n++] = 0;
    while (n) {
        size_t x = stack[--n];
        size_t inst = h->mh[x];
        if (inst != a && inst != b) {
            if (h->B[inst] > best)
                best = h->B[inst];
            continue;
        }
        for (size_t c = 2 * x + 1; c <= 2 * x + 2 && c < h->mn && n < 16; c++)
            stack[n++] = c;
    }
    return best;
}

/* The largest load off GPU g (its instances are skipped; at most MAXI of them). */
double mb__hs_max_without_gpu(const struct hs *h, unsigned g)
{
    size_t stack[2 * MAXI + 2], n = 0;
    double best = 0;
    if (h->mn)
        stack[n++] = 0;
    while (n) {
        size_t x = stack[--n];
        size_t inst = h->mh[x];
        if (inst / MAXI != g) {
            if (h->B[inst] > best)
                best = h->B[inst];
            continue;
        }
        for (size_t c = 2 * x + 1; c <= 2 * x + 2 && c < h->mn && n < sizeof(stack) / 8; c++)
            stack[n++] = c;
    }
    return best;
}

/* The least-loaded instance of size s other than a (NONE if none). */
static size_t least_of(const struct hs *h, unsigned s, size_t a)
{
    const size_t *v = h->sh[s];
    size_t n = h->sn[s];
    if (!v || n == 0)
        return NONE;
    if (v[0] != a)
        return v[0];
    if (n == 1)
        return NONE;
    if (n == 2)
        return v[1];
    return sless(h, v[1], v[2]) ? v[1] : v[2];
}

/*
 * Among the least-loaded instances of each size job j may use, the one where j takes the least
 * area (seconds x compute slices) and still ends within target (NONE if none does).
 */
static size_t least_area_within(const struct hs *h, size_t j, double target)
{
    const struct prob *P = h->P;
    double ba = INFINITY;
    size_t bi = NONE;
    for (unsigned s = 0; s < P->ns; s++) {
        if (!allowed(P, j, s))
            continue;
        size_t inst = least_of(h, s, NONE);
        if (inst == NONE || h->B[inst] + T(P, j, s) > target)
            continue;
        double a = T(P, j, s) * mb__plan_size_cs(P, s);
        if (a < ba * (1 - 1e-9)) {
            ba = a;
            bi = inst;
        }
    }
    return bi;
}

bool mb__hs_place(struct hs *h, size_t j)
{
    const struct prob *P = h->P;
    double M = mb__hs_makespan(h);
    double base = mb__hs_cur(h);
    double best = INFINITY, best_end = INFINITY;
    size_t bi = NONE;
    for (unsigned s = 0; s < P->ns; s++) {
        if (!allowed(P, j, s))
            continue;
        size_t inst = least_of(h, s, NONE);
        if (inst == NONE)
            continue;
        double end = h->B[inst] + T(P, j, s);
        double delta = cost(h, dmax(M, end), h->D + Dy(P, j, s)) - base;
        /* Makespan: the earliest end (list scheduling); energy: the least added cost. */
        double k1 = h->obj == MB_PLAN_MAKESPAN ? end : delta;
        double k2 = h->obj == MB_PLAN_MAKESPAN ? delta : end;
        double b1 = h->obj == MB_PLAN_MAKESPAN ? best_end : best;
        double b2 = h->obj == MB_PLAN_MAKESPAN ? best : best_end;
        if (bi == NONE || k1 < b1 - 1e-12 * fabs(b1) || (k1 <= b1 && k2 < b2)) {
            best = delta;
            best_end = end;
            bi = inst;
        }
    }
    if (bi == NONE)
        return false;
    if (h->target > 0 && best_end <= h->target) {
        size_t a = least_area_within(h, j, h->target);
        if (a != NONE) /* there is one (the earliest end is within): kept for rounding's sake */
            bi = a;
    }
    mb__hs_put(h, j, bi);
    return true;
}

/* ---- moves ----------------------------------------------------------------------------------- */

/*
 * The cost change of a change that leaves instances a and b at loads Ba and Bb and the dynamic
 * energy at D2 (Mab: the largest load off a and b, mb__hs_max_without). On a makespan plateau it
 * also rewards unloading the busier of the two.
 */
static double move_delta(const struct hs *h, double Mab, size_t a, size_t b, double Ba, double Bb,
                         double D2, double base)
{
    double M = mb__hs_makespan(h);
    double M2 = dmax(Mab, dmax(Ba, Bb));
    double delta = cost(h, M2, D2) - base;
    if (M2 <= M) {
        /* The cost of a second of makespan, times a small weight (larger for makespan). */
        double rate = h->obj == MB_PLAN_MAKESPAN ? 1e-3 : 1e-6 * (double)h->G * h->P->idle;
        delta += rate * (dmax(Ba, Bb) - dmax(h->B[a], h->B[b]));
    }
    return delta;
}

/* The best move of job j to the least-loaded instance of another size; true if it was made. */
static bool move_one(struct hs *h, size_t j)
{
    const struct prob *P = h->P;
    size_t a = h->asg[j];
    unsigned sa = mb__hs_size(h, a);
    double base = mb__hs_cur(h);
    double best = -1e-10 * fabs(base);
    size_t bi = NONE;
    for (unsigned s = 0; s < P->ns; s++) {
        if (!allowed(P, j, s))
            continue;
        size_t b = least_of(h, s, a);
        if (b == NONE)
            continue;
        h->nodes++;
        double Ba = h->cnt[a] > 1 ? h->B[a] - T(P, j, sa) : 0, Bb = h->B[b] + T(P, j, s);
        double d = move_delta(h, mb__hs_max_without(h, a, b), a, b, Ba, Bb,
                              h->D - Dy(P, j, sa) + Dy(P, j, s), base);
        if (d < best) {
            best = d;
            bi = b;
        }
    }
    if (bi == NONE)
        return false;
    mb__hs_take(h, j);
    mb__hs_put(h, j, bi);
    return true;
}

size_t mb__hs_moves(struct hs *h, const size_t *jobs, size_t n)
{
    size_t moved = 0;
    for (size_t k = 0; k < n; k++)
        moved += move_one(h, jobs ? jobs[k] : h->order[k]);
    return moved;
}

/* Up to cap instances of the least loads of size s (the top of its heap, breadth first). */
static size_t low_instances(const struct hs *h, unsigned s, size_t *out, size_t cap)
{
    size_t n = h->sh[s] ? h->sn[s] : 0;
    size_t m = n < cap ? n : cap;
    for (size_t x = 0; x < m; x++)
        out[x] = h->sh[s][x];
    return m;
}

/* The best swap of job j (on instance a) with a job on a lightly loaded instance. */
static bool swap_one(struct hs *h, size_t j)
{
    const struct prob *P = h->P;
    size_t a = h->asg[j];
    unsigned sa = mb__hs_size(h, a);
    double base = mb__hs_cur(h);
    double best = -1e-10 * fabs(base);
    size_t bq = NONE;
    size_t cand[15];
    /* Off the busiest instance under the makespan objective, only a swap that unloads it can
       shorten the plan or, on a plateau, lower the busier of the two: q must be shorter there. */
    bool shorter = h->obj == MB_PLAN_MAKESPAN && h->mn && h->mh[0] == a;
    for (unsigned s = 0; s < P->ns; s++) {
        if (!allowed(P, j, s))
            continue;
        size_t nc = low_instances(h, s, cand, h->obj == MB_PLAN_MAKESPAN ? 7 : 3);
        for (size_t x = 0; x < nc; x++) {
            size_t b = cand[x];
            if (b == a)
                continue;
            double Mab = mb__hs_max_without(h, a, b);
            for (size_t q = h->head[b]; q != NONE; q = h->next[q]) {
                if (!allowed(P, q, sa) || (shorter && T(P, q, sa) >= T(P, j, sa)))
                    continue;
                h->nodes++;
                double Ba = h->B[a] - T(P, j, sa) + T(P, q, sa);
                double Bb = h->B[b] - T(P, q, s) + T(P, j, s);
                double D2 = h->D - Dy(P, j, sa) - Dy(P, q, s) + Dy(P, j, s) + Dy(P, q, sa);
                double d = move_delta(h, Mab, a, b, Ba, Bb, D2, base);
                if (d < best) {
                    best = d;
                    bq = q;
                }
            }
        }
    }
    if (bq == NONE)
        return false;
    size_t b = h->asg[bq];
    mb__hs_take(h, j);
    mb__hs_take(h, bq);
    mb__hs_put(h, j, b);
    mb__hs_put(h, bq, a);
    return true;
}

/*
 * Works on the busiest instance: the best move of one of its jobs, else the best swap, until
 * neither helps (or max_steps changes).
 */
size_t mb__hs_critical(struct hs *h, size_t max_steps, double deadline)
{
    size_t steps = 0;
    while (steps < max_steps && h->mn) {
        if ((steps & 7) == 7 && deadline > 0 && (double)mb_clock_monotonic_ns() * 1e-9 > deadline)
            break;
        size_t a = h->mh[0];
        bool done = false;
        for (size_t j = h->head[a]; j != NONE && !done; j = h->next[j])
            done = move_one(h, j);
        for (size_t j = h->head[a]; j != NONE && !done; j = h->next[j])
            done = swap_one(h, j);
        if (!done)
            break;
        steps++;
    }
    return steps;
}

/* ---- per-GPU layout changes ------------------------------------------------------------------ */

struct trial {
    double cost, gmax;
};

/* Where job j goes among configuration cf's instances at local loads Bl (the greedy rule). Under
   the makespan objective the cost only breaks ties of the end, so it is computed only then. */
static size_t local_pick(const struct hs *h, const struct config *cf, const double *Bl, size_t j,
                         double Mo, double gmax, double D)
{
    const struct prob *P = h->P;
    bool mk = h->obj == MB_PLAN_MAKESPAN;
    double M = dmax(Mo, gmax);
    double best = INFINITY, best_end = INFINITY;
    size_t bi = NONE;
    for (size_t i = 0; i < cf->n; i++) {
        unsigned s = cf->size[i];
        if (!allowed(P, j, s))
            continue;
        double end = Bl[i] + T(P, j, s);
        if (mk) {
            /* The earliest end; on a tie (rare: equal sums of times) the lower cost. */
            if (bi == NONE || end < best_end ||
                (end == best_end && cost(h, dmax(M, end), D + Dy(P, j, s)) <
                                        cost(h, dmax(M, end), D + Dy(P, j, cf->size[bi])))) {
                best_end = end;
                bi = i;
            }
            continue;
        }
        double v = cost(h, dmax(M, end), D + Dy(P, j, s));
        if (bi == NONE || v < best || (v == best && end < best_end)) {
            best = v;
            best_end = end;
            bi = i;
        }
    }
    return bi;
}

/*
 * GPU g's jobs mine[0..n-1] (longest first) placed greedily on configuration c, off the fleet.
 * rest[q] is the least dynamic energy jobs q.. can add; once the cost so far with it exceeds
 * beat (the cost grows with the makespan and the energy), the trial cannot be chosen and stops.
 */
static struct trial try_cfg(const struct hs *h, size_t c, const size_t *mine, size_t n, double Mo,
                            double Dother, const double *rest, double beat)
{
    const struct prob *P = h->P;
    const struct config *cf = &P->cfg[c];
    double Bl[MAXI] = {0};
    double D = Dother, gmax = 0;
    for (size_t q = 0; q < n; q++) {
        size_t j = mine[q];
        size_t bi = local_pick(h, cf, Bl, j, Mo, gmax, D);
        if (bi == NONE)
            return (struct trial){INFINITY, INFINITY};
        Bl[bi] += T(P, j, cf->size[bi]);
        D += Dy(P, j, cf->size[bi]);
        gmax = dmax(gmax, Bl[bi]);
        if (cost(h, dmax(Mo, gmax), D + rest[q + 1]) > beat)
            return (struct trial){INFINITY, INFINITY};
    }
    return (struct trial){cost(h, dmax(Mo, gmax), D), gmax};
}

/* GPU g's jobs into buf, longest first; their number. */
static size_t gpu_jobs(const struct hs *h, unsigned g, size_t *buf)
{
    size_t n = 0;
    for (size_t i = 0; i < MAXI; i++)
        for (size_t j = h->head[(size_t)g * MAXI + i]; j != NONE; j = h->next[j])
            buf[n++] = j;
    /* Insertion sort: a GPU holds few jobs. */
    for (size_t x = 1; x < n; x++) {
        size_t v = buf[x], y = x;
        while (y > 0 && h->rk[buf[y - 1]] > h->rk[v]) {
            buf[y] = buf[y - 1];
            y--;
        }
        buf[y] = v;
    }
    return n;
}

/* Re-places GPU g's jobs on configuration c as try_cfg did. */
static void apply_cfg(struct hs *h, unsigned g, size_t c, const size_t *mine, size_t n)
{
    for (size_t q = 0; q < n; q++)
        mb__hs_take(h, mine[q]);
    mb__hs_set_cfg(h, g, c);
    const struct config *cf = &h->P->cfg[c];
    double Mo = mb__hs_max_without_gpu(h, g);
    double Bl[MAXI] = {0};
    double D = h->D, gmax = 0;
    for (size_t q = 0; q < n; q++) {
        size_t j = mine[q];
        size_t bi = local_pick(h, cf, Bl, j, Mo, gmax, D);
        Bl[bi] += T(h->P, j, cf->size[bi]);
        D += Dy(h->P, j, cf->size[bi]);
        gmax = dmax(gmax, Bl[bi]);
        mb__hs_put(h, j, (size_t)g * MAXI + bi);
    }
}

size_t mb__hs_configs(struct hs *h, size_t *buf, double deadline)
{
    const struct prob *P = h->P;
    size_t changed = 0;
    for (unsigned g = 0; g < h->G; g++) {
        if ((g & 15) == 0 && deadline > 0 && (double)mb_clock_monotonic_ns() * 1e-9 > deadline)
            break;
        size_t n = gpu_jobs(h, g, buf);
        double Mo = mb__hs_max_without_gpu(h, g);
        double Dg = 0;
        for (size_t q = 0; q < n; q++)
            Dg += Dy(P, buf[q], mb__hs_size(h, h->asg[buf[q]]));
        double Dother = h->D - Dg;
        double *rest = h->rest;
        rest[n] = 0;
        for (size_t q = n; q-- > 0;)
            rest[q] = rest[q + 1] + h->min_dy[buf[q]];
        struct trial cur = try_cfg(h, h->cfg[g], buf, n, Mo, Dother, rest, INFINITY);
        /* The current placement may beat its own greedy re-placement. */
        double gm = 0;
        for (size_t i = 0; i < MAXI; i++)
            gm = dmax(gm, h->B[(size_t)g * MAXI + i]);
        struct trial now = {mb__hs_cur(h), gm};
        if (now.cost < cur.cost || (now.cost == cur.cost && now.gmax < cur.gmax))
            cur = now;
        size_t bc = NONE;
        for (size_t c = 0; c < P->ncfg; c++) {
            if (c == h->cfg[g])
                continue;
            h->nodes++;
            /* Beyond this a trial loses to cur whatever its end (mb__plan_lt's tolerance is
               1e-9). */
            double beat = cur.cost + 1e-7 * fabs(cur.cost);
            struct trial t = try_cfg(h, c, buf, n, Mo, Dother, rest, beat);
            if (mb__plan_lt(t.cost, cur.cost) ||
                (!mb__plan_lt(cur.cost, t.cost) && t.gmax < cur.gmax * (1 - 1e-9))) {
                cur = t;
                bc = c;
            }
        }
        if (bc != NONE) {
            apply_cfg(h, g, bc, buf, n);
            changed++;
        }
    }
    return changed;
}
