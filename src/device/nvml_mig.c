/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The nvml backend's MIG side: mode, profiles, placements, GPU- and compute-instance creation
 * and destruction, and the instance list (see nvml.c).
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

/* ---- MIG mode -------------------------------------------------------------------------------- */

int nvml_mig_mode(struct mb_device *dev, struct mb_mig_mode *out, struct mb_error *err)
{
    struct nvml_dev *d = to_nv(dev);
    if (!d->f.get_mig_mode)
        return nv_missing(d, "read MIG mode", "nvmlDeviceGetMigMode", err);
    unsigned cur = 0, pend = 0;
    nvmlReturn_t r = d->f.get_mig_mode(d->h, &cur, &pend);
    if (r != NVML_SUCCESS)
        return nv_fail(d, r, "read MIG mode", err);
    out->current = cur == NVML_DEVICE_MIG_ENABLE;
    out->pending = pend == NVML_DEVICE_MIG_ENABLE;
    return MB_OK;
}

/*
 * Stages a MIG mode. migbench never resets a GPU: nvmlDeviceSetMigMode records the pending mode,
 * and the driver activates it by itself only where it can do so without a reset; otherwise the
 * mode stays pending until an operator resets the GPU or reboots. The pending state is then
 * visible through mig_mode, which is why an activation status of IN_USE or RESET_REQUIRED is
 * success here.
 */
int nvml_mig_set_mode(struct mb_device *dev, int enable, struct mb_error *err)
{
    struct nvml_dev *d = to_nv(dev);
    if (!d->f.set_mig_mode)
        return nv_missing(d, "set MIG mode", "nvmlDeviceSetMigMode", err);
    nvmlReturn_t act = NVML_SUCCESS;
    nvmlReturn_t r =
        d->f.set_mig_mode(d->h, enable ? NVML_DEVICE_MIG_ENABLE : NVML_DEVICE_MIG_DISABLE, &act);
    if (r != NVML_SUCCESS)
        return nv_fail(d, r, enable ? "enable MIG mode" : "disable MIG mode", err);
    if (act != NVML_SUCCESS && act != NVML_ERROR_IN_USE && act != NVML_ERROR_RESET_REQUIRED)
        return nv_fail(d, act, "activate the MIG mode change", err);
    return MB_OK;
}

/* "12, 34" or "none listed": the compute processes NVML lists on the GPU, for a busy message. */
static void busy_pids(struct mb_device *dev, char *out, size_t cap)
{
    struct mb_process procs[MB_MAX_PROCESSES];
    size_t n = 0, used = 0;
    snprintf(out, cap,
             "none listed: a client that is not a compute process holds it, such as "
             "nvidia-persistenced, a monitoring agent or a display server");
    if (dev->ops->processes(dev, procs, MB_MAX_PROCESSES, &n, NULL) != MB_OK || n == 0)
        return;
    for (size_t i = 0; i < n && used < cap; i++) {
        int w = snprintf(out + used, cap - used, "%s%u", i ? ", " : "", procs[i].pid);
        if (w < 0)
            break;
        used += (size_t)w;
    }
}

/*
 * Sets the MIG mode and asks for it now: the driver activates it by unbinding and resetting the
 * GPU when it can (migbench itself never resets a GPU). Busy GPU and reset-required are failures
 * here, with what the user must do; the mode then stays pending, as NVML leaves it.
 */
