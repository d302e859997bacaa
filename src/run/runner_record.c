/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The runner's side of cell.json: the cell's device, windows, energy and jobs filled into the typed
 * record (results/cell_record.h), whose encoder writes the document.
 */
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
#include "run/runner_internal.h"
#include "results/cell_record.h"

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

void mb__rn_fill_cooldown(struct mb_cell_cooldown *out, const struct cooldown *cd)
{
    out->seconds = mb_cell_num(cd->done, cd->seconds);
    snprintf(out->ended, sizeof(out->ended), "%s", cd->done && cd->ended ? cd->ended : "");
    snprintf(out->reference, sizeof(out->reference), "%s",
             cd->done && cd->reference ? cd->reference : "");
    out->reference_w = mb_cell_num(cd->done && cd->reference, cd->reference_w);
    out->power_w = mb_cell_num(cd->done && cd->last_ok, cd->last_w);
}

static void fill_mig(struct cell *c, struct mb_cell_device *d)
{
    struct mb_mig_mode mm;
    d->has_mig = (mb_device_caps(c->o->dev) & MB_CAP_GPU) &&
                 mb_device_mig_mode(c->o->dev, &mm, NULL) == MB_OK;
    if (!d->has_mig)
        return;
    d->mig_mode = mm.current;
    for (size_t i = 0; i < c->n_inst && i < MB_EXP_MAX_JOBS; i++) {
        const struct inst *in = &c->inst[i];
        struct mb_cell_instance *o = &d->inst[d->n_inst++];
        snprintf(o->profile, sizeof(o->profile), "%s", in->profile);
        snprintf(o->requested, sizeof(o->requested), "%s", in->requested);
        o->placement = in->placement;
        o->gi_id = in->gi_id;
        o->ci_id = in->ci_id;
        snprintf(o->uuid, sizeof(o->uuid), "%s", in->uuid);
    }
}

static void fill_device(struct cell *c, struct mb_cell_device *d)
{
    const struct mb_device_info *di = &c->info;
    snprintf(d->backend, sizeof(d->backend), "%s", mb_device_backend(c->o->dev));
    d->emulated = c->info_ok && di->emulated;
    d->has_gpu = true;
    d->gpu = (mb_device_caps(c->o->dev) & MB_CAP_GPU) != 0;
    if (c->info_ok) {
        snprintf(d->name, sizeof(d->name), "%s", di->name);
        snprintf(d->model, sizeof(d->model), "%s", di->model);
        snprintf(d->uuid, sizeof(d->uuid), "%s", di->uuid);
        snprintf(d->driver_version, sizeof(d->driver_version), "%s", di->driver_version);
        snprintf(d->nvml_version, sizeof(d->nvml_version), "%s", di->nvml_version);
    }
    struct mb_telemetry tel;
    bool lim = c->meter && mb_meter_latest(c->meter, &tel) && (tel.valid & MB_TEL_POWER_LIMIT);
    d->power_limit_mw = mb_cell_num(lim, lim ? tel.power_limit_mw : 0);
    d->has_sensor = c->sensor_ok;
    if (c->sensor_ok)
        d->sensor = c->sensor;
    fill_mig(c, d);
}

static void fill_power(const struct cell *c, struct mb_cell_power *out)
{
    const struct mb__cell_power *p = &c->pw;
    out->active = p->active;
    snprintf(out->requested, sizeof(out->requested), "%s", p->requested.text);
    snprintf(out->base_run, sizeof(out->base_run), "%s", p->base_run);
    out->requested_mw = mb_cell_num(p->requested_ok, p->requested_mw);
    out->enforced_mw = mb_cell_num(p->enforced_ok, p->enforced_mw);
    out->set_by_migbench = p->set;
    for (size_t i = 0; i < c->n_energy; i++)
        if (c->energy[i].throttle_valid) {
            out->throttle_valid = true;
            out->throttle_reasons |= c->energy[i].throttle_reasons;
        }
}

/* The sums over the cell's windows (exclusive: one per job, one after another; else one). */
struct energy_sum {
    bool any, counter_ok, integ_ok, refused, peak_ok, mean_ok;
    double counter, integ, peak, secs, mean_e, edge;
    uint64_t samples, missed;
    const char *reason;
    const char *lost; /* the first window the GPU did not live through says why */
};

