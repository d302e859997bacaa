/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Before and after a session's cells: the preflight of the selected cells, and the resume
 * cleanup of what a dead run left (MIG instances by the ledger, MPS daemons by the journal).
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

/* ---- preflight and cleanup
 * --------------------------------------------------------------- */

/* Every instance a run makes is recorded first: the ledger must be writable before it starts. */
static int ledger_writable(const struct mb_runner_opts *o, const struct mb_exp_run *r,
                           struct mb_error *err)
{
    struct mb_mig_ledger *l = NULL;
    struct mb_error e;
    int rc = mb_mig_ledger_open(o->dev, o->device_spec, &l, &e);
    if (rc == MB_OK)
        rc = mb_mig_ledger_check_writable(l, &e);
    mb_mig_ledger_close(l);
    if (rc != MB_OK)
        return mb_error_set(err, rc, "run '%s': %s", r->name, e.msg);
    return MB_OK;
}

int mb_runner_preflight(const struct mb_runner_opts *o, const struct mb_cell *cells, size_t n_cells,
                        struct mb_error *err)
{
    for (size_t i = 0; i < n_cells; i++) {
        const struct mb_exp_run *r = &o->exp->runs[cells[i].run];
        if (i > 0 && cells[i - 1].run == cells[i].run)
            continue;
        /* An emulated GPU runs mps without a daemon (prepare_mps); a measured one needs it. */
        bool emulated = mb_device_caps(o->dev) & MB_CAP_EMULATED;
        if (r->mode == MB_MODE_MPS && !emulated) {
            if (!(mb_device_caps(o->dev) & MB_CAP_MPS))
                return mb_error_set(err, MB_EUNSUPPORTED,
                                    "run '%s': mode mps needs a real GPU through the nvml backend "
                                    "(this device is %s); use --only to leave it out",
                                    r->name, mb_device_backend(o->dev));
            if (!mb__rn_on_path(MPS_CONTROL))
                return mb_error_set(err, MB_EUNSUPPORTED,
                                    "run '%s': mode mps needs %s on PATH (part of the NVIDIA "
                                    "driver utilities)",
                                    r->name, MPS_CONTROL);
        }
        if (mb__rn_uses_mig(r)) {
            struct mb_mig_mode mm;
            struct mb_error e;
            if (mb_device_mig_mode(o->dev, &mm, &e) != MB_OK)
                return mb_error_set(err, MB_EUNSUPPORTED, "run '%s': no MIG on this device: %s",
                                    r->name, e.msg);
            if (!mm.current)
                return mb_error_set(err, MB_EUNSUPPORTED,
                                    "run '%s': MIG mode is disabled on the GPU%s; enable it first "
                                    "(nvidia-smi -i N -mig 1, then a GPU reset), or use --only",
                                    r->name, mm.pending ? " (enabled, pending a reset)" : "");
            if (!o->model)
                return mb_error_set(err, MB_EUNSUPPORTED,
                                    "run '%s': the GPU's model is not in the MIG catalog", r->name);
            /* A GPU that cannot say what it has (NVIDIA's answer quoted) is not a layout that
             * does not fit. */
            struct mb_layout existing;
            int lrc = mb_mig_current_layout(o->dev, o->model, &existing, &e);
            if (lrc != MB_OK)
                return mb_error_set(err, lrc == MB_EGONE ? lrc : MB_EDEVICE,
                                    "run '%s': cannot read the GPU's MIG state: %s", r->name,
                                    e.msg);
            struct mb_layout_item placed[MB_EXP_MAX_JOBS];
            if (mb_exp_run_place(o->model, &existing, r, NULL, placed, &e) != MB_OK)
                return mb_error_set(err, MB_ENORESOURCES,
                                    "run '%s': layout does not fit beside the instances on the "
                                    "GPU now: %s",
                                    r->name, e.msg);
            if (ledger_writable(o, r, err) != MB_OK)
                return MB_EIO;
        }
    }
    return MB_OK;
}

/*
 * A journal of an older migbench names instances in "mig_created" events without a ledger
 * reference: each still on this GPU with the recorded profile and placement is recorded in the
 * ledger as the dead run's, so the ledger alone is what the cleanup reads. An instance on another
 * GPU than the open one cannot be looked at: MB_EBUSY.
 */
static int adopt_legacy(const struct mb_runner_opts *o, struct mb_mig_ledger *l,
                        const struct mb_leftovers *left, struct mb_error *err)
{
    struct mb_device_info info;
    memset(&info, 0, sizeof(info));
    mb_device_info(o->dev, &info, NULL);
    for (size_t i = 0; i < left->n_mig; i++) {
        const struct mb_leftover_mig *m = &left->mig[i];
        if (strcmp(info.uuid, m->gpu_uuid) != 0)
            return mb_error_set(err, MB_EBUSY, "GPU %s is not the open device (%s)", m->gpu_uuid,
                                info.uuid);
        bool adopted;
        int rc = mb_mig_ledger_adopt(o->dev, l, o->results_dir, m->gi_id, m->profile, m->placement,
                                     &adopted, err);
        if (rc != MB_OK)
            return rc;
    }
    return MB_OK;
}

