/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The planner: from measured profiles (throughput, power, memory of each workload on each MIG
 * partition size and on the whole GPU) and a job set, the MIG layout per GPU and the assignment of
 * jobs to instances that finish the work with the least energy (or the shortest makespan, or the
 * most throughput for continuous jobs), with the model's predictions and the study's baseline.
 *
 * The model (docs/plan.md): each instance runs its jobs one after another; a job's time is its work
 * over the profiled throughput of its workload on that partition size; the fleet's energy is
 * count x idle power x makespan plus each job's (power - idle power) x its time. A job may go to a
 * size only if its workload has a profile row for that size and its memory fits the size.
 *
 * Objects are created and destroyed by the caller; nothing here prints, and nothing is shared
 * between objects, so distinct objects may be used from distinct threads.
 */
#ifndef MIGBENCH_PLAN_H
#define MIGBENCH_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "migbench/catalog.h"
#include "migbench/layout.h"
#include "migbench/status.h"

#define MB_PLAN_NAME_MAX 64
#define MB_PLAN_UNIT_MAX 32
#define MB_PLAN_SOURCE_MAX 256
/* The partition name of a profile row measured on the whole GPU with MIG off. */
#define MB_PLAN_FULL "full"
/* Most jobs and GPUs a plan takes (bounded input). */
#define MB_PLAN_MAX_JOBS 100000
#define MB_PLAN_MAX_GPUS 4096
/* Most argv words a workload command in a jobs file may have. */
#define MB_PLAN_MAX_ARGV 64

/*
 * One profile row: a workload measured on one partition size of one GPU model. Unknown values are
 * NaN (idle_power_w, peak_mem_mib), never 0. `proxy` marks an MPS run with a matching thread
 * percentage standing in for a MIG size.
 */
struct mb_plan_profile {
    char workload[MB_PLAN_NAME_MAX];
    char gpu[MB_MODEL_NAME_MAX];         /* catalog model name after lookup */
    char partition[MB_PROFILE_NAME_MAX]; /* "3g.40gb" or "full" */
    double throughput;                   /* units per second, > 0 */
    char unit[MB_PLAN_UNIT_MAX];         /* "images", "tokens", ... */
    double power_w;                      /* mean whole-GPU power while it ran */
    double idle_power_w;                 /* the GPU's idle power, NaN if not measured */
    double peak_mem_mib;                 /* NaN if not measured */
    char source[MB_PLAN_SOURCE_MAX];     /* "profiles.csv:4 (runA/0)" */
    bool proxy;
    bool emulated; /* from an emulated device (results directories): modelled, not measured */
    /* The GPU power limit the row was measured under, in W; 0 or NaN: the default limit. Rows of
     * one workload, GPU and partition may differ only in it. */
    double power_limit_w;
};

/* A collection of profile rows. */
struct mb_plan_profiles;

/* Creates an empty collection, owned by the caller (mb_plan_profiles_destroy). */
int mb_plan_profiles_create(struct mb_plan_profiles **out, struct mb_error *err);

/* Releases a collection; NULL is a no-op. */
void mb_plan_profiles_destroy(struct mb_plan_profiles *p);

/*
 * Adds one row after checking it (positive throughput, finite power, a partition that cat's model
 * has or "full"; the gpu name is resolved with mb_catalog_find and stored as the model name).
 * MB_EINVAL with the field named in err; a second row for the same workload, GPU and partition is
 * MB_EINVAL naming both sources.
 */
int mb_plan_profiles_add(struct mb_plan_profiles *p, const struct mb_catalog *cat,
                         const struct mb_plan_profile *row, struct mb_error *err);

/*
 * Loads the profile CSV (docs/plan.md): a header naming the columns workload, gpu, partition,
 * throughput, unit, power_w, idle_power_w, peak_mem_mib, source, proxy in any order, then one row
 * per line. MB_EIO if unreadable; MB_EPARSE with "FILE:LINE: field 'x': ..." on bad input, in which
 * case p is unchanged.
 */
