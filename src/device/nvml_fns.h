/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The NVML functions the nvml backend resolves with dlsym: one function-pointer type per call
 * shape, and MB_NVML_SYMBOLS, the one list of (field, type, required, name[, fallback]) that
 * builds the backend's symbol table (src/device/nvml_load.c) and, compiled against NVIDIA's own
 * nvml.h, assigns each NVIDIA prototype to our type so that the compiler checks every signature
 * (tests/nvidia/abi_vendor.c). `fallback` is an older name of the SAME signature; calls whose
 * structs differ between versions get two entries and the code picks the newer one.
 */
#ifndef MIGBENCH_NVML_FNS_H
#define MIGBENCH_NVML_FNS_H

#include "device/nvml_types.h"

typedef nvmlReturn_t (*nvml_void_fn)(void);
typedef const char *(*nvml_error_string_fn)(nvmlReturn_t);
typedef nvmlReturn_t (*nvml_count_fn)(unsigned int *);
typedef nvmlReturn_t (*nvml_sys_string_fn)(char *, unsigned int);
typedef nvmlReturn_t (*nvml_handle_by_index_fn)(unsigned int, nvmlDevice_t *);
typedef nvmlReturn_t (*nvml_handle_by_uuid_fn)(const char *, nvmlDevice_t *);
typedef nvmlReturn_t (*nvml_dev_string_fn)(nvmlDevice_t, char *, unsigned int);
typedef nvmlReturn_t (*nvml_dev_pci_fn)(nvmlDevice_t, nvmlPciInfo_t *);
typedef nvmlReturn_t (*nvml_dev_uint_fn)(nvmlDevice_t, unsigned int *);
typedef nvmlReturn_t (*nvml_dev_arch_fn)(nvmlDevice_t, nvmlDeviceArchitecture_t *);
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
/* NVIDIA declares the V call with a v2 struct; a v3 struct is passed through the same pointer,
 * told apart by its version field. */
typedef nvmlReturn_t (*nvml_gi_profile_info_v_fn)(nvmlDevice_t, unsigned int,
                                                  nvmlGpuInstanceProfileInfo_v2_t *);
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

/*
 * Every symbol the backend resolves. S(field, type, required, name) and F(field, type,
 * required, name, fallback); N1(flag, ...) and N2(flag, ...) are S and F for names that newer
 * NVIDIA headers declare but older ones lack (MB_NVML_VENDOR_HAS_<flag> says whether the vendor
 * header in use has it).
 */
