/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Our own declarations of the subset of NVML that migbench uses (no NVIDIA header is needed to
 * build). Values, field order and struct layouts are restated from nvml.h (NVML API version 13,
 * as vendored in NVIDIA/go-nvml); see shared/reference/mig-geometry.md §3 and §9.
 *
 * Shared by the nvml backend (src/device/nvml.c) and the fake libnvidia-ml.so.1 in
 * tests/fake-nvml/, so that both sides of the ABI are compiled from one description.
 */
#ifndef MIGBENCH_NVML_TYPES_H
#define MIGBENCH_NVML_TYPES_H

#include <stddef.h>

/* ---- return codes ---------------------------------------------------------------------- */

typedef int nvmlReturn_t;
enum {
    NVML_SUCCESS = 0,
    NVML_ERROR_UNINITIALIZED = 1,
    NVML_ERROR_INVALID_ARGUMENT = 2,
    NVML_ERROR_NOT_SUPPORTED = 3,
    NVML_ERROR_NO_PERMISSION = 4,
    NVML_ERROR_ALREADY_INITIALIZED = 5,
    NVML_ERROR_NOT_FOUND = 6,
    NVML_ERROR_INSUFFICIENT_SIZE = 7,
    NVML_ERROR_INSUFFICIENT_POWER = 8,
    NVML_ERROR_DRIVER_NOT_LOADED = 9,
    NVML_ERROR_TIMEOUT = 10,
    NVML_ERROR_IRQ_ISSUE = 11,
    NVML_ERROR_LIBRARY_NOT_FOUND = 12,
    NVML_ERROR_FUNCTION_NOT_FOUND = 13,
    NVML_ERROR_CORRUPTED_INFOROM = 14,
    NVML_ERROR_GPU_IS_LOST = 15,
    NVML_ERROR_RESET_REQUIRED = 16,
    NVML_ERROR_OPERATING_SYSTEM = 17,
    NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,
    NVML_ERROR_IN_USE = 19,
    NVML_ERROR_MEMORY = 20,
    NVML_ERROR_NO_DATA = 21,
    NVML_ERROR_VGPU_ECC_NOT_ENABLED = 22,
    NVML_ERROR_INSUFFICIENT_RESOURCES = 23,
    NVML_ERROR_FREQ_NOT_SUPPORTED = 24,
    NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
    NVML_ERROR_DEPRECATED = 26,
    NVML_ERROR_NOT_READY = 27,
    NVML_ERROR_GPU_NOT_FOUND = 28,
    NVML_ERROR_INVALID_STATE = 29,
    NVML_ERROR_UNKNOWN = 999,
};

/* ---- handles (opaque pointers owned by the library) ------------------------------------ */

typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct nvmlGpuInstance_st *nvmlGpuInstance_t;
typedef struct nvmlComputeInstance_st *nvmlComputeInstance_t;
typedef struct nvmlGpmSample_st *nvmlGpmSample_t;

/* ---- buffer sizes and versioned structs -------------------------------------------------- */

#define NVML_DEVICE_NAME_V2_BUFFER_SIZE 96
#define NVML_DEVICE_UUID_V2_BUFFER_SIZE 96
#define NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE 80
#define NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE 80
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE 32
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE 16

/* NVML's rule for versioned structs: the struct's size in the low bits, the version in the top
 * byte. A library that does not know a version answers NVML_ERROR_ARGUMENT_VERSION_MISMATCH. */
#define NVML_STRUCT_VERSION_OF(type, ver) ((unsigned)(sizeof(type) | ((unsigned)(ver) << 24)))

/* ---- architecture ------------------------------------------------------------------------ */

typedef unsigned int nvmlDeviceArchitecture_t;
enum {
    NVML_DEVICE_ARCH_KEPLER = 2,
    NVML_DEVICE_ARCH_MAXWELL = 3,
    NVML_DEVICE_ARCH_PASCAL = 4,
    NVML_DEVICE_ARCH_VOLTA = 5,
    NVML_DEVICE_ARCH_TURING = 6,
    NVML_DEVICE_ARCH_AMPERE = 7,
    NVML_DEVICE_ARCH_ADA = 8,
    NVML_DEVICE_ARCH_HOPPER = 9,
    NVML_DEVICE_ARCH_BLACKWELL = 10,
};
#define NVML_DEVICE_ARCH_UNKNOWN 0xffffffffu