int mb_plan_profiles_load_csv(struct mb_plan_profiles *p, const struct mb_catalog *cat,
                              const char *path, struct mb_error *err);

/*
 * Loads profiles from a `migbench run` results directory (its <run>/<rep>/cell.json files): each
 * successful cell in which exactly one job ran (exclusive with one job -> "full"; mig with one
 * instance -> that profile; mps with one job -> the MIG size whose compute share matches its
 * thread percentage, as a proxy) gives one sample; samples of the same workload and partition are
 * averaged over repetitions. MB_EIO / MB_EPARSE naming the file; MB_ENOTFOUND if nothing usable.
 */
int mb_plan_profiles_load_results(struct mb_plan_profiles *p, const struct mb_catalog *cat,
                                  const char *dir, struct mb_error *err);

/* Number of rows, and the i-th row (in the order added); pointers stay valid until destroy. */
size_t mb_plan_profiles_count(const struct mb_plan_profiles *p);
const struct mb_plan_profile *mb_plan_profiles_get(const struct mb_plan_profiles *p, size_t i);

enum mb_plan_objective {
    MB_PLAN_ENERGY = 0, /* least energy to finish all work (with an optional makespan cap) */
    MB_PLAN_MAKESPAN,   /* shortest makespan (with an optional energy cap) */
    MB_PLAN_THROUGHPUT, /* most normalised throughput, for continuous jobs */
};

/* Returns "energy", "makespan" or "throughput". */
const char *mb_plan_objective_str(enum mb_plan_objective o);

/* One job of a job set. NaN for an absent deadline or memory figure. */
struct mb_plan_job {
    char name[MB_PLAN_NAME_MAX];
    char workload[MB_PLAN_NAME_MAX];
    double work;       /* units of the workload's unit; ignored when continuous */
    bool continuous;   /* runs forever: only the throughput objective applies */
    int priority;      /* higher runs earlier in its instance's queue; default 0 */
    double deadline_s; /* must finish within this many seconds of the start, or NaN */
    double memory_mib; /* peak memory the job needs, overriding the profile rows, or NaN */
    unsigned line;     /* line in the jobs file, 0 if not from a file */
};

/* A workload's command from a jobs file's `workloads:` section (for --emit-experiment). */
struct mb_plan_workload {
    char name[MB_PLAN_NAME_MAX];
    char unit[MB_PLAN_UNIT_MAX];
    size_t argc;
    char *argv[MB_PLAN_MAX_ARGV]; /* owned by the job set */
    size_t n_gpu_args;
    char *gpu_args[MB_PLAN_MAX_ARGV];
};

/* A parsed jobs file. All memory is owned by it and released by mb_plan_jobset_destroy. */
struct mb_plan_jobset {
    size_t n_jobs;
    struct mb_plan_job *jobs;
    size_t n_workloads;
    struct mb_plan_workload *workloads;
    char gpu[MB_MODEL_NAME_MAX]; /* as written, "" if absent */
    unsigned count;              /* 0 if absent */
    bool has_objective;
    enum mb_plan_objective objective;
    double makespan_cap_s; /* NaN if absent */
    double energy_cap_j;   /* NaN if absent */
};

/*
 * Parses a jobs file (docs/plan.md). *out is owned by the caller. MB_EIO if unreadable; MB_EPARSE
 * with "FILE:LINE: field 'jobs[2].work': ..." for anything malformed or unknown.
 */
int mb_plan_jobset_load(const char *path, struct mb_plan_jobset **out, struct mb_error *err);

/* Releases a job set; NULL is a no-op. */
void mb_plan_jobset_destroy(struct mb_plan_jobset *js);