int nvml_mig_switch_mode(struct mb_device *dev, int enable, struct mb_error *err)
{
    struct nvml_dev *d = to_nv(dev);
    if (!d->f.set_mig_mode || !d->f.get_mig_mode)
        return nv_missing(d, "switch MIG mode", "nvmlDeviceSetMigMode", err);
    const char *what = enable ? "enable MIG mode" : "disable MIG mode";
    nvmlReturn_t act = NVML_SUCCESS;
    nvmlReturn_t r =
        d->f.set_mig_mode(d->h, enable ? NVML_DEVICE_MIG_ENABLE : NVML_DEVICE_MIG_DISABLE, &act);
    if (r != NVML_SUCCESS)
        return nv_fail(d, r, what, err);
    if (act == NVML_ERROR_IN_USE) {
        char pids[384];
        busy_pids(dev, pids, sizeof(pids));
        return mb_error_set(err, MB_EBUSY,
                            "nvml:%u: %s: the driver cannot activate it while the GPU is in use "
                            "(PIDs: %s); stop them and retry; the change is pending (NVML %d: %s)",
                            d->index, what, pids, act, nv_str(d, act));
    }
    if (act == NVML_ERROR_RESET_REQUIRED)
        return mb_error_set(err, MB_ERESET_REQUIRED,
                            "nvml:%u: %s: activation needs a GPU reset the driver cannot do here "
                            "(as in a passthrough VM); reset the GPU from the host or reboot "
                            "(NVML %d: %s)",
                            d->index, what, act, nv_str(d, act));
    if (act != NVML_SUCCESS)
        return nv_fail(d, act, what, err);
    unsigned cur = 0, pend = 0;
    r = d->f.get_mig_mode(d->h, &cur, &pend);
    if (r != NVML_SUCCESS)
        return nv_fail(d, r, "read MIG mode after the switch", err);
    unsigned want = enable ? NVML_DEVICE_MIG_ENABLE : NVML_DEVICE_MIG_DISABLE;
    if (cur != want)
        return mb_error_set(err, MB_EDEVICE,
                            "nvml:%u: %s: NVML reported success but the current mode is still %s",
                            d->index, what, cur == NVML_DEVICE_MIG_ENABLE ? "enabled" : "disabled");
    return MB_OK;
}

/* ---- profiles ------------------------------------------------------------------------------- */

/* Turns NVML's profile name ("MIG 1g.10gb") into the catalog form ("1g.10gb"). */
static void profile_name(char *dst, size_t cap, const char *nvml_name)
{
    const char *s = nvml_name;
    if (strncmp(s, "MIG ", 4) == 0)
        s += 4;
    mb__copy_str(dst, cap, s);
}

/* Name rule of go-nvlib when the library gives no name: "<slices>g.<GB>gb". */
static void synth_name(char *dst, size_t cap, unsigned slices, unsigned long long mem_mib,
                       unsigned long long total_bytes, bool rev1)
{
    unsigned long long gb = 0;
    if (total_bytes > 0) {
        double frac = (double)mem_mib * 1048576.0 / (double)total_bytes * 8.0;
        unsigned long long eighths = (unsigned long long)frac;
        if ((double)eighths < frac)
            eighths++;
        unsigned long long gib = (total_bytes + (1ull << 30) - 1) >> 30;
        gb = (unsigned long long)((double)eighths / 8.0 * (double)gib + 0.5);
    } else {
        gb = (mem_mib + 512) / 1024;
    }
    snprintf(dst, cap, "%ug.%llugb%s", slices, gb, rev1 ? "+me" : "");
}

/* One ProfileInfoV call with a struct of version ver (3 or 2). */
static nvmlReturn_t query_profile_v(struct nvml_dev *d, unsigned e, int ver, struct nv_profile *p)
{
    nvmlReturn_t r;
    if (ver == 3) {
        nvmlGpuInstanceProfileInfo_v3_t v3;
        memset(&v3, 0, sizeof(v3));
        v3.version = nvmlGpuInstanceProfileInfo_v3;
        /* NVIDIA declares the call with the v2 struct; the version field tells v3 apart. */
        r = d->f.gi_profile_info_v(d->h, e, (nvmlGpuInstanceProfileInfo_v2_t *)(void *)&v3);
        if (r != NVML_SUCCESS)
            return r;
        p->id = v3.id;
        p->slices = v3.sliceCount;
        p->max_count = v3.instanceCount;
        p->sm_count = v3.multiprocessorCount;
        p->memory_mib = v3.memorySizeMB;
        v3.name[sizeof(v3.name) - 1] = '\0';
        profile_name(p->name, sizeof(p->name), v3.name);
        return r;
    }
    nvmlGpuInstanceProfileInfo_v2_t v2;
    memset(&v2, 0, sizeof(v2));
    v2.version = nvmlGpuInstanceProfileInfo_v2;
    r = d->f.gi_profile_info_v(d->h, e, &v2);
    if (r != NVML_SUCCESS)
        return r;
    p->id = v2.id;
    p->slices = v2.sliceCount;
    p->max_count = v2.instanceCount;
    p->sm_count = v2.multiprocessorCount;
    p->memory_mib = v2.memorySizeMB;
    v2.name[sizeof(v2.name) - 1] = '\0';
    profile_name(p->name, sizeof(p->name), v2.name);
    return r;
}

