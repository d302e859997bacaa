/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cell.json as a typed record (library-private): the one encoder and the one decoder of the
 * document (docs/results.md). The runner fills a struct mb_cell_record and encodes it; readers
 * decode one. A value that was not measured is {0} in a struct mb_opt and null in the file;
 * a string that is "" is null in the file.
 */
#ifndef MIGBENCH_CELL_RECORD_H
#define MIGBENCH_CELL_RECORD_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "migbench/hostload.h"
#include "migbench/analysis.h" /* struct mb_opt */
#include "migbench/catalog.h"
#include "migbench/device.h"
#include "migbench/experiment.h"
#include "migbench/progress.h"

#define MB_CELL_REASON_MAX 512
#define MB_CELL_TAIL_MAX 4097
#define MB_CELL_PATH_MAX 1100
#define MB_CELL_ARGV_MAX 4096 /* decoding: argv entries kept */
#define MB_CELL_ENV_MAX 16    /* a job's environment entries, the progress variable included */

/* A cool-down: every figure null when none happened. */
struct mb_cell_cooldown {
    struct mb_opt seconds;
    char ended[32];     /* "near_idle", "cap", "no_power_reading" */
    char reference[32]; /* "idle_baseline", "lowest_seen" */
    struct mb_opt reference_w, power_w;
};

/* The Slurm job a cell ran in ("slurm"); present is false outside Slurm. */
struct mb_cell_slurm {
    bool present;
    char job[160]; /* "<array job>_<task>" or the job id */
    char job_id[64], array_job_id[64], array_task_id[64], node[128];
};

struct mb_cell_instance {
    char profile[MB_PROFILE_NAME_MAX];   /* the model's exact name */
    char requested[MB_PROFILE_NAME_MAX]; /* as the layout spells it */
    struct mb_placement placement;
    unsigned gi_id, ci_id;
    char uuid[MB_UUID_MAX];
};

struct mb_cell_device {
    char backend[32];
    bool emulated;
    bool has_gpu; /* "gpu" recorded (the runner always does; cells from before it did not) */
    bool gpu;     /* the device's MB_CAP_GPU bit: false for the host's CPU */
    char name[MB_DEVICE_NAME_MAX], model[MB_MODEL_NAME_MAX], uuid[MB_UUID_MAX];
    char driver_version[MB_VERSION_MAX], nvml_version[MB_VERSION_MAX];
    struct mb_opt power_limit_mw;
    bool has_sensor; /* else "sensor": null */
    struct mb_sensor_info sensor;
    bool has_mig; /* else "mig": null */
    int mig_mode;
    size_t n_inst;
    struct mb_cell_instance inst[MB_EXP_MAX_JOBS];
};

/*
 * What a decoded file said that a record the encoder writes never varies in: filled by the
 * decoder, ignored by the encoder. Readers need it for older, hand-written or damaged cells.
 */
struct mb_cell_seen {
    char status[16];             /* "status" as written; "" absent */
    bool rep;                    /* "rep" is a whole number in 0..INT_MAX */
    size_t n_jobs;               /* the entries of the "jobs" list (n_jobs keeps the first) */
    char sensor[256];            /* device.sensor as "key=value, ..." in the file's order */
    bool samples;                /* energy.samples is a number */
    bool gi_id[MB_EXP_MAX_JOBS]; /* device.mig.instances[i].gi_id is in its field's range */
};

/* "power_limit": the power-limit axis; null when the run has none (active false). */
struct mb_cell_power {
    bool active;
    char requested[MB_EXP_POWER_TEXT_MAX];
    char base_run[MB_EXP_NAME_MAX];
    struct mb_opt requested_mw, enforced_mw;
    bool set_by_migbench;
    bool throttle_valid; /* the throttle reasons seen over the windows */
    uint64_t throttle_reasons;
};

/* "energy": the cell's windows summed. */
struct mb_cell_energy {
    struct mb_opt counter_j, integrated_j, gap_pct;
    char flag[16];   /* "ok", "gap", "too_short", "no_sensor", "device_lost" */
    char method[16]; /* "counter", "power_integral"; "" (null) when refused */
    char refused_reason[MB_CELL_REASON_MAX];
    char note[MB_CELL_REASON_MAX]; /* why the other figure is missing, when one is given */
    struct mb_opt idle_power_w, mean_power_w, peak_power_w;
    double samples;
    struct mb_opt missed_updates;
};

/* "outside_load": the cell's verdict and worst figures over its windows, and each window's
 * (base/hostload.h; "loaded" is null when !verdict_ok). present is false in older cells. */
struct mb_cell_load {
    bool present;
    struct mb_hostload all;
    char source[MB_CELL_PATH_MAX]; /* the /proc root read */
    size_t n_windows;
    struct mb_hostload windows[MB_EXP_MAX_JOBS];
};

struct mb_cell_window {
    struct mb_opt start_ns, end_ns, seconds;
};

