/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Private to the library and its tests: the model of a GPU running training jobs, used by the
 * emulated device (its power, clock, utilisation and the rate of each modelled job) and, through
 * the emulator, by the modelled workload fixture (tests/fixtures/fx_model.c). Its parameters and
 * the published measurements they are fitted to are data: data/gpumodel.json, compiled in,
 * refitted by scripts/gpumodel-fit.py. The equations are stated in docs/devices.md ("The GPU
 * model"); every figure it gives is EMULATED, never a measurement.
 *
 * Per job (a workload preset at a batch size): the SMs its batch keeps busy U = softmin(N, d B),
 * its compute rate c * sm_rate * U * s and bandwidth rate m * bw_rel * beta, combined by a soft
 * minimum into R; a step takes T = t_launch + (w0 + B) / R, so the job does B / T units a second
 * and its SMs are busy (w0 + B) / R of each step. Per GPU: power = static + (max - static) * g(s)
 * * sum over jobs of kappa * (N / N_full) * activity * time share, with g(s) = s^3 above the
 * voltage knee and s * knee^2 below; a power limit lowers the clock s until the power fits.
 */
#ifndef MIGBENCH_DEVICE_GPUMODEL_H
#define MIGBENCH_DEVICE_GPUMODEL_H

#include <stdbool.h>
#include <stddef.h>

#include "migbench/catalog.h"
#include "migbench/status.h"

#define MB_GM_NAME_MAX 32
#define MB_GM_MAX_JOBS 64

/* A workload preset: what a job of it demands (fitted or derived in data/gpumodel.json). */
struct mb_gm_workload {
    char name[MB_GM_NAME_MAX];
    char unit[16];     /* images, tokens, sequences */
    char basis[128];   /* "calibrated: ..." or "derived from resnet50: ..." */
    unsigned batch;    /* the default batch (units a step) */
    double c;          /* units/s per SM at full clock on an A100 SM (sm_rate 1) */
    double m;          /* units/s the whole reference bandwidth (reference_bw_gbs) allows */
    double w0;         /* per-step work that does not grow with the batch, in units */
    double t_launch_s; /* per-step time that no SM shortens (launches, synchronisation) */
    double demand;     /* SMs one unit of the batch keeps busy */
    double kappa;      /* dynamic power at full activity, as a share of max - static */
    double mem_base_mib, mem_per_unit_mib;
};

/* A GPU as the model sees it. */
struct mb_gm_gpu {
    char name[MB_GM_NAME_MAX + 32];
    double sm_full;  /* SMs of the whole GPU (MIG off) */
    double sm_rate;  /* an SM's speed against an A100 SM */
    double bw_rel;   /* memory bandwidth against the reference */
    double static_w; /* power of the powered GPU with nothing running */
    double max_w;    /* TDP: the default and highest power limit */
    double knee;     /* clock fraction below which the voltage stays at its floor */
    double s_min;    /* lowest clock fraction (idle clock / maximum) */
};

/* One job on the GPU: inputs, then what mb__gm_solve fills in. */
struct mb_gm_job {
    const struct mb_gm_workload *w; /* NULL: unmodelled (busy on all its SMs, kappa 1) */
    double batch;
    double kappa;        /* from the workload (1 when unmodelled); a calibration may set it */
    double n_sm;         /* SMs of its instance or MPS share */
    double beta;         /* its share of the memory bandwidth */
    double time_share;   /* 1, or its turn under time-slicing (loss included) */
    double power_share;  /* share of time its SMs draw power (1, or 1/n under time-slicing) */
    double interference; /* throughput factor from MPS contention (1 alone) */
    /* Filled in: */
    double rate;     /* units/s (0 for an unmodelled job) */
    double duty;     /* share of each step its SMs compute, 0..1 */
    double activity; /* its SMs' power activity, 0..1 */
};

struct mb_gm_result {
    double s;       /* SM clock as a fraction of its maximum */
    double power_w; /* GPU power */
    bool capped;    /* the power limit lowered the clock */
};

/* One shipped measurement (data/gpumodel.json "measurements"). */
struct mb_gm_measurement {
    char source[16]; /* MIGPerf, Zeus */
    char gpu[MB_GM_NAME_MAX];
    char workload[MB_GM_NAME_MAX];
    char profile[MB_GM_NAME_MAX]; /* MIG profile ("" for Zeus) */
    char quantity[24]; /* throughput, step_ms, power_w, energy_ratio, time_ratio, optimal_limit_w */
    unsigned batch;
    double limit_w; /* Zeus: the power limit (0 for the optimum) */
    double value;   /* 0 with oom */
    bool oom;
};

/* What the model is calibrated to, in one line (for reports on emulated runs). */
const char *mb__gm_calibration(void);

/* Loads the compiled-in model data once (thread-safe); MB_EPARSE names the field on a bad build. */
int mb__gm_load(struct mb_error *err);

/* A preset by name (NULL when unknown or the data did not load); i-th preset for listings. */
const struct mb_gm_workload *mb__gm_workload(const char *name);
const struct mb_gm_workload *mb__gm_workload_at(size_t i);

/* The fitted voltage knee of the emulated GPUs (data/gpumodel.json fitted.knee). */
double mb__gm_knee(void);

/* The model's constants: MPS interference and time-slicing loss (for placements). */
double mb__gm_timeslice_loss(void);
double mb__gm_mps_interference(void);

/*
 * Fills g for a catalog model with the given static (idle) and maximum power: SM count from the
 * catalog, SM speed and bandwidth from the data (an A100 SM and the reference bandwidth when the
 * data does not list the model), the fitted voltage knee.
 */
void mb__gm_gpu_for(struct mb_gm_gpu *g, const struct mb_gpu_model *model, double static_w,
                    double max_w, double s_min);

/* A power-calibration GPU of the data (V100, RTX 6000) with its fitted static power and knee;
 * *kappa_resnet50 its fitted ResNet-50 draw. MB_ENOTFOUND when the data has none by that name. */
int mb__gm_calibration_gpu(const char *name, struct mb_gm_gpu *g, double *kappa_resnet50);

/* A job of w (NULL: unmodelled) at batch on n_sm SMs with bandwidth share beta, alone. */
void mb__gm_job_init(struct mb_gm_job *j, const struct mb_gm_workload *w, double batch, double n_sm,
                     double beta);

/* Memory a job of w at batch needs, in MiB. */
double mb__gm_mem_mib(const struct mb_gm_workload *w, double batch);

/*
 * The GPU with these jobs under a power limit (<= 0: max_w): the highest clock whose power fits,
 * each job's rate, duty and activity at that clock, and the power.
 */
void mb__gm_solve(const struct mb_gm_gpu *g, struct mb_gm_job *jobs, size_t n, double limit_w,
                  struct mb_gm_result *out);

/* The shipped measurements (count, then each). */
size_t mb__gm_n_measurements(void);
const struct mb_gm_measurement *mb__gm_measurement(size_t i);

#endif
