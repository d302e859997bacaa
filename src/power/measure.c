/* SPDX-License-Identifier: Apache-2.0 */
/* `measure` as a library call: one command with the meter around it (measure.h). */
#include "migbench/measure.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "migbench/clock.h"
#include "migbench/hostload.h"
#include "migbench/meter.h"
#include "migbench/proc.h"
#include "migbench/progress.h"
#include "power/window_wait.h"

bool mb_energy_best(const struct mb_energy *e, double *j)
{
    if (e->counter_valid)
        *j = e->counter_j;
    else if (e->integral_valid)
        *j = e->integral_j;
    else
        return false;
    return true;
}

void mb_measure_report_derive(struct mb_measure_report *r)
{
    /* Energy per unit: steady mean power over steady throughput (both after the warm-up). */
    if (r->tp.valid && r->tp.rate.mean > 0 && r->have_steady && r->steady.mean_power_valid) {
        r->epu_valid = true;
        r->epu_j = r->steady.mean_power_w / r->tp.rate.mean;
    }
    double job_j;
    if (r->have_idle && r->idle.mean_power_valid && mb_energy_best(&r->job, &job_j)) {
        r->split_valid = true;
        r->static_j = r->idle.mean_power_w * r->job.duration_s;
        r->dynamic_j = job_j - r->static_j;
    }
}

/* The command being measured: its progress, its meter and the steady window. */
struct job {
    struct mb_progress *pipe_prog;
    struct mb_progress *regex_prog;
    struct mb_meter *meter;
    int64_t origin_ns;
    int64_t warmup_ns;
    uint64_t warmup_steps;
    int steady_id;                   /* -1 until the warm-up is over; -2: no window slot */
    struct mb_hostload_snap load_at; /* /proc when the job's window opened */
    struct mb_error err;
};

static void on_data(void *ctx, enum mb_proc_stream s, const char *buf, size_t n, int64_t t_ns)
{
    struct job *j = ctx;
    struct mb_progress *p = s == MB_PROC_PROGRESS ? j->pipe_prog
                            : s == MB_PROC_STDOUT ? j->regex_prog
                                                  : NULL;
    if (!p)
        return;
    mb_progress_feed(p, buf, n, t_ns);
    /* The steady window opens with the first record past the warm-up, as the throughput does. */
    struct mb_progress_point last;
    struct mb_progress *use = j->regex_prog ? j->regex_prog : j->pipe_prog;
    if (j->steady_id == -1 && p == use && mb_progress_last(p, &last) &&
        last.t_ns >= j->origin_ns + j->warmup_ns && last.step >= j->warmup_steps) {
        if (mb_meter_window_begin(j->meter, last.t_ns, &j->steady_id, &j->err) != MB_OK)
            j->steady_id = -2; /* no slot: leave it out */
    }
}

static bool signalled(const struct mb_measure_opts *o)
{
    return o->signal && *o->signal;
}

/* Sleeps ns or until a signal arrives; returns false when interrupted. */
static bool sleep_interruptible(const struct mb_measure_opts *o, int64_t ns)
{
    int64_t end = mb_meter_now_ns() + ns;
    while (!signalled(o)) {
        int64_t left = end - mb_meter_now_ns();
        if (left <= 0)
            return true;
        if (left > 100000000)
            left = 100000000;
        struct timespec ts = {(time_t)(left / 1000000000), (long)(left % 1000000000)};
        nanosleep(&ts, NULL);
    }
    return false;
}

/* Ends the job's window and the steady one (when it began) at t_end and fetches their results
 * and the meter's counts into r. */
static int end_windows(struct job *j, int job_id, int64_t t_end, struct mb_measure_report *r,
                       struct mb_error *err)
{
    /* End both windows at once, before waiting on either: a window cannot end before samples
     * that were already folded into it, and waiting lets the meter take more. */
    int ends[2] = {job_id, j->steady_id};
    int rc = mb_meter_window_end_n(j->meter, ends, j->steady_id >= 0 ? 2 : 1, t_end, err);
    if (rc == MB_OK)
        rc = mb_window_result(j->meter, job_id, true, &r->job, err);
    if (rc == MB_OK && j->steady_id >= 0) {
        rc = mb_window_result(j->meter, j->steady_id, true, &r->steady, err);
        if (rc != MB_OK)
            return rc;
        r->have_steady = true;
        j->steady_id = -1;
    }
    if (rc != MB_OK)
        return rc;
    mb_meter_stop(j->meter, NULL);
    mb_meter_get_counts(j->meter, &r->counts);
    return MB_OK;
}