/* ---- identity, memory, utilisation ------------------------------------------------------- */

typedef struct nvmlPciInfo_st {
    char busIdLegacy[NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE];
    unsigned int domain;
    unsigned int bus;
    unsigned int device;
    unsigned int pciDeviceId;
    unsigned int pciSubSystemId;
    char busId[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE];
} nvmlPciInfo_t;
_Static_assert(sizeof(nvmlPciInfo_t) == 68, "nvmlPciInfo_t ABI size");
_Static_assert(offsetof(nvmlPciInfo_t, busId) == 36, "nvmlPciInfo_t.busId offset");

typedef struct nvmlMemory_st {
    unsigned long long total;
    unsigned long long free;
    unsigned long long used;
} nvmlMemory_t;
_Static_assert(sizeof(nvmlMemory_t) == 24, "nvmlMemory_t ABI size");

typedef struct nvmlMemory_v2_st {
    unsigned int version;
    unsigned long long total;
    unsigned long long reserved;
    unsigned long long free;
    unsigned long long used;
} nvmlMemory_v2_t;
_Static_assert(sizeof(nvmlMemory_v2_t) == 40, "nvmlMemory_v2_t ABI size");
_Static_assert(offsetof(nvmlMemory_v2_t, total) == 8, "nvmlMemory_v2_t.total offset");
#define nvmlMemory_v2 NVML_STRUCT_VERSION_OF(nvmlMemory_v2_t, 2)

typedef struct nvmlUtilization_st {
    unsigned int gpu;
    unsigned int memory;
} nvmlUtilization_t;
_Static_assert(sizeof(nvmlUtilization_t) == 8, "nvmlUtilization_t ABI size");

typedef unsigned int nvmlClockType_t;
enum { NVML_CLOCK_GRAPHICS = 0, NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2, NVML_CLOCK_VIDEO = 3 };

typedef unsigned int nvmlTemperatureSensors_t;
enum { NVML_TEMPERATURE_GPU = 0 };

/* ---- processes --------------------------------------------------------------------------- */

/* gpuInstanceId / computeInstanceId are 0xFFFFFFFF when the process is not on a MIG device. */
#define NVML_NO_INSTANCE_ID 0xFFFFFFFFu

/* The struct of nvmlDeviceGetComputeRunningProcesses_v2. */
typedef struct nvmlProcessInfo_v2_st {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId;
    unsigned int computeInstanceId;
} nvmlProcessInfo_v2_t;
_Static_assert(sizeof(nvmlProcessInfo_v2_t) == 24, "nvmlProcessInfo_v2_t ABI size");
_Static_assert(offsetof(nvmlProcessInfo_v2_t, gpuInstanceId) == 16, "gpuInstanceId offset");

/* The struct of nvmlDeviceGetComputeRunningProcesses_v3 (adds confidential-compute memory). */
typedef struct nvmlProcessInfo_st {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId;
    unsigned int computeInstanceId;
    unsigned long long usedGpuCcProtectedMemory;
} nvmlProcessInfo_t;
_Static_assert(sizeof(nvmlProcessInfo_t) == 32, "nvmlProcessInfo_t ABI size");

/* usedGpuMemory is this value when the driver cannot tell (WDDM, some MIG setups). */
#define NVML_VALUE_NOT_AVAILABLE 0xFFFFFFFFFFFFFFFFull

/* ---- field values ------------------------------------------------------------------------ */

enum {
    NVML_FI_DEV_POWER_AVERAGE = 185, /* 1 s average, Ampere except GA100 and later */
    NVML_FI_DEV_POWER_INSTANT = 186,
    NVML_FI_DEV_ENERGY = 191, /* mJ since the driver was loaded */
};
enum { NVML_POWER_SCOPE_GPU = 0, NVML_POWER_SCOPE_MODULE = 1 };