/*
 * One profile enum value: the V call with a v3 struct, then v2 (the first success fixes the
 * version for the rest of the walk); the unversioned call when the library has no V call or
 * accepts neither struct. Returns the NVML status of the answer used.
 */
static nvmlReturn_t query_profile(struct nvml_dev *d, unsigned e, struct nv_profile *p,
                                  unsigned long long total_bytes)
{
    nvmlReturn_t r = NVML_ERROR_FUNCTION_NOT_FOUND;
    memset(p, 0, sizeof(*p));
    p->nvml_enum = (int)e;
    if (d->f.gi_profile_info_v && d->gpi_version >= 0) {
        if (d->gpi_version > 0) {
            r = query_profile_v(d, e, d->gpi_version, p);
        } else {
            nvmlReturn_t r3 = query_profile_v(d, e, 3, p);
            if (r3 == NVML_SUCCESS) {
                d->gpi_version = 3;
                return r3;
            }
            nvmlReturn_t r2 = query_profile_v(d, e, 2, p);
            if (r2 == NVML_SUCCESS) {
                d->gpi_version = 2;
                return r2;
            }
            if (r3 == NVML_ERROR_ARGUMENT_VERSION_MISMATCH &&
                r2 == NVML_ERROR_ARGUMENT_VERSION_MISMATCH)
                d->gpi_version = -1;
            r = r3 == NVML_ERROR_ARGUMENT_VERSION_MISMATCH ? r2 : r3;
        }
        if (d->gpi_version >= 0)
            return r;
    }
    if (!d->f.gi_profile_info)
        return r;
    nvmlGpuInstanceProfileInfo_t v1;
    memset(&v1, 0, sizeof(v1));
    r = d->f.gi_profile_info(d->h, e, &v1);
    if (r != NVML_SUCCESS)
        return r;
    p->id = v1.id;
    p->slices = v1.sliceCount;
    p->max_count = v1.instanceCount;
    p->sm_count = v1.multiprocessorCount;
    p->memory_mib = v1.memorySizeMB;
    synth_name(p->name, sizeof(p->name), p->slices, p->memory_mib, total_bytes,
               e == NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1 ||
                   e == NVML_GPU_INSTANCE_PROFILE_2_SLICE_REV1);
    return r;
}

static nvmlReturn_t get_placements(struct nvml_dev *d, unsigned id, nvmlGpuInstancePlacement_t *buf,
                                   unsigned *count)
{
    *count = MAX_PLACEMENTS_QUERY;
    return d->f.gi_placements(d->h, id, buf, count);
}

/* Walks the profile enum once and caches what the driver reports. */
static int load_profiles(struct nvml_dev *d, struct mb_error *err)
{
    if (d->profiles_cached)
        return MB_OK;
    if (!d->f.gi_profile_info_v && !d->f.gi_profile_info)
        return nv_missing(d, "list MIG profiles", "nvmlDeviceGetGpuInstanceProfileInfo", err);
    unsigned long long total = 0;
    nvmlMemory_t m1;
    nvmlMemory_v2_t m2 = {.version = nvmlMemory_v2};
    if (d->f.memory_v2 && d->f.memory_v2(d->h, &m2) == NVML_SUCCESS)
        total = m2.total;
    else if (d->f.memory && d->f.memory(d->h, &m1) == NVML_SUCCESS)
        total = m1.total;
    d->n_profiles = 0;
    for (unsigned e = 0; e < NVML_GPU_INSTANCE_PROFILE_COUNT; e++) {
        struct nv_profile p;
        nvmlReturn_t r = query_profile(d, e, &p, total);
        /* Profiles this GPU or this library does not know are skipped, as NVIDIA's tools do. */
        if (r == NVML_ERROR_NOT_SUPPORTED || r == NVML_ERROR_INVALID_ARGUMENT)
            continue;
        if (r != NVML_SUCCESS)
            return mig_fail(d, r, "read MIG profiles", err);
        if (d->n_profiles == MB_MAX_PROFILES)
            return mb_error_set(err, MB_ERANGE, "nvml:%u: more than %d MIG profiles", d->index,
                                MB_MAX_PROFILES);
        if (d->f.gi_placements) {
            nvmlGpuInstancePlacement_t pl[MAX_PLACEMENTS_QUERY];
            unsigned n;
            if (get_placements(d, p.id, pl, &n) == NVML_SUCCESS && n > 0)
                p.mem_slices = pl[0].size;
        }
        d->profiles[d->n_profiles++] = p;
    }
    if (d->n_profiles == 0)
        return mig_fail(d, NVML_ERROR_NOT_SUPPORTED, "read MIG profiles", err);
    d->profiles_cached = true;
    return MB_OK;
}

