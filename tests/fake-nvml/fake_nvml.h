/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shared by the two halves of the fake libnvidia-ml.so.1 (fake_nvml.c: state, init, identity,
 * telemetry; fake_nvml_mig.c: MIG, processes, GPM). Only nvml* symbols leave the library
 * (exports.map), so the names below stay private to it.
 */
#ifndef MIGBENCH_FAKE_NVML_H
#define MIGBENCH_FAKE_NVML_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/emu.h"
#include "device/nvml_types.h"
#include "migbench/device.h"

#define EXPORT __attribute__((visibility("default")))
#define FAKE_MAX_GPUS 8
#define FAKE_MAX_FAULTS 16
#define FAKE_MAX_GI 15
#define FAKE_MAX_CI 8
#define FAKE_MAX_PHANTOMS 64
/* The profile enum counts of the driver the fake stands in for (NVML 13.2), not of the header it
 * is built from: the build from Debian's 11.8 nvml.h must still serve 1g.20gb (1_SLICE_REV2). */
#define FAKE_GI_PROFILE_ENUMS 0x12
#define FAKE_CI_PROFILE_ENUMS 0x9
#define MIB (1024ull * 1024ull)

enum { H_PARENT = 0x6b1d, H_MIG = 0x6b1e, H_GI = 0x6b1f, H_CI = 0x6b20 };

struct fake_gpu;

struct nvmlDevice_st {
    int magic;
    struct fake_gpu *gpu;
    unsigned gi, ci; /* H_MIG only */
};

struct nvmlGpuInstance_st {
    int magic;
    struct fake_gpu *gpu;
    unsigned id;
};

struct nvmlComputeInstance_st {
    int magic;
    struct fake_gpu *gpu;
    unsigned gi, id;
};

struct nvmlGpmSample_st {
    bool filled;
    unsigned gi;
    struct mb_mig_activity act;
};

struct fake_gpu {
    struct mb_device *emu;
    unsigned index;
    struct nvmlDevice_st parent;
    struct nvmlDevice_st mig[FAKE_MAX_GI * FAKE_MAX_CI];
    struct nvmlGpuInstance_st gi[FAKE_MAX_GI];
    struct nvmlComputeInstance_st ci[FAKE_MAX_GI][FAKE_MAX_CI];
};

struct fault {
    char fn[80];
    long nth; /* 0 = every call */
    long calls;
    int code;
};

struct fake_state {
    pthread_mutex_t lock;
    int refs;
    unsigned n_gpus;
    struct fake_gpu gpus[FAKE_MAX_GPUS];
    size_t n_faults;
    struct fault faults[FAKE_MAX_FAULTS];
    long grow_left;
    unsigned phantoms;
};
/* The fake driver's state (fake_nvml.c); every entry point holds its lock. */
extern struct fake_state fake_g;
#define g fake_g

nvmlReturn_t to_nvml(int status);
void copy_out(char *dst, unsigned len, const char *src);
long env_long(const char *name, long dflt);
nvmlReturn_t injected(const char *fn);
const struct mb_gpu_model *model_of(const struct fake_gpu *gpu);
struct fake_gpu *parent_of(nvmlDevice_t h);
bool mig_enabled(struct fake_gpu *gpu);
int instances(struct fake_gpu *gpu, struct mb_mig_instance *out, size_t *n);
const struct mb_gi_profile *catalog_profile_by_enum(const struct fake_gpu *gpu, unsigned e);
const struct mb_gi_profile *catalog_profile_by_id(const struct fake_gpu *gpu, unsigned id);
unsigned arch_of(const struct fake_gpu *gpu);

/*
 * Every other entry point: takes the lock, answers UNINITIALIZED before nvmlInit, applies fault
 * injection, then runs the body.
 */
#define FAKE_FN(name, params, args)                                                                \
    static nvmlReturn_t name##_impl params;                                                        \
    EXPORT nvmlReturn_t name params                                                                \
    {                                                                                              \
        pthread_mutex_lock(&g.lock);                                                               \
        nvmlReturn_t r_ = g.refs == 0 ? NVML_ERROR_UNINITIALIZED : injected(#name);                \
        if (r_ == NVML_SUCCESS)                                                                    \
            r_ = name##_impl args;                                                                 \
        pthread_mutex_unlock(&g.lock);                                                             \
        return r_;                                                                                 \
    }                                                                                              \
    static nvmlReturn_t name##_impl params

#endif
