/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The nvml backend: real NVIDIA GPUs through libnvidia-ml.so.1, loaded with dlopen at run time
 * so that migbench builds and runs without CUDA. MIGBENCH_NVML_LIBRARY overrides the library
 * path (the tests point it at tests/fake-nvml/).
 *
 * Every symbol comes from one table, newest version first with a fallback name; only the
 * handful needed to name a device are required, the rest may be missing on old drivers and the
 * features they serve are then reported as unsupported, never as 0.
 */
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/backends.h"
#include "device/nvml_types.h"
#include "migbench/catalog.h"
#include "migbench/clock.h"
#include "migbench/device.h"
#include "base/text_internal.h"

#define NVML_DEFAULT_LIBRARY "libnvidia-ml.so.1"
#define NVML_LIBRARY_ENV "MIGBENCH_NVML_LIBRARY"

/* Bounds on what we ask the driver for; each is far above any real GPU's numbers. */
#define MAX_GI_PER_PROFILE 16
#define MAX_CI_PER_GI 8
#define MAX_PROC_ROUNDS 6
#define MAX_PROC_ENTRIES 4096
#define MAX_PLACEMENTS_QUERY 64

/* Function pointers are stored through void * (dlsym); POSIX guarantees they fit. */
_Static_assert(sizeof(void *) == sizeof(void (*)(void)), "function pointers fit in void *");

struct nvml_fns {
    nvml_void_fn init;
    nvml_void_fn shutdown;
    nvml_error_string_fn error_string;
    nvml_count_fn device_count;
    nvml_handle_by_index_fn handle_by_index;
    nvml_dev_string_fn name;
    nvml_dev_string_fn uuid;
    nvml_handle_by_uuid_fn handle_by_uuid;
    nvml_sys_string_fn driver_version;
    nvml_sys_string_fn nvml_version;
    nvml_dev_pci_fn pci_info;
    nvml_dev_mem_v2_fn memory_v2;
    nvml_dev_mem_fn memory;
    nvml_dev_uint_fn architecture;
    nvml_dev_uint_fn power_usage;
    nvml_dev_ull_fn total_energy;
    nvml_dev_fields_fn field_values;
    nvml_dev_util_fn utilization;
    nvml_dev_clock_fn clock_info;
    nvml_dev_temp_fn temperature;
    nvml_dev_ull_fn clocks_event_reasons;
    nvml_dev_uint_fn enforced_power_limit;
    nvml_dev_uint_fn power_limit;
    nvml_dev_uint2_fn power_limit_range;
    nvml_dev_uint_fn power_limit_default;
    nvml_dev_set_uint_fn set_power_limit;
    nvml_dev_get_mig_mode_fn get_mig_mode;
    nvml_dev_set_mig_mode_fn set_mig_mode;
    nvml_gi_profile_info_v_fn gi_profile_info_v;
    nvml_gi_profile_info_fn gi_profile_info;
    nvml_gi_remaining_fn gi_remaining;
    nvml_gi_placements_fn gi_placements;
    nvml_gi_create_fn gi_create;
    nvml_gi_create_at_fn gi_create_at;
    nvml_gi_list_fn gi_list;
    nvml_gi_by_id_fn gi_by_id;
    nvml_gi_info_fn gi_info;
    nvml_gi_destroy_fn gi_destroy;
    nvml_ci_profile_info_fn ci_profile_info;
    nvml_ci_create_fn ci_create;
    nvml_ci_list_fn ci_list;
    nvml_ci_by_id_fn ci_by_id;
    nvml_ci_info_fn ci_info;
    nvml_ci_destroy_fn ci_destroy;
    nvml_dev_uint_fn max_mig_devices;
    nvml_mig_handle_fn mig_handle_by_index;
    nvml_dev_uint_fn mig_gi_id;
    nvml_dev_uint_fn mig_ci_id;
    nvml_mig_parent_fn mig_parent;
    nvml_procs_v3_fn procs_v3;
    nvml_procs_v2_fn procs_v2;
    nvml_proc_name_fn process_name;
    nvml_gpm_support_fn gpm_support;
    nvml_gpm_alloc_fn gpm_alloc;
    nvml_gpm_free_fn gpm_free;
    nvml_gpm_mig_sample_fn gpm_mig_sample;
    nvml_gpm_metrics_fn gpm_metrics;
};

/*
 * The one symbol table. `fallback` is an older name of the SAME signature; calls whose structs
 * differ between versions (memory info, profile info, running processes) get two entries and the
 * code picks the newer one that resolved.
 */
struct nvml_sym {
    const char *name;
    const char *fallback;
    bool required;
    size_t offset;
};

#define SYM(n, fb, req, field)                                                                     \
    {                                                                                              \
        n, fb, req, offsetof(struct nvml_fns, field)                                               \
    }
