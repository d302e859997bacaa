/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A stand-in libnvidia-ml.so.1 for tests: the NVML functions migbench uses, implemented on the
 * emulated MIG GPU (src/device/emu.c). It lets the real nvml backend (dlopen, symbol fallbacks,
 * size-retry loops, error mapping, MIG create and destroy) run in every CI without a GPU.
 *
 * Behaviour follows NVML, not the go-nvml mock: profile enum values map to the driver's profile
 * ids (info.id, e.g. 1_SLICE -> 19 on H100), placements are in memory slices, MIG device handles
 * can sit at sparse indices, process lists answer INSUFFICIENT_SIZE when the buffer is short.
 *
 * Built twice: the full library, and with FAKE_NVML_LEGACY a library without the newer symbols
 * (no _v2/_v3 entry points, no ProfileInfoV, no field values, no GPM) like an old driver.
 *
 * Environment:
 *   MIGBENCH_FAKE_NVML_SPEC       ';'-separated emu specs, one per GPU ("H100-80GB:mig=on"),
 *                                 at most 8. nvmlDeviceSetMigMode activates the mode when the
 *                                 emulated GPU is idle; options reset=unavailable and
 *                                 busy=PID+PID make activation answer RESET_REQUIRED / IN_USE.
 *   MIGBENCH_FAKE_NVML_FAIL       ','-separated FUNC:N:CODE; the Nth call (1-based) of FUNC, or
 *                                 every call with N = '*', returns NVML code CODE.
 *   MIGBENCH_FAKE_NVML_INIT_FAIL  nvmlInit returns this NVML code.
 *   MIGBENCH_FAKE_NVML_PROCS      ','-separated PID:GI:CI:MIB, attached on the first GPU at
 *                                 init (GI and CI -1 for the whole GPU); existing pids are kept.
 *   MIGBENCH_FAKE_NVML_PROC_GROW  the first K process-list calls each add 10 phantom processes
 *                                 before answering (a list that grows between calls).
 *   Power limit: Get/SetPowerManagementLimit, ...LimitConstraints, ...DefaultLimit act on the
 *   emulator's modelled limit (emu options limit_w, min_limit_w, limit_perm=deny).
 *   MIGBENCH_FAKE_NVML_GPI_VERSION  highest GpuInstanceProfileInfo struct version that
 *                                 ProfileInfoV accepts (3, 2, or 1 = neither).
 *
 * The state below is the fake driver's; it is test code standing in for a process-wide library,
 * and every entry point holds one mutex.
 */
#include "fake_nvml.h"

struct fake_state fake_g = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* ---- helpers --------------------------------------------------------------------------------- */

nvmlReturn_t to_nvml(int status)
{
    switch (status) {
    case MB_OK:
        return NVML_SUCCESS;
    case MB_EUNSUPPORTED:
        return NVML_ERROR_NOT_SUPPORTED;
    case MB_EINVAL:
        return NVML_ERROR_INVALID_ARGUMENT;
    case MB_ENORESOURCES:
        return NVML_ERROR_INSUFFICIENT_RESOURCES;
    case MB_EBUSY:
        return NVML_ERROR_IN_USE;
    case MB_ENOTFOUND:
        return NVML_ERROR_NOT_FOUND;
    case MB_EGONE:
        return NVML_ERROR_GPU_IS_LOST;
    case MB_ERANGE:
        return NVML_ERROR_INSUFFICIENT_SIZE;
    case MB_EPERM:
        return NVML_ERROR_NO_PERMISSION;
    case MB_ERESET_REQUIRED:
        return NVML_ERROR_RESET_REQUIRED;
    case MB_ESTATE:
        return NVML_ERROR_NOT_SUPPORTED;
    default:
        return NVML_ERROR_UNKNOWN;
    }
}

void copy_out(char *dst, unsigned len, const char *src)
{
    if (len == 0)
        return;
    size_t n = strnlen(src, len - 1);
    memcpy(dst, src, n);
    dst[n] = '\0';
}

