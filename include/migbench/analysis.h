/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Analysis of `migbench run` results: per-job throughput with confidence intervals, throughput
 * normalised to the exclusive baseline, energy per unit of work, per-run system throughput and
 * the study's comparison against running the jobs one after another, energy attribution per job
 * (each method summing exactly to the measured whole-GPU energy) and measurement quality.
 *
 * Everything here is plain data: the report command and the planner read the structures
 * directly. A value that was not measured or cannot be computed has its `valid` flag cleared;
 * it is never stored as 0.
 */
#ifndef MIGBENCH_ANALYSIS_H
#define MIGBENCH_ANALYSIS_H

#include <stddef.h>
#include <stdint.h>

#include "migbench/status.h"

#define MB_AN_NAME_MAX 128
#define MB_AN_TEXT_MAX 256
#define MB_AN_PATH_MAX 1024
#define MB_AN_JOBS_MAX 16
#define MB_AN_NOTES_MAX 64
#define MB_AN_TIMELINE_MAX 600
#define MB_AN_ORIGINS_MAX 16   /* results directories one merged report takes */
#define MB_AN_WORKLOADS_MAX 64 /* workload definitions compared when merging */

/* An optional measured value: `v` is meaningful only when `valid` is non-zero. */
struct mb_opt {
    int valid;
    double v;
};

/*
 * A mean over repetitions with its 95% confidence interval half-width (Student t with the
 * degrees of freedom in `df`). `valid` is 0 when no repetition had the value; `ci_valid` is 0
 * when fewer than two did.
 */
struct mb_estimate {
    int valid;
    double mean;
    int ci_valid;
    double ci95;
    size_t n;
    size_t df;
};

/* Energy attribution methods; every available method's per-job parts sum to the cell energy. */
enum mb_attr_method {
    MB_ATTR_EQUAL = 0,      /* the energy split equally among the jobs */
    MB_ATTR_COMPUTE_SHARE,  /* in proportion to MIG compute slices or MPS thread percentages */
    MB_ATTR_ACTIVITY,       /* in proportion to measured per-instance activity (telemetry) */
    MB_ATTR_STATIC_DYNAMIC, /* idle power x time split equally, the rest by compute share */
    MB_ATTR_INTERVAL,       /* exclusive runs: the energy measured over each job's own interval */
    MB_ATTR_COUNT
};

/* Returns the stable name of method m ("equal", "compute-share", ...); never NULL. */
const char *mb_analysis_method_name(int m);

/* One attribution of one cell's (or run's) energy, in integer millijoules. */
struct mb_attribution {
    int available;
    char note[MB_AN_TEXT_MAX]; /* how it was computed, or why it is unavailable */
    int64_t total_mj;
    int64_t job_mj[MB_AN_JOBS_MAX];
};

/* One job as recorded in one cell. */
struct mb_an_cell_job {
    char name[MB_AN_NAME_MAX];
    struct mb_opt throughput;      /* units per second in the measurement window */
    struct mb_opt throughput_ci95; /* the cell's own 95% half-width (batch means), as recorded */
    struct mb_opt steps;           /* as recorded: the last reported step count */
    struct mb_opt units;           /* as recorded: cumulative units reported */
    struct mb_opt work;            /* units of work done in the job's measurement window */
    const char *work_basis;        /* how `work` was derived (static string) */
    int steps_unit;                /* throughput is in steps/s */
    int has_times;                 /* spawned..reaped */
    int64_t started_ns;
    int64_t ended_ns;
    int has_window; /* the job's own measurement window (exclusive mode) */
    int64_t window_start_ns;
    int64_t window_end_ns;
    struct mb_opt window_s;
    struct mb_opt activity; /* summed per-instance activity over the window, from telemetry */
    int gi_id;              /* the job's MIG GPU instance id, -1 when none is known */
    struct mb_opt energy_j; /* the energy attributed by the run's default method */
};

/* One point of a cell's power timeline; `t_s` is relative to the cell's first sample. */
struct mb_an_sample {
    double t_s;
    double power_w;
};

