/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the runner's files share (library-private): the cell being run, its jobs and MIG
 * instances, and the helpers each part calls. runner.c runs a cell (telemetry, jobs, phases),
 * runner_modes.c prepares and tears down the sharing mode (MIG through mig.c, MPS),
 * runner_record.c writes cell.json, runner_resume.c holds the preflight and the resume cleanup.
 */
#ifndef MIGBENCH_RUNNER_INTERNAL_H
#define MIGBENCH_RUNNER_INTERNAL_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "migbench/layout.h"
#include "migbench/meter.h"
#include "migbench/mig.h"
#include "migbench/proc.h"
#include "migbench/progress.h"
#include "migbench/runner.h"
#include "migbench/hostload.h"
#include "results/cell_record.h"
#include "results/journal_events.h"
#include "run/runner_power.h"

#define NS 1000000000LL
#define REASON_MAX 512
#define TAIL_BYTES 4096
#define TAIL_LINES 20
#define ENV_MAX 8
#define MPS_CONTROL "nvidia-cuda-mps-control"
/* Energy is refused for windows shorter than this or than two sensor updates
 * (energy-measurement.md section 8, point 2); the meter applies the rule. */
#define MIN_ENERGY_WINDOW_NS (5 * NS)

/* One cool-down: how long it took and why it ended (docs/results.md, "cooldown"). */
struct cooldown {
    bool done; /* one happened; else every field is null in cell.json */
    double seconds;
    const char *ended;     /* "near_idle", "cap" or "no_power_reading" */
    const char *reference; /* "idle_baseline", "lowest_seen"; NULL: none known */
    double reference_w;
    bool last_ok; /* the last power reading taken */
    double last_w;
};

struct job {
    const struct mb_exp_workload *w;
    const char *name;
    size_t index; /* in the run */
    char **argv;
    char *env[ENV_MAX + 1];
    size_t n_env;
    struct mb_proc *proc;
    struct mb_progress *prog;
    bool regex_mode;
    uint64_t records_seen;
    int64_t started_ns, ended_ns, last_progress_ns;
    int64_t win_start_ns, win_end_ns; /* this job's window; 0 when none */
    uint64_t win_start_step;
    bool window_closed; /* progress after win_end_ns is ignored */
    bool stopping;      /* we sent SIGTERM */
    bool completed;     /* duration: completion, and it exited 0 by itself */
    bool failed;
    char fail[REASON_MAX];
    struct mb_cpuset cpus;
    bool has_cpus;
    unsigned cores; /* CPUs it may use (its set, else all online); OMP_NUM_THREADS; 0 unknown */
    int instance;   /* index into cell.inst, -1 none */
    int thread_pct; /* -1 none */
    struct cooldown cool; /* exclusive: the cool-down before this job (not the first) */
};

struct inst {
    char profile[MB_PROFILE_NAME_MAX];   /* the model's exact name, "3g.71gb" */
    char requested[MB_PROFILE_NAME_MAX]; /* as the layout spells it, "3g" */
    struct mb_placement placement;
    unsigned gi_id, ci_id;
    bool gi_made, ci_made;
    char uuid[MB_UUID_MAX];
};

struct cell {
    const struct mb_runner_opts *o;
    const struct mb_exp_run *run;
    unsigned rep;
    char dir[1100];
    struct mb_error *err;
    int64_t t0_ns;
    struct mb_device_info info;
    bool info_ok;
    struct mb_sensor_info sensor;
    bool sensor_ok;
    /* telemetry */
    struct mb_meter *meter;
    struct mb_energy energy[MB_EXP_MAX_JOBS]; /* one per window (exclusive: per job) */
    size_t n_energy;
    bool meter_failed;
    char meter_why[256];
    /* outside load (runner_load.c): the snapshot at the open window, one result per window */
    struct mb_hostload_snap load_at;
    struct mb_hostload load[MB_EXP_MAX_JOBS];
    size_t n_load;
    /* mode */
    struct inst inst[MB_EXP_MAX_JOBS];
    size_t n_inst;
    struct mb_mig_ledger *ledger; /* what migbench made on this GPU (mig.h); NULL before MIG */
    double reconfigure_s;
    bool mps_up;
    bool mps_emulated; /* an emulated GPU without the control program: no daemon */
    char mps_pipe[1100], mps_log[1100];
    unsigned pct[MB_EXP_MAX_JOBS];
    /* jobs */
    struct job jobs[MB_EXP_MAX_JOBS];
    size_t n_jobs;
    /* windows, summed over phases */
    int64_t win_first_ns, win_last_ns;
    double idle_power_w;
    bool idle_ok;
    bool failed;
    char fail[REASON_MAX];
    int fail_job; /* -1: the mode */
    int64_t next_tick_ns;
    struct cooldown cool;     /* before the cell */
    struct mb__cell_power pw; /* the run's power limit */
};

/* runner_events.c: the helpers every runner file calls (and which call none of them). */
/* Keeps the lowest power reading of the experiment (the cool-down's fallback reference). */
void mb__rn_power_seen(struct cell *c, double w);
/* Reports a runner event (note, progress) to the caller's on_event; keeps the lowest power. */
void mb__rn_emit(struct cell *c, enum mb_runner_event_kind kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Fails the cell (the first failure is the cause; later ones are ignored). job -1: the mode. */
void mb__rn_cell_fail(struct cell *c, int job, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* A typed journal event of the cell (run, rep, its Slurm job, its GPU) to fill and encode, and
 * an encoded event's append (o is consumed; c->err set). */
struct mb_jev mb__rn_jev(enum mb_jev_kind kind, const struct cell *c);
int mb__rn_jappend(struct cell *c, cJSON *o);

/* A cool-down as cell.json and the journal's cooldown event record it (null when none). */
void mb__rn_fill_cooldown(struct mb_cell_cooldown *out, const struct cooldown *cd);

/* Outside load (runner_load.c): a /proc snapshot as a window opens; the window's figures when it
 * closes (js: the phase's jobs), with a note when it was loaded; cell.json's "outside_load". */
void mb__rn_load_begin(struct cell *c);
void mb__rn_load_end(struct cell *c, struct job **js, size_t n);
void mb__rn_load_fill(const struct cell *c, struct mb_cell_load *out);
void mb__rn_job_log_path(const struct cell *c, const struct job *j, char *out, size_t cap);

/* runner_modes.c */
int mb__rn_mps_quit(const char *pipe_dir, const char *log_dir, char *why, size_t cap);
int mb__rn_plan_mig(struct mb_device *dev, const struct mb_gpu_model *m, const struct mb_exp_run *r,
                    struct mb_layout_item placed[MB_EXP_MAX_JOBS], struct mb_error *err);
bool mb__rn_uses_mig(const struct mb_exp_run *r);
bool mb__rn_on_path(const char *name);
int mb__rn_prepare_mig(struct cell *c);
int mb__rn_teardown_mig(struct cell *c);
int mb__rn_prepare_mps(struct cell *c);
int mb__rn_teardown_mps(struct cell *c);

/* runner_record.c: the cell's cell.json document. */
cJSON *mb__rn_cell_json(struct cell *c, double started_unix, double offset_s);

#endif