static nvmlReturn_t copy_str_checked(char *dst, unsigned len, const char *src)
{
    if (!dst)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (strlen(src) + 1 > len)
        return NVML_ERROR_INSUFFICIENT_SIZE;
    copy_out(dst, len, src);
    return NVML_SUCCESS;
}

long env_long(const char *name, long dflt)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return dflt;
    return strtol(v, NULL, 10);
}

/* The injected return of this call of fn, or NVML_SUCCESS. */
nvmlReturn_t injected(const char *fn)
{
    for (size_t i = 0; i < g.n_faults; i++) {
        struct fault *f = &g.faults[i];
        if (strcmp(f->fn, fn) != 0)
            continue;
        f->calls++;
        if (f->nth == 0 || f->nth == f->calls)
            return f->code;
    }
    return NVML_SUCCESS;
}

static void parse_faults(void)
{
    g.n_faults = 0;
    const char *s = getenv("MIGBENCH_FAKE_NVML_FAIL");
    if (!s)
        return;
    char buf[1024];
    copy_out(buf, sizeof(buf), s);
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok && g.n_faults < FAKE_MAX_FAULTS;
         tok = strtok_r(NULL, ",", &save)) {
        char *c1 = strchr(tok, ':');
        char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c1 || !c2)
            continue;
        *c1 = '\0';
        *c2 = '\0';
        struct fault *f = &g.faults[g.n_faults++];
        memset(f, 0, sizeof(*f));
        copy_out(f->fn, sizeof(f->fn), tok);
        f->nth = strcmp(c1 + 1, "*") == 0 ? 0 : strtol(c1 + 1, NULL, 10);
        f->code = (int)strtol(c2 + 1, NULL, 10);
    }
}

const struct mb_gpu_model *model_of(const struct fake_gpu *gpu)
{
    return mb__emu_model(gpu->emu);
}

struct fake_gpu *parent_of(nvmlDevice_t h)
{
    if (!h || h->magic != H_PARENT || g.refs == 0)
        return NULL;
    return h->gpu;
}

bool mig_enabled(struct fake_gpu *gpu)
{
    struct mb_mig_mode m;
    return mb_device_mig_mode(gpu->emu, &m, NULL) == MB_OK && m.current;
}

/* Every GPU instance / compute instance the emulator has now. */
int instances(struct fake_gpu *gpu, struct mb_mig_instance *out, size_t *n)
{
    return mb_device_mig_instances(gpu->emu, out, MB_MAX_MIG_INSTANCES * 2, n, NULL);
}

const struct mb_gi_profile *catalog_profile_by_enum(const struct fake_gpu *gpu, unsigned e)
{
    const struct mb_gpu_model *m = model_of(gpu);
    for (size_t i = 0; m && i < m->n_profiles; i++)
        if (m->profiles[i].nvml_enum == (int)e && m->profiles[i].driver_id >= 0)
            return &m->profiles[i];
    return NULL;
}

const struct mb_gi_profile *catalog_profile_by_id(const struct fake_gpu *gpu, unsigned id)
{
    const struct mb_gpu_model *m = model_of(gpu);
    return m ? mb_model_profile_by_driver_id(m, (int)id) : NULL;
}

unsigned arch_of(const struct fake_gpu *gpu)
{
    const struct mb_gpu_model *m = model_of(gpu);
    if (!m)
        return NVML_DEVICE_ARCH_UNKNOWN;
    if (m->name[0] == 'A')
        return NVML_DEVICE_ARCH_AMPERE;
    if (m->name[0] == 'H' || strncmp(m->name, "GH", 2) == 0)
        return NVML_DEVICE_ARCH_HOPPER;
    if (m->name[0] == 'B' || strncmp(m->name, "GB", 2) == 0)
        return NVML_DEVICE_ARCH_BLACKWELL;
    return NVML_DEVICE_ARCH_UNKNOWN;
}

/* ---- init / shutdown ----------------------------------------------------------------------------
 */