static const struct nvml_sym nvml_syms[] = {
    SYM("nvmlInit_v2", "nvmlInit", true, init),
    SYM("nvmlShutdown", NULL, true, shutdown),
    SYM("nvmlErrorString", NULL, true, error_string),
    SYM("nvmlDeviceGetCount_v2", "nvmlDeviceGetCount", true, device_count),
    SYM("nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex", true, handle_by_index),
    SYM("nvmlDeviceGetName", NULL, true, name),
    SYM("nvmlDeviceGetUUID", NULL, true, uuid),
    SYM("nvmlDeviceGetHandleByUUID", NULL, false, handle_by_uuid),
    SYM("nvmlSystemGetDriverVersion", NULL, false, driver_version),
    SYM("nvmlSystemGetNVMLVersion", NULL, false, nvml_version),
    SYM("nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo_v2", false, pci_info),
    SYM("nvmlDeviceGetMemoryInfo_v2", NULL, false, memory_v2),
    SYM("nvmlDeviceGetMemoryInfo", NULL, false, memory),
    SYM("nvmlDeviceGetArchitecture", NULL, false, architecture),
    SYM("nvmlDeviceGetPowerUsage", NULL, false, power_usage),
    SYM("nvmlDeviceGetTotalEnergyConsumption", NULL, false, total_energy),
    SYM("nvmlDeviceGetFieldValues", NULL, false, field_values),
    SYM("nvmlDeviceGetUtilizationRates", NULL, false, utilization),
    SYM("nvmlDeviceGetClockInfo", NULL, false, clock_info),
    SYM("nvmlDeviceGetTemperature", NULL, false, temperature),
    SYM("nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons",
        false, clocks_event_reasons),
    SYM("nvmlDeviceGetEnforcedPowerLimit", NULL, false, enforced_power_limit),
    SYM("nvmlDeviceGetPowerManagementLimit", NULL, false, power_limit),
    SYM("nvmlDeviceGetPowerManagementLimitConstraints", NULL, false, power_limit_range),
    SYM("nvmlDeviceGetPowerManagementDefaultLimit", NULL, false, power_limit_default),
    SYM("nvmlDeviceSetPowerManagementLimit", NULL, false, set_power_limit),
    SYM("nvmlDeviceGetMigMode", NULL, false, get_mig_mode),
    SYM("nvmlDeviceSetMigMode", NULL, false, set_mig_mode),
    SYM("nvmlDeviceGetGpuInstanceProfileInfoV", NULL, false, gi_profile_info_v),
    SYM("nvmlDeviceGetGpuInstanceProfileInfo", NULL, false, gi_profile_info),
    SYM("nvmlDeviceGetGpuInstanceRemainingCapacity", NULL, false, gi_remaining),
    SYM("nvmlDeviceGetGpuInstancePossiblePlacements_v2",
        "nvmlDeviceGetGpuInstancePossiblePlacements", false, gi_placements),
    SYM("nvmlDeviceCreateGpuInstance", NULL, false, gi_create),
    SYM("nvmlDeviceCreateGpuInstanceWithPlacement", NULL, false, gi_create_at),
    SYM("nvmlDeviceGetGpuInstances", NULL, false, gi_list),
    SYM("nvmlDeviceGetGpuInstanceById", NULL, false, gi_by_id),
    SYM("nvmlGpuInstanceGetInfo", NULL, false, gi_info),
    SYM("nvmlGpuInstanceDestroy", NULL, false, gi_destroy),
    SYM("nvmlGpuInstanceGetComputeInstanceProfileInfo", NULL, false, ci_profile_info),
    SYM("nvmlGpuInstanceCreateComputeInstance", NULL, false, ci_create),
    SYM("nvmlGpuInstanceGetComputeInstances", NULL, false, ci_list),
    SYM("nvmlGpuInstanceGetComputeInstanceById", NULL, false, ci_by_id),
    SYM("nvmlComputeInstanceGetInfo_v2", "nvmlComputeInstanceGetInfo", false, ci_info),
    SYM("nvmlComputeInstanceDestroy", NULL, false, ci_destroy),
    SYM("nvmlDeviceGetMaxMigDeviceCount", NULL, false, max_mig_devices),
    SYM("nvmlDeviceGetMigDeviceHandleByIndex", NULL, false, mig_handle_by_index),
    SYM("nvmlDeviceGetGpuInstanceId", NULL, false, mig_gi_id),
    SYM("nvmlDeviceGetComputeInstanceId", NULL, false, mig_ci_id),
    SYM("nvmlDeviceGetDeviceHandleFromMigDeviceHandle", NULL, false, mig_parent),
    SYM("nvmlDeviceGetComputeRunningProcesses_v3", NULL, false, procs_v3),
    SYM("nvmlDeviceGetComputeRunningProcesses_v2", NULL, false, procs_v2),
    SYM("nvmlSystemGetProcessName", NULL, false, process_name),
    SYM("nvmlGpmQueryDeviceSupport", NULL, false, gpm_support),
    SYM("nvmlGpmSampleAlloc", NULL, false, gpm_alloc),
    SYM("nvmlGpmSampleFree", NULL, false, gpm_free),
    SYM("nvmlGpmMigSampleGet", NULL, false, gpm_mig_sample),
    SYM("nvmlGpmMetricsGet", NULL, false, gpm_metrics),
};
#undef SYM

/* A GPU-instance profile as walked once per open (values are fixed for the life of a MIG mode). */
struct nv_profile {
    int nvml_enum;
    unsigned id;
    unsigned slices;
    unsigned max_count;
    unsigned sm_count;
    unsigned long long memory_mib;
    unsigned mem_slices; /* placement size; 0 when the driver gave no placement */
    char name[MB_PROFILE_NAME_MAX];
};

/* The previous GPM sample of one GPU instance. */
struct gpm_prev {
    bool used;
    unsigned gi_id;
    nvmlGpmSample_t sample;
};

struct nvml_dev {
    struct mb_device base; /* first member: the device layer's view */
    void *dl;
    struct nvml_fns f;
    bool initialised;
    nvmlDevice_t h;
    unsigned index;
    char name[MB_DEVICE_NAME_MAX];
    char model[MB_MODEL_NAME_MAX]; /* catalog model, "" when the catalog lacks it */
    struct mb_model_sensor sens;   /* the catalog's sensor facts (known false without them) */
    unsigned arch;                 /* NVML_DEVICE_ARCH_*, or NVML_DEVICE_ARCH_UNKNOWN */
    int gpi_version; /* 3 or 2 for ProfileInfoV, 0 until known, -1 when V is unusable */
    bool profiles_cached;
    size_t n_profiles;
    struct nv_profile profiles[MB_MAX_PROFILES];
    int gpm_state; /* 0 not probed, 1 supported, -1 not supported */
    nvmlGpmMetricsGet_t *gpm_req;
    struct gpm_prev gpm[MB_MAX_MIG_INSTANCES];
};

static struct nvml_dev *to_nv(struct mb_device *dev)
{
    return (struct nvml_dev *)dev;
}

static const char *nv_str(const struct nvml_dev *d, nvmlReturn_t r)
{
    const char *s = d->f.error_string ? d->f.error_string(r) : NULL;
    return s ? s : "unknown NVML error";
}

