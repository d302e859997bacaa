/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The emulated GPU's MIG operations (mode, profiles, placements, GPU and compute instances,
 * activity) and its processes, with NVML's semantics (mig-geometry.md).
 */
#include "device/emu_internal.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "device/backends.h"
#include "migbench/clock.h"
#include "migbench/fileio.h"
#include "migbench/num.h"
#include "base/json_io.h"

/* ---- MIG --------------------------------------------------------------------------------- */

int mb__emu_mig_mode(struct mb_device *dev, struct mb_mig_mode *out, struct mb_error *err)
{
    struct emu *e = as_emu(dev);
    int rc = mb__emu_op_begin(e, OP_mig_mode, err);
    if (rc)
        return rc;
    out->current = e->st.mig_current;
    out->pending = e->st.mig_pending;
    return mb__emu_op_end(e, MB_OK, false, err);
}

static bool any_gi(const struct emu *e)
{
    for (unsigned g = 0; g < EMU_MAX_GI; g++)
        if (e->st.gi[g].used)
            return true;
    return false;
}

int mb__emu_mig_set_mode(struct mb_device *dev, int enable, struct mb_error *err)
{
    struct emu *e = as_emu(dev);
    if (enable != 0 && enable != 1)
        return mb_error_set(err, MB_EINVAL, "emu: MIG mode must be 0 or 1, not %d", enable);
    int rc = mb__emu_op_begin(e, OP_mig_set_mode, err);
    if (rc)
        return rc;
    bool changed = false;
    if (!enable && any_gi(e)) {
        rc =
            mb_error_set(err, MB_EBUSY, "emu %s: cannot disable MIG mode while GPU instances exist",
                         e->model->name);
    } else if (e->st.mig_pending != enable) {
        /* Like a GPU that cannot be reset in place: the change waits for a reset. */
        e->st.mig_pending = enable;
        changed = true;
    }
    return mb__emu_op_end(e, rc, changed, err);
}

/* "12, 34": the PIDs of the clients that hold the GPU, then of its compute processes. */
static void pid_list(const struct emu *e, char *out, size_t cap)
{
    size_t used = 0;
    out[0] = '\0';
    for (size_t i = 0; i < e->n_busy + e->st.n_procs && used < cap; i++) {
        unsigned pid = i < e->n_busy ? e->busy[i] : e->st.procs[i - e->n_busy].pid;
        int w = snprintf(out + used, cap - used, "%s%u", used ? ", " : "", pid);
        if (w < 0)
            break;
        used += (size_t)w;
    }
}

/*
 * Whether the driver could activate a staged mode now by unbinding and resetting the GPU: not in
 * a VM without reset, not while anything holds the GPU, not while instances exist.
 */
static int activation_check(const struct emu *e, int enable, struct mb_error *err)
{
    const char *mode = enable ? "enabled" : "disabled";
    if (e->no_reset)
        return mb_error_set(
            err, MB_ERESET_REQUIRED,
            "emu %s: MIG mode %s is pending: activating it needs a GPU reset that "
            "cannot be done here (reset=unavailable, as in a passthrough VM); reset "
            "the GPU from the host or reboot",
            e->model->name, mode);
    if (e->n_busy || e->st.n_procs) {
        char pids[256];
        pid_list(e, pids, sizeof(pids));
        return mb_error_set(err, MB_EBUSY,
                            "emu %s: MIG mode %s is pending: the GPU is in use by PIDs %s; stop "
                            "them and set the mode again",
                            e->model->name, mode, pids);
    }
    if (any_gi(e))
        return mb_error_set(err, MB_EBUSY,
                            "emu %s: MIG mode %s is pending: GPU instances still exist",
                            e->model->name, mode);
    return MB_OK;
}

