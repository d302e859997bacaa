/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The emulated GPU's power over time: the GPU model's power and clock (emu_model.c) under the
 * power limit (see emu.c's opening comment and docs/devices.md) or a trace, the energy delivered
 * and the sensor's window over it. The operations that report them are in emu_telemetry.c; this
 * file calls only emu_model.c, so the operation framing (emu_state.c) can start a new segment
 * when the load changes.
 */
#include "device/emu_internal.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "device/backends.h"
#include "migbench/clock.h"
#include "migbench/fileio.h"
#include "migbench/num.h"
#include "base/json_io.h"

/* ---- the power model ------------------------------------------------------------------- */

int64_t mb__emu_now(const struct emu *e)
{
    return e->manual_clock ? e->manual_ns : (int64_t)(mb_clock_monotonic_ns() - e->open_ns);
}

static double trace_power(const struct emu *e, double t)
{
    const struct emu_trace_pt *p = e->trace;
    if (t <= p[0].t_s)
        return p[0].w;
    if (t >= p[e->n_trace - 1].t_s)
        return p[e->n_trace - 1].w;
    size_t lo = 0, hi = e->n_trace - 1;
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if (p[mid].t_s <= t)
            lo = mid;
        else
            hi = mid;
    }
    double f = (t - p[lo].t_s) / (p[hi].t_s - p[lo].t_s);
    return p[lo].w + f * (p[hi].w - p[lo].w);
}

static double trace_energy(const struct emu *e, double t)
{
    const struct emu_trace_pt *p = e->trace;
    if (t <= p[0].t_s)
        return p[0].w * t; /* constant before the first point; negative before time 0 */
    size_t last = e->n_trace - 1;
    if (t >= p[last].t_s)
        return p[last].cum_j + (t - p[last].t_s) * p[last].w;
    size_t lo = 0, hi = last;
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if (p[mid].t_s <= t)
            lo = mid;
        else
            hi = mid;
    }
    return p[lo].cum_j + (t - p[lo].t_s) * (p[lo].w + trace_power(e, t)) / 2.0;
}

/* Energy delivered from time 0 to t (ns since open); before 0 the first power extends back. */
double mb__emu_energy_at(const struct emu *e, int64_t t_ns)
{
    if (e->trace)
        return trace_energy(e, (double)t_ns / 1e9);
    size_t i = e->n_seg - 1;
    while (i > 0 && e->seg[i].t0_ns > t_ns)
        i--;
    const struct emu_segment *s = &e->seg[i];
    return s->e0_j + s->power_w * (double)(t_ns - s->t0_ns) / 1e9;
}

double mb__emu_power_at(const struct emu *e, int64_t t_ns)
{
    if (e->trace)
        return trace_power(e, (double)t_ns / 1e9);
    size_t i = e->n_seg - 1;
    while (i > 0 && e->seg[i].t0_ns > t_ns)
        i--;
    return e->seg[i].power_w;
}

/* The power the GPU model gives for the attached jobs (or load=) under the power limit. */
double mb__emu_model_power(const struct emu *e)
{
    struct mb_gm_job jobs[MB_MAX_PROCESSES];
    struct mb_gm_result r;
    mb__emu_solve(e, jobs, false, &r);
    return r.power_w;
}

/* The SM clock fraction now (1 while a trace plays). */
double mb__emu_speed_now(const struct emu *e)
{
    if (e->trace)
        return 1.0;
    struct mb_gm_job jobs[MB_MAX_PROCESSES];
    struct mb_gm_result r;
    mb__emu_solve(e, jobs, false, &r);
    return r.s;
}

/* Starts a new constant-power segment when the load changed (processes came or went). */
void mb__emu_update_load(struct emu *e)
{
    if (e->trace)
        return;
    double w = mb__emu_model_power(e);
    struct emu_segment *last = &e->seg[e->n_seg - 1];
    if (w == last->power_w)
        return;
    int64_t now = mb__emu_now(e);
    struct emu_segment next = {now, mb__emu_energy_at(e, now), w};
    if (now <= last->t0_ns) {
        /* Same instant: replace rather than add an empty segment. */
        next.e0_j = last->e0_j;
        *last = next;
        return;
    }
    if (e->n_seg == EMU_MAX_SEGMENTS) {
        /* Forget the oldest; only sensor windows reaching that far back lose precision. */
        memmove(&e->seg[0], &e->seg[1], sizeof(e->seg[0]) * (EMU_MAX_SEGMENTS - 1));
        e->n_seg--;
    }
    e->seg[e->n_seg++] = next;
}

/* Mean power over the window [end - width, end]. */
static double window_mean(const struct emu *e, int64_t end_ns, int64_t width_ns)
{
    if (width_ns <= 0)
        return mb__emu_power_at(e, end_ns);
    return (mb__emu_energy_at(e, end_ns) - mb__emu_energy_at(e, end_ns - width_ns)) * 1e9 /
           (double)width_ns;
}

/* The sensor publishes a new value every update period, computed over the window before it. */
double mb__emu_sensor_reading(const struct emu *e, int64_t now_ns, unsigned long long window_ms)
{
    int64_t period = (int64_t)e->update_ms * 1000000;
    int64_t published = period > 0 ? (now_ns / period) * period : now_ns;
    return window_mean(e, published, (int64_t)window_ms * 1000000);
}

uint32_t mb__emu_mw(double w)
{
    double mw = w * 1000.0 + 0.5;
    if (mw < 0)
        return 0;
    if (mw > 4e9)
        return 4000000000u;
    return (uint32_t)mw;
}

/* The GPU's utilisation 0..1 (load=, the jobs' duty, or implied by a trace's power). */
double mb__emu_current_load(const struct emu *e, int64_t now)
{
    if (!e->trace) {
        if (e->load_fixed)
            return e->load;
        struct mb_gm_job jobs[MB_MAX_PROCESSES];
        struct mb_gm_result r;
        size_t n = mb__emu_solve(e, jobs, false, &r);
        return mb__emu_jobs_util(e, jobs, n);
    }
    if (e->max_w <= e->idle_w)
        return 0.0;
    double l = (mb__emu_power_at(e, now) - e->idle_w) / (e->max_w - e->idle_w);
    return l < 0 ? 0 : (l > 1 ? 1 : l);
}

uint64_t mb__emu_procs_mem(const struct emu *e, int gi)
{
    uint64_t m = 0;
    for (size_t i = 0; i < e->st.n_procs; i++)
        if (gi < 0 || e->st.procs[i].gi == gi)
            m += e->st.procs[i].mem_bytes;
    return m;
}
