/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A plan's derived figures (slices, energy per job, the shared unit), the plan JSON file that
 * `migbench plan --json` writes and `--verify` reads back, and the verification of a plan's
 * predictions against measured results (read through analysis.h, the one reader of cell.json).
 * Nothing here prints or exits: writers take a stream the caller opened.
 */
#ifndef MIGBENCH_PLAN_IO_H
#define MIGBENCH_PLAN_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "migbench/analysis.h"
#include "migbench/catalog.h"
#include "migbench/plan.h"
#include "migbench/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What a plan was made from: the model, the profile rows its slots index, the job set. */
struct mb_plan_context {
    const struct mb_gpu_model *model;
    const struct mb_plan_profiles *profiles;
    const struct mb_plan_jobset *js;
    const char *sources; /* "profiles.csv, results/x": recorded as the plan's "profiles" */
};

/* The profile row slot s uses. */
const struct mb_plan_profile *mb_plan_slot_row(const struct mb_plan_context *c,
                                               const struct mb_plan_slot *s);

/* Compute slices of slot s's partition: its MIG profile's, or the whole GPU's with MIG off. */
unsigned mb_plan_slot_slices(const struct mb_plan_context *c, const struct mb_plan *p,
                             const struct mb_plan_slot *s);

/* Slot s's energy: its dynamic energy plus the idle power of its share of the GPU's slices. */
double mb_plan_slot_energy(const struct mb_plan_context *c, const struct mb_plan *p,
                           const struct mb_plan_slot *s);

/* The unit every slot's profile row shares, or NULL when they differ. */
const char *mb_plan_common_unit(const struct mb_plan_context *c, const struct mb_plan *p);

/* The job set's total work (finite jobs), in its units. */
double mb_plan_total_work(const struct mb_plan_jobset *js);

/* (base - x) / base x 100; NaN when either is not finite or base is 0. */
double mb_plan_pct_less(double base, double x);

/*
 * Writes plan p as the plan JSON (schema 1, one object, a trailing newline) to out. Unknown or
 * unmeasured figures are null. Returns MB_OK, MB_ENOMEM or MB_EIO (a stream error).
 */
int mb_plan_json_write(FILE *out, const struct mb_plan_context *c, const struct mb_plan *p);

/* Writes an energy vs makespan front as {"pareto": [plan, ...]}; returns as mb_plan_json_write. */
int mb_plan_json_write_pareto(FILE *out, const struct mb_plan_context *c,
                              struct mb_plan *const *plans, size_t n);

/*
 * Writes a mig-parted configuration ("version: v1", config "migbench-plan") with one entry per
 * group of GPUs that share a layout; `migbench mig apply` accepts it. Returns MB_OK, MB_ENOMEM
 * or MB_EIO.
 */
int mb_plan_write_mig_parted(FILE *f, const struct mb_plan_context *c, const struct mb_plan *p);

/*
 * The first workload of the job set with no command: none under the jobs file's `workloads:`
 * and none recorded in the results an (NULL for none); NULL when every workload has one.
 */
const char *mb_plan_uncommanded_workload(const struct mb_plan_context *c,
                                         const struct mb_analysis *an);

/*
 * Writes an experiment (YAML, `migbench run`) that runs finite plan p: one workload per job,
 * named after it, and one run per GPU and queue position (run gG-rK holds the K-th job of every
 * instance queue of GPU G). Commands come from the jobs file, else from the results an. Returns
 * MB_OK, MB_EINVAL (a continuous plan) or MB_EIO.
 */
int mb_plan_write_experiment(FILE *f, const struct mb_plan_context *c, const struct mb_plan *p,
                             const struct mb_analysis *an);

/* One job of a plan JSON: what --verify compares. Figures the file leaves null are NaN. */
struct mb_plan_record_job {
    char name[MB_PLAN_NAME_MAX];
    char workload[MB_PLAN_NAME_MAX];
    double work; /* NaN for continuous jobs */
    double gpu, instance, order;
    double throughput; /* predicted units/s */
    double time_s;     /* predicted */
    double dynamic_j;  /* predicted */
};

/* A plan JSON file as read back. Free with mb_plan_record_free. */
struct mb_plan_record {
    char gpu_model[MB_MODEL_NAME_MAX];
    double count;
    double idle_power_w; /* NaN when null */
    double makespan_s;   /* predicted; NaN for continuous job sets */
    double energy_j;     /* predicted; NaN for continuous job sets */
    size_t njobs;
    struct mb_plan_record_job *jobs; /* owned */
};

/*
 * Reads a plan JSON from text (len bytes; source names it in messages) into *out. Errors:
 * MB_EPARSE ("SOURCE: not a plan written by 'migbench plan --json'", or the JSON error),
 * MB_ENOMEM. On error *out is left empty.
 */
int mb_plan_record_parse(const char *text, size_t len, const char *source,
                         struct mb_plan_record *out, struct mb_error *err);

/* As mb_plan_record_parse, from the file at path (MB_ENOTFOUND, MB_EIO as the file says). */
int mb_plan_record_read(const char *path, struct mb_plan_record *out, struct mb_error *err);

void mb_plan_record_free(struct mb_plan_record *r);

/* One plan job, predicted against measured. Unmeasured figures are NaN. */
struct mb_plan_check_job {
    char name[MB_PLAN_NAME_MAX];
    double predicted_throughput, measured_throughput;
    double predicted_time_s, measured_time_s;
    double predicted_dynamic_j, measured_dynamic_j;
    size_t cells; /* successful cells that ran the job */
};

/* A plan's predictions against measured results. Free with mb_plan_check_free. */
struct mb_plan_check {
    size_t cells;        /* successful cells read */
    double idle_power_w; /* measured (idle_measured) or the plan's */
    bool idle_measured;
    size_t njobs;
    struct mb_plan_check_job *jobs; /* owned, in the plan's job order */
    bool complete;                  /* every job has a measured time and dynamic energy */
    double predicted_makespan_s, measured_makespan_s; /* measured: NaN unless complete */
    double predicted_energy_j, measured_energy_j;
};

/*
 * Checks plan (read by mb_plan_record_*) against the analysed results a: each plan job's
 * measured throughput is the mean over the successful cells that ran a job or workload of its
 * name; each cell's power above idle is split among its jobs by compute slices of model (one job
 * at a time in exclusive cells); each instance queue is replayed with the measured times.
 * Errors: MB_EINVAL (a continuous plan: "--verify checks finite job sets only"), MB_ENOTFOUND (no
 * successful cell), MB_ENOMEM.
 */
int mb_plan_check(const struct mb_plan_record *plan, const struct mb_gpu_model *model,
                  const struct mb_analysis *a, struct mb_plan_check *out, struct mb_error *err);

void mb_plan_check_free(struct mb_plan_check *c);

/* Writes the check as JSON (the --verify --json format). Returns MB_OK, MB_ENOMEM or MB_EIO. */
int mb_plan_check_json_write(FILE *out, const struct mb_plan_check *c, const char *plan_path,
                             const char *results_path);

#ifdef __cplusplus
}
#endif

#endif
