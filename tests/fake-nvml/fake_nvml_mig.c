/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The fake libnvidia-ml.so.1's MIG side (mode, profiles, GPU and compute instances, MIG device
 * handles), process lists and GPM, on the emulated GPU; see fake_nvml.c for the environment.
 */
#include "fake_nvml.h"

/* ---- MIG mode ----------------------------------------------------------------------------------
 */

FAKE_FN(nvmlDeviceGetMigMode, (nvmlDevice_t h, unsigned *cur, unsigned *pend), (h, cur, pend))
{
    struct fake_gpu *gpu = parent_of(h);
    if (!gpu || !cur || !pend)
        return NVML_ERROR_INVALID_ARGUMENT;
    struct mb_mig_mode m;
    int rc = mb_device_mig_mode(gpu->emu, &m, NULL);
    if (rc != MB_OK)
        return to_nvml(rc);
    *cur = m.current ? NVML_DEVICE_MIG_ENABLE : NVML_DEVICE_MIG_DISABLE;
    *pend = m.pending ? NVML_DEVICE_MIG_ENABLE : NVML_DEVICE_MIG_DISABLE;
    return NVML_SUCCESS;
}

FAKE_FN(nvmlDeviceSetMigMode, (nvmlDevice_t h, unsigned mode, nvmlReturn_t *act), (h, mode, act))
{
    struct fake_gpu *gpu = parent_of(h);
    if (!gpu || !act || mode > 1)
        return NVML_ERROR_INVALID_ARGUMENT;
    /* Staging answers for itself (instances in the way); activation goes in activationStatus:
     * the emulator resets an idle GPU, answers busy while PIDs hold it, and reset-required with
     * its reset=unavailable option, as a passthrough VM does. */
    int rc = mb_device_mig_set_mode(gpu->emu, (int)mode, NULL);
    if (rc != MB_OK)
        return to_nvml(rc);
    rc = mb_device_mig_switch_mode(gpu->emu, (int)mode, NULL);
    *act = rc == MB_EBUSY             ? NVML_ERROR_IN_USE
           : rc == MB_ERESET_REQUIRED ? NVML_ERROR_RESET_REQUIRED
                                      : to_nvml(rc);
    return NVML_SUCCESS;
}

/* ---- GPU-instance profiles ----------------------------------------------------------------------
 */

struct profile_vals {
    unsigned id, slices, count, sm, ce, dec, enc, jpeg, ofa;
    unsigned long long mem_mib;
    char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
};

static nvmlReturn_t profile_vals(nvmlDevice_t h, unsigned e, bool need_mig, struct profile_vals *v)
{
    struct fake_gpu *gpu = parent_of(h);
    if (!gpu)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (e >= FAKE_GI_PROFILE_ENUMS)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (need_mig && !mig_enabled(gpu))
        return NVML_ERROR_NOT_SUPPORTED;
    const struct mb_gi_profile *p = catalog_profile_by_enum(gpu, e);
    if (!p)
        return NVML_ERROR_NOT_SUPPORTED;
    memset(v, 0, sizeof(*v));
    v->id = (unsigned)p->driver_id;
    v->slices = p->compute_slices;
    v->count = p->max_count;
    v->sm = p->sm_count > 0 ? (unsigned)p->sm_count : 0;
    v->ce = p->copy_engines > 0 ? (unsigned)p->copy_engines : 0;
    v->dec = p->decoders > 0 ? (unsigned)p->decoders : 0;
    v->enc = p->encoders > 0 ? (unsigned)p->encoders : 0;
    v->jpeg = p->jpeg > 0 ? (unsigned)p->jpeg : 0;
    v->ofa = p->ofa > 0 ? (unsigned)p->ofa : 0;
    v->mem_mib = p->memory_mib > 0 ? (unsigned long long)p->memory_mib : 0;
    snprintf(v->name, sizeof(v->name), "MIG %s", p->name);
    return NVML_SUCCESS;
}

