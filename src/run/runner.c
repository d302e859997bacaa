/* SPDX-License-Identifier: Apache-2.0 */
/* The cell runner: one run x one repetition, from preparing the sharing mode to
 * cell.json. */
#define _DEFAULT_SOURCE /* realpath */
#include "results/results_json.h"
#include "migbench/runner.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "migbench/clock.h"
#include "migbench/layout.h"
#include "migbench/mig.h"
#include "migbench/meter.h"
#include "migbench/proc.h"
#include "migbench/progress.h"
#include "run/runner_power.h"
#include "power/window_wait.h"
#include "run/runner_internal.h"

static double wall_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- telemetry
 * ---------------------------------------------------------------------------
 */

/* Waits up to ns (the meter samples meanwhile); returns early when stopped. */
static void idle_wait(struct cell *c, int64_t ns)
{
    int64_t end = mb_clock_monotonic_ns() + ns;
    for (;;) {
        int64_t t = mb_clock_monotonic_ns();
        if (t >= end || *c->o->stop)
            return;
        int64_t step = end - t;
        if (step > 50000000)
            step = 50000000;
        struct timespec ts = {0, (long)step};
        nanosleep(&ts, NULL);
    }
}

/* The device's default power reading in W; false when it has none. */
static bool read_power(struct cell *c, double *w)
{
    struct mb_telemetry tel;
    if (mb_device_telemetry(c->o->dev, &tel, NULL) != MB_OK || !(tel.valid & MB_TEL_POWER))
        return false;
    *w = tel.power_mw / 1000.0;
    return true;
}

/*
 * The cool-down (docs/run.md): waits, at most measure.cooldown, until the device's power reading
 * is within measure.cooldown_margin of the reference (the experiment's first idle baseline, else
 * the lowest reading seen before it began), polling every sample interval; an averaged reading is
 * not trusted before one averaging window has passed. Without a power reading it waits the fixed
 * time and says so once. Returns early when stopped.
 */
static void cool_down(struct cell *c, struct cooldown *out)
{
    const struct mb_exp_measure *m = &c->o->exp->measure;
    struct mb_runner_power *p = c->o->power;
    memset(out, 0, sizeof(*out));
    if (!p || m->cooldown_ns <= 0)
        return;
    int64_t t0 = mb_clock_monotonic_ns();
    int64_t cap_end = t0 + m->cooldown_ns;
    out->done = true;
    if (p->idle_ok) {
        out->reference = "idle_baseline";
        out->reference_w = p->idle_w;
    } else if (p->lowest_ok) {
        out->reference = "lowest_seen";
        out->reference_w = p->lowest_w;
    }
    double w;
    bool none = c->sensor_ok && c->sensor.power_kind == MB_POWER_NONE;
    if (none || !read_power(c, &w)) {
        out->ended = "no_power_reading";
        if (!p->fallback_noted) {
            p->fallback_noted = true;
            mb__rn_emit(
                c, MB_RUNNER_NOTE,
                "cool-down: the device has no power reading; waiting the fixed %.3g s instead",
                (double)m->cooldown_ns / 1e9);
        }
        idle_wait(c, m->cooldown_ns);
        out->seconds = (double)(mb_clock_monotonic_ns() - t0) / 1e9;
        return;
    }
    int64_t settle_end = t0;
    if (c->sensor_ok && c->sensor.power_kind == MB_POWER_AVERAGED)
        settle_end = t0 + (int64_t)c->sensor.power_avg_window_ms * 1000000;
    double limit = out->reference_w * (1.0 + m->cooldown_margin);
    out->ended = "cap";
    for (;;) {
        int64_t t = mb_clock_monotonic_ns();
        if (*c->o->stop)
            break;
        if (t >= settle_end && read_power(c, &w)) {
            out->last_ok = true;
            out->last_w = w;
            if (out->reference && w <= limit) {
                out->ended = "near_idle";
                break;
            }
        }
        if (t >= cap_end)
            break;
        int64_t next = t + m->sample_interval_ns;
        if (t < settle_end && settle_end < next)
            next = settle_end;
        if (next > cap_end)
            next = cap_end;
        idle_wait(c, next - t);
    }
    if (out->last_ok)
        mb__rn_power_seen(c, out->last_w);
    out->seconds = (double)(mb_clock_monotonic_ns() - t0) / 1e9;
}

