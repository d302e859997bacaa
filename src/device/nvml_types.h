/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Our own declarations of the subset of NVML that migbench uses (no NVIDIA header is needed to
 * build). Values, field order and struct layouts are restated from nvml.h (NVML API version 13,
 * as vendored in NVIDIA/go-nvml); see shared/reference/mig-geometry.md §3 and §9.
 *
 * Used by the nvml backend (src/device/nvml*.c) and the fake libnvidia-ml.so.1 in
 * tests/fake-nvml/. NVIDIA's own nvml.h is the oracle: with MB_NVML_VENDOR_HEADER defined this
 * file includes NVIDIA's header instead and restates only what that header predates (each such
 * group is guarded and named by an MB_NVML_VENDOR_HAS_* flag), so that a second build of the fake
 * implements NVIDIA's prototypes, and tests/nvidia/abi_check compares every struct size, field
 * offset and constant below with NVIDIA's (docs/nvml.md, "NVIDIA's artefacts as the oracle").
 * Function types live in device/nvml_fns.h.
 */
#ifndef MIGBENCH_NVML_TYPES_H
#define MIGBENCH_NVML_TYPES_H

#include <stddef.h>

#ifdef MB_NVML_VENDOR_HEADER
/* Declares the unversioned names too (nvmlInit, ..._v2), as the fallbacks we resolve. */
#define NVML_NO_UNVERSIONED_FUNC_DEFS
#include <nvml.h>
#define MB_NVML_RESTATE_BASE 0
/* Each group NVIDIA added after the 11.x header Debian ships: 1 when this vendor header has it.
 * API_12 has no macro of its own to test, so it follows NVML_API_VERSION; a wrong guess is a
 * compile error (an enumerator defined twice or not at all), never a silent pass. */
#if NVML_API_VERSION >= 12
#define MB_NVML_VENDOR_HAS_API_12 1
#else
#define MB_NVML_VENDOR_HAS_API_12 0
#endif
#ifdef NVML_DEVICE_ARCH_BLACKWELL
#define MB_NVML_VENDOR_HAS_ARCH_BLACKWELL 1
#else
#define MB_NVML_VENDOR_HAS_ARCH_BLACKWELL 0
#endif
#ifdef NVML_GPU_INSTANCE_PROFILE_2_SLICE_REV1
#define MB_NVML_VENDOR_HAS_GI_2_SLICE_REV1 1
#else
#define MB_NVML_VENDOR_HAS_GI_2_SLICE_REV1 0
#endif
#ifdef NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2
#define MB_NVML_VENDOR_HAS_GI_1_SLICE_REV2 1
#else
#define MB_NVML_VENDOR_HAS_GI_1_SLICE_REV2 0
#endif
#ifdef NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE_REV1
#define MB_NVML_VENDOR_HAS_CI_1_SLICE_REV1 1
#else
#define MB_NVML_VENDOR_HAS_CI_1_SLICE_REV1 0
#endif
#ifdef NVML_FI_DEV_POWER_AVERAGE
#define MB_NVML_VENDOR_HAS_FI_POWER 1
#else
#define MB_NVML_VENDOR_HAS_FI_POWER 0
#endif
#ifdef NVML_FI_DEV_ENERGY
#define MB_NVML_VENDOR_HAS_FI_ENERGY 1
#else
#define MB_NVML_VENDOR_HAS_FI_ENERGY 0
#endif
#ifdef NVML_POWER_SCOPE_GPU
#define MB_NVML_VENDOR_HAS_POWER_SCOPE 1
#else
#define MB_NVML_VENDOR_HAS_POWER_SCOPE 0
#endif
#ifdef nvmlGpuInstanceProfileInfo_v3
#define MB_NVML_VENDOR_HAS_GI_PROFILE_V3 1
#else
#define MB_NVML_VENDOR_HAS_GI_PROFILE_V3 0
#endif
/* Functions: the renamed clocks-event call (12.2+) and the per-GI GPM sample (12.x). */
#ifdef nvmlClocksEventReasonGpuIdle
#define MB_NVML_VENDOR_HAS_CLOCKS_EVENT 1
#else
#define MB_NVML_VENDOR_HAS_CLOCKS_EVENT 0
#endif
#define MB_NVML_VENDOR_HAS_GPM_MIG_SAMPLE MB_NVML_VENDOR_HAS_API_12
#else
#define MB_NVML_RESTATE_BASE 1
#define MB_NVML_VENDOR_HAS_API_12 0
#define MB_NVML_VENDOR_HAS_ARCH_BLACKWELL 0
#define MB_NVML_VENDOR_HAS_GI_2_SLICE_REV1 0
#define MB_NVML_VENDOR_HAS_GI_1_SLICE_REV2 0
#define MB_NVML_VENDOR_HAS_CI_1_SLICE_REV1 0
#define MB_NVML_VENDOR_HAS_FI_POWER 0
#define MB_NVML_VENDOR_HAS_FI_ENERGY 0
#define MB_NVML_VENDOR_HAS_POWER_SCOPE 0
#define MB_NVML_VENDOR_HAS_GI_PROFILE_V3 0
#endif

