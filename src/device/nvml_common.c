/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the nvml backend's files share, below all of them: NVML return codes turned into statuses
 * and messages, and the walk over MIG device handles. It calls no other nvml file; nvml.c (the
 * library, open and the ops table) calls the operation files, which call only this one.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "device/nvml_internal.h"
#include "migbench/device.h"

const char *nv_str(const struct nvml_dev *d, nvmlReturn_t r)
{
    const char *s = d->f.error_string ? d->f.error_string(r) : NULL;
    return s ? s : "unknown NVML error";
}

/*
 * Maps an NVML return code to a status and a message a user can act on. `what` names the
 * operation ("create GPU instance (profile 19)"). Returns the status.
 */
int nv_fail(const struct nvml_dev *d, nvmlReturn_t r, const char *what, struct mb_error *err)
{
    const char *ns = nv_str(d, r);
    switch (r) {
    case NVML_ERROR_NO_PERMISSION:
        return mb_error_set(err, MB_EPERM,
                            "nvml:%u: %s: permission denied: run as root or grant the mig/config "
                            "capability (NVML %d: %s)",
                            d->index, what, r, ns);
    case NVML_ERROR_RESET_REQUIRED:
        return mb_error_set(err, MB_ERESET_REQUIRED,
                            "nvml:%u: %s: MIG mode change is pending a GPU reset (migbench never "
                            "resets a GPU): run nvidia-smi -r -i %u yourself when the GPU is idle "
                            "(NVML %d: %s)",
                            d->index, what, d->index, r, ns);
    case NVML_ERROR_INSUFFICIENT_RESOURCES:
        return mb_error_set(err, MB_ENORESOURCES,
                            "nvml:%u: %s: no free placement or capacity left for this profile "
                            "(NVML %d: %s)",
                            d->index, what, r, ns);
    case NVML_ERROR_IN_USE:
        return mb_error_set(err, MB_EBUSY,
                            "nvml:%u: %s: in use by another process (or instances still exist "
                            "inside it) (NVML %d: %s)",
                            d->index, what, r, ns);
    case NVML_ERROR_NOT_SUPPORTED:
    case NVML_ERROR_FUNCTION_NOT_FOUND:
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH:
        return mb_error_set(err, MB_EUNSUPPORTED,
                            "nvml:%u: %s: not supported on this GPU (NVML %d: %s)", d->index, what,
                            r, ns);
    case NVML_ERROR_GPU_IS_LOST:
        return mb_error_set(err, MB_EGONE,
                            "nvml:%u: %s: the GPU is lost (fell off the bus or hung); check "
                            "dmesg and nvidia-smi (NVML %d: %s)",
                            d->index, what, r, ns);
    case NVML_ERROR_INVALID_ARGUMENT:
        return mb_error_set(err, MB_EINVAL, "nvml:%u: %s: invalid argument (NVML %d: %s)", d->index,
                            what, r, ns);
    case NVML_ERROR_NOT_FOUND:
        return mb_error_set(err, MB_ENOTFOUND, "nvml:%u: %s: not found (NVML %d: %s)", d->index,
                            what, r, ns);
    case NVML_ERROR_INSUFFICIENT_SIZE:
        return mb_error_set(err, MB_ERANGE, "nvml:%u: %s: the list kept growing (NVML %d: %s)",
                            d->index, what, r, ns);
    case NVML_ERROR_TIMEOUT:
        return mb_error_set(err, MB_ETIMEDOUT, "nvml:%u: %s: timed out (NVML %d: %s)", d->index,
                            what, r, ns);
    case NVML_ERROR_UNINITIALIZED:
    case NVML_ERROR_INVALID_STATE:
        return mb_error_set(err, MB_ESTATE, "nvml:%u: %s: not valid now (NVML %d: %s)", d->index,
                            what, r, ns);
    case NVML_ERROR_DRIVER_NOT_LOADED:
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH:
        return mb_error_set(err, MB_ELIB,
                            "nvml:%u: %s: the NVIDIA driver is not loaded or does not match "
                            "libnvidia-ml (NVML %d: %s)",
                            d->index, what, r, ns);
    default:
        return mb_error_set(err, MB_EDEVICE, "nvml:%u: %s: NVML error %d: %s", d->index, what, r,
                            ns);
    }
}

