/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The emulated GPU's power: the GPU model's power and clock (emu_model.c) or a trace, the power
 * limit (see emu.c's opening comment and docs/devices.md), the energy counter and the sensor, and
 * the telemetry, sensor, caps and power-limit operations that report them.
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
static double energy_at(const struct emu *e, int64_t t_ns)
{
    if (e->trace)
        return trace_energy(e, (double)t_ns / 1e9);
    size_t i = e->n_seg - 1;
    while (i > 0 && e->seg[i].t0_ns > t_ns)
        i--;
    const struct emu_segment *s = &e->seg[i];
    return s->e0_j + s->power_w * (double)(t_ns - s->t0_ns) / 1e9;
}

static double power_at(const struct emu *e, int64_t t_ns)
{
    if (e->trace)
        return trace_power(e, (double)t_ns / 1e9);
    size_t i = e->n_seg - 1;
    while (i > 0 && e->seg[i].t0_ns > t_ns)
        i--;
    return e->seg[i].power_w;
}

static double limit_w(const struct emu *e)
{
    return mb__emu_limit_w(e);
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
static double speed_now(const struct emu *e)
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
    struct emu_segment next = {now, energy_at(e, now), w};
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
        return power_at(e, end_ns);
    return (energy_at(e, end_ns) - energy_at(e, end_ns - width_ns)) * 1e9 / (double)width_ns;
}

/* The sensor publishes a new value every update period, computed over the window before it. */
static double sensor_reading(const struct emu *e, int64_t now_ns, unsigned long long window_ms)
{
    int64_t period = (int64_t)e->update_ms * 1000000;
    int64_t published = period > 0 ? (now_ns / period) * period : now_ns;
    return window_mean(e, published, (int64_t)window_ms * 1000000);
}

static uint32_t to_mw(double w)
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
    double l = (power_at(e, now) - e->idle_w) / (e->max_w - e->idle_w);
    return l < 0 ? 0 : (l > 1 ? 1 : l);
}

/* ---- identity, telemetry, sensor ------------------------------------------------------- */

int mb__emu_info(struct mb_device *dev, struct mb_device_info *out, struct mb_error *err)
{
    struct emu *e = as_emu(dev);
    int rc = mb__emu_op_begin(e, OP_info, err);
    if (rc)
        return rc;
    memset(out, 0, sizeof(*out));
    snprintf(out->backend, sizeof(out->backend), "emu");
    out->emulated = true;
    out->index = e->index;
    snprintf(out->name, sizeof(out->name), "%s", e->defs.vendor_name);
    snprintf(out->model, sizeof(out->model), "%s", e->model->name);
    snprintf(out->uuid, sizeof(out->uuid), "%s", e->uuid);
    if (e->model->total_memory_mib > 0) {
        out->mem_total_bytes = (uint64_t)e->model->total_memory_mib * MIB;
        out->mem_total_valid = true;
    }
    out->mig_capable = true;
    return mb__emu_op_end(e, MB_OK, false, err);
}

uint64_t mb__emu_procs_mem(const struct emu *e, int gi)
{
    uint64_t m = 0;
    for (size_t i = 0; i < e->st.n_procs; i++)
        if (gi < 0 || e->st.procs[i].gi == gi)
            m += e->st.procs[i].mem_bytes;
    return m;
}

static unsigned long long counter_mj(const struct emu *e, int64_t now)
{
    int64_t t = now;
    if (e->energy_update_ms) {
        int64_t q = (int64_t)e->energy_update_ms * 1000000;
        t = (now / q) * q;
    }
    double j = energy_at(e, t);
    unsigned long long mj = e->energy0_mj + (unsigned long long)llround(j * 1000.0);
    return e->wrap_mj ? mj % e->wrap_mj : mj;
}

