/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Everything device/nvml_types.h restates from NVIDIA's nvml.h, as one list compiled twice: once
 * against our header (abi_ours.c) and once against NVIDIA's (abi_vendor.c); abi_check compares.
 * ST(group, type): the size; FI(group, type, field): the offset and size; CO(group, name): a value;
 * GE(group, name) / GS(group, type): ours may be larger (a count or array NVIDIA grew, whose
 * larger value we need). group BASE is in every header; any other group names the
 * MB_NVML_VENDOR_HAS_<group> flag of device/nvml_types.h (newer than the vendor header: skipped
 * and listed).
 */
#define MB_ABI_LIST(ST, FI, CO, GE, GS)                                                            \
    ST(BASE, nvmlPciInfo_t)                                                                        \
    FI(BASE, nvmlPciInfo_t, busIdLegacy)                                                           \
    FI(BASE, nvmlPciInfo_t, domain)                                                                \
    FI(BASE, nvmlPciInfo_t, bus)                                                                   \
    FI(BASE, nvmlPciInfo_t, device)                                                                \
    FI(BASE, nvmlPciInfo_t, pciDeviceId)                                                           \
    FI(BASE, nvmlPciInfo_t, pciSubSystemId)                                                        \
    FI(BASE, nvmlPciInfo_t, busId)                                                                 \
    ST(BASE, nvmlMemory_t)                                                                         \
    FI(BASE, nvmlMemory_t, total)                                                                  \
    FI(BASE, nvmlMemory_t, free)                                                                   \
    FI(BASE, nvmlMemory_t, used)                                                                   \
    ST(BASE, nvmlMemory_v2_t)                                                                      \
    FI(BASE, nvmlMemory_v2_t, version)                                                             \
    FI(BASE, nvmlMemory_v2_t, total)                                                               \
    FI(BASE, nvmlMemory_v2_t, reserved)                                                            \
    FI(BASE, nvmlMemory_v2_t, free)                                                                \
    FI(BASE, nvmlMemory_v2_t, used)                                                                \
    ST(BASE, nvmlUtilization_t)                                                                    \
    FI(BASE, nvmlUtilization_t, gpu)                                                               \
    FI(BASE, nvmlUtilization_t, memory)                                                            \
    ST(BASE, nvmlProcessInfo_v2_t)                                                                 \
    FI(BASE, nvmlProcessInfo_v2_t, pid)                                                            \
    FI(BASE, nvmlProcessInfo_v2_t, usedGpuMemory)                                                  \
    FI(BASE, nvmlProcessInfo_v2_t, gpuInstanceId)                                                  \
    FI(BASE, nvmlProcessInfo_v2_t, computeInstanceId)                                              \
    ST(BASE, nvmlProcessInfo_t)                                                                    \
    FI(BASE, nvmlProcessInfo_t, pid)                                                               \
    FI(BASE, nvmlProcessInfo_t, usedGpuMemory)                                                     \
    FI(BASE, nvmlProcessInfo_t, gpuInstanceId)                                                     \
    FI(BASE, nvmlProcessInfo_t, computeInstanceId)                                                 \
    ST(BASE, nvmlValue_t)                                                                          \
    FI(BASE, nvmlValue_t, dVal)                                                                    \
    FI(API_12, nvmlValue_t, siVal)                                                                 \
    FI(BASE, nvmlValue_t, uiVal)                                                                   \
    FI(BASE, nvmlValue_t, ulVal)                                                                   \
    FI(BASE, nvmlValue_t, ullVal)                                                                  \
    FI(BASE, nvmlValue_t, sllVal)                                                                  \
    ST(BASE, nvmlFieldValue_t)                                                                     \
    FI(BASE, nvmlFieldValue_t, fieldId)                                                            \
    FI(BASE, nvmlFieldValue_t, scopeId)                                                            \
    FI(BASE, nvmlFieldValue_t, timestamp)                                                          \
    FI(BASE, nvmlFieldValue_t, latencyUsec)                                                        \
    FI(BASE, nvmlFieldValue_t, valueType)                                                          \
    FI(BASE, nvmlFieldValue_t, nvmlReturn)                                                         \
    FI(BASE, nvmlFieldValue_t, value)                                                              \
    ST(BASE, nvmlGpuInstancePlacement_t)                                                           \
    FI(BASE, nvmlGpuInstancePlacement_t, start)                                                    \
    FI(BASE, nvmlGpuInstancePlacement_t, size)                                                     \
    ST(BASE, nvmlGpuInstanceProfileInfo_t)                                                         \
    FI(BASE, nvmlGpuInstanceProfileInfo_t, id)                                                     \
    FI(BASE, nvmlGpuInstanceProfileInfo_t, isP2pSupported)                                         \
    FI(BASE, nvmlGpuInstanceProfileInfo_t, sliceCount)                                             \
    FI(BASE, nvmlGpuInstanceProfileInfo_t, instanceCount)                                          \
    FI(BASE, nvmlGpuInstanceProfileInfo_t, multiprocessorCount)                                    \
    FI(BASE, nvmlGpuInstanceProfileInfo_t, copyEngineCount)                                        \
    FI(BASE, nvmlGpuInstanceProfileInfo_t, decoderCount)                                           \
    FI(BASE, nvmlGpuInstanceProfileInfo_t, encoderCount)                                           \
    FI(BASE, nvmlGpuInstanceProfileInfo_t, jpegCount)                                              \
    FI(BASE, nvmlGpuInstanceProfileInfo_t, ofaCount)                                               \
    FI(BASE, nvmlGpuInstanceProfileInfo_t, memorySizeMB)                                           \
    ST(BASE, nvmlGpuInstanceProfileInfo_v2_t)                                                      \
    FI(BASE, nvmlGpuInstanceProfileInfo_v2_t, version)                                             \
    FI(BASE, nvmlGpuInstanceProfileInfo_v2_t, id)                                                  \
    FI(BASE, nvmlGpuInstanceProfileInfo_v2_t, isP2pSupported)                                      \
    FI(BASE, nvmlGpuInstanceProfileInfo_v2_t, sliceCount)                                          \
    FI(BASE, nvmlGpuInstanceProfileInfo_v2_t, instanceCount)                                       \
    FI(BASE, nvmlGpuInstanceProfileInfo_v2_t, multiprocessorCount)                                 \
    FI(BASE, nvmlGpuInstanceProfileInfo_v2_t, copyEngineCount)                                     \
    FI(BASE, nvmlGpuInstanceProfileInfo_v2_t, decoderCount)                                        \
    FI(BASE, nvmlGpuInstanceProfileInfo_v2_t, encoderCount)                                        \
    FI(BASE, nvmlGpuInstanceProfileInfo_v2_t, jpegCount)                                           \
    FI(BASE, nvmlGpuInstanceProfileInfo_v2_t, ofaCount)                                            \
    FI(BASE, nvmlGpuInstanceProfileInfo_v2_t, memorySizeMB)                                        \
    FI(BASE, nvmlGpuInstanceProfileInfo_v2_t, name)                                                \
    ST(BASE, nvmlGpuInstanceInfo_t)                                                                \
    FI(BASE, nvmlGpuInstanceInfo_t, device)                                                        \
    FI(BASE, nvmlGpuInstanceInfo_t, id)                                                            \
    FI(BASE, nvmlGpuInstanceInfo_t, profileId)                                                     \
    FI(BASE, nvmlGpuInstanceInfo_t, placement)                                                     \
    ST(BASE, nvmlComputeInstancePlacement_t)                                                       \
    FI(BASE, nvmlComputeInstancePlacement_t, start)                                                \
    FI(BASE, nvmlComputeInstancePlacement_t, size)                                                 \
    ST(BASE, nvmlComputeInstanceProfileInfo_t)                                                     \
    FI(BASE, nvmlComputeInstanceProfileInfo_t, id)                                                 \
    FI(BASE, nvmlComputeInstanceProfileInfo_t, sliceCount)                                         \
    FI(BASE, nvmlComputeInstanceProfileInfo_t, instanceCount)                                      \
    FI(BASE, nvmlComputeInstanceProfileInfo_t, multiprocessorCount)                                \
    FI(BASE, nvmlComputeInstanceProfileInfo_t, sharedCopyEngineCount)                              \
    FI(BASE, nvmlComputeInstanceProfileInfo_t, sharedDecoderCount)                                 \
    FI(BASE, nvmlComputeInstanceProfileInfo_t, sharedEncoderCount)                                 \
    FI(BASE, nvmlComputeInstanceProfileInfo_t, sharedJpegCount)                                    \
    FI(BASE, nvmlComputeInstanceProfileInfo_t, sharedOfaCount)                                     \
    ST(BASE, nvmlComputeInstanceInfo_t)                                                            \
    FI(BASE, nvmlComputeInstanceInfo_t, device)                                                    \
    FI(BASE, nvmlComputeInstanceInfo_t, gpuInstance)                                               \
    FI(BASE, nvmlComputeInstanceInfo_t, id)                                                        \
    FI(BASE, nvmlComputeInstanceInfo_t, profileId)                                                 \
    FI(BASE, nvmlComputeInstanceInfo_t, placement)                                                 \
    ST(BASE, nvmlGpmMetric_t)                                                                      \
    FI(BASE, nvmlGpmMetric_t, metricId)                                                            \
    FI(BASE, nvmlGpmMetric_t, nvmlReturn)                                                          \
    FI(BASE, nvmlGpmMetric_t, value)                                                               \
    FI(BASE, nvmlGpmMetric_t, metricInfo)                                                          \
    GS(BASE, nvmlGpmMetricsGet_t)                                                                  \
    FI(BASE, nvmlGpmMetricsGet_t, version)                                                         \
    FI(BASE, nvmlGpmMetricsGet_t, numMetrics)                                                      \
    FI(BASE, nvmlGpmMetricsGet_t, sample1)                                                         \
    FI(BASE, nvmlGpmMetricsGet_t, sample2)                                                         \
    FI(BASE, nvmlGpmMetricsGet_t, metrics[0])                                                      \
    ST(BASE, nvmlGpmSupport_t)                                                                     \
    FI(BASE, nvmlGpmSupport_t, version)                                                            \
    FI(BASE, nvmlGpmSupport_t, isSupportedDevice)                                                  \
    ST(GI_PROFILE_V3, nvmlGpuInstanceProfileInfo_v3_t)                                             \
    FI(GI_PROFILE_V3, nvmlGpuInstanceProfileInfo_v3_t, version)                                    \
    FI(GI_PROFILE_V3, nvmlGpuInstanceProfileInfo_v3_t, id)                                         \
    FI(GI_PROFILE_V3, nvmlGpuInstanceProfileInfo_v3_t, sliceCount)                                 \
    FI(GI_PROFILE_V3, nvmlGpuInstanceProfileInfo_v3_t, instanceCount)                              \
    FI(GI_PROFILE_V3, nvmlGpuInstanceProfileInfo_v3_t, multiprocessorCount)                        \
    FI(GI_PROFILE_V3, nvmlGpuInstanceProfileInfo_v3_t, copyEngineCount)                            \
    FI(GI_PROFILE_V3, nvmlGpuInstanceProfileInfo_v3_t, decoderCount)                               \
    FI(GI_PROFILE_V3, nvmlGpuInstanceProfileInfo_v3_t, encoderCount)                               \
    FI(GI_PROFILE_V3, nvmlGpuInstanceProfileInfo_v3_t, jpegCount)                                  \
    FI(GI_PROFILE_V3, nvmlGpuInstanceProfileInfo_v3_t, ofaCount)                                   \
    FI(GI_PROFILE_V3, nvmlGpuInstanceProfileInfo_v3_t, memorySizeMB)                               \
    FI(GI_PROFILE_V3, nvmlGpuInstanceProfileInfo_v3_t, name)                                       \
    FI(GI_PROFILE_V3, nvmlGpuInstanceProfileInfo_v3_t, capabilities)                               \
    CO(BASE, NVML_SUCCESS)                                                                         \
    CO(BASE, NVML_ERROR_UNINITIALIZED)                                                             \
    CO(BASE, NVML_ERROR_INVALID_ARGUMENT)                                                          \
    CO(BASE, NVML_ERROR_NOT_SUPPORTED)                                                             \
    CO(BASE, NVML_ERROR_NO_PERMISSION)                                                             \
    CO(BASE, NVML_ERROR_ALREADY_INITIALIZED)                                                       \
    CO(BASE, NVML_ERROR_NOT_FOUND)                                                                 \
    CO(BASE, NVML_ERROR_INSUFFICIENT_SIZE)                                                         \
    CO(BASE, NVML_ERROR_INSUFFICIENT_POWER)                                                        \
    CO(BASE, NVML_ERROR_DRIVER_NOT_LOADED)                                                         \
    CO(BASE, NVML_ERROR_TIMEOUT)                                                                   \
    CO(BASE, NVML_ERROR_IRQ_ISSUE)                                                                 \
    CO(BASE, NVML_ERROR_LIBRARY_NOT_FOUND)                                                         \
    CO(BASE, NVML_ERROR_FUNCTION_NOT_FOUND)                                                        \
    CO(BASE, NVML_ERROR_CORRUPTED_INFOROM)                                                         \
    CO(BASE, NVML_ERROR_GPU_IS_LOST)                                                               \
    CO(BASE, NVML_ERROR_RESET_REQUIRED)                                                            \
    CO(BASE, NVML_ERROR_OPERATING_SYSTEM)                                                          \
    CO(BASE, NVML_ERROR_LIB_RM_VERSION_MISMATCH)                                                   \
    CO(BASE, NVML_ERROR_IN_USE)                                                                    \
    CO(BASE, NVML_ERROR_MEMORY)                                                                    \
    CO(BASE, NVML_ERROR_NO_DATA)                                                                   \
    CO(BASE, NVML_ERROR_VGPU_ECC_NOT_SUPPORTED)                                                    \
    CO(BASE, NVML_ERROR_INSUFFICIENT_RESOURCES)                                                    \
    CO(BASE, NVML_ERROR_FREQ_NOT_SUPPORTED)                                                        \
    CO(BASE, NVML_ERROR_ARGUMENT_VERSION_MISMATCH)                                                 \
    CO(BASE, NVML_ERROR_UNKNOWN)                                                                   \
    CO(BASE, NVML_DEVICE_NAME_V2_BUFFER_SIZE)                                                      \
    CO(BASE, NVML_DEVICE_UUID_V2_BUFFER_SIZE)                                                      \
    CO(BASE, NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE)                                               \
    CO(BASE, NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE)                                                 \
    CO(BASE, NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE)                                                   \
    CO(BASE, NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE)                                                \
    CO(BASE, nvmlMemory_v2)                                                                        \
    CO(BASE, nvmlGpuInstanceProfileInfo_v2)                                                        \
    CO(BASE, NVML_DEVICE_ARCH_KEPLER)                                                              \
    CO(BASE, NVML_DEVICE_ARCH_MAXWELL)                                                             \
    CO(BASE, NVML_DEVICE_ARCH_PASCAL)                                                              \
    CO(BASE, NVML_DEVICE_ARCH_VOLTA)                                                               \
    CO(BASE, NVML_DEVICE_ARCH_TURING)                                                              \
    CO(BASE, NVML_DEVICE_ARCH_AMPERE)                                                              \
    CO(BASE, NVML_DEVICE_ARCH_ADA)                                                                 \
    CO(BASE, NVML_DEVICE_ARCH_HOPPER)                                                              \
    CO(BASE, NVML_DEVICE_ARCH_UNKNOWN)                                                             \
    CO(BASE, NVML_CLOCK_GRAPHICS)                                                                  \
    CO(BASE, NVML_CLOCK_SM)                                                                        \
    CO(BASE, NVML_CLOCK_MEM)                                                                       \
    CO(BASE, NVML_CLOCK_VIDEO)                                                                     \
    CO(BASE, NVML_TEMPERATURE_GPU)                                                                 \
    CO(BASE, NVML_VALUE_NOT_AVAILABLE)                                                             \
    CO(BASE, NVML_VALUE_TYPE_DOUBLE)                                                               \
    CO(BASE, NVML_VALUE_TYPE_UNSIGNED_INT)                                                         \
    CO(BASE, NVML_VALUE_TYPE_UNSIGNED_LONG)                                                        \
    CO(BASE, NVML_VALUE_TYPE_UNSIGNED_LONG_LONG)                                                   \
    CO(BASE, NVML_VALUE_TYPE_SIGNED_LONG_LONG)                                                     \
    CO(API_12, NVML_VALUE_TYPE_SIGNED_INT)                                                         \
    CO(BASE, NVML_DEVICE_MIG_DISABLE)                                                              \
    CO(BASE, NVML_DEVICE_MIG_ENABLE)                                                               \
    CO(BASE, NVML_GPU_INSTANCE_PROFILE_1_SLICE)                                                    \
    CO(BASE, NVML_GPU_INSTANCE_PROFILE_2_SLICE)                                                    \
    CO(BASE, NVML_GPU_INSTANCE_PROFILE_3_SLICE)                                                    \
    CO(BASE, NVML_GPU_INSTANCE_PROFILE_4_SLICE)                                                    \
    CO(BASE, NVML_GPU_INSTANCE_PROFILE_7_SLICE)                                                    \
    CO(BASE, NVML_GPU_INSTANCE_PROFILE_8_SLICE)                                                    \
    CO(BASE, NVML_GPU_INSTANCE_PROFILE_6_SLICE)                                                    \
    CO(BASE, NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1)                                               \
    CO(BASE, NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE)                                                \
    CO(BASE, NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE)                                                \
    CO(BASE, NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE)                                                \
    CO(BASE, NVML_COMPUTE_INSTANCE_PROFILE_4_SLICE)                                                \
    CO(BASE, NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE)                                                \
    CO(BASE, NVML_COMPUTE_INSTANCE_PROFILE_8_SLICE)                                                \
    CO(BASE, NVML_COMPUTE_INSTANCE_PROFILE_6_SLICE)                                                \
    CO(BASE, NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED)                                          \
    CO(BASE, NVML_GPM_METRIC_SM_UTIL)                                                              \
    CO(BASE, NVML_GPM_METRIC_SM_OCCUPANCY)                                                         \
    CO(BASE, NVML_GPM_METRIC_ANY_TENSOR_UTIL)                                                      \
    CO(BASE, NVML_GPM_METRIC_DRAM_BW_UTIL)                                                         \
    CO(BASE, NVML_GPM_METRICS_GET_VERSION)                                                         \
    CO(BASE, NVML_GPM_SUPPORT_VERSION)                                                             \
    GE(BASE, NVML_GPU_INSTANCE_PROFILE_COUNT)                                                      \
    GE(BASE, NVML_COMPUTE_INSTANCE_PROFILE_COUNT)                                                  \
    CO(API_12, NVML_ERROR_DEPRECATED)                                                              \
    CO(API_12, NVML_ERROR_NOT_READY)                                                               \
    CO(API_12, NVML_ERROR_GPU_NOT_FOUND)                                                           \
    CO(API_12, NVML_ERROR_INVALID_STATE)                                                           \
    CO(ARCH_BLACKWELL, NVML_DEVICE_ARCH_BLACKWELL)                                                 \
    CO(GI_2_SLICE_REV1, NVML_GPU_INSTANCE_PROFILE_2_SLICE_REV1)                                    \
    CO(GI_1_SLICE_REV2, NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2)                                    \
    CO(CI_1_SLICE_REV1, NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE_REV1)                                \
    CO(FI_POWER, NVML_FI_DEV_POWER_AVERAGE)                                                        \
    CO(FI_POWER, NVML_FI_DEV_POWER_INSTANT)                                                        \
    CO(FI_ENERGY, NVML_FI_DEV_ENERGY)                                                              \
    CO(POWER_SCOPE, NVML_POWER_SCOPE_GPU)                                                          \
    CO(POWER_SCOPE, NVML_POWER_SCOPE_MODULE)                                                       \
    CO(GI_PROFILE_V3, nvmlGpuInstanceProfileInfo_v3)