static void close_all(void)
{
    for (unsigned i = 0; i < g.n_gpus; i++)
        mb_device_close(g.gpus[i].emu);
    memset(g.gpus, 0, sizeof(g.gpus));
    g.n_gpus = 0;
}

static void attach_env_processes(void)
{
    const char *s = getenv("MIGBENCH_FAKE_NVML_PROCS");
    if (!s || g.n_gpus == 0)
        return;
    struct mb_process have[MB_MAX_PROCESSES];
    size_t n_have = 0;
    if (mb_device_processes(g.gpus[0].emu, have, MB_MAX_PROCESSES, &n_have, NULL) != MB_OK)
        n_have = 0;
    char buf[4096];
    copy_out(buf, sizeof(buf), s);
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        unsigned pid;
        int gi, ci;
        unsigned long long mib;
        if (sscanf(tok, "%u:%d:%d:%llu", &pid, &gi, &ci, &mib) != 4)
            continue;
        bool dup = false;
        for (size_t k = 0; k < n_have; k++)
            dup = dup || have[k].pid == pid;
        if (dup)
            continue;
        char name[32];
        snprintf(name, sizeof(name), "fake-proc-%u", pid);
        mb__emu_attach_process(g.gpus[0].emu, pid, gi, ci, mib * MIB, name, NULL);
    }
}