typedef unsigned int nvmlValueType_t;
enum {
    NVML_VALUE_TYPE_DOUBLE = 0,
    NVML_VALUE_TYPE_UNSIGNED_INT = 1,
    NVML_VALUE_TYPE_UNSIGNED_LONG = 2,
    NVML_VALUE_TYPE_UNSIGNED_LONG_LONG = 3,
    NVML_VALUE_TYPE_SIGNED_LONG_LONG = 4,
    NVML_VALUE_TYPE_SIGNED_INT = 5,
};

typedef union nvmlValue_st {
    double dVal;
    int siVal;
    unsigned int uiVal;
    unsigned long ulVal;
    unsigned long long ullVal;
    signed long long sllVal;
} nvmlValue_t;
_Static_assert(sizeof(nvmlValue_t) == 8, "nvmlValue_t ABI size");

typedef struct nvmlFieldValue_st {
    unsigned int fieldId;
    unsigned int scopeId;
    long long timestamp;   /* CPU time in microseconds */
    long long latencyUsec; /* how stale the value may be */
    nvmlValueType_t valueType;
    nvmlReturn_t nvmlReturn;
    nvmlValue_t value;
} nvmlFieldValue_t;
_Static_assert(sizeof(nvmlFieldValue_t) == 40, "nvmlFieldValue_t ABI size");
_Static_assert(offsetof(nvmlFieldValue_t, value) == 32, "nvmlFieldValue_t.value offset");

/* ---- MIG --------------------------------------------------------------------------------- */

enum { NVML_DEVICE_MIG_DISABLE = 0, NVML_DEVICE_MIG_ENABLE = 1 };

/* GPU-instance profile enum values (the argument of ...ProfileInfo*, NOT the driver's info.id). */
enum {
    NVML_GPU_INSTANCE_PROFILE_1_SLICE = 0,
    NVML_GPU_INSTANCE_PROFILE_2_SLICE = 1,
    NVML_GPU_INSTANCE_PROFILE_3_SLICE = 2,
    NVML_GPU_INSTANCE_PROFILE_4_SLICE = 3,
    NVML_GPU_INSTANCE_PROFILE_7_SLICE = 4,
    NVML_GPU_INSTANCE_PROFILE_8_SLICE = 5,
    NVML_GPU_INSTANCE_PROFILE_6_SLICE = 6,
    NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1 = 7,
    NVML_GPU_INSTANCE_PROFILE_2_SLICE_REV1 = 8,
    NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2 = 9,
    /* NVML 13.2+ header value; older libraries answer INVALID_ARGUMENT past their own count. */
    NVML_GPU_INSTANCE_PROFILE_COUNT = 0x12,
};

/* Compute-instance profile enum values; CI profile ids equal these values. */
enum {
    NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE = 0,
    NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE = 1,
    NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE = 2,
    NVML_COMPUTE_INSTANCE_PROFILE_4_SLICE = 3,
    NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE = 4,
    NVML_COMPUTE_INSTANCE_PROFILE_8_SLICE = 5,
    NVML_COMPUTE_INSTANCE_PROFILE_6_SLICE = 6,
    NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE_REV1 = 7,
    NVML_COMPUTE_INSTANCE_PROFILE_COUNT = 0x9,
};
enum { NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED = 0 };

typedef struct nvmlGpuInstancePlacement_st {
    unsigned int start; /* in memory slices */
    unsigned int size;
} nvmlGpuInstancePlacement_t;
_Static_assert(sizeof(nvmlGpuInstancePlacement_t) == 8, "nvmlGpuInstancePlacement_t ABI size");

/* Unversioned: nvmlDeviceGetGpuInstanceProfileInfo. */
typedef struct nvmlGpuInstanceProfileInfo_st {
    unsigned int id; /* the driver's profile id: what create and placement calls take */
    unsigned int isP2pSupported;
    unsigned int sliceCount;
    unsigned int instanceCount;
    unsigned int multiprocessorCount;
    unsigned int copyEngineCount;
    unsigned int decoderCount;
    unsigned int encoderCount;
    unsigned int jpegCount;
    unsigned int ofaCount;
    unsigned long long memorySizeMB;
} nvmlGpuInstanceProfileInfo_t;
_Static_assert(sizeof(nvmlGpuInstanceProfileInfo_t) == 48, "nvmlGpuInstanceProfileInfo_t size");
_Static_assert(offsetof(nvmlGpuInstanceProfileInfo_t, memorySizeMB) == 40, "memorySizeMB offset");

