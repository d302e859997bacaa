/* SPDX-License-Identifier: Apache-2.0 */
/* The planner's power-limit choice: one solve per candidate limit, then one limit per GPU. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "migbench/clock.h"
#include "migbench/plan.h"
#include "plan/plan_internal.h"

/* True when a is a better plan than b under the objective (ties keep b, the earlier one). */
static bool better(const struct mb_plan *a, const struct mb_plan *b)
{
    switch (a->objective) {
    case MB_PLAN_ENERGY:
        return a->energy_j < b->energy_j;
    case MB_PLAN_MAKESPAN:
        return a->makespan_s < b->makespan_s;
    case MB_PLAN_THROUGHPUT:
        return a->system_throughput > b->system_throughput;
    }
    return false;
}

static void limit_name(double w, char *buf, size_t cap)
{
    if (w > 0)
        snprintf(buf, cap, "%g W", w);
    else
        snprintf(buf, cap, "default");
}

/*
 * Every failed candidate in one message: the limits that failed for the same reason grouped,
 * "default, 250 W: why; 200 W: why2". Whatever does not fit is counted, never dropped silently.
 */
static int all_failed(const double *caps_w, char (*why)[MB_ERROR_MSG_MAX], size_t n, int st,
                      struct mb_error *err)
{
    char all[MB_ERROR_MSG_MAX] = "";
    size_t len = 0, left = 0;
    bool *done = calloc(n, sizeof(bool));
    if (!done)
        return mb_error_set(err, MB_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        if (done[i])
            continue;
        char names[MB_ERROR_MSG_MAX] = "", one[32];
        size_t nl = 0;
        for (size_t k = i; k < n; k++) {
            if (done[k] || strcmp(why[k], why[i]) != 0)
                continue;
            done[k] = true;
            limit_name(caps_w[k], one, sizeof(one));
            nl += (size_t)snprintf(names + nl, sizeof(names) - nl, "%s%s", nl ? ", " : "", one);
            nl = nl < sizeof(names) ? nl : sizeof(names) - 1;
        }
        char part[2 * MB_ERROR_MSG_MAX];
        int pn = snprintf(part, sizeof(part), "%s%s: %s", len ? "; " : "", names, why[i]);
        if (left == 0 && pn > 0 && len + (size_t)pn + 48 < sizeof(all)) {
            memcpy(all + len, part, (size_t)pn + 1);
            len += (size_t)pn;
        } else {
            for (size_t k = 0; k < n; k++)
                left += strcmp(why[k], why[i]) == 0;
        }
    }
    free(done);
    if (left)
        return mb_error_set(err, st, "no power limit gives a plan: %s; %zu more limits failed too",
                            all, left);
    return mb_error_set(err, st, "no power limit gives a plan: %s", all);
}

int mb_plan_solve_caps(const struct mb_gpu_model *model, const struct mb_plan_profiles *profiles,
                       const struct mb_plan_job *jobs, size_t n_jobs,
                       const struct mb_plan_options *opt, const double *caps_w, size_t n_caps,
                       struct mb_plan_cap_result *results, struct mb_plan **out,
                       struct mb_error *err)
{
    *out = NULL;
    if (n_caps == 0)
        return mb_error_set(err, MB_EINVAL, "no candidate power limits");
    int first_st = MB_OK;
    char(*why)[MB_ERROR_MSG_MAX] = calloc(n_caps, sizeof(*why));
    struct mb_plan **plans = calloc(n_caps, sizeof(*plans));
    if (!why || !plans) {
        free(why);
        free(plans);
        return mb_error_set(err, MB_ENOMEM, "out of memory");
    }
    /* One time budget for the whole choice: with several candidates each shared-limit solve
       gets an equal share of it and the per-GPU search what is left. */
    double budget = opt->time_limit_s > 0 ? opt->time_limit_s : 5;
    double t0 = (double)mb_clock_monotonic_ns() * 1e-9;
    for (size_t i = 0; i < n_caps; i++) {
        struct mb_plan_options o = *opt;
        o.power_limit_w = caps_w[i] > 0 ? caps_w[i] : 0;
        o.time_limit_s = n_caps > 1 ? budget / (double)(n_caps + 1) : budget;
        struct mb_plan *pl = NULL;
        struct mb_error e;
        mb_error_clear(&e);
        int st = mb_plan_solve(model, profiles, jobs, n_jobs, &o, &pl, &e);
        if (results)
            results[i] = (struct mb_plan_cap_result){
                .power_limit_w = caps_w[i] > 0 ? caps_w[i] : NAN,
                .status = st,
                .energy_j = st == MB_OK ? pl->energy_j : NAN,
                .makespan_s = st == MB_OK ? pl->makespan_s : NAN,
                .system_throughput = st == MB_OK ? pl->system_throughput : NAN,
                .exact = st == MB_OK && pl->exact,
            };
        if (st != MB_OK) {
            /* The most telling status: bad input over "no plan". */
            if (first_st == MB_OK || (first_st == MB_EINFEASIBLE && st != MB_EINFEASIBLE))
                first_st = st;
            snprintf(why[i], sizeof(why[i]), "%s", e.msg);
            continue;
        }
        plans[i] = pl;
        if (!*out || better(pl, *out))
            *out = pl;
    }
    int st = MB_OK;
    if (*out) {
        /* One limit per GPU, from every shared-limit plan; the best shared one when none beats
           it. */
        struct mb_plan *best = *out;
        *out = NULL;
        struct mb_plan_options o = *opt;
        double left = budget - ((double)mb_clock_monotonic_ns() * 1e-9 - t0);
        o.time_limit_s =
            left > budget / (double)(n_caps + 1) ? left : budget / (double)(n_caps + 1);
        st = mb__plan_per_gpu(model, profiles, jobs, n_jobs, &o, caps_w, n_caps, plans, &best, err);
        bool a_start = false;
        for (size_t i = 0; i < n_caps; i++)
            a_start |= plans[i] == best;
        if (st == MB_OK)
            *out = best;
        else if (!a_start)
            mb_plan_destroy(best); /* a new plan (the starts are released below) */
    }
    for (size_t i = 0; i < n_caps; i++)
        if (plans[i] != *out)
            mb_plan_destroy(plans[i]);
    free(plans);
    if (!*out) {
        /* Only the failed ones: a limit that gave a plan has an empty reason. */
        size_t n = 0;
        double *failed = malloc(n_caps * sizeof(double));
        for (size_t i = 0; failed && i < n_caps; i++)
            if (why[i][0]) {
                failed[n] = caps_w[i];
                memmove(why[n], why[i], sizeof(why[i]));
                n++;
            }
        st = failed ? all_failed(failed, why, n, first_st, err)
                    : mb_error_set(err, MB_ENOMEM, "out of memory");
        free(failed);
    }
    free(why);
    return st;
}