/* A status for an optional feature whose symbol the library lacks (old driver). */
int nv_missing(const struct nvml_dev *d, const char *what, const char *sym, struct mb_error *err)
{
    return mb_error_set(err, MB_EUNSUPPORTED,
                        "nvml:%u: %s: not supported by this driver (libnvidia-ml lacks %s)",
                        d->index, what, sym);
}

/*
 * Explains a MIG operation that failed because MIG is off or only pending; otherwise maps r as
 * usual. NVML answers NOT_SUPPORTED both for "no MIG on this GPU" and "MIG not enabled (yet)".
 */
int mig_fail(struct nvml_dev *d, nvmlReturn_t r, const char *what, struct mb_error *err)
{
    unsigned cur, pend;
    if (r == NVML_ERROR_NOT_SUPPORTED && d->f.get_mig_mode &&
        d->f.get_mig_mode(d->h, &cur, &pend) == NVML_SUCCESS) {
        if (cur != NVML_DEVICE_MIG_ENABLE && pend == NVML_DEVICE_MIG_ENABLE)
            return mb_error_set(err, MB_ERESET_REQUIRED,
                                "nvml:%u: %s: MIG mode change is pending a GPU reset (migbench "
                                "never resets a GPU): run nvidia-smi -r -i %u yourself when the "
                                "GPU is idle",
                                d->index, what, d->index);
        if (cur != NVML_DEVICE_MIG_ENABLE)
            return mb_error_set(err, MB_ESTATE,
                                "nvml:%u: %s: MIG mode is disabled on this GPU (enable it with "
                                "migbench mig apply --enable-mig, then reset the GPU yourself)",
                                d->index, what);
    }
    return nv_fail(d, r, what, err);
}

/* Walks the MIG device handles; sparse indices (NOT_FOUND, INVALID_ARGUMENT) are skipped. */
int list_mig_devices(struct nvml_dev *d, struct mig_dev *out, size_t cap, size_t *n,
                     struct mb_error *err)
{
    *n = 0;
    if (!d->f.max_mig_devices || !d->f.mig_handle_by_index || !d->f.mig_gi_id || !d->f.mig_ci_id)
        return MB_OK;
    unsigned max = 0;
    nvmlReturn_t r = d->f.max_mig_devices(d->h, &max);
    if (r == NVML_ERROR_NOT_SUPPORTED)
        return MB_OK;
    if (r != NVML_SUCCESS)
        return nv_fail(d, r, "count MIG devices", err);
    for (unsigned i = 0; i < max && *n < cap; i++) {
        nvmlDevice_t h;
        r = d->f.mig_handle_by_index(d->h, i, &h);
        if (r == NVML_ERROR_NOT_FOUND || r == NVML_ERROR_INVALID_ARGUMENT)
            continue;
        if (r != NVML_SUCCESS)
            return nv_fail(d, r, "get MIG device handle", err);
        struct mig_dev *m = &out[*n];
        memset(m, 0, sizeof(*m));
        m->h = h;
        if (d->f.mig_gi_id(h, &m->gi) != NVML_SUCCESS || d->f.mig_ci_id(h, &m->ci) != NVML_SUCCESS)
            continue;
        if (d->f.uuid(h, m->uuid, sizeof(m->uuid)) != NVML_SUCCESS)
            m->uuid[0] = '\0';
        m->uuid[sizeof(m->uuid) - 1] = '\0';
        nvmlMemory_v2_t m2 = {.version = nvmlMemory_v2};
        nvmlMemory_t m1;
        if (d->f.memory_v2 && d->f.memory_v2(h, &m2) == NVML_SUCCESS) {
            m->mem_total = m2.total;
            m->mem_used = m2.used;
            m->mem_valid = true;
        } else if (d->f.memory && d->f.memory(h, &m1) == NVML_SUCCESS) {
            m->mem_total = m1.total;
            m->mem_used = m1.used;
            m->mem_valid = true;
        }
        (*n)++;
    }
    return MB_OK;
}