int mb_runner_mig_leftovers(const struct mb_runner_opts *o, const struct mb_leftovers *left,
                            size_t *n, struct mb_error *err)
{
    *n = 0;
    if (!(mb_device_caps(o->dev) & MB_CAP_MIG))
        return MB_OK;
    struct mb_mig_ledger *l = NULL;
    int rc = mb_mig_ledger_open(o->dev, o->device_spec, &l, err);
    if (rc == MB_OK)
        rc = adopt_legacy(o, l, left, err);
    if (rc == MB_OK)
        rc = mb_mig_run_leftovers(o->dev, l, o->results_dir, n, err);
    mb_mig_ledger_close(l);
    return rc;
}

/* Closes a legacy journal's records once the ledger cleanup went through. */
static int close_legacy(const struct mb_runner_opts *o, const struct mb_leftovers *left,
                        struct mb_error *err)
{
    for (size_t i = 0; i < left->n_mig; i++) {
        struct mb_jev e = mb_jev_init(MB_JEV_MIG_DESTROYED);
        e.gpu_uuid = left->mig[i].gpu_uuid;
        e.gi_id = left->mig[i].gi_id;
        e.has_gi = true;
        cJSON *ev = mb_jev_encode(&e);
        int rc = ev ? mb_journal_append(o->journal, ev, err)
                    : mb_error_set(err, MB_ENOMEM, "out of memory");
        cJSON_Delete(ev);
        if (rc != MB_OK)
            return rc;
    }
    return MB_OK;
}

/*
 * The one MIG cleanup on resume: what the ledger says the dead run made in this results
 * directory is removed (mb_mig_clear_run), and journaled.
 */
static int ledger_cleanup(const struct mb_runner_opts *o, const struct mb_leftovers *left,
                          size_t *removed, struct mb_error *err)
{
    if (!(mb_device_caps(o->dev) & MB_CAP_MIG))
        return MB_OK;
    struct mb_mig_ledger *l = NULL;
    struct mb_error e;
    mb_error_clear(&e);
    size_t n = 0;
    int rc = mb_mig_ledger_open(o->dev, o->device_spec, &l, &e);
    if (rc == MB_OK)
        rc = adopt_legacy(o, l, left, &e);
    if (rc == MB_OK)
        rc = mb_mig_clear_run(o->dev, l, o->results_dir, &n, &e);
    mb_mig_ledger_close(l);
    *removed += n;
    struct mb_jev ce = mb_jev_init(MB_JEV_CLEANUP);
    ce.what = "mig_ledger";
    ce.removed = (double)n;
    ce.ok = rc == MB_OK;
    ce.reason = rc == MB_OK ? NULL : e.msg;
    cJSON *ev = mb_jev_encode(&ce);
    struct mb_error je;
    int jrc =
        ev ? mb_journal_append(o->journal, ev, &je) : mb_error_set(&je, MB_ENOMEM, "out of memory");
    cJSON_Delete(ev);
    if (rc != MB_OK)
        return mb_error_set(err, MB_EBUSY, "%s", e.msg);
    if (jrc == MB_OK)
        jrc = close_legacy(o, left, &je);
    if (jrc != MB_OK)
        return mb_error_set(err, MB_EIO, "%s", je.msg);
    return MB_OK;
}

int mb_runner_cleanup(const struct mb_runner_opts *o, const struct mb_leftovers *left,
                      size_t *removed, struct mb_error *err)
{
    *removed = 0;
    int rc = ledger_cleanup(o, left, removed, err);
    for (size_t i = 0; i < left->n_mps; i++) {
        const struct mb_leftover_mps *l = &left->mps[i];
        char why[256] = "";
        int q = mb__rn_mps_quit(l->pipe_dir, l->log_dir, why, sizeof(why));
        struct mb_jev ce = mb_jev_init(MB_JEV_CLEANUP);
        ce.what = "mps";
        ce.pipe_dir = l->pipe_dir;
        ce.ok = q == MB_OK;
        ce.reason = why;
        /* A daemon that is no longer there cannot be asked again: record it as stopped. */
        struct mb_jev se = mb_jev_init(MB_JEV_MPS_STOPPED);
        se.pipe_dir = l->pipe_dir;
        se.ok = q == MB_OK;
        const struct mb_jev *evs[2] = {&ce, &se};
        for (size_t k = 0; k < 2; k++) {
            cJSON *ev = mb_jev_encode(evs[k]);
            struct mb_error je;
            int jrc = ev ? mb_journal_append(o->journal, ev, &je)
                         : mb_error_set(&je, MB_ENOMEM, "out of memory");
            if (jrc != MB_OK && rc == MB_OK)
                rc = mb_error_set(err, MB_EIO, "%s", je.msg);
            cJSON_Delete(ev);
        }
        if (q == MB_OK)
            (*removed)++;
    }
    return rc;
}
