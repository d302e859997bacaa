/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Private to the nvml backend (src/device/nvml*.c): the resolved function table, the open
 * device, and the helpers the files share. nvml.c loads the library, names the device and holds
 * the ops table, nvml_telemetry.c reads power and sensors, nvml_mig.c manages MIG, nvml_procs.c
 * lists processes and GPM activity; all of them call nvml_common.c (NVML codes, the MIG device
 * walk), which calls none of them.
 */
#ifndef MIGBENCH_NVML_INTERNAL_H
#define MIGBENCH_NVML_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "device/backends.h"
#include "device/nvml_fns.h"
#include "migbench/catalog.h"
#include "migbench/device.h"

/* Bounds on what we ask the driver for; each is far above any real GPU's numbers. */
#define MAX_GI_PER_PROFILE 16
#define MAX_CI_PER_GI 8
#define MAX_PROC_ROUNDS 6
#define MAX_PROC_ENTRIES 4096
#define MAX_PLACEMENTS_QUERY 64

/* One pointer per symbol of MB_NVML_SYMBOLS (device/nvml_fns.h); NULL when the library lacks it. */
#define MB_NV_FIELD_S(field, type, req, name) type field;
#define MB_NV_FIELD_F(field, type, req, name, fb) type field;
#define MB_NV_FIELD_N1(flag, ...) MB_NV_FIELD_S(__VA_ARGS__)
#define MB_NV_FIELD_N2(flag, ...) MB_NV_FIELD_F(__VA_ARGS__)
struct nvml_fns {
    MB_NVML_SYMBOLS(MB_NV_FIELD_S, MB_NV_FIELD_F, MB_NV_FIELD_N1, MB_NV_FIELD_N2)
};

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

/* A MIG device (compute instance) seen through its handle. */
struct mig_dev {
    unsigned gi, ci;
    nvmlDevice_t h;
    char uuid[MB_UUID_MAX];
    bool mem_valid;
    unsigned long long mem_total, mem_used;
};

static inline struct nvml_dev *to_nv(struct mb_device *dev)
{
    return (struct nvml_dev *)dev;
}

/* Shared helpers (nvml_common.c), with library-private names. */
#define nv_str mb__nv_str
#define nv_fail mb__nv_fail
#define nv_missing mb__nv_missing
#define list_mig_devices mb__nv_list_mig_devices
#define mig_fail mb__nv_mig_fail
const char *nv_str(const struct nvml_dev *d, nvmlReturn_t r);
/* Maps an NVML return code to a status and a message a user can act on, with NVIDIA's reason
 * (its error string and number). `what` names the operation. Returns the status. */
int nv_fail(const struct nvml_dev *d, nvmlReturn_t r, const char *what, struct mb_error *err);
/* A status for an optional feature whose symbol the library lacks (old driver). */
int nv_missing(const struct nvml_dev *d, const char *what, const char *sym, struct mb_error *err);
/* nv_fail for MIG calls: NOT_SUPPORTED with MIG mode off or pending says so. */
int mig_fail(struct nvml_dev *d, nvmlReturn_t r, const char *what, struct mb_error *err);
/* Walks the MIG device handles; sparse indices (NOT_FOUND, INVALID_ARGUMENT) are skipped. */
int list_mig_devices(struct nvml_dev *d, struct mig_dev *out, size_t cap, size_t *n,
                     struct mb_error *err);

/* The backend's symbol table, for tests/nvidia/nvml_symbols (which checks each name against
 * NVIDIA's real libnvidia-ml.so.1): entry i's name, older fallback name (or NULL) and whether
 * opening a device needs it. MB_ENOTFOUND past the end. */
size_t mb__nvml_symbol_count(void);
int mb__nvml_symbol(size_t i, const char **name, const char **fallback, bool *required);

/* The operations, one file per concern; nvml.c puts them in mb__nvml_ops. */
#define nvml_telemetry mb__nvml_telemetry
#define nvml_caps mb__nvml_caps
#define nvml_power_limit mb__nvml_power_limit
#define nvml_set_power_limit mb__nvml_set_power_limit
#define nvml_sensor mb__nvml_sensor
#define nvml_mig_mode mb__nvml_mig_mode
#define nvml_mig_set_mode mb__nvml_mig_set_mode
#define nvml_mig_switch_mode mb__nvml_mig_switch_mode
#define nvml_mig_profiles mb__nvml_mig_profiles
#define nvml_mig_placements mb__nvml_mig_placements
#define nvml_mig_create_gi mb__nvml_mig_create_gi
#define nvml_mig_create_ci mb__nvml_mig_create_ci
#define nvml_mig_destroy_ci mb__nvml_mig_destroy_ci
#define nvml_mig_destroy_gi mb__nvml_mig_destroy_gi
#define nvml_mig_instances mb__nvml_mig_instances
#define nvml_processes mb__nvml_processes
#define nvml_mig_activity mb__nvml_mig_activity
int nvml_telemetry(struct mb_device *dev, struct mb_telemetry *out, struct mb_error *err);
uint32_t nvml_caps(struct mb_device *dev);
int nvml_power_limit(struct mb_device *dev, struct mb_power_limit *out, struct mb_error *err);
int nvml_set_power_limit(struct mb_device *dev, uint32_t limit_mw, struct mb_error *err);
int nvml_sensor(struct mb_device *dev, struct mb_sensor_info *out, struct mb_error *err);
int nvml_mig_mode(struct mb_device *dev, struct mb_mig_mode *out, struct mb_error *err);
int nvml_mig_set_mode(struct mb_device *dev, int enable, struct mb_error *err);
int nvml_mig_switch_mode(struct mb_device *dev, int enable, struct mb_error *err);
int nvml_mig_profiles(struct mb_device *dev, struct mb_device_profile *out, size_t cap, size_t *n,
                      struct mb_error *err);
int nvml_mig_placements(struct mb_device *dev, unsigned driver_id, struct mb_placement *out,
                        size_t cap, size_t *n, struct mb_error *err);
int nvml_mig_create_gi(struct mb_device *dev, unsigned driver_id,
                       const struct mb_placement *placement, unsigned *gi_id, struct mb_error *err);
int nvml_mig_create_ci(struct mb_device *dev, unsigned gi_id, int ci_profile_id, unsigned *ci_id,
                       struct mb_error *err);
int nvml_mig_destroy_ci(struct mb_device *dev, unsigned gi_id, unsigned ci_id,
                        struct mb_error *err);
int nvml_mig_destroy_gi(struct mb_device *dev, unsigned gi_id, struct mb_error *err);
int nvml_mig_instances(struct mb_device *dev, struct mb_mig_instance *out, size_t cap, size_t *n,
                       struct mb_error *err);
int nvml_processes(struct mb_device *dev, struct mb_process *out, size_t cap, size_t *n,
                   struct mb_error *err);
int nvml_mig_activity(struct mb_device *dev, unsigned gi_id, struct mb_mig_activity *out,
                      struct mb_error *err);

#endif
