/* SPDX-License-Identifier: Apache-2.0 */
/* Safe MIG-mode switching: plan, journal, switch, verify, restore. */
#include "mig/migmode.h"
#include "migbench/mig.h"
#include "results/journal_events.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *mode_word(int mode)
{
    return mode ? "enabled" : "disabled";
}

/* Appends printf output to buf at *used, never past cap (a full buffer drops the rest). */
static void appendf(char *buf, size_t cap, size_t *used, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void appendf(char *buf, size_t cap, size_t *used, const char *fmt, ...)
{
    if (*used + 1 >= cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(buf + *used, cap - *used, fmt, ap);
    va_end(ap);
    if (w > 0)
        *used += (size_t)w < cap - *used ? (size_t)w : cap - *used - 1;
}

static int identify(struct mb_device *dev, struct mb_migmode_record *rec, struct mb_error *err)
{
    struct mb_device_info info;
    int rc = mb_device_info(dev, &info, err);
    if (rc != MB_OK)
        return rc;
    memset(rec, 0, sizeof(*rec));
    snprintf(rec->gpu_uuid, sizeof(rec->gpu_uuid), "%s", info.uuid);
    snprintf(rec->device, sizeof(rec->device), "%s:%u (%s%s)", info.backend, info.index, info.name,
             info.emulated ? ", emulated" : "");
    struct mb_mig_mode mode;
    if ((rc = mb_device_mig_mode(dev, &mode, err)) != MB_OK)
        return rc;
    rec->original_current = mode.current ? 1 : 0;
    rec->original_pending = mode.pending ? 1 : 0;
    return MB_OK;
}

/* No compute process may run on a GPU whose mode changes: the switch resets it. */
static int check_processes(struct mb_device *dev, const struct mb_migmode_record *rec,
                           struct mb_error *err)
{
    struct mb_process procs[MB_MAX_PROCESSES];
    size_t n = 0;
    int rc = mb_device_processes(dev, procs, MB_MAX_PROCESSES, &n, err);
    if (rc == MB_EUNSUPPORTED)
        return MB_OK; /* nothing to list; the driver still refuses a busy GPU itself */
    if (rc != MB_OK)
        return rc;
    if (n == 0)
        return MB_OK;
    char pids[320] = "";
    size_t used = 0;
    for (size_t i = 0; i < n; i++)
        appendf(pids, sizeof(pids), &used, "%s%u", i ? ", " : "", procs[i].pid);
    return mb_error_set(err, MB_EBUSY,
                        "%s: %zu compute process%s run%s on the GPU (PIDs %s): stop %s before "
                        "migbench changes its MIG mode",
                        rec->device, n, n == 1 ? "" : "es", n == 1 ? "s" : "", pids,
                        n == 1 ? "it" : "them");
}

/* Instances: migbench's own are counted (they go first); anyone else's stop the switch. */
static int check_instances(struct mb_device *dev, const struct mb_migmode_record *rec,
                           const struct mb_migmode_hooks *hooks, size_t *n_owned,
                           struct mb_error *err)
{
    *n_owned = 0;
    if (!rec->original_current)
        return MB_OK;
    struct mb_mig_instance inst[MB_MAX_MIG_INSTANCES];
    size_t n = 0;
    int rc = mb_device_mig_instances(dev, inst, MB_MAX_MIG_INSTANCES, &n, err);
    if (rc != MB_OK)
        return rc;
    char list[320] = "";
    size_t used = 0, foreign = 0;
    for (size_t i = 0; i < n; i++) {
        if (hooks && hooks->owns && hooks->owns(hooks->ctx, &inst[i])) {
            (*n_owned)++;
            continue;
        }
        foreign++;
        appendf(list, sizeof(list), &used, "%sGI %u (%s)", foreign > 1 ? ", " : "", inst[i].gi_id,
                inst[i].profile_name);
    }
    if (foreign == 0)
        return MB_OK;
    return mb_error_set(err, MB_EBUSY,
                        "%s: %zu MIG instance%s that migbench did not create exist%s (%s): remove "
                        "them (nvidia-smi mig -dci / -dgi) or run without MIG-mode management",
                        rec->device, foreign, foreign == 1 ? "" : "s", foreign == 1 ? "s" : "",
                        list);
}

int mb_migmode_plan(struct mb_device *dev, int target, const struct mb_migmode_hooks *hooks,
                    struct mb_migmode_plan *out, struct mb_error *err)
{
    if (!dev || !out || (target != 0 && target != 1))
        return mb_error_set(err, MB_EINVAL, "mb_migmode_plan: bad argument");
    memset(out, 0, sizeof(*out));
    out->target = target;
    int rc = identify(dev, &out->rec, err);
    if (rc != MB_OK)
        return rc;
    if (out->rec.original_current == target && out->rec.original_pending == target)
        return MB_OK;
    out->needed = true;
    if (!(mb_device_caps(dev) & MB_CAP_SET_MIG_MODE))
        return mb_error_set(err, MB_EUNSUPPORTED, "%s: this device cannot change its MIG mode",
                            out->rec.device);
    if (out->rec.original_current == target)
        return MB_OK; /* only a pending change to undo: nothing is reset */
    if ((rc = check_processes(dev, &out->rec, err)) != MB_OK)
        return rc;
    return check_instances(dev, &out->rec, hooks, &out->n_owned, err);
}

void mb_migmode_describe(const struct mb_migmode_plan *plan, char *buf, size_t cap)
{
    const struct mb_migmode_record *r = &plan->rec;
    if (!plan->needed) {
        snprintf(buf, cap, "%s: MIG mode is already %s; nothing to change", r->device,
                 mode_word(plan->target));
        return;
    }
    if (r->original_current == plan->target) {
        snprintf(buf, cap,
                 "%s: MIG mode is %s with %s pending; the pending change is withdrawn (no reset)",
                 r->device, mode_word(r->original_current), mode_word(r->original_pending));
        return;
    }
    char owned[96] = "";
    if (plan->n_owned)
        snprintf(owned, sizeof(owned), "; %zu MIG instance%s migbench made go first", plan->n_owned,
                 plan->n_owned == 1 ? "" : "s");
    snprintf(buf, cap,
             "%s: MIG mode %s -> %s: the driver unbinds and resets the idle GPU (no process runs "
             "on it%s); the original mode (%s) is journaled and restored at the end",
             r->device, mode_word(r->original_current), mode_word(plan->target), owned,
             mode_word(r->original_current));
}

cJSON *mb_migmode_event(const char *name, const struct mb_migmode_record *rec, int mode)
{
    struct mb_jev e = mb_jev_init(mb_jev_kind_of(name));
    e.event = name;
    e.gpu_uuid = rec->gpu_uuid;
    e.device = rec->device;
    e.original_current = rec->original_current;
    e.original_pending = rec->original_pending;
    e.mode = mode;
    return mb_jev_encode(&e);
}

static int journal(const struct mb_migmode_hooks *hooks, const char *name,
                   const struct mb_migmode_record *rec, int mode, struct mb_error *err)
{
    if (!hooks || !hooks->journal)
        return MB_OK;
    cJSON *ev = mb_migmode_event(name, rec, mode);
    if (!ev)
        return mb_error_set(err, MB_ENOMEM, "out of memory");
    int rc = hooks->journal(hooks->ctx, ev, err);
    cJSON_Delete(ev);
    return rc;
}

/* Destroys the instances hooks->owns claims, through the one destroy (mb_mig_destroy). */
static int release_owned(struct mb_device *dev, const struct mb_migmode_hooks *hooks,
                         struct mb_error *err)
{
    struct mb_mig_instance inst[MB_MAX_MIG_INSTANCES];
    size_t n = 0;
    int rc = mb_device_mig_instances(dev, inst, MB_MAX_MIG_INSTANCES, &n, err);
    if (rc != MB_OK)
        return rc;
    for (size_t i = 0; i < n; i++) {
        if (!hooks || !hooks->owns || !hooks->owns(hooks->ctx, &inst[i]))
            continue;
        struct mb_mig_gi g;
        mb_mig_gi_of(&inst[i], &g);
        if ((rc = mb_mig_destroy(dev, NULL, &g, NULL, err)) != MB_OK)
            return rc;
        if (hooks->released)
            hooks->released(hooks->ctx, &inst[i]);
    }
    return MB_OK;
}

int mb_migmode_switch(struct mb_device *dev, const struct mb_migmode_plan *plan,
                      bool journal_original, const struct mb_migmode_hooks *hooks,
                      struct mb_error *err)
{
    if (!dev || !plan)
        return mb_error_set(err, MB_EINVAL, "mb_migmode_switch: bad argument");
    if (!plan->needed)
        return MB_OK;
    struct mb_migmode_plan now;
    int rc = mb_migmode_plan(dev, plan->target, hooks, &now, err);
    if (rc != MB_OK)
        return rc;
    if (strcmp(now.rec.gpu_uuid, plan->rec.gpu_uuid) != 0)
        return mb_error_set(err, MB_EINVAL, "%s is not the GPU this switch was planned for (%s)",
                            now.rec.device, plan->rec.gpu_uuid);
    if (!now.needed)
        return MB_OK;
    if (journal_original && (rc = journal(hooks, "mig_mode_original", &now.rec,
                                          now.rec.original_current, err)) != MB_OK)
        return rc;
    if (now.n_owned && (rc = release_owned(dev, hooks, err)) != MB_OK)
        return rc;
    rc = mb_device_mig_switch_mode(dev, now.target, err);
    if (rc != MB_OK) {
        /* The driver left the new mode pending: stage the original again. */
        struct mb_error ignored;
        bool restaged = mb_device_mig_set_mode(dev, now.rec.original_pending, &ignored) == MB_OK;
        /* Restored only if this call journaled the original: else it is not the original. */
        if (restaged && journal_original)
            journal(hooks, "mig_mode_restored", &now.rec, now.rec.original_current, &ignored);
        mb_error_prefix(err,
                        "cannot switch MIG mode %s -> %s: ", mode_word(now.rec.original_current),
                        mode_word(now.target));
        size_t len = err ? strlen(err->msg) : 0;
        if (err && len < sizeof(err->msg))
            snprintf(err->msg + len, sizeof(err->msg) - len,
                     "; the GPU %s; or run the MIG-off and MIG-on runs in two steps yourself",
                     restaged ? "was left in its original mode"
                              : "may be left with a pending mode");
        return rc;
    }
    struct mb_mig_mode mode;
    if ((rc = mb_device_mig_mode(dev, &mode, err)) != MB_OK)
        return rc;
    if (mode.current != now.target || mode.pending != now.target)
        return mb_error_set(err, MB_EDEVICE,
                            "%s: MIG mode switch reported success, but the GPU reads current %s, "
                            "pending %s",
                            now.rec.device, mode_word(mode.current), mode_word(mode.pending));
    return journal(hooks, "mig_mode_switched", &now.rec, now.target, err);
}

int mb_migmode_restore(struct mb_device *dev, const struct mb_migmode_record *rec,
                       const struct mb_migmode_hooks *hooks, struct mb_error *err)
{
    if (!dev || !rec)
        return mb_error_set(err, MB_EINVAL, "mb_migmode_restore: bad argument");
    struct mb_migmode_plan p;
    int rc = mb_migmode_plan(dev, rec->original_current, hooks, &p, err);
    if (rc != MB_OK) {
        mb_error_prefix(
            err, "cannot restore the original MIG mode (%s): ", mode_word(rec->original_current));
        return rc;
    }
    if (rec->gpu_uuid[0] && strcmp(p.rec.gpu_uuid, rec->gpu_uuid) != 0)
        return mb_error_set(err, MB_EINVAL,
                            "%s is not the GPU whose MIG mode was journaled (%s, %s)", p.rec.device,
                            rec->device, rec->gpu_uuid);
    if ((rc = mb_migmode_switch(dev, &p, false, hooks, err)) != MB_OK)
        return rc;
    if (rec->original_pending != rec->original_current &&
        (rc = mb_device_mig_set_mode(dev, rec->original_pending, err)) != MB_OK)
        return rc;
    return journal(hooks, "mig_mode_restored", rec, rec->original_current, err);
}

int mb_migmode_outstanding(const cJSON *events, struct mb_migmode_record *out, size_t cap,
                           size_t *n, struct mb_error *err)
{
    *n = 0;
    const cJSON *ev;
    cJSON_ArrayForEach(ev, events)
    {
        struct mb_jev e;
        if (!mb_jev_decode(ev, &e) || !e.gpu_uuid)
            continue;
        size_t k = 0;
        while (k < *n && strcmp(out[k].gpu_uuid, e.gpu_uuid) != 0)
            k++;
        if (e.kind == MB_JEV_MIG_MODE_RESTORED && k < *n) {
            memmove(&out[k], &out[k + 1], (*n - k - 1) * sizeof(out[0]));
            (*n)--;
        } else if (e.kind == MB_JEV_MIG_MODE_ORIGINAL && k == *n) {
            /* The first original counts: a later one was journaled after a switch. */
            if (e.original_current < 0 || e.original_pending < 0)
                continue;
            if (*n == cap)
                return mb_error_set(err, MB_ERANGE, "more than %zu GPUs with a switched MIG mode",
                                    cap);
            struct mb_migmode_record r;
            memset(&r, 0, sizeof(r));
            r.original_current = e.original_current;
            r.original_pending = e.original_pending;
            snprintf(r.gpu_uuid, sizeof(r.gpu_uuid), "%s", e.gpu_uuid);
            snprintf(r.device, sizeof(r.device), "%s", e.device ? e.device : e.gpu_uuid);
            out[(*n)++] = r;
        }
    }
    return MB_OK;
}

int mb_migmode_run_needs(const struct mb_exp_run *run)
{
    switch (run->mode) {
    case MB_MODE_MIG:
        return 1;
    case MB_MODE_EXCLUSIVE:
        return run->on[0] ? 1 : 0; /* on: mig-7g runs on a MIG instance */
    case MB_MODE_TIMESLICE:
    case MB_MODE_MPS:
        return 0;
    case MB_MODE_PARTITION:
        break;
    }
    return -1;
}

size_t mb_migmode_order_cells(const struct mb_experiment *exp, struct mb_cell *cells, size_t n,
                              int current, int *mode_of)
{
    if (n == 0)
        return 0;
    struct mb_cell *tmp = malloc(n * sizeof(*tmp));
    if (!tmp)
        return 0;
    size_t k = 0, switches = 0;
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < n; i++) {
            int need = mb_migmode_run_needs(&exp->runs[cells[i].run]);
            bool now = need < 0 || need == current;
            if (now != (pass == 0))
                continue;
            if (mode_of)
                mode_of[k] = need;
            tmp[k++] = cells[i];
            if (pass == 1)
                switches = 1;
        }
    memcpy(cells, tmp, n * sizeof(*tmp));
    free(tmp);
    return switches;
}