typedef struct nvmlGpuInstanceProfileInfo_v2_st {
    unsigned int version;
    unsigned int id;
    unsigned int isP2pSupported;
    unsigned int sliceCount;
    unsigned int instanceCount;
    unsigned int multiprocessorCount;
    unsigned int copyEngineCount;
    unsigned int decoderCount;
    unsigned int encoderCount;
    unsigned int jpegCount;
    unsigned int ofaCount;
    unsigned long long memorySizeMB;
    char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
} nvmlGpuInstanceProfileInfo_v2_t;
_Static_assert(sizeof(nvmlGpuInstanceProfileInfo_v2_t) == 152, "ProfileInfo_v2 size");
_Static_assert(offsetof(nvmlGpuInstanceProfileInfo_v2_t, memorySizeMB) == 48, "v2 memory offset");
#define nvmlGpuInstanceProfileInfo_v2 NVML_STRUCT_VERSION_OF(nvmlGpuInstanceProfileInfo_v2_t, 2)

/* v3 (header 12.3+): drops isP2pSupported, adds capabilities after the name. */
typedef struct nvmlGpuInstanceProfileInfo_v3_st {
    unsigned int version;
    unsigned int id;
    unsigned int sliceCount;
    unsigned int instanceCount;
    unsigned int multiprocessorCount;
    unsigned int copyEngineCount;
    unsigned int decoderCount;
    unsigned int encoderCount;
    unsigned int jpegCount;
    unsigned int ofaCount;
    unsigned long long memorySizeMB;
    char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
    unsigned int capabilities;
} nvmlGpuInstanceProfileInfo_v3_t;
_Static_assert(sizeof(nvmlGpuInstanceProfileInfo_v3_t) == 152, "ProfileInfo_v3 size");
_Static_assert(offsetof(nvmlGpuInstanceProfileInfo_v3_t, memorySizeMB) == 40, "v3 memory offset");
#define nvmlGpuInstanceProfileInfo_v3 NVML_STRUCT_VERSION_OF(nvmlGpuInstanceProfileInfo_v3_t, 3)

typedef struct nvmlGpuInstanceInfo_st {
    nvmlDevice_t device;
    unsigned int id;
    unsigned int profileId;
    nvmlGpuInstancePlacement_t placement;
} nvmlGpuInstanceInfo_t;
_Static_assert(offsetof(nvmlGpuInstanceInfo_t, placement) == sizeof(void *) + 8, "GI info layout");

typedef struct nvmlComputeInstancePlacement_st {
    unsigned int start; /* in compute slices within the GPU instance */
    unsigned int size;
} nvmlComputeInstancePlacement_t;

typedef struct nvmlComputeInstanceProfileInfo_st {
    unsigned int id;
    unsigned int sliceCount;
    unsigned int instanceCount;
    unsigned int multiprocessorCount;
    unsigned int sharedCopyEngineCount;
    unsigned int sharedDecoderCount;
    unsigned int sharedEncoderCount;
    unsigned int sharedJpegCount;
    unsigned int sharedOfaCount;
} nvmlComputeInstanceProfileInfo_t;
_Static_assert(sizeof(nvmlComputeInstanceProfileInfo_t) == 36, "CI profile info size");

typedef struct nvmlComputeInstanceInfo_st {
    nvmlDevice_t device;
    nvmlGpuInstance_t gpuInstance;
    unsigned int id;
    unsigned int profileId;
    nvmlComputeInstancePlacement_t placement;
} nvmlComputeInstanceInfo_t;
_Static_assert(offsetof(nvmlComputeInstanceInfo_t, id) == 2 * sizeof(void *), "CI info layout");

/* ---- GPM (Hopper and later) ---------------------------------------------------------------- */

