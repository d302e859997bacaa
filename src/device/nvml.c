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
#include "device/nvml_internal.h"
#include "migbench/catalog.h"
#include "migbench/clock.h"
#include "migbench/device.h"
#include "base/text_internal.h"

#define NVML_DEFAULT_LIBRARY "libnvidia-ml.so.1"
#define NVML_LIBRARY_ENV "MIGBENCH_NVML_LIBRARY"

/* ---- loading ------------------------------------------------------------------------------ */

/* Function pointers are stored through void * (dlsym); POSIX guarantees they fit. */
_Static_assert(sizeof(void *) == sizeof(void (*)(void)), "function pointers fit in void *");

/* The one symbol table, from MB_NVML_SYMBOLS (device/nvml_fns.h). */
struct nvml_sym {
    const char *name;
    const char *fallback;
    bool required;
    size_t offset;
};

#define SYM_S(field, type, req, name) {#name, NULL, req, offsetof(struct nvml_fns, field)},
#define SYM_F(field, type, req, name, fb) {#name, #fb, req, offsetof(struct nvml_fns, field)},
#define SYM_N1(flag, ...) SYM_S(__VA_ARGS__)
#define SYM_N2(flag, ...) SYM_F(__VA_ARGS__)
static const struct nvml_sym nvml_syms[] = {MB_NVML_SYMBOLS(SYM_S, SYM_F, SYM_N1, SYM_N2)};
#undef SYM_S
#undef SYM_F
#undef SYM_N1
#undef SYM_N2

size_t mb__nvml_symbol_count(void)
{
    return sizeof(nvml_syms) / sizeof(nvml_syms[0]);
}

int mb__nvml_symbol(size_t i, const char **name, const char **fallback, bool *required)
{
    if (i >= mb__nvml_symbol_count())
        return MB_ENOTFOUND;
    *name = nvml_syms[i].name;
    *fallback = nvml_syms[i].fallback;
    *required = nvml_syms[i].required;
    return MB_OK;
}

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