/*
 * Maps an NVML return code to a status and a message a user can act on. `what` names the
 * operation ("create GPU instance (profile 19)"). Returns the status.
 */
static int nv_fail(const struct nvml_dev *d, nvmlReturn_t r, const char *what, struct mb_error *err)
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
static int nv_missing(const struct nvml_dev *d, const char *what, const char *sym,
                      struct mb_error *err)
{
    return mb_error_set(err, MB_EUNSUPPORTED,
                        "nvml:%u: %s: not supported by this driver (libnvidia-ml lacks %s)",
                        d->index, what, sym);
}

/* ---- loading ------------------------------------------------------------------------------ */

static int load_library(struct nvml_dev *d, struct mb_error *err)
{
    const char *path = getenv(NVML_LIBRARY_ENV);
    if (!path || !*path)
        path = NVML_DEFAULT_LIBRARY;
    dlerror();
    d->dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!d->dl) {
        const char *why = dlerror();
        if (strcmp(path, NVML_DEFAULT_LIBRARY) == 0)
            return mb_error_set(err, MB_ELIB,
                                "nvml: libnvidia-ml.so.1 not found (no NVIDIA driver?): %s",
                                why ? why : "dlopen failed");
        return mb_error_set(err, MB_ELIB, "nvml: cannot load %s (from %s): %s", path,
                            NVML_LIBRARY_ENV, why ? why : "dlopen failed");
    }
    for (size_t i = 0; i < sizeof(nvml_syms) / sizeof(nvml_syms[0]); i++) {
        const struct nvml_sym *s = &nvml_syms[i];
        void *p = dlsym(d->dl, s->name);
        if (!p && s->fallback)
            p = dlsym(d->dl, s->fallback);
        if (!p && s->required)
            return mb_error_set(err, MB_ELIB,
                                "nvml: %s lacks %s, which migbench needs (driver too old?)", path,
                                s->name);
        memcpy((char *)&d->f + s->offset, &p, sizeof(p));
    }
    return MB_OK;
}

static bool all_digits(const char *s)
{
    if (!*s)
        return false;
    for (; *s; s++)
        if (*s < '0' || *s > '9')
            return false;
    return true;
}

static void nvml_close(struct mb_device *dev)
{
    struct nvml_dev *d = to_nv(dev);
    if (!d)
        return;
    for (size_t i = 0; i < MB_MAX_MIG_INSTANCES; i++)
        if (d->gpm[i].used && d->f.gpm_free)
            d->f.gpm_free(d->gpm[i].sample);
    free(d->gpm_req);
    if (d->initialised)
        d->f.shutdown();
    if (d->dl)
        dlclose(d->dl);
    free(d);
}

static int nvml_open(const char *args, struct mb_device **out, struct mb_error *err);

/* ---- identity ------------------------------------------------------------------------------ */

/* Fills d->h from args: NULL or "" = GPU 0, digits = index, otherwise a GPU UUID. */
static int pick_device(struct nvml_dev *d, const char *args, struct mb_error *err)
{
    unsigned count = 0;
    nvmlReturn_t r = d->f.device_count(&count);
    if (r != NVML_SUCCESS)
        return nv_fail(d, r, "count GPUs", err);
    if (!args || !*args || all_digits(args)) {
        unsigned long idx = 0;
        if (args && *args) {
            if (strlen(args) > 6)
                return mb_error_set(err, MB_EINVAL, "nvml:%s: GPU index out of range", args);
            idx = strtoul(args, NULL, 10);
        }
        if (count == 0)
            return mb_error_set(err, MB_ENOTFOUND, "nvml: the driver reports no NVIDIA GPU");
        if (idx >= count)
            return mb_error_set(err, MB_ENOTFOUND, "nvml:%lu: no such GPU (the driver reports %u)",
                                idx, count);
        d->index = (unsigned)idx;
        r = d->f.handle_by_index(d->index, &d->h);
        if (r != NVML_SUCCESS)
            return nv_fail(d, r, "get GPU handle", err);
        return MB_OK;
    }
    if (strncmp(args, "MIG-", 4) == 0)
        return mb_error_set(err, MB_EINVAL,
                            "nvml:%s: names a MIG device; open its parent GPU (nvml:N or "
                            "nvml:GPU-...) instead",
                            args);
    if (strncmp(args, "GPU-", 4) != 0)
        return mb_error_set(err, MB_EINVAL,
                            "nvml:%s: expected a GPU index (nvml:0) or a UUID (nvml:GPU-...)",
                            args);
    if (!d->f.handle_by_uuid)
        return nv_missing(d, "open by UUID", "nvmlDeviceGetHandleByUUID", err);
    r = d->f.handle_by_uuid(args, &d->h);
    if (r == NVML_ERROR_NOT_FOUND || r == NVML_ERROR_INVALID_ARGUMENT)
        return mb_error_set(err, MB_ENOTFOUND, "nvml:%s: no GPU with this UUID", args);
    if (r != NVML_SUCCESS)
        return nv_fail(d, r, "find GPU by UUID", err);
    /* Recover the index so that messages and info name it. */
    for (unsigned i = 0; i < count; i++) {
        nvmlDevice_t h;
        if (d->f.handle_by_index(i, &h) == NVML_SUCCESS && h == d->h) {
            d->index = i;
            break;
        }
    }
    return MB_OK;
}