/* Solver settings. Zero-initialise, then set what differs; caps are NaN when unused. */
struct mb_plan_options {
    enum mb_plan_objective objective;
    double makespan_cap_s; /* energy objective only; NaN or 0 for none */
    double energy_cap_j;   /* makespan objective only; NaN or 0 for none */
    unsigned count;        /* GPUs in the fleet, >= 1 */
    size_t exact_max_jobs; /* one GPU and at most this many jobs: exact search; 0 means 10 */
    bool heuristic;        /* force the heuristic even where exact search would run */
    bool no_full;          /* do not consider running a GPU with MIG off */
    double power_limit_w;  /* use the rows measured under this limit (W); 0 or NaN: default */
    /* The fleet search (heuristic plans): it improves the plan until this many seconds have
       passed since mb_plan_solve began (set-up included; a tenth is kept for building the plan)
       or its iteration budget is spent (0: 5 s); threads (0: one per online CPU); seed of
       its random choices. Deterministic for a given seed and thread count unless the time limit
       stops it (mb_plan.time_limited). */
    double time_limit_s;
    unsigned threads;
    uint64_t seed;
};

/* One job in a plan. */
struct mb_plan_slot {
    size_t job;        /* index into the job array given to mb_plan_solve */
    unsigned gpu;      /* 0 .. count-1 */
    unsigned instance; /* index into that GPU's layout items, or 0 when the GPU has MIG off */
    unsigned order;    /* position in the instance's queue, from 0 */
    size_t profile;    /* the profile row used (index into the profiles) */
    double start_s;    /* finite jobs: start time in the queue */
    double time_s;     /* finite jobs: work / throughput */
    double dynamic_j;  /* (power - idle) x time */
    double throughput; /* units/s on that partition (profile row) */
    double normalised; /* throughput / throughput on the whole GPU, NaN if no full row */
};

/* One GPU of a plan: MIG off (one queue on the whole GPU) or a layout, largest first. */
struct mb_plan_gpu {
    bool mig;
    struct mb_layout layout; /* only the instances that got a job */
    double power_limit_w;    /* this GPU's power limit (W); NaN: the default */
    /* The model's highest whole-GPU power on this GPU: idle plus the power above idle of every
       job running at the same moment (W); NaN for continuous jobs' plans it equals power_w's
       share. over_limit: it exceeds power_limit_w (the rows were each measured alone under the
       limit, so the limit would slow the jobs below the profiled rate). */
    double peak_power_w;
    bool over_limit;
};

/* A solved plan. Owned by the caller (mb_plan_destroy). Unknown figures are NaN. */
struct mb_plan {
    enum mb_plan_objective objective;
    bool exact;     /* proven optimal (exact search), else heuristic */
    unsigned count; /* GPUs */
    struct mb_plan_gpu *gpus;
    size_t n_slots; /* one per job, in job order */
    struct mb_plan_slot *slots;
    double idle_power_w; /* per GPU: mean of the idle_power_w the rows carry */
    size_t idle_rows;    /* how many rows that mean is over */
    /* finite jobs */
    double makespan_s;
    double energy_j; /* count x idle x makespan + dynamic */
    double idle_energy_j;
    double dynamic_energy_j;
    double bound_makespan_s; /* lower bounds (heuristic gap), NaN for exact plans */
    double bound_energy_j;
    double gap_pct; /* (objective - bound) / bound x 100 for heuristic plans, else 0 */
    /* baseline: each job alone on the whole GPU, one after another on each GPU (NaN if any job
       lacks a "full" row) */
    double base_makespan_s;
    double base_energy_j;
    /* continuous jobs */
    double system_throughput; /* sum of normalised throughputs */
    double power_w;           /* predicted fleet power */
    double bound_throughput;  /* upper bound for heuristic plans */
    size_t nodes;             /* search nodes visited (exact) or moves tried (heuristic) */
    double power_limit_w;     /* the power limit every GPU is set to (W); NaN: the default or
                                 different limits per GPU (gpus[].power_limit_w) */
    /* The fleet search (heuristic plans; 0 / false for exact ones). */
    double search_s;   /* seconds the search took */
    unsigned threads;  /* threads it used */
    bool time_limited; /* the time limit stopped it before its iteration budget */
    size_t over_limit; /* GPUs whose peak_power_w exceeds their power limit */
};

