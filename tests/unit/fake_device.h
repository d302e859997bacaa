/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A scripted device for meter tests: a piecewise-linear power trace, a sensor that publishes
 * instant or averaged readings every update period, an energy counter that is the exact integral
 * (with offset, wrap and a driver-reload reset), failing reads and MIG instances on request.
 * Time is manual (fake_advance) or CLOCK_MONOTONIC. Header-only: each test includes it once.
 */
#ifndef MB_TEST_FAKE_DEVICE_H
#define MB_TEST_FAKE_DEVICE_H

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "migbench/device.h"

#define FAKE_MAX_PTS 64

struct fake_dev {
    struct mb_device base;
    bool real_clock;
    int64_t now_ns;    /* manual clock */
    int64_t origin_ns; /* real clock: time 0 */
    size_t n;          /* trace points; power is constant before the first and after the last */
    double tt[FAKE_MAX_PTS], pw[FAKE_MAX_PTS];
    enum mb_power_kind kind;
    uint32_t update_ms, avg_ms;
    bool counter;
    uint32_t energy_update_ms;
    uint64_t offset_mj, wrap_mj;
    double reset_at_s; /* > 0: the counter restarts from 0 at this time */
    unsigned fail_every;
    unsigned reads;
    unsigned n_gi;
};

static int64_t fake_mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static double fake_power_at(const struct fake_dev *f, double t)
{
    if (t <= f->tt[0])
        return f->pw[0];
    for (size_t i = 1; i < f->n; i++)
        if (t <= f->tt[i])
            return f->pw[i - 1] +
                   (f->pw[i] - f->pw[i - 1]) * (t - f->tt[i - 1]) / (f->tt[i] - f->tt[i - 1]);
    return f->pw[f->n - 1];
}

/* Exact energy from time 0 to t (J); negative t counts backwards at the first power. */
static double fake_energy_at(const struct fake_dev *f, double t)
{
    double e = 0, prev_t = 0, prev_p = fake_power_at(f, 0);
    if (t <= 0)
        return prev_p * t;
    for (size_t i = 0; i < f->n; i++) {
        if (f->tt[i] <= prev_t)
            continue;
        double tt = f->tt[i] < t ? f->tt[i] : t;
        double p = fake_power_at(f, tt);
        e += (tt - prev_t) * (p + prev_p) / 2;
        prev_t = tt;
        prev_p = p;
        if (tt >= t)
            return e;
    }
    return e + (t - prev_t) * prev_p;
}

static double fake_now_s(const struct fake_dev *f)
{
    return f->real_clock ? (double)(fake_mono() - f->origin_ns) * 1e-9 : (double)f->now_ns * 1e-9;
}

static double fake_floor_to(double t, uint32_t period_ms)
{
    if (!period_ms)
        return t;
    double p = period_ms * 1e-3;
    return floor(t / p + 1e-9) * p;
}

static int fake_telemetry(struct mb_device *dev, struct mb_telemetry *out, struct mb_error *err)
{
    struct fake_dev *f = (struct fake_dev *)dev;
    memset(out, 0, sizeof(*out));
    double t = fake_now_s(f);
    out->t_ns = f->real_clock ? f->origin_ns + (int64_t)(t * 1e9) : f->now_ns;
    f->reads++;
    if (f->fail_every && f->reads % f->fail_every == 0)
        return mb_error_set(err, MB_EDEVICE, "scripted read failure");
    if (f->kind == MB_POWER_INSTANT || f->kind == MB_POWER_AVERAGED) {
        double pub = fake_floor_to(t, f->update_ms);
        double w;
        if (f->kind == MB_POWER_AVERAGED) {
            double win = f->avg_ms * 1e-3;
            w = (fake_energy_at(f, pub) - fake_energy_at(f, pub - win)) / win;
        } else {
            w = fake_power_at(f, pub);
        }
        out->power_mw = (uint32_t)llround(w * 1000);
        out->valid |= MB_TEL_POWER;
    }
    if (f->counter) {
        double pub = fake_floor_to(t, f->energy_update_ms);
        double e = fake_energy_at(f, pub);
        uint64_t mj;
        if (f->reset_at_s > 0 && pub >= f->reset_at_s)
            mj = (uint64_t)llround((e - fake_energy_at(f, f->reset_at_s)) * 1000);
        else
            mj = f->offset_mj + (uint64_t)llround(e * 1000);
        if (f->wrap_mj)
            mj %= f->wrap_mj;
        out->energy_mj = mj;
        out->valid |= MB_TEL_ENERGY;
    }
    out->temp_c = 40;
    out->throttle_reasons = 0x4;
    out->valid |= MB_TEL_TEMP | MB_TEL_THROTTLE;
    return MB_OK;
}