int mb__emu_mig_switch_mode(struct mb_device *dev, int enable, struct mb_error *err)
{
    struct emu *e = as_emu(dev);
    if (enable != 0 && enable != 1)
        return mb_error_set(err, MB_EINVAL, "emu: MIG mode must be 0 or 1, not %d", enable);
    int rc = mb__emu_op_begin(e, OP_mig_switch_mode, err);
    if (rc)
        return rc;
    if (!enable && any_gi(e))
        return mb__emu_op_end(
            e,
            mb_error_set(err, MB_EBUSY, "emu %s: cannot disable MIG mode while GPU instances exist",
                         e->model->name),
            false, err);
    bool changed = e->st.mig_pending != enable;
    e->st.mig_pending = enable;
    if (e->crash_midway) {
        mb__emu_op_end(e, MB_OK, changed,
                       err); /* the staged mode is saved, as a driver would keep it */
        raise(SIGKILL);
    }
    int arc = MB_OK;
    if (e->st.mig_current != enable) {
        arc = activation_check(e, enable, err);
        if (arc == MB_OK) {
            e->st.mig_current = enable;
            changed = true;
        }
    }
    /* A refused activation leaves the mode pending, saved like any other change. */
    rc = mb__emu_op_end(e, MB_OK, changed, err);
    return rc != MB_OK ? rc : arc;
}

static unsigned gi_count(const struct emu *e, unsigned driver_id, bool *me_used, unsigned *total,
                         unsigned *slices_used)
{
    unsigned n = 0;
    *me_used = false;
    *total = 0;
    *slices_used = 0;
    for (unsigned g = 0; g < EMU_MAX_GI; g++) {
        if (!e->st.gi[g].used)
            continue;
        (*total)++;
        if (e->st.gi[g].profile_id == driver_id)
            n++;
        const struct mb_gi_profile *p = mb__emu_profile_by_id(e, e->st.gi[g].profile_id);
        if (p && p->media_extension)
            *me_used = true;
        if (p)
            *slices_used += p->compute_slices;
    }
    return n;
}

static bool slices_free(const struct emu *e, unsigned start, unsigned size)
{
    for (unsigned g = 0; g < EMU_MAX_GI; g++) {
        const struct emu_gi *gi = &e->st.gi[g];
        if (gi->used && start < gi->start + gi->size && gi->start < start + size)
            return false;
    }
    return true;
}

/*
 * Automatic placement order. mig-geometry.md §8.3 shows the driver filling 1-slice GIs at 6, 4,
 * 5, 0, 1, 2, 3 and putting a 2-slice GI at 4:2 first, then 0:2, on 8-slice GPUs; elsewhere the
 * emulator takes the lowest free start.
 */
static void auto_order(const struct emu *e, const struct mb_gi_profile *p, unsigned *order,
                       size_t *n)
{
    static const unsigned pref1[] = {6, 4, 5, 0, 1, 2, 3, 7};
    static const unsigned pref2[] = {4, 0, 2, 6};
    const unsigned *pref = NULL;
    size_t npref = 0;
    if (e->model->memory_slices == 8 && p->memory_slices == 1) {
        pref = pref1;
        npref = sizeof(pref1) / sizeof(pref1[0]);
    } else if (e->model->memory_slices == 8 && p->memory_slices == 2) {
        pref = pref2;
        npref = sizeof(pref2) / sizeof(pref2[0]);
    }
    *n = 0;
    for (size_t k = 0; k < npref; k++)
        for (size_t i = 0; i < p->n_placements; i++)
            if (p->placements[i].start == pref[k])
                order[(*n)++] = (unsigned)i;
    for (size_t i = 0; i < p->n_placements; i++) {
        bool seen = false;
        for (size_t k = 0; k < *n; k++)
            seen = seen || order[k] == i;
        if (!seen)
            order[(*n)++] = (unsigned)i;
    }
}