static nvmlReturn_t do_init(void)
{
    long fail = env_long("MIGBENCH_FAKE_NVML_INIT_FAIL", 0);
    if (fail != 0)
        return (nvmlReturn_t)fail;
    if (g.refs++ > 0)
        return NVML_SUCCESS;
    parse_faults();
    g.grow_left = env_long("MIGBENCH_FAKE_NVML_PROC_GROW", 0);
    g.phantoms = 0;
    const char *spec = getenv("MIGBENCH_FAKE_NVML_SPEC");
    char buf[4096];
    copy_out(buf, sizeof(buf), spec && *spec ? spec : "H100-80GB");
    char *save = NULL;
    for (char *tok = strtok_r(buf, ";", &save); tok && g.n_gpus < FAKE_MAX_GPUS;
         tok = strtok_r(NULL, ";", &save)) {
        if (strncmp(tok, "emu:", 4) == 0)
            tok += 4;
        struct fake_gpu *gpu = &g.gpus[g.n_gpus];
        if (mb__emu_open(tok, &gpu->emu, NULL) != MB_OK) {
            close_all();
            g.refs = 0;
            return NVML_ERROR_UNKNOWN;
        }
        gpu->index = g.n_gpus;
        gpu->parent = (struct nvmlDevice_st){H_PARENT, gpu, 0, 0};
        g.n_gpus++;
    }
    attach_env_processes();
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlInit(void)
{
    pthread_mutex_lock(&g.lock);
    nvmlReturn_t r = do_init();
    if (r == NVML_SUCCESS)
        r = injected("nvmlInit");
    pthread_mutex_unlock(&g.lock);
    return r;
}

#ifndef FAKE_NVML_LEGACY
EXPORT nvmlReturn_t nvmlInit_v2(void)
{
    pthread_mutex_lock(&g.lock);
    nvmlReturn_t r = do_init();
    if (r == NVML_SUCCESS)
        r = injected("nvmlInit_v2");
    pthread_mutex_unlock(&g.lock);
    return r;
}
#endif

EXPORT nvmlReturn_t nvmlShutdown(void)
{
    pthread_mutex_lock(&g.lock);
    nvmlReturn_t r = NVML_SUCCESS;
    if (g.refs == 0)
        r = NVML_ERROR_UNINITIALIZED;
    else if (--g.refs == 0)
        close_all();
    pthread_mutex_unlock(&g.lock);
    return r;
}

EXPORT const char *nvmlErrorString(nvmlReturn_t r)
{
    switch (r) {
    case NVML_SUCCESS:
        return "Success";
    case NVML_ERROR_UNINITIALIZED:
        return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT:
        return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED:
        return "Not Supported";
    case NVML_ERROR_NO_PERMISSION:
        return "Insufficient Permissions";
    case NVML_ERROR_NOT_FOUND:
        return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE:
        return "Insufficient Size";
    case NVML_ERROR_DRIVER_NOT_LOADED:
        return "Driver Not Loaded";
    case NVML_ERROR_GPU_IS_LOST:
        return "GPU is lost";
    case NVML_ERROR_RESET_REQUIRED:
        return "GPU requires reset";
    case NVML_ERROR_IN_USE:
        return "In use by another client";
    case NVML_ERROR_INSUFFICIENT_RESOURCES:
        return "Insufficient Resources";
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH:
        return "Version mismatch";
    default:
        return "Unknown Error";
    }
}

/* ---- devices and identity
 * ------------------------------------------------------------------------ */

static nvmlReturn_t get_count(unsigned *count)
{
    if (!count)
        return NVML_ERROR_INVALID_ARGUMENT;
    *count = g.n_gpus;
    return NVML_SUCCESS;
}

static nvmlReturn_t get_handle(unsigned index, nvmlDevice_t *h)
{
    if (!h || index >= g.n_gpus)
        return NVML_ERROR_INVALID_ARGUMENT;
    *h = &g.gpus[index].parent;
    return NVML_SUCCESS;
}

FAKE_FN(nvmlDeviceGetCount, (unsigned *count), (count))
{
    return get_count(count);
}
FAKE_FN(nvmlDeviceGetHandleByIndex, (unsigned index, nvmlDevice_t *h), (index, h))
{
    return get_handle(index, h);
}
#ifndef FAKE_NVML_LEGACY
FAKE_FN(nvmlDeviceGetCount_v2, (unsigned *count), (count))
{
    return get_count(count);
}
FAKE_FN(nvmlDeviceGetHandleByIndex_v2, (unsigned index, nvmlDevice_t *h), (index, h))
{
    return get_handle(index, h);
}
#endif

FAKE_FN(nvmlDeviceGetHandleByUUID, (const char *uuid, nvmlDevice_t *h), (uuid, h))
{
    if (!uuid || !h)
        return NVML_ERROR_INVALID_ARGUMENT;
    for (unsigned i = 0; i < g.n_gpus; i++) {
        struct mb_device_info info;
        int rc = mb_device_info(g.gpus[i].emu, &info, NULL);
        if (rc != MB_OK)
            return to_nvml(rc);
        if (strcmp(info.uuid, uuid) == 0) {
            *h = &g.gpus[i].parent;
            return NVML_SUCCESS;
        }
        /* A MIG device UUID gives that MIG device's handle, as the driver does. */
        struct mb_mig_instance all[MB_MAX_MIG_INSTANCES * 2];
        size_t n = 0;
        if (strncmp(uuid, "MIG-", 4) != 0 || !mig_enabled(&g.gpus[i]) ||
            instances(&g.gpus[i], all, &n) != MB_OK)
            continue;
        for (size_t k = 0; k < n; k++) {
            if (!all[k].has_ci || strcmp(all[k].uuid, uuid) != 0)
                continue;
            struct fake_gpu *gpu = &g.gpus[i];
            unsigned slot = all[k].gi_id % FAKE_MAX_GI * FAKE_MAX_CI + all[k].ci_id % FAKE_MAX_CI;
            gpu->mig[slot] = (struct nvmlDevice_st){H_MIG, gpu, all[k].gi_id, all[k].ci_id};
            *h = &gpu->mig[slot];
            return NVML_SUCCESS;
        }
    }
    return NVML_ERROR_NOT_FOUND;
}

/* Newer than the legacy fake's driver: old drivers cannot name a MIG device's GPU. */
#ifndef FAKE_NVML_LEGACY
FAKE_FN(nvmlDeviceGetDeviceHandleFromMigDeviceHandle, (nvmlDevice_t mig, nvmlDevice_t *h), (mig, h))
{
    if (!mig || !h || mig->magic != H_MIG)
        return NVML_ERROR_INVALID_ARGUMENT;
    *h = &mig->gpu->parent;
    return NVML_SUCCESS;
}
#endif

/* The MIG instance behind a MIG device handle. */
static nvmlReturn_t mig_instance(nvmlDevice_t h, struct mb_mig_instance *out)
{
    struct mb_mig_instance all[MB_MAX_MIG_INSTANCES * 2];
    size_t n;
    int rc = instances(h->gpu, all, &n);
    if (rc != MB_OK)
        return to_nvml(rc);
    for (size_t i = 0; i < n; i++)
        if (all[i].has_ci && all[i].gi_id == h->gi && all[i].ci_id == h->ci) {
            *out = all[i];
            return NVML_SUCCESS;
        }
    return NVML_ERROR_NOT_FOUND;
}

FAKE_FN(nvmlDeviceGetName, (nvmlDevice_t h, char *name, unsigned len), (h, name, len))
{
    if (!h || (h->magic != H_PARENT && h->magic != H_MIG))
        return NVML_ERROR_INVALID_ARGUMENT;
    struct mb_device_info info;
    int rc = mb_device_info(h->gpu->emu, &info, NULL);
    if (rc != MB_OK)
        return to_nvml(rc);
    if (h->magic == H_MIG) {
        struct mb_mig_instance inst;
        nvmlReturn_t r = mig_instance(h, &inst);
        if (r != NVML_SUCCESS)
            return r;
        char buf[MB_DEVICE_NAME_MAX + 48];
        snprintf(buf, sizeof(buf), "%s MIG %s", info.name, inst.profile_name);
        return copy_str_checked(name, len, buf);
    }
    return copy_str_checked(name, len, info.name);
}

FAKE_FN(nvmlDeviceGetUUID, (nvmlDevice_t h, char *uuid, unsigned len), (h, uuid, len))
{
    if (!h || (h->magic != H_PARENT && h->magic != H_MIG))
        return NVML_ERROR_INVALID_ARGUMENT;
    if (h->magic == H_MIG) {
        struct mb_mig_instance inst;
        nvmlReturn_t r = mig_instance(h, &inst);
        return r != NVML_SUCCESS ? r : copy_str_checked(uuid, len, inst.uuid);
    }
    struct mb_device_info info;
    int rc = mb_device_info(h->gpu->emu, &info, NULL);
    return rc != MB_OK ? to_nvml(rc) : copy_str_checked(uuid, len, info.uuid);
}

FAKE_FN(nvmlSystemGetDriverVersion, (char *v, unsigned len), (v, len))
{
    return copy_str_checked(v, len, "580.00-fake (emulated by migbench)");
}

FAKE_FN(nvmlSystemGetNVMLVersion, (char *v, unsigned len), (v, len))
{
    return copy_str_checked(v, len, "13.580.00-fake");
}

static nvmlReturn_t pci_info(nvmlDevice_t h, nvmlPciInfo_t *pci)
{
    struct fake_gpu *gpu = parent_of(h);
    if (!gpu || !pci)
        return NVML_ERROR_INVALID_ARGUMENT;
    memset(pci, 0, sizeof(*pci));
    pci->bus = 0x18 + gpu->index;
    pci->pciDeviceId = 0x233010de;
    snprintf(pci->busId, sizeof(pci->busId), "00000000:%02X:00.0", pci->bus);
    snprintf(pci->busIdLegacy, sizeof(pci->busIdLegacy), "0000:%02X:00.0", pci->bus);
    return NVML_SUCCESS;
}

#ifndef FAKE_NVML_LEGACY
FAKE_FN(nvmlDeviceGetPciInfo_v3, (nvmlDevice_t h, nvmlPciInfo_t *pci), (h, pci))
{
    return pci_info(h, pci);
}
#endif
FAKE_FN(nvmlDeviceGetPciInfo_v2, (nvmlDevice_t h, nvmlPciInfo_t *pci), (h, pci))
{
    return pci_info(h, pci);
}

FAKE_FN(nvmlDeviceGetArchitecture, (nvmlDevice_t h, nvmlDeviceArchitecture_t *a), (h, a))
{
    struct fake_gpu *gpu = parent_of(h);
    if (!gpu || !a)
        return NVML_ERROR_INVALID_ARGUMENT;
    *a = arch_of(gpu);
    return NVML_SUCCESS;
}

/* Total and used memory of a parent or MIG handle. */
static nvmlReturn_t memory(nvmlDevice_t h, unsigned long long *total, unsigned long long *used)
{
    if (!h || (h->magic != H_PARENT && h->magic != H_MIG))
        return NVML_ERROR_INVALID_ARGUMENT;
    if (h->magic == H_MIG) {
        struct mb_mig_instance inst;
        nvmlReturn_t r = mig_instance(h, &inst);
        if (r != NVML_SUCCESS)
            return r;
        if (!inst.mem_valid)
            return NVML_ERROR_NOT_SUPPORTED;
        *total = inst.mem_total_bytes;
        *used = inst.mem_used_bytes;
        return NVML_SUCCESS;
    }
    struct mb_device_info info;
    struct mb_telemetry t;
    int rc = mb_device_info(h->gpu->emu, &info, NULL);
    if (rc == MB_OK)
        rc = mb_device_telemetry(h->gpu->emu, &t, NULL);
    if (rc != MB_OK)
        return to_nvml(rc);
    if (!info.mem_total_valid)
        return NVML_ERROR_NOT_SUPPORTED;
    *total = info.mem_total_bytes;
    *used = (t.valid & MB_TEL_MEM_USED) ? t.mem_used_bytes : 0;
    return NVML_SUCCESS;
}

FAKE_FN(nvmlDeviceGetMemoryInfo, (nvmlDevice_t h, nvmlMemory_t *m), (h, m))
{
    if (!m)
        return NVML_ERROR_INVALID_ARGUMENT;
    unsigned long long total = 0, used = 0;
    nvmlReturn_t r = memory(h, &total, &used);
    if (r != NVML_SUCCESS)
        return r;
    m->total = total;
    m->used = used;
    m->free = total - used;
    return NVML_SUCCESS;
}

#ifndef FAKE_NVML_LEGACY
FAKE_FN(nvmlDeviceGetMemoryInfo_v2, (nvmlDevice_t h, nvmlMemory_v2_t *m), (h, m))
{
    if (!m)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (m->version != nvmlMemory_v2)
        return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    unsigned long long total = 0, used = 0;
    nvmlReturn_t r = memory(h, &total, &used);
    if (r != NVML_SUCCESS)
        return r;
    m->total = total;
    m->reserved = 0;
    m->used = used;
    m->free = total - used;
    return NVML_SUCCESS;
}
#endif

/* ---- telemetry ----------------------------------------------------------------------------------
 */

static nvmlReturn_t telemetry(nvmlDevice_t h, struct mb_telemetry *t)
{
    struct fake_gpu *gpu = parent_of(h);
    if (!gpu)
        return NVML_ERROR_INVALID_ARGUMENT;
    return to_nvml(mb_device_telemetry(gpu->emu, t, NULL));
}

/* Answers one telemetry field: NOT_SUPPORTED when the emulator marks it invalid. */
#define TEL_FIELD(bit, field, outp)                                                                \
    do {                                                                                           \
        struct mb_telemetry t_;                                                                    \
        nvmlReturn_t r2_ = telemetry(h, &t_);                                                      \
        if (r2_ != NVML_SUCCESS)                                                                   \
            return r2_;                                                                            \
        if (!(t_.valid & (bit)))                                                                   \
            return NVML_ERROR_NOT_SUPPORTED;                                                       \
        *(outp) = t_.field;                                                                        \
        return NVML_SUCCESS;                                                                       \
    } while (0)

FAKE_FN(nvmlDeviceGetPowerUsage, (nvmlDevice_t h, unsigned *mw), (h, mw))
{
    if (!mw)
        return NVML_ERROR_INVALID_ARGUMENT;
    TEL_FIELD(MB_TEL_POWER, power_mw, mw);
}

FAKE_FN(nvmlDeviceGetTotalEnergyConsumption, (nvmlDevice_t h, unsigned long long *mj), (h, mj))
{
    if (!mj)
        return NVML_ERROR_INVALID_ARGUMENT;
    TEL_FIELD(MB_TEL_ENERGY, energy_mj, mj);
}

FAKE_FN(nvmlDeviceGetEnforcedPowerLimit, (nvmlDevice_t h, unsigned *mw), (h, mw))
{
    if (!mw)
        return NVML_ERROR_INVALID_ARGUMENT;
    TEL_FIELD(MB_TEL_POWER_LIMIT, power_limit_mw, mw);
}

/* The power limit as the emulator models it (a MIG device handle has none: it is the GPU's). */
static nvmlReturn_t power_limit(nvmlDevice_t h, struct mb_power_limit *pl)
{
    struct fake_gpu *gpu = parent_of(h);
    if (!gpu)
        return NVML_ERROR_INVALID_ARGUMENT;
    return to_nvml(mb_device_power_limit(gpu->emu, pl, NULL));
}

FAKE_FN(nvmlDeviceGetPowerManagementLimit, (nvmlDevice_t h, unsigned *mw), (h, mw))
{
    struct mb_power_limit pl;
    nvmlReturn_t r = mw ? power_limit(h, &pl) : NVML_ERROR_INVALID_ARGUMENT;
    if (r == NVML_SUCCESS)
        *mw = pl.limit_mw;
    return r;
}

FAKE_FN(nvmlDeviceGetPowerManagementDefaultLimit, (nvmlDevice_t h, unsigned *mw), (h, mw))
{
    struct mb_power_limit pl;
    nvmlReturn_t r = mw ? power_limit(h, &pl) : NVML_ERROR_INVALID_ARGUMENT;
    if (r == NVML_SUCCESS)
        *mw = pl.default_mw;
    return r;
}

FAKE_FN(nvmlDeviceGetPowerManagementLimitConstraints, (nvmlDevice_t h, unsigned *lo, unsigned *hi),
        (h, lo, hi))
{
    struct mb_power_limit pl;
    nvmlReturn_t r = lo && hi ? power_limit(h, &pl) : NVML_ERROR_INVALID_ARGUMENT;
    if (r == NVML_SUCCESS) {
        *lo = pl.min_mw;
        *hi = pl.max_mw;
    }
    return r;
}

/* NVML answers INVALID_ARGUMENT for a limit outside the constraints and NO_PERMISSION to a user
 * who is not root (the emulator's limit_perm=deny, or MIGBENCH_FAKE_NVML_FAIL). */
FAKE_FN(nvmlDeviceSetPowerManagementLimit, (nvmlDevice_t h, unsigned mw), (h, mw))
{
    struct fake_gpu *gpu = parent_of(h);
    if (!gpu)
        return NVML_ERROR_INVALID_ARGUMENT;
    int rc = mb_device_set_power_limit(gpu->emu, mw, NULL);
    return rc == MB_ERANGE ? NVML_ERROR_INVALID_ARGUMENT : to_nvml(rc);
}

FAKE_FN(nvmlDeviceGetTemperature, (nvmlDevice_t h, nvmlTemperatureSensors_t s, unsigned *c),
        (h, s, c))
{
    if (!c || s != NVML_TEMPERATURE_GPU)
        return NVML_ERROR_INVALID_ARGUMENT;
    struct mb_telemetry t;
    nvmlReturn_t r = telemetry(h, &t);
    if (r != NVML_SUCCESS)
        return r;
    if (!(t.valid & MB_TEL_TEMP) || t.temp_c < 0)
        return NVML_ERROR_NOT_SUPPORTED;
    *c = (unsigned)t.temp_c;
    return NVML_SUCCESS;
}

FAKE_FN(nvmlDeviceGetClockInfo, (nvmlDevice_t h, nvmlClockType_t type, unsigned *mhz),
        (h, type, mhz))
{
    if (!mhz)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (type == NVML_CLOCK_SM || type == NVML_CLOCK_GRAPHICS)
        TEL_FIELD(MB_TEL_CLOCK_SM, clock_sm_mhz, mhz);
    if (type == NVML_CLOCK_MEM)
        TEL_FIELD(MB_TEL_CLOCK_MEM, clock_mem_mhz, mhz);
    return NVML_ERROR_NOT_SUPPORTED;
}

FAKE_FN(nvmlDeviceGetUtilizationRates, (nvmlDevice_t h, nvmlUtilization_t *u), (h, u))
{
    if (!u)
        return NVML_ERROR_INVALID_ARGUMENT;
    struct mb_telemetry t;
    nvmlReturn_t r = telemetry(h, &t);
    if (r != NVML_SUCCESS)
        return r;
    /* NVML: not supported on MIG-enabled GPUs; the emulator marks it invalid there too. */
    if (!(t.valid & MB_TEL_UTIL_GPU))
        return NVML_ERROR_NOT_SUPPORTED;
    u->gpu = t.util_gpu_pct;
    u->memory = (t.valid & MB_TEL_UTIL_MEM) ? t.util_mem_pct : 0;
    return NVML_SUCCESS;
}

FAKE_FN(nvmlDeviceGetCurrentClocksThrottleReasons, (nvmlDevice_t h, unsigned long long *r), (h, r))
{
    if (!r)
        return NVML_ERROR_INVALID_ARGUMENT;
    TEL_FIELD(MB_TEL_THROTTLE, throttle_reasons, r);
}

#ifndef FAKE_NVML_LEGACY
FAKE_FN(nvmlDeviceGetCurrentClocksEventReasons, (nvmlDevice_t h, unsigned long long *r), (h, r))
{
    if (!r)
        return NVML_ERROR_INVALID_ARGUMENT;
    TEL_FIELD(MB_TEL_THROTTLE, throttle_reasons, r);
}

FAKE_FN(nvmlDeviceGetFieldValues, (nvmlDevice_t h, int count, nvmlFieldValue_t *fv), (h, count, fv))
{
    if (!fv || count < 0)
        return NVML_ERROR_INVALID_ARGUMENT;
    struct mb_telemetry t;
    nvmlReturn_t r = telemetry(h, &t);
    if (r != NVML_SUCCESS)
        return r;
    for (int i = 0; i < count; i++) {
        nvmlFieldValue_t *f = &fv[i];
        f->nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
        f->timestamp = t.t_ns / 1000;
        f->latencyUsec = 0;
        if (f->scopeId != NVML_POWER_SCOPE_GPU)
            continue;
        switch (f->fieldId) {
        case NVML_FI_DEV_POWER_AVERAGE:
            if (t.valid & MB_TEL_POWER_AVG) {
                f->valueType = NVML_VALUE_TYPE_UNSIGNED_INT;
                f->value.uiVal = t.power_avg_mw;
                f->nvmlReturn = NVML_SUCCESS;
            }
            break;
        case NVML_FI_DEV_POWER_INSTANT:
            if (t.valid & MB_TEL_POWER_INSTANT) {
                f->valueType = NVML_VALUE_TYPE_UNSIGNED_INT;
                f->value.uiVal = t.power_instant_mw;
                f->nvmlReturn = NVML_SUCCESS;
            }
            break;
        case NVML_FI_DEV_ENERGY:
            if (t.valid & MB_TEL_ENERGY) {
                f->valueType = NVML_VALUE_TYPE_UNSIGNED_LONG_LONG;
                f->value.ullVal = t.energy_mj;
                f->nvmlReturn = NVML_SUCCESS;
            }
            break;
        default:
            break;
        }
    }
    return NVML_SUCCESS;
}
#endif