FAKE_FN(nvmlDeviceGetGpuInstanceProfileInfo,
        (nvmlDevice_t h, unsigned e, nvmlGpuInstanceProfileInfo_t *info), (h, e, info))
{
    if (!info)
        return NVML_ERROR_INVALID_ARGUMENT;
    struct profile_vals v;
    nvmlReturn_t r = profile_vals(h, e, false, &v);
    if (r != NVML_SUCCESS)
        return r;
    *info = (nvmlGpuInstanceProfileInfo_t){v.id,  0,     v.slices, v.count, v.sm,     v.ce,
                                           v.dec, v.enc, v.jpeg,   v.ofa,   v.mem_mib};
    return NVML_SUCCESS;
}

#ifndef FAKE_NVML_LEGACY
/* NVIDIA's prototype takes the v2 struct; a v3 struct comes through the same pointer. */
FAKE_FN(nvmlDeviceGetGpuInstanceProfileInfoV,
        (nvmlDevice_t h, unsigned e, nvmlGpuInstanceProfileInfo_v2_t *info), (h, e, info))
{
    if (!info)
        return NVML_ERROR_INVALID_ARGUMENT;
    unsigned version;
    memcpy(&version, info, sizeof(version));
    long max_version = env_long("MIGBENCH_FAKE_NVML_GPI_VERSION", 3);
    bool v3 = version == nvmlGpuInstanceProfileInfo_v3 && max_version >= 3;
    bool v2 = version == nvmlGpuInstanceProfileInfo_v2 && max_version >= 2;
    if (!v3 && !v2)
        return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    struct profile_vals v;
    nvmlReturn_t r = profile_vals(h, e, true, &v);
    if (r != NVML_SUCCESS)
        return r;
        /* The two versions name the same fields at different offsets (v2 has isP2pSupported). */
#define FILL_GPI(o)                                                                                \
    do {                                                                                           \
        memset(o, 0, sizeof(*o));                                                                  \
        o->version = version;                                                                      \
        o->id = v.id;                                                                              \
        o->sliceCount = v.slices;                                                                  \
        o->instanceCount = v.count;                                                                \
        o->multiprocessorCount = v.sm;                                                             \
        o->copyEngineCount = v.ce;                                                                 \
        o->decoderCount = v.dec;                                                                   \
        o->encoderCount = v.enc;                                                                   \
        o->jpegCount = v.jpeg;                                                                     \
        o->ofaCount = v.ofa;                                                                       \
        o->memorySizeMB = v.mem_mib;                                                               \
        copy_out(o->name, sizeof(o->name), v.name);                                                \
    } while (0)
    if (v3) {
        nvmlGpuInstanceProfileInfo_v3_t *o3 = (nvmlGpuInstanceProfileInfo_v3_t *)(void *)info;
        FILL_GPI(o3);
    } else {
        nvmlGpuInstanceProfileInfo_v2_t *o2 = info;
        FILL_GPI(o2);
    }
#undef FILL_GPI
    return NVML_SUCCESS;
}
#endif

FAKE_FN(nvmlDeviceGetGpuInstanceRemainingCapacity, (nvmlDevice_t h, unsigned id, unsigned *count),
        (h, id, count))
{
    struct fake_gpu *gpu = parent_of(h);
    if (!gpu || !count)
        return NVML_ERROR_INVALID_ARGUMENT;
    struct mb_device_profile ps[MB_MAX_PROFILES];
    size_t n;
    int rc = mb_device_mig_profiles(gpu->emu, ps, MB_MAX_PROFILES, &n, NULL);
    if (rc != MB_OK)
        return to_nvml(rc);
    for (size_t i = 0; i < n; i++)
        if (ps[i].driver_id == id) {
            *count = ps[i].remaining;
            return NVML_SUCCESS;
        }
    return NVML_ERROR_INVALID_ARGUMENT;
}

static nvmlReturn_t placements(nvmlDevice_t h, unsigned id, nvmlGpuInstancePlacement_t *out,
                               unsigned *count)
{
    struct fake_gpu *gpu = parent_of(h);
    if (!gpu || !count)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!catalog_profile_by_id(gpu, id))
        return NVML_ERROR_INVALID_ARGUMENT;
    /* NVML returns every placement of a profile regardless of MIG mode: use the catalog. */
    const struct mb_gi_profile *p = catalog_profile_by_id(gpu, id);
    *count = (unsigned)p->n_placements;
    if (out)
        for (size_t i = 0; i < p->n_placements; i++) {
            out[i].start = p->placements[i].start;
            out[i].size = p->placements[i].size;
        }
    return NVML_SUCCESS;
}