static const struct nv_profile *profile_by_id(const struct nvml_dev *d, unsigned id)
{
    for (size_t i = 0; i < d->n_profiles; i++)
        if (d->profiles[i].id == id)
            return &d->profiles[i];
    return NULL;
}

int nvml_mig_profiles(struct mb_device *dev, struct mb_device_profile *out, size_t cap, size_t *n,
                      struct mb_error *err)
{
    struct nvml_dev *d = to_nv(dev);
    *n = 0;
    int rc = load_profiles(d, err);
    if (rc != MB_OK)
        return rc;
    if (d->n_profiles > cap)
        return mb_error_set(err, MB_ERANGE, "nvml:%u: %zu MIG profiles, room for %zu", d->index,
                            d->n_profiles, cap);
    for (size_t i = 0; i < d->n_profiles; i++) {
        const struct nv_profile *p = &d->profiles[i];
        struct mb_device_profile *o = &out[i];
        memset(o, 0, sizeof(*o));
        mb__copy_str(o->name, sizeof(o->name), p->name);
        o->nvml_enum = p->nvml_enum;
        o->driver_id = p->id;
        o->compute_slices = p->slices;
        o->memory_slices = p->mem_slices;
        o->max_count = p->max_count;
        o->sm_count = p->sm_count > INT32_MAX ? -1 : (int)p->sm_count;
        o->memory_mib = p->memory_mib > INT64_MAX ? -1 : (int64_t)p->memory_mib;
        unsigned rem = 0;
        if (d->f.gi_remaining) {
            nvmlReturn_t r = d->f.gi_remaining(d->h, p->id, &rem);
            if (r != NVML_SUCCESS)
                return mig_fail(d, r, "read remaining MIG capacity", err);
        } else {
            return nv_missing(d, "read remaining MIG capacity",
                              "nvmlDeviceGetGpuInstanceRemainingCapacity", err);
        }
        o->remaining = rem;
    }
    *n = d->n_profiles;
    return MB_OK;
}

int nvml_mig_placements(struct mb_device *dev, unsigned driver_id, struct mb_placement *out,
                        size_t cap, size_t *n, struct mb_error *err)
{
    struct nvml_dev *d = to_nv(dev);
    *n = 0;
    if (!d->f.gi_placements)
        return nv_missing(d, "list placements", "nvmlDeviceGetGpuInstancePossiblePlacements", err);
    nvmlGpuInstancePlacement_t pl[MAX_PLACEMENTS_QUERY];
    unsigned count = 0;
    nvmlReturn_t r = get_placements(d, driver_id, pl, &count);
    if (r != NVML_SUCCESS) {
        char what[64];
        snprintf(what, sizeof(what), "list placements of profile %u", driver_id);
        return mig_fail(d, r, what, err);
    }
    if (count > cap || count > MAX_PLACEMENTS_QUERY)
        return mb_error_set(err, MB_ERANGE, "nvml:%u: profile %u has %u placements, room for %zu",
                            d->index, driver_id, count, cap);
    for (unsigned i = 0; i < count; i++) {
        out[i].start = pl[i].start;
        out[i].size = pl[i].size;
    }
    *n = count;
    return MB_OK;
}

/* ---- MIG create / destroy ------------------------------------------------------------------- */

