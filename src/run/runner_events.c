/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The cell's outward helpers, shared by the runner's files (run/runner_internal.h): progress
 * events to the caller (with the lowest power seen, the cool-down's fallback reference), journal
 * lines through journal_events.c's codec, the cell's first failure, a job's log path. They call
 * nothing of the runner's own files, so runner.c, runner_modes.c, runner_load.c and
 * runner_record.c call down to them and never round in a circle.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "migbench/clock.h"
#include "migbench/meter.h"
#include "migbench/progress.h"
#include "results/results_json.h"
#include "run/runner_internal.h"

void mb__rn_power_seen(struct cell *c, double w)
{
    struct mb_runner_power *p = c->o->power;
    if (!p || !(w >= 0))
        return;
    if (!p->lowest_ok || w < p->lowest_w) {
        p->lowest_w = w;
        p->lowest_ok = true;
    }
}

void mb__rn_emit(struct cell *c, enum mb_runner_event_kind kind, const char *fmt, ...)
{
    struct mb_telemetry tel;
    bool tel_ok = c->meter && mb_meter_latest(c->meter, &tel) && (tel.valid & MB_TEL_POWER);
    if (tel_ok)
        mb__rn_power_seen(c, tel.power_mw / 1000.0);
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

int mb__rn_jappend(struct cell *c, cJSON *o)
{
    struct mb_error e;
    int rc = o ? mb_journal_append(c->o->journal, o, &e) : MB_ENOMEM;
    cJSON_Delete(o);
    if (rc != MB_OK)
        mb_error_set(c->err, rc, "journal: %s", o ? e.msg : "out of memory");
    return rc;
}

struct mb_jev mb__rn_jev(enum mb_jev_kind kind, const struct cell *c)
{
    struct mb_jev e = mb_jev_init(kind);
    if (c) {
        e.run = c->run->name;
        e.rep = (int)c->rep;
        e.with_slurm = true;
        e.gpu_uuid = c->info.uuid;
    }
    return e;
}

void mb__rn_cell_fail(struct cell *c, int job, const char *fmt, ...)
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

void mb__rn_job_log_path(const struct cell *c, const struct job *j, char *out, size_t cap)
{
    snprintf(out, cap, "%s/jobs/%s.log", c->dir, j->name);
}