/* Journals a cool-down that happened ("cooldown" event; job names the exclusive job after it). */
static int journal_cooldown(struct cell *c, const struct cooldown *cd, const char *job)
{
    if (!cd->done || *c->o->stop)
        return MB_OK; /* stopped: the interruption is what the journal records */
    struct mb_jev ev = mb__rn_jev(MB_JEV_COOLDOWN, c);
    ev.job = job;
    mb__rn_fill_cooldown(&ev.cooldown, cd);
    if (cd->ended && strcmp(cd->ended, "no_power_reading") != 0)
        mb__rn_emit(c, MB_RUNNER_NOTE,
                    "cool-down: %.1f s, ended %s (power %.1f W, reference %s %.1f W)", cd->seconds,
                    cd->ended, cd->last_ok ? cd->last_w : -1.0,
                    cd->reference ? cd->reference : "none", cd->reference ? cd->reference_w : -1.0);
    return mb__rn_jappend(c, mb_jev_encode(&ev));
}

static int start_meter(struct cell *c)
{
    int64_t min_window = MIN_ENERGY_WINDOW_NS;
    if (c->sensor_ok && 2LL * c->sensor.power_update_period_ms * 1000000 > min_window)
        min_window = 2LL * c->sensor.power_update_period_ms * 1000000;
    char csv[1200];
    snprintf(csv, sizeof(csv), "%s/telemetry.csv", c->dir);
    struct mb_meter_opts mo = {
        .device_spec = c->o->device_spec,
        .interval_ns = c->o->exp->measure.sample_interval_ns,
        .csv_path = csv,
        .min_window_ns = min_window,
    };
    struct mb_error e;
    int rc = mb_meter_create(&mo, &c->meter, &e);
    if (rc == MB_OK)
        rc = mb_meter_start(c->meter, &e);
    if (rc != MB_OK) {
        mb_meter_destroy(c->meter);
        c->meter = NULL;
        c->meter_failed = true;
        snprintf(c->meter_why, sizeof(c->meter_why), "meter: %.200s", e.msg);
        mb__rn_emit(c, MB_RUNNER_NOTE, "%s", c->meter_why);
        /* A GPU that is lost runs nothing worth measuring: the cell fails with its reason. */
        if (rc == MB_EGONE)
            mb__rn_cell_fail(c, -1, "%s", e.msg);
    }
    return MB_OK;
}

/* Fails the cell when the meter has seen the GPU lost (NVML's GPU_IS_LOST); true if so. */
static bool gpu_lost(struct cell *c)
{
    char why[200];
    if (!c->meter || !mb_meter_lost(c->meter, why, sizeof(why)))
        return false;
    mb__rn_cell_fail(c, -1, "%s", why);
    return true;
}

/* Opens a meter window at t0 (now); -1 when there is no meter or it refuses. */
static int window_begin(struct cell *c, int64_t t0)
{
    int id = -1;
    struct mb_error e;
    if (c->meter && mb_meter_window_begin(c->meter, t0, &id, &e) != MB_OK) {
        mb__rn_emit(c, MB_RUNNER_NOTE, "meter window: %s", e.msg);
        id = -1;
    }
    return id;
}

/* Closes window id at t1 and fills out; without a meter, out says why there is
 * no figure. */
static void window_finish(struct cell *c, int id, int64_t t0, int64_t t1, struct mb_energy *out)
{
    struct mb_error e;
    if (id >= 0 && mb_meter_window_end(c->meter, id, t1, &e) == MB_OK &&
        mb_window_result(c->meter, id, false, out, &e) == MB_OK)
        return;
    memset(out, 0, sizeof(*out));
    out->t0_ns = t0;
    out->t1_ns = t1;
    out->duration_s = (double)(t1 - t0) / 1e9;
    out->refused = true;
    snprintf(out->reason, sizeof(out->reason), "%.190s",
             id >= 0           ? e.msg
             : c->meter_failed ? c->meter_why
                               : "no meter window");
}

/* ---- jobs
 * --------------------------------------------------------------------------------
 */

static void on_job_data(void *ctx, enum mb_proc_stream stream, const char *buf, size_t n,
                        int64_t t_ns)
{
    struct job *j = ctx;
    if (j->window_closed && t_ns > j->win_end_ns)
        return;
    bool wanted = j->regex_mode ? stream == MB_PROC_STDOUT : stream == MB_PROC_PROGRESS;
    if (!wanted)
        return;
    mb_progress_feed(j->prog, buf, n, t_ns);
    struct mb_progress_counts cnt;
    mb_progress_get_counts(j->prog, &cnt);
    if (cnt.records > j->records_seen) {
        j->records_seen = cnt.records;
        j->last_progress_ns = t_ns;
    }
}