/* One cell: a run x one repetition. */
struct mb_an_cell {
    int rep;
    int ok;                       /* status "ok" */
    char failure[MB_AN_TEXT_MAX]; /* "job: reason" for failed cells */
    char path[MB_AN_PATH_MAX];    /* the cell.json */
    struct mb_opt window_s;
    int64_t window_start_ns; /* 0 when unknown */
    int64_t window_end_ns;
    int64_t t0_ns;
    struct mb_opt counter_j, integrated_j, gap_pct, idle_power_w, mean_power_w, peak_power_w;
    struct mb_opt samples, missed_updates, reconfigure_s;
    char energy_flag[MB_AN_NAME_MAX];
    char refused_reason[MB_AN_TEXT_MAX];
    int has_energy;            /* counter (preferred) or integrated energy exists */
    int64_t energy_mj;         /* the measured whole-GPU energy of the window */
    const char *energy_source; /* "counter" or "integrated" (static strings) */
    size_t njobs;
    struct mb_an_cell_job jobs[MB_AN_JOBS_MAX];
    struct mb_attribution attr[MB_ATTR_COUNT];
    size_t ntimeline;
    struct mb_an_sample *timeline;      /* owned; at most MB_AN_TIMELINE_MAX points */
    double timeline_origin_s;           /* monotonic time of timeline point 0, seconds */
    char timeline_note[MB_AN_TEXT_MAX]; /* why there is no timeline, when there is none */
    int activity_gi; /* activity is per-GI SM utilisation (gi<id>_sm_util_pct), not a share */
    /* The power-limit axis (cell.json "power_limit"; "" and invalid without it). */
    char power_limit[32];          /* as requested: "default", "80%", "250W" */
    char base_run[MB_AN_NAME_MAX]; /* the run as written, before expansion per limit */
    struct mb_opt enforced_w;      /* the limit in force during the cell */
    int throttle_valid;            /* throttle reasons were read in the window */
    uint64_t throttle_reasons;     /* every reason bit seen in the window */
    int origin; /* index into the experiment's origins (merged reports); 0 otherwise */
    char gpu_uuid[MB_AN_NAME_MAX]; /* the GPU the cell ran on, "" when not recorded */
    /* outside_load.loaded: 1 a window was taken under outside load, 0 quiet, -1 not judged */
    int outside_load;
    char outside_load_why[MB_AN_TEXT_MAX]; /* its figures over their thresholds */
};

/* One job of a run, aggregated over the run's successful repetitions. */
struct mb_an_job {
    char name[MB_AN_NAME_MAX];
    char workload[MB_AN_NAME_MAX];
    char unit[MB_AN_NAME_MAX];       /* "images/s" style unit of throughput */
    char instance[MB_AN_NAME_MAX];   /* MIG profile, or "" */
    struct mb_opt thread_percentage; /* MPS */
    struct mb_opt cores;             /* CPU cores it could use (= its OMP_NUM_THREADS) */
    int compute_weight;              /* MIG slices or MPS percentage; 0 when not defined */
    struct mb_estimate throughput;
    struct mb_estimate normalised; /* throughput / the same workload's exclusive throughput */
    struct mb_estimate s_per_step;
    struct mb_estimate j_per_unit;  /* attributed energy (default_method) / units of work */
    int64_t attr_mj[MB_ATTR_COUNT]; /* summed over the cells with energy */
    size_t argc;                    /* the command as the run's cell recorded it (jobs[].argv) */
    char **argv;                    /* owned, argc strings; NULL when the cell recorded none */
};

/* One run: a sharing mode and a job set, over its repetitions. */
struct mb_an_run {
    char name[MB_AN_NAME_MAX];
    char mode[MB_AN_NAME_MAX];
    char layout[MB_AN_TEXT_MAX]; /* "4g.40gb+2g.20gb+1g.10gb", "57/29/14%" or "" */
    size_t ncells, nok, nfailed, nenergy;
    struct mb_an_cell *cells; /* owned, sorted by repetition */
    size_t njobs;
    struct mb_an_job jobs[MB_AN_JOBS_MAX];
    int default_method;          /* the method behind j_per_unit */
    int has_baseline;            /* an exclusive run with every job of this run exists */
    struct mb_estimate energy_j; /* whole-GPU energy per cell */
    struct mb_estimate window_s;
    struct mb_estimate power_w; /* energy / window */
    struct mb_estimate stp;     /* system throughput: sum of normalised throughputs */
    struct mb_estimate antt;    /* average normalised turnaround time: mean of 1/normalised */
    struct mb_estimate
        energy_ratio; /* energy / energy of the same work done one job after another */
    struct mb_estimate energy_saving;   /* 1 - energy_ratio */
    struct mb_estimate throughput_gain; /* stp - 1: extra work per unit time vs one after another */
    struct mb_attribution attr[MB_ATTR_COUNT]; /* summed over cells with energy */
    int64_t static_mj, dynamic_mj; /* valid when attr[MB_ATTR_STATIC_DYNAMIC].available */
    char power_limit[32];          /* the power-limit axis: the run's limit, "" without */
    char base_run[MB_AN_NAME_MAX]; /* the run as written ("" without the axis) */
};

