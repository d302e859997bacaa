/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Whether G GPUs can give every job a partition at all: jobs queue, so a fleet can run every job
 * exactly when some G layouts (or MIG off) together contain, for each job, a size it may use. Jobs
 * with the same set of usable sizes are one type; an exact search over layouts, branching on the
 * first type not yet covered, answers yes (with the layouts) or no (a proof), or gives up after a
 * node budget. The explanation of a "no" names the jobs that make it so.
 */
#include "plan/plan_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_TYPES 64
#define NODE_BUDGET 2000000

struct cover {
    const struct prob *P;
    unsigned G;
    size_t nt;
    uint32_t tmask[MAX_TYPES]; /* usable sizes of each type */
    size_t tjob[MAX_TYPES];    /* a job of each type */
    uint64_t *cov;             /* per distinct configuration: the types it covers */
    size_t *cfg_of;            /* its configuration */
    size_t nc;
    size_t pick[MB_PLAN_MAX_GPUS];
    size_t nodes;
};

static uint32_t job_mask(const struct prob *P, size_t j)
{
    uint32_t m = 0;
    for (unsigned s = 0; s < P->ns; s++)
        if (allowed(P, j, s))
            m |= (uint32_t)1 << s;
    return m;
}

static uint32_t cfg_mask(const struct config *c)
{
    uint32_t m = 0;
    for (size_t i = 0; i < c->n; i++)
        m |= (uint32_t)1 << c->size[i];
    return m;
}

/* Job types; false when there are more than MAX_TYPES. */
static bool types(struct cover *cv)
{
    const struct prob *P = cv->P;
    cv->nt = 0;
    for (size_t j = 0; j < P->nj; j++) {
        uint32_t m = job_mask(P, j);
        size_t t = 0;
        while (t < cv->nt && cv->tmask[t] != m)
            t++;
        if (t < cv->nt)
            continue;
        if (cv->nt == MAX_TYPES)
            return false;
        cv->tmask[cv->nt] = m;
        cv->tjob[cv->nt++] = j;
    }
    return true;
}

/* Distinct coverage sets, none contained in another (the others never need trying). */
static bool configs(struct cover *cv)
{
    const struct prob *P = cv->P;
    cv->cov = malloc(P->ncfg * sizeof(uint64_t));
    cv->cfg_of = malloc(P->ncfg * sizeof(size_t));
    if (!cv->cov || !cv->cfg_of)
        return false;
    cv->nc = 0;
    for (size_t c = 0; c < P->ncfg; c++) {
        uint32_t cm = cfg_mask(&P->cfg[c]);
        uint64_t v = 0;
        for (size_t t = 0; t < cv->nt; t++)
            if (cm & cv->tmask[t])
                v |= (uint64_t)1 << t;
        bool dominated = false;
        for (size_t k = 0; k < cv->nc && !dominated; k++)
            dominated = (v & ~cv->cov[k]) == 0;
        if (dominated)
            continue;
        size_t w = 0;
        for (size_t k = 0; k < cv->nc; k++)
            if ((cv->cov[k] & ~v) != 0) {
                cv->cov[w] = cv->cov[k];
                cv->cfg_of[w++] = cv->cfg_of[k];
            }
        cv->nc = w;
        cv->cov[cv->nc] = v;
        cv->cfg_of[cv->nc++] = c;
    }
    return true;
}

/* 1: found, 0: none below this node, -1: budget spent. */
static int dfs(struct cover *cv, uint64_t done, unsigned depth)
{
    uint64_t all = cv->nt == 64 ? ~(uint64_t)0 : (((uint64_t)1 << cv->nt) - 1);
    if ((done & all) == all)
        return 1;
    if (depth == cv->G)
        return 0;
    if (++cv->nodes > NODE_BUDGET)
        return -1;
    size_t t = 0;
    while (done & ((uint64_t)1 << t))
        t++;
    bool unknown = false;
    for (size_t k = 0; k < cv->nc; k++) {
        if (!(cv->cov[k] & ((uint64_t)1 << t)))
            continue;
        cv->pick[depth] = cv->cfg_of[k];
        int r = dfs(cv, done | cv->cov[k], depth + 1);
        if (r == 1)
            return 1;
        unknown |= r < 0;
    }
    return unknown ? -1 : 0;
}