static int add_env(struct job *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int add_env(struct job *j, const char *fmt, ...)
{
    if (j->n_env == ENV_MAX)
        return MB_ERANGE;
    char buf[1300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    j->env[j->n_env] = strdup(buf);
    if (!j->env[j->n_env])
        return MB_ENOMEM;
    j->n_env++;
    return MB_OK;
}

static int setup_job(struct cell *c, size_t i)
{
    const struct mb_experiment *exp = c->o->exp;
    const struct mb_exp_run *r = c->run;
    struct job *j = &c->jobs[i];
    memset(j, 0, sizeof(*j));
    j->index = i;
    j->w = &exp->workloads[r->job_workload[i]];
    j->name = r->job_name[i];
    j->instance = -1;
    j->thread_pct = -1;
    j->regex_mode = j->w->progress_regex[0] != '\0';
    struct mb_error e;
    bool gpu = (mb_device_caps(c->o->dev) & MB_CAP_GPU) != 0;
    int rc = mb_experiment_job_argv(j->w, c->o->python, c->o->workloads_dir, gpu, &j->argv, &e);
    if (rc != MB_OK)
        return mb_error_set(c->err, rc, "job %s: %s", j->name, e.msg);
    struct mb_progress_opts po = {
        .regex = j->regex_mode ? j->w->progress_regex : NULL,
        .samples_per_step = j->w->samples_per_step,
        .started_ns = mb_clock_monotonic_ns(), /* before the spawn: bounds the job's clock */
    };
    rc = mb_progress_create(&po, &j->prog, &e);
    if (rc != MB_OK)
        return mb_error_set(c->err, rc, "job %s: %s", j->name, e.msg);
    /* exclusive `on: mig-7g`: every job on the run's one instance, one after another. */
    size_t k = r->on[0] ? 0 : i;
    switch (mb__rn_uses_mig(r) ? MB_MODE_MIG : r->mode) {
    case MB_MODE_MIG:
        j->instance = (int)k;
        rc = add_env(j, "CUDA_VISIBLE_DEVICES=%s%s",
                     strncmp(c->inst[k].uuid, "MIG-", 4) == 0 ? "" : "MIG-", c->inst[k].uuid);
        break;
    case MB_MODE_MPS:
        j->thread_pct = (int)c->pct[i];
        rc = add_env(j, "CUDA_MPS_PIPE_DIRECTORY=%s", c->mps_pipe);
        if (rc == MB_OK)
            rc = add_env(j, "CUDA_MPS_LOG_DIRECTORY=%s", c->mps_log);
        if (rc == MB_OK)
            rc = add_env(j, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=%u", c->pct[i]);
        if (rc == MB_OK && c->info.uuid[0])
            rc = add_env(j, "CUDA_VISIBLE_DEVICES=%s", c->info.uuid);
        break;
    default:
        if (gpu && c->info.uuid[0])
            rc = add_env(j, "CUDA_VISIBLE_DEVICES=%s", c->info.uuid);
        break;
    }
    /* An unmodified Python job block-buffers a piped stdout: its progress lines would arrive in
     * bursts, timed wrong. */
    if (rc == MB_OK && j->w->python_unbuffered)
        rc = add_env(j, "PYTHONUNBUFFERED=1");
    /* A job on an emulated GPU (a test fixture such as fx_model) learns which one, state file
     * included, so an experiment's jobs need not repeat the device spec (and --device works). */
    if (rc == MB_OK && c->o->device_spec && c->o->device_spec[0] &&
        (mb_device_caps(c->o->dev) & MB_CAP_EMULATED))
        rc = add_env(j, "MIGBENCH_DEVICE=%s", c->o->device_spec);
    if (rc != MB_OK)
        return mb_error_set(c->err, rc, "job %s: environment too large", j->name);
    return MB_OK;
}

static void free_job(struct job *j)
{
    mb_proc_destroy(j->proc);
    j->proc = NULL;
    mb_progress_destroy(j->prog);
    j->prog = NULL;
    mb_argv_free(j->argv);
    j->argv = NULL;
    for (size_t k = 0; k < j->n_env; k++)
        free(j->env[k]);
    j->n_env = 0;
}

/* Why a job that ended on its own ended. */
static void describe_exit(struct job *j, bool completion)
{
    int st = mb_proc_wait_status(j->proc);
    if (WIFEXITED(st))
        snprintf(j->fail, sizeof(j->fail), "job %s exited with status %d%s", j->name,
                 WEXITSTATUS(st), completion ? "" : " before the window ended");
    else if (WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL)
        snprintf(j->fail, sizeof(j->fail),
                 "job %s was killed by SIGKILL, not sent by migbench (out of "
                 "memory? the kernel's "
                 "OOM killer sends it)",
                 j->name);
    else if (WIFSIGNALED(st))
        snprintf(j->fail, sizeof(j->fail), "job %s was killed by signal %d (%s)", j->name,
                 WTERMSIG(st), strsignal(WTERMSIG(st)));
    else
        snprintf(j->fail, sizeof(j->fail), "job %s ended (wait status %d)", j->name, st);
}

static bool phase_window_started(struct job **js, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!js[i]->win_start_ns && !js[i]->completed)
            return false;
    return true;
}

static bool all_completed(struct job **js, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!js[i]->completed)
            return false;
    return true;
}

static uint64_t last_step(const struct job *j)
{
    struct mb_progress_point p;
    return mb_progress_last(j->prog, &p) ? p.step : 0;
}

/* Runs jobs js[0..n) together: spawn, warm-up, window, stop. */
/* Starts the phase's jobs, each journaled as started. */
static int spawn_jobs(struct cell *c, struct job **js, size_t n,
                      struct mb_proc *procs[MB_EXP_MAX_JOBS])
{
    struct mb_error e;
    for (size_t i = 0; i < n; i++) {
        struct job *j = js[i];
        char log[1200];
        mb__rn_job_log_path(c, j, log, sizeof(log));
        struct mb_proc_spec spec;
        memset(&spec, 0, sizeof(spec));
        j->env[j->n_env] = NULL;
        spec.argv = j->argv;
        spec.env = j->env;
        spec.cpus = j->has_cpus ? &j->cpus : NULL;
        spec.stdin_null = true;
        spec.progress_pipe = true;
        spec.capture = true;
        spec.pty = j->w->pty;
        spec.log_path = log;
        spec.tee_stdout_fd = -1;
        spec.tee_stderr_fd = -1;
        spec.on_data = on_job_data;
        spec.ctx = j;
        j->started_ns = mb_clock_monotonic_ns();
        j->last_progress_ns = j->started_ns;
        int rc = mb_proc_spawn(&spec, &j->proc, &e);
        if (rc != MB_OK) {
            j->failed = true;
            snprintf(j->fail, sizeof(j->fail), "job %s cannot start: %.400s", j->name, e.msg);
            mb__rn_cell_fail(c, (int)j->index, "%s", j->fail);
            break;
        }
        procs[i] = j->proc;
        struct mb_jev ev = mb__rn_jev(MB_JEV_JOB_STARTED, c);
        ev.job = j->name;
        ev.pid = (long)mb_proc_pid(j->proc);
        if ((rc = mb__rn_jappend(c, mb_jev_encode(&ev))) != MB_OK)
            return rc;
    }
    return MB_OK;
}

/* Reaps finished jobs and fails those that died or stopped reporting progress. */
static void check_jobs(struct cell *c, struct job **js, size_t n, int64_t t, bool completion)
{
    const struct mb_exp_measure *m = &c->o->exp->measure;
    for (size_t i = 0; i < n; i++) {
        struct job *j = js[i];
        if (j->completed)
            continue;
        if (mb_proc_done(j->proc)) {
            j->ended_ns = t;
            int st = mb_proc_wait_status(j->proc);
            if (completion && WIFEXITED(st) && WEXITSTATUS(st) == 0) {
                /* Time-to-completion: its window ends where it finished. */
                j->completed = true;
                if (j->win_start_ns) {
                    j->win_end_ns = t;
                    j->window_closed = true;
                }
                mb__rn_emit(c, MB_RUNNER_NOTE, "job %s completed after %.1fs", j->name,
                            (double)(t - j->started_ns) / 1e9);
                continue;
            }
            j->failed = true;
            describe_exit(j, completion);
            mb__rn_cell_fail(c, (int)j->index, "%s", j->fail);
        } else if (t - j->last_progress_ns > m->progress_timeout_ns) {
            j->failed = true;
            snprintf(j->fail, sizeof(j->fail), "job %s reported no progress for %.0fs%s", j->name,
                     (double)(t - j->last_progress_ns) / 1e9,
                     j->regex_mode && !j->w->pty
                         ? " (is its output block-buffered? pty: true runs it on a terminal)"
                         : "");
            mb__rn_cell_fail(c, (int)j->index, "%s", j->fail);
        }
    }
}

/* Whether the measurement window that began at win_start is over at t. */
static bool window_over(struct cell *c, struct job **js, size_t n, int64_t t, int64_t win_start,
                        int64_t *next_check)
{
    const struct mb_exp_measure *m = &c->o->exp->measure;
    bool end = false;
    if (m->duration.kind == MB_AMOUNT_TIME) {
        end = t - win_start >= m->duration.ns;
    } else if (m->duration.kind == MB_AMOUNT_COMPLETION) {
        if (m->max_duration_ns > 0 && t - win_start >= m->max_duration_ns) {
            end = true;
            mb__rn_emit(c, MB_RUNNER_NOTE, "window reached max_duration before the jobs completed");
        }
    } else if (m->duration.kind == MB_AMOUNT_STEPS) {
        end = true;
        for (size_t i = 0; i < n; i++)
            if (last_step(js[i]) - js[i]->win_start_step < m->duration.steps)
                end = false;
    } else if (t - win_start >= m->max_duration_ns) {
        end = true;
        mb__rn_emit(c, MB_RUNNER_NOTE, "window reached max_duration before the CI target");
    } else if (t >= *next_check && t - win_start >= 2 * NS) {
        *next_check = t + NS;
        end = true;
        for (size_t i = 0; i < n && end; i++) {
            struct mb_throughput tp;
            mb_progress_throughput(js[i]->prog, win_start, 0, 0, 10, &tp);
            if (!tp.valid || !tp.rate.ci_valid || tp.rate.mean <= 0 ||
                tp.rate.ci95_half >= m->ci_target * tp.rate.mean)
                end = false;
        }
    }
    return end;
}

/* Closes every window now, then SIGTERM, SIGKILL after the grace period; returns the end. */
static int64_t stop_jobs(struct cell *c, struct job **js, size_t n,
                         struct mb_proc *procs[MB_EXP_MAX_JOBS])
{
    const struct mb_exp_measure *m = &c->o->exp->measure;
    struct mb_error e;
    int64_t t_end = mb_clock_monotonic_ns();
    mb__rn_emit(c, MB_RUNNER_STOPPING, NULL);
    for (size_t i = 0; i < n; i++) {
        struct job *j = js[i];
        if (j->win_start_ns && !j->win_end_ns) {
            j->win_end_ns = t_end;
            j->window_closed = true;
        }
        if (j->proc && !mb_proc_done(j->proc)) {
            j->stopping = true;
            mb_proc_terminate(j->proc, (int)(m->grace_ns / 1000000));
        }
    }
    for (;;) {
        bool all = true;
        for (size_t i = 0; i < n; i++)
            if (js[i]->proc && !mb_proc_done(js[i]->proc))
                all = false;
        if (all)
            break;
        int prc = mb_proc_poll(procs, n, 50, &e);
        if (prc != MB_OK && prc != MB_EINTR)
            break;
    }
    int64_t t = mb_clock_monotonic_ns();
    for (size_t i = 0; i < n; i++) {
        if (js[i]->proc && !js[i]->ended_ns)
            js[i]->ended_ns = t;
        if (js[i]->prog)
            mb_progress_end(js[i]->prog);
    }
    return t_end;
}

static int run_phase(struct cell *c, struct job **js, size_t n)
{
    const struct mb_exp_measure *m = &c->o->exp->measure;
    struct mb_proc *procs[MB_EXP_MAX_JOBS] = {NULL};
    struct mb_error e;
    int src = spawn_jobs(c, js, n, procs);
    if (src != MB_OK)
        return src;
    mb__rn_emit(c, MB_RUNNER_PHASE_START, NULL);
    int64_t phase_t0 = mb_clock_monotonic_ns();
    int64_t win_start = 0, next_check = 0;
    int win_id = -1;
    bool interrupted = false;
    while (!c->failed) {
        int prc = mb_proc_poll(procs, n, 50, &e);
        if (prc != MB_OK && prc != MB_EINTR) {
            mb__rn_cell_fail(c, -1, "supervising jobs: %s", e.msg);
            break;
        }
        int64_t t = mb_clock_monotonic_ns();
        if (*c->o->stop) {
            interrupted = true;
            break;
        }
        /* A lost GPU is the cause of whatever its jobs do next: it is checked first. */
        if (gpu_lost(c))
            break;
        bool completion = m->duration.kind == MB_AMOUNT_COMPLETION;
        check_jobs(c, js, n, t, completion);
        if (c->failed)
            break;
        if (completion && all_completed(js, n))
            break;
        if (!win_start) {
            bool warm;
            if (m->warmup.kind == MB_AMOUNT_STEPS) {
                warm = true;
                for (size_t i = 0; i < n; i++)
                    if (!js[i]->completed && last_step(js[i]) < m->warmup.steps)
                        warm = false;
            } else {
                warm = t - phase_t0 >= m->warmup.ns;
            }
            if (warm) {
                win_start = t;
                win_id = window_begin(c, t);
                mb__rn_load_begin(c);
                for (size_t i = 0; i < n; i++) {
                    if (js[i]->completed)
                        continue; /* finished within the warm-up: no window */
                    js[i]->win_start_ns = t;
                    js[i]->win_start_step = last_step(js[i]);
                }
                mb__rn_emit(c, MB_RUNNER_WINDOW_START, NULL);
            }
        }
        if (win_start && phase_window_started(js, n)) {
            if (window_over(c, js, n, t, win_start, &next_check))
                break;
        }
        if (t >= c->next_tick_ns) {
            c->next_tick_ns = t + NS;
            mb__rn_emit(c, MB_RUNNER_TICK, NULL);
        }
    }
    int64_t t_end = stop_jobs(c, js, n, procs);
    if (win_start) {
        struct mb_energy en;
        window_finish(c, win_id, win_start, t_end, &en);
        mb__rn_load_end(c, js, n);
        if (en.device_lost)
            mb__rn_cell_fail(c, -1, "%s", en.reason);
        /* A failed cell keeps no figure, but a window the GPU did not live through says so. */
        if ((!c->failed || en.device_lost) && c->n_energy < MB_EXP_MAX_JOBS)
            c->energy[c->n_energy++] = en;
    }
    if (win_start && !c->failed) {
        if (!c->win_first_ns)
            c->win_first_ns = win_start;
        c->win_last_ns = t_end;
    }
    return interrupted ? MB_EINTR : MB_OK;
}

/* ---- the cell
 * ----------------------------------------------------------------------------
 */

/* Sets the run's power limit (the ledger records it first) and journals the change; a limit that
 * cannot be set fails the cell. Returns a journal error, else MB_OK. */
static int power_prepare(struct cell *c)
{
    struct mb_error e;
    if (mb__cell_power_prepare(&c->pw, c->o, c->run, &e) != MB_OK) {
        mb__rn_cell_fail(c, -1, "%s", e.msg);
        return MB_OK;
    }
    if (!c->pw.set)
        return MB_OK;
    struct mb_jev ev = mb__rn_jev(MB_JEV_POWER_LIMIT_SET, c);
    ev.requested = c->pw.requested.text;
    ev.limit_mw = c->pw.requested_mw;
    ev.ledger = c->o->power_ledger;
    mb__rn_emit(c, MB_RUNNER_NOTE, "power limit %s (%.0f W) set", c->pw.requested.text,
                c->pw.requested_mw / 1000.0);
    return mb__rn_jappend(c, mb_jev_encode(&ev));
}

/* Restores what power_prepare set and journals it; a failed restore fails the cell (the ledger
 * keeps the record for the next start). Returns a journal error, else MB_OK. */
static int power_restore(struct cell *c, bool interrupted)
{
    struct mb_error e;
    if (mb__cell_power_restore(&c->pw, c->o, &e) != MB_OK) {
        if (!interrupted)
            mb__rn_cell_fail(c, -1, "cannot restore the power limit: %s", e.msg);
        mb__rn_emit(c, MB_RUNNER_NOTE, "cannot restore the power limit: %s", e.msg);
        return MB_OK;
    }
    if (!c->pw.restored)
        return MB_OK;
    struct mb_jev ev = mb__rn_jev(MB_JEV_POWER_LIMIT_RESTORED, c);
    ev.outcome = mb_powercap_outcome_str(c->pw.outcome);
    return mb__rn_jappend(c, mb_jev_encode(&ev));
}

static double random_offset_s(uint64_t seed, unsigned rep)
{
    if (rep == 0)
        return 0;
    uint64_t x = seed ^ (0x9e3779b97f4a7c15ULL * (rep + 1));
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return (double)(x % 1000) / 1000.0; /* 0 .. 1 s, to decorrelate from periodic effects */
}

/* The jobs' argv and environment, CPU sets in partition mode, thread counts. */
static int prepare_jobs(struct cell *c)
{
    int rc = MB_OK;
    /* Only jobs that were set up count: a cell that failed earlier (a MIG instance NVIDIA would
     * not create, an MPS daemon that would not start) has none, and cell.json lists none. */
    c->n_jobs = 0;
    for (size_t i = 0; i < c->run->n_jobs && !c->failed; i++) {
        c->n_jobs = i + 1;
        if ((rc = setup_job(c, i)) != MB_OK)
            return rc;
    }
    if (c->run->mode == MB_MODE_PARTITION && !c->failed) {
        struct mb_cpuset *sets = calloc(c->n_jobs, sizeof(*sets));
        struct mb_error e;
        if (!sets) {
            return mb_error_set(c->err, MB_ENOMEM, "out of memory");
        }
        if (mb_device_cpu_partitions(c->o->dev, (unsigned)c->n_jobs, sets, &e) != MB_OK) {
            mb__rn_cell_fail(c, -1, "cannot partition the CPUs: %s", e.msg);
        } else {
            for (size_t i = 0; i < c->n_jobs; i++) {
                c->jobs[i].cpus = sets[i];
                c->jobs[i].has_cpus = true;
            }
        }
        free(sets);
    }
    /* Every job's CPU threads match the cores it may use: a baseline that claims the whole
     * device must not run on torch's default of fewer threads. */
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    for (size_t i = 0; i < c->n_jobs && !c->failed; i++) {
        struct job *j = &c->jobs[i];
        j->cores = j->has_cpus ? j->cpus.n : online > 0 ? (unsigned)online : 0;
        if (j->cores > 0 && (rc = add_env(j, "OMP_NUM_THREADS=%u", j->cores)) != MB_OK) {
            rc = mb_error_set(c->err, rc, "job %s: environment too large", j->name);
            return rc;
        }
        /* On the host the CPU is the device being shared: OpenMP threads that spin at barriers
         * while a co-runner (or anything else) holds a core turn every descheduled thread into
         * a stall for the whole job (measured: resnet18 on 2 busy cores ran 2.4 images/s with
         * 2 spinning threads, 46 with 2 passive ones, 31 with 1). Passive waiting measures the
         * sharing, not the spin; a setting in migbench's own environment is left alone. */
        if (!(mb_device_caps(c->o->dev) & MB_CAP_GPU) && !getenv("OMP_WAIT_POLICY") &&
            (rc = add_env(j, "OMP_WAIT_POLICY=PASSIVE")) != MB_OK) {
            rc = mb_error_set(c->err, rc, "job %s: environment too large", j->name);
            return rc;
        }
    }

    return MB_OK;
}

/* The idle baseline before the jobs start: the device's power with nothing running. */
static void idle_baseline(struct cell *c)
{
    const struct mb_exp_measure *m = &c->o->exp->measure;
    if (!c->failed && m->idle_ns > 0) {
        int64_t a = mb_clock_monotonic_ns();
        int id = window_begin(c, a);
        idle_wait(c, m->idle_ns);
        struct mb_energy e;
        window_finish(c, id, a, mb_clock_monotonic_ns(), &e);
        if (e.device_lost)
            mb__rn_cell_fail(c, -1, "%s", e.reason);
        if (e.mean_power_valid && !e.refused) {
            c->idle_power_w = e.mean_power_w;
            c->idle_ok = true;
            mb__rn_power_seen(c, e.mean_power_w);
            if (c->o->power && !c->o->power->idle_ok) {
                c->o->power->idle_ok = true;
                c->o->power->idle_w = e.mean_power_w;
            }
        }
    }
}

/* The cell's device facts, its directories and its "cell_started" event. */
static int cell_begin(struct cell *c)
{
    c->info_ok = mb_device_info(c->o->dev, &c->info, NULL) == MB_OK;
    if (!c->info_ok)
        memset(&c->info, 0, sizeof(c->info));
    c->sensor_ok = mb_device_sensor(c->o->dev, &c->sensor, NULL) == MB_OK;
    int rc = mb_results_cell_dir(c->o->results_dir, c->run->name, c->rep, c->dir, sizeof(c->dir),
                                 c->err);
    if (rc != MB_OK)
        return rc;
    char jobs_dir[1200];
    snprintf(jobs_dir, sizeof(jobs_dir), "%s/jobs", c->dir);
    if ((rc = mb_results_mkdirs(jobs_dir, 0755, c->err)) != MB_OK)
        return rc;
    struct mb_jev e = mb__rn_jev(MB_JEV_CELL_STARTED, c);
    e.mode_name = mb_exp_mode_str(c->run->mode);
    if ((rc = mb__rn_jappend(c, mb_jev_encode(&e))) != MB_OK)
        return rc;
    mb__rn_emit(c, MB_RUNNER_CELL_START, NULL);
    /* A quiet device first, when an earlier cell ran. */
    if (c->o->power && c->o->power->cells_run) {
        cool_down(c, &c->cool);
        rc = journal_cooldown(c, &c->cool, NULL);
    }
    return rc;
}

/* The jobs: one phase with all of them, or (exclusive) one per job with a cool-down between. */
static int run_jobs(struct cell *c, bool *interrupted)
{
    if (c->run->mode != MB_MODE_EXCLUSIVE) {
        struct job *js[MB_EXP_MAX_JOBS];
        for (size_t i = 0; i < c->n_jobs; i++)
            js[i] = &c->jobs[i];
        int prc = run_phase(c, js, c->n_jobs);
        if (prc == MB_EINTR)
            *interrupted = true;
        return prc == MB_EINTR ? MB_OK : prc;
    }
    for (size_t i = 0; i < c->n_jobs && !c->failed && !*interrupted; i++) {
        struct job *js[1] = {&c->jobs[i]};
        int prc = run_phase(c, js, 1);
        if (prc == MB_EINTR)
            *interrupted = true;
        else if (prc != MB_OK)
            return prc;
        /* The next job starts on a quiet device. */
        if (i + 1 < c->n_jobs && !c->failed && !*c->o->stop) {
            cool_down(c, &c->jobs[i + 1].cool);
            int rc = journal_cooldown(c, &c->jobs[i + 1].cool, c->jobs[i + 1].name);
            if (rc != MB_OK)
                return rc;
        }
    }
    return MB_OK;
}

/* Stops whatever still runs, tears the mode down and restores the power limit. */
static int cell_teardown(struct cell *c, bool interrupted)
{
    /* An early failure may have left jobs of this phase running. */
    for (size_t i = 0; i < c->n_jobs; i++)
        if (c->jobs[i].proc && !mb_proc_done(c->jobs[i].proc)) {
            mb_proc_terminate(c->jobs[i].proc, (int)(c->o->exp->measure.grace_ns / 1000000));
            mb_proc_wait(c->jobs[i].proc, -1, NULL);
        }
    int trc = MB_OK;
    if (mb__rn_uses_mig(c->run))
        trc = mb__rn_teardown_mig(c);
    else if (c->run->mode == MB_MODE_MPS)
        trc = mb__rn_teardown_mps(c);
    if (trc != MB_OK && !interrupted)
        mb__rn_cell_fail(c, -1, "could not tear the %s mode down cleanly (see the journal)",
                         mb_exp_mode_str(c->run->mode));
    return power_restore(c, interrupted);
}

/* cell.json, then "cell_finished" or "cell_failed". */
static int cell_record(struct cell *c, double started_unix, double offset_s, bool *failed)
{
    char why[200];
    if (c->meter)
        mb_meter_stop(c->meter, NULL);
    if (c->meter && mb_meter_activity_note(c->meter, why, sizeof(why)))
        mb__rn_emit(c, MB_RUNNER_NOTE,
                    "per-instance activity (telemetry.csv gi*_ columns) left "
                    "empty: %s",
                    why);
    cJSON *cj = mb__rn_cell_json(c, started_unix, offset_s);
    char path[1200];
    snprintf(path, sizeof(path), "%s/cell.json", c->dir);
    int rc = cj ? mb_results_write_json(path, cj, c->err)
                : mb_error_set(c->err, MB_ENOMEM, "out of memory");
    cJSON_Delete(cj);
    if (rc != MB_OK)
        return rc;
    struct mb_jev e = mb__rn_jev(c->failed ? MB_JEV_CELL_FAILED : MB_JEV_CELL_FINISHED, c);
    e.seconds = (double)(mb_clock_monotonic_ns() - c->t0_ns) / 1e9;
    e.reason = c->fail;
    rc = mb__rn_jappend(c, mb_jev_encode(&e));
    if (c->failed)
        mb__rn_emit(c, MB_RUNNER_NOTE, "cell failed: %s", c->fail);
    *failed = c->failed;
    return rc;
}

/* The mode, the jobs' setup and the meter, then the jobs. */
static int cell_work(struct cell *c, bool *interrupted)
{
    int rc = MB_OK;
    if (mb__rn_uses_mig(c->run))
        rc = mb__rn_prepare_mig(c);
    else if (c->run->mode == MB_MODE_MPS)
        rc = mb__rn_prepare_mps(c);
    if (rc != MB_OK || (rc = prepare_jobs(c)) != MB_OK)
        return rc;
    if (!c->failed)
        start_meter(c);
    idle_baseline(c);
    if (*c->o->stop)
        *interrupted = true;
    if (!c->failed && !*interrupted)
        rc = run_jobs(c, interrupted);
    return rc;
}

int mb_runner_run_cell(const struct mb_runner_opts *opts, const struct mb_cell *cellp, bool *failed,
                       struct mb_error *err)
{
    *failed = false;
    struct cell *c = calloc(1, sizeof(*c));
    if (!c)
        return mb_error_set(err, MB_ENOMEM, "out of memory");
    c->o = opts;
    c->run = &opts->exp->runs[cellp->run];
    c->rep = cellp->rep;
    c->err = err;
    c->fail_job = -1;
    c->t0_ns = mb_clock_monotonic_ns();
    c->next_tick_ns = c->t0_ns + NS;
    double started_unix = wall_s();
    bool interrupted = false;
    double offset_s = 0;
    int rc = cell_begin(c);
    if (rc != MB_OK)
        goto out;
    offset_s = random_offset_s(opts->seed, c->rep);
    if (offset_s > 0)
        idle_wait(c, (int64_t)(offset_s * 1e9));
    if ((rc = power_prepare(c)) == MB_OK && !c->failed)
        rc = cell_work(c, &interrupted);
    int prc = cell_teardown(c, interrupted);
    if (rc == MB_OK)
        rc = prc;
    if (rc == MB_OK && (interrupted || *opts->stop))
        rc = mb_error_set(err, MB_EINTR, "interrupted");
    if (rc == MB_OK)
        rc = cell_record(c, started_unix, offset_s, failed);
out:
    if (opts->power)
        opts->power->cells_run = true;
    for (size_t i = 0; i < MB_EXP_MAX_JOBS; i++)
        free_job(&c->jobs[i]);
    mb_meter_destroy(c->meter);
    mb_mig_ledger_close(c->ledger);
    free(c);
    return rc;
}