/*
 * Finds the best plan for jobs on opt->count GPUs of `model` under the objective. Exact for one
 * GPU with at most opt->exact_max_jobs jobs (branch and bound over the maximal layouts of the
 * profiled sizes and all assignments); otherwise a heuristic with the bound and gap recorded.
 * Errors: MB_EINVAL for bad options or a job with no usable profile (its name, and why, in err);
 * MB_EINFEASIBLE when no plan meets the caps or deadlines, or a job fits no profiled partition
 * (its memory).
 */
int mb_plan_solve(const struct mb_gpu_model *model, const struct mb_plan_profiles *profiles,
                  const struct mb_plan_job *jobs, size_t n_jobs, const struct mb_plan_options *opt,
                  struct mb_plan **out, struct mb_error *err);

/*
 * The energy vs makespan front (finite jobs): repeated energy-optimal plans, each with a makespan
 * cap just below the previous plan's makespan. Up to cap plans into out[] (each owned by the
 * caller), their number in *n, fastest last. Exact where mb_plan_solve would be exact.
 */
int mb_plan_pareto(const struct mb_gpu_model *model, const struct mb_plan_profiles *profiles,
                   const struct mb_plan_job *jobs, size_t n_jobs, const struct mb_plan_options *opt,
                   struct mb_plan **out, size_t cap, size_t *n, struct mb_error *err);

/* Most candidate power limits a --power-limits list may name (`all` takes every one). */
#define MB_PLAN_MAX_CAPS 16

/* The outcome of one candidate power limit in mb_plan_solve_caps. */
struct mb_plan_cap_result {
    double power_limit_w; /* the candidate (W); NaN: the default limit */
    int status;           /* MB_OK, MB_EINFEASIBLE, MB_EINVAL (no rows for it), ... */
    double energy_j, makespan_s, system_throughput; /* of its best plan; NaN when none */
    bool exact;
};

/*
 * Chooses the power limits together with the layout and the assignment: solves once per candidate
 * limit caps_w[i] (W; 0 or NaN: the default), each with the profile rows measured under that
 * limit, and keeps the plan that is best under opt->objective (least energy, shortest makespan or
 * most throughput; ties go to the earlier candidate). On a fleet of finite jobs it then gives each
 * GPU its own limit: a local search from each of those plans whose moves change one GPU's limit
 * (its jobs timed on that limit's rows; a job without a row there moves off the GPU first) and
 * move or trade jobs; *out is its plan when that beats the best shared limit, which it never
 * loses to (then gpus[].power_limit_w differ and plan->power_limit_w is NaN), and its bounds hold
 * for any choice of one candidate per GPU. Deterministic for a given seed and thread count unless
 * the time limit stops it. results (may be NULL) gets n_caps entries, one per shared candidate.
 * When no candidate yields a plan: the most telling status (bad input over MB_EINFEASIBLE) and a
 * message that names every candidate with its reason, candidates with the same reason grouped.
 */
int mb_plan_solve_caps(const struct mb_gpu_model *model, const struct mb_plan_profiles *profiles,
                       const struct mb_plan_job *jobs, size_t n_jobs,
                       const struct mb_plan_options *opt, const double *caps_w, size_t n_caps,
                       struct mb_plan_cap_result *results, struct mb_plan **out,
                       struct mb_error *err);

/* Whether the plan's GPUs were given different power limits (mb_plan_solve_caps chose one per
 * GPU); a GPU without a limit (NaN, or not above 0) is on the default. */
bool mb_plan_limits_differ(const struct mb_plan *plan);

/* Releases a plan; NULL is a no-op. */
void mb_plan_destroy(struct mb_plan *plan);

/*
 * Test support: the optimum by plain enumeration of every maximal layout and every assignment,
 * without bounds or symmetry breaking (exponential: a handful of jobs only). Same contract as
 * mb_plan_solve with count 1.
 */
int mb_plan_solve_brute(const struct mb_gpu_model *model, const struct mb_plan_profiles *profiles,
                        const struct mb_plan_job *jobs, size_t n_jobs,
                        const struct mb_plan_options *opt, struct mb_plan **out,
                        struct mb_error *err);

#endif