int nvml_mig_create_gi(struct mb_device *dev, unsigned driver_id,
                       const struct mb_placement *placement, unsigned *gi_id, struct mb_error *err)
{
    struct nvml_dev *d = to_nv(dev);
    char what[96];
    nvmlGpuInstance_t gi = NULL;
    nvmlReturn_t r;
    if (placement) {
        snprintf(what, sizeof(what), "create GPU instance (profile %u at %u:%u)", driver_id,
                 placement->start, placement->size);
        if (!d->f.gi_create_at)
            return nv_missing(d, what, "nvmlDeviceCreateGpuInstanceWithPlacement", err);
        nvmlGpuInstancePlacement_t pl = {placement->start, placement->size};
        r = d->f.gi_create_at(d->h, driver_id, &pl, &gi);
    } else {
        snprintf(what, sizeof(what), "create GPU instance (profile %u)", driver_id);
        if (!d->f.gi_create)
            return nv_missing(d, what, "nvmlDeviceCreateGpuInstance", err);
        r = d->f.gi_create(d->h, driver_id, &gi);
    }
    if (r != NVML_SUCCESS)
        return mig_fail(d, r, what, err);
    nvmlGpuInstanceInfo_t info;
    memset(&info, 0, sizeof(info));
    if (!d->f.gi_info)
        return nv_missing(d, "read the new GPU instance", "nvmlGpuInstanceGetInfo", err);
    r = d->f.gi_info(gi, &info);
    if (r != NVML_SUCCESS)
        return nv_fail(d, r, "read the new GPU instance", err);
    *gi_id = info.id;
    return MB_OK;
}

static int get_gi(struct nvml_dev *d, unsigned gi_id, nvmlGpuInstance_t *gi, struct mb_error *err)
{
    if (!d->f.gi_by_id)
        return nv_missing(d, "find GPU instance", "nvmlDeviceGetGpuInstanceById", err);
    nvmlReturn_t r = d->f.gi_by_id(d->h, gi_id, gi);
    if (r == NVML_ERROR_NOT_FOUND || r == NVML_ERROR_INVALID_ARGUMENT)
        return mb_error_set(err, MB_ENOTFOUND, "nvml:%u: no GPU instance %u", d->index, gi_id);
    if (r != NVML_SUCCESS) {
        char what[48];
        snprintf(what, sizeof(what), "find GPU instance %u", gi_id);
        return mig_fail(d, r, what, err);
    }
    return MB_OK;
}

/* The slice count of a GPU instance, from its profile. */
static int gi_slices(struct nvml_dev *d, nvmlGpuInstance_t gi, unsigned *slices,
                     struct mb_error *err)
{
    if (!d->f.gi_info)
        return nv_missing(d, "read GPU instance", "nvmlGpuInstanceGetInfo", err);
    nvmlGpuInstanceInfo_t info;
    memset(&info, 0, sizeof(info));
    nvmlReturn_t r = d->f.gi_info(gi, &info);
    if (r != NVML_SUCCESS)
        return nv_fail(d, r, "read GPU instance", err);
    int rc = load_profiles(d, err);
    if (rc != MB_OK)
        return rc;
    const struct nv_profile *p = profile_by_id(d, info.profileId);
    if (!p)
        return mb_error_set(err, MB_EDEVICE, "nvml:%u: GPU instance %u has unknown profile %u",
                            d->index, info.id, info.profileId);
    *slices = p->slices;
    return MB_OK;
}