/* The unit the job named (its progress parser goes when the call returns; r->unit points here). */
static char unit_name[64];

/* Fills r's progress, throughput, unit, energy per unit and static/dynamic split. */
static void derive(const struct mb_measure_opts *o, struct job *j, struct mb_measure_report *r)
{
    struct mb_progress *use = j->regex_prog ? j->regex_prog : j->pipe_prog;
    r->progress_regex = j->regex_prog != NULL;
    mb_progress_get_counts(use, &r->pc);
    r->have_progress = mb_progress_first(use, &r->first) && mb_progress_last(use, &r->last);
    mb_progress_throughput(use, j->origin_ns, o->warmup_ns, o->warmup_steps, 10, &r->tp);
    const char *named = mb_progress_unit_name(use);
    if (named)
        snprintf(unit_name, sizeof(unit_name), "%s", named);
    r->unit = o->unit                            ? o->unit
              : named                            ? unit_name
              : mb_progress_unit_is_samples(use) ? "samples"
                                                 : "steps";
    mb_measure_report_derive(r);
}

/* Starts the command with the progress pipe, its output teed (to stderr when asked). */
static int spawn_job(const struct mb_measure_opts *o, struct job *j, struct mb_proc **proc,
                     struct mb_error *err)
{
    bool capture = o->stdout_to_stderr || o->regex || o->pty;
    /* An unmodified Python job block-buffers a piped stdout; its progress would come in bursts. */
    char unbuffered[] = "PYTHONUNBUFFERED=1";
    char *env[] = {o->python_buffered ? NULL : unbuffered, NULL};
    struct mb_proc_spec ps = {
        .argv = o->argv,
        .env = env,
        .progress_pipe = true,
        .capture = capture,
        .pty = o->pty,
        .tee_stdout_fd = o->stdout_to_stderr ? 2 : 1,
        .tee_stderr_fd = 2,
        .on_data = on_data,
        .ctx = j,
    };
    return mb_proc_spawn(&ps, proc, err);
}

/* The progress parsers, the device (CUDA_VISIBLE_DEVICES resolved) and the meter. */
static int open_all(const struct mb_measure_opts *o, struct job *j, struct mb_measure_report *r,
                    enum mb_measure_stage *stage, struct mb_error *err)
{
    /* Made before the spawn: the job's own clock cannot run longer than this. */
    struct mb_progress_opts po = {.started_ns = mb_clock_monotonic_ns()};
    int rc = mb_progress_create(&po, &j->pipe_prog, err);
    if (rc == MB_OK && o->regex) {
        po.regex = o->regex;
        po.samples_per_step = o->samples_per_step;
        if ((rc = mb_progress_create(&po, &j->regex_prog, err)) != MB_OK)
            *stage = MB_MEASURE_USAGE;
    }
    if (rc != MB_OK)
        return rc;
    /* Inside a Slurm or Kubernetes job the scheduler names the GPU or MIG instance by UUID. */
    rc = mb_device_resolve_visible(o->device, getenv("CUDA_VISIBLE_DEVICES"), &r->vis, err);
    if (rc != MB_OK) {
        if (rc == MB_EINVAL || rc == MB_ENOTFOUND)
            *stage = MB_MEASURE_USAGE;
        return rc;
    }
    r->device_spec = r->vis.spec;
    struct mb_meter_opts mo = {.device_spec = r->vis.spec,
                               .interval_ns = o->interval_ns,
                               .csv_path = o->csv,
                               .min_window_ns = o->min_window_ns};
    if ((rc = mb_meter_create(&mo, &j->meter, err)) != MB_OK) {
        if (rc == MB_EINVAL)
            *stage = MB_MEASURE_USAGE;
        return rc;
    }
    mb_meter_device(j->meter, &r->info, &r->sensor);
    return o->ready ? o->ready(o->ctx, r, err) : MB_OK;
}

