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

extern char **environ;

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

static double wall_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void emit(struct cell *c, enum mb_runner_event_kind kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Keeps the lowest power reading of the experiment (the cool-down's fallback reference). */
static void power_seen(struct cell *c, double w)
{
    struct mb_runner_power *p = c->o->power;
    if (!p || !(w >= 0))
        return;
    if (!p->lowest_ok || w < p->lowest_w) {
        p->lowest_w = w;
        p->lowest_ok = true;
    }
}

static void emit(struct cell *c, enum mb_runner_event_kind kind, const char *fmt, ...)
{
    struct mb_telemetry tel;
    bool tel_ok = c->meter && mb_meter_latest(c->meter, &tel) && (tel.valid & MB_TEL_POWER);
    if (tel_ok)
        power_seen(c, tel.power_mw / 1000.0);
    if (!c->o->on_event)
        return;
    struct mb_runner_event ev;
    memset(&ev, 0, sizeof(ev));
    char text[REASON_MAX];
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(text, sizeof(text), fmt, ap);
        va_end(ap);
        ev.text = text;
    }
    ev.kind = kind;
    ev.run = c->run->name;
    ev.rep = c->rep;
    int64_t t = mb_clock_monotonic_ns();
    ev.elapsed_s = (double)(t - c->t0_ns) / 1e9;
    ev.power_w = tel_ok ? tel.power_mw / 1000.0 : -1;
    const struct mb_exp_measure *m = &c->o->exp->measure;
    for (size_t i = 0; i < c->n_jobs; i++) {
        struct job *j = &c->jobs[i];
        if (!j->proc || j->ended_ns)
            continue;
        if (j->win_start_ns) {
            ev.window_s = (double)(t - j->win_start_ns) / 1e9;
            if (m->duration.kind == MB_AMOUNT_TIME)
                ev.window_target_s = (double)m->duration.ns / 1e9;
        }
        size_t k = ev.n_jobs++;
        ev.job_names[k] = j->name;
        ev.rate[k] = -1;
        ev.rate_unit[k] = j->w->unit;
        struct mb_throughput tp;
        int64_t origin = j->win_start_ns ? j->win_start_ns : j->started_ns;
        mb_progress_throughput(j->prog, origin, 0, 0, 4, &tp);
        if (tp.valid) {
            ev.rate[k] = tp.rate.mean;
            ev.rate_unit[k] = tp.unit_is_samples ? j->w->unit : "steps";
        }
    }
    c->o->on_event(c->o->ctx, &ev);
}

static cJSON *num_or_null(bool ok, double v)
{
    return ok && isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull();
}

static cJSON *str_or_null(const char *s)
{
    return s && s[0] ? cJSON_CreateString(s) : cJSON_CreateNull();
}

static int jappend(struct cell *c, cJSON *o)
{
    struct mb_error e;
    int rc = o ? mb_journal_append(c->o->journal, o, &e) : MB_ENOMEM;
    cJSON_Delete(o);
    if (rc != MB_OK)
        mb_error_set(c->err, rc, "journal: %s", o ? e.msg : "out of memory");
    return rc;
}

/*
 * "slurm": the Slurm job this process runs in (its environment), or nothing outside Slurm. The
 * job is "<array job>_<task>" for an array task, else the job id: what `slurm status` names.
 */
static void add_slurm(cJSON *o)
{
    const char *job = getenv("SLURM_JOB_ID");
    if (!job || !job[0])
        return;
    const char *array = getenv("SLURM_ARRAY_JOB_ID");
    const char *task = getenv("SLURM_ARRAY_TASK_ID");
    const char *node = getenv("SLURMD_NODENAME");
    cJSON *s = cJSON_AddObjectToObject(o, "slurm");
    if (!s)
        return;
    char name[160];
    if (array && array[0] && task && task[0])
        snprintf(name, sizeof(name), "%.60s_%.60s", array, task);
    else
        snprintf(name, sizeof(name), "%.60s", job);
    cJSON_AddStringToObject(s, "job", name);
    cJSON_AddStringToObject(s, "job_id", job);
    cJSON_AddItemToObject(s, "array_job_id", str_or_null(array && array[0] ? array : NULL));
    cJSON_AddItemToObject(s, "array_task_id", str_or_null(task && task[0] ? task : NULL));
    cJSON_AddItemToObject(s, "node", str_or_null(node && node[0] ? node : NULL));
}

static cJSON *jevent(const char *name, const struct cell *c)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cJSON_AddStringToObject(o, "event", name);
    if (c) {
        cJSON_AddStringToObject(o, "run", c->run->name);
        cJSON_AddNumberToObject(o, "rep", c->rep);
        add_slurm(o);
    }
    return o;
}

static void cell_fail(struct cell *c, int job, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void cell_fail(struct cell *c, int job, const char *fmt, ...)
{
    if (c->failed)
        return; /* the first failure is the cause; later ones are consequences */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->fail, sizeof(c->fail), fmt, ap);
    va_end(ap);
    c->failed = true;
    c->fail_job = job;
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
            emit(c, MB_RUNNER_NOTE,
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
        power_seen(c, out->last_w);
    out->seconds = (double)(mb_clock_monotonic_ns() - t0) / 1e9;
}

static cJSON *cooldown_json(const struct cooldown *cd)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cJSON_AddItemToObject(o, "seconds", num_or_null(cd->done, cd->seconds));
    cJSON_AddItemToObject(o, "ended", str_or_null(cd->done ? cd->ended : NULL));
    cJSON_AddItemToObject(o, "reference", str_or_null(cd->done ? cd->reference : NULL));
    cJSON_AddItemToObject(o, "reference_w",
                          num_or_null(cd->done && cd->reference, cd->reference_w));
    cJSON_AddItemToObject(o, "power_w", num_or_null(cd->done && cd->last_ok, cd->last_w));
    return o;
}

/* Journals a cool-down that happened ("cooldown" event; job names the exclusive job after it). */
static int journal_cooldown(struct cell *c, const struct cooldown *cd, const char *job)
{
    if (!cd->done || *c->o->stop)
        return MB_OK; /* stopped: the interruption is what the journal records */
    cJSON *o = jevent("cooldown", c);
    cJSON *d = cooldown_json(cd);
    if (o && d) {
        if (job)
            cJSON_AddStringToObject(o, "before_job", job);
        for (cJSON *it = d->child; it; it = it->next)
            cJSON_AddItemToObject(o, it->string, cJSON_Duplicate(it, true));
    }
    cJSON_Delete(d);
    if (!d) {
        cJSON_Delete(o);
        o = NULL;
    }
    if (cd->ended && strcmp(cd->ended, "no_power_reading") != 0)
        emit(c, MB_RUNNER_NOTE, "cool-down: %.1f s, ended %s (power %.1f W, reference %s %.1f W)",
             cd->seconds, cd->ended, cd->last_ok ? cd->last_w : -1.0,
             cd->reference ? cd->reference : "none", cd->reference ? cd->reference_w : -1.0);
    return jappend(c, o);
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
    if (mb_meter_create(&mo, &c->meter, &e) != MB_OK || mb_meter_start(c->meter, &e) != MB_OK) {
        mb_meter_destroy(c->meter);
        c->meter = NULL;
        c->meter_failed = true;
        snprintf(c->meter_why, sizeof(c->meter_why), "meter: %.200s", e.msg);
        emit(c, MB_RUNNER_NOTE, "%s", c->meter_why);
    }
    return MB_OK;
}