int nvml_mig_create_ci(struct mb_device *dev, unsigned gi_id, int ci_profile_id, unsigned *ci_id,
                       struct mb_error *err)
{
    struct nvml_dev *d = to_nv(dev);
    if (!d->f.ci_profile_info || !d->f.ci_create || !d->f.ci_info)
        return nv_missing(d, "create compute instance", "nvmlGpuInstanceCreateComputeInstance",
                          err);
    nvmlGpuInstance_t gi;
    int rc = get_gi(d, gi_id, &gi, err);
    if (rc != MB_OK)
        return rc;
    nvmlComputeInstanceProfileInfo_t pi;
    memset(&pi, 0, sizeof(pi));
    nvmlReturn_t r;
    char what[80];
    if (ci_profile_id < 0) {
        /* The default CI spans the whole GI. Where two CI profiles have that size (the 1g
         * double-memory GI offers 1_SLICE_REV1), the later enum is the one the driver uses. */
        unsigned slices = 0;
        rc = gi_slices(d, gi, &slices, err);
        if (rc != MB_OK)
            return rc;
        bool found = false;
        for (unsigned e = 0; e < NVML_COMPUTE_INSTANCE_PROFILE_COUNT; e++) {
            nvmlComputeInstanceProfileInfo_t t;
            memset(&t, 0, sizeof(t));
            r = d->f.ci_profile_info(gi, e, NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, &t);
            if (r == NVML_SUCCESS && t.sliceCount == slices) {
                pi = t;
                found = true;
            } else if (r != NVML_SUCCESS && r != NVML_ERROR_NOT_SUPPORTED &&
                       r != NVML_ERROR_INVALID_ARGUMENT) {
                return mig_fail(d, r, "read compute-instance profiles", err);
            }
        }
        if (!found)
            return mb_error_set(err, MB_EUNSUPPORTED,
                                "nvml:%u: GPU instance %u offers no whole-instance compute "
                                "profile",
                                d->index, gi_id);
    } else {
        memset(&pi, 0, sizeof(pi));
        r = d->f.ci_profile_info(gi, (unsigned)ci_profile_id,
                                 NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, &pi);
        if (r != NVML_SUCCESS) {
            snprintf(what, sizeof(what), "compute-instance profile %d in GPU instance %u",
                     ci_profile_id, gi_id);
            return mig_fail(d, r, what, err);
        }
    }
    snprintf(what, sizeof(what), "create compute instance (profile %u) in GPU instance %u", pi.id,
             gi_id);
    nvmlComputeInstance_t ci = NULL;
    r = d->f.ci_create(gi, pi.id, &ci);
    if (r != NVML_SUCCESS)
        return mig_fail(d, r, what, err);
    nvmlComputeInstanceInfo_t info;
    memset(&info, 0, sizeof(info));
    r = d->f.ci_info(ci, &info);
    if (r != NVML_SUCCESS)
        return nv_fail(d, r, "read the new compute instance", err);
    *ci_id = info.id;
    return MB_OK;
}

int nvml_mig_destroy_ci(struct mb_device *dev, unsigned gi_id, unsigned ci_id, struct mb_error *err)
{
    struct nvml_dev *d = to_nv(dev);
    if (!d->f.ci_by_id || !d->f.ci_destroy)
        return nv_missing(d, "destroy compute instance", "nvmlComputeInstanceDestroy", err);
    nvmlGpuInstance_t gi;
    int rc = get_gi(d, gi_id, &gi, err);
    if (rc != MB_OK)
        return rc;
    nvmlComputeInstance_t ci;
    nvmlReturn_t r = d->f.ci_by_id(gi, ci_id, &ci);
    if (r == NVML_ERROR_NOT_FOUND || r == NVML_ERROR_INVALID_ARGUMENT)
        return mb_error_set(err, MB_ENOTFOUND, "nvml:%u: no compute instance %u in GPU instance %u",
                            d->index, ci_id, gi_id);
    char what[80];
    snprintf(what, sizeof(what), "destroy compute instance %u of GPU instance %u", ci_id, gi_id);
    if (r != NVML_SUCCESS)
        return mig_fail(d, r, what, err);
    r = d->f.ci_destroy(ci);
    if (r != NVML_SUCCESS)
        return mig_fail(d, r, what, err);
    return MB_OK;
}

int nvml_mig_destroy_gi(struct mb_device *dev, unsigned gi_id, struct mb_error *err)
{
    struct nvml_dev *d = to_nv(dev);
    if (!d->f.gi_destroy)
        return nv_missing(d, "destroy GPU instance", "nvmlGpuInstanceDestroy", err);
    nvmlGpuInstance_t gi;
    int rc = get_gi(d, gi_id, &gi, err);
    if (rc != MB_OK)
        return rc;
    nvmlReturn_t r = d->f.gi_destroy(gi);
    if (r != NVML_SUCCESS) {
        char what[48];
        snprintf(what, sizeof(what), "destroy GPU instance %u", gi_id);
        return mig_fail(d, r, what, err);
    }
    return MB_OK;
}

/* ---- MIG instances --------------------------------------------------------------------------- */

static int append_instance(struct mb_mig_instance *out, size_t cap, size_t *n,
                           const struct mb_mig_instance *inst, const struct nvml_dev *d,
                           struct mb_error *err)
{
    if (*n >= cap)
        return mb_error_set(err, MB_ERANGE, "nvml:%u: more MIG instances than room for %zu",
                            d->index, cap);
    out[(*n)++] = *inst;
    return MB_OK;
}