int mb__emu_telemetry(struct mb_device *dev, struct mb_telemetry *out, struct mb_error *err)
{
    struct emu *e = as_emu(dev);
    int rc = mb__emu_op_begin(e, OP_telemetry, err);
    if (rc)
        return rc;
    memset(out, 0, sizeof(*out));
    int64_t now = mb__emu_now(e);
    out->t_ns = e->manual_clock ? e->open_ns + now : mb_clock_monotonic_ns();
    double inst = sensor_reading(e, now, e->sensor == MB_POWER_INSTANT ? e->avg_ms : 25);
    out->power_instant_mw = to_mw(inst);
    out->valid |= MB_TEL_POWER_INSTANT;
    if (e->sensor == MB_POWER_AVERAGED || e->sens.average_field == 1) {
        double avg = sensor_reading(e, now, e->sensor == MB_POWER_AVERAGED ? e->avg_ms : 1000);
        out->power_avg_mw = to_mw(avg);
        out->valid |= MB_TEL_POWER_AVG;
    }
    out->power_mw = e->sensor == MB_POWER_AVERAGED ? out->power_avg_mw : out->power_instant_mw;
    out->valid |= MB_TEL_POWER;
    if (e->counter) {
        out->energy_mj = counter_mj(e, now);
        out->valid |= MB_TEL_ENERGY;
    }
    double load = mb__emu_current_load(e, now);
    /* NVML: utilisation is not supported on a MIG-enabled GPU. */
    if (!e->st.mig_current) {
        out->util_gpu_pct = (uint32_t)lround(load * 100.0);
        out->util_mem_pct = (uint32_t)lround(load * 40.0);
        out->valid |= MB_TEL_UTIL_GPU | MB_TEL_UTIL_MEM;
    }
    out->mem_used_bytes = mb__emu_procs_mem(e, -1);
    out->valid |= MB_TEL_MEM_USED;
    double p = power_at(e, now);
    double speed = speed_now(e);
    out->clock_sm_mhz =
        p > e->idle_w ? (uint32_t)lround(e->defs.sm_max_mhz * speed) : e->defs.sm_idle_mhz;
    out->clock_mem_mhz = e->defs.mem_mhz;
    out->temp_c = (int32_t)lround(30.0 + (e->max_w > 0 ? 50.0 * p / e->max_w : 0.0));
    out->throttle_reasons = speed < 1.0 ? MB_THROTTLE_SW_POWER_CAP : 0;
    out->power_limit_mw = to_mw(limit_w(e));
    out->valid |=
        MB_TEL_CLOCK_SM | MB_TEL_CLOCK_MEM | MB_TEL_TEMP | MB_TEL_THROTTLE | MB_TEL_POWER_LIMIT;
    return mb__emu_op_end(e, MB_OK, false, err);
}

uint32_t mb__emu_caps(struct mb_device *dev)
{
    struct emu *e = as_emu(dev);
    uint32_t caps = MB_CAP_EMULATED | MB_CAP_GPU | MB_CAP_MPS | MB_CAP_POWER;
    if (e->model->n_profiles > 0)
        caps |= MB_CAP_MIG | MB_CAP_SET_MIG_MODE;
    if (e->counter)
        caps |= MB_CAP_ENERGY_COUNTER;
    if (!e->trace)
        caps |= MB_CAP_SET_POWER_LIMIT;
    return caps;
}

int mb__emu_sensor(struct mb_device *dev, struct mb_sensor_info *out, struct mb_error *err)
{
    struct emu *e = as_emu(dev);
    int rc = mb__emu_op_begin(e, OP_sensor, err);
    if (rc)
        return rc;
    memset(out, 0, sizeof(*out));
    out->power_kind = e->sensor;
    out->power_update_period_ms = (uint32_t)e->update_ms;
    out->power_avg_window_ms = (uint32_t)e->avg_ms;
    out->has_instant = true;
    out->has_average = e->sensor == MB_POWER_AVERAGED || e->sens.average_field == 1;
    out->has_energy_counter = e->counter;
    if (e->counter) {
        out->energy_update_period_ms = (uint32_t)e->energy_update_ms;
        out->energy_resolution_mj = 1;
        out->energy_wrap_mj = e->wrap_mj;
    }
    snprintf(out->scope, sizeof(out->scope), "%s", e->sens.scope);
    snprintf(out->source, sizeof(out->source),
             "emulated: %s power, %s %llu ms window every %llu ms; energy %s",
             e->trace ? "trace" : "gpumodel", mb_power_kind_str(e->sensor), e->avg_ms, e->update_ms,
             !e->counter           ? "none"
             : e->energy_update_ms ? "stepped"
                                   : "exact");
    return mb__emu_op_end(e, MB_OK, false, err);
}