/* Opens a meter window at t0 (now); -1 when there is no meter or it refuses. */
static int window_begin(struct cell *c, int64_t t0)
{
    int id = -1;
    struct mb_error e;
    if (c->meter && mb_meter_window_begin(c->meter, t0, &id, &e) != MB_OK) {
        emit(c, MB_RUNNER_NOTE, "meter window: %s", e.msg);
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
        mb_meter_window_result(c->meter, id, 5000, out, &e) == MB_OK)
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

/* ---- helper processes (MPS control)
 * ------------------------------------------------------ */

static int mps_quit(const char *pipe_dir, const char *log_dir, char *why, size_t cap)
{
    char pe[1200], le[1200], log[1200];
    snprintf(pe, sizeof(pe), "CUDA_MPS_PIPE_DIRECTORY=%s", pipe_dir);
    snprintf(le, sizeof(le), "CUDA_MPS_LOG_DIRECTORY=%s", log_dir[0] ? log_dir : pipe_dir);
    snprintf(log, sizeof(log), "%s/control-client.log", log_dir[0] ? log_dir : pipe_dir);
    char *env[] = {pe, le, NULL};
    char *argv[] = {(char *)MPS_CONTROL, NULL};
    int code = mb_proc_run_helper(argv, env, "quit\n", log, 15000, why, cap);
    if (code > 0)
        snprintf(why, cap, "%s quit exited %d (see %.150s)", MPS_CONTROL, code, log);
    return code == 0 ? MB_OK : MB_EDEVICE;
}

/* ---- mode preparation
 * -------------------------------------------------------------------- */

/* Where the run's layout goes beside what exists: placed[i] for job i. */
static int plan_mig(struct mb_device *dev, const struct mb_gpu_model *m, const struct mb_exp_run *r,
                    struct mb_layout_item placed[MB_EXP_MAX_JOBS], struct mb_error *err)
{
    struct mb_layout existing, out;
    int rc = mb_mig_current_layout(dev, m, &existing, err);
    if (rc != MB_OK)
        return rc;
    unsigned add[MB_EXP_MAX_JOBS];
    for (size_t i = 0; i < r->n_layout; i++) {
        const struct mb_gi_profile *p;
        struct mb_error e;
        if (mb_model_profile_resolve(m, r->layout[i], &p, &e) != MB_OK)
            return mb_error_set(err, MB_EINVAL, "run '%s': %s", r->name, e.msg);
        add[i] = (unsigned)(p - m->profiles);
    }
    rc = mb_layout_place(m, &existing, add, r->n_layout, &out, err);
    if (rc != MB_OK)
        return rc;
    /* out is in creation order; give job i the first unused instance of its
     * profile. */
    bool used[MB_LAYOUT_MAX] = {false};
    for (size_t i = 0; i < r->n_layout; i++) {
        size_t k;
        for (k = 0; k < out.n; k++)
            if (!used[k] && out.items[k].profile == add[i])
                break;
        if (k == out.n)
            return mb_error_set(err, MB_EINFEASIBLE, "run '%s': no placement for %s", r->name,
                                r->layout[i]);
        used[k] = true;
        placed[i] = out.items[k];
    }
    return MB_OK;
}

/* The run's jobs run on MIG instances: mode mig, or exclusive `on: mig-SIZE`. */
static bool uses_mig(const struct mb_exp_run *r)
{
    return r->mode == MB_MODE_MIG || r->on[0];
}

static int open_ledger(struct cell *c)
{
    struct mb_error e;
    if (!c->ledger && mb_mig_ledger_open(c->o->dev, c->o->device_spec, &c->ledger, &e) != MB_OK) {
        cell_fail(c, -1, "MIG ownership ledger: %s", e.msg);
        return MB_EIO;
    }
    return MB_OK;
}

/* The create/destroy hooks' view of one instance of the cell. */
struct mig_step {
    struct cell *c;
    struct inst *in;
    int journal_rc;
};

/*
 * The journal's "mig_created"/"mig_destroyed" events name the instance and the ledger that
 * records it ("ledger": its path): the ledger is the record --resume cleans from.
 */
static cJSON *mig_event(const char *name, const struct cell *c, unsigned gi_id)
{
    cJSON *o = jevent(name, c);
    if (o) {
        cJSON_AddStringToObject(o, "gpu_uuid", c->info.uuid);
        cJSON_AddNumberToObject(o, "gi_id", gi_id);
    }
    return o;
}

static int mig_made(void *ctx, enum mb_mig_step step, unsigned gi_id, unsigned ci_id,
                    struct mb_error *err)
{
    struct mig_step *st = ctx;
    struct inst *in = st->in;
    if (step == MB_MIG_STEP_GI) {
        in->gi_made = true;
        in->gi_id = gi_id;
    } else {
        in->ci_made = true;
        in->ci_id = ci_id;
    }
    cJSON *o = mig_event("mig_created", st->c, gi_id);
    if (o && step == MB_MIG_STEP_GI) {
        cJSON_AddStringToObject(o, "profile", in->profile);
        cJSON *pl = cJSON_AddObjectToObject(o, "placement");
        cJSON_AddNumberToObject(pl, "start", in->placement.start);
        cJSON_AddNumberToObject(pl, "size", in->placement.size);
    } else if (o) {
        cJSON_AddNumberToObject(o, "ci_id", ci_id);
    }
    if (o)
        cJSON_AddStringToObject(o, "ledger", mb_mig_ledger_path(st->c->ledger));
    int rc = jappend(st->c, o);
    return rc == MB_OK ? MB_OK : mb_error_set(err, rc, "%s", st->c->err->msg);
}

static int mig_destroyed(void *ctx, enum mb_mig_step step, unsigned gi_id, unsigned ci_id,
                         struct mb_error *err)
{
    struct mig_step *st = ctx;
    cJSON *o = mig_event("mig_destroyed", st->c, gi_id);
    if (step == MB_MIG_STEP_CI) {
        st->in->ci_made = false;
        if (o)
            cJSON_AddNumberToObject(o, "ci_id", ci_id);
    } else {
        st->in->gi_made = false;
    }
    if (o)
        cJSON_AddStringToObject(o, "ledger", mb_mig_ledger_path(st->c->ledger));
    int rc = jappend(st->c, o);
    if (rc != MB_OK)
        st->journal_rc = rc;
    return rc == MB_OK ? MB_OK : mb_error_set(err, rc, "%s", st->c->err->msg);
}

/* Largest first (the order the layout engine chose): order[] of the cell's layout. */
static void creation_order(const struct mb_gpu_model *m, const struct mb_layout_item *placed,
                           size_t n, size_t *order)
{
    for (size_t i = 0; i < n; i++)
        order[i] = i;
    for (size_t a = 1; a < n; a++)
        for (size_t b = a; b > 0; b--) {
            const struct mb_gi_profile *pa = &m->profiles[placed[order[b]].profile];
            const struct mb_gi_profile *pb = &m->profiles[placed[order[b - 1]].profile];
            if (pa->memory_slices <= pb->memory_slices)
                break;
            size_t t = order[b];
            order[b] = order[b - 1];
            order[b - 1] = t;
        }
}

/* Creates one instance of the layout through the one create (mb_mig_create). */
static int create_inst(struct cell *c, struct inst *in, unsigned driver_id)
{
    const struct mb_mig_new req = {driver_id, in->profile, in->placement, MB_MIG_BY_RUN,
                                   c->o->results_dir};
    struct mig_step st = {c, in, MB_OK};
    const struct mb_mig_hooks hooks = {mig_made, NULL, &st};
    struct mb_mig_made made;
    struct mb_error e;
    int rc = mb_mig_create(c->o->dev, c->ledger, &req, &hooks, &made, &e);
    snprintf(in->uuid, sizeof(in->uuid), "%s", made.uuid);
    if (made.ledger_note[0])
        emit(c, MB_RUNNER_NOTE, "MIG ownership ledger: %s", made.ledger_note);
    if (rc == MB_OK)
        return MB_OK;
    switch (made.failed) {
    case MB_MIG_STEP_LEDGER:
        cell_fail(c, -1, "cannot record the instance before creating it: %s", e.msg);
        break;
    case MB_MIG_STEP_GI:
        cell_fail(c, -1, "cannot create GPU instance %s at slice %u: %s", in->profile,
                  in->placement.start, e.msg);
        break;
    case MB_MIG_STEP_CI:
        cell_fail(c, -1, "cannot create the compute instance in GPU instance %u: %s", in->gi_id,
                  e.msg);
        break;
    default:
        return rc; /* the journal refused (c->err says why) */
    }
    return MB_OK; /* the cell failed (c->failed); the run goes on */
}

/* The device's profile named like the catalog's (NULL: the device does not offer it). */
static const struct mb_device_profile *device_profile(const struct mb_device_profile *dp, size_t n,
                                                      const char *name)
{
    const struct mb_device_profile *found = NULL;
    for (size_t k = 0; k < n; k++)
        if (strcasecmp(dp[k].name, name) == 0)
            found = &dp[k];
    return found;
}

static int prepare_mig(struct cell *c)
{
    const struct mb_exp_run *r = c->run;
    const struct mb_gpu_model *m = c->o->model;
    struct mb_error e;
    if (!m) {
        cell_fail(c, -1, "mode mig: the device's model is not in the catalog");
        return MB_OK;
    }
    struct mb_layout_item placed[MB_EXP_MAX_JOBS];
    if (plan_mig(c->o->dev, m, r, placed, &e) != MB_OK) {
        cell_fail(c, -1, "cannot place layout: %s", e.msg);
        return MB_OK;
    }
    struct mb_device_profile dp[MB_MAX_PROFILES];
    size_t n_dp = 0;
    if (mb_device_mig_profiles(c->o->dev, dp, MB_MAX_PROFILES, &n_dp, &e) != MB_OK) {
        cell_fail(c, -1, "cannot list MIG profiles: %s", e.msg);
        return MB_OK;
    }
    if (open_ledger(c) != MB_OK)
        return MB_OK;
    int64_t t_start = mb_clock_monotonic_ns();
    /* Each instance is in the ledger before it exists (mb_mig_create), so that a crash at any
     * point leaves a record that names everything. */
    size_t order[MB_EXP_MAX_JOBS];
    creation_order(m, placed, r->n_layout, order);
    c->n_inst = r->n_layout;
    for (size_t oi = 0; oi < r->n_layout; oi++) {
        struct inst *in = &c->inst[order[oi]];
        const struct mb_gi_profile *gp = &m->profiles[placed[order[oi]].profile];
        snprintf(in->profile, sizeof(in->profile), "%s", gp->name);
        snprintf(in->requested, sizeof(in->requested), "%s", r->layout[order[oi]]);
        in->placement = placed[order[oi]].placement;
        const struct mb_device_profile *dprof = device_profile(dp, n_dp, gp->name);
        if (!dprof) {
            cell_fail(c, -1, "the device does not offer profile %s", gp->name);
            return MB_OK;
        }
        int rc = create_inst(c, in, dprof->driver_id);
        if (rc != MB_OK || c->failed)
            return rc;
        char sl[32];
        mb_layout_slices_str(in->placement, sl, sizeof(sl));
        emit(c, MB_RUNNER_NOTE, "created %s at memory slices %s (GI %u, CI %u)", gp->name, sl,
             in->gi_id, in->ci_id);
    }
    c->reconfigure_s = (double)(mb_clock_monotonic_ns() - t_start) / 1e9;
    for (size_t i = 0; i < c->n_inst; i++)
        if (!c->inst[i].uuid[0]) {
            cell_fail(c, -1, "the device reports no UUID for GI %u CI %u", c->inst[i].gi_id,
                      c->inst[i].ci_id);
            return MB_OK;
        }
    return MB_OK;
}

/* Destroys what the cell made through the one destroy (mb_mig_destroy); each GI loses its CI
 * first. */
static int teardown_mig(struct cell *c)
{
    int rc = MB_OK;
    for (size_t i = c->n_inst; i-- > 0;) {
        struct inst *in = &c->inst[i];
        if (!in->gi_made)
            continue;
        struct mb_mig_gi g;
        memset(&g, 0, sizeof(g));
        g.id = in->gi_id;
        snprintf(g.profile_name, sizeof(g.profile_name), "%s", in->profile);
        g.placement = in->placement;
        g.n_ci = in->ci_made ? 1 : 0;
        g.ci[0] = in->ci_id;
        struct mig_step st = {c, in, MB_OK};
        const struct mb_mig_hooks hooks = {NULL, mig_destroyed, &st};
        struct mb_error e;
        if (mb_mig_destroy(c->o->dev, c->ledger, &g, &hooks, &e) != MB_OK && st.journal_rc == MB_OK)
            emit(c, MB_RUNNER_NOTE, "%s", e.msg);
        if (in->gi_made)
            rc = MB_EBUSY;
        else if (st.journal_rc != MB_OK)
            rc = MB_EIO;
    }
    return rc;
}

static bool on_path(const char *name)
{
    const char *path = getenv("PATH");
    if (!path)
        return false;
    for (const char *p = path; *p;) {
        const char *colon = strchr(p, ':');
        size_t l = colon ? (size_t)(colon - p) : strlen(p);
        char cand[1200];
        snprintf(cand, sizeof(cand), "%.*s/%s", (int)l, l ? p : ".", name);
        if (access(cand, X_OK) == 0)
            return true;
        if (!colon)
            break;
        p = colon + 1;
    }
    return false;
}

static int prepare_mps(struct cell *c)
{
    struct mb_error e;
    char base[1100];
    snprintf(base, sizeof(base), "%s/mps/%s-%u", c->o->results_dir, c->run->name, c->rep);
    snprintf(c->mps_pipe, sizeof(c->mps_pipe), "%.1000s/pipe", base);
    snprintf(c->mps_log, sizeof(c->mps_log), "%.1000s/log", base);
    if (mb_results_mkdirs(c->mps_pipe, 0700, &e) != MB_OK ||
        mb_results_mkdirs(c->mps_log, 0700, &e) != MB_OK) {
        cell_fail(c, -1, "MPS directories: %s", e.msg);
        return MB_OK;
    }
    chmod(base, 0700);
    chmod(c->mps_pipe, 0700);
    chmod(c->mps_log, 0700);
    mb_exp_run_thread_pct(c->run, c->o->model ? c->o->model->compute_slices : 7, c->pct);
    if ((mb_device_caps(c->o->dev) & MB_CAP_EMULATED) && !on_path(MPS_CONTROL)) {
        /* No NVIDIA utilities and no GPU for a daemon to serve: the jobs share the emulated GPU
         * with the MPS environment they would get, and cell.json says there was no daemon. */
        c->mps_emulated = true;
        emit(c, MB_RUNNER_NOTE, "emulated GPU: no MPS daemon; the jobs get its environment");
        return MB_OK;
    }
    /* Journal first: if we die between starting the daemon and journaling it,
     * --resume must still know to tell it to quit (quitting a daemon that never
     * started is harmless). */
    cJSON *o = jevent("mps_started", c);
    if (o) {
        cJSON_AddNullToObject(o, "pid");
        cJSON_AddStringToObject(o, "pipe_dir", c->mps_pipe);
        cJSON_AddStringToObject(o, "log_dir", c->mps_log);
    }
    int rc = jappend(c, o);
    if (rc != MB_OK)
        return rc;
    c->mps_up = true;
    char pe[1200], le[1200], log[1200], why[256];
    snprintf(pe, sizeof(pe), "CUDA_MPS_PIPE_DIRECTORY=%s", c->mps_pipe);
    snprintf(le, sizeof(le), "CUDA_MPS_LOG_DIRECTORY=%s", c->mps_log);
    snprintf(log, sizeof(log), "%s/control-start.log", c->mps_log);
    char cvd[MB_UUID_MAX + 32];
    snprintf(cvd, sizeof(cvd), "CUDA_VISIBLE_DEVICES=%s", c->info.uuid);
    char *env[] = {pe, le, c->info.uuid[0] ? cvd : NULL, NULL};
    char *argv[] = {(char *)MPS_CONTROL, (char *)"-d", NULL};
    int code = mb_proc_run_helper(argv, env, NULL, log, 15000, why, sizeof(why));
    if (code != 0) {
        if (code > 0)
            snprintf(why, sizeof(why), "%s -d exited %d (see %.150s)", MPS_CONTROL, code, log);
        cell_fail(c, -1, "cannot start MPS: %s", why);
    } else {
        emit(c, MB_RUNNER_NOTE, "MPS control daemon started (pipe %s)", c->mps_pipe);
    }
    return MB_OK;
}

static int teardown_mps(struct cell *c)
{
    if (!c->mps_up)
        return MB_OK;
    char why[256] = "";
    int rc = mps_quit(c->mps_pipe, c->mps_log, why, sizeof(why));
    if (rc != MB_OK)
        emit(c, MB_RUNNER_NOTE, "MPS quit failed: %s", why);
    c->mps_up = false;
    cJSON *o = jevent("mps_stopped", c);
    if (o) {
        cJSON_AddStringToObject(o, "pipe_dir", c->mps_pipe);
        cJSON_AddBoolToObject(o, "ok", rc == MB_OK);
    }
    int jrc = jappend(c, o);
    return rc != MB_OK ? rc : jrc;
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
    };
    rc = mb_progress_create(&po, &j->prog, &e);
    if (rc != MB_OK)
        return mb_error_set(c->err, rc, "job %s: %s", j->name, e.msg);
    /* exclusive `on: mig-7g`: every job on the run's one instance, one after another. */
    size_t k = r->on[0] ? 0 : i;
    switch (uses_mig(r) ? MB_MODE_MIG : r->mode) {
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

static void job_log_path(const struct cell *c, const struct job *j, char *out, size_t cap)
{
    snprintf(out, cap, "%s/jobs/%s.log", c->dir, j->name);
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
        job_log_path(c, j, log, sizeof(log));
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
            cell_fail(c, (int)j->index, "%s", j->fail);
            break;
        }
        procs[i] = j->proc;
        cJSON *o = jevent("job_started", c);
        if (o) {
            cJSON_AddStringToObject(o, "job", j->name);
            cJSON_AddNumberToObject(o, "pid", (double)mb_proc_pid(j->proc));
        }
        if ((rc = jappend(c, o)) != MB_OK)
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
                emit(c, MB_RUNNER_NOTE, "job %s completed after %.1fs", j->name,
                     (double)(t - j->started_ns) / 1e9);
                continue;
            }
            j->failed = true;
            describe_exit(j, completion);
            cell_fail(c, (int)j->index, "%s", j->fail);
        } else if (t - j->last_progress_ns > m->progress_timeout_ns) {
            j->failed = true;
            snprintf(j->fail, sizeof(j->fail), "job %s reported no progress for %.0fs%s", j->name,
                     (double)(t - j->last_progress_ns) / 1e9,
                     j->regex_mode && !j->w->pty
                         ? " (is its output block-buffered? pty: true runs it on a terminal)"
                         : "");
            cell_fail(c, (int)j->index, "%s", j->fail);
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
            emit(c, MB_RUNNER_NOTE, "window reached max_duration before the jobs completed");
        }
    } else if (m->duration.kind == MB_AMOUNT_STEPS) {
        end = true;
        for (size_t i = 0; i < n; i++)
            if (last_step(js[i]) - js[i]->win_start_step < m->duration.steps)
                end = false;
    } else if (t - win_start >= m->max_duration_ns) {
        end = true;
        emit(c, MB_RUNNER_NOTE, "window reached max_duration before the CI target");
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
    emit(c, MB_RUNNER_STOPPING, NULL);
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
    emit(c, MB_RUNNER_PHASE_START, NULL);
    int64_t phase_t0 = mb_clock_monotonic_ns();
    int64_t win_start = 0, next_check = 0;
    int win_id = -1;
    bool interrupted = false;
    while (!c->failed) {
        int prc = mb_proc_poll(procs, n, 50, &e);
        if (prc != MB_OK && prc != MB_EINTR) {
            cell_fail(c, -1, "supervising jobs: %s", e.msg);
            break;
        }
        int64_t t = mb_clock_monotonic_ns();
        if (*c->o->stop) {
            interrupted = true;
            break;
        }
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
                for (size_t i = 0; i < n; i++) {
                    if (js[i]->completed)
                        continue; /* finished within the warm-up: no window */
                    js[i]->win_start_ns = t;
                    js[i]->win_start_step = last_step(js[i]);
                }
                emit(c, MB_RUNNER_WINDOW_START, NULL);
            }
        }
        if (win_start && phase_window_started(js, n)) {
            if (window_over(c, js, n, t, win_start, &next_check))
                break;
        }
        if (t >= c->next_tick_ns) {
            c->next_tick_ns = t + NS;
            emit(c, MB_RUNNER_TICK, NULL);
        }
    }
    int64_t t_end = stop_jobs(c, js, n, procs);
    if (win_start) {
        struct mb_energy en;
        window_finish(c, win_id, win_start, t_end, &en);
        if (!c->failed && c->n_energy < MB_EXP_MAX_JOBS)
            c->energy[c->n_energy++] = en;
    }
    if (win_start && !c->failed) {
        if (!c->win_first_ns)
            c->win_first_ns = win_start;
        c->win_last_ns = t_end;
    }
    return interrupted ? MB_EINTR : MB_OK;
}

