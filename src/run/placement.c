/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Where a MIG run's layout goes: the one placement and job-to-instance rule (experiment.h,
 * mb_exp_run_place), used by the runner beside what the GPU holds and by `run --dry-run` on an
 * empty GPU.
 */
#include <stdbool.h>

#include "migbench/experiment.h"
#include "migbench/layout.h"

int mb_exp_run_place(const struct mb_gpu_model *m, const struct mb_layout *existing,
                     const struct mb_exp_run *run, struct mb_layout *all,
                     struct mb_layout_item placed[MB_EXP_MAX_JOBS], struct mb_error *err)
{
    unsigned add[MB_EXP_MAX_JOBS];
    for (size_t i = 0; i < run->n_layout; i++) {
        const struct mb_gi_profile *p;
        struct mb_error e;
        if (mb_model_profile_resolve(m, run->layout[i], &p, &e) != MB_OK)
            return mb_error_set(err, MB_EINVAL, "run '%s': %s", run->name, e.msg);
        add[i] = (unsigned)(p - m->profiles);
    }
    struct mb_layout out;
    int rc = mb_layout_place(m, existing, add, run->n_layout, &out, err);
    if (rc != MB_OK)
        return rc;
    /* out is in creation order; give job i the first unused instance of its profile. */
    bool used[MB_LAYOUT_MAX] = {false};
    for (size_t i = 0; i < run->n_layout; i++) {
        size_t k;
        for (k = 0; k < out.n; k++)
            if (!used[k] && out.items[k].profile == add[i])
                break;
        if (k == out.n)
            return mb_error_set(err, MB_EINFEASIBLE, "run '%s': no placement for %s", run->name,
                                run->layout[i]);
        used[k] = true;
        placed[i] = out.items[k];
    }
    if (all)
        *all = out;
    return MB_OK;
}
