/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Outside load during the cell's windows (docs/run.md, "Outside load"): a /proc snapshot when a
 * window opens and one when it closes, the figures and verdict of base/hostload.c per window,
 * a note when a window was loaded, and the figures of cell.json's "outside_load" (its typed
 * record, results/cell_record.h), read from mb_hostload_root().
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "run/runner_internal.h"

void mb__rn_load_begin(struct cell *c)
{
    mb_hostload_snap(mb_hostload_root(), (int)getpid(), &c->load_at);
}

void mb__rn_load_end(struct cell *c, struct job **js, size_t n)
{
    struct mb_hostload_snap end;
    mb_hostload_snap(mb_hostload_root(), (int)getpid(), &end);
    double cores = 0;
    bool cores_known = true;
    for (size_t i = 0; i < n; i++) {
        if (!js[i]->win_start_ns)
            continue;
        cores += js[i]->cores;
        cores_known = cores_known && js[i]->cores > 0;
    }
    if (c->n_load >= MB_EXP_MAX_JOBS)
        return;
    struct mb_hostload *w = &c->load[c->n_load++];
    mb_hostload_window(&c->load_at, &end, cores_known ? cores : 0, w);
    if (w->loaded)
        mb__rn_emit(c, MB_RUNNER_NOTE,
                    "window taken under outside load (%s): its figures may be affected", w->why);
}

/* The cell's verdict: loaded when any window was; quiet when every window was measured and
 * none was; null when no window could be judged. Figures are the worst over the windows. */
void mb__rn_load_fill(const struct cell *c, struct mb_cell_load *out)
{
    struct mb_hostload *all = &out->all;
    memset(out, 0, sizeof(*out));
    out->present = true;
    bool every = c->n_load > 0;
    for (size_t i = 0; i < c->n_load; i++) {
        const struct mb_hostload *w = &c->load[i];
        every = every && w->verdict_ok;
        all->verdict_ok |= w->verdict_ok;
        if (w->loaded && !all->loaded)
            snprintf(all->why, sizeof(all->why), "%s", w->why);
        all->loaded |= w->loaded;
        if (w->steal_ok && (!all->steal_ok || w->steal_pct > all->steal_pct))
            all->steal_pct = w->steal_pct, all->steal_ok = true;
        if (w->other_ok && (!all->other_ok || w->other_pct > all->other_pct))
            all->other_pct = w->other_pct, all->other_ok = true;
        if (w->load_ok && (!all->load_ok || w->load1 > all->load1))
            all->load1 = w->load1, all->load_ok = true;
        if (w->cpus)
            all->cpus = w->cpus;
        if (w->job_cores > all->job_cores)
            all->job_cores = w->job_cores;
        if (out->n_windows < MB_EXP_MAX_JOBS)
            out->windows[out->n_windows++] = *w;
    }
    all->verdict_ok = all->loaded || every;
    snprintf(out->source, sizeof(out->source), "%s", mb_hostload_root());
}
