/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The nvml backend's process lists (per GPU and per MIG device) and per-GPU-instance activity
 * from GPM (see nvml.c).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/text_internal.h"
#include "device/nvml_internal.h"
#include "migbench/catalog.h"
#include "migbench/clock.h"
#include "migbench/device.h"

/* ---- processes ------------------------------------------------------------------------------- */

/* The running compute processes of one handle, in a buffer the caller frees. */
static int query_processes(struct nvml_dev *d, nvmlDevice_t h, nvmlProcessInfo_t **out, unsigned *n,
                           struct mb_error *err)
{
    *out = NULL;
    *n = 0;
    if (!d->f.procs_v3 && !d->f.procs_v2)
        return nv_missing(d, "list processes", "nvmlDeviceGetComputeRunningProcesses_v3", err);
    size_t want = 16;
    nvmlProcessInfo_t *v3 = NULL;
    nvmlProcessInfo_v2_t *v2 = NULL;
    nvmlReturn_t r = NVML_ERROR_INSUFFICIENT_SIZE;
    unsigned count = 0;
    /* The list can grow between the call that sizes it and the call that fills it. */
    for (int round = 0; round < MAX_PROC_ROUNDS && r == NVML_ERROR_INSUFFICIENT_SIZE; round++) {
        count = (unsigned)want;
        if (d->f.procs_v3) {
            nvmlProcessInfo_t *nb = realloc(v3, want * sizeof(*v3));
            if (!nb)
                goto nomem;
            v3 = nb;
            memset(v3, 0, want * sizeof(*v3));
            r = d->f.procs_v3(h, &count, v3);
        } else {
            nvmlProcessInfo_v2_t *nb = realloc(v2, want * sizeof(*v2));
            if (!nb)
                goto nomem;
            v2 = nb;
            memset(v2, 0, want * sizeof(*v2));
            r = d->f.procs_v2(h, &count, v2);
        }
        if (r == NVML_ERROR_INSUFFICIENT_SIZE) {
            size_t next = (size_t)count + 8;
            if (next <= want)
                next = want * 2;
            if (next > MAX_PROC_ENTRIES) {
                free(v3);
                free(v2);
                return mb_error_set(err, MB_ERANGE, "nvml:%u: more than %d processes", d->index,
                                    MAX_PROC_ENTRIES);
            }
            want = next;
        }
    }
    if (r != NVML_SUCCESS) {
        free(v3);
        free(v2);
        return nv_fail(d, r, "list processes", err);
    }
    if (count > want)
        count = (unsigned)want;
    if (!v3 && count > 0) {
        v3 = calloc(count, sizeof(*v3));
        if (!v3)
            goto nomem;
        for (unsigned i = 0; i < count; i++) {
            v3[i].pid = v2[i].pid;
            v3[i].usedGpuMemory = v2[i].usedGpuMemory;
            v3[i].gpuInstanceId = v2[i].gpuInstanceId;
            v3[i].computeInstanceId = v2[i].computeInstanceId;
        }
    }
    free(v2);
    *out = v3;
    *n = count;
    return MB_OK;
nomem:
    free(v3);
    free(v2);
    return mb_error_set(err, MB_ENOMEM, "nvml: out of memory");
}

static int add_processes(struct nvml_dev *d, const nvmlProcessInfo_t *pi, unsigned np,
                         const struct mig_dev *mig, struct mb_process *out, size_t cap, size_t *n,
                         struct mb_error *err)
{
    for (unsigned i = 0; i < np; i++) {
        int gi = -1, ci = -1;
        if (mig) {
            gi = (int)mig->gi;
            ci = (int)mig->ci;
        } else if (pi[i].gpuInstanceId != NVML_NO_INSTANCE_ID &&
                   pi[i].computeInstanceId != NVML_NO_INSTANCE_ID) {
            gi = (int)pi[i].gpuInstanceId;
            ci = (int)pi[i].computeInstanceId;
        }
        bool dup = false;
        for (size_t k = 0; k < *n && !dup; k++)
            dup = out[k].pid == pi[i].pid && (out[k].gi_id == gi || out[k].gi_id < 0) &&
                  (out[k].ci_id == ci || out[k].ci_id < 0);
        if (dup) {
            /* The parent's list lacked the instance ids; the MIG handle supplies them. */
            for (size_t k = 0; k < *n; k++)
                if (out[k].pid == pi[i].pid && out[k].gi_id < 0 && gi >= 0) {
                    out[k].gi_id = gi;
                    out[k].ci_id = ci;
                }
            continue;
        }
        if (*n >= cap)
            return mb_error_set(err, MB_ERANGE, "nvml:%u: more processes than room for %zu",
                                d->index, cap);
        struct mb_process *o = &out[(*n)++];
        memset(o, 0, sizeof(*o));
        o->pid = pi[i].pid;
        o->gi_id = gi;
        o->ci_id = ci;
        if (pi[i].usedGpuMemory != NVML_VALUE_NOT_AVAILABLE) {
            o->used_mem_bytes = pi[i].usedGpuMemory;
            o->used_mem_valid = true;
        }
        if (d->f.process_name &&
            d->f.process_name(o->pid, o->name, (unsigned)sizeof(o->name)) == NVML_SUCCESS)
            o->name[sizeof(o->name) - 1] = '\0';
        else
            o->name[0] = '\0';
    }
    return MB_OK;
}