/* ---- cell.json
 * ---------------------------------------------------------------------------
 */

static void read_tail(const char *path, char *out, size_t cap)
{
    out[0] = '\0';
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    off_t end = lseek(fd, 0, SEEK_END);
    off_t start = end > TAIL_BYTES ? end - TAIL_BYTES : 0;
    char buf[TAIL_BYTES + 1];
    ssize_t got = pread(fd, buf, (size_t)(end - start), start);
    close(fd);
    if (got <= 0)
        return;
    buf[got] = '\0';
    /* Keep the last TAIL_LINES lines. */
    int lines = 0;
    char *p = buf + got;
    if (p > buf && p[-1] == '\n')
        p--;
    while (p > buf) {
        if (p[-1] == '\n' && ++lines == TAIL_LINES)
            break;
        p--;
    }
    for (char *q = p; *q; q++)
        if ((unsigned char)*q < 0x20 && *q != '\n' && *q != '\t')
            *q = '?';
    snprintf(out, cap, "%s", p);
}

static cJSON *device_json(struct cell *c)
{
    cJSON *d = cJSON_CreateObject();
    const struct mb_device_info *di = &c->info;
    cJSON_AddStringToObject(d, "backend", mb_device_backend(c->o->dev));
    cJSON_AddBoolToObject(d, "emulated", c->info_ok && di->emulated);
    cJSON_AddItemToObject(d, "name", str_or_null(c->info_ok ? di->name : NULL));
    cJSON_AddItemToObject(d, "model", str_or_null(c->info_ok ? di->model : NULL));
    cJSON_AddItemToObject(d, "uuid", str_or_null(c->info_ok ? di->uuid : NULL));
    cJSON_AddItemToObject(d, "driver_version", str_or_null(c->info_ok ? di->driver_version : NULL));
    cJSON_AddItemToObject(d, "nvml_version", str_or_null(c->info_ok ? di->nvml_version : NULL));
    bool lim = false;
    double lim_mw = 0;
    struct mb_telemetry tel;
    if (c->meter && mb_meter_latest(c->meter, &tel) && (tel.valid & MB_TEL_POWER_LIMIT)) {
        lim = true;
        lim_mw = tel.power_limit_mw;
    }
    cJSON_AddItemToObject(d, "power_limit_mw", num_or_null(lim, lim_mw));
    if (c->sensor_ok) {
        const struct mb_sensor_info *s = &c->sensor;
        cJSON *so = cJSON_AddObjectToObject(d, "sensor");
        cJSON_AddStringToObject(so, "power_kind", mb_power_kind_str(s->power_kind));
        cJSON_AddItemToObject(
            so, "power_update_period_ms",
            num_or_null(s->power_update_period_ms > 0, s->power_update_period_ms));
        cJSON_AddItemToObject(so, "power_avg_window_ms",
                              num_or_null(s->power_avg_window_ms > 0, s->power_avg_window_ms));
        cJSON_AddBoolToObject(so, "has_energy_counter", s->has_energy_counter);
        cJSON_AddItemToObject(
            so, "energy_update_period_ms",
            num_or_null(s->energy_update_period_ms > 0, s->energy_update_period_ms));
        cJSON_AddItemToObject(so, "scope", str_or_null(s->scope));
        cJSON_AddItemToObject(so, "source", str_or_null(s->source));
    } else {
        cJSON_AddNullToObject(d, "sensor");
    }
    struct mb_mig_mode mm;
    if ((mb_device_caps(c->o->dev) & MB_CAP_GPU) &&
        mb_device_mig_mode(c->o->dev, &mm, NULL) == MB_OK) {
        cJSON *mig = cJSON_AddObjectToObject(d, "mig");
        cJSON_AddNumberToObject(mig, "mode", mm.current);
        cJSON *arr = cJSON_AddArrayToObject(mig, "instances");
        for (size_t i = 0; i < c->n_inst; i++) {
            const struct inst *in = &c->inst[i];
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "profile", in->profile);
            cJSON_AddStringToObject(o, "requested", in->requested);
            cJSON *pl = cJSON_AddObjectToObject(o, "placement");
            cJSON_AddNumberToObject(pl, "start", in->placement.start);
            cJSON_AddNumberToObject(pl, "size", in->placement.size);
            cJSON_AddNumberToObject(o, "gi_id", in->gi_id);
            cJSON_AddNumberToObject(o, "ci_id", in->ci_id);
            cJSON_AddItemToObject(o, "uuid", str_or_null(in->uuid));
            cJSON_AddItemToArray(arr, o);
        }
    } else {
        cJSON_AddNullToObject(d, "mig");
    }
    return d;
}

