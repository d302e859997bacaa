/* SPDX-License-Identifier: Apache-2.0 */
/* The planner's power-limit choice: one solve per candidate limit, the best plan kept. */
#include <math.h>
#include <stdlib.h>

#include "migbench/plan.h"

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
    struct mb_error first_err;
    mb_error_clear(&first_err);
    for (size_t i = 0; i < n_caps; i++) {
        struct mb_plan_options o = *opt;
        o.power_limit_w = caps_w[i] > 0 ? caps_w[i] : 0;
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
            if (first_st == MB_OK) {
                first_st = st;
                first_err = e;
                if (caps_w[i] > 0)
                    mb_error_prefix(&first_err, "power limit %g W: ", caps_w[i]);
                else
                    mb_error_prefix(&first_err, "default power limit: ");
            }
            continue;
        }
        if (!*out || better(pl, *out)) {
            mb_plan_destroy(*out);
            *out = pl;
        } else {
            mb_plan_destroy(pl);
        }
    }
    if (*out)
        return MB_OK;
    if (err)
        *err = first_err;
    return first_st;
}