/* Why a GI of profile p cannot be created at pl (or anywhere, pl NULL); MB_OK if it can. */
static int gi_check(const struct emu *e, const struct mb_gi_profile *p,
                    const struct mb_placement *pl, struct mb_placement *chosen,
                    struct mb_error *err)
{
    bool me_used;
    unsigned total, used_slices;
    unsigned same = gi_count(e, (unsigned)p->driver_id, &me_used, &total, &used_slices);
    if (same >= p->max_count)
        return mb_error_set(err, MB_ENORESOURCES,
                            "emu %s: insufficient resources: %s already has its maximum of %u "
                            "instance%s",
                            e->model->name, p->name, p->max_count, p->max_count == 1 ? "" : "s");
    if (p->media_extension && me_used)
        return mb_error_set(err, MB_ENORESOURCES,
                            "emu %s: insufficient resources: only one +me instance per GPU, and "
                            "one exists",
                            e->model->name);
    if (total >= e->model->max_gpu_instances)
        return mb_error_set(err, MB_ENORESOURCES,
                            "emu %s: insufficient resources: the GPU already has its maximum of "
                            "%u GPU instances",
                            e->model->name, e->model->max_gpu_instances);
    if (used_slices + p->compute_slices > e->model->compute_slices)
        return mb_error_set(err, MB_ENORESOURCES,
                            "emu %s: insufficient resources: %s needs %u compute slices, %u of %u "
                            "are free",
                            e->model->name, p->name, p->compute_slices,
                            e->model->compute_slices - used_slices, e->model->compute_slices);
    if (pl) {
        if (!slices_free(e, pl->start, pl->size))
            return mb_error_set(err, MB_ENORESOURCES,
                                "emu %s: insufficient resources: placement %u:%u of %s overlaps "
                                "an existing GPU instance",
                                e->model->name, pl->start, pl->size, p->name);
        *chosen = *pl;
        return MB_OK;
    }
    unsigned order[MB_MAX_PLACEMENTS];
    size_t n;
    auto_order(e, p, order, &n);
    for (size_t k = 0; k < n; k++) {
        const struct mb_placement *c = &p->placements[order[k]];
        if (slices_free(e, c->start, c->size)) {
            *chosen = *c;
            return MB_OK;
        }
    }
    return mb_error_set(err, MB_ENORESOURCES,
                        "emu %s: insufficient resources: no free placement for %s", e->model->name,
                        p->name);
}

static unsigned remaining_of(struct emu *e, const struct mb_gi_profile *p)
{
    /* Same-size placements are aligned and disjoint, so greedy filling finds the maximum. */
    struct emu_state saved = e->st;
    unsigned n = 0;
    struct mb_placement c;
    while (gi_check(e, p, NULL, &c, NULL) == MB_OK) {
        unsigned g = 0;
        while (g < EMU_MAX_GI && e->st.gi[g].used)
            g++;
        if (g == EMU_MAX_GI)
            break;
        e->st.gi[g] = (struct emu_gi){
            .used = true, .profile_id = (unsigned)p->driver_id, .start = c.start, .size = c.size};
        n++;
    }
    e->st = saved;
    return n;
}

int mb__emu_mig_profiles(struct mb_device *dev, struct mb_device_profile *out, size_t cap,
                         size_t *n, struct mb_error *err)
{
    struct emu *e = as_emu(dev);
    int rc = mb__emu_op_begin(e, OP_mig_profiles, err);
    if (rc)
        return rc;
    *n = 0;
    if ((rc = mb__emu_need_mig(e, "list GPU-instance profiles", err)) != MB_OK)
        return mb__emu_op_end(e, rc, false, err);
    size_t total = 0;
    for (size_t i = 0; i < e->model->n_profiles; i++) {
        const struct mb_gi_profile *p = &e->model->profiles[i];
        if (p->driver_id < 0)
            continue;
        if (total < cap) {
            struct mb_device_profile *d = &out[total];
            memset(d, 0, sizeof(*d));
            snprintf(d->name, sizeof(d->name), "%s", p->name);
            d->nvml_enum = p->nvml_enum;
            d->driver_id = (unsigned)p->driver_id;
            d->compute_slices = p->compute_slices;
            d->memory_slices = p->memory_slices;
            d->max_count = p->max_count;
            d->remaining = remaining_of(e, p);
            d->sm_count = p->sm_count;
            d->memory_mib = p->memory_mib;
        }
        total++;
    }
    *n = total;
    if (total > cap)
        rc = mb_error_set(err, MB_ERANGE, "emu: %zu profiles, room for %zu", total, cap);
    return mb__emu_op_end(e, rc, false, err);
}