static cJSON *energy_json(struct cell *c)
{
    cJSON *en = cJSON_CreateObject();
    /* Sum over the cell's windows (exclusive: one per job, one after another;
     * else one). */
    bool any = c->n_energy > 0, counter_ok = any, integ_ok = any, refused = false;
    bool peak_ok = false, mean_ok = any;
    double counter = 0, integ = 0, peak = 0, secs = 0, mean_e = 0;
    uint64_t samples = 0, missed = 0;
    const char *reason = any ? "" : "no measurement window";
    for (size_t i = 0; i < c->n_energy; i++) {
        const struct mb_energy *e = &c->energy[i];
        if (e->refused) {
            refused = true;
            reason = e->reason;
        }
        counter_ok = counter_ok && e->counter_valid && !e->refused;
        integ_ok = integ_ok && e->integral_valid && !e->refused;
        mean_ok = mean_ok && e->mean_power_valid && !e->refused;
        counter += e->counter_j;
        integ += e->integral_j;
        mean_e += e->mean_power_w * e->duration_s;
        secs += e->duration_s;
        if (e->peak_power_valid && (!peak_ok || e->peak_power_w > peak)) {
            peak = e->peak_power_w;
            peak_ok = true;
        }
        samples += e->samples;
        missed += e->missed_updates;
        if (!refused && !reason[0] && e->reason[0])
            reason = e->reason;
    }
    bool gap_ok = counter_ok && integ_ok && counter > 0;
    double gap = gap_ok ? (integ - counter) / counter * 100.0 : 0;
    /* A device without any power reading or counter has nothing to refuse: say
     * so. */
    bool sensor = c->sensor_ok &&
                  (c->sensor.has_energy_counter || (c->sensor.power_kind != MB_POWER_NONE &&
                                                    c->sensor.power_kind != MB_POWER_UNKNOWN));
    const char *flag = "ok";
    if (!sensor) {
        flag = "no_sensor";
        reason = "the device reports neither power nor an energy counter";
    } else if (refused)
        flag = "too_short";
    else if (!counter_ok && !integ_ok)
        flag = "no_sensor";
    else if (gap_ok && fabs(gap) > 100.0 * MB_METER_GAP_FLAG)
        flag = "gap";
    cJSON_AddItemToObject(en, "counter_j", num_or_null(counter_ok, counter));
    cJSON_AddItemToObject(en, "integrated_j", num_or_null(integ_ok, integ));
    cJSON_AddItemToObject(en, "gap_pct", num_or_null(gap_ok, gap));
    cJSON_AddStringToObject(en, "flag", flag);
    cJSON_AddItemToObject(en, "refused_reason",
                          str_or_null(counter_ok && integ_ok ? NULL : reason));
    cJSON_AddItemToObject(en, "idle_power_w", num_or_null(c->idle_ok, c->idle_power_w));
    cJSON_AddItemToObject(en, "mean_power_w", num_or_null(mean_ok && secs > 0, mean_e / secs));
    cJSON_AddItemToObject(en, "peak_power_w", num_or_null(peak_ok, peak));
    cJSON_AddNumberToObject(en, "samples", (double)samples);
    cJSON_AddItemToObject(en, "missed_updates",
                          num_or_null(any && c->meter && sensor, (double)missed));
    return en;
}