/* Ours, not NVIDIA's: the versioned-struct rule and the "not on a MIG device" id. */
#define NVML_STRUCT_VERSION_OF(type, ver) ((unsigned)(sizeof(type) | ((unsigned)(ver) << 24)))
/* gpuInstanceId / computeInstanceId are 0xFFFFFFFF when the process is not on a MIG device. */
#define NVML_NO_INSTANCE_ID 0xFFFFFFFFu
/* NVIDIA's metrics array grew across headers (98 in 11.x/12.x, 333 in 13.x) without a change of
 * NVML_GPM_METRICS_GET_VERSION; the library only touches the first numMetrics entries, and the
 * backend allocates the largest known size to be safe. */
#define MB_NVML_GPM_METRIC_MAX 333

#if MB_NVML_RESTATE_BASE
/* ==== restated from NVIDIA's nvml.h (all of it present in the 11.x header) ================= */

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
    NVML_ERROR_VGPU_ECC_NOT_SUPPORTED = 22,
    NVML_ERROR_INSUFFICIENT_RESOURCES = 23,
    NVML_ERROR_FREQ_NOT_SUPPORTED = 24,
    NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
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

typedef struct nvmlMemory_st {
    unsigned long long total;
    unsigned long long free;
    unsigned long long used;
} nvmlMemory_t;

typedef struct nvmlMemory_v2_st {
    unsigned int version;
    unsigned long long total;
    unsigned long long reserved;
    unsigned long long free;
    unsigned long long used;
} nvmlMemory_v2_t;
#define nvmlMemory_v2 NVML_STRUCT_VERSION_OF(nvmlMemory_v2_t, 2)

typedef struct nvmlUtilization_st {
    unsigned int gpu;
    unsigned int memory;
} nvmlUtilization_t;

typedef unsigned int nvmlClockType_t;
enum { NVML_CLOCK_GRAPHICS = 0, NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2, NVML_CLOCK_VIDEO = 3 };

typedef unsigned int nvmlTemperatureSensors_t;
enum { NVML_TEMPERATURE_GPU = 0 };

/* ---- processes --------------------------------------------------------------------------- */

/* The struct of nvmlDeviceGetComputeRunningProcesses_v2. */
typedef struct nvmlProcessInfo_v2_st {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId;
    unsigned int computeInstanceId;
} nvmlProcessInfo_v2_t;

/* The struct of nvmlDeviceGetComputeRunningProcesses_v3: the same 24-byte layout as v2 in every
 * NVIDIA header (11.x to 13.x). Confidential-compute memory (usedGpuCcProtectedMemory) is only in
 * nvmlProcessDetail_v1_t, the struct of nvmlDeviceGetRunningProcessDetailList, which we do not
 * use: restating it here once made every entry after the first be read at the wrong stride. */
typedef struct nvmlProcessInfo_st {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId;
    unsigned int computeInstanceId;
} nvmlProcessInfo_t;

/* usedGpuMemory is this value when the driver cannot tell (WDDM, some MIG setups). */
#define NVML_VALUE_NOT_AVAILABLE 0xFFFFFFFFFFFFFFFFull

/* ---- field values ------------------------------------------------------------------------ */

typedef unsigned int nvmlValueType_t;
enum {
    NVML_VALUE_TYPE_DOUBLE = 0,
    NVML_VALUE_TYPE_UNSIGNED_INT = 1,
    NVML_VALUE_TYPE_UNSIGNED_LONG = 2,
    NVML_VALUE_TYPE_UNSIGNED_LONG_LONG = 3,
    NVML_VALUE_TYPE_SIGNED_LONG_LONG = 4,
};

typedef union nvmlValue_st {
    double dVal;
    int siVal;
    unsigned int uiVal;
    unsigned long ulVal;
    unsigned long long ullVal;
    signed long long sllVal;
} nvmlValue_t;

typedef struct nvmlFieldValue_st {
    unsigned int fieldId;
    unsigned int scopeId;
    long long timestamp;   /* CPU time in microseconds */
    long long latencyUsec; /* how stale the value may be */
    nvmlValueType_t valueType;
    nvmlReturn_t nvmlReturn;
    nvmlValue_t value;
} nvmlFieldValue_t;

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
    /* NVML 13.2+ header value (0x8 in 11.x); older libraries answer INVALID_ARGUMENT past their
     * own count. */
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
    NVML_COMPUTE_INSTANCE_PROFILE_COUNT = 0x9, /* 0x7 in 11.x */
};
enum { NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED = 0 };