FAKE_FN(nvmlDeviceGetGpuInstancePossiblePlacements,
        (nvmlDevice_t h, unsigned id, nvmlGpuInstancePlacement_t *out, unsigned *count),
        (h, id, out, count))
{
    /* The v1 call could not size the list: it needs a buffer. */
    if (!out)
        return NVML_ERROR_INVALID_ARGUMENT;
    return placements(h, id, out, count);
}

#ifndef FAKE_NVML_LEGACY
FAKE_FN(nvmlDeviceGetGpuInstancePossiblePlacements_v2,
        (nvmlDevice_t h, unsigned id, nvmlGpuInstancePlacement_t *out, unsigned *count),
        (h, id, out, count))
{
    return placements(h, id, out, count);
}
#endif

/* ---- GPU instances
 * -------------------------------------------------------------------------------- */

static nvmlGpuInstance_t gi_handle(struct fake_gpu *gpu, unsigned id)
{
    struct nvmlGpuInstance_st *gi = &gpu->gi[id % FAKE_MAX_GI];
    *gi = (struct nvmlGpuInstance_st){H_GI, gpu, id};
    return gi;
}

static nvmlReturn_t created_gi(struct fake_gpu *gpu, int rc, unsigned id, nvmlGpuInstance_t *out)
{
    if (rc != MB_OK)
        return to_nvml(rc);
    if (id >= FAKE_MAX_GI)
        return NVML_ERROR_UNKNOWN;
    *out = gi_handle(gpu, id);
    return NVML_SUCCESS;
}

FAKE_FN(nvmlDeviceCreateGpuInstance, (nvmlDevice_t h, unsigned id, nvmlGpuInstance_t *out),
        (h, id, out))
{
    struct fake_gpu *gpu = parent_of(h);
    if (!gpu || !out)
        return NVML_ERROR_INVALID_ARGUMENT;
    unsigned gi = 0;
    int rc = mb_device_mig_create_gi(gpu->emu, id, NULL, &gi, NULL);
    return created_gi(gpu, rc, gi, out);
}

FAKE_FN(nvmlDeviceCreateGpuInstanceWithPlacement,
        (nvmlDevice_t h, unsigned id, const nvmlGpuInstancePlacement_t *pl, nvmlGpuInstance_t *out),
        (h, id, pl, out))
{
    struct fake_gpu *gpu = parent_of(h);
    if (!gpu || !out || !pl)
        return NVML_ERROR_INVALID_ARGUMENT;
    struct mb_placement p = {pl->start, pl->size};
    unsigned gi = 0;
    int rc = mb_device_mig_create_gi(gpu->emu, id, &p, &gi, NULL);
    return created_gi(gpu, rc, gi, out);
}

/* Finds GI id in the emulator's instance list; *first is its first row. */
static nvmlReturn_t find_gi(struct fake_gpu *gpu, unsigned id, struct mb_mig_instance *first)
{
    struct mb_mig_instance all[MB_MAX_MIG_INSTANCES * 2];
    size_t n;
    int rc = instances(gpu, all, &n);
    if (rc != MB_OK)
        return to_nvml(rc);
    for (size_t i = 0; i < n; i++)
        if (all[i].gi_id == id) {
            *first = all[i];
            return NVML_SUCCESS;
        }
    return NVML_ERROR_NOT_FOUND;
}

static struct fake_gpu *gi_gpu(nvmlGpuInstance_t gi)
{
    return gi && gi->magic == H_GI && g.refs > 0 ? gi->gpu : NULL;
}

FAKE_FN(nvmlDeviceGetGpuInstances,
        (nvmlDevice_t h, unsigned id, nvmlGpuInstance_t *out, unsigned *count), (h, id, out, count))
{
    struct fake_gpu *gpu = parent_of(h);
    if (!gpu || !count)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!mig_enabled(gpu))
        return NVML_ERROR_NOT_SUPPORTED;
    if (!catalog_profile_by_id(gpu, id))
        return NVML_ERROR_INVALID_ARGUMENT;
    struct mb_mig_instance all[MB_MAX_MIG_INSTANCES * 2];
    size_t n;
    int rc = instances(gpu, all, &n);
    if (rc != MB_OK)
        return to_nvml(rc);
    unsigned k = 0;
    for (size_t i = 0; i < n; i++) {
        if (all[i].profile_id != id)
            continue;
        bool seen = false;
        for (size_t j = 0; j < i; j++)
            seen = seen || all[j].gi_id == all[i].gi_id;
        if (seen)
            continue;
        if (out)
            out[k] = gi_handle(gpu, all[i].gi_id);
        k++;
    }
    *count = k;
    return NVML_SUCCESS;
}