enum cover_result mb__plan_cover(const struct prob *P, unsigned G, size_t *cfg_out, size_t *n_used)
{
    struct cover cv;
    memset(&cv, 0, sizeof(cv));
    cv.P = P;
    cv.G = G;
    *n_used = 0;
    if (!types(&cv) || !configs(&cv)) {
        free(cv.cov);
        free(cv.cfg_of);
        return COVER_UNKNOWN;
    }
    int r = dfs(&cv, 0, 0);
    if (r == 1) {
        size_t n = 0;
        uint64_t all = cv.nt == 64 ? ~(uint64_t)0 : (((uint64_t)1 << cv.nt) - 1), done = 0;
        /* The layouts the search picked, in order, until everything is covered. */
        while ((done & all) != all && n < G) {
            for (size_t k = 0; k < cv.nc; k++)
                if (cv.cfg_of[k] == cv.pick[n])
                    done |= cv.cov[k];
            cfg_out[n] = cv.pick[n];
            n++;
        }
        *n_used = n;
    }
    free(cv.cov);
    free(cv.cfg_of);
    return r == 1 ? COVER_FOUND : r == 0 ? COVER_NONE : COVER_UNKNOWN;
}

/* "1g.10gb, 2g.20gb, full": the sizes of a mask. */
static void mask_names(const struct prob *P, uint32_t m, char *buf, size_t cap)
{
    size_t n = 0;
    buf[0] = '\0';
    for (unsigned s = 0; s < P->ns && n < cap; s++)
        if (m & ((uint32_t)1 << s))
            n += (size_t)snprintf(buf + n, cap - n, "%s%s", n ? ", " : "",
                                  s == P->full ? MB_PLAN_FULL : P->model->profiles[s].name);
}

/* Whether some configuration has sizes of both types. */
static bool together(const struct prob *P, uint32_t a, uint32_t b)
{
    for (size_t c = 0; c < P->ncfg; c++) {
        uint32_t m = cfg_mask(&P->cfg[c]);
        if ((m & a) && (m & b))
            return true;
    }
    return false;
}

int mb__plan_cover_explain(const struct prob *P, unsigned G, struct mb_error *err)
{
    struct cover cv;
    memset(&cv, 0, sizeof(cv));
    cv.P = P;
    if (!types(&cv))
        return mb_error_set(err, MB_EINFEASIBLE, "no %u GPU%s of %s can run every job", G,
                            G == 1 ? "" : "s", P->model->name);
    /* Types no layout can hold together (greedy): more of them than GPUs is the proof. */
    size_t pick[MAX_TYPES], n = 0;
    for (size_t t = 0; t < cv.nt; t++) {
        bool ok = true;
        for (size_t k = 0; k < n && ok; k++)
            ok = !together(P, cv.tmask[t], cv.tmask[pick[k]]);
        if (ok)
            pick[n++] = t;
    }
    bool clique = n > G;
    size_t show = clique ? n : cv.nt;
    char msg[900];
    size_t len = 0;
    for (size_t k = 0; k < show && len < sizeof(msg); k++) {
        size_t t = clique ? pick[k] : k;
        char sizes[256];
        mask_names(P, cv.tmask[t], sizes, sizeof(sizes));
        len += (size_t)snprintf(msg + len, sizeof(msg) - len, "%s'%s' (%s)", k ? ", " : "",
                                P->jobs[cv.tjob[t]].name, sizes);
    }
    if (clique)
        return mb_error_set(err, MB_EINFEASIBLE,
                            "no %u GPU%s of %s can run every job: no layout has partitions for "
                            "two of the jobs %s, so they need %zu GPUs",
                            G, G == 1 ? "" : "s", P->model->name, msg, n);
    return mb_error_set(err, MB_EINFEASIBLE,
                        "no %u GPU%s of %s can run every job: no choice of %u layouts has a "
                        "partition for each of the jobs %s (every combination checked)",
                        G, G == 1 ? "" : "s", P->model->name, G, msg);
}
