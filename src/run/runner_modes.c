/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The runner's sharing modes around a cell: a MIG layout made and removed through the one
 * create and destroy of mig.c (each step journaled, the ledger first), and the MPS control daemon.
 */
#define _DEFAULT_SOURCE /* realpath */
#include "results/results_json.h"
#include "migbench/runner.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "migbench/clock.h"
#include "migbench/layout.h"
#include "migbench/mig.h"
#include "migbench/meter.h"
#include "migbench/proc.h"
#include "migbench/progress.h"
#include "run/runner_power.h"
#include "run/runner_internal.h"

/* ---- helper processes (MPS control)
 * ------------------------------------------------------ */

int mb__rn_mps_quit(const char *pipe_dir, const char *log_dir, char *why, size_t cap)
{
    char pe[1200], le[1200], log[1200];
    snprintf(pe, sizeof(pe), "CUDA_MPS_PIPE_DIRECTORY=%s", pipe_dir);
    snprintf(le, sizeof(le), "CUDA_MPS_LOG_DIRECTORY=%s", log_dir[0] ? log_dir : pipe_dir);
    snprintf(log, sizeof(log), "%s/control-client.log", log_dir[0] ? log_dir : pipe_dir);
    char *env[] = {pe, le, NULL};
    char *argv[] = {(char *)MPS_CONTROL, NULL};
    int code = mb_proc_run_helper(argv, env, "quit\n", log, 15000, why, cap);
    if (code > 0)
        snprintf(why, cap, "%s quit exited %d (see %.150s)", MPS_CONTROL, code, log);
    return code == 0 ? MB_OK : MB_EDEVICE;
}

/* ---- mode preparation
 * -------------------------------------------------------------------- */

/* Where the run's layout goes beside what exists: placed[i] for job i (mb_exp_run_place). */
int mb__rn_plan_mig(struct mb_device *dev, const struct mb_gpu_model *m, const struct mb_exp_run *r,
                    struct mb_layout_item placed[MB_EXP_MAX_JOBS], struct mb_error *err)
{
    struct mb_layout existing;
    int rc = mb_mig_current_layout(dev, m, &existing, err);
    return rc != MB_OK ? rc : mb_exp_run_place(m, &existing, r, NULL, placed, err);
}

/* The run's jobs run on MIG instances: mode mig, or exclusive `on: mig-SIZE`. */
bool mb__rn_uses_mig(const struct mb_exp_run *r)
{
    return r->mode == MB_MODE_MIG || r->on[0];
}

static int open_ledger(struct cell *c)
{
    struct mb_error e;
    if (!c->ledger && mb_mig_ledger_open(c->o->dev, c->o->device_spec, &c->ledger, &e) != MB_OK) {
        mb__rn_cell_fail(c, -1, "MIG ownership ledger: %s", e.msg);
        return MB_EIO;
    }
    return MB_OK;
}

/* The create/destroy hooks' view of one instance of the cell. */
struct mig_step {
    struct cell *c;
    struct inst *in;
    int journal_rc;
};

/*
 * The journal's "mig_created"/"mig_destroyed" events name the instance and the ledger that
 * records it ("ledger": its path): the ledger is the record --resume cleans from.
 */
static int mig_journal(struct mig_step *st, enum mb_jev_kind kind, enum mb_mig_step step,
                       unsigned gi_id, unsigned ci_id, struct mb_error *err)
{
    struct mb_jev e = mb__rn_jev(kind, st->c);
    e.gi_id = gi_id;
    e.has_gi = true;
    if (step == MB_MIG_STEP_CI) {
        e.has_ci = true;
        e.ci_id = ci_id;
    } else if (kind == MB_JEV_MIG_CREATED) {
        e.profile = st->in->profile;
        e.placement = st->in->placement;
    }
    e.ledger = mb_mig_ledger_path(st->c->ledger);
    int rc = mb__rn_jappend(st->c, mb_jev_encode(&e));
    if (rc != MB_OK)
        st->journal_rc = rc;
    return rc == MB_OK ? MB_OK : mb_error_set(err, rc, "%s", st->c->err->msg);
}