FAKE_FN(nvmlDeviceGetGpuInstanceById, (nvmlDevice_t h, unsigned id, nvmlGpuInstance_t *out),
        (h, id, out))
{
    struct fake_gpu *gpu = parent_of(h);
    if (!gpu || !out)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!mig_enabled(gpu))
        return NVML_ERROR_NOT_SUPPORTED;
    struct mb_mig_instance inst;
    nvmlReturn_t r = find_gi(gpu, id, &inst);
    if (r != NVML_SUCCESS)
        return r;
    *out = gi_handle(gpu, id);
    return NVML_SUCCESS;
}

FAKE_FN(nvmlGpuInstanceGetInfo, (nvmlGpuInstance_t gi, nvmlGpuInstanceInfo_t *info), (gi, info))
{
    struct fake_gpu *gpu = gi_gpu(gi);
    if (!gpu || !info)
        return NVML_ERROR_INVALID_ARGUMENT;
    struct mb_mig_instance inst;
    nvmlReturn_t r = find_gi(gpu, gi->id, &inst);
    if (r != NVML_SUCCESS)
        return r == NVML_ERROR_NOT_FOUND ? NVML_ERROR_INVALID_ARGUMENT : r;
    memset(info, 0, sizeof(*info));
    info->device = &gpu->parent;
    info->id = inst.gi_id;
    info->profileId = inst.profile_id;
    info->placement.start = inst.placement.start;
    info->placement.size = inst.placement.size;
    return NVML_SUCCESS;
}

FAKE_FN(nvmlGpuInstanceDestroy, (nvmlGpuInstance_t gi), (gi))
{
    struct fake_gpu *gpu = gi_gpu(gi);
    if (!gpu)
        return NVML_ERROR_INVALID_ARGUMENT;
    return to_nvml(mb_device_mig_destroy_gi(gpu->emu, gi->id, NULL));
}

/* ---- compute instances
 * ------------------------------------------------------------------------------ */

/* The catalog's CI option of profile e inside GI gi. */
static nvmlReturn_t ci_option(struct fake_gpu *gpu, unsigned gi_id, unsigned e,
                              struct mb_ci_profile *out, unsigned *gi_slices)
{
    struct mb_mig_instance inst;
    nvmlReturn_t r = find_gi(gpu, gi_id, &inst);
    if (r != NVML_SUCCESS)
        return r == NVML_ERROR_NOT_FOUND ? NVML_ERROR_INVALID_ARGUMENT : r;
    const struct mb_gi_profile *gp = catalog_profile_by_id(gpu, inst.profile_id);
    const struct mb_gpu_model *m = model_of(gpu);
    if (!gp || !m)
        return NVML_ERROR_UNKNOWN;
    if (e >= FAKE_CI_PROFILE_ENUMS)
        return NVML_ERROR_INVALID_ARGUMENT;
    /* As the emulator does (and Hopper drivers were seen doing), the whole-GI CI of a
     * double-memory 1g GI is CI profile 7 (1_SLICE_REV1) rather than 0. */
    bool rev2 = gp->nvml_enum == NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2 &&
                arch_of(gpu) != NVML_DEVICE_ARCH_UNKNOWN && arch_of(gpu) >= NVML_DEVICE_ARCH_HOPPER;
    for (size_t i = 0; i < m->n_ci_profiles; i++) {
        const struct mb_ci_profile *c = &m->ci_profiles[i];
        int id = c->nvml_ci_profile_id;
        if (rev2 && c->ci_slices == 1)
            id = NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE_REV1;
        if (c->gi_compute_slices == gp->compute_slices && id == (int)e) {
            *out = *c;
            out->nvml_ci_profile_id = id;
            *gi_slices = gp->compute_slices;
            return NVML_SUCCESS;
        }
    }
    return NVML_ERROR_NOT_SUPPORTED;
}

