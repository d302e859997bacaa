/* SPDX-License-Identifier: Apache-2.0 */
/* Continuous jobs on a fleet: greedy on one configuration, and a round-robin split solved per GPU.
 */
#include "plan/plan_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool cont_split(struct prob *P, unsigned G, size_t *cfg_out, size_t *asg_out);

/* Continuous jobs on a fleet: one configuration on every GPU, jobs greedily to free instances. */
int mb__plan_solve_cont(struct prob *P, unsigned G, size_t *cfg_out, size_t *asg_out, bool *found,
                        struct mb_error *err)
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
        if (ok && mb__plan_better(-S, Pw, -bestS, bestP)) {
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
        struct metrics m = mb__plan_evaluate(P, cfg2, asg, G, NULL);
        if (m.ok && (!*found || mb__plan_better(-m.S, m.P, -bestS, bestP + (double)G * P->idle))) {
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
        if (!cs->have || mb__plan_better(-cs->S, cs->Pw, -cs->bestS, cs->bestP)) {
            cs->have = true;
            cs->bestS = cs->S;
            cs->bestP = cs->Pw;
            cs->best_cfg = cs->ci;
            memcpy(cs->best, cs->cur, sizeof(cs->cur));
        }
        return;
    }
    if (cs->have && mb__plan_lt(cs->S + rem_max, cs->bestS))
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