int nvml_mig_instances(struct mb_device *dev, struct mb_mig_instance *out, size_t cap, size_t *n,
                       struct mb_error *err)
{
    struct nvml_dev *d = to_nv(dev);
    *n = 0;
    if (!d->f.gi_list || !d->f.gi_info)
        return nv_missing(d, "list GPU instances", "nvmlDeviceGetGpuInstances", err);
    int rc = load_profiles(d, err);
    if (rc != MB_OK)
        return rc;
    struct mig_dev migs[MB_MAX_MIG_INSTANCES * 2];
    size_t n_migs = 0;
    rc = list_mig_devices(d, migs, sizeof(migs) / sizeof(migs[0]), &n_migs, err);
    if (rc != MB_OK)
        return rc;
    for (size_t pi = 0; pi < d->n_profiles; pi++) {
        const struct nv_profile *p = &d->profiles[pi];
        nvmlGpuInstance_t gis[MAX_GI_PER_PROFILE];
        unsigned ngi = MAX_GI_PER_PROFILE;
        nvmlReturn_t r = d->f.gi_list(d->h, p->id, gis, &ngi);
        if (r != NVML_SUCCESS)
            return mig_fail(d, r, "list GPU instances", err);
        for (unsigned g = 0; g < ngi && g < MAX_GI_PER_PROFILE; g++) {
            nvmlGpuInstanceInfo_t gin;
            memset(&gin, 0, sizeof(gin));
            r = d->f.gi_info(gis[g], &gin);
            if (r != NVML_SUCCESS)
                return nv_fail(d, r, "read GPU instance", err);
            struct mb_mig_instance base;
            memset(&base, 0, sizeof(base));
            base.gi_id = gin.id;
            base.profile_id = gin.profileId;
            mb__copy_str(base.profile_name, sizeof(base.profile_name), p->name);
            base.placement.start = gin.placement.start;
            base.placement.size = gin.placement.size;
            size_t before = *n;
            /* Every compute instance of this GI, over every CI profile the GI offers. */
            for (unsigned e = 0; d->f.ci_list && d->f.ci_profile_info && d->f.ci_info &&
                                 e < NVML_COMPUTE_INSTANCE_PROFILE_COUNT;
                 e++) {
                nvmlComputeInstanceProfileInfo_t cpi;
                memset(&cpi, 0, sizeof(cpi));
                r = d->f.ci_profile_info(gis[g], e, NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED,
                                         &cpi);
                if (r == NVML_ERROR_NOT_SUPPORTED || r == NVML_ERROR_INVALID_ARGUMENT)
                    continue;
                if (r != NVML_SUCCESS)
                    return nv_fail(d, r, "read compute-instance profiles", err);
                nvmlComputeInstance_t cis[MAX_CI_PER_GI];
                unsigned nci = MAX_CI_PER_GI;
                r = d->f.ci_list(gis[g], cpi.id, cis, &nci);
                if (r != NVML_SUCCESS)
                    return nv_fail(d, r, "list compute instances", err);
                for (unsigned c = 0; c < nci && c < MAX_CI_PER_GI; c++) {
                    nvmlComputeInstanceInfo_t cin;
                    memset(&cin, 0, sizeof(cin));
                    r = d->f.ci_info(cis[c], &cin);
                    if (r != NVML_SUCCESS)
                        return nv_fail(d, r, "read compute instance", err);
                    struct mb_mig_instance inst = base;
                    inst.ci_id = cin.id;
                    inst.has_ci = true;
                    inst.ci_profile_id = cin.profileId;
                    inst.ci_slices = cpi.sliceCount;
                    for (size_t m = 0; m < n_migs; m++) {
                        if (migs[m].gi == gin.id && migs[m].ci == cin.id) {
                            mb__copy_str(inst.uuid, sizeof(inst.uuid), migs[m].uuid);
                            inst.mem_valid = migs[m].mem_valid;
                            inst.mem_total_bytes = migs[m].mem_total;
                            inst.mem_used_bytes = migs[m].mem_used;
                        }
                    }
                    rc = append_instance(out, cap, n, &inst, d, err);
                    if (rc != MB_OK)
                        return rc;
                }
            }
            if (*n == before) {
                rc = append_instance(out, cap, n, &base, d, err);
                if (rc != MB_OK)
                    return rc;
            }
        }
    }
    return MB_OK;
}