FAKE_FN(nvmlGpuInstanceGetComputeInstanceProfileInfo,
        (nvmlGpuInstance_t gi, unsigned e, unsigned eng, nvmlComputeInstanceProfileInfo_t *info),
        (gi, e, eng, info))
{
    struct fake_gpu *gpu = gi_gpu(gi);
    if (!gpu || !info || eng != NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED)
        return NVML_ERROR_INVALID_ARGUMENT;
    struct mb_ci_profile c;
    unsigned gs;
    nvmlReturn_t r = ci_option(gpu, gi->id, e, &c, &gs);
    if (r != NVML_SUCCESS)
        return r;
    memset(info, 0, sizeof(*info));
    info->id = (unsigned)c.nvml_ci_profile_id;
    info->sliceCount = c.ci_slices;
    info->instanceCount = c.max_count;
    return NVML_SUCCESS;
}

static nvmlComputeInstance_t ci_handle(struct fake_gpu *gpu, unsigned gi, unsigned ci)
{
    struct nvmlComputeInstance_st *h = &gpu->ci[gi % FAKE_MAX_GI][ci % FAKE_MAX_CI];
    *h = (struct nvmlComputeInstance_st){H_CI, gpu, gi, ci};
    return h;
}

FAKE_FN(nvmlGpuInstanceCreateComputeInstance,
        (nvmlGpuInstance_t gi, unsigned id, nvmlComputeInstance_t *out), (gi, id, out))
{
    struct fake_gpu *gpu = gi_gpu(gi);
    if (!gpu || !out)
        return NVML_ERROR_INVALID_ARGUMENT;
    unsigned ci = 0;
    int rc = mb_device_mig_create_ci(gpu->emu, gi->id, (int)id, &ci, NULL);
    if (rc != MB_OK)
        return to_nvml(rc);
    *out = ci_handle(gpu, gi->id, ci);
    return NVML_SUCCESS;
}

FAKE_FN(nvmlGpuInstanceGetComputeInstances,
        (nvmlGpuInstance_t gi, unsigned id, nvmlComputeInstance_t *out, unsigned *count),
        (gi, id, out, count))
{
    struct fake_gpu *gpu = gi_gpu(gi);
    if (!gpu || !count)
        return NVML_ERROR_INVALID_ARGUMENT;
    struct mb_mig_instance all[MB_MAX_MIG_INSTANCES * 2];
    size_t n;
    int rc = instances(gpu, all, &n);
    if (rc != MB_OK)
        return to_nvml(rc);
    unsigned k = 0;
    for (size_t i = 0; i < n; i++) {
        if (all[i].gi_id != gi->id || !all[i].has_ci || all[i].ci_profile_id != id)
            continue;
        if (out)
            out[k] = ci_handle(gpu, gi->id, all[i].ci_id);
        k++;
    }
    *count = k;
    return NVML_SUCCESS;
}

FAKE_FN(nvmlGpuInstanceGetComputeInstanceById,
        (nvmlGpuInstance_t gi, unsigned id, nvmlComputeInstance_t *out), (gi, id, out))
{
    struct fake_gpu *gpu = gi_gpu(gi);
    if (!gpu || !out)
        return NVML_ERROR_INVALID_ARGUMENT;
    struct mb_mig_instance all[MB_MAX_MIG_INSTANCES * 2];
    size_t n;
    int rc = instances(gpu, all, &n);
    if (rc != MB_OK)
        return to_nvml(rc);
    for (size_t i = 0; i < n; i++)
        if (all[i].gi_id == gi->id && all[i].has_ci && all[i].ci_id == id) {
            *out = ci_handle(gpu, gi->id, id);
            return NVML_SUCCESS;
        }
    return NVML_ERROR_NOT_FOUND;
}

