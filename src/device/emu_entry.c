/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The emulated GPU's entry points for unit tests and the fake NVML (device/emu.h): each checks
 * that the device is an emulator (its ops table is emu.c's) and acts through the emulator's
 * other files. No file of the device layer calls these, so the ops table's files never call back
 * into emu.c.
 */
#include "device/emu_internal.h"

#include <stdio.h>
#include <string.h>

#include "device/backends.h"

bool mb__emu_is(const struct mb_device *dev)
{
    return dev && dev->ops == &mb__emu_ops;
}

const struct mb_gpu_model *mb__emu_model(const struct mb_device *dev)
{
    return mb__emu_is(dev) ? ((const struct emu *)dev)->model : NULL;
}

/* ---- processes ------------------------------------------------------------------------ */

int mb__emu_attach_process(struct mb_device *dev, unsigned pid, int gi_id, int ci_id,
                           uint64_t mem_bytes, const char *name, struct mb_error *err)
{
    if (!mb__emu_is(dev))
        return mb_error_set(err, MB_EINVAL, "not an emulated device");
    return mb__emu_attach_with(as_emu(dev), pid, gi_id, ci_id, mem_bytes, name, false, NULL, err);
}

int mb__emu_attach_live(struct mb_device *dev, unsigned pid, int gi_id, int ci_id,
                        uint64_t mem_bytes, const char *name, struct mb_error *err)
{
    if (!mb__emu_is(dev))
        return mb_error_set(err, MB_EINVAL, "not an emulated device");
    return mb__emu_attach_with(as_emu(dev), pid, gi_id, ci_id, mem_bytes, name, true, NULL, err);
}

int mb__emu_attach_job(struct mb_device *dev, unsigned pid, int gi_id, int ci_id,
                       const struct mb__emu_job *job, const char *name, struct mb_error *err)
{
    const struct mb_gm_workload *w = mb__gm_workload(job->workload);
    if (!w)
        return mb_error_set(err, MB_EINVAL, "emu: no workload preset '%s'",
                            job->workload ? job->workload : "(none)");
    if (job->batch < 0 || job->mps_pct < 0 || job->mps_pct > 100)
        return mb_error_set(err, MB_EINVAL, "emu: batch or MPS share out of range");
    double batch = job->batch > 0 ? job->batch : w->batch;
    uint64_t mem = (uint64_t)(mb__gm_mem_mib(w, batch) * 1024.0 * 1024.0);
    struct emu_proc extra = {0};
    snprintf(extra.workload, sizeof(extra.workload), "%s", w->name);
    extra.batch = batch;
    extra.mps_pct = job->mps_pct;
    if (!mb__emu_is(dev))
        return mb_error_set(err, MB_EINVAL, "not an emulated device");
    return mb__emu_attach_with(as_emu(dev), pid, gi_id, ci_id, mem, name, job->live, &extra, err);
}

int mb__emu_detach_process(struct mb_device *dev, unsigned pid, struct mb_error *err)
{
    if (!mb__emu_is(dev))
        return mb_error_set(err, MB_EINVAL, "not an emulated device");
    struct emu *e = as_emu(dev);
    int rc = mb__emu_op_begin(e, OP_detach_process, err);
    if (rc)
        return rc;
    for (size_t i = 0; i < e->st.n_procs; i++) {
        if (e->st.procs[i].pid != pid)
            continue;
        memmove(&e->st.procs[i], &e->st.procs[i + 1],
                (e->st.n_procs - i - 1) * sizeof(e->st.procs[0]));
        e->st.n_procs--;
        return mb__emu_op_end(e, MB_OK, true, err);
    }
    return mb__emu_op_end(e, mb_error_set(err, MB_ENOTFOUND, "emu: no process %u", pid), false,
                          err);
}

int mb__emu_job_rate(struct mb_device *dev, unsigned pid, double *rate, double *speed,
                     struct mb_error *err)
{
    if (!mb__emu_is(dev))
        return mb_error_set(err, MB_EINVAL, "not an emulated device");
    struct emu *e = as_emu(dev);
    int rc = mb__emu_op_begin(e, OP_speed, err);
    if (rc)
        return rc;
    struct mb_gm_job jobs[MB_MAX_PROCESSES];
    struct mb_gm_result r;
    size_t n = mb__emu_solve(e, jobs, true, &r);
    if (e->trace)
        r.s = 1.0; /* a trace plays as given: no clock model */
    rc = mb_error_set(err, MB_ENOTFOUND, "emu: no modelled process %u", pid);
    for (size_t i = 0; i < n; i++)
        if (e->st.procs[i].pid == pid && jobs[i].w) {
            *rate = jobs[i].rate;
            *speed = r.s;
            rc = MB_OK;
        }
    return mb__emu_op_end(e, rc, false, err);
}

/* ---- the GPU and its clock ------------------------------------------------------------- */

int mb__emu_reset(struct mb_device *dev, struct mb_error *err)
{
    if (!mb__emu_is(dev))
        return mb_error_set(err, MB_EINVAL, "not an emulated device");
    struct emu *e = as_emu(dev);
    int rc = mb__emu_op_begin(e, OP_reset, err);
    if (rc)
        return rc;
    if (e->st.n_procs)
        return mb__emu_op_end(e,
                              mb_error_set(err, MB_EBUSY,
                                           "emu: cannot reset the GPU: %zu processes run",
                                           e->st.n_procs),
                              false, err);
    e->st.mig_current = e->st.mig_pending;
    memset(e->st.gi, 0, sizeof(e->st.gi));
    return mb__emu_op_end(e, MB_OK, true, err);
}

int mb__emu_speed(struct mb_device *dev, double *speed, struct mb_error *err)
{
    if (!mb__emu_is(dev))
        return mb_error_set(err, MB_EINVAL, "not an emulated device");
    struct emu *e = as_emu(dev);
    int rc = mb__emu_op_begin(e, OP_speed, err);
    if (rc)
        return rc;
    *speed = mb__emu_speed_now(e);
    return mb__emu_op_end(e, MB_OK, false, err);
}

int mb__emu_advance(struct mb_device *dev, int64_t ns, struct mb_error *err)
{
    if (!mb__emu_is(dev))
        return mb_error_set(err, MB_EINVAL, "not an emulated device");
    struct emu *e = as_emu(dev);
    if (!e->manual_clock)
        return mb_error_set(err, MB_ESTATE, "emu: the clock is not manual (use clock=manual)");
    if (ns < 0)
        return mb_error_set(err, MB_EINVAL, "emu: the clock cannot go back");
    e->manual_ns += ns;
    return MB_OK;
}

int64_t mb__emu_elapsed_ns(struct mb_device *dev)
{
    return mb__emu_is(dev) ? mb__emu_now(as_emu(dev)) : 0;
}

double mb__emu_energy_j(struct mb_device *dev)
{
    if (!mb__emu_is(dev))
        return 0.0;
    struct emu *e = as_emu(dev);
    return mb__emu_energy_at(e, mb__emu_now(e));
}