/* ---- power limit ------------------------------------------------------------------------ */

int mb__emu_power_limit(struct mb_device *dev, struct mb_power_limit *out, struct mb_error *err)
{
    struct emu *e = as_emu(dev);
    int rc = mb__emu_op_begin(e, OP_power_limit, err);
    if (rc)
        return rc;
    memset(out, 0, sizeof(*out));
    out->limit_mw = out->enforced_mw = to_mw(limit_w(e));
    out->default_mw = out->max_mw = to_mw(e->max_w);
    out->min_mw = to_mw(e->min_limit_w);
    int64_t now = mb__emu_now(e);
    double speed = speed_now(e);
    (void)now;
    out->throttle_reasons = speed < 1.0 ? MB_THROTTLE_SW_POWER_CAP : 0;
    out->valid = MB_PL_LIMIT | MB_PL_ENFORCED | MB_PL_RANGE | MB_PL_DEFAULT | MB_PL_THROTTLE;
    return mb__emu_op_end(e, MB_OK, false, err);
}

int mb__emu_set_power_limit(struct mb_device *dev, uint32_t limit_mw, struct mb_error *err)
{
    struct emu *e = as_emu(dev);
    if (e->trace)
        return mb_error_set(err, MB_EUNSUPPORTED,
                            "emu: the power limit cannot be set while a power trace plays");
    int rc = mb__emu_op_begin(e, OP_set_power_limit, err);
    if (rc)
        return rc;
    uint32_t lo = to_mw(e->min_limit_w), hi = to_mw(e->max_w);
    if (e->limit_denied)
        rc = mb_error_set(err, MB_EPERM,
                          "emu %s: setting the power limit needs root (emulated: limit_perm=deny)",
                          e->model->name);
    else if (limit_mw < lo || limit_mw > hi)
        rc =
            mb_error_set(err, MB_ERANGE, "emu %s: power limit %u mW is outside the range %u..%u mW",
                         e->model->name, limit_mw, lo, hi);
    if (rc != MB_OK)
        return mb__emu_op_end(e, rc, false, err);
    /* The default is stored as "never set", so a restored GPU's state reads as it did before. */
    e->st.limit_mw = limit_mw == hi ? 0 : limit_mw;
    return mb__emu_op_end(e, MB_OK, true, err);
}

int mb__emu_speed(struct mb_device *dev, double *speed, struct mb_error *err)
{
    if (!mb__emu_is(dev))
        return mb_error_set(err, MB_EINVAL, "not an emulated device");
    struct emu *e = as_emu(dev);
    int rc = mb__emu_op_begin(e, OP_speed, err);
    if (rc)
        return rc;
    *speed = speed_now(e);
    return mb__emu_op_end(e, MB_OK, false, err);
}

int mb__emu_advance(struct mb_device *dev, int64_t ns, struct mb_error *err)
{
    if (!mb__emu_is(dev))
        return mb_error_set(err, MB_EINVAL, "not an emulated device");
    struct emu *e = as_emu(dev);
    if (!e->manual_clock)
        return mb_error_set(err, MB_ESTATE, "emu: the clock is not manual (use clock=manual)");
    if (ns < 0)
        return mb_error_set(err, MB_EINVAL, "emu: the clock cannot go back");
    e->manual_ns += ns;
    return MB_OK;
}

int64_t mb__emu_elapsed_ns(struct mb_device *dev)
{
    return mb__emu_is(dev) ? mb__emu_now(as_emu(dev)) : 0;
}

double mb__emu_energy_j(struct mb_device *dev)
{
    if (!mb__emu_is(dev))
        return 0.0;
    struct emu *e = as_emu(dev);
    return energy_at(e, mb__emu_now(e));
}