static nvmlReturn_t ci_info(nvmlComputeInstance_t ci, nvmlComputeInstanceInfo_t *info)
{
    if (!ci || ci->magic != H_CI || g.refs == 0 || !info)
        return NVML_ERROR_INVALID_ARGUMENT;
    struct mb_mig_instance all[MB_MAX_MIG_INSTANCES * 2];
    size_t n;
    int rc = instances(ci->gpu, all, &n);
    if (rc != MB_OK)
        return to_nvml(rc);
    for (size_t i = 0; i < n; i++)
        if (all[i].gi_id == ci->gi && all[i].has_ci && all[i].ci_id == ci->id) {
            memset(info, 0, sizeof(*info));
            info->device = &ci->gpu->parent;
            info->gpuInstance = gi_handle(ci->gpu, ci->gi);
            info->id = ci->id;
            info->profileId = all[i].ci_profile_id;
            info->placement.start = 0;
            info->placement.size = all[i].ci_slices;
            return NVML_SUCCESS;
        }
    return NVML_ERROR_INVALID_ARGUMENT;
}

FAKE_FN(nvmlComputeInstanceGetInfo, (nvmlComputeInstance_t ci, nvmlComputeInstanceInfo_t *info),
        (ci, info))
{
    return ci_info(ci, info);
}

#ifndef FAKE_NVML_LEGACY
FAKE_FN(nvmlComputeInstanceGetInfo_v2, (nvmlComputeInstance_t ci, nvmlComputeInstanceInfo_t *info),
        (ci, info))
{
    return ci_info(ci, info);
}
#endif

FAKE_FN(nvmlComputeInstanceDestroy, (nvmlComputeInstance_t ci), (ci))
{
    if (!ci || ci->magic != H_CI)
        return NVML_ERROR_INVALID_ARGUMENT;
    return to_nvml(mb_device_mig_destroy_ci(ci->gpu->emu, ci->gi, ci->id, NULL));
}

/* ---- MIG device handles
 * ---------------------------------------------------------------------------- */

static unsigned max_mig_devices(struct fake_gpu *gpu)
{
    const struct mb_gpu_model *m = model_of(gpu);
    return m ? m->compute_slices : 0;
}

FAKE_FN(nvmlDeviceGetMaxMigDeviceCount, (nvmlDevice_t h, unsigned *count), (h, count))
{
    struct fake_gpu *gpu = parent_of(h);
    if (!gpu || !count)
        return NVML_ERROR_INVALID_ARGUMENT;
    *count = mig_enabled(gpu) ? max_mig_devices(gpu) : 0;
    return NVML_SUCCESS;
}

/*
 * Index i of the MIG device table. The driver's table can be sparse; the fake leaves slot 0
 * empty whenever there is room, so callers must skip NOT_FOUND as NVIDIA's tools do.
 */
FAKE_FN(nvmlDeviceGetMigDeviceHandleByIndex, (nvmlDevice_t h, unsigned index, nvmlDevice_t *out),
        (h, index, out))
{
    struct fake_gpu *gpu = parent_of(h);
    if (!gpu || !out)
        return NVML_ERROR_INVALID_ARGUMENT;
    unsigned max = max_mig_devices(gpu);
    if (!mig_enabled(gpu) || index >= max)
        return NVML_ERROR_INVALID_ARGUMENT;
    struct mb_mig_instance all[MB_MAX_MIG_INSTANCES * 2];
    size_t n;
    int rc = instances(gpu, all, &n);
    if (rc != MB_OK)
        return to_nvml(rc);
    unsigned n_ci = 0;
    for (size_t i = 0; i < n; i++)
        n_ci += all[i].has_ci;
    unsigned skip = n_ci < max ? 1 : 0;
    if (index < skip)
        return NVML_ERROR_NOT_FOUND;
    unsigned want = index - skip, k = 0;
    for (size_t i = 0; i < n; i++) {
        if (!all[i].has_ci)
            continue;
        if (k++ == want) {
            unsigned slot = all[i].gi_id % FAKE_MAX_GI * FAKE_MAX_CI + all[i].ci_id % FAKE_MAX_CI;
            gpu->mig[slot] = (struct nvmlDevice_st){H_MIG, gpu, all[i].gi_id, all[i].ci_id};
            *out = &gpu->mig[slot];
            return NVML_SUCCESS;
        }
    }
    return NVML_ERROR_NOT_FOUND;
}

/* The GPU- or compute-instance id of a MIG device handle; NOT_SUPPORTED for a parent handle. */
static nvmlReturn_t mig_handle_id(nvmlDevice_t h, unsigned *id, bool ci)
{
    if (!h || !id)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (h->magic != H_MIG)
        return NVML_ERROR_NOT_SUPPORTED;
    *id = ci ? h->ci : h->gi;
    return NVML_SUCCESS;
}