int mb__emu_mig_placements(struct mb_device *dev, unsigned driver_id, struct mb_placement *out,
                           size_t cap, size_t *n, struct mb_error *err)
{
    struct emu *e = as_emu(dev);
    int rc = mb__emu_op_begin(e, OP_mig_placements, err);
    if (rc)
        return rc;
    *n = 0;
    const struct mb_gi_profile *p = mb__emu_profile_by_id(e, driver_id);
    if (!p)
        return mb__emu_op_end(e,
                              mb_error_set(err, MB_EINVAL,
                                           "emu %s: no GPU-instance profile with id %u",
                                           e->model->name, driver_id),
                              false, err);
    /* NVML returns every placement regardless of MIG mode and of what is in use. */
    for (size_t i = 0; i < p->n_placements && i < cap; i++)
        out[i] = p->placements[i];
    *n = p->n_placements;
    if (p->n_placements > cap)
        rc =
            mb_error_set(err, MB_ERANGE, "emu: %zu placements, room for %zu", p->n_placements, cap);
    return mb__emu_op_end(e, rc, false, err);
}

/* mig-geometry.md §8.2: 0 whole, 1-2 halves, 3-6 quarters, 7-14 eighths (A30: 0, 1-2, 3-6). */
static unsigned gi_id_for(const struct emu *e, const struct mb_placement *pl)
{
    unsigned m = e->model->memory_slices;
    if (pl->size > 0 && m % pl->size == 0 && pl->start % pl->size == 0) {
        unsigned id = m / pl->size - 1 + pl->start / pl->size;
        if (id < EMU_MAX_GI && !e->st.gi[id].used)
            return id;
    }
    for (unsigned g = 0; g < EMU_MAX_GI; g++)
        if (!e->st.gi[g].used)
            return g;
    return EMU_MAX_GI;
}

int mb__emu_mig_create_gi(struct mb_device *dev, unsigned driver_id,
                          const struct mb_placement *placement, unsigned *gi_id,
                          struct mb_error *err)
{
    struct emu *e = as_emu(dev);
    int rc = mb__emu_op_begin(e, OP_create_gi, err);
    if (rc)
        return rc;
    if ((rc = mb__emu_need_mig(e, "create a GPU instance", err)) != MB_OK)
        return mb__emu_op_end(e, rc, false, err);
    const struct mb_gi_profile *p = mb__emu_profile_by_id(e, driver_id);
    if (!p)
        return mb__emu_op_end(
            e,
            mb_error_set(err, MB_EINVAL,
                         "emu %s: invalid argument: no GPU-instance profile with id %u",
                         e->model->name, driver_id),
            false, err);
    if (placement) {
        bool valid = false;
        for (size_t i = 0; i < p->n_placements; i++)
            valid = valid || (p->placements[i].start == placement->start &&
                              p->placements[i].size == placement->size);
        if (!valid)
            return mb__emu_op_end(
                e,
                mb_error_set(err, MB_EINVAL,
                             "emu %s: invalid argument: %u:%u is not a placement of %s",
                             e->model->name, placement->start, placement->size, p->name),
                false, err);
    }
    struct mb_placement chosen;
    if ((rc = gi_check(e, p, placement, &chosen, err)) != MB_OK)
        return mb__emu_op_end(e, rc, false, err);
    unsigned id = gi_id_for(e, &chosen);
    if (id == EMU_MAX_GI)
        return mb__emu_op_end(e,
                              mb_error_set(err, MB_ENORESOURCES,
                                           "emu: insufficient resources: no free "
                                           "GPU-instance id"),
                              false, err);
    e->st.gi[id] = (struct emu_gi){
        .used = true, .profile_id = driver_id, .start = chosen.start, .size = chosen.size};
    *gi_id = id;
    return mb__emu_op_end(e, MB_OK, true, err);
}

static const struct mb_gi_profile *gi_profile(const struct emu *e, unsigned gi_id)
{
    return mb__emu_profile_by_id(e, e->st.gi[gi_id].profile_id);
}