static int fake_info(struct mb_device *dev, struct mb_device_info *out, struct mb_error *err)
{
    (void)dev;
    (void)err;
    memset(out, 0, sizeof(*out));
    strcpy(out->backend, "fake");
    out->emulated = true;
    strcpy(out->name, "scripted test device");
    return MB_OK;
}

static int fake_sensor(struct mb_device *dev, struct mb_sensor_info *out, struct mb_error *err)
{
    struct fake_dev *f = (struct fake_dev *)dev;
    (void)err;
    memset(out, 0, sizeof(*out));
    out->power_kind = f->kind;
    out->power_update_period_ms = f->update_ms;
    out->power_avg_window_ms = f->kind == MB_POWER_AVERAGED ? f->avg_ms : 0;
    out->has_energy_counter = f->counter;
    out->energy_update_period_ms = f->energy_update_ms;
    out->energy_resolution_mj = 1;
    out->energy_wrap_mj = f->wrap_mj;
    strcpy(out->scope, "board");
    strcpy(out->source, "test script");
    return MB_OK;
}

static int fake_mig_instances(struct mb_device *dev, struct mb_mig_instance *out, size_t cap,
                              size_t *n, struct mb_error *err)
{
    struct fake_dev *f = (struct fake_dev *)dev;
    (void)err;
    if (!f->n_gi)
        return MB_EUNSUPPORTED;
    *n = 0;
    for (unsigned g = 0; g < f->n_gi && g < cap; g++) {
        memset(&out[g], 0, sizeof(out[g]));
        out[g].gi_id = 1 + g;
        out[g].mem_used_bytes = (g + 1) * 1000ull;
        out[g].mem_valid = g == 0;
        (*n)++;
    }
    return MB_OK;
}

static int fake_mig_activity(struct mb_device *dev, unsigned gi_id, struct mb_mig_activity *out,
                             struct mb_error *err)
{
    (void)dev;
    (void)err;
    memset(out, 0, sizeof(*out));
    if (gi_id != 1)
        return MB_EUNSUPPORTED;
    out->valid = MB_ACT_SM_UTIL;
    out->sm_util_pct = 42.25;
    return MB_OK;
}

static void fake_close(struct mb_device *dev)
{
    free(dev);
}

static uint32_t fake_caps(struct mb_device *dev)
{
    const struct fake_dev *f = (const struct fake_dev *)dev;
    return MB_CAP_EMULATED | MB_CAP_GPU | MB_CAP_POWER | (f->counter ? MB_CAP_ENERGY_COUNTER : 0);
}

static const struct mb_device_ops fake_ops = {
    .version = MB_DEVICE_OPS_VERSION,
    .name = "fake",
    .close = fake_close,
    .info = fake_info,
    .telemetry = fake_telemetry,
    .sensor = fake_sensor,
    .caps = fake_caps,
    .mig_instances = fake_mig_instances,
    .mig_activity = fake_mig_activity,
};

/* A fake with constant power w, an instant sensor updated every 100 ms and a counter. */
static struct fake_dev *fake_new(double w)
{
    struct fake_dev *f = calloc(1, sizeof(*f));
    f->base.ops = &fake_ops;
    f->n = 1;
    f->tt[0] = 0;
    f->pw[0] = w;
    f->kind = MB_POWER_INSTANT;
    f->update_ms = 100;
    f->counter = true;
    f->energy_update_ms = 100;
    f->origin_ns = fake_mono();
    return f;
}

static void fake_point(struct fake_dev *f, double t, double w)
{
    if (f->n == 1 && f->tt[0] == 0 && t == 0) {
        f->pw[0] = w;
        return;
    }
    f->tt[f->n] = t;
    f->pw[f->n] = w;
    f->n++;
}

#endif