#define MB_NVML_SYMBOLS(S, F, N1, N2)                                                              \
    F(init, nvml_void_fn, true, nvmlInit_v2, nvmlInit)                                             \
    S(shutdown, nvml_void_fn, true, nvmlShutdown)                                                  \
    S(error_string, nvml_error_string_fn, true, nvmlErrorString)                                   \
    F(device_count, nvml_count_fn, true, nvmlDeviceGetCount_v2, nvmlDeviceGetCount)                \
    F(handle_by_index, nvml_handle_by_index_fn, true, nvmlDeviceGetHandleByIndex_v2,               \
      nvmlDeviceGetHandleByIndex)                                                                  \
    S(name, nvml_dev_string_fn, true, nvmlDeviceGetName)                                           \
    S(uuid, nvml_dev_string_fn, true, nvmlDeviceGetUUID)                                           \
    S(handle_by_uuid, nvml_handle_by_uuid_fn, false, nvmlDeviceGetHandleByUUID)                    \
    S(driver_version, nvml_sys_string_fn, false, nvmlSystemGetDriverVersion)                       \
    S(nvml_version, nvml_sys_string_fn, false, nvmlSystemGetNVMLVersion)                           \
    F(pci_info, nvml_dev_pci_fn, false, nvmlDeviceGetPciInfo_v3, nvmlDeviceGetPciInfo_v2)          \
    S(memory_v2, nvml_dev_mem_v2_fn, false, nvmlDeviceGetMemoryInfo_v2)                            \
    S(memory, nvml_dev_mem_fn, false, nvmlDeviceGetMemoryInfo)                                     \
    S(architecture, nvml_dev_arch_fn, false, nvmlDeviceGetArchitecture)                            \
    S(power_usage, nvml_dev_uint_fn, false, nvmlDeviceGetPowerUsage)                               \
    S(total_energy, nvml_dev_ull_fn, false, nvmlDeviceGetTotalEnergyConsumption)                   \
    S(field_values, nvml_dev_fields_fn, false, nvmlDeviceGetFieldValues)                           \
    S(utilization, nvml_dev_util_fn, false, nvmlDeviceGetUtilizationRates)                         \
    S(clock_info, nvml_dev_clock_fn, false, nvmlDeviceGetClockInfo)                                \
    S(temperature, nvml_dev_temp_fn, false, nvmlDeviceGetTemperature)                              \
    N2(CLOCKS_EVENT, clocks_event_reasons, nvml_dev_ull_fn, false,                                 \
       nvmlDeviceGetCurrentClocksEventReasons, nvmlDeviceGetCurrentClocksThrottleReasons)          \
    S(enforced_power_limit, nvml_dev_uint_fn, false, nvmlDeviceGetEnforcedPowerLimit)              \
    S(power_limit, nvml_dev_uint_fn, false, nvmlDeviceGetPowerManagementLimit)                     \
    S(power_limit_range, nvml_dev_uint2_fn, false, nvmlDeviceGetPowerManagementLimitConstraints)   \
    S(power_limit_default, nvml_dev_uint_fn, false, nvmlDeviceGetPowerManagementDefaultLimit)      \
    S(set_power_limit, nvml_dev_set_uint_fn, false, nvmlDeviceSetPowerManagementLimit)             \
    S(get_mig_mode, nvml_dev_get_mig_mode_fn, false, nvmlDeviceGetMigMode)                         \
    S(set_mig_mode, nvml_dev_set_mig_mode_fn, false, nvmlDeviceSetMigMode)                         \
    S(gi_profile_info_v, nvml_gi_profile_info_v_fn, false, nvmlDeviceGetGpuInstanceProfileInfoV)   \
    S(gi_profile_info, nvml_gi_profile_info_fn, false, nvmlDeviceGetGpuInstanceProfileInfo)        \
    S(gi_remaining, nvml_gi_remaining_fn, false, nvmlDeviceGetGpuInstanceRemainingCapacity)        \
    F(gi_placements, nvml_gi_placements_fn, false, nvmlDeviceGetGpuInstancePossiblePlacements_v2,  \
      nvmlDeviceGetGpuInstancePossiblePlacements)                                                  \
    S(gi_create, nvml_gi_create_fn, false, nvmlDeviceCreateGpuInstance)                            \
    S(gi_create_at, nvml_gi_create_at_fn, false, nvmlDeviceCreateGpuInstanceWithPlacement)         \
    S(gi_list, nvml_gi_list_fn, false, nvmlDeviceGetGpuInstances)                                  \
    S(gi_by_id, nvml_gi_by_id_fn, false, nvmlDeviceGetGpuInstanceById)                             \
    S(gi_info, nvml_gi_info_fn, false, nvmlGpuInstanceGetInfo)                                     \
    S(gi_destroy, nvml_gi_destroy_fn, false, nvmlGpuInstanceDestroy)                               \
    S(ci_profile_info, nvml_ci_profile_info_fn, false,                                             \
      nvmlGpuInstanceGetComputeInstanceProfileInfo)                                                \
    S(ci_create, nvml_ci_create_fn, false, nvmlGpuInstanceCreateComputeInstance)                   \
    S(ci_list, nvml_ci_list_fn, false, nvmlGpuInstanceGetComputeInstances)                         \
    S(ci_by_id, nvml_ci_by_id_fn, false, nvmlGpuInstanceGetComputeInstanceById)                    \
    F(ci_info, nvml_ci_info_fn, false, nvmlComputeInstanceGetInfo_v2, nvmlComputeInstanceGetInfo)  \
    S(ci_destroy, nvml_ci_destroy_fn, false, nvmlComputeInstanceDestroy)                           \
    S(max_mig_devices, nvml_dev_uint_fn, false, nvmlDeviceGetMaxMigDeviceCount)                    \
    S(mig_handle_by_index, nvml_mig_handle_fn, false, nvmlDeviceGetMigDeviceHandleByIndex)         \
    S(mig_gi_id, nvml_dev_uint_fn, false, nvmlDeviceGetGpuInstanceId)                              \
    S(mig_ci_id, nvml_dev_uint_fn, false, nvmlDeviceGetComputeInstanceId)                          \
    S(mig_parent, nvml_mig_parent_fn, false, nvmlDeviceGetDeviceHandleFromMigDeviceHandle)         \
    S(procs_v3, nvml_procs_v3_fn, false, nvmlDeviceGetComputeRunningProcesses_v3)                  \
    S(procs_v2, nvml_procs_v2_fn, false, nvmlDeviceGetComputeRunningProcesses_v2)                  \
    S(process_name, nvml_proc_name_fn, false, nvmlSystemGetProcessName)                            \
    S(gpm_support, nvml_gpm_support_fn, false, nvmlGpmQueryDeviceSupport)                          \
    S(gpm_alloc, nvml_gpm_alloc_fn, false, nvmlGpmSampleAlloc)                                     \
    S(gpm_free, nvml_gpm_free_fn, false, nvmlGpmSampleFree)                                        \
    N1(GPM_MIG_SAMPLE, gpm_mig_sample, nvml_gpm_mig_sample_fn, false, nvmlGpmMigSampleGet)         \
    S(gpm_metrics, nvml_gpm_metrics_fn, false, nvmlGpmMetricsGet)

#endif