static int mig_made(void *ctx, enum mb_mig_step step, unsigned gi_id, unsigned ci_id,
                    struct mb_error *err)
{
    struct mig_step *st = ctx;
    if (step == MB_MIG_STEP_GI) {
        st->in->gi_made = true;
        st->in->gi_id = gi_id;
    } else {
        st->in->ci_made = true;
        st->in->ci_id = ci_id;
    }
    return mig_journal(st, MB_JEV_MIG_CREATED, step, gi_id, ci_id, err);
}

static int mig_destroyed(void *ctx, enum mb_mig_step step, unsigned gi_id, unsigned ci_id,
                         struct mb_error *err)
{
    struct mig_step *st = ctx;
    if (step == MB_MIG_STEP_CI)
        st->in->ci_made = false;
    else
        st->in->gi_made = false;
    return mig_journal(st, MB_JEV_MIG_DESTROYED, step, gi_id, ci_id, err);
}

/* Largest first (the order the layout engine chose): order[] of the cell's layout. */
static void creation_order(const struct mb_gpu_model *m, const struct mb_layout_item *placed,
                           size_t n, size_t *order)
{
    for (size_t i = 0; i < n; i++)
        order[i] = i;
    for (size_t a = 1; a < n; a++)
        for (size_t b = a; b > 0; b--) {
            const struct mb_gi_profile *pa = &m->profiles[placed[order[b]].profile];
            const struct mb_gi_profile *pb = &m->profiles[placed[order[b - 1]].profile];
            if (pa->memory_slices <= pb->memory_slices)
                break;
            size_t t = order[b];
            order[b] = order[b - 1];
            order[b - 1] = t;
        }
}

/* Creates one instance of the layout through the one create (mb_mig_create). */
static int create_inst(struct cell *c, struct inst *in, unsigned driver_id)
{
    const struct mb_mig_new req = {driver_id, in->profile, in->placement, MB_MIG_BY_RUN,
                                   c->o->results_dir};
    struct mig_step st = {c, in, MB_OK};
    const struct mb_mig_hooks hooks = {mig_made, NULL, &st};
    struct mb_mig_made made;
    struct mb_error e;
    int rc = mb_mig_create(c->o->dev, c->ledger, &req, &hooks, &made, &e);
    snprintf(in->uuid, sizeof(in->uuid), "%s", made.uuid);
    if (made.ledger_note[0])
        mb__rn_emit(c, MB_RUNNER_NOTE, "MIG ownership ledger: %s", made.ledger_note);
    if (rc == MB_OK)
        return MB_OK;
    switch (made.failed) {
    case MB_MIG_STEP_LEDGER:
        mb__rn_cell_fail(c, -1, "cannot record the instance before creating it: %s", e.msg);
        break;
    case MB_MIG_STEP_GI:
        mb__rn_cell_fail(c, -1, "cannot create GPU instance %s at slice %u: %s", in->profile,
                         in->placement.start, e.msg);
        break;
    case MB_MIG_STEP_CI:
        mb__rn_cell_fail(c, -1, "cannot create the compute instance in GPU instance %u: %s",
                         in->gi_id, e.msg);
        break;
    default:
        return rc; /* the journal refused (c->err says why) */
    }
    return MB_OK; /* the cell failed (c->failed); the run goes on */
}

/* The device's profile named like the catalog's (NULL: the device does not offer it). */
static const struct mb_device_profile *device_profile(const struct mb_device_profile *dp, size_t n,
                                                      const char *name)
{
    const struct mb_device_profile *found = NULL;
    for (size_t k = 0; k < n; k++)
        if (strcasecmp(dp[k].name, name) == 0)
            found = &dp[k];
    return found;
}