static int find_gi(const struct emu *e, unsigned gi_id, struct mb_error *err)
{
    if (gi_id >= EMU_MAX_GI || !e->st.gi[gi_id].used)
        return mb_error_set(err, MB_ENOTFOUND, "emu %s: no GPU instance with id %u", e->model->name,
                            gi_id);
    if (!gi_profile(e, gi_id))
        return mb_error_set(err, MB_EDEVICE, "emu: GPU instance %u has an unknown profile", gi_id);
    return MB_OK;
}

/*
 * The compute-instance options of a GI, from the catalog's list for the GI's compute-slice count.
 * A double-memory 1g GI (NVML enum 1_SLICE_REV2) on Hopper and later uses CI profile id 7
 * (1_SLICE_REV1), as seen on H100 and GH200 (mig-geometry.md §7); elsewhere id 0.
 */
static size_t ci_options(const struct emu *e, const struct mb_gi_profile *gp,
                         struct mb_ci_profile *out)
{
    size_t n = 0;
    for (size_t i = 0; i < e->model->n_ci_profiles && n < MB_MAX_CI_PROFILES; i++) {
        const struct mb_ci_profile *c = &e->model->ci_profiles[i];
        if (c->gi_compute_slices != gp->compute_slices)
            continue;
        out[n] = *c;
        if (gp->nvml_enum == 9 && e->defs.gpm && c->ci_slices == 1)
            out[n].nvml_ci_profile_id = 7;
        n++;
    }
    return n;
}

int mb__emu_mig_create_ci(struct mb_device *dev, unsigned gi_id, int ci_profile_id, unsigned *ci_id,
                          struct mb_error *err)
{
    struct emu *e = as_emu(dev);
    int rc = mb__emu_op_begin(e, OP_create_ci, err);
    if (rc)
        return rc;
    if ((rc = mb__emu_need_mig(e, "create a compute instance", err)) != MB_OK ||
        (rc = find_gi(e, gi_id, err)) != MB_OK)
        return mb__emu_op_end(e, rc, false, err);
    struct emu_gi *gi = &e->st.gi[gi_id];
    const struct mb_gi_profile *gp = gi_profile(e, gi_id);
    struct mb_ci_profile opts[MB_MAX_CI_PROFILES];
    size_t nopt = ci_options(e, gp, opts);
    const struct mb_ci_profile *cp = NULL;
    for (size_t i = 0; i < nopt; i++) {
        if (ci_profile_id < 0 ? opts[i].is_default : opts[i].nvml_ci_profile_id == ci_profile_id)
            cp = &opts[i];
    }
    if (!cp && ci_profile_id < 0) {
        /* No default listed: the whole-GI option is the default. */
        for (size_t i = 0; i < nopt; i++)
            if (opts[i].ci_slices == gp->compute_slices)
                cp = &opts[i];
    }
    if (!cp)
        return mb__emu_op_end(
            e,
            mb_error_set(err, MB_EINVAL,
                         "emu %s: invalid argument: compute-instance profile %d is not "
                         "available in a %s GPU instance",
                         e->model->name, ci_profile_id, gp->name),
            false, err);
    unsigned same = 0, used = 0, slot = EMU_MAX_CI;
    bool busy[8] = {false};
    for (unsigned c = 0; c < EMU_MAX_CI; c++) {
        if (!gi->ci[c].used) {
            if (slot == EMU_MAX_CI)
                slot = c;
            continue;
        }
        if (gi->ci[c].profile_id == (unsigned)cp->nvml_ci_profile_id)
            same++;
        used += gi->ci[c].slices;
        for (unsigned s = gi->ci[c].start; s < gi->ci[c].start + gi->ci[c].slices && s < 8; s++)
            busy[s] = true;
    }
    if (same >= cp->max_count || used + cp->ci_slices > gp->compute_slices || slot == EMU_MAX_CI)
        return mb__emu_op_end(
            e,
            mb_error_set(err, MB_ENORESOURCES,
                         "emu %s: insufficient resources: GPU instance %u (%s) has %u "
                         "of %u compute slices free, and %u of at most %u instances "
                         "of this compute profile",
                         e->model->name, gi_id, gp->name, gp->compute_slices - used,
                         gp->compute_slices, same, cp->max_count),
            false, err);
    /* The lowest start, aligned to the CI size, whose slices are free (placement UNVERIFIED). */
    unsigned start = 0;
    bool found = false;
    for (unsigned s = 0; !found && s + cp->ci_slices <= gp->compute_slices; s += cp->ci_slices) {
        bool ok = true;
        for (unsigned k = s; k < s + cp->ci_slices; k++)
            ok = ok && !busy[k];
        if (ok) {
            start = s;
            found = true;
        }
    }
    if (!found)
        return mb__emu_op_end(
            e,
            mb_error_set(err, MB_ENORESOURCES,
                         "emu %s: insufficient resources: no free compute-slice range "
                         "of %u in GPU instance %u",
                         e->model->name, cp->ci_slices, gi_id),
            false, err);
    gi->ci[slot] = (struct emu_ci){true, (unsigned)cp->nvml_ci_profile_id, start, cp->ci_slices};
    *ci_id = slot;
    return mb__emu_op_end(e, MB_OK, true, err);
}