static cJSON *job_json(struct cell *c, struct job *j)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", j->name);
    cJSON_AddStringToObject(o, "workload", j->w->name);
    cJSON_AddStringToObject(o, "unit", j->w->unit);
    cJSON *argv = cJSON_AddArrayToObject(o, "argv");
    for (char **a = j->argv; a && *a; a++)
        cJSON_AddItemToArray(argv, cJSON_CreateString(*a));
    cJSON *env = cJSON_AddObjectToObject(o, "env");
    cJSON_AddStringToObject(env, MB_PROGRESS_FD_ENV, "pipe");
    for (size_t k = 0; k < j->n_env; k++) {
        char name[128];
        const char *eq = strchr(j->env[k], '=');
        snprintf(name, sizeof(name), "%.*s", (int)(eq - j->env[k]), j->env[k]);
        cJSON_AddStringToObject(env, name, eq + 1);
    }
    if (j->instance >= 0) {
        cJSON *in = cJSON_AddObjectToObject(o, "instance");
        cJSON_AddStringToObject(in, "profile", c->inst[j->instance].profile);
        cJSON_AddStringToObject(in, "requested", c->inst[j->instance].requested);
        cJSON_AddStringToObject(in, "uuid", c->inst[j->instance].uuid);
    } else {
        cJSON_AddNullToObject(o, "instance");
    }
    if (j->has_cpus) {
        cJSON *cp = cJSON_AddArrayToObject(o, "cpus");
        for (unsigned k = 0; k < j->cpus.n; k++)
            cJSON_AddItemToArray(cp, cJSON_CreateNumber(j->cpus.cpus[k]));
    } else {
        cJSON_AddNullToObject(o, "cpus");
    }
    cJSON_AddItemToObject(o, "cores", num_or_null(j->cores > 0, j->cores));
    cJSON_AddItemToObject(o, "omp_num_threads", num_or_null(j->cores > 0, j->cores));
    cJSON_AddItemToObject(o, "thread_percentage", num_or_null(j->thread_pct >= 0, j->thread_pct));
    cJSON_AddItemToObject(o, "cooldown", cooldown_json(&j->cool));
    cJSON *ex = cJSON_AddObjectToObject(o, "exit");
    bool ran = j->proc && mb_proc_done(j->proc);
    int st = ran ? mb_proc_wait_status(j->proc) : 0;
    cJSON_AddItemToObject(ex, "code", num_or_null(ran && WIFEXITED(st), WEXITSTATUS(st)));
    cJSON_AddItemToObject(ex, "signal", num_or_null(ran && WIFSIGNALED(st), WTERMSIG(st)));
    struct mb_progress_point last;
    bool have = j->prog && mb_progress_last(j->prog, &last);
    cJSON_AddItemToObject(o, "steps", num_or_null(have, (double)(have ? last.step : 0)));
    bool samples = have && mb_progress_unit_is_samples(j->prog);
    cJSON_AddItemToObject(o, "units", num_or_null(samples, have ? last.work : 0));
    cJSON *tp = cJSON_AddObjectToObject(o, "throughput");
    struct mb_throughput t;
    memset(&t, 0, sizeof(t));
    if (j->prog && j->win_start_ns)
        mb_progress_throughput(j->prog, j->win_start_ns, 0, 0, 10, &t);
    cJSON_AddItemToObject(tp, "mean", num_or_null(t.valid, t.rate.mean));
    cJSON_AddItemToObject(tp, "ci95", num_or_null(t.valid && t.rate.ci_valid, t.rate.ci95_half));
    char unit[32];
    snprintf(unit, sizeof(unit), "%s/s", t.valid && !t.unit_is_samples ? "steps" : j->w->unit);
    cJSON_AddStringToObject(tp, "unit_per_s", unit);
    if (!t.valid)
        cJSON_AddStringToObject(tp, "reason", j->win_start_ns ? t.reason : "no window");
    cJSON *win = cJSON_AddObjectToObject(o, "window");
    bool w_ok = j->win_start_ns && j->win_end_ns;
    cJSON_AddItemToObject(win, "start_ns", num_or_null(w_ok, (double)j->win_start_ns));
    cJSON_AddItemToObject(win, "end_ns", num_or_null(w_ok, (double)j->win_end_ns));
    cJSON_AddItemToObject(win, "seconds",
                          num_or_null(w_ok, (double)(j->win_end_ns - j->win_start_ns) / 1e9));
    cJSON_AddItemToObject(o, "completion_s",
                          num_or_null(j->completed, (double)(j->ended_ns - j->started_ns) / 1e9));
    cJSON_AddItemToObject(o, "started_ns", num_or_null(j->started_ns != 0, (double)j->started_ns));
    cJSON_AddItemToObject(o, "ended_ns", num_or_null(j->ended_ns != 0, (double)j->ended_ns));
    char log[MB_EXP_NAME_MAX + 16];
    snprintf(log, sizeof(log), "jobs/%s.log", j->name);
    cJSON_AddStringToObject(o, "log", log);
    return o;
}

