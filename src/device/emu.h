/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Private to the library and its tests: the emulated MIG GPU's extra entry points, used by unit
 * tests and by the fake NVML library (tests/fake-nvml). They act on a device opened with the emu
 * backend ("emu:MODEL[:option=value...]"); on any other device they return MB_EINVAL.
 *
 * Status codes the emulator returns, and the NVML code each stands for (for the fake NVML):
 *   MB_EUNSUPPORTED  NOT_SUPPORTED           MIG disabled (or pending), no GPM on this model
 *   MB_EINVAL        INVALID_ARGUMENT        unknown profile id, placement not valid for it
 *   MB_ENORESOURCES  INSUFFICIENT_RESOURCES  overlap, max count, +me taken, no free placement
 *   MB_EBUSY         IN_USE                  destroy with compute instances or processes
 *   MB_ENOTFOUND     NOT_FOUND               unknown GPU- or compute-instance id
 *   MB_EGONE         GPU_IS_LOST             after lost_after=N calls, or while the file
 *                                           lost_when=PATH exists (every handle at once)
 *   MB_ERANGE        INSUFFICIENT_SIZE       an output array too small (*n says how many)
 *                    INVALID_ARGUMENT        (set power limit) a limit outside min..max
 *   MB_EPERM         NO_PERMISSION           set power limit with limit_perm=deny
 */
#ifndef MIGBENCH_DEVICE_EMU_H
#define MIGBENCH_DEVICE_EMU_H

#include <stdbool.h>
#include <stdint.h>

#include "migbench/catalog.h"
#include "migbench/device.h"

/* Opens an emulated GPU; args is the spec without "emu:", e.g. "H100-80GB:mig=on". */
int mb__emu_open(const char *args, struct mb_device **out, struct mb_error *err);

/* True when dev was opened by the emu backend. */
bool mb__emu_is(const struct mb_device *dev);

/* The catalog model the emulator was built from (owned by dev), or NULL for a non-emu device. */
const struct mb_gpu_model *mb__emu_model(const struct mb_device *dev);

/*
 * Attaches an emulated compute process. With MIG enabled gi_id and ci_id name an existing
 * compute instance; with MIG disabled both must be -1 (the whole GPU). mem_bytes counts against
 * the instance's (or GPU's) memory: MB_ENORESOURCES when it does not fit. name may be NULL.
 * The process is recorded in the state file when there is one.
 */
int mb__emu_attach_process(struct mb_device *dev, unsigned pid, int gi_id, int ci_id,
                           uint64_t mem_bytes, const char *name, struct mb_error *err);

/*
 * As mb__emu_attach_process, for a real process of this host (a modelled workload attaching
 * itself): the emulator drops it once its pid no longer exists, as a driver forgets a process
 * that died.
 */
int mb__emu_attach_live(struct mb_device *dev, unsigned pid, int gi_id, int ci_id,
                        uint64_t mem_bytes, const char *name, struct mb_error *err);

/* A modelled job: a workload preset of data/gpumodel.json, its batch (0: the preset's), its MPS
 * active-thread percentage (0: not an MPS client), and whether it is a live process of this host
 * (forgotten once its pid is gone, as mb__emu_attach_live). */
struct mb__emu_job {
    const char *workload;
    double batch;
    double mps_pct;
    bool live;
};

/*
 * As mb__emu_attach_process, for a modelled job: its memory is the preset's footprint at the batch
 * (MB_ENORESOURCES "out of memory" where it does not fit), and the GPU model (gpumodel.h) gives
 * the GPU's power and clock and the job's rate from its demand and its place. MB_EINVAL for an
 * unknown preset.
 */
int mb__emu_attach_job(struct mb_device *dev, unsigned pid, int gi_id, int ci_id,
                       const struct mb__emu_job *job, const char *name, struct mb_error *err);

/*
 * The rate of the modelled job pid now, in its preset's units a second (EMULATED), and the SM
 * clock fraction; MB_ENOTFOUND when pid is not a modelled job.
 */
int mb__emu_job_rate(struct mb_device *dev, unsigned pid, double *rate, double *speed,
                     struct mb_error *err);

/*
 * The SM clock as a fraction of its maximum (0 < *speed <= 1) at the current load under the
 * current power limit (the GPU model, gpumodel.h): every job's compute time scales with 1/speed.
 */
int mb__emu_speed(struct mb_device *dev, double *speed, struct mb_error *err);

/* Removes an emulated process; MB_ENOTFOUND if there is none with that pid. */
int mb__emu_detach_process(struct mb_device *dev, unsigned pid, struct mb_error *err);

/* Advances the manual clock (option clock=manual) by ns; MB_ESTATE on a monotonic clock. */
int mb__emu_advance(struct mb_device *dev, int64_t ns, struct mb_error *err);

/*
 * Emulates a GPU reset: the pending MIG mode becomes current and every GPU instance is gone.
 * MB_EBUSY while processes are attached (a real reset is refused while the GPU is in use).
 */
int mb__emu_reset(struct mb_device *dev, struct mb_error *err);

/* Time since open in ns on the emulator's clock (manual or monotonic). */
int64_t mb__emu_elapsed_ns(struct mb_device *dev);

/* The exact energy the power model has delivered since open, in joules (no wrap, no offset). */
double mb__emu_energy_j(struct mb_device *dev);

#endif