int mb__emu_mig_instances(struct mb_device *dev, struct mb_mig_instance *out, size_t cap, size_t *n,
                          struct mb_error *err)
{
    struct emu *e = as_emu(dev);
    int rc = mb__emu_op_begin(e, OP_mig_instances, err);
    if (rc)
        return rc;
    *n = 0;
    if ((rc = mb__emu_need_mig(e, "list MIG instances", err)) != MB_OK)
        return mb__emu_op_end(e, rc, false, err);
    size_t total = 0;
    for (unsigned g = 0; g < EMU_MAX_GI; g++) {
        const struct emu_gi *gi = &e->st.gi[g];
        if (!gi->used)
            continue;
        const struct mb_gi_profile *gp = gi_profile(e, g);
        bool any_ci = false;
        for (unsigned c = 0; c <= EMU_MAX_CI; c++) {
            bool last = c == EMU_MAX_CI;
            if (last ? any_ci : !gi->ci[c].used)
                continue;
            if (total < cap) {
                struct mb_mig_instance *m = &out[total];
                memset(m, 0, sizeof(*m));
                m->gi_id = g;
                m->profile_id = gi->profile_id;
                snprintf(m->profile_name, sizeof(m->profile_name), "%s", gp ? gp->name : "?");
                m->placement = (struct mb_placement){gi->start, gi->size};
                if (!last) {
                    m->has_ci = true;
                    m->ci_id = c;
                    m->ci_profile_id = gi->ci[c].profile_id;
                    m->ci_slices = gi->ci[c].slices;
                    mb__emu_mig_uuid(e, g, c, m->uuid, sizeof(m->uuid));
                }
                if (gp && gp->memory_mib > 0) {
                    m->mem_total_bytes = (uint64_t)gp->memory_mib * MIB;
                    m->mem_used_bytes = mb__emu_procs_mem(e, (int)g);
                    m->mem_valid = true;
                }
            }
            any_ci = true;
            total++;
        }
    }
    *n = total;
    if (total > cap)
        rc = mb_error_set(err, MB_ERANGE, "emu: %zu MIG instances, room for %zu", total, cap);
    return mb__emu_op_end(e, rc, false, err);
}

static size_t procs_on(const struct emu *e, int gi, int ci)
{
    size_t n = 0;
    for (size_t i = 0; i < e->st.n_procs; i++)
        if (e->st.procs[i].gi == gi && (ci < 0 || e->st.procs[i].ci == ci))
            n++;
    return n;
}