static void sum_energy(const struct cell *c, struct energy_sum *s)
{
    memset(s, 0, sizeof(*s));
    s->any = s->counter_ok = s->integ_ok = s->mean_ok = c->n_energy > 0;
    s->reason = s->any ? "" : "no measurement window";
    for (size_t i = 0; i < c->n_energy; i++) {
        const struct mb_energy *e = &c->energy[i];
        if (e->refused) {
            s->refused = true;
            s->reason = e->reason;
        }
        if (e->device_lost && !s->lost)
            s->lost = e->reason;
        s->counter_ok = s->counter_ok && e->counter_valid && !e->refused;
        s->integ_ok = s->integ_ok && e->integral_valid && !e->refused;
        s->mean_ok = s->mean_ok && e->mean_power_valid && !e->refused;
        s->counter += e->counter_j;
        s->integ += e->integral_j;
        s->mean_e += e->mean_power_w * e->duration_s;
        s->edge += mb_meter_gap_edge_j(e);
        s->secs += e->duration_s;
        if (e->peak_power_valid && (!s->peak_ok || e->peak_power_w > s->peak)) {
            s->peak = e->peak_power_w;
            s->peak_ok = true;
        }
        s->samples += e->samples;
        s->missed += e->missed_updates;
        if (!s->refused && !s->reason[0] && e->reason[0])
            s->reason = e->reason;
    }
}

static void fill_energy(const struct cell *c, struct mb_cell_energy *en)
{
    struct energy_sum s;
    sum_energy(c, &s);
    bool gap_ok = s.counter_ok && s.integ_ok && s.counter > 0;
    double gap = gap_ok ? (s.integ - s.counter) / s.counter * 100.0 : 0;
    /* A device without any power reading or counter has nothing to refuse: say so. */
    bool sensor = c->sensor_ok &&
                  (c->sensor.has_energy_counter || (c->sensor.power_kind != MB_POWER_NONE &&
                                                    c->sensor.power_kind != MB_POWER_UNKNOWN));
    const char *flag = "ok";
    const char *reason = s.reason;
    char nosensor[320];
    if (s.lost) {
        flag = "device_lost";
        reason = s.lost;
    } else if (!sensor) {
        flag = "no_sensor";
        reason = "the device reports neither power nor an energy counter";
        /* With the device's answers (NVML's NOT_SUPPORTED) where it gave them. */
        if (c->sensor_ok && c->sensor.power_note[0] && c->sensor.energy_note[0]) {
            snprintf(nosensor, sizeof(nosensor), "%s (%s; %s)", reason, c->sensor.power_note,
                     c->sensor.energy_note);
            reason = nosensor;
        }
    } else if (s.refused)
        flag = "too_short";
    else if (!s.counter_ok && !s.integ_ok)
        flag = "no_sensor";
    else if (gap_ok && mb_meter_gap_exceeds(s.integ, s.counter, s.edge))
        flag = "gap";
    en->counter_j = mb_cell_num(s.counter_ok, s.counter);
    en->integrated_j = mb_cell_num(s.integ_ok, s.integ);
    en->gap_pct = mb_cell_num(gap_ok, gap);
    snprintf(en->flag, sizeof(en->flag), "%s", flag);
    /* One figure is the measurement (the counter where it exists): energy is refused only when
     * there is none; the other's absence is a note (NVIDIA's NOT_SUPPORTED, in its words). */
    bool one = (s.counter_ok || s.integ_ok) && !s.lost;
    snprintf(en->method, sizeof(en->method), "%s",
             !one           ? ""
             : s.counter_ok ? "counter"
                            : "power_integral");
    snprintf(en->refused_reason, sizeof(en->refused_reason), "%s", one ? "" : reason);
    snprintf(en->note, sizeof(en->note), "%s", one && !(s.counter_ok && s.integ_ok) ? reason : "");
    en->idle_power_w = mb_cell_num(c->idle_ok, c->idle_power_w);
    en->mean_power_w = mb_cell_num(s.mean_ok && s.secs > 0, s.secs > 0 ? s.mean_e / s.secs : 0);
    en->peak_power_w = mb_cell_num(s.peak_ok, s.peak);
    en->samples = (double)s.samples;
    en->missed_updates = mb_cell_num(s.any && c->meter && sensor, (double)s.missed);
}