/* One results directory (one experiment). */
struct mb_an_experiment {
    char dir[MB_AN_PATH_MAX];
    char name[MB_AN_NAME_MAX];
    char sha[MB_AN_NAME_MAX];
    char migbench_version[MB_AN_NAME_MAX];
    char backend[MB_AN_NAME_MAX];
    char device_name[MB_AN_NAME_MAX];
    char model[MB_AN_NAME_MAX];
    char uuid[MB_AN_NAME_MAX];
    char driver_version[MB_AN_NAME_MAX];
    char sensor[MB_AN_TEXT_MAX]; /* the cell's device.sensor object as "key=value, ..." */
    int emulated;                /* device.emulated: numbers are modelled, not measured */
    int cpu_device; /* the host CPU was the shared device (device.gpu false), not a GPU */
    struct mb_opt power_limit_w;
    size_t nruns;
    struct mb_an_run *runs; /* owned; exclusive first, then by mode and name */
    size_t cells_total, cells_failed, cells_no_energy, cells_gap_flagged;
    size_t cells_unfinished;   /* started in the journal, no cell.json */
    size_t cells_outside_load; /* ok cells with a window taken under outside load */
    double missed_updates;
    size_t nnotes;
    char notes[MB_AN_NOTES_MAX][MB_AN_TEXT_MAX]; /* measurement-quality remarks, in order */
    /* Merged reports (mb_analysis_load_merged): the results directories, in the order given. */
    size_t norigins; /* 1 for an ordinary experiment */
    char origins[MB_AN_ORIGINS_MAX][MB_AN_PATH_MAX];
    char baseline_run[MB_AN_NAME_MAX]; /* the only run normalisation uses; "" any exclusive run */
    /* Workload definitions seen in the cells: name and a hash of the job's argv (program and
     * argument names without directories), 0 when a cell did not record one. */
    size_t nworkloads;
    char workload_names[MB_AN_WORKLOADS_MAX][MB_AN_NAME_MAX];
    uint64_t workload_sig[MB_AN_WORKLOADS_MAX];
};

/* The analysis of one or more results directories. Owned by the caller; free with destroy. */
struct mb_analysis {
    size_t nexp;
    struct mb_an_experiment *exps;
};

/*
 * Loads and analyses the results directories dirs[0..ndirs-1] into *out. A directory is either
 * one experiment (it holds journal.jsonl or <run>/<rep>/cell.json files) or a folder of
 * experiments. Unknown JSON keys are ignored, missing ones leave values invalid.
 * Errors: MB_ENOTFOUND (a directory is missing or holds no results), MB_EPARSE (a cell.json is
 * not valid JSON or lacks its run; the message names the file), MB_EIO, MB_ENOMEM.
 */
int mb_analysis_load(struct mb_analysis **out, const char *const *dirs, size_t ndirs,
                     struct mb_error *err);

/* How mb_analysis_load_merged combines results directories. */
struct mb_analysis_merge {
    int force;            /* merge different GPU models, drivers or workload definitions (noted) */
    const char *baseline; /* "DIR:RUN": normalise to this exclusive run only; NULL: any */
};

/*
 * Loads results directories dirs[0..ndirs-1] (2..MB_AN_ORIGINS_MAX, each one experiment, such as
 * the MIG-off and MIG-on phases run by hand) as ONE experiment in (*out)->exps[0]: runs with the
 * same name pool their cells, each cell keeps its origin, and the notes say which cells came
 * from where. Directories of different GPU models, drivers or workload definitions (the same
 * workload name with another command) are refused with MB_EINVAL naming the difference, unless
 * opts->force, which the notes then state. A baseline that names no given directory or no
 * exclusive run there: MB_EINVAL. Other errors as mb_analysis_load.
 */
int mb_analysis_load_merged(struct mb_analysis **out, const char *const *dirs, size_t ndirs,
                            const struct mb_analysis_merge *opts, struct mb_error *err);

/* Frees an analysis; NULL is a no-op. */
void mb_analysis_destroy(struct mb_analysis *a);

/*
 * Splits total_mj over n parts in proportion to the non-negative integer weights (all equal
 * when weights is NULL): each part but the last is rounded down, the last gets the remainder,
 * so the parts sum exactly to total_mj. Returns MB_EINVAL when n is 0 or n > MB_AN_JOBS_MAX or
 * the weights sum to 0.
 */
int mb_analysis_split(int64_t total_mj, const int64_t *weights, size_t n, int64_t *parts);

#endif