int mb__emu_mig_destroy_ci(struct mb_device *dev, unsigned gi_id, unsigned ci_id,
                           struct mb_error *err)
{
    struct emu *e = as_emu(dev);
    int rc = mb__emu_op_begin(e, OP_destroy_ci, err);
    if (rc)
        return rc;
    if ((rc = mb__emu_need_mig(e, "destroy a compute instance", err)) != MB_OK ||
        (rc = find_gi(e, gi_id, err)) != MB_OK)
        return mb__emu_op_end(e, rc, false, err);
    struct emu_gi *gi = &e->st.gi[gi_id];
    if (ci_id >= EMU_MAX_CI || !gi->ci[ci_id].used)
        return mb__emu_op_end(e,
                              mb_error_set(err, MB_ENOTFOUND,
                                           "emu %s: GPU instance %u has no compute instance %u",
                                           e->model->name, gi_id, ci_id),
                              false, err);
    size_t np = procs_on(e, (int)gi_id, (int)ci_id);
    if (np)
        return mb__emu_op_end(
            e,
            mb_error_set(err, MB_EBUSY, "emu %s: compute instance %u/%u is in use by %zu process%s",
                         e->model->name, gi_id, ci_id, np, np == 1 ? "" : "es"),
            false, err);
    gi->ci[ci_id] = (struct emu_ci){0};
    return mb__emu_op_end(e, MB_OK, true, err);
}

int mb__emu_mig_destroy_gi(struct mb_device *dev, unsigned gi_id, struct mb_error *err)
{
    struct emu *e = as_emu(dev);
    int rc = mb__emu_op_begin(e, OP_destroy_gi, err);
    if (rc)
        return rc;
    if ((rc = mb__emu_need_mig(e, "destroy a GPU instance", err)) != MB_OK ||
        (rc = find_gi(e, gi_id, err)) != MB_OK)
        return mb__emu_op_end(e, rc, false, err);
    struct emu_gi *gi = &e->st.gi[gi_id];
    size_t np = procs_on(e, (int)gi_id, -1);
    unsigned nci = 0;
    for (unsigned c = 0; c < EMU_MAX_CI; c++)
        nci += gi->ci[c].used ? 1u : 0u;
    if (np)
        return mb__emu_op_end(e,
                              mb_error_set(err, MB_EBUSY,
                                           "emu %s: GPU instance %u is in use by %zu process%s",
                                           e->model->name, gi_id, np, np == 1 ? "" : "es"),
                              false, err);
    if (nci)
        return mb__emu_op_end(
            e,
            mb_error_set(err, MB_EBUSY,
                         "emu %s: GPU instance %u is in use: it still has %u compute "
                         "instance%s",
                         e->model->name, gi_id, nci, nci == 1 ? "" : "s"),
            false, err);
    *gi = (struct emu_gi){0};
    return mb__emu_op_end(e, MB_OK, true, err);
}

int mb__emu_processes(struct mb_device *dev, struct mb_process *out, size_t cap, size_t *n,
                      struct mb_error *err)
{
    struct emu *e = as_emu(dev);
    int rc = mb__emu_op_begin(e, OP_processes, err);
    if (rc)
        return rc;
    for (size_t i = 0; i < e->st.n_procs && i < cap; i++) {
        const struct emu_proc *p = &e->st.procs[i];
        out[i] = (struct mb_process){.pid = p->pid,
                                     .used_mem_bytes = p->mem_bytes,
                                     .used_mem_valid = true,
                                     .gi_id = p->gi,
                                     .ci_id = p->ci};
        snprintf(out[i].name, sizeof(out[i].name), "%s", p->name);
    }
    *n = e->st.n_procs;
    if (e->st.n_procs > cap)
        rc = mb_error_set(err, MB_ERANGE, "emu: %zu processes, room for %zu", e->st.n_procs, cap);
    return mb__emu_op_end(e, rc, false, err);
}