/* The job's exit, progress and throughput, as far as they are known. */
static void fill_job_outcome(const struct job *j, struct mb_cell_job *o)
{
    bool ran = j->proc && mb_proc_done(j->proc);
    int st = ran ? mb_proc_wait_status(j->proc) : 0;
    o->exit_code = mb_cell_num(ran && WIFEXITED(st), WEXITSTATUS(st));
    o->exit_signal = mb_cell_num(ran && WIFSIGNALED(st), WTERMSIG(st));
    struct mb_progress_point last;
    bool have = j->prog && mb_progress_last(j->prog, &last);
    o->steps = mb_cell_num(have, have ? (double)last.step : 0);
    bool samples = have && mb_progress_unit_is_samples(j->prog);
    o->units = mb_cell_num(samples, have ? last.work : 0);
    struct mb_throughput t;
    memset(&t, 0, sizeof(t));
    if (j->prog && j->win_start_ns)
        mb_progress_throughput(j->prog, j->win_start_ns, 0, 0, 10, &t);
    o->tp_mean = mb_cell_num(t.valid, t.rate.mean);
    o->tp_ci95 = mb_cell_num(t.valid && t.rate.ci_valid, t.rate.ci95_half);
    snprintf(o->tp_unit_per_s, sizeof(o->tp_unit_per_s), "%s/s",
             t.valid && !t.unit_is_samples ? "steps" : j->w->unit);
    o->tp_has_reason = !t.valid;
    if (!t.valid)
        snprintf(o->tp_reason, sizeof(o->tp_reason), "%s",
                 j->win_start_ns ? t.reason : "no window");
    bool w_ok = j->win_start_ns && j->win_end_ns;
    o->window.start_ns = mb_cell_num(w_ok, (double)j->win_start_ns);
    o->window.end_ns = mb_cell_num(w_ok, (double)j->win_end_ns);
    o->window.seconds = mb_cell_num(w_ok, (double)(j->win_end_ns - j->win_start_ns) / 1e9);
    o->completion_s = mb_cell_num(j->completed, (double)(j->ended_ns - j->started_ns) / 1e9);
    o->started_ns = mb_cell_num(j->started_ns != 0, (double)j->started_ns);
    o->ended_ns = mb_cell_num(j->ended_ns != 0, (double)j->ended_ns);
}

static int fill_job(const struct cell *c, const struct job *j, struct mb_cell_job *o)
{
    snprintf(o->name, sizeof(o->name), "%s", j->name);
    snprintf(o->workload, sizeof(o->workload), "%s", j->w->name);
    snprintf(o->unit, sizeof(o->unit), "%s", j->w->unit);
    int rc = mb_cell_job_set_argv(o, j->argv);
    if (rc == MB_OK)
        rc = mb_cell_job_add_env(o, MB_PROGRESS_FD_ENV, "pipe");
    for (size_t k = 0; rc == MB_OK && k < j->n_env; k++) {
        char name[128];
        const char *eq = strchr(j->env[k], '=');
        snprintf(name, sizeof(name), "%.*s", (int)(eq - j->env[k]), j->env[k]);
        rc = mb_cell_job_add_env(o, name, eq + 1);
    }
    o->has_instance = j->instance >= 0;
    if (o->has_instance) {
        const struct inst *in = &c->inst[j->instance];
        snprintf(o->inst_profile, sizeof(o->inst_profile), "%s", in->profile);
        snprintf(o->inst_requested, sizeof(o->inst_requested), "%s", in->requested);
        snprintf(o->inst_uuid, sizeof(o->inst_uuid), "%s", in->uuid);
    }
    o->has_cpus = j->has_cpus;
    if (j->has_cpus)
        o->cpus = j->cpus;
    o->cores = mb_cell_num(j->cores > 0, j->cores);
    o->omp_num_threads = mb_cell_num(j->cores > 0, j->cores);
    o->thread_percentage = mb_cell_num(j->thread_pct >= 0, j->thread_pct);
    mb__rn_fill_cooldown(&o->cooldown, &j->cool);
    fill_job_outcome(j, o);
    snprintf(o->log, sizeof(o->log), "jobs/%s.log", j->name);
    return rc;
}

