/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Experiment files: a YAML description of workloads, runs (sharing modes) and measurement
 * settings, validated into plain structures and expanded into cells (run x repetition).
 *
 * The format is docs/run.md's (version 1). Every error names the file, the line and the field:
 * "exp.yaml:12: field 'runs[2].layout': ...", status MB_EPARSE. Overrides given as
 * "key=value" (`--set`) name themselves instead of a line: "--set measure.duration=3: ...".
 *
 * Threads: an experiment is immutable once loaded and may be read from any thread.
 */
#ifndef MIGBENCH_EXPERIMENT_H
#define MIGBENCH_EXPERIMENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "migbench/catalog.h"
#include "migbench/layout.h"
#include "migbench/powercap.h"
#include "migbench/status.h"

#define MB_EXP_NAME_MAX 64
#define MB_EXP_MAX_WORKLOADS 64
#define MB_EXP_MAX_RUNS 128
#define MB_EXP_MAX_JOBS 16
#define MB_EXP_MAX_ARGS 128
#define MB_EXP_ARG_MAX 1024
#define MB_EXP_REGEX_MAX 256
#define MB_EXP_SPEC_MAX 256
#define MB_EXP_PATH_MAX 1024
#define MB_EXP_MAX_OVERRIDES 64
#define MB_EXP_FILE_MAX (1024 * 1024)
#define MB_EXP_MAX_POWER_LIMITS 16
#define MB_EXP_POWER_TEXT_MAX MB_POWER_SETTING_TEXT_MAX

/* How the GPU (or CPU) is shared by the jobs of a run. */
enum mb_exp_mode {
    MB_MODE_EXCLUSIVE = 0, /* each job alone, one after another */
    MB_MODE_TIMESLICE,     /* all jobs at once on the whole device */
    MB_MODE_PARTITION,     /* host only: each job on its own core set */
    MB_MODE_MIG,           /* GPU only: job i on MIG instance i of the run's layout */
    MB_MODE_MPS,           /* nvml only: all jobs under one MPS daemon */
};

/* Returns "exclusive", "timeslice", "partition", "mig" or "mps". */
const char *mb_exp_mode_str(enum mb_exp_mode m);

/* An amount of work or time: "20s", "100ms", "2m", "50 steps", or "stable" (durations only). */
enum mb_amount_kind {
    MB_AMOUNT_TIME = 0,
    MB_AMOUNT_STEPS,
    MB_AMOUNT_STABLE,
    MB_AMOUNT_COMPLETION, /* durations only: until every job exits by itself (time-to-completion) */
};

struct mb_amount {
    enum mb_amount_kind kind;
    int64_t ns;     /* MB_AMOUNT_TIME */
    uint64_t steps; /* MB_AMOUNT_STEPS */
};

/* Which device kinds a run is restricted to (`only:`). */
enum {
    MB_ONLY_HOST = 1u << 0,
    MB_ONLY_GPU = 1u << 1,
};

/* Work units a workload's progress counts. */
#define MB_EXP_UNIT_MAX 16

struct mb_exp_workload {
    char name[MB_EXP_NAME_MAX];
    unsigned line;
    size_t n_command;
    char *command[MB_EXP_MAX_ARGS]; /* owned by the experiment; unsubstituted */
    size_t n_host_args;
    char *host_args[MB_EXP_MAX_ARGS];
    size_t n_gpu_args;
    char *gpu_args[MB_EXP_MAX_ARGS];
    char unit[MB_EXP_UNIT_MAX];            /* images | tokens | samples | steps */
    char progress_regex[MB_EXP_REGEX_MAX]; /* "" when the job uses MIGBENCH_PROGRESS_FD */
    double samples_per_step;               /* with progress_regex; 0 when not given */
    int64_t memory_mib;                    /* -1 when not given */
    bool pty;                              /* stdout on a pseudo-terminal (line-buffered) */
    bool python_unbuffered;                /* PYTHONUNBUFFERED=1 in its environment (default) */
};