enum {
    NVML_GPM_METRIC_SM_UTIL = 2,
    NVML_GPM_METRIC_SM_OCCUPANCY = 3,
    NVML_GPM_METRIC_ANY_TENSOR_UTIL = 5,
    NVML_GPM_METRIC_DRAM_BW_UTIL = 10,
};
/* The metrics array has NVML_GPM_METRIC_MAX entries, a number that grew across headers (98 in
 * 12.x, 333 in 13.x) without a change of NVML_GPM_METRICS_GET_VERSION; the library only touches
 * the first numMetrics entries, and we allocate the largest known size to be safe. */
#define NVML_GPM_METRIC_MAX 333
#define NVML_GPM_METRICS_GET_VERSION 1
#define NVML_GPM_SUPPORT_VERSION 1

typedef struct nvmlGpmMetric_st {
    unsigned int metricId;
    nvmlReturn_t nvmlReturn;
    double value;
    struct {
        char *shortName;
        char *longName;
        char *unit;
    } metricInfo;
} nvmlGpmMetric_t;
_Static_assert(offsetof(nvmlGpmMetric_t, value) == 8, "nvmlGpmMetric_t.value offset");

typedef struct nvmlGpmMetricsGet_st {
    unsigned int version;
    unsigned int numMetrics;
    nvmlGpmSample_t sample1;
    nvmlGpmSample_t sample2;
    nvmlGpmMetric_t metrics[NVML_GPM_METRIC_MAX];
} nvmlGpmMetricsGet_t;
_Static_assert(offsetof(nvmlGpmMetricsGet_t, sample1) == 8, "nvmlGpmMetricsGet_t layout");

typedef struct nvmlGpmSupport_st {
    unsigned int version;
    unsigned int isSupportedDevice;
} nvmlGpmSupport_t;

/* ---- function types ---------------------------------------------------------------------- */

typedef nvmlReturn_t (*nvml_void_fn)(void);
typedef const char *(*nvml_error_string_fn)(nvmlReturn_t);
typedef nvmlReturn_t (*nvml_count_fn)(unsigned int *);
typedef nvmlReturn_t (*nvml_sys_string_fn)(char *, unsigned int);
typedef nvmlReturn_t (*nvml_handle_by_index_fn)(unsigned int, nvmlDevice_t *);
typedef nvmlReturn_t (*nvml_handle_by_uuid_fn)(const char *, nvmlDevice_t *);
typedef nvmlReturn_t (*nvml_dev_string_fn)(nvmlDevice_t, char *, unsigned int);
typedef nvmlReturn_t (*nvml_dev_pci_fn)(nvmlDevice_t, nvmlPciInfo_t *);
typedef nvmlReturn_t (*nvml_dev_uint_fn)(nvmlDevice_t, unsigned int *);
typedef nvmlReturn_t (*nvml_dev_ull_fn)(nvmlDevice_t, unsigned long long *);
typedef nvmlReturn_t (*nvml_dev_mem_fn)(nvmlDevice_t, nvmlMemory_t *);
typedef nvmlReturn_t (*nvml_dev_mem_v2_fn)(nvmlDevice_t, nvmlMemory_v2_t *);
typedef nvmlReturn_t (*nvml_dev_util_fn)(nvmlDevice_t, nvmlUtilization_t *);
typedef nvmlReturn_t (*nvml_dev_clock_fn)(nvmlDevice_t, nvmlClockType_t, unsigned int *);
typedef nvmlReturn_t (*nvml_dev_temp_fn)(nvmlDevice_t, nvmlTemperatureSensors_t, unsigned int *);
typedef nvmlReturn_t (*nvml_dev_fields_fn)(nvmlDevice_t, int, nvmlFieldValue_t *);
typedef nvmlReturn_t (*nvml_dev_get_mig_mode_fn)(nvmlDevice_t, unsigned int *, unsigned int *);
/* nvmlDeviceGetPowerManagementLimitConstraints: (device, min mW, max mW). */
typedef nvmlReturn_t (*nvml_dev_uint2_fn)(nvmlDevice_t, unsigned int *, unsigned int *);
/* nvmlDeviceSetPowerManagementLimit: (device, limit mW); root only. */
typedef nvmlReturn_t (*nvml_dev_set_uint_fn)(nvmlDevice_t, unsigned int);
typedef nvmlReturn_t (*nvml_dev_set_mig_mode_fn)(nvmlDevice_t, unsigned int, nvmlReturn_t *);
typedef nvmlReturn_t (*nvml_gi_profile_info_fn)(nvmlDevice_t, unsigned int,
                                                nvmlGpuInstanceProfileInfo_t *);