/* The idle window before the command. */
static int idle_window(const struct mb_measure_opts *o, struct job *j, struct mb_measure_report *r,
                       enum mb_measure_stage *stage, struct mb_error *err)
{
    int idle_id = -1;
    int rc = mb_meter_window_begin(j->meter, mb_meter_now_ns(), &idle_id, err);
    if (rc != MB_OK)
        return rc;
    if (!sleep_interruptible(o, o->idle_ns)) {
        *stage = MB_MEASURE_INTERRUPTED;
        return mb_error_set(err, MB_EINTR, "interrupted by signal %d before the command started",
                            (int)*o->signal);
    }
    if ((rc = mb_meter_window_end(j->meter, idle_id, mb_meter_now_ns(), err)) != MB_OK ||
        (rc = mb_window_result(j->meter, idle_id, false, &r->idle, err)) != MB_OK)
        return rc;
    r->have_idle = true;
    return MB_OK;
}

/* The command from spawn to exit, its signals forwarded; then its windows and figures. */
static int run_job(const struct mb_measure_opts *o, struct job *j, struct mb_measure_report *r,
                   enum mb_measure_stage *stage, struct mb_error *err)
{
    int job_id = -1;
    j->origin_ns = mb_meter_now_ns();
    mb_hostload_snap(mb_hostload_root(), (int)getpid(), &j->load_at);
    int rc = mb_meter_window_begin(j->meter, j->origin_ns, &job_id, err);
    if (rc != MB_OK)
        return rc;
    struct mb_proc *proc = NULL;
    if ((rc = spawn_job(o, j, &proc, err)) != MB_OK) {
        *stage = MB_MEASURE_SPAWN;
        return rc;
    }
    while (!mb_proc_done(proc)) {
        if (signalled(o)) {
            int sig = *o->signal;
            *o->signal = 0;
            mb_proc_signal(proc, sig);
        }
        rc = mb_proc_poll(&proc, 1, 100, err);
        if (rc != MB_OK && rc != MB_EINTR)
            break;
        rc = MB_OK;
        if (o->tick)
            o->tick(o->ctx);
    }
    int64_t t_end = mb_meter_now_ns();
    if (rc == MB_OK) {
        struct mb_hostload_snap end;
        mb_hostload_snap(mb_hostload_root(), (int)getpid(), &end);
        mb_hostload_window(&j->load_at, &end, 0, &r->load);
        r->have_load = true;
        r->exit_code = mb_proc_exit_code(proc);
        r->wall_s = (double)(t_end - j->origin_ns) * 1e-9;
        mb_progress_end(j->pipe_prog);
        if (j->regex_prog)
            mb_progress_end(j->regex_prog);
        rc = end_windows(j, job_id, t_end, r, err);
    }
    mb_proc_destroy(proc);
    if (rc == MB_OK)
        derive(o, j, r);
    return rc;
}

int mb_measure_run(const struct mb_measure_opts *o, struct mb_measure_report *r,
                   enum mb_measure_stage *stage, struct mb_error *err)
{
    memset(r, 0, sizeof(*r));
    r->argv = o->argv;
    r->device_spec = o->device;
    r->interval_ns = o->interval_ns;
    r->csv = o->csv;
    r->warmup_ns = o->warmup_ns;
    r->warmup_steps = o->warmup_steps;
    *stage = MB_MEASURE_FAILED;
    struct job j = {.steady_id = -1, .warmup_ns = o->warmup_ns, .warmup_steps = o->warmup_steps};
    int rc = open_all(o, &j, r, stage, err);
    if (rc == MB_OK)
        rc = mb_meter_start(j.meter, err);
    if (rc == MB_OK && o->idle_ns > 0)
        rc = idle_window(o, &j, r, stage, err);
    if (rc == MB_OK)
        rc = run_job(o, &j, r, stage, err);
    if (rc == MB_OK)
        *stage = MB_MEASURE_DONE;
    mb_meter_destroy(j.meter);
    mb_progress_destroy(j.pipe_prog);
    mb_progress_destroy(j.regex_prog);
    return rc;
}