struct mb_exp_run {
    char name[MB_EXP_NAME_MAX];
    unsigned line;
    enum mb_exp_mode mode;
    unsigned only; /* MB_ONLY_* bits; 0 = anywhere the mode applies */
    size_t n_jobs;
    size_t job_workload[MB_EXP_MAX_JOBS];            /* index into workloads */
    char job_name[MB_EXP_MAX_JOBS][MB_EXP_NAME_MAX]; /* workload name, "-2", "-3" when repeated */
    size_t n_layout;                                 /* mig: == n_jobs */
    char layout[MB_EXP_MAX_JOBS][MB_PROFILE_NAME_MAX];
    size_t n_thread_pct; /* mps: explicit percentages, == n_jobs, or 0 */
    unsigned thread_pct[MB_EXP_MAX_JOBS];
    size_t n_match_layout; /* mps: profiles whose compute share sets the percentages, or 0 */
    char match_layout[MB_EXP_MAX_JOBS][MB_PROFILE_NAME_MAX];
    /* The power-limit axis (docs/power.md). As parsed: the run's own `power_limits` list (or
     * none). After mb_experiment_expand_power, a run with a list (its own or the global one)
     * has become one run per limit, named "<run>.cap-<limit>", each with power_limit set and
     * base_run naming the run as written. Parsed where they are written (the YAML or --set):
     * nothing below parses a limit again. */
    size_t n_power_limits;
    struct mb_power_setting power_limits[MB_EXP_MAX_POWER_LIMITS];
    unsigned power_limits_line;
    struct mb_power_setting power_limit; /* MB_PSET_NONE without the axis */
    char base_run[MB_EXP_NAME_MAX];      /* the run as written; "" without the axis */
    /* exclusive with `on: mig-SIZE`: "" on the whole GPU, else the MIG size the jobs run on one
     * after another (e.g. "7g"); such a run also has n_layout 1 and layout[0] == on. */
    char on[MB_PROFILE_NAME_MAX];
};

struct mb_exp_measure {
    struct mb_amount warmup;   /* TIME or STEPS */
    struct mb_amount duration; /* TIME, STEPS or STABLE */
    double ci_target;          /* STABLE: stop when every CI half-width < ci_target x mean */
    int64_t max_duration_ns;   /* STABLE: cap; COMPLETION: cap when > 0 */
    int repetitions;           /* -1: default (4 on nvml, 1 on host/emu) */
    int64_t sample_interval_ns;
    int64_t idle_ns;        /* idle-power baseline before each cell; 0 none */
    int64_t cooldown_ns;    /* cap of the cool-down before a cell (and between exclusive jobs);
                               0 none */
    double cooldown_margin; /* near idle: power <= reference x (1 + margin); default 0.1 */
    int64_t grace_ns;       /* SIGTERM -> SIGKILL */
    int64_t progress_timeout_ns;
};

#define MB_EXP_SLURM_MAX_LINES 16
#define MB_EXP_SLURM_VALUE_MAX 128

/* The experiment's `slurm:` block: what `migbench slurm submit` asks Slurm for by default. */
struct mb_exp_slurm {
    char gpu[MB_EXP_SLURM_VALUE_MAX];       /* the nodes' GPU model: submit numbers the cells as
                                               on it where this machine has none; "" not given */
    char partition[MB_EXP_SLURM_VALUE_MAX]; /* "" when not given */
    char account[MB_EXP_SLURM_VALUE_MAX];
    char time[MB_EXP_SLURM_VALUE_MAX]; /* per task, Slurm syntax ("2:00:00") */
    unsigned max_concurrent;           /* %K of --array; 0 when not given */
    size_t n_sbatch;                   /* extra #SBATCH options ("--qos=high") */
    char sbatch[MB_EXP_SLURM_MAX_LINES][MB_EXP_SLURM_VALUE_MAX];
};

struct mb_experiment {
    char path[MB_EXP_PATH_MAX]; /* as given */
    char name[MB_EXP_NAME_MAX];
    char device[MB_EXP_SPEC_MAX]; /* "auto" by default */
    char python[MB_EXP_PATH_MAX]; /* "auto" or a path, as written */
    char sha[17];                 /* FNV-1a 64 of the file bytes and the overrides, hex */
    size_t n_overrides;
    char *overrides[MB_EXP_MAX_OVERRIDES]; /* "key=value" as given; owned */
    size_t n_workloads;
    struct mb_exp_workload workloads[MB_EXP_MAX_WORKLOADS];
    size_t n_runs;
    struct mb_exp_run runs[MB_EXP_MAX_RUNS];
    struct mb_exp_measure measure;
    /* The global `power_limits` list: applies to every run without its own. */
    size_t n_power_limits;
    struct mb_power_setting power_limits[MB_EXP_MAX_POWER_LIMITS];
    unsigned power_limits_line;
    struct mb_exp_slurm slurm;
    /* manage_mig_mode: true: migbench may switch the GPU's MIG mode between phases (runs that
     * need MIG off, runs that need it on) and restores the original at the end. */
    bool manage_mig_mode;
};

