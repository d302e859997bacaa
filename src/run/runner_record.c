/* SPDX-License-Identifier: Apache-2.0 */
/* The runner's cell.json: the cell's device, windows, energy and jobs as one JSON document. */
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
#include "results/energy_json.h"

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
    cJSON_AddItemToObject(d, "name", mb__rn_str_or_null(c->info_ok ? di->name : NULL));
    cJSON_AddItemToObject(d, "model", mb__rn_str_or_null(c->info_ok ? di->model : NULL));
    cJSON_AddItemToObject(d, "uuid", mb__rn_str_or_null(c->info_ok ? di->uuid : NULL));
    cJSON_AddItemToObject(d, "driver_version",
                          mb__rn_str_or_null(c->info_ok ? di->driver_version : NULL));
    cJSON_AddItemToObject(d, "nvml_version",
                          mb__rn_str_or_null(c->info_ok ? di->nvml_version : NULL));
    bool lim = false;
    double lim_mw = 0;
    struct mb_telemetry tel;
    if (c->meter && mb_meter_latest(c->meter, &tel) && (tel.valid & MB_TEL_POWER_LIMIT)) {
        lim = true;
        lim_mw = tel.power_limit_mw;
    }
    cJSON_AddItemToObject(d, "power_limit_mw", mb__rn_num_or_null(lim, lim_mw));
    if (c->sensor_ok) {
        mb__sensor_json_add(cJSON_AddObjectToObject(d, "sensor"), &c->sensor);
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
            cJSON_AddItemToObject(o, "uuid", mb__rn_str_or_null(in->uuid));
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
    const char *lost = NULL; /* the first window the GPU did not live through says why */
    bool peak_ok = false, mean_ok = any;
    double counter = 0, integ = 0, peak = 0, secs = 0, mean_e = 0, edge = 0;
    uint64_t samples = 0, missed = 0;
    const char *reason = any ? "" : "no measurement window";
    for (size_t i = 0; i < c->n_energy; i++) {
        const struct mb_energy *e = &c->energy[i];
        if (e->refused) {
            refused = true;
            reason = e->reason;
        }
        if (e->device_lost && !lost)
            lost = e->reason;
        counter_ok = counter_ok && e->counter_valid && !e->refused;
        integ_ok = integ_ok && e->integral_valid && !e->refused;
        mean_ok = mean_ok && e->mean_power_valid && !e->refused;
        counter += e->counter_j;
        integ += e->integral_j;
        mean_e += e->mean_power_w * e->duration_s;
        edge += mb_meter_gap_edge_j(e);
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
    char nosensor[320];
    if (lost) {
        flag = "device_lost";
        reason = lost;
    } else if (!sensor) {
        flag = "no_sensor";
        reason = "the device reports neither power nor an energy counter";
        /* With the device's answers (NVML's NOT_SUPPORTED) where it gave them. */
        if (c->sensor_ok && c->sensor.power_note[0] && c->sensor.energy_note[0]) {
            snprintf(nosensor, sizeof(nosensor), "%s (%s; %s)", reason, c->sensor.power_note,
                     c->sensor.energy_note);
            reason = nosensor;
        }
    } else if (refused)
        flag = "too_short";
    else if (!counter_ok && !integ_ok)
        flag = "no_sensor";
    else if (gap_ok && mb_meter_gap_exceeds(integ, counter, edge))
        flag = "gap";
    cJSON_AddItemToObject(en, "counter_j", mb__rn_num_or_null(counter_ok, counter));
    cJSON_AddItemToObject(en, "integrated_j", mb__rn_num_or_null(integ_ok, integ));
    cJSON_AddItemToObject(en, "gap_pct", mb__rn_num_or_null(gap_ok, gap));
    cJSON_AddStringToObject(en, "flag", flag);
    /* One figure is the measurement (the counter where it exists): energy is refused only when
     * there is none; the other's absence is a note (NVIDIA's NOT_SUPPORTED, in its words). */
    bool one = (counter_ok || integ_ok) && !lost;
    cJSON_AddItemToObject(en, "method",
                          mb__rn_str_or_null(!one         ? NULL
                                             : counter_ok ? "counter"
                                                          : "power_integral"));
    cJSON_AddItemToObject(en, "refused_reason", mb__rn_str_or_null(one ? NULL : reason));
    cJSON_AddItemToObject(en, "note",
                          mb__rn_str_or_null(one && !(counter_ok && integ_ok) ? reason : NULL));
    cJSON_AddItemToObject(en, "idle_power_w", mb__rn_num_or_null(c->idle_ok, c->idle_power_w));
    cJSON_AddItemToObject(en, "mean_power_w",
                          mb__rn_num_or_null(mean_ok && secs > 0, mean_e / secs));
    cJSON_AddItemToObject(en, "peak_power_w", mb__rn_num_or_null(peak_ok, peak));
    cJSON_AddNumberToObject(en, "samples", (double)samples);
    cJSON_AddItemToObject(en, "missed_updates",
                          mb__rn_num_or_null(any && c->meter && sensor, (double)missed));
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
    cJSON_AddItemToObject(o, "cores", mb__rn_num_or_null(j->cores > 0, j->cores));
    cJSON_AddItemToObject(o, "omp_num_threads", mb__rn_num_or_null(j->cores > 0, j->cores));
    cJSON_AddItemToObject(o, "thread_percentage",
                          mb__rn_num_or_null(j->thread_pct >= 0, j->thread_pct));
    cJSON_AddItemToObject(o, "cooldown", mb__rn_cooldown_json(&j->cool));
    cJSON *ex = cJSON_AddObjectToObject(o, "exit");
    bool ran = j->proc && mb_proc_done(j->proc);
    int st = ran ? mb_proc_wait_status(j->proc) : 0;
    cJSON_AddItemToObject(ex, "code", mb__rn_num_or_null(ran && WIFEXITED(st), WEXITSTATUS(st)));
    cJSON_AddItemToObject(ex, "signal", mb__rn_num_or_null(ran && WIFSIGNALED(st), WTERMSIG(st)));
    struct mb_progress_point last;
    bool have = j->prog && mb_progress_last(j->prog, &last);
    cJSON_AddItemToObject(o, "steps", mb__rn_num_or_null(have, (double)(have ? last.step : 0)));
    bool samples = have && mb_progress_unit_is_samples(j->prog);
    cJSON_AddItemToObject(o, "units", mb__rn_num_or_null(samples, have ? last.work : 0));
    cJSON *tp = cJSON_AddObjectToObject(o, "throughput");
    struct mb_throughput t;
    memset(&t, 0, sizeof(t));
    if (j->prog && j->win_start_ns)
        mb_progress_throughput(j->prog, j->win_start_ns, 0, 0, 10, &t);
    cJSON_AddItemToObject(tp, "mean", mb__rn_num_or_null(t.valid, t.rate.mean));
    cJSON_AddItemToObject(tp, "ci95",
                          mb__rn_num_or_null(t.valid && t.rate.ci_valid, t.rate.ci95_half));
    char unit[32];
    snprintf(unit, sizeof(unit), "%s/s", t.valid && !t.unit_is_samples ? "steps" : j->w->unit);
    cJSON_AddStringToObject(tp, "unit_per_s", unit);
    if (!t.valid)
        cJSON_AddStringToObject(tp, "reason", j->win_start_ns ? t.reason : "no window");
    cJSON *win = cJSON_AddObjectToObject(o, "window");
    bool w_ok = j->win_start_ns && j->win_end_ns;
    cJSON_AddItemToObject(win, "start_ns", mb__rn_num_or_null(w_ok, (double)j->win_start_ns));
    cJSON_AddItemToObject(win, "end_ns", mb__rn_num_or_null(w_ok, (double)j->win_end_ns));
    cJSON_AddItemToObject(
        win, "seconds", mb__rn_num_or_null(w_ok, (double)(j->win_end_ns - j->win_start_ns) / 1e9));
    cJSON_AddItemToObject(
        o, "completion_s",
        mb__rn_num_or_null(j->completed, (double)(j->ended_ns - j->started_ns) / 1e9));
    cJSON_AddItemToObject(o, "started_ns",
                          mb__rn_num_or_null(j->started_ns != 0, (double)j->started_ns));
    cJSON_AddItemToObject(o, "ended_ns", mb__rn_num_or_null(j->ended_ns != 0, (double)j->ended_ns));
    char log[MB_EXP_NAME_MAX + 16];
    snprintf(log, sizeof(log), "jobs/%s.log", j->name);
    cJSON_AddStringToObject(o, "log", log);
    return o;
}

cJSON *mb__rn_cell_json(struct cell *c, double started_unix, double offset_s)
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
        cJSON_AddItemToObject(f, "job", mb__rn_str_or_null(j ? j->name : NULL));
        cJSON_AddStringToObject(f, "reason", c->fail);
        char tail[TAIL_BYTES + 1] = "";
        if (j) {
            char log[1200];
            mb__rn_job_log_path(c, j, log, sizeof(log));
            read_tail(log, tail, sizeof(tail));
        }
        cJSON_AddItemToObject(f, "log_tail", mb__rn_str_or_null(tail));
    } else {
        cJSON_AddNullToObject(o, "failure");
    }
    cJSON_AddStringToObject(o, "migbench_version", MB_VERSION_STRING);
    mb_jev_add_slurm(o);
    cJSON_AddNumberToObject(o, "started_unix", started_unix);
    cJSON_AddNumberToObject(o, "t0_ns", (double)c->t0_ns);
    cJSON_AddNumberToObject(o, "start_offset_s", offset_s);
    cJSON_AddItemToObject(o, "cooldown", mb__rn_cooldown_json(&c->cool));
    cJSON *w = cJSON_AddObjectToObject(o, "window");
    bool w_ok = c->win_first_ns && c->win_last_ns;
    double secs = 0;
    for (size_t i = 0; i < c->n_jobs; i++) {
        const struct job *j = &c->jobs[i];
        if (j->win_start_ns && j->win_end_ns &&
            (i == 0 || j->win_start_ns != c->jobs[i - 1].win_start_ns))
            secs += (double)(j->win_end_ns - j->win_start_ns) / 1e9;
    }
    cJSON_AddItemToObject(w, "start_ns", mb__rn_num_or_null(w_ok, (double)c->win_first_ns));
    cJSON_AddItemToObject(w, "end_ns", mb__rn_num_or_null(w_ok, (double)c->win_last_ns));
    cJSON_AddItemToObject(w, "seconds", mb__rn_num_or_null(w_ok, secs));
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
    cJSON_AddItemToObject(
        o, "reconfigure_seconds",
        mb__rn_num_or_null(mb__rn_uses_mig(c->run) && c->n_inst > 0, c->reconfigure_s));
    if (c->run->on[0])
        cJSON_AddStringToObject(o, "on", c->n_inst > 0 ? c->inst[0].profile : c->run->on);
    cJSON_AddItemToObject(o, "energy", energy_json(c));
    cJSON_AddItemToObject(o, "outside_load", mb__rn_load_json(c));
    cJSON *jobs = cJSON_AddArrayToObject(o, "jobs");
    for (size_t i = 0; i < c->n_jobs; i++)
        cJSON_AddItemToArray(jobs, job_json(c, &c->jobs[i]));
    return o;
}