FAKE_FN(nvmlDeviceGetGpuInstanceId, (nvmlDevice_t h, unsigned *id), (h, id))
{
    return mig_handle_id(h, id, false);
}

FAKE_FN(nvmlDeviceGetComputeInstanceId, (nvmlDevice_t h, unsigned *id), (h, id))
{
    return mig_handle_id(h, id, true);
}

/* ---- processes
 * -------------------------------------------------------------------------------------- */

/*
 * The process list of a parent handle (all processes, with their instance ids) or of a MIG
 * handle (its own). Writes at most *count entries through put(); INSUFFICIENT_SIZE with the
 * needed count when they do not fit.
 */
static nvmlReturn_t processes(nvmlDevice_t h, unsigned *count, void *buf, size_t elem)
{
    if (!h || (h->magic != H_PARENT && h->magic != H_MIG) || !count)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (g.grow_left > 0) {
        g.grow_left--;
        g.phantoms = g.phantoms + 10 > FAKE_MAX_PHANTOMS ? FAKE_MAX_PHANTOMS : g.phantoms + 10;
    }
    struct mb_process ps[MB_MAX_PROCESSES];
    size_t n = 0;
    int rc = mb_device_processes(h->gpu->emu, ps, MB_MAX_PROCESSES, &n, NULL);
    if (rc != MB_OK)
        return to_nvml(rc);
    nvmlProcessInfo_t rows[MB_MAX_PROCESSES + FAKE_MAX_PHANTOMS];
    unsigned k = 0;
    for (size_t i = 0; i < n; i++) {
        if (h->magic == H_MIG && (ps[i].gi_id != (int)h->gi || ps[i].ci_id != (int)h->ci))
            continue;
        nvmlProcessInfo_t *o = &rows[k++];
        memset(o, 0, sizeof(*o));
        o->pid = ps[i].pid;
        o->usedGpuMemory = ps[i].used_mem_valid ? ps[i].used_mem_bytes : NVML_VALUE_NOT_AVAILABLE;
        o->gpuInstanceId = ps[i].gi_id < 0 ? NVML_NO_INSTANCE_ID : (unsigned)ps[i].gi_id;
        o->computeInstanceId = ps[i].ci_id < 0 ? NVML_NO_INSTANCE_ID : (unsigned)ps[i].ci_id;
    }
    if (h->magic == H_PARENT)
        for (unsigned i = 0; i < g.phantoms; i++) {
            nvmlProcessInfo_t *o = &rows[k++];
            memset(o, 0, sizeof(*o));
            o->pid = 900000 + i;
            o->usedGpuMemory = 64 * MIB;
            o->gpuInstanceId = NVML_NO_INSTANCE_ID;
            o->computeInstanceId = NVML_NO_INSTANCE_ID;
        }
    if (k > *count || (k > 0 && !buf)) {
        *count = k;
        return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    *count = k;
    for (unsigned i = 0; i < k; i++) {
        if (elem == sizeof(nvmlProcessInfo_t)) {
            ((nvmlProcessInfo_t *)buf)[i] = rows[i];
        } else {
            nvmlProcessInfo_v2_t *o = &((nvmlProcessInfo_v2_t *)buf)[i];
            o->pid = rows[i].pid;
            o->usedGpuMemory = rows[i].usedGpuMemory;
            o->gpuInstanceId = rows[i].gpuInstanceId;
            o->computeInstanceId = rows[i].computeInstanceId;
        }
    }
    return NVML_SUCCESS;
}

FAKE_FN(nvmlDeviceGetComputeRunningProcesses_v2,
        (nvmlDevice_t h, unsigned *count, nvmlProcessInfo_v2_t *infos), (h, count, infos))
{
    return processes(h, count, infos, sizeof(*infos));
}

#ifndef FAKE_NVML_LEGACY
FAKE_FN(nvmlDeviceGetComputeRunningProcesses_v3,
        (nvmlDevice_t h, unsigned *count, nvmlProcessInfo_t *infos), (h, count, infos))
{
    return processes(h, count, infos, sizeof(*infos));
}
#endif

FAKE_FN(nvmlSystemGetProcessName, (unsigned pid, char *name, unsigned len), (pid, name, len))
{
    for (unsigned d = 0; d < g.n_gpus; d++) {
        struct mb_process ps[MB_MAX_PROCESSES];
        size_t n = 0;
        if (mb_device_processes(g.gpus[d].emu, ps, MB_MAX_PROCESSES, &n, NULL) != MB_OK)
            continue;
        for (size_t i = 0; i < n; i++)
            if (ps[i].pid == pid) {
                copy_out(name, len, ps[i].name);
                return NVML_SUCCESS;
            }
    }
    return NVML_ERROR_NOT_FOUND;
}

/* ---- GPM
 * ---------------------------------------------------------------------------------------------- */

#ifndef FAKE_NVML_LEGACY
FAKE_FN(nvmlGpmQueryDeviceSupport, (nvmlDevice_t h, nvmlGpmSupport_t *s), (h, s))
{
    struct fake_gpu *gpu = parent_of(h);
    if (!gpu || !s)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (s->version != NVML_GPM_SUPPORT_VERSION)
        return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    unsigned a = arch_of(gpu);
    s->isSupportedDevice = a != NVML_DEVICE_ARCH_UNKNOWN && a >= NVML_DEVICE_ARCH_HOPPER;
    return NVML_SUCCESS;
}

FAKE_FN(nvmlGpmSampleAlloc, (nvmlGpmSample_t * s), (s))
{
    if (!s)
        return NVML_ERROR_INVALID_ARGUMENT;
    *s = calloc(1, sizeof(**s));
    return *s ? NVML_SUCCESS : NVML_ERROR_MEMORY;
}

FAKE_FN(nvmlGpmSampleFree, (nvmlGpmSample_t s), (s))
{
    if (!s)
        return NVML_ERROR_INVALID_ARGUMENT;
    free(s);
    return NVML_SUCCESS;
}

FAKE_FN(nvmlGpmMigSampleGet, (nvmlDevice_t h, unsigned gi, nvmlGpmSample_t s), (h, gi, s))
{
    struct fake_gpu *gpu = parent_of(h);
    if (!gpu || !s)
        return NVML_ERROR_INVALID_ARGUMENT;
    int rc = mb_device_mig_activity(gpu->emu, gi, &s->act, NULL);
    if (rc != MB_OK)
        return to_nvml(rc);
    s->filled = true;
    s->gi = gi;
    return NVML_SUCCESS;
}

FAKE_FN(nvmlGpmMetricsGet, (nvmlGpmMetricsGet_t * q), (q))
{
    if (!q)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (q->version != NVML_GPM_METRICS_GET_VERSION)
        return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    if (!q->sample1 || !q->sample2 || !q->sample1->filled || !q->sample2->filled ||
        q->numMetrics > sizeof(q->metrics) / sizeof(q->metrics[0]))
        return NVML_ERROR_INVALID_ARGUMENT;
    const struct mb_mig_activity *a = &q->sample2->act;
    /* Each metric the emulator models: its id, its validity bit, its value. */
    const struct {
        unsigned id;
        uint32_t bit;
        double value;
    } known[] = {{NVML_GPM_METRIC_SM_UTIL, MB_ACT_SM_UTIL, a->sm_util_pct},
                 {NVML_GPM_METRIC_SM_OCCUPANCY, MB_ACT_SM_OCCUPANCY, a->sm_occupancy_pct},
                 {NVML_GPM_METRIC_ANY_TENSOR_UTIL, MB_ACT_TENSOR, a->tensor_util_pct},
                 {NVML_GPM_METRIC_DRAM_BW_UTIL, MB_ACT_DRAM_BW, a->dram_bw_util_pct}};
    for (unsigned i = 0; i < q->numMetrics; i++) {
        nvmlGpmMetric_t *m = &q->metrics[i];
        m->nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
        for (size_t k = 0; k < sizeof(known) / sizeof(known[0]); k++)
            if (m->metricId == known[k].id && (a->valid & known[k].bit)) {
                m->value = known[k].value;
                m->nvmlReturn = NVML_SUCCESS;
            }
    }
    return NVML_SUCCESS;
}
#endif