static int nvml_open(const char *args, struct mb_device **out, struct mb_error *err)
{
    *out = NULL;
    struct nvml_dev *d = calloc(1, sizeof(*d));
    if (!d)
        return mb_error_set(err, MB_ENOMEM, "nvml: out of memory");
    d->base.ops = &mb__nvml_ops;
    d->arch = NVML_DEVICE_ARCH_UNKNOWN;
    int rc = load_library(d, err);
    if (rc != MB_OK)
        goto fail;
    nvmlReturn_t r = d->f.init();
    if (r != NVML_SUCCESS) {
        rc = nv_fail(d, r, "initialise NVML", err);
        goto fail;
    }
    d->initialised = true;
    rc = pick_device(d, args, err);
    if (rc != MB_OK)
        goto fail;
    r = d->f.name(d->h, d->name, sizeof(d->name));
    if (r != NVML_SUCCESS) {
        rc = nv_fail(d, r, "read the GPU name", err);
        goto fail;
    }
    d->name[sizeof(d->name) - 1] = '\0';
    unsigned arch;
    if (d->f.architecture && d->f.architecture(d->h, &arch) == NVML_SUCCESS)
        d->arch = arch;
    /* The catalog model, if the catalog knows this GPU; not knowing it is not an error. */
    struct mb_catalog *cat = NULL;
    if (mb_catalog_create(&cat, NULL) == MB_OK) {
        const struct mb_gpu_model *model = NULL;
        if (mb_catalog_find(cat, d->name, &model, NULL) == MB_OK && model) {
            mb__copy_str(d->model, sizeof(d->model), model->name);
            d->sens = model->sensor;
        }
        mb_catalog_destroy(cat);
    }
    *out = &d->base;
    return MB_OK;
fail:
    nvml_close(&d->base);
    return rc;
}

static int nvml_info(struct mb_device *dev, struct mb_device_info *out, struct mb_error *err)
{
    struct nvml_dev *d = to_nv(dev);
    memset(out, 0, sizeof(*out));
    mb__copy_str(out->backend, sizeof(out->backend), "nvml");
    out->index = d->index;
    mb__copy_str(out->name, sizeof(out->name), d->name);
    nvmlReturn_t r = d->f.uuid(d->h, out->uuid, sizeof(out->uuid));
    if (r == NVML_ERROR_GPU_IS_LOST)
        return nv_fail(d, r, "read the UUID", err);
    if (r != NVML_SUCCESS)
        out->uuid[0] = '\0';
    out->uuid[sizeof(out->uuid) - 1] = '\0';
    if (!d->f.driver_version ||
        d->f.driver_version(out->driver_version, sizeof(out->driver_version)) != NVML_SUCCESS)
        out->driver_version[0] = '\0';
    out->driver_version[sizeof(out->driver_version) - 1] = '\0';
    if (!d->f.nvml_version ||
        d->f.nvml_version(out->nvml_version, sizeof(out->nvml_version)) != NVML_SUCCESS)
        out->nvml_version[0] = '\0';
    out->nvml_version[sizeof(out->nvml_version) - 1] = '\0';
    nvmlPciInfo_t pci;
    memset(&pci, 0, sizeof(pci));
    if (d->f.pci_info && d->f.pci_info(d->h, &pci) == NVML_SUCCESS) {
        pci.busId[sizeof(pci.busId) - 1] = '\0';
        mb__copy_str(out->pci_bus_id, sizeof(out->pci_bus_id), pci.busId);
    }
    nvmlMemory_v2_t m2 = {.version = nvmlMemory_v2};
    nvmlMemory_t m1;
    if (d->f.memory_v2 && d->f.memory_v2(d->h, &m2) == NVML_SUCCESS) {
        out->mem_total_bytes = m2.total;
        out->mem_total_valid = true;
    } else if (d->f.memory && d->f.memory(d->h, &m1) == NVML_SUCCESS) {
        out->mem_total_bytes = m1.total;
        out->mem_total_valid = true;
    }
    unsigned cur, pend;
    out->mig_capable = d->f.get_mig_mode && d->f.get_mig_mode(d->h, &cur, &pend) == NVML_SUCCESS;

    mb__copy_str(out->model, sizeof(out->model), d->model);
    return MB_OK;
}

/* ---- telemetry and sensor ------------------------------------------------------------------ */

static bool name_has(const struct nvml_dev *d, const char *needle)
{
    return strstr(d->name, needle) != NULL;
}

/* GA100 boards: A100, A30 and A800 read an instantaneous power value. */
static bool is_ga100(const struct nvml_dev *d)
{
    return name_has(d, "A100") || name_has(d, "A30") || name_has(d, "A800");
}

static bool is_grace_module(const struct nvml_dev *d)
{
    return name_has(d, "GH200") || name_has(d, "GB200") || name_has(d, "Grace");
}

/* Reads fields 185/186/191 (GPU scope) in one call; each entry's own return says if it is valid. */
static nvmlReturn_t read_fields(struct nvml_dev *d, nvmlFieldValue_t fv[3])
{
    memset(fv, 0, 3 * sizeof(*fv));
    fv[0].fieldId = NVML_FI_DEV_POWER_AVERAGE;
    fv[1].fieldId = NVML_FI_DEV_POWER_INSTANT;
    fv[2].fieldId = NVML_FI_DEV_ENERGY;
    for (int i = 0; i < 3; i++) {
        fv[i].scopeId = NVML_POWER_SCOPE_GPU;
        fv[i].nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
    }
    if (!d->f.field_values)
        return NVML_ERROR_FUNCTION_NOT_FOUND;
    return d->f.field_values(d->h, 3, fv);
}

static bool field_u64(const nvmlFieldValue_t *fv, uint64_t *out)
{
    if (fv->nvmlReturn != NVML_SUCCESS)
        return false;
    switch (fv->valueType) {
    case NVML_VALUE_TYPE_UNSIGNED_INT:
        *out = fv->value.uiVal;
        return true;
    case NVML_VALUE_TYPE_UNSIGNED_LONG:
        *out = fv->value.ulVal;
        return true;
    case NVML_VALUE_TYPE_UNSIGNED_LONG_LONG:
        *out = fv->value.ullVal;
        return true;
    case NVML_VALUE_TYPE_SIGNED_LONG_LONG:
        if (fv->value.sllVal < 0)
            return false;
        *out = (uint64_t)fv->value.sllVal;
        return true;
    case NVML_VALUE_TYPE_SIGNED_INT:
        if (fv->value.siVal < 0)
            return false;
        *out = (uint64_t)fv->value.siVal;
        return true;
    case NVML_VALUE_TYPE_DOUBLE:
        if (!(fv->value.dVal >= 0.0) || fv->value.dVal > 1.8e19)
            return false;
        *out = (uint64_t)fv->value.dVal;
        return true;
    default:
        return false;
    }
}