int nvml_processes(struct mb_device *dev, struct mb_process *out, size_t cap, size_t *n,
                   struct mb_error *err)
{
    struct nvml_dev *d = to_nv(dev);
    *n = 0;
    nvmlProcessInfo_t *pi = NULL;
    unsigned np = 0;
    int rc = query_processes(d, d->h, &pi, &np, err);
    if (rc != MB_OK)
        return rc;
    rc = add_processes(d, pi, np, NULL, out, cap, n, err);
    free(pi);
    if (rc != MB_OK)
        return rc;
    /* With MIG on, each MIG device handle lists its own processes (the parent's list may be
     * partial without root). */
    struct mig_dev migs[MB_MAX_MIG_INSTANCES * 2];
    size_t n_migs = 0;
    rc = list_mig_devices(d, migs, sizeof(migs) / sizeof(migs[0]), &n_migs, err);
    if (rc != MB_OK)
        return rc;
    for (size_t m = 0; m < n_migs; m++) {
        rc = query_processes(d, migs[m].h, &pi, &np, err);
        if (rc != MB_OK)
            return rc;
        rc = add_processes(d, pi, np, &migs[m], out, cap, n, err);
        free(pi);
        if (rc != MB_OK)
            return rc;
    }
    return MB_OK;
}

/* ---- per-GI activity (GPM) ----------------------------------------------------------------- */

int nvml_mig_activity(struct mb_device *dev, unsigned gi_id, struct mb_mig_activity *out,
                      struct mb_error *err)
{
    struct nvml_dev *d = to_nv(dev);
    memset(out, 0, sizeof(*out));
    if (!d->f.gpm_support || !d->f.gpm_alloc || !d->f.gpm_free || !d->f.gpm_mig_sample ||
        !d->f.gpm_metrics)
        return nv_missing(d, "per-instance activity (GPM)", "nvmlGpmMigSampleGet", err);
    if (d->gpm_state == 0) {
        nvmlGpmSupport_t sup = {.version = NVML_GPM_SUPPORT_VERSION, .isSupportedDevice = 0};
        nvmlReturn_t r = d->f.gpm_support(d->h, &sup);
        if (r == NVML_ERROR_GPU_IS_LOST)
            return nv_fail(d, r, "query GPM support", err);
        d->gpm_state = (r == NVML_SUCCESS && sup.isSupportedDevice) ? 1 : -1;
    }
    if (d->gpm_state < 0)
        return mb_error_set(err, MB_EUNSUPPORTED,
                            "nvml:%u: per-instance activity (GPM) is not supported on this GPU "
                            "(Hopper or later needed)",
                            d->index);
    struct gpm_prev *slot = NULL;
    for (size_t i = 0; i < MB_MAX_MIG_INSTANCES; i++)
        if (d->gpm[i].used && d->gpm[i].gi_id == gi_id)
            slot = &d->gpm[i];
    if (!slot) {
        for (size_t i = 0; i < MB_MAX_MIG_INSTANCES && !slot; i++)
            if (!d->gpm[i].used)
                slot = &d->gpm[i];
        if (!slot)
            return mb_error_set(err, MB_ERANGE, "nvml:%u: GPM samples kept for too many GIs",
                                d->index);
    }
    nvmlGpmSample_t s = NULL;
    nvmlReturn_t r = d->f.gpm_alloc(&s);
    if (r != NVML_SUCCESS)
        return nv_fail(d, r, "allocate a GPM sample", err);
    char what[64];
    snprintf(what, sizeof(what), "GPM sample of GPU instance %u", gi_id);
    r = d->f.gpm_mig_sample(d->h, gi_id, s);
    if (r != NVML_SUCCESS) {
        d->f.gpm_free(s);
        if (r == NVML_ERROR_NOT_FOUND || r == NVML_ERROR_INVALID_ARGUMENT)
            return mb_error_set(err, MB_ENOTFOUND, "nvml:%u: no GPU instance %u", d->index, gi_id);
        return mig_fail(d, r, what, err);
    }
    if (!slot->used) {
        /* First sample of this GI: there is no interval yet, so nothing is valid. */
        slot->used = true;
        slot->gi_id = gi_id;
        slot->sample = s;
        return MB_OK;
    }
    if (!d->gpm_req) {
        d->gpm_req = calloc(1, sizeof(*d->gpm_req));
        if (!d->gpm_req) {
            d->f.gpm_free(s);
            return mb_error_set(err, MB_ENOMEM, "nvml: out of memory");
        }
    }
    static const unsigned ids[4] = {NVML_GPM_METRIC_SM_UTIL, NVML_GPM_METRIC_SM_OCCUPANCY,
                                    NVML_GPM_METRIC_ANY_TENSOR_UTIL, NVML_GPM_METRIC_DRAM_BW_UTIL};
    static const uint32_t bits[4] = {MB_ACT_SM_UTIL, MB_ACT_SM_OCCUPANCY, MB_ACT_TENSOR,
                                     MB_ACT_DRAM_BW};
    nvmlGpmMetricsGet_t *q = d->gpm_req;
    memset(q, 0, sizeof(*q));
    q->version = NVML_GPM_METRICS_GET_VERSION;
    q->numMetrics = 4;
    q->sample1 = slot->sample;
    q->sample2 = s;
    for (int i = 0; i < 4; i++)
        q->metrics[i].metricId = ids[i];
    r = d->f.gpm_metrics(q);
    d->f.gpm_free(slot->sample);
    slot->sample = s;
    if (r != NVML_SUCCESS)
        return nv_fail(d, r, "compute GPM metrics", err);
    double *dst[4] = {&out->sm_util_pct, &out->sm_occupancy_pct, &out->tensor_util_pct,
                      &out->dram_bw_util_pct};
    for (int i = 0; i < 4; i++) {
        if (q->metrics[i].nvmlReturn == NVML_SUCCESS) {
            *dst[i] = q->metrics[i].value;
            out->valid |= bits[i];
        }
    }
    return MB_OK;
}