static cJSON *cell_json(struct cell *c, double started_unix, double offset_s)
{
    const struct mb_experiment *exp = c->o->exp;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "schema", MB_RESULTS_SCHEMA);
    cJSON_AddStringToObject(o, "experiment", exp->name);
    cJSON_AddStringToObject(o, "experiment_sha", exp->sha);
    cJSON_AddStringToObject(o, "run", c->run->name);
    cJSON_AddStringToObject(o, "mode", mb_exp_mode_str(c->run->mode));
    cJSON_AddNumberToObject(o, "rep", c->rep);
    cJSON_AddStringToObject(o, "status", c->failed ? "failed" : "ok");
    if (c->failed) {
        cJSON *f = cJSON_AddObjectToObject(o, "failure");
        const struct job *j = c->fail_job >= 0 ? &c->jobs[c->fail_job] : NULL;
        cJSON_AddItemToObject(f, "job", str_or_null(j ? j->name : NULL));
        cJSON_AddStringToObject(f, "reason", c->fail);
        char tail[TAIL_BYTES + 1] = "";
        if (j) {
            char log[1200];
            job_log_path(c, j, log, sizeof(log));
            read_tail(log, tail, sizeof(tail));
        }
        cJSON_AddItemToObject(f, "log_tail", str_or_null(tail));
    } else {
        cJSON_AddNullToObject(o, "failure");
    }
    cJSON_AddStringToObject(o, "migbench_version", MB_VERSION_STRING);
    add_slurm(o);
    cJSON_AddNumberToObject(o, "started_unix", started_unix);
    cJSON_AddNumberToObject(o, "t0_ns", (double)c->t0_ns);
    cJSON_AddNumberToObject(o, "start_offset_s", offset_s);
    cJSON_AddItemToObject(o, "cooldown", cooldown_json(&c->cool));
    cJSON *w = cJSON_AddObjectToObject(o, "window");
    bool w_ok = c->win_first_ns && c->win_last_ns;
    double secs = 0;
    for (size_t i = 0; i < c->n_jobs; i++) {
        const struct job *j = &c->jobs[i];
        if (j->win_start_ns && j->win_end_ns &&
            (i == 0 || j->win_start_ns != c->jobs[i - 1].win_start_ns))
            secs += (double)(j->win_end_ns - j->win_start_ns) / 1e9;
    }
    cJSON_AddItemToObject(w, "start_ns", num_or_null(w_ok, (double)c->win_first_ns));
    cJSON_AddItemToObject(w, "end_ns", num_or_null(w_ok, (double)c->win_last_ns));
    cJSON_AddItemToObject(w, "seconds", num_or_null(w_ok, secs));
    cJSON_AddItemToObject(o, "device", device_json(c));
    cJSON_AddItemToObject(o, "power_limit", mb__cell_power_json(&c->pw, c->energy, c->n_energy));
    if (c->run->mode == MB_MODE_MPS) {
        cJSON *mp = cJSON_AddObjectToObject(o, "mps");
        cJSON *arr = cJSON_AddArrayToObject(mp, "thread_percentage");
        for (size_t i = 0; i < c->run->n_jobs; i++)
            cJSON_AddItemToArray(arr, cJSON_CreateNumber(c->pct[i]));
        cJSON_AddStringToObject(mp, "pipe_dir", c->mps_pipe);
        cJSON_AddStringToObject(mp, "log_dir", c->mps_log);
        cJSON_AddStringToObject(mp, "daemon",
                                c->mps_emulated ? "none (emulated GPU)" : MPS_CONTROL);
    } else {
        cJSON_AddNullToObject(o, "mps");
    }
    cJSON_AddItemToObject(o, "reconfigure_seconds",
                          num_or_null(uses_mig(c->run) && c->n_inst > 0, c->reconfigure_s));
    if (c->run->on[0])
        cJSON_AddStringToObject(o, "on", c->n_inst > 0 ? c->inst[0].profile : c->run->on);
    cJSON_AddItemToObject(o, "energy", energy_json(c));
    cJSON *jobs = cJSON_AddArrayToObject(o, "jobs");
    for (size_t i = 0; i < c->n_jobs; i++)
        cJSON_AddItemToArray(jobs, job_json(c, &c->jobs[i]));
    return o;
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
        cell_fail(c, -1, "%s", e.msg);
        return MB_OK;
    }
    if (!c->pw.set)
        return MB_OK;
    cJSON *o = jevent("power_limit_set", c);
    if (o) {
        cJSON_AddStringToObject(o, "requested", c->pw.requested);
        cJSON_AddNumberToObject(o, "limit_mw", c->pw.requested_mw);
        cJSON_AddStringToObject(o, "ledger", c->o->power_ledger);
    }
    emit(c, MB_RUNNER_NOTE, "power limit %s (%.0f W) set", c->pw.requested,
         c->pw.requested_mw / 1000.0);
    return jappend(c, o);
}

/* Restores what power_prepare set and journals it; a failed restore fails the cell (the ledger
 * keeps the record for the next start). Returns a journal error, else MB_OK. */