int mb__rn_prepare_mig(struct cell *c)
{
    const struct mb_exp_run *r = c->run;
    const struct mb_gpu_model *m = c->o->model;
    struct mb_error e;
    if (!m) {
        mb__rn_cell_fail(c, -1, "mode mig: the device's model is not in the catalog");
        return MB_OK;
    }
    struct mb_layout_item placed[MB_EXP_MAX_JOBS];
    if (mb__rn_plan_mig(c->o->dev, m, r, placed, &e) != MB_OK) {
        mb__rn_cell_fail(c, -1, "cannot place layout: %s", e.msg);
        return MB_OK;
    }
    struct mb_device_profile dp[MB_MAX_PROFILES];
    size_t n_dp = 0;
    if (mb_device_mig_profiles(c->o->dev, dp, MB_MAX_PROFILES, &n_dp, &e) != MB_OK) {
        mb__rn_cell_fail(c, -1, "cannot list MIG profiles: %s", e.msg);
        return MB_OK;
    }
    if (open_ledger(c) != MB_OK)
        return MB_OK;
    int64_t t_start = mb_clock_monotonic_ns();
    /* Each instance is in the ledger before it exists (mb_mig_create), so that a crash at any
     * point leaves a record that names everything. */
    size_t order[MB_EXP_MAX_JOBS];
    creation_order(m, placed, r->n_layout, order);
    c->n_inst = r->n_layout;
    for (size_t oi = 0; oi < r->n_layout; oi++) {
        struct inst *in = &c->inst[order[oi]];
        const struct mb_gi_profile *gp = &m->profiles[placed[order[oi]].profile];
        snprintf(in->profile, sizeof(in->profile), "%s", gp->name);
        snprintf(in->requested, sizeof(in->requested), "%s", r->layout[order[oi]]);
        in->placement = placed[order[oi]].placement;
        const struct mb_device_profile *dprof = device_profile(dp, n_dp, gp->name);
        if (!dprof) {
            mb__rn_cell_fail(c, -1, "the device does not offer profile %s", gp->name);
            return MB_OK;
        }
        int rc = create_inst(c, in, dprof->driver_id);
        if (rc != MB_OK || c->failed)
            return rc;
        char sl[32];
        mb_layout_slices_str(in->placement, sl, sizeof(sl));
        mb__rn_emit(c, MB_RUNNER_NOTE, "created %s at memory slices %s (GI %u, CI %u)", gp->name,
                    sl, in->gi_id, in->ci_id);
    }
    c->reconfigure_s = (double)(mb_clock_monotonic_ns() - t_start) / 1e9;
    for (size_t i = 0; i < c->n_inst; i++)
        if (!c->inst[i].uuid[0]) {
            mb__rn_cell_fail(c, -1, "the device reports no UUID for GI %u CI %u", c->inst[i].gi_id,
                             c->inst[i].ci_id);
            return MB_OK;
        }
    return MB_OK;
}

/* Destroys what the cell made through the one destroy (mb_mig_destroy); each GI loses its CI
 * first. */
int mb__rn_teardown_mig(struct cell *c)
{
    int rc = MB_OK;
    for (size_t i = c->n_inst; i-- > 0;) {
        struct inst *in = &c->inst[i];
        if (!in->gi_made)
            continue;
        struct mb_mig_gi g;
        memset(&g, 0, sizeof(g));
        g.id = in->gi_id;
        snprintf(g.profile_name, sizeof(g.profile_name), "%s", in->profile);
        g.placement = in->placement;
        g.n_ci = in->ci_made ? 1 : 0;
        g.ci[0] = in->ci_id;
        struct mig_step st = {c, in, MB_OK};
        const struct mb_mig_hooks hooks = {NULL, mig_destroyed, &st};
        struct mb_error e;
        if (mb_mig_destroy(c->o->dev, c->ledger, &g, &hooks, &e) != MB_OK && st.journal_rc == MB_OK)
            mb__rn_emit(c, MB_RUNNER_NOTE, "%s", e.msg);
        if (in->gi_made)
            rc = MB_EBUSY;
        else if (st.journal_rc != MB_OK)
            rc = MB_EIO;
    }
    return rc;
}

bool mb__rn_on_path(const char *name)
{
    const char *path = getenv("PATH");
    if (!path)
        return false;
    for (const char *p = path; *p;) {
        const char *colon = strchr(p, ':');
        size_t l = colon ? (size_t)(colon - p) : strlen(p);
        char cand[1200];
        snprintf(cand, sizeof(cand), "%.*s/%s", (int)l, l ? p : ".", name);
        if (access(cand, X_OK) == 0)
            return true;
        if (!colon)
            break;
        p = colon + 1;
    }
    return false;
}