int mb__emu_mig_activity(struct mb_device *dev, unsigned gi_id, struct mb_mig_activity *out,
                         struct mb_error *err)
{
    struct emu *e = as_emu(dev);
    int rc = mb__emu_op_begin(e, OP_mig_activity, err);
    if (rc)
        return rc;
    if (!e->defs.gpm)
        return mb__emu_op_end(
            e,
            mb_error_set(err, MB_EUNSUPPORTED,
                         "emu %s: per-instance activity needs GPM (Hopper or later)",
                         e->model->name),
            false, err);
    if ((rc = mb__emu_need_mig(e, "read per-instance activity", err)) != MB_OK ||
        (rc = find_gi(e, gi_id, err)) != MB_OK)
        return mb__emu_op_end(e, rc, false, err);
    memset(out, 0, sizeof(*out));
    /* A GI with processes is as busy as the load says (fully, under the automatic load). */
    double busy = 0;
    if (procs_on(e, (int)gi_id, -1)) {
        busy = 100.0;
        if (e->load_fixed || e->trace)
            busy = 100.0 * mb__emu_current_load(e, mb__emu_now(e));
    }
    out->sm_util_pct = busy;
    out->sm_occupancy_pct = busy * 0.5;
    out->tensor_util_pct = busy * 0.3;
    out->dram_bw_util_pct = busy * 0.4;
    out->valid = MB_ACT_SM_UTIL | MB_ACT_SM_OCCUPANCY | MB_ACT_TENSOR | MB_ACT_DRAM_BW;
    return mb__emu_op_end(e, MB_OK, false, err);
}

/* ---- attached processes ---------------------------------------------------------------- */

int mb__emu_attach_with(struct emu *e, unsigned pid, int gi_id, int ci_id, uint64_t mem_bytes,
                        const char *name, bool live, const struct emu_proc *extra,
                        struct mb_error *err)
{
    int rc = mb__emu_op_begin(e, OP_attach_process, err);
    if (rc)
        return rc;
    uint64_t cap_bytes =
        e->model->total_memory_mib > 0 ? (uint64_t)e->model->total_memory_mib * MIB : UINT64_MAX;
    if (e->st.mig_current) {
        if (gi_id < 0 || ci_id < 0)
            rc = mb_error_set(err, MB_EINVAL,
                              "emu: MIG is enabled: a process must run on a compute instance");
        else if ((rc = find_gi(e, (unsigned)gi_id, err)) == MB_OK &&
                 (ci_id >= EMU_MAX_CI || !e->st.gi[gi_id].ci[ci_id].used))
            rc = mb_error_set(err, MB_ENOTFOUND, "emu: GPU instance %d has no compute instance %d",
                              gi_id, ci_id);
        if (rc == MB_OK) {
            const struct mb_gi_profile *gp = gi_profile(e, (unsigned)gi_id);
            cap_bytes = gp->memory_mib > 0 ? (uint64_t)gp->memory_mib * MIB : UINT64_MAX;
        }
    } else if (gi_id >= 0 || ci_id >= 0) {
        rc = mb_error_set(err, MB_EINVAL,
                          "emu: MIG is disabled: a process runs on the whole GPU "
                          "(gi and ci -1)");
    }
    for (size_t i = 0; rc == MB_OK && i < e->st.n_procs; i++)
        if (e->st.procs[i].pid == pid)
            rc = mb_error_set(err, MB_EINVAL, "emu: process %u is already attached", pid);
    if (rc == MB_OK && e->st.n_procs == MB_MAX_PROCESSES)
        rc = mb_error_set(err, MB_ENORESOURCES, "emu: at most %d processes", MB_MAX_PROCESSES);
    if (rc == MB_OK) {
        uint64_t used = mb__emu_procs_mem(e, e->st.mig_current ? gi_id : -1);
        if (mem_bytes > cap_bytes || used > cap_bytes - mem_bytes)
            rc = mb_error_set(err, MB_ENORESOURCES,
                              "emu: out of memory: %llu MiB requested, %llu MiB free",
                              (unsigned long long)(mem_bytes / MIB),
                              (unsigned long long)((cap_bytes - used) / MIB));
    }
    if (rc != MB_OK)
        return mb__emu_op_end(e, rc, false, err);
    struct emu_proc *p = &e->st.procs[e->st.n_procs++];
    *p = extra ? *extra : (struct emu_proc){0};
    p->pid = pid;
    p->gi = gi_id;
    p->ci = ci_id;
    p->mem_bytes = mem_bytes;
    p->live = live;
    snprintf(p->name, sizeof(p->name), "%s", name ? name : "");
    return mb__emu_op_end(e, MB_OK, true, err);
}
