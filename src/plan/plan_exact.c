/* SPDX-License-Identifier: Apache-2.0 */
/* The exact search on one GPU: branch and bound, and plain enumeration for tests. */
#include "plan/plan_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    size_t node_end; /* stop when P->nodes reaches it (SIZE_MAX: never) */
    bool stopped;
    /* incumbent */
    bool have;
    double bp, bs;
    size_t best_cfg;
    size_t *best_asg;
};

static void bb_leaf(struct bb *b)
{
    struct metrics m = mb__plan_evaluate(b->P, b->cfgv, b->asg, 1, NULL);
    if (!m.ok)
        return;
    double p, s;
    mb__plan_objective(b->P, 1, &m, &p, &s);
    if (!b->have || mb__plan_better(p, s, b->bp, b->bs)) {
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
        return !mb__plan_lt(b->bp, lb);
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
    return !mb__plan_lt(b->bp, lb);
}

static void bb_rec(struct bb *b, size_t k)
{
    struct prob *P = b->P;
    if (b->stopped || ++P->nodes >= b->node_end) {
        b->stopped = true;
        return;
    }
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

/* A plan given on entry (*found) as the incumbent: the search then looks only for better ones. */
static void bb_incumbent(struct bb *b, const size_t *cfg, bool found)
{
    if (!found)
        return;
    struct metrics m = mb__plan_evaluate(b->P, cfg, b->best_asg, 1, NULL);
    if (!m.ok)
        return;
    b->have = true;
    b->best_cfg = cfg[0];
    mb__plan_objective(b->P, 1, &m, &b->bp, &b->bs);
}

int mb__plan_solve_exact(struct prob *P, size_t *best_cfg, size_t *best_asg, bool *found,
                         size_t node_limit, bool *complete, struct mb_error *err)
{
    size_t nj = P->nj;
    struct bb b;
    memset(&b, 0, sizeof(b));
    b.P = P;
    b.node_end = node_limit ? P->nodes + node_limit : SIZE_MAX;
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
    bb_incumbent(&b, best_cfg, *found);
    for (size_t ci = 0; ci < P->ncfg && !b.stopped; ci++) {
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
    *complete = !b.stopped;
    free(b.order);
    free(b.same_prev);
    free(b.asg);
    free(buf);
    return MB_OK;
}

/* Plain enumeration for tests: every configuration, every assignment, no pruning. */
int mb__plan_solve_brute(struct prob *P, size_t *best_cfg, size_t *best_asg, bool *found,
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
                struct metrics m = mb__plan_evaluate(P, cfgv, asg, 1, NULL);
                double p, s;
                mb__plan_objective(P, 1, &m, &p, &s);
                if (m.ok && (!have || mb__plan_better(p, s, bp, bs))) {
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