typedef struct nvmlGpuInstancePlacement_st {
    unsigned int start; /* in memory slices */
    unsigned int size;
} nvmlGpuInstancePlacement_t;

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
#define nvmlGpuInstanceProfileInfo_v2 NVML_STRUCT_VERSION_OF(nvmlGpuInstanceProfileInfo_v2_t, 2)

typedef struct nvmlGpuInstanceInfo_st {
    nvmlDevice_t device;
    unsigned int id;
    unsigned int profileId;
    nvmlGpuInstancePlacement_t placement;
} nvmlGpuInstanceInfo_t;

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

typedef struct nvmlComputeInstanceInfo_st {
    nvmlDevice_t device;
    nvmlGpuInstance_t gpuInstance;
    unsigned int id;
    unsigned int profileId;
    nvmlComputeInstancePlacement_t placement;
} nvmlComputeInstanceInfo_t;

/* ---- GPM (Hopper and later) ---------------------------------------------------------------- */

enum {
    NVML_GPM_METRIC_SM_UTIL = 2,
    NVML_GPM_METRIC_SM_OCCUPANCY = 3,
    NVML_GPM_METRIC_ANY_TENSOR_UTIL = 5,
    NVML_GPM_METRIC_DRAM_BW_UTIL = 10,
};
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

typedef struct nvmlGpmMetricsGet_st {
    unsigned int version;
    unsigned int numMetrics;
    nvmlGpmSample_t sample1;
    nvmlGpmSample_t sample2;
    nvmlGpmMetric_t metrics[MB_NVML_GPM_METRIC_MAX];
} nvmlGpmMetricsGet_t;

typedef struct nvmlGpmSupport_st {
    unsigned int version;
    unsigned int isSupportedDevice;
} nvmlGpmSupport_t;
#endif /* MB_NVML_RESTATE_BASE */

/* ==== restated from newer NVIDIA headers (each group: only where the vendor header lacks it) == */

#if !MB_NVML_VENDOR_HAS_API_12
/* 12.x: signed-int field values (nvmlValue_t.siVal, in our restated union above) and four
 * return codes. */
enum { NVML_VALUE_TYPE_SIGNED_INT = 5 };
enum {
    NVML_ERROR_DEPRECATED = 26,
    NVML_ERROR_NOT_READY = 27,
    NVML_ERROR_GPU_NOT_FOUND = 28,
    NVML_ERROR_INVALID_STATE = 29,
};
#endif
#if !MB_NVML_VENDOR_HAS_ARCH_BLACKWELL
enum { NVML_DEVICE_ARCH_BLACKWELL = 10 };
#endif
#if !MB_NVML_VENDOR_HAS_GI_2_SLICE_REV1
enum { NVML_GPU_INSTANCE_PROFILE_2_SLICE_REV1 = 8 };
#endif
#if !MB_NVML_VENDOR_HAS_GI_1_SLICE_REV2
enum { NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2 = 9 };
#endif
#if !MB_NVML_VENDOR_HAS_CI_1_SLICE_REV1
enum { NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE_REV1 = 7 };
#endif
#if !MB_NVML_VENDOR_HAS_FI_POWER
enum {
    NVML_FI_DEV_POWER_AVERAGE = 185, /* 1 s average, Ampere except GA100 and later */
    NVML_FI_DEV_POWER_INSTANT = 186,
};
#endif
#if !MB_NVML_VENDOR_HAS_FI_ENERGY
enum { NVML_FI_DEV_ENERGY = 191 }; /* mJ since the driver was loaded */
#endif
#if !MB_NVML_VENDOR_HAS_POWER_SCOPE
enum { NVML_POWER_SCOPE_GPU = 0, NVML_POWER_SCOPE_MODULE = 1 };
#endif

#if !MB_NVML_VENDOR_HAS_GI_PROFILE_V3
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
#define nvmlGpuInstanceProfileInfo_v3 NVML_STRUCT_VERSION_OF(nvmlGpuInstanceProfileInfo_v3_t, 3)
#endif

/* The layouts every NVIDIA header agrees on, checked in every build (the full comparison with
 * NVIDIA's header is tests/nvidia/abi_check). */
_Static_assert(sizeof(nvmlProcessInfo_t) == 24, "nvmlProcessInfo_t: NVIDIA's 24-byte layout");
_Static_assert(sizeof(nvmlProcessInfo_v2_t) == 24, "nvmlProcessInfo_v2_t ABI size");
_Static_assert(sizeof(nvmlPciInfo_t) == 68, "nvmlPciInfo_t ABI size");
_Static_assert(sizeof(nvmlFieldValue_t) == 40, "nvmlFieldValue_t ABI size");
_Static_assert(sizeof(nvmlGpuInstanceProfileInfo_v2_t) == 152, "ProfileInfo_v2 size");
_Static_assert(sizeof(nvmlGpuInstanceProfileInfo_v3_t) == 152, "ProfileInfo_v3 size");

#endif