/* The V call takes a v2 or v3 struct, told apart by its version field. */
typedef nvmlReturn_t (*nvml_gi_profile_info_v_fn)(nvmlDevice_t, unsigned int, void *);
typedef nvmlReturn_t (*nvml_gi_remaining_fn)(nvmlDevice_t, unsigned int, unsigned int *);
typedef nvmlReturn_t (*nvml_gi_placements_fn)(nvmlDevice_t, unsigned int,
                                              nvmlGpuInstancePlacement_t *, unsigned int *);
typedef nvmlReturn_t (*nvml_gi_create_fn)(nvmlDevice_t, unsigned int, nvmlGpuInstance_t *);
typedef nvmlReturn_t (*nvml_gi_create_at_fn)(nvmlDevice_t, unsigned int,
                                             const nvmlGpuInstancePlacement_t *,
                                             nvmlGpuInstance_t *);
typedef nvmlReturn_t (*nvml_gi_list_fn)(nvmlDevice_t, unsigned int, nvmlGpuInstance_t *,
                                        unsigned int *);
typedef nvmlReturn_t (*nvml_gi_by_id_fn)(nvmlDevice_t, unsigned int, nvmlGpuInstance_t *);
typedef nvmlReturn_t (*nvml_gi_info_fn)(nvmlGpuInstance_t, nvmlGpuInstanceInfo_t *);
typedef nvmlReturn_t (*nvml_gi_destroy_fn)(nvmlGpuInstance_t);
typedef nvmlReturn_t (*nvml_ci_profile_info_fn)(nvmlGpuInstance_t, unsigned int, unsigned int,
                                                nvmlComputeInstanceProfileInfo_t *);
typedef nvmlReturn_t (*nvml_ci_create_fn)(nvmlGpuInstance_t, unsigned int, nvmlComputeInstance_t *);
typedef nvmlReturn_t (*nvml_ci_list_fn)(nvmlGpuInstance_t, unsigned int, nvmlComputeInstance_t *,
                                        unsigned int *);
typedef nvmlReturn_t (*nvml_ci_by_id_fn)(nvmlGpuInstance_t, unsigned int, nvmlComputeInstance_t *);
typedef nvmlReturn_t (*nvml_ci_info_fn)(nvmlComputeInstance_t, nvmlComputeInstanceInfo_t *);
typedef nvmlReturn_t (*nvml_ci_destroy_fn)(nvmlComputeInstance_t);
typedef nvmlReturn_t (*nvml_mig_handle_fn)(nvmlDevice_t, unsigned int, nvmlDevice_t *);
typedef nvmlReturn_t (*nvml_mig_parent_fn)(nvmlDevice_t, nvmlDevice_t *);
typedef nvmlReturn_t (*nvml_procs_v3_fn)(nvmlDevice_t, unsigned int *, nvmlProcessInfo_t *);
typedef nvmlReturn_t (*nvml_procs_v2_fn)(nvmlDevice_t, unsigned int *, nvmlProcessInfo_v2_t *);
typedef nvmlReturn_t (*nvml_proc_name_fn)(unsigned int, char *, unsigned int);
typedef nvmlReturn_t (*nvml_gpm_support_fn)(nvmlDevice_t, nvmlGpmSupport_t *);
typedef nvmlReturn_t (*nvml_gpm_alloc_fn)(nvmlGpmSample_t *);
typedef nvmlReturn_t (*nvml_gpm_free_fn)(nvmlGpmSample_t);
typedef nvmlReturn_t (*nvml_gpm_mig_sample_fn)(nvmlDevice_t, unsigned int, nvmlGpmSample_t);
typedef nvmlReturn_t (*nvml_gpm_metrics_fn)(nvmlGpmMetricsGet_t *);

#endif