/* The experiment, run, status (with the failed job's log tail) and where it ran. */
static void fill_head(const struct cell *c, struct mb_cell_record *r)
{
    const struct mb_experiment *exp = c->o->exp;
    r->schema = MB_RESULTS_SCHEMA;
    snprintf(r->experiment, sizeof(r->experiment), "%s", exp->name);
    snprintf(r->experiment_sha, sizeof(r->experiment_sha), "%s", exp->sha);
    snprintf(r->run, sizeof(r->run), "%s", c->run->name);
    snprintf(r->mode, sizeof(r->mode), "%s", mb_exp_mode_str(c->run->mode));
    r->rep = c->rep;
    r->ok = !c->failed;
    if (c->failed) {
        const struct job *j = c->fail_job >= 0 ? &c->jobs[c->fail_job] : NULL;
        snprintf(r->fail_job, sizeof(r->fail_job), "%s", j ? j->name : "");
        snprintf(r->fail_reason, sizeof(r->fail_reason), "%s", c->fail);
        if (j) {
            char log[1200];
            mb__rn_job_log_path(c, j, log, sizeof(log));
            read_tail(log, r->fail_log_tail, sizeof(r->fail_log_tail));
        }
    }
    snprintf(r->migbench_version, sizeof(r->migbench_version), "%s", MB_VERSION_STRING);
    mb_cell_slurm_from_env(&r->slurm);
}

/* The cell's window: from the first job's start to the last one's end, its seconds summed. */
static void fill_window(const struct cell *c, struct mb_cell_window *w)
{
    bool w_ok = c->win_first_ns && c->win_last_ns;
    double secs = 0;
    for (size_t i = 0; i < c->n_jobs; i++) {
        const struct job *j = &c->jobs[i];
        if (j->win_start_ns && j->win_end_ns &&
            (i == 0 || j->win_start_ns != c->jobs[i - 1].win_start_ns))
            secs += (double)(j->win_end_ns - j->win_start_ns) / 1e9;
    }
    w->start_ns = mb_cell_num(w_ok, (double)c->win_first_ns);
    w->end_ns = mb_cell_num(w_ok, (double)c->win_last_ns);
    w->seconds = mb_cell_num(w_ok, secs);
}

static void fill_mode(const struct cell *c, struct mb_cell_record *r)
{
    r->has_mps = c->run->mode == MB_MODE_MPS;
    if (r->has_mps) {
        for (size_t i = 0; i < c->run->n_jobs && i < MB_EXP_MAX_JOBS; i++)
            r->mps_pct[r->n_mps_pct++] = c->pct[i];
        snprintf(r->mps_pipe_dir, sizeof(r->mps_pipe_dir), "%s", c->mps_pipe);
        snprintf(r->mps_log_dir, sizeof(r->mps_log_dir), "%s", c->mps_log);
        snprintf(r->mps_daemon, sizeof(r->mps_daemon), "%s",
                 c->mps_emulated ? "none (emulated GPU)" : MPS_CONTROL);
    }
    r->reconfigure_seconds =
        mb_cell_num(mb__rn_uses_mig(c->run) && c->n_inst > 0, c->reconfigure_s);
    r->has_on = c->run->on[0] != '\0';
    if (r->has_on)
        snprintf(r->on, sizeof(r->on), "%s", c->n_inst > 0 ? c->inst[0].profile : c->run->on);
}

/* Fills r (zeroed by the caller) from the cell; MB_ENOMEM. */
static int fill_record(struct cell *c, double started_unix, double offset_s,
                       struct mb_cell_record *r)
{
    fill_head(c, r);
    r->started_unix = started_unix;
    r->t0_ns = (double)c->t0_ns;
    r->start_offset_s = offset_s;
    mb__rn_fill_cooldown(&r->cooldown, &c->cool);
    fill_window(c, &r->window);
    fill_device(c, &r->device);
    fill_power(c, &r->power);
    fill_mode(c, r);
    fill_energy(c, &r->energy);
    mb__rn_load_fill(c, &r->load);
    int rc = MB_OK;
    for (size_t i = 0; rc == MB_OK && i < c->n_jobs && i < MB_EXP_MAX_JOBS; i++)
        rc = fill_job(c, &c->jobs[i], &r->jobs[r->n_jobs++]);
    return rc;
}

cJSON *mb__rn_cell_json(struct cell *c, double started_unix, double offset_s)
{
    struct mb_cell_record *r = calloc(1, sizeof(*r));
    if (!r)
        return NULL;
    cJSON *o = fill_record(c, started_unix, offset_s, r) == MB_OK ? mb_cell_record_encode(r) : NULL;
    mb_cell_record_free(r);
    free(r);
    return o;
}