static int power_restore(struct cell *c, bool interrupted)
{
    struct mb_error e;
    if (mb__cell_power_restore(&c->pw, c->o, &e) != MB_OK) {
        if (!interrupted)
            cell_fail(c, -1, "cannot restore the power limit: %s", e.msg);
        emit(c, MB_RUNNER_NOTE, "cannot restore the power limit: %s", e.msg);
        return MB_OK;
    }
    if (!c->pw.restored)
        return MB_OK;
    cJSON *o = jevent("power_limit_restored", c);
    if (o)
        cJSON_AddStringToObject(o, "outcome", mb_powercap_outcome_str(c->pw.outcome));
    return jappend(c, o);
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
    c->n_jobs = c->run->n_jobs;
    for (size_t i = 0; i < c->n_jobs && !c->failed; i++)
        if ((rc = setup_job(c, i)) != MB_OK)
            return rc;
    if (c->run->mode == MB_MODE_PARTITION && !c->failed) {
        struct mb_cpuset *sets = calloc(c->n_jobs, sizeof(*sets));
        struct mb_error e;
        if (!sets) {
            return mb_error_set(c->err, MB_ENOMEM, "out of memory");
        }
        if (mb_device_cpu_partitions(c->o->dev, (unsigned)c->n_jobs, sets, &e) != MB_OK) {
            cell_fail(c, -1, "cannot partition the CPUs: %s", e.msg);
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
        if (e.mean_power_valid && !e.refused) {
            c->idle_power_w = e.mean_power_w;
            c->idle_ok = true;
            power_seen(c, e.mean_power_w);
            if (c->o->power && !c->o->power->idle_ok) {
                c->o->power->idle_ok = true;
                c->o->power->idle_w = e.mean_power_w;
            }
        }
    }
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
    const struct mb_exp_measure *m = &opts->exp->measure;
    int rc = MB_OK;
    bool interrupted = false;
    c->info_ok = mb_device_info(opts->dev, &c->info, NULL) == MB_OK;
    if (!c->info_ok)
        memset(&c->info, 0, sizeof(c->info));
    c->sensor_ok = mb_device_sensor(opts->dev, &c->sensor, NULL) == MB_OK;
    if ((rc = mb_results_cell_dir(opts->results_dir, c->run->name, c->rep, c->dir, sizeof(c->dir),
                                  err)) != MB_OK)
        goto out;
    char jobs_dir[1200];
    snprintf(jobs_dir, sizeof(jobs_dir), "%s/jobs", c->dir);
    if ((rc = mb_results_mkdirs(jobs_dir, 0755, err)) != MB_OK)
        goto out;
    cJSON *o = jevent("cell_started", c);
    if (o) {
        cJSON_AddStringToObject(o, "mode", mb_exp_mode_str(c->run->mode));
        cJSON_AddStringToObject(o, "gpu_uuid", c->info.uuid); /* which GPU, on a multi-GPU run */
    }
    if ((rc = jappend(c, o)) != MB_OK)
        goto out;
    emit(c, MB_RUNNER_CELL_START, NULL);

    /* A quiet device first, when an earlier cell ran. */
    if (opts->power && opts->power->cells_run) {
        cool_down(c, &c->cool);
        if ((rc = journal_cooldown(c, &c->cool, NULL)) != MB_OK)
            goto out;
    }

    double offset_s = random_offset_s(opts->seed, c->rep);
    if (offset_s > 0)
        idle_wait(c, (int64_t)(offset_s * 1e9));
    if ((rc = power_prepare(c)) != MB_OK || c->failed)
        goto teardown;

    /* Mode. */
    if (uses_mig(c->run))
        rc = prepare_mig(c);
    else if (c->run->mode == MB_MODE_MPS)
        rc = prepare_mps(c);
    if (rc != MB_OK)
        goto teardown;
    if ((rc = prepare_jobs(c)) != MB_OK)
        goto teardown;
    if (!c->failed)
        start_meter(c);
    idle_baseline(c);
    if (*opts->stop)
        interrupted = true;

    if (!c->failed && !interrupted) {
        if (c->run->mode == MB_MODE_EXCLUSIVE) {
            for (size_t i = 0; i < c->n_jobs && !c->failed && !interrupted; i++) {
                struct job *js[1] = {&c->jobs[i]};
                int prc = run_phase(c, js, 1);
                if (prc == MB_EINTR)
                    interrupted = true;
                else if (prc != MB_OK) {
                    rc = prc;
                    break;
                }
                /* The next job starts on a quiet device. */
                if (i + 1 < c->n_jobs && !c->failed && !*opts->stop) {
                    cool_down(c, &c->jobs[i + 1].cool);
                    if ((rc = journal_cooldown(c, &c->jobs[i + 1].cool, c->jobs[i + 1].name)) !=
                        MB_OK)
                        break;
                }
            }
        } else {
            struct job *js[MB_EXP_MAX_JOBS];
            for (size_t i = 0; i < c->n_jobs; i++)
                js[i] = &c->jobs[i];
            int prc = run_phase(c, js, c->n_jobs);
            if (prc == MB_EINTR)
                interrupted = true;
            else if (prc != MB_OK)
                rc = prc;
        }
    }

teardown:;
    /* Stop whatever still runs (an early failure may have left jobs of this
     * phase). */
    for (size_t i = 0; i < c->n_jobs; i++)
        if (c->jobs[i].proc && !mb_proc_done(c->jobs[i].proc)) {
            mb_proc_terminate(c->jobs[i].proc, (int)(m->grace_ns / 1000000));
            mb_proc_wait(c->jobs[i].proc, -1, NULL);
        }
    int trc = MB_OK;
    if (uses_mig(c->run))
        trc = teardown_mig(c);
    else if (c->run->mode == MB_MODE_MPS)
        trc = teardown_mps(c);
    if (trc != MB_OK && !interrupted)
        cell_fail(c, -1, "could not tear the %s mode down cleanly (see the journal)",
                  mb_exp_mode_str(c->run->mode));
    int prc = power_restore(c, interrupted);
    if (rc == MB_OK)
        rc = prc;
    if (rc != MB_OK)
        goto out;
    if (interrupted || *opts->stop) {
        rc = mb_error_set(err, MB_EINTR, "interrupted");
        goto out;
    }
    if (c->meter)
        mb_meter_stop(c->meter, NULL);
    cJSON *cj = cell_json(c, started_unix, offset_s);
    char path[1200];
    snprintf(path, sizeof(path), "%s/cell.json", c->dir);
    rc = cj ? mb_results_write_json(path, cj, err) : mb_error_set(err, MB_ENOMEM, "out of memory");
    cJSON_Delete(cj);
    if (rc != MB_OK)
        goto out;
    o = jevent(c->failed ? "cell_failed" : "cell_finished", c);
    if (o) {
        cJSON_AddStringToObject(o, "gpu_uuid", c->info.uuid);
        cJSON_AddNumberToObject(o, "seconds", (double)(mb_clock_monotonic_ns() - c->t0_ns) / 1e9);
        if (c->failed)
            cJSON_AddStringToObject(o, "reason", c->fail);
    }
    rc = jappend(c, o);
    if (c->failed)
        emit(c, MB_RUNNER_NOTE, "cell failed: %s", c->fail);
    *failed = c->failed;
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

/* ---- preflight and cleanup
 * --------------------------------------------------------------- */

/* Every instance a run makes is recorded first: the ledger must be writable before it starts. */
static int ledger_writable(const struct mb_runner_opts *o, const struct mb_exp_run *r,
                           struct mb_error *err)
{
    struct mb_mig_ledger *l = NULL;
    struct mb_error e;
    int rc = mb_mig_ledger_open(o->dev, o->device_spec, &l, &e);
    if (rc == MB_OK)
        rc = mb_mig_ledger_check_writable(l, &e);
    mb_mig_ledger_close(l);
    if (rc != MB_OK)
        return mb_error_set(err, rc, "run '%s': %s", r->name, e.msg);
    return MB_OK;
}

int mb_runner_preflight(const struct mb_runner_opts *o, const struct mb_cell *cells, size_t n_cells,
                        struct mb_error *err)
{
    for (size_t i = 0; i < n_cells; i++) {
        const struct mb_exp_run *r = &o->exp->runs[cells[i].run];
        if (i > 0 && cells[i - 1].run == cells[i].run)
            continue;
        /* An emulated GPU runs mps without a daemon (prepare_mps); a measured one needs it. */
        bool emulated = mb_device_caps(o->dev) & MB_CAP_EMULATED;
        if (r->mode == MB_MODE_MPS && !emulated) {
            if (!(mb_device_caps(o->dev) & MB_CAP_MPS))
                return mb_error_set(err, MB_EUNSUPPORTED,
                                    "run '%s': mode mps needs a real GPU through the nvml backend "
                                    "(this device is %s); use --only to leave it out",
                                    r->name, mb_device_backend(o->dev));
            if (!on_path(MPS_CONTROL))
                return mb_error_set(err, MB_EUNSUPPORTED,
                                    "run '%s': mode mps needs %s on PATH (part of the NVIDIA "
                                    "driver utilities)",
                                    r->name, MPS_CONTROL);
        }
        if (uses_mig(r)) {
            struct mb_mig_mode mm;
            struct mb_error e;
            if (mb_device_mig_mode(o->dev, &mm, &e) != MB_OK)
                return mb_error_set(err, MB_EUNSUPPORTED, "run '%s': no MIG on this device: %s",
                                    r->name, e.msg);
            if (!mm.current)
                return mb_error_set(err, MB_EUNSUPPORTED,
                                    "run '%s': MIG mode is disabled on the GPU%s; enable it first "
                                    "(nvidia-smi -i N -mig 1, then a GPU reset), or use --only",
                                    r->name, mm.pending ? " (enabled, pending a reset)" : "");
            if (!o->model)
                return mb_error_set(err, MB_EUNSUPPORTED,
                                    "run '%s': the GPU's model is not in the MIG catalog", r->name);
            struct mb_layout_item placed[MB_EXP_MAX_JOBS];
            if (plan_mig(o->dev, o->model, r, placed, &e) != MB_OK)
                return mb_error_set(err, MB_ENORESOURCES,
                                    "run '%s': layout does not fit beside the instances on the "
                                    "GPU now: %s",
                                    r->name, e.msg);
            if (ledger_writable(o, r, err) != MB_OK)
                return MB_EIO;
        }
    }
    return MB_OK;
}

/*
 * A journal of an older migbench names instances in "mig_created" events without a ledger
 * reference: each still on this GPU with the recorded profile and placement is recorded in the
 * ledger as the dead run's, so the ledger alone is what the cleanup reads. An instance on another
 * GPU than the open one cannot be looked at: MB_EBUSY.
 */
static int adopt_legacy(const struct mb_runner_opts *o, struct mb_mig_ledger *l,
                        const struct mb_leftovers *left, struct mb_error *err)
{
    struct mb_device_info info;
    memset(&info, 0, sizeof(info));
    mb_device_info(o->dev, &info, NULL);
    for (size_t i = 0; i < left->n_mig; i++) {
        const struct mb_leftover_mig *m = &left->mig[i];
        if (strcmp(info.uuid, m->gpu_uuid) != 0)
            return mb_error_set(err, MB_EBUSY, "GPU %s is not the open device (%s)", m->gpu_uuid,
                                info.uuid);
        bool adopted;
        int rc = mb_mig_ledger_adopt(o->dev, l, o->results_dir, m->gi_id, m->profile, m->placement,
                                     &adopted, err);
        if (rc != MB_OK)
            return rc;
    }
    return MB_OK;
}

int mb_runner_mig_leftovers(const struct mb_runner_opts *o, const struct mb_leftovers *left,
                            size_t *n, struct mb_error *err)
{
    *n = 0;
    if (!(mb_device_caps(o->dev) & MB_CAP_MIG))
        return MB_OK;
    struct mb_mig_ledger *l = NULL;
    int rc = mb_mig_ledger_open(o->dev, o->device_spec, &l, err);
    if (rc == MB_OK)
        rc = adopt_legacy(o, l, left, err);
    if (rc == MB_OK)
        rc = mb_mig_run_leftovers(o->dev, l, o->results_dir, n, err);
    mb_mig_ledger_close(l);
    return rc;
}

/* Closes a legacy journal's records once the ledger cleanup went through. */
static int close_legacy(const struct mb_runner_opts *o, const struct mb_leftovers *left,
                        struct mb_error *err)
{
    for (size_t i = 0; i < left->n_mig; i++) {
        cJSON *ev = cJSON_CreateObject();
        cJSON_AddStringToObject(ev, "event", "mig_destroyed");
        cJSON_AddStringToObject(ev, "gpu_uuid", left->mig[i].gpu_uuid);
        cJSON_AddNumberToObject(ev, "gi_id", left->mig[i].gi_id);
        int rc = mb_journal_append(o->journal, ev, err);
        cJSON_Delete(ev);
        if (rc != MB_OK)
            return rc;
    }
    return MB_OK;
}

/*
 * The one MIG cleanup on resume: what the ledger says the dead run made in this results
 * directory is removed (mb_mig_clear_run), and journaled.
 */
static int ledger_cleanup(const struct mb_runner_opts *o, const struct mb_leftovers *left,
                          size_t *removed, struct mb_error *err)
{
    if (!(mb_device_caps(o->dev) & MB_CAP_MIG))
        return MB_OK;
    struct mb_mig_ledger *l = NULL;
    struct mb_error e;
    mb_error_clear(&e);
    size_t n = 0;
    int rc = mb_mig_ledger_open(o->dev, o->device_spec, &l, &e);
    if (rc == MB_OK)
        rc = adopt_legacy(o, l, left, &e);
    if (rc == MB_OK)
        rc = mb_mig_clear_run(o->dev, l, o->results_dir, &n, &e);
    mb_mig_ledger_close(l);
    *removed += n;
    cJSON *ev = cJSON_CreateObject();
    cJSON_AddStringToObject(ev, "event", "cleanup");
    cJSON_AddStringToObject(ev, "what", "mig_ledger");
    cJSON_AddNumberToObject(ev, "removed", (double)n);
    cJSON_AddBoolToObject(ev, "ok", rc == MB_OK);
    cJSON_AddItemToObject(ev, "reason", str_or_null(rc == MB_OK ? "" : e.msg));
    struct mb_error je;
    int jrc = mb_journal_append(o->journal, ev, &je);
    cJSON_Delete(ev);
    if (rc != MB_OK)
        return mb_error_set(err, MB_EBUSY, "%s", e.msg);
    if (jrc == MB_OK)
        jrc = close_legacy(o, left, &je);
    if (jrc != MB_OK)
        return mb_error_set(err, MB_EIO, "%s", je.msg);
    return MB_OK;
}

int mb_runner_cleanup(const struct mb_runner_opts *o, const struct mb_leftovers *left,
                      size_t *removed, struct mb_error *err)
{
    *removed = 0;
    int rc = ledger_cleanup(o, left, removed, err);
    for (size_t i = 0; i < left->n_mps; i++) {
        const struct mb_leftover_mps *l = &left->mps[i];
        char why[256] = "";
        int q = mps_quit(l->pipe_dir, l->log_dir, why, sizeof(why));
        cJSON *ev = cJSON_CreateObject();
        cJSON_AddStringToObject(ev, "event", "cleanup");
        cJSON_AddStringToObject(ev, "what", "mps");
        cJSON_AddStringToObject(ev, "pipe_dir", l->pipe_dir);
        cJSON_AddBoolToObject(ev, "ok", q == MB_OK);
        cJSON_AddItemToObject(ev, "reason", str_or_null(why));
        struct mb_error je;
        if (mb_journal_append(o->journal, ev, &je) != MB_OK && rc == MB_OK)
            rc = mb_error_set(err, MB_EIO, "%s", je.msg);
        cJSON_Delete(ev);
        /* A daemon that is no longer there cannot be asked again: record it as
         * stopped. */
        ev = cJSON_CreateObject();
        cJSON_AddStringToObject(ev, "event", "mps_stopped");
        cJSON_AddStringToObject(ev, "pipe_dir", l->pipe_dir);
        cJSON_AddBoolToObject(ev, "ok", q == MB_OK);
        if (mb_journal_append(o->journal, ev, &je) != MB_OK && rc == MB_OK)
            rc = mb_error_set(err, MB_EIO, "%s", je.msg);
        cJSON_Delete(ev);
        if (q == MB_OK)
            (*removed)++;
    }
    return rc;
}