/*
 * Reads and validates the experiment file at path, applying overrides ("key=value", a dotted
 * key such as "measure.duration" or "device"; the value is read as YAML) before validation.
 * *out is owned by the caller (mb_experiment_destroy). Errors: MB_EIO (cannot read), MB_EPARSE
 * (bad YAML or content; err names file, line and field), MB_EINVAL (a malformed override).
 */
int mb_experiment_load(const char *path, const char *const *overrides, size_t n_overrides,
                       struct mb_experiment **out, struct mb_error *err);

/* Same as mb_experiment_load for a file already in memory; `path` only names it in messages. */
int mb_experiment_parse(const char *path, const char *text, size_t len,
                        const char *const *overrides, size_t n_overrides,
                        struct mb_experiment **out, struct mb_error *err);

/* Releases an experiment; NULL is a no-op. */
void mb_experiment_destroy(struct mb_experiment *exp);

/*
 * Parses "20s", "100ms", "1.5m", "2h", "50 steps" (and "stable" or "completion" when
 * allow_stable) into *out.
 * Returns MB_OK or MB_EPARSE with the reason in err (no file or line).
 */
int mb_amount_parse(const char *text, bool allow_steps, bool allow_stable, struct mb_amount *out,
                    struct mb_error *err);

/* Formats an amount as "20s", "150ms" or "50 steps" into buf (always terminated). */
void mb_amount_format(const struct mb_amount *a, char *buf, size_t cap);

/*
 * Finds the Python interpreter for {python}. When exp->python is "auto", tries `python3` on
 * path_env (a PATH-style list; NULL means the environment's PATH) and then /usr/bin/python3, and
 * takes the first that runs `import torch` successfully (run with an argv vector, no shell).
 * An explicit path must exist and be executable; it is not required to import torch.
 * On success the interpreter's path is written to out (cap bytes). MB_ENOTFOUND when none works,
 * with every candidate and why it was refused in err.
 */
int mb_experiment_resolve_python(const struct mb_experiment *exp, const char *path_env, char *out,
                                 size_t cap, struct mb_error *err);

/*
 * Builds job argv for workload w: command with "{python}" and "{workloads}" replaced (anywhere in
 * an element), followed by gpu_args when on_gpu else host_args. *argv_out is a NULL-terminated
 * heap array owned by the caller, freed with mb_argv_free. MB_ENOMEM or MB_ERANGE (too long).
 */
int mb_experiment_job_argv(const struct mb_exp_workload *w, const char *python,
                           const char *workloads_dir, bool on_gpu, char ***argv_out,
                           struct mb_error *err);

/* Frees an argv array from mb_experiment_job_argv; NULL is a no-op. */
void mb_argv_free(char **argv);

/*
 * Whether run applies to a device with the MB_CAP_* bits caps (mb_device_caps): its mode must
 * make sense there (partition: not a GPU; mig and mps: a GPU; exclusive and timeslice: anywhere)
 * and its `only:` restriction must allow it. When not, a one-line reason is written to why (may
 * be NULL).
 */
bool mb_exp_run_applies(const struct mb_exp_run *run, uint32_t caps, char *why, size_t cap);

/*
 * Where a MIG run's layout goes on model m beside the instances `existing` (NULL: an empty GPU):
 * placed[i] is job i's instance (layout entry i), all (may be NULL) the whole result in creation
 * order. The one placement and job-to-instance rule: the runner uses it beside what the GPU
 * holds, `run --dry-run` on an empty GPU. MB_EINVAL for a profile the model lacks, the layout
 * engine's status when it does not fit.
 */
int mb_exp_run_place(const struct mb_gpu_model *m, const struct mb_layout *existing,
                     const struct mb_exp_run *run, struct mb_layout *all,
                     struct mb_layout_item placed[MB_EXP_MAX_JOBS], struct mb_error *err);

/*
 * MPS thread percentages for run's jobs: the explicit list, else shares matched to
 * match_layout's compute slices out of model_compute_slices (7 when 0), else an equal split.
 * Each is in 1..100.
 */
void mb_exp_run_thread_pct(const struct mb_exp_run *run, unsigned model_compute_slices,
                           unsigned out[MB_EXP_MAX_JOBS]);

/* One cell: a run and a repetition. */
struct mb_cell {
    size_t run;   /* index into exp->runs */
    unsigned rep; /* 0-based */
};

/*
 * Expands exp into cells for a device with the MB_CAP_* bits caps, keeping only runs named in
 * only_runs (a comma-separated list; NULL or "" for all). Runs that do not apply are skipped; for
 * each a note "run 'x' skipped: ..." is added to notes (each note a heap string; free with
 * mb_notes_free). *cells is a heap array owned by the caller (free()). A name in only_runs that
 * is not a run: MB_EINVAL.
 */