static uint32_t clamp_u32(uint64_t v)
{
    return v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

static int nvml_telemetry(struct mb_device *dev, struct mb_telemetry *out, struct mb_error *err)
{
    struct nvml_dev *d = to_nv(dev);
    memset(out, 0, sizeof(*out));
    out->t_ns = mb_clock_monotonic_ns();
    nvmlReturn_t r;
    /* Any reading that says the GPU is gone fails the whole call; anything else unsupported or
     * failing just leaves its field invalid. */
#define LOST_CHECK(what)                                                                           \
    do {                                                                                           \
        if (r == NVML_ERROR_GPU_IS_LOST)                                                           \
            return nv_fail(d, r, what, err);                                                       \
    } while (0)
    unsigned u;
    unsigned long long ull;
    if (d->f.power_usage) {
        r = d->f.power_usage(d->h, &u);
        LOST_CHECK("read power");
        if (r == NVML_SUCCESS) {
            out->power_mw = u;
            out->valid |= MB_TEL_POWER;
        }
    }
    nvmlFieldValue_t fv[3];
    r = read_fields(d, fv);
    LOST_CHECK("read power fields");
    uint64_t v;
    if (r == NVML_SUCCESS) {
        if (field_u64(&fv[0], &v)) {
            out->power_avg_mw = clamp_u32(v);
            out->valid |= MB_TEL_POWER_AVG;
        }
        if (field_u64(&fv[1], &v)) {
            out->power_instant_mw = clamp_u32(v);
            out->valid |= MB_TEL_POWER_INSTANT;
        }
    }
    if (d->f.total_energy) {
        r = d->f.total_energy(d->h, &ull);
        LOST_CHECK("read the energy counter");
        if (r == NVML_SUCCESS) {
            out->energy_mj = ull;
            out->valid |= MB_TEL_ENERGY;
        }
    }
    if (!(out->valid & MB_TEL_ENERGY) && field_u64(&fv[2], &v)) {
        out->energy_mj = v;
        out->valid |= MB_TEL_ENERGY;
    }
    if (d->f.utilization) {
        nvmlUtilization_t ut;
        r = d->f.utilization(d->h, &ut);
        LOST_CHECK("read utilisation");
        if (r == NVML_SUCCESS) {
            out->util_gpu_pct = ut.gpu;
            out->util_mem_pct = ut.memory;
            out->valid |= MB_TEL_UTIL_GPU | MB_TEL_UTIL_MEM;
        }
    }
    nvmlMemory_v2_t m2 = {.version = nvmlMemory_v2};
    nvmlMemory_t m1;
    if (d->f.memory_v2) {
        r = d->f.memory_v2(d->h, &m2);
        LOST_CHECK("read memory");
        if (r == NVML_SUCCESS) {
            out->mem_used_bytes = m2.used;
            out->valid |= MB_TEL_MEM_USED;
        }
    }
    if (!(out->valid & MB_TEL_MEM_USED) && d->f.memory) {
        r = d->f.memory(d->h, &m1);
        LOST_CHECK("read memory");
        if (r == NVML_SUCCESS) {
            out->mem_used_bytes = m1.used;
            out->valid |= MB_TEL_MEM_USED;
        }
    }
    if (d->f.clock_info) {
        r = d->f.clock_info(d->h, NVML_CLOCK_SM, &u);
        LOST_CHECK("read the SM clock");
        if (r == NVML_SUCCESS) {
            out->clock_sm_mhz = u;
            out->valid |= MB_TEL_CLOCK_SM;
        }
        r = d->f.clock_info(d->h, NVML_CLOCK_MEM, &u);
        LOST_CHECK("read the memory clock");
        if (r == NVML_SUCCESS) {
            out->clock_mem_mhz = u;
            out->valid |= MB_TEL_CLOCK_MEM;
        }
    }
    if (d->f.temperature) {
        r = d->f.temperature(d->h, NVML_TEMPERATURE_GPU, &u);
        LOST_CHECK("read the temperature");
        if (r == NVML_SUCCESS && u <= INT32_MAX) {
            out->temp_c = (int32_t)u;
            out->valid |= MB_TEL_TEMP;
        }
    }
    if (d->f.clocks_event_reasons) {
        r = d->f.clocks_event_reasons(d->h, &ull);
        LOST_CHECK("read clocks-event reasons");
        if (r == NVML_SUCCESS) {
            out->throttle_reasons = ull;
            out->valid |= MB_TEL_THROTTLE;
        }
    }
    if (d->f.enforced_power_limit) {
        r = d->f.enforced_power_limit(d->h, &u);
        LOST_CHECK("read the power limit");
        if (r == NVML_SUCCESS) {
            out->power_limit_mw = u;
            out->valid |= MB_TEL_POWER_LIMIT;
        }
    }
#undef LOST_CHECK
    return MB_OK;
}

static uint32_t nvml_caps(struct mb_device *dev)
{
    struct nvml_dev *d = to_nv(dev);
    uint32_t caps = MB_CAP_GPU | MB_CAP_MPS;
    unsigned u, cur, pend;
    unsigned long long ull;
    if (d->f.power_usage && d->f.power_usage(d->h, &u) == NVML_SUCCESS)
        caps |= MB_CAP_POWER;
    if (d->f.total_energy && d->f.total_energy(d->h, &ull) == NVML_SUCCESS)
        caps |= MB_CAP_ENERGY_COUNTER;
    if (d->f.get_mig_mode && d->f.get_mig_mode(d->h, &cur, &pend) == NVML_SUCCESS) {
        caps |= MB_CAP_MIG;
        if (d->f.set_mig_mode)
            caps |= MB_CAP_SET_MIG_MODE;
    }
    /* Settable only where the range can be read too: a limit is never set blind. */
    if (d->f.set_power_limit && d->f.power_limit_range &&
        d->f.power_limit_range(d->h, &cur, &pend) == NVML_SUCCESS)
        caps |= MB_CAP_SET_POWER_LIMIT;
    return caps;
}

/* One optional reading of the power limit: a field left invalid unless it reads; a lost GPU fails.
 */
static int limit_read(struct nvml_dev *d, nvml_dev_uint_fn fn, const char *what, uint32_t *out,
                      uint32_t bit, uint32_t *valid, struct mb_error *err)
{
    unsigned u;
    if (!fn)
        return MB_OK;
    nvmlReturn_t r = fn(d->h, &u);
    if (r == NVML_ERROR_GPU_IS_LOST)
        return nv_fail(d, r, what, err);
    if (r == NVML_SUCCESS) {
        *out = u;
        *valid |= bit;
    }
    return MB_OK;
}

static int nvml_power_limit(struct mb_device *dev, struct mb_power_limit *out, struct mb_error *err)
{
    struct nvml_dev *d = to_nv(dev);
    memset(out, 0, sizeof(*out));
    int rc;
    if ((rc = limit_read(d, d->f.power_limit, "read the power limit", &out->limit_mw, MB_PL_LIMIT,
                         &out->valid, err)) ||
        (rc = limit_read(d, d->f.enforced_power_limit, "read the enforced power limit",
                         &out->enforced_mw, MB_PL_ENFORCED, &out->valid, err)) ||
        (rc = limit_read(d, d->f.power_limit_default, "read the default power limit",
                         &out->default_mw, MB_PL_DEFAULT, &out->valid, err)))
        return rc;
    if (d->f.power_limit_range) {
        unsigned lo, hi;
        nvmlReturn_t r = d->f.power_limit_range(d->h, &lo, &hi);
        if (r == NVML_ERROR_GPU_IS_LOST)
            return nv_fail(d, r, "read the power limit range", err);
        if (r == NVML_SUCCESS && lo <= hi) {
            out->min_mw = lo;
            out->max_mw = hi;
            out->valid |= MB_PL_RANGE;
        }
    }
    if (d->f.clocks_event_reasons) {
        unsigned long long ull;
        nvmlReturn_t r = d->f.clocks_event_reasons(d->h, &ull);
        if (r == NVML_ERROR_GPU_IS_LOST)
            return nv_fail(d, r, "read clocks-event reasons", err);
        if (r == NVML_SUCCESS) {
            out->throttle_reasons = ull;
            out->valid |= MB_PL_THROTTLE;
        }
    }
    if (!(out->valid & (MB_PL_LIMIT | MB_PL_ENFORCED)))
        return mb_error_set(err, MB_EUNSUPPORTED, "nvml:%u: this GPU reports no power limit",
                            d->index);
    return MB_OK;
}

static int nvml_set_power_limit(struct mb_device *dev, uint32_t limit_mw, struct mb_error *err)
{
    struct nvml_dev *d = to_nv(dev);
    if (!d->f.set_power_limit)
        return nv_missing(d, "set the power limit", "nvmlDeviceSetPowerManagementLimit", err);
    char what[64];
    snprintf(what, sizeof(what), "set the power limit to %u mW", limit_mw);
    nvmlReturn_t r = d->f.set_power_limit(d->h, limit_mw);
    if (r == NVML_SUCCESS)
        return MB_OK;
    if (r == NVML_ERROR_INVALID_ARGUMENT) {
        unsigned lo = 0, hi = 0;
        if (d->f.power_limit_range && d->f.power_limit_range(d->h, &lo, &hi) == NVML_SUCCESS)
            return mb_error_set(err, MB_ERANGE,
                                "nvml:%u: %s: outside the range %u..%u mW (NVML %d: %s)", d->index,
                                what, lo, hi, r, nv_str(d, r));
        return mb_error_set(err, MB_ERANGE, "nvml:%u: %s: out of range (NVML %d: %s)", d->index,
                            what, r, nv_str(d, r));
    }
    if (r == NVML_ERROR_NO_PERMISSION)
        return mb_error_set(err, MB_EPERM,
                            "nvml:%u: %s: permission denied: run as root or configure a power "
                            "helper (docs/power.md) (NVML %d: %s)",
                            d->index, what, r, nv_str(d, r));
    return nv_fail(d, r, what, err);
}

/* A GPU the catalog has no sensor facts for (or no power reading): NVML's documented rule by
 * architecture or name. */
static void sensor_from_rules(const struct nvml_dev *d, bool has_power, struct mb_sensor_info *out)
{
    /*
     * NVML documents nvmlDeviceGetPowerUsage as instantaneous on GA100 and older and as a 1 s
     * average on Ampere other than GA100 and everything newer. The ~100 ms publication period
     * and A100's 25 ms window are not in NVIDIA's docs: they come from the literature (Yang et
     * al., SC'24; Zeus), see shared/reference/energy-measurement.md §2.
     */
    const char *basis;
    bool ga100 = is_ga100(d);
    if (!has_power) {
        out->power_kind = MB_POWER_NONE;
        basis = "no power reading";
    } else if (d->arch != NVML_DEVICE_ARCH_UNKNOWN) {
        if (d->arch > NVML_DEVICE_ARCH_AMPERE || (d->arch == NVML_DEVICE_ARCH_AMPERE && !ga100))
            out->power_kind = MB_POWER_AVERAGED;
        else
            out->power_kind = MB_POWER_INSTANT;
        basis = "architecture";
    } else if (ga100) {
        out->power_kind = MB_POWER_INSTANT;
        basis = "GPU name";
    } else if (name_has(d, "H100") || name_has(d, "H200") || name_has(d, "H800") ||
               name_has(d, "H20") || name_has(d, "B200") || name_has(d, "B300") ||
               name_has(d, "GH200") || name_has(d, "GB200")) {
        out->power_kind = MB_POWER_AVERAGED;
        basis = "GPU name";
    } else {
        out->power_kind = MB_POWER_UNKNOWN;
        basis = "unknown architecture";
    }
    bool ampere_or_later = (d->arch != NVML_DEVICE_ARCH_UNKNOWN)
                               ? d->arch >= NVML_DEVICE_ARCH_AMPERE
                               : out->power_kind == MB_POWER_AVERAGED || ga100;
    if (out->power_kind == MB_POWER_AVERAGED)
        out->power_avg_window_ms = 1000;
    else if (out->power_kind == MB_POWER_INSTANT && ga100)
        out->power_avg_window_ms = 25;
    if (has_power && ampere_or_later)
        out->power_update_period_ms = 100;
    if (out->has_energy_counter && ampere_or_later)
        out->energy_update_period_ms = 100;
    out->energy_wrap_mj = 0; /* a 64-bit millijoule counter: no wrap within a GPU's life */
    mb__copy_str(out->scope, sizeof(out->scope), is_grace_module(d) ? "module (GPU+CPU)" : "board");
    snprintf(out->source, sizeof(out->source),
             "NVML docs (kind from %s); periods from the literature", basis);
}

/* The catalog's facts for the model, with its status word; the counter's period only when the
 * device has a counter. */
static void sensor_from_catalog(const struct nvml_dev *d, struct mb_sensor_info *out)
{
    const struct mb_model_sensor *c = &d->sens;
    out->power_kind = c->power_kind;
    out->power_avg_window_ms = c->power_avg_window_ms;
    out->power_update_period_ms = c->power_update_period_ms;
    if (out->has_energy_counter)
        out->energy_update_period_ms = c->energy_update_period_ms;
    out->energy_wrap_mj = 0; /* a 64-bit millijoule counter: no wrap within a GPU's life */
    mb__copy_str(out->scope, sizeof(out->scope),
                 c->scope[0]          ? c->scope
                 : is_grace_module(d) ? "module (GPU+CPU)"
                                      : "board");
    snprintf(out->source, sizeof(out->source), "catalog %.32s (%s): NVML docs, literature",
             d->model, mb_value_status_str(c->status));
}

static int nvml_sensor(struct mb_device *dev, struct mb_sensor_info *out, struct mb_error *err)
{
    struct nvml_dev *d = to_nv(dev);
    memset(out, 0, sizeof(*out));
    unsigned u;
    nvmlReturn_t r = NVML_ERROR_FUNCTION_NOT_FOUND;
    if (d->f.power_usage) {
        r = d->f.power_usage(d->h, &u);
        if (r == NVML_ERROR_GPU_IS_LOST)
            return nv_fail(d, r, "read power", err);
    }
    bool has_power = r == NVML_SUCCESS;
    nvmlFieldValue_t fv[3];
    uint64_t v;
    if (read_fields(d, fv) == NVML_SUCCESS) {
        out->has_average = field_u64(&fv[0], &v);
        out->has_instant = field_u64(&fv[1], &v);
        out->has_energy_counter = field_u64(&fv[2], &v);
    }
    unsigned long long ull;
    if (d->f.total_energy && d->f.total_energy(d->h, &ull) == NVML_SUCCESS)
        out->has_energy_counter = true;

    /* The catalog's facts for a model it knows; NVML's documented rule for any other GPU. */
    if (has_power && d->sens.known && d->sens.power_kind != MB_POWER_UNKNOWN)
        sensor_from_catalog(d, out);
    else
        sensor_from_rules(d, has_power, out);
    return MB_OK;
}

/* ---- MIG mode -------------------------------------------------------------------------------- */

static int nvml_mig_mode(struct mb_device *dev, struct mb_mig_mode *out, struct mb_error *err)
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
static int nvml_mig_set_mode(struct mb_device *dev, int enable, struct mb_error *err)
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
static int nvml_mig_switch_mode(struct mb_device *dev, int enable, struct mb_error *err)
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

/*
 * Explains a MIG operation that failed because MIG is off or only pending; otherwise maps r as
 * usual. NVML answers NOT_SUPPORTED both for "no MIG on this GPU" and "MIG not enabled (yet)".
 */
static int mig_fail(struct nvml_dev *d, nvmlReturn_t r, const char *what, struct mb_error *err)
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
        r = d->f.gi_profile_info_v(d->h, e, &v3);
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

static int nvml_mig_profiles(struct mb_device *dev, struct mb_device_profile *out, size_t cap,
                             size_t *n, struct mb_error *err)
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

static int nvml_mig_placements(struct mb_device *dev, unsigned driver_id, struct mb_placement *out,
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

static int nvml_mig_create_gi(struct mb_device *dev, unsigned driver_id,
                              const struct mb_placement *placement, unsigned *gi_id,
                              struct mb_error *err)
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

static int nvml_mig_create_ci(struct mb_device *dev, unsigned gi_id, int ci_profile_id,
                              unsigned *ci_id, struct mb_error *err)
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

static int nvml_mig_destroy_ci(struct mb_device *dev, unsigned gi_id, unsigned ci_id,
                               struct mb_error *err)
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

static int nvml_mig_destroy_gi(struct mb_device *dev, unsigned gi_id, struct mb_error *err)
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

/* A MIG device (compute instance) seen through its handle. */
struct mig_dev {
    unsigned gi, ci;
    nvmlDevice_t h;
    char uuid[MB_UUID_MAX];
    bool mem_valid;
    unsigned long long mem_total, mem_used;
};

/* Walks the MIG device handles; sparse indices (NOT_FOUND, INVALID_ARGUMENT) are skipped. */
static int list_mig_devices(struct nvml_dev *d, struct mig_dev *out, size_t cap, size_t *n,
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

static int nvml_mig_instances(struct mb_device *dev, struct mb_mig_instance *out, size_t cap,
                              size_t *n, struct mb_error *err)
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

static int nvml_processes(struct mb_device *dev, struct mb_process *out, size_t cap, size_t *n,
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

static int nvml_mig_activity(struct mb_device *dev, unsigned gi_id, struct mb_mig_activity *out,
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

/* ---- scheduler-given UUIDs ------------------------------------------------------------------ */

/*
 * The parent GPU of a UUID from CUDA_VISIBLE_DEVICES, over every GPU the driver has: a MIG device
 * UUID is found with nvmlDeviceGetHandleByUUID and its parent asked for; the legacy
 * "MIG-GPU-<uuid>/<gi>/<ci>" names the parent itself.
 */
static int nvml_visible_parent(struct mb_device *dev, const char *id, char *gpu_uuid, size_t cap,
                               struct mb_error *err)
{
    struct nvml_dev *d = to_nv(dev);
    if (!d->f.handle_by_uuid)
        return nv_missing(d, "find a device by UUID", "nvmlDeviceGetHandleByUUID", err);
    char want[MB_UUID_MAX];
    bool legacy = strncmp(id, "MIG-GPU-", 8) == 0;
    if (legacy) {
        size_t n = strcspn(id + 4, "/");
        if (n >= sizeof(want))
            return mb_error_set(err, MB_ENOTFOUND, "%s: not a UUID the driver knows", id);
        memcpy(want, id + 4, n);
        want[n] = '\0';
    } else {
        mb__copy_str(want, sizeof(want), id);
    }
    nvmlDevice_t h;
    nvmlReturn_t r = d->f.handle_by_uuid(want, &h);
    if (r == NVML_ERROR_NOT_FOUND || r == NVML_ERROR_INVALID_ARGUMENT)
        return mb_error_set(err, MB_ENOTFOUND, "%s: no GPU or MIG device with this UUID", id);
    if (r != NVML_SUCCESS)
        return nv_fail(d, r, "find a device by UUID", err);
    if (!legacy && strncmp(id, "MIG-", 4) == 0) {
        if (!d->f.mig_parent)
            return nv_missing(d, "find a MIG device's GPU",
                              "nvmlDeviceGetDeviceHandleFromMigDeviceHandle", err);
        nvmlDevice_t parent;
        r = d->f.mig_parent(h, &parent);
        if (r != NVML_SUCCESS)
            return nv_fail(d, r, "find a MIG device's GPU", err);
        h = parent;
    }
    if (cap > 0x7fffffffu)
        cap = 0x7fffffffu;
    r = d->f.uuid(h, gpu_uuid, (unsigned)cap);
    if (r != NVML_SUCCESS)
        return nv_fail(d, r, "read the UUID", err);
    gpu_uuid[cap - 1] = '\0';
    return MB_OK;
}

/* The number of GPUs the driver reports, through a library load of its own. */
static int count_gpus(unsigned *count, struct mb_error *err)
{
    struct nvml_dev *d = calloc(1, sizeof(*d));
    if (!d)
        return mb_error_set(err, MB_ENOMEM, "nvml: out of memory");
    d->base.ops = &mb__nvml_ops;
    int rc = load_library(d, err);
    if (rc == MB_OK) {
        nvmlReturn_t r = d->f.init();
        if (r != NVML_SUCCESS) {
            rc = nv_fail(d, r, "initialise NVML", err);
        } else {
            d->initialised = true;
            r = d->f.device_count(count);
            if (r != NVML_SUCCESS)
                rc = nv_fail(d, r, "count GPUs", err);
        }
    }
    nvml_close(&d->base);
    return rc;
}

/* "all" -> every GPU; "0,1,GPU-..." -> one spec each; anything else is one GPU, as given. */
static int nvml_expand(const char *args, struct mb_device_spec_list *out, struct mb_error *err)
{
    char spec[MB_UUID_MAX + 16];
    if (strcmp(args, "all") == 0) {
        unsigned count = 0;
        int rc = count_gpus(&count, err);
        if (rc != MB_OK)
            return rc;
        if (count == 0)
            return mb_error_set(err, MB_ENOTFOUND, "nvml:all: the driver reports no NVIDIA GPU");
        for (unsigned i = 0; i < count && rc == MB_OK; i++) {
            snprintf(spec, sizeof(spec), "nvml:%u", i);
            rc = mb_device_spec_list_add(out, spec, err);
        }
        return rc;
    }
    if (!strchr(args, ',')) { /* one GPU: the spec as given, opened (and judged) later */
        size_t len = strlen(args) + sizeof("nvml:");
        char *one = malloc(len);
        if (!one)
            return mb_error_set(err, MB_ENOMEM, "out of memory");
        snprintf(one, len, "nvml:%s", args);
        int rc = mb_device_spec_list_add(out, one, err);
        free(one);
        return rc;
    }
    const char *p = args;
    for (;;) {
        size_t len = strcspn(p, ",");
        if (len == 0 || len >= MB_UUID_MAX)
            return mb_error_set(err, MB_EINVAL,
                                "nvml:%s: expected GPU indices or UUIDs separated by commas", args);
        snprintf(spec, sizeof(spec), "nvml:%.*s", (int)len, p);
        for (size_t i = 0; i < out->n; i++)
            if (strcmp(out->specs[i], spec) == 0)
                return mb_error_set(err, MB_EINVAL, "nvml:%s: GPU %.*s is named twice", args,
                                    (int)len, p);
        int rc = mb_device_spec_list_add(out, spec, err);
        if (rc != MB_OK)
            return rc;
        p += len;
        if (!*p)
            return MB_OK;
        p++;
    }
}

const struct mb_device_ops mb__nvml_ops = {
    .version = MB_DEVICE_OPS_VERSION,
    .name = "nvml",
    .open = nvml_open,
    .close = nvml_close,
    .info = nvml_info,
    .telemetry = nvml_telemetry,
    .sensor = nvml_sensor,
    .caps = nvml_caps,
    .mig_mode = nvml_mig_mode,
    .mig_set_mode = nvml_mig_set_mode,
    .mig_profiles = nvml_mig_profiles,
    .mig_placements = nvml_mig_placements,
    .mig_create_gi = nvml_mig_create_gi,
    .mig_create_ci = nvml_mig_create_ci,
    .mig_instances = nvml_mig_instances,
    .mig_destroy_ci = nvml_mig_destroy_ci,
    .mig_destroy_gi = nvml_mig_destroy_gi,
    .processes = nvml_processes,
    .mig_activity = nvml_mig_activity,
    .cpu_partitions = NULL,
    .power_limit = nvml_power_limit,
    .set_power_limit = nvml_set_power_limit,
    .visible_parent = nvml_visible_parent,
    .mig_switch_mode = nvml_mig_switch_mode,
    .expand = nvml_expand,
};