int mb__rn_prepare_mps(struct cell *c)
{
    struct mb_error e;
    char base[1100];
    snprintf(base, sizeof(base), "%s/mps/%s-%u", c->o->results_dir, c->run->name, c->rep);
    snprintf(c->mps_pipe, sizeof(c->mps_pipe), "%.1000s/pipe", base);
    snprintf(c->mps_log, sizeof(c->mps_log), "%.1000s/log", base);
    if (mb_results_mkdirs(c->mps_pipe, 0700, &e) != MB_OK ||
        mb_results_mkdirs(c->mps_log, 0700, &e) != MB_OK) {
        mb__rn_cell_fail(c, -1, "MPS directories: %s", e.msg);
        return MB_OK;
    }
    chmod(base, 0700);
    chmod(c->mps_pipe, 0700);
    chmod(c->mps_log, 0700);
    mb_exp_run_thread_pct(c->run, c->o->model ? c->o->model->compute_slices : 7, c->pct);
    if ((mb_device_caps(c->o->dev) & MB_CAP_EMULATED) && !mb__rn_on_path(MPS_CONTROL)) {
        /* No NVIDIA utilities and no GPU for a daemon to serve: the jobs share the emulated GPU
         * with the MPS environment they would get, and cell.json says there was no daemon. */
        c->mps_emulated = true;
        mb__rn_emit(c, MB_RUNNER_NOTE, "emulated GPU: no MPS daemon; the jobs get its environment");
        return MB_OK;
    }
    /* Journal first: if we die between starting the daemon and journaling it,
     * --resume must still know to tell it to quit (quitting a daemon that never
     * started is harmless). */
    struct mb_jev started = mb__rn_jev(MB_JEV_MPS_STARTED, c);
    started.pipe_dir = c->mps_pipe;
    started.log_dir = c->mps_log;
    int rc = mb__rn_jappend(c, mb_jev_encode(&started));
    if (rc != MB_OK)
        return rc;
    c->mps_up = true;
    char pe[1200], le[1200], log[1200], why[256];
    snprintf(pe, sizeof(pe), "CUDA_MPS_PIPE_DIRECTORY=%s", c->mps_pipe);
    snprintf(le, sizeof(le), "CUDA_MPS_LOG_DIRECTORY=%s", c->mps_log);
    snprintf(log, sizeof(log), "%s/control-start.log", c->mps_log);
    char cvd[MB_UUID_MAX + 32];
    snprintf(cvd, sizeof(cvd), "CUDA_VISIBLE_DEVICES=%s", c->info.uuid);
    char *env[] = {pe, le, c->info.uuid[0] ? cvd : NULL, NULL};
    char *argv[] = {(char *)MPS_CONTROL, (char *)"-d", NULL};
    int code = mb_proc_run_helper(argv, env, NULL, log, 15000, why, sizeof(why));
    if (code != 0) {
        if (code > 0)
            snprintf(why, sizeof(why), "%s -d exited %d (see %.150s)", MPS_CONTROL, code, log);
        mb__rn_cell_fail(c, -1, "cannot start MPS: %s", why);
    } else {
        mb__rn_emit(c, MB_RUNNER_NOTE, "MPS control daemon started (pipe %s)", c->mps_pipe);
    }
    return MB_OK;
}

int mb__rn_teardown_mps(struct cell *c)
{
    if (!c->mps_up)
        return MB_OK;
    char why[256] = "";
    int rc = mb__rn_mps_quit(c->mps_pipe, c->mps_log, why, sizeof(why));
    if (rc != MB_OK)
        mb__rn_emit(c, MB_RUNNER_NOTE, "MPS quit failed: %s", why);
    c->mps_up = false;
    struct mb_jev e = mb__rn_jev(MB_JEV_MPS_STOPPED, c);
    e.pipe_dir = c->mps_pipe;
    e.ok = rc == MB_OK;
    int jrc = mb__rn_jappend(c, mb_jev_encode(&e));
    return rc != MB_OK ? rc : jrc;
}