int mb_experiment_cells(const struct mb_experiment *exp, uint32_t caps, const char *only_runs,
                        struct mb_cell **cells, size_t *n_cells, char ***notes, size_t *n_notes,
                        struct mb_error *err);

/*
 * Checks the runs that cells will run against the GPU model they run on; runs not in cells
 * (skipped for the device, its MIG mode or --only) are not held to this model's profile names.
 * Every mig layout and mps match_layout entry must resolve on model (mb_model_profile_resolve:
 * an exact profile name of the model or a model-independent size such as "3g"), and each
 * workload's memory_mib must fit the memory of the profile it is put on.
 * A run naming a size the model does not have ("3g" or "7g" on an A30) is removed from cells
 * (order kept, *n_cells shrinks) with a note "run 'x' skipped: A30-24GB has no 3g (...)" appended
 * to *notes (heap strings as from mb_experiment_cells; *notes may start NULL with *n_notes 0).
 * Anything else (a profile name of another model, a job too big for its instance): MB_EPARSE
 * with file, line and field, and cells and notes are left as they were.
 */
int mb_experiment_check_cells(const struct mb_experiment *exp, const struct mb_gpu_model *model,
                              struct mb_cell *cells, size_t *n_cells, char ***notes,
                              size_t *n_notes, struct mb_error *err);

/*
 * The power-limit axis: replaces every run that has a `power_limits` list (its own, else the
 * global one) by one run per limit, in list order, named "<run>.cap-<limit>" ("default",
 * "80pct", "250W"), so that cells become run x limit x repetition and each limit's results live
 * in their own run directory. The limits were parsed by the YAML reader. MB_EPARSE with the
 * file, line and field for a bad limit, a limit listed twice, a name that no longer fits or
 * collides, or more than MB_EXP_MAX_RUNS runs in all. Idempotent: expanded runs are kept.
 */
int mb_experiment_expand_power(struct mb_experiment *exp, struct mb_error *err);

/*
 * For a device that cannot set its power limit (no MB_CAP_SET_POWER_LIMIT): removes the cells of
 * runs with a limit other than "default" (order kept, *n_cells shrinks) with one note per run
 * ("run 'x.cap-80pct' skipped: its 80% power limit cannot be set here"), appended to *notes as in
 * mb_experiment_cells. The default limit's runs stay: they change nothing.
 */
int mb_experiment_power_filter(const struct mb_experiment *exp, struct mb_cell *cells,
                               size_t *n_cells, char ***notes, size_t *n_notes,
                               struct mb_error *err);

/*
 * Before anything runs: every power limit the cells will set resolves within the device's range
 * pl (from mb_device_power_limit). MB_EPARSE with the file, line and field of the first limit
 * that does not ("exp.yaml:5: field 'power_limits': 20% is 140 W, outside this GPU's range
 * 210..700 W"); MB_EUNSUPPORTED when pl lacks the range or default.
 */
int mb_experiment_power_check(const struct mb_experiment *exp, const struct mb_cell *cells,
                              size_t n_cells, const struct mb_power_limit *pl,
                              struct mb_error *err);

/*
 * The check that `run` and `run --dry-run` share: when dev can set its power limit and has a
 * place for the restore record (device_spec: state= for an emulated GPU), every limit of cells
 * resolves within its range, as mb_experiment_power_check says (then MB_EINVAL). MB_OK when dev
 * cannot set limits: those runs are skipped with a note.
 */
struct mb_device;
int mb_experiment_power_check_device(const struct mb_experiment *exp, struct mb_device *dev,
                                     const char *device_spec, const struct mb_cell *cells,
                                     size_t n_cells, struct mb_error *err);

/* Frees notes from mb_experiment_cells. */
void mb_notes_free(char **notes, size_t n);

/*
 * Repetitions per run on a device with the MB_CAP_* bits caps: the measure setting, else 4 on a
 * measured GPU and 1 on an emulated one or the host.
 */
unsigned mb_experiment_repetitions(const struct mb_experiment *exp, uint32_t caps);

/*
 * The MIG mode a run needs on a GPU: 1 for mig runs (and exclusive runs `on: mig-SIZE`), 0 for
 * the whole-GPU modes (exclusive, timeslice, mps), -1 when the mode does not matter (partition,
 * a host mode).
 */
int mb_migmode_run_needs(const struct mb_exp_run *run);

#endif
