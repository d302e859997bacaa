/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fleet engines: what Slurm and Kubernetes need to run migbench's cells and plans across nodes.
 *
 *   Slurm  the experiment matrix as one job array (one task = one cell = one whole GPU), a
 *          cells.tsv, a dependent report job; a node's GRES (gres.conf, the slurm.conf Gres=
 *          value, and for tests a fake_gpus.conf) from a device's MIG instances; for a fleet
 *          plan, per node the mig-parted config, GRES lines and a rollout script, and one sbatch
 *          line per planned job.
 *   k8s    for a fleet plan, the mig-parted ConfigMap that NVIDIA's MIG manager reads, the node
 *          label commands with a wait on nvidia.com/mig.config.state=success, and Indexed Jobs
 *          requesting nvidia.com/mig-<profile> (the device plugin's mixed strategy).
 *
 * Every function writes files into a directory the caller names (created if missing), each
 * written atomically; nothing is printed and nothing is run. Values that end up in a shell
 * script are single-quoted; values that sbatch reads from #SBATCH lines, or that would change
 * the meaning of a line, are refused with MB_EINVAL naming the option.
 */
#ifndef MIGBENCH_FLEET_H
#define MIGBENCH_FLEET_H

#include <stdbool.h>
#include <stddef.h>

#include "migbench/catalog.h"
#include "migbench/device.h"
#include "migbench/experiment.h"
#include "migbench/plan.h"
#include "migbench/status.h"

#define MB_SLURM_TYPE_MAX 160
#define MB_FLEET_MAX_EXTRA 32
#define MB_FLEET_MAX_NODES 4096

/* One GPU or MIG instance of a node as Slurm's GRES sees it. */
struct mb_slurm_gres_dev {
    char type[MB_SLURM_TYPE_MAX];       /* as NVML autodetection names it:
                                           "nvidia_h100_80gb_hbm3_3g.40gb" */
    char short_type[MB_SLURM_TYPE_MAX]; /* what slurm.conf and jobs ask for: "3g.40gb" */
    char uuid[MB_UUID_MAX];             /* "MIG-..." or "GPU-..." */
};

/*
 * Slurm's GRES type for a device name and a MIG profile (NULL for a whole GPU): the name
 * lowercased, runs of characters other than letters, digits, '.' and '-' made one '_',
 * then "_" and the profile. Writes at most cap bytes (always terminated).
 */
void mb_slurm_gres_type(const char *device_name, const char *profile, char *out, size_t cap);

/*
 * The GRES devices of an open device: one per MIG compute instance when MIG is on, else the whole
 * GPU. Up to cap into out, the number in *n. MB_EUNSUPPORTED for a device without MB_CAP_GPU.
 */
int mb_slurm_device_gres(struct mb_device *dev, struct mb_slurm_gres_dev *out, size_t cap,
                         size_t *n, struct mb_error *err);

/* Options of mb_slurm_write_node_gres. Zero-initialise. */
struct mb_slurm_node_opts {
    const char *node;       /* NodeName; NULL: "localhost" */
    unsigned cpus;          /* CPUs named in fake_gpus.conf lines; 0: 1 */
    bool fake;              /* also write fake_gpus.conf (Slurm's stand-in for NVML, for tests) */
    const char *dev_prefix; /* fake_gpus.conf device files: <prefix><i>; NULL: "/dev/nvidia" */
};

/*
 * Writes into dir: gres.conf (AutoDetect=nvml), slurm-node.conf (one line
 * "NodeName=<node> Gres=gpu:<short type>:<n>,..."), and with o->fake fake_gpus.conf (one line
 * per device, flag nvidia_gpu_env so jobs get CUDA_VISIBLE_DEVICES=<uuid>).
 */
int mb_slurm_write_node_gres(const struct mb_slurm_gres_dev *devs, size_t n,
                             const struct mb_slurm_node_opts *o, const char *dir,
                             struct mb_error *err);

/* Where an experiment's job array runs and what it asks Slurm for. Zero-initialise. */
struct mb_slurm_array_opts {
    const char *migbench;    /* the migbench binary as the nodes see it (absolute path) */
    const char *experiment;  /* the experiment file as the nodes see it (absolute path) */
    const char *results;     /* the shared results directory (absolute path) */
    const char *device;      /* passed to every task's run as --device; NULL: the file's */
    const char *job_name;    /* NULL: "migbench-<experiment name>" */
    const char *partition;   /* NULL: the cluster's default */
    const char *account;     /* NULL: none */
    const char *time_limit;  /* per task, Slurm syntax ("2:00:00"); NULL: the partition's */
    unsigned max_concurrent; /* the %K of --array; 0: no limit */
    size_t n_extra;          /* extra "#SBATCH" options, each one option ("--qos=high") */
    const char *extra[MB_FLEET_MAX_EXTRA];
    const char *const *overrides; /* "key=value" passed to every run with --set; may be NULL */
    size_t n_overrides;
    unsigned max_attempts; /* submissions of one cell before it is left failed; 0: 3 */
};

/* The attempts a cell gets when mb_slurm_array_opts.max_attempts is 0. */
#define MB_SLURM_MAX_ATTEMPTS_DEFAULT 3

/*
 * Writes the job array for the cells listed in `indices` (n_indices indices into cells, the
 * session's cell numbering; NULL for all n_cells): dir/array.sbatch (--array=<indices>%K,
 * --gres=gpu:1, --exclusive, each task `migbench run EXP --cells $SLURM_ARRAY_TASK_ID --results
 * DIR --journal journal-<array job>_<task>.jsonl`: tasks run at once on other nodes, each with
 * its own journal in the shared directory), dir/report.sbatch (`migbench report DIR`, to be
 * submitted with
 * --dependency=afterany:<array job>), dir/cells.tsv (every cell of the experiment: index, run,
 * repetition, mode, jobs) and
 * dir/submit.sh (both sbatch calls, for a person who submits by hand).
 */
int mb_slurm_write_array(const struct mb_experiment *exp, const struct mb_cell *cells,
                         size_t n_cells, const size_t *indices, size_t n_indices,
                         const struct mb_slurm_array_opts *o, const char *dir,
                         struct mb_error *err);

/* How a fleet plan's GPUs sit on nodes, and what runs the planned jobs. Zero-initialise. */
struct mb_fleet_plan_opts {
    size_t n_nodes;           /* node names; GPU g is on node g / gpus_per_node */
    const char *const *nodes; /* NULL or n_nodes 0: "node0", "node1", ... */
    unsigned gpus_per_node;   /* 0: all GPUs on one node */
    const char *device_name;  /* the GPU name NVML reports ("NVIDIA H100 80GB HBM3"); NULL:
                                 the catalog model name */
    const char *migbench;     /* the migbench binary on the nodes; NULL: "migbench" */
    const struct mb_plan_jobset *jobset; /* for the workloads' commands; may be NULL */
    const char *python;                  /* replaces {python} in commands; NULL: "python3" */
    const char *workloads;     /* replaces {workloads}; NULL: "/usr/share/migbench/workloads" */
    const char *image;         /* k8s: the container image; NULL: "migbench:latest" */
    const char *k8s_namespace; /* k8s: the Jobs' namespace; NULL: "default" */
    double power_limit_w;      /* the plan's GPU power limit (W); 0 or NaN: the default limit */
};

/*
 * For a solved plan on opt->count GPUs of model (jobs as given to mb_plan_solve): per node
 * dir/<node>/mig-parted.yaml, gres.conf, slurm-node.conf and rollout.sh (drain, wait until the
 * node is drained, apply the layout, restart slurmd and slurmctld, resume, check sinfo); and
 * dir/jobs.sh with one sbatch line per planned job, on the node and GRES type it was planned on.
 */
int mb_slurm_write_plan(const struct mb_gpu_model *model, const struct mb_plan *plan,
                        const struct mb_plan_job *jobs, size_t n_jobs,
                        const struct mb_fleet_plan_opts *o, const char *dir, struct mb_error *err);

/*
 * For the same plan: dir/mig-parted-configmap.yaml (ConfigMap "migbench-mig-parted" with one
 * named config per distinct node layout), dir/label-nodes.sh (kubectl label ... plus a wait on
 * nvidia.com/mig.config.state=success) and dir/jobs.yaml (one Indexed Job per MIG profile,
 * requesting nvidia.com/mig-<profile>: 1 per pod; pod i runs the i-th planned job of that profile).
 */
int mb_k8s_write_plan(const struct mb_gpu_model *model, const struct mb_plan *plan,
                      const struct mb_plan_job *jobs, size_t n_jobs,
                      const struct mb_fleet_plan_opts *o, const char *dir, struct mb_error *err);

/* ---- running Slurm's commands, submitting, and what became of each cell ---------------- */

/*
 * Runs argv (no shell; argv[0] looked up in PATH) and waits at most timeout_ms: its stdout
 * into out (cap bytes, cut to fit, terminated; trailing newlines removed), stderr appended to
 * err's message on failure. *exit_code gets the shell-style status. MB_ENOTFOUND when it cannot
 * be started, MB_ETIMEDOUT when it ran too long (it is killed), MB_ECHILD when it exited
 * non-zero (err holds its stderr's first line).
 */
int mb_fleet_command(char *const *argv, char *out, size_t cap, int timeout_ms,
                     struct mb_error *err);

/*
 * Submits what mb_slurm_write_array wrote in dir: `sbatch --parsable DIR/array.sbatch`, then
 * `sbatch --parsable --dependency=afterany:<array> DIR/report.sbatch`, creating
 * <results>/slurm for the tasks' output first. The job ids go to array_job / report_job and,
 * with the cell indices and max_attempts (0: not recorded), as one line to
 * <results>/slurm/submissions.jsonl.
 */
int mb_slurm_submit(const char *dir, const char *results, const size_t *indices, size_t n,
                    unsigned max_attempts, char *array_job, size_t array_cap, char *report_job,
                    size_t report_cap, struct mb_error *err);

enum mb_slurm_cell_state {
    MB_SLURM_CELL_NOT_RUN = 0, /* no task has run it and none waits to */
    MB_SLURM_CELL_QUEUED,      /* its task waits in Slurm's queue */
    MB_SLURM_CELL_RUNNING,     /* started, and its job still runs */
    MB_SLURM_CELL_DONE,        /* recorded: cell.json says ok */
    MB_SLURM_CELL_FAILED,      /* recorded as failed, or its job ended without recording it */
    MB_SLURM_CELL_REQUEUED,    /* its task was requeued (scontrol requeue, node failure) and
                                  waits in the queue to run the cell again */
};
#define MB_SLURM_CELL_STATES 6 /* the number of states, for per-state counts */

/* "not run", "queued", "running", "done", "failed", "requeued". */
const char *mb_slurm_cell_state_str(enum mb_slurm_cell_state s);

/* One cell of a submitted experiment. */
struct mb_slurm_cell {
    size_t index; /* the session's cell number (cells.tsv) */
    char run[MB_EXP_NAME_MAX];
    unsigned rep;
    enum mb_slurm_cell_state state;
    bool recorded;     /* it has a cell.json (done or failed): running it again changes nothing */
    char job[64];      /* the Slurm job that ran or runs it ("123_4" for array task 4), or "" */
    char why[256];     /* failed: the reason */
    unsigned attempts; /* submissions that held this cell (submissions.jsonl) */
    unsigned max_attempts; /* the cap the last submission recorded; 0: none recorded */
    char power_limit[16];  /* the cell's power limit ("250W", "80%"), "" without the axis */
};

/*
 * A job's state as Slurm tells it ("PENDING", "RUNNING", "CANCELLED", ...) into state, or "" when
 * Slurm no longer knows the job; "REQUEUED" for a job that waits to run again after a requeue
 * (Slurm's REQUEUED and REQUEUE_HOLD, or PENDING with a restart count). Return MB_OK, or an
 * error when Slurm cannot be asked.
 */
typedef int (*mb_slurm_job_state_fn)(void *ctx, const char *job, char *state, size_t cap,
                                     struct mb_error *err);

/*
 * mb_slurm_job_state_fn through `scontrol -o show job JOB` (JobState, Restarts), and for a job
 * slurmctld has forgotten, `sacct -n -X -P -o State -j JOB` where accounting is kept (ctx
 * unused).
 */
int mb_slurm_squeue_state(void *ctx, const char *job, char *state, size_t cap,
                          struct mb_error *err);

/*
 * What became of each cell submitted into results: its cells.tsv and submissions.jsonl (under
 * <results>/slurm), the cell.json files (which name the job that wrote them), the journals, and
 * for cells started but not recorded, or not started, the state of their job from job_state
 * (NULL: Slurm is not asked; such cells count as failed or not run). *out is a heap array in
 * cells.tsv order, owned by the caller (free()). MB_ENOTFOUND when results has no cells.tsv;
 * MB_EPARSE for a damaged one.
 */
int mb_slurm_status(const char *results, mb_slurm_job_state_fn job_state, void *ctx,
                    struct mb_slurm_cell **out, size_t *n, struct mb_error *err);

/* What mb_slurm_submit_experiment did. */
struct mb_slurm_submission {
    size_t n;           /* cells written into the array (0: nothing to submit) */
    size_t first, last; /* the first and last of their indices */
    bool submitted;     /* sbatch ran (not --emit) */
    char array_job[32];
    char report_job[32];
    size_t n_capped;       /* failed cells not resubmitted: they had max_attempts submissions */
    unsigned max_attempts; /* the cap in force */
};

/*
 * The whole of `slurm submit`: with emit_dir, writes the job array over every cell into emit_dir
 * and submits nothing (its submit.sh records the submission as this does). Otherwise into
 * <o->results>/slurm, holding <results>/slurm/submit.lock (MB_EBUSY, naming the holder's pid,
 * when another submitter holds it): when that holds a cells.tsv from an earlier submission
 * (which must name the same runs and repetitions, else MB_EINVAL: the experiment changed), only
 * the cells that are failed or not run (job_state, as for mb_slurm_status) and were submitted
 * fewer than max_attempts times are written and submitted; when there is none, out->n is 0 and
 * nothing is submitted.
 */
int mb_slurm_submit_experiment(const struct mb_experiment *exp, const struct mb_cell *cells,
                               size_t n_cells, const struct mb_slurm_array_opts *o,
                               const char *emit_dir, mb_slurm_job_state_fn job_state, void *ctx,
                               struct mb_slurm_submission *out, struct mb_error *err);

/* ---- the experiment matrix as a Kubernetes Indexed Job ---------------------------------- */

/* Where the Indexed Job's pods find migbench, the experiment and the results. Zero-initialise. */
struct mb_k8s_array_opts {
    const char *migbench;      /* the binary in the image; NULL: "migbench" (on its PATH) */
    const char *image;         /* the container image; NULL: "migbench:latest" */
    const char *k8s_namespace; /* NULL: "default" */
    const char *pvc;           /* the shared results volume's claim; NULL: "migbench-results" */
    const char *results;       /* the results directory inside the pod; NULL: "/results/<name>" */
    const char *device;        /* passed to every run as --device; NULL: the file's */
    unsigned parallelism;      /* pods at once; 0: every cell at once */
    const char *const *overrides; /* "key=value" passed to every run with --set; may be NULL */
    size_t n_overrides;
};

/*
 * The experiment's cells as Kubernetes objects in dir: experiment.yaml (a ConfigMap holding the
 * experiment file and cells.tsv) and job.yaml (an Indexed Job, completions = the cells, each pod
 * one whole GPU, nvidia.com/gpu: 1, running `migbench run EXP --cells $JOB_COMPLETION_INDEX
 * --results R --journal journal-k8s-<index>.jsonl` with the results volume mounted, after copying
 * cells.tsv to R/k8s/cells.tsv so that mb_k8s_status reads it), plus dir/cells.tsv.
 */
int mb_k8s_write_array(const struct mb_experiment *exp, const struct mb_cell *cells, size_t n_cells,
                       const struct mb_k8s_array_opts *o, const char *dir, struct mb_error *err);

/*
 * What became of each cell of an experiment run as an Indexed Job into results: as
 * mb_slurm_status, from <results>/k8s/cells.tsv, the cell.json files and the journals (no queue
 * is asked: a cell with no result is running when its journal says it started, else not run).
 */
int mb_k8s_status(const char *results, struct mb_slurm_cell **out, size_t *n, struct mb_error *err);

/*
 * The NVIDIA device plugin's resource name (mixed MIG strategy) for a MIG profile:
 * "nvidia.com/mig-" and the profile, each '+' made '.' ("1g.10gb+me" ->
 * "nvidia.com/mig-1g.10gb.me").
 */
void mb_k8s_mig_resource(const char *profile, char *out, size_t cap);

#endif