struct mb_cell_job {
    char name[MB_EXP_NAME_MAX], workload[MB_EXP_NAME_MAX], unit[MB_EXP_NAME_MAX];
    char **argv; /* owned (mb_cell_record_free); argc entries */
    size_t argc;
    char *env[MB_CELL_ENV_MAX]; /* owned "NAME=value", in order; n_env entries */
    size_t n_env;
    bool has_instance; /* else "instance": null */
    char inst_profile[MB_PROFILE_NAME_MAX], inst_requested[MB_PROFILE_NAME_MAX];
    char inst_uuid[MB_UUID_MAX];
    bool has_cpus; /* else "cpus": null */
    struct mb_cpuset cpus;
    struct mb_opt cores, omp_num_threads, thread_percentage;
    struct mb_cell_cooldown cooldown;
    struct mb_opt exit_code, exit_signal;
    struct mb_opt steps, units;
    struct mb_opt tp_mean, tp_ci95;
    char tp_unit_per_s[MB_EXP_NAME_MAX + 8];
    bool tp_has_reason; /* "reason" is written only when the throughput is not known */
    char tp_reason[MB_PROGRESS_REASON_MAX];
    struct mb_cell_window window;
    struct mb_opt completion_s, started_ns, ended_ns;
    char log[MB_EXP_NAME_MAX + 16];
};

struct mb_cell_record {
    int schema;
    char experiment[MB_EXP_NAME_MAX], experiment_sha[80], run[MB_EXP_NAME_MAX], mode[16];
    unsigned rep;
    bool ok; /* "status": "ok" or "failed" */
    /* "failure" (a failed cell): the job ("" the mode), the reason, the job log's tail */
    char fail_job[MB_EXP_NAME_MAX];
    char fail_reason[MB_CELL_REASON_MAX];
    char fail_log_tail[MB_CELL_TAIL_MAX];
    char migbench_version[32];
    struct mb_cell_slurm slurm;
    double started_unix, t0_ns, start_offset_s;
    struct mb_cell_cooldown cooldown;
    struct mb_cell_window window;
    struct mb_cell_device device;
    struct mb_cell_power power;
    bool has_mps; /* else "mps": null */
    size_t n_mps_pct;
    unsigned mps_pct[MB_EXP_MAX_JOBS];
    char mps_pipe_dir[MB_CELL_PATH_MAX], mps_log_dir[MB_CELL_PATH_MAX], mps_daemon[64];
    struct mb_opt reconfigure_seconds;
    bool has_on; /* "on" is written only when the run names a profile */
    char on[MB_EXP_NAME_MAX];
    struct mb_cell_energy energy;
    struct mb_cell_load load;
    size_t n_jobs;
    struct mb_cell_job jobs[MB_EXP_MAX_JOBS];
    struct mb_cell_seen seen; /* decoding only */
};

/* A known figure / an unknown one (null). */
static inline struct mb_opt mb_cell_num(bool valid, double v)
{
    struct mb_opt o = {valid ? 1 : 0, valid ? v : 0.0};
    return o;
}

/* The Slurm job this process runs in, from its environment (present false outside Slurm). */
void mb_cell_slurm_from_env(struct mb_cell_slurm *s);

/* Adds s as the "slurm" block to o (nothing when !s->present): cell.json and cell events. */
void mb_cell_slurm_json_add(cJSON *o, const struct mb_cell_slurm *s);

/* A cool-down's fields (seconds .. power_w) added to o / read from o: cell.json's "cooldown"
 * blocks and the journal's cooldown event. */
void mb_cell_cooldown_json_add(cJSON *o, const struct mb_cell_cooldown *cd);
void mb_cell_cooldown_json_read(const cJSON *o, struct mb_cell_cooldown *cd);

/* cell.json's document for r; NULL when out of memory. The caller owns it (cJSON_Delete). */
cJSON *mb_cell_record_encode(const struct mb_cell_record *r);

/*
 * Reads root (a parsed cell.json) into *r, which it zeroes first: absent or mistyped fields are
 * left unknown, strings are cut to their fields, r->seen says what the file held. A job without
 * its own "window" takes an older writer's throughput.window. MB_EPARSE (naming the field) when
 * root is not an object or its schema is not MB_RESULTS_SCHEMA; MB_ENOMEM. Free with
 * mb_cell_record_free.
 */
int mb_cell_record_decode(const cJSON *root, struct mb_cell_record *r, struct mb_error *err);

/* Frees what the record owns (argv and env strings); the record itself is the caller's. */
void mb_cell_record_free(struct mb_cell_record *r);

/* Copies a job's argv (NULL-terminated) and "NAME=value" entries into j; MB_ENOMEM. */
int mb_cell_job_set_argv(struct mb_cell_job *j, char *const *argv);
int mb_cell_job_add_env(struct mb_cell_job *j, const char *name, const char *value);

#endif
