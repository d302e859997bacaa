/* SPDX-License-Identifier: Apache-2.0 */
/* The meter: a sampling thread, a streaming CSV, and two-way window energy. */
#include "migbench/meter.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "migbench/clock.h"
#include "migbench/stats.h"

/* One time series (power or energy counter): the last point folded in. */
struct chain {
    bool have;
    int64_t t;
    double v;     /* power: W */
    uint64_t raw; /* energy: counter in mJ */
};

struct window {
    bool used;
    bool end_set;
    bool done;
    bool truncated;
    bool lost; /* the device answered GPU_IS_LOST before the window was covered */
    int64_t t0, t1;
    double p_area_j;
    int64_t p_cov_ns;
    double e_sum_j;
    unsigned e_ticks; /* readings inside the window at which the counter had advanced */
    int64_t e_cov_ns;
    int64_t e_lost_ns;
    unsigned wraps, resets;
    uint64_t samples, failures, missed;
    bool peak_valid;
    bool throttle_valid;
    uint64_t throttle; /* reason bits seen (OR) */
    double peak_w;
};

struct mb_meter {
    struct mb_device *dev;
    struct mb_device_info info;
    struct mb_sensor_info sensor;
    int64_t interval_ns;
    int64_t min_window_ns;
    bool min_window_set; /* given by the caller rather than derived from the sensor */
    int64_t shift_ns;
    /* CSV: touched only by whoever samples (the thread, or the caller before start/after stop). */
    FILE *csv;
    int64_t csv_t0;
    bool have_t0;
    int64_t last_flush;
    unsigned n_gi;
    unsigned gi_ids[MB_MAX_MIG_INSTANCES];

    pthread_t thread;
    bool thread_started;
    pthread_mutex_t mu;
    pthread_cond_t wake;    /* to the thread: stop or kick */
    pthread_cond_t changed; /* from the thread: a sample was folded in */
    /* Under mu from here on. */
    bool running;
    bool stopped; /* mb_meter_stop was called: open windows end with what they have */
    bool stop_req;
    bool kick;
    struct window win[MB_METER_MAX_WINDOWS];
    struct chain pch, ech;
    int64_t last_t; /* time of the last sample folded in (0: none) */
    bool have_prev_reading;
    uint32_t prev_power_mw;
    uint64_t prev_energy_mj;
    struct mb_telemetry latest;
    bool have_latest;
    bool lost;              /* a read answered MB_EGONE (NVML's GPU_IS_LOST) */
    char lost_why[160];     /* the device's words for it, NVIDIA's code included */
    char activity_why[160]; /* why per-instance activity could not be read (first failure) */
    struct mb_meter_counts counts;
};

int64_t mb_meter_now_ns(void)
{
    return mb_clock_monotonic_ns();
}

static int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

static int64_t max64(int64_t a, int64_t b)
{
    return a > b ? a : b;
}

/* ---- folding samples into windows (caller holds mu) ---------------------------------------- */

/* The part [lo, hi) of the interval [a, b) that falls in open window x; false when none. */
static bool overlap(const struct window *x, int64_t a, int64_t b, int64_t *lo, int64_t *hi)
{
    if (!x->used || x->done)
        return false;
    *lo = max64(a, x->t0);
    *hi = min64(b, x->end_set ? x->t1 : INT64_MAX);
    return *hi > *lo;
}

static void fold_power(struct mb_meter *m, int64_t t, double w)
{
    if (m->pch.have && t > m->pch.t) {
        int64_t a = m->pch.t, b = t;
        for (int i = 0; i < MB_METER_MAX_WINDOWS; i++) {
            struct window *x = &m->win[i];
            int64_t lo, hi;
            if (!overlap(x, a, b, &lo, &hi))
                continue;
            double ylo = mb_stats_lerp((double)a, m->pch.v, (double)b, w, (double)lo);
            double yhi = mb_stats_lerp((double)a, m->pch.v, (double)b, w, (double)hi);
            x->p_area_j += (double)(hi - lo) * 1e-9 * (ylo + yhi) * 0.5;
            x->p_cov_ns += hi - lo;
        }
    }
    if (!m->pch.have || t >= m->pch.t) {
        m->pch.have = true;
        m->pch.t = t;
        m->pch.v = w;
    }
}

static void fold_energy(struct mb_meter *m, int64_t t, uint64_t mj)
{
    if (m->ech.have && t > m->ech.t) {
        int64_t a = m->ech.t, b = t;
        bool reset = false, wrapped = false;
        double d_j = 0;
        if (mj >= m->ech.raw) {
            d_j = (double)(mj - m->ech.raw) * 1e-3;
        } else if (m->sensor.energy_wrap_mj > 0 && m->ech.raw < m->sensor.energy_wrap_mj &&
                   mj < m->sensor.energy_wrap_mj) {
            d_j = (double)(m->sensor.energy_wrap_mj - m->ech.raw + mj) * 1e-3;
            wrapped = true;
            m->counts.counter_wraps++;
        } else {
            /* Backwards without a wrap: the driver reloaded and the counter restarted. */
            reset = true;
            m->counts.counter_resets++;
        }
        for (int i = 0; i < MB_METER_MAX_WINDOWS; i++) {
            struct window *x = &m->win[i];
            int64_t lo, hi;
            if (!overlap(x, a, b, &lo, &hi))
                continue;
            if (reset) {
                x->e_lost_ns += hi - lo;
                x->resets++;
            } else {
                x->e_sum_j += d_j * (double)(hi - lo) / (double)(b - a);
                x->e_ticks += d_j > 0 && b > x->t0 && (!x->end_set || b <= x->t1);
                x->e_cov_ns += hi - lo;
                x->wraps += wrapped;
            }
        }
    }
    if (!m->ech.have || t >= m->ech.t) {
        m->ech.have = true;
        m->ech.t = t;
        m->ech.raw = mj;
    }
}

/* A window is covered once a sample at or after its end (plus the averaging shift) is in. */
static void settle_windows(struct mb_meter *m)
{
    for (int i = 0; i < MB_METER_MAX_WINDOWS; i++) {
        struct window *x = &m->win[i];
        if (x->used && x->end_set && !x->done && m->last_t >= x->t1 + m->shift_ns &&
            (!m->pch.have || m->pch.t >= x->t1) && (!m->ech.have || m->ech.t >= x->t1))
            x->done = true;
    }
}

/*
 * The device is gone (NVML's GPU_IS_LOST): nothing it said can be trusted to have covered a window
 * that is still open, and nothing more will come. Every open window ends now, lost; so does any
 * window begun later on this meter.
 */
static void device_lost(struct mb_meter *m, const char *why)
{
    if (!m->lost)
        snprintf(m->lost_why, sizeof(m->lost_why), "%.159s", why);
    m->lost = true;
    for (int i = 0; i < MB_METER_MAX_WINDOWS; i++) {
        struct window *x = &m->win[i];
        if (x->used && !x->done) {
            x->lost = true;
            x->done = true;
        }
    }
}

static void fold_sample(struct mb_meter *m, const struct mb_telemetry *tel, bool ok, int64_t t)
{
    m->counts.samples++;
    if (ok && t > m->last_t)
        m->last_t = t;
    bool missed = false;
    if (ok) {
        bool pv = tel->valid & MB_TEL_POWER, ev = tel->valid & MB_TEL_ENERGY;
        if (m->have_prev_reading && (pv || ev))
            missed = (!pv || tel->power_mw == m->prev_power_mw) &&
                     (!ev || tel->energy_mj == m->prev_energy_mj);
        if (missed)
            m->counts.missed_updates++;
        m->have_prev_reading = pv || ev;
        m->prev_power_mw = tel->power_mw;
        m->prev_energy_mj = tel->energy_mj;
        m->latest = *tel;
        m->latest.t_ns = t;
        m->have_latest = true;
    } else {
        m->counts.read_failures++;
    }
    for (int i = 0; i < MB_METER_MAX_WINDOWS; i++) {
        struct window *x = &m->win[i];
        if (!x->used || x->done || t < x->t0 || (x->end_set && t > x->t1))
            continue;
        x->samples++;
        if (!ok) {
            x->failures++;
            continue;
        }
        x->missed += missed;
        if (tel->valid & MB_TEL_POWER) {
            double w = tel->power_mw * 1e-3;
            if (!x->peak_valid || w > x->peak_w)
                x->peak_w = w;
            x->peak_valid = true;
        }
        if (tel->valid & MB_TEL_THROTTLE) {
            x->throttle |= tel->throttle_reasons;
            x->throttle_valid = true;
        }
    }
    if (ok && (tel->valid & MB_TEL_POWER))
        fold_power(m, t - m->shift_ns, tel->power_mw * 1e-3);
    if (ok && (tel->valid & MB_TEL_ENERGY))
        fold_energy(m, t, tel->energy_mj);
    settle_windows(m);
}

/* ---- the CSV ----------------------------------------------------------------------------- */

/* Appends an unsigned decimal to p (no snprintf in the hot loop). */
static char *put_u64(char *p, uint64_t v)
{
    char tmp[24];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n)
        *p++ = tmp[--n];
    return p;
}

static char *put_i64(char *p, int64_t v)
{
    if (v < 0) {
        *p++ = '-';
        return put_u64(p, (uint64_t)(-(v + 1)) + 1);
    }
    return put_u64(p, (uint64_t)v);
}

static char *put_field(char *p, bool valid, uint64_t v)
{
    *p++ = ',';
    return valid ? put_u64(p, v) : p;
}

static char *put_pct(char *p, bool valid, double v)
{
    *p++ = ',';
    if (!valid)
        return p;
    /* One decimal, from a non-negative percentage. */
    uint64_t tenths = (uint64_t)(v * 10 + 0.5);
    p = put_u64(p, tenths / 10);
    *p++ = '.';
    *p++ = (char)('0' + tenths % 10);
    return p;
}

static const char *const mig_cols[] = {"mem_used_bytes", "sm_util_pct", "sm_occupancy_pct",
                                       "tensor_util_pct", "dram_bw_util_pct"};

static int csv_header(struct mb_meter *m)
{
    fputs("t_ns,t_s,read_ok,power_mw,power_instant_mw,power_avg_mw,energy_mj,energy_dram_mj,"
          "util_gpu_pct,util_mem_pct,mem_used_bytes,clock_sm_mhz,clock_mem_mhz,temp_c,"
          "throttle_reasons,power_limit_mw",
          m->csv);
    for (unsigned g = 0; g < m->n_gi; g++)
        for (size_t c = 0; c < sizeof(mig_cols) / sizeof(mig_cols[0]); c++)
            fprintf(m->csv, ",gi%u_%s", m->gi_ids[g], mig_cols[c]);
    fputc('\n', m->csv);
    return fflush(m->csv) == 0 ? MB_OK : MB_EIO;
}

static void csv_row(struct mb_meter *m, const struct mb_telemetry *tel, bool ok, int64_t t,
                    const struct mb_mig_instance *inst, size_t n_inst,
                    const struct mb_mig_activity *act, const bool *act_ok)
{
    char buf[512 + MB_MAX_MIG_INSTANCES * 120];
    char *p = buf;
    uint32_t v = ok ? tel->valid : 0;
    p = put_i64(p, t);
    *p++ = ',';
    /* Seconds since the first sample, with ns precision. */
    int64_t rel = t - m->csv_t0;
    if (rel < 0) {
        *p++ = '-';
        rel = -rel;
    }
    p = put_u64(p, (uint64_t)(rel / 1000000000));
    *p++ = '.';
    char frac[9];
    int64_t ns = rel % 1000000000;
    for (int i = 8; i >= 0; i--, ns /= 10)
        frac[i] = (char)('0' + ns % 10);
    memcpy(p, frac, 9);
    p += 9;
    *p++ = ',';
    *p++ = ok ? '1' : '0';
    p = put_field(p, v & MB_TEL_POWER, tel->power_mw);
    p = put_field(p, v & MB_TEL_POWER_INSTANT, tel->power_instant_mw);
    p = put_field(p, v & MB_TEL_POWER_AVG, tel->power_avg_mw);
    p = put_field(p, v & MB_TEL_ENERGY, tel->energy_mj);
    p = put_field(p, v & MB_TEL_ENERGY_DRAM, tel->energy_dram_mj);
    p = put_field(p, v & MB_TEL_UTIL_GPU, tel->util_gpu_pct);
    p = put_field(p, v & MB_TEL_UTIL_MEM, tel->util_mem_pct);
    p = put_field(p, v & MB_TEL_MEM_USED, tel->mem_used_bytes);
    p = put_field(p, v & MB_TEL_CLOCK_SM, tel->clock_sm_mhz);
    p = put_field(p, v & MB_TEL_CLOCK_MEM, tel->clock_mem_mhz);
    *p++ = ',';
    if (v & MB_TEL_TEMP)
        p = put_i64(p, tel->temp_c);
    *p++ = ',';
    if (v & MB_TEL_THROTTLE) {
        static const char hex[] = "0123456789abcdef";
        *p++ = '0';
        *p++ = 'x';
        for (int s = 60; s >= 0; s -= 4)
            *p++ = hex[(tel->throttle_reasons >> s) & 0xf];
    }
    p = put_field(p, v & MB_TEL_POWER_LIMIT, tel->power_limit_mw);
    for (unsigned g = 0; g < m->n_gi; g++) {
        const struct mb_mig_instance *mi = NULL;
        for (size_t i = 0; i < n_inst; i++)
            if (inst[i].gi_id == m->gi_ids[g])
                mi = &inst[i];
        p = put_field(p, mi && mi->mem_valid, mi ? mi->mem_used_bytes : 0);
        const struct mb_mig_activity *a = act_ok[g] ? &act[g] : NULL;
        p = put_pct(p, a && (a->valid & MB_ACT_SM_UTIL), a ? a->sm_util_pct : 0);
        p = put_pct(p, a && (a->valid & MB_ACT_SM_OCCUPANCY), a ? a->sm_occupancy_pct : 0);
        p = put_pct(p, a && (a->valid & MB_ACT_TENSOR), a ? a->tensor_util_pct : 0);
        p = put_pct(p, a && (a->valid & MB_ACT_DRAM_BW), a ? a->dram_bw_util_pct : 0);
    }
    *p++ = '\n';
    bool failed = fwrite(buf, 1, (size_t)(p - buf), m->csv) != (size_t)(p - buf);
    /* Flush at most ten times a second: at 1 kHz a write per sample would cost more than the
     * reads. */
    if (!failed && t - m->last_flush >= 100000000LL) {
        failed = fflush(m->csv) != 0;
        m->last_flush = t;
    }
    if (failed) {
        pthread_mutex_lock(&m->mu);
        m->counts.csv_errors++;
        pthread_mutex_unlock(&m->mu);
    }
}

/* ---- sampling --------------------------------------------------------------------------- */

/* Reads the device once (no lock: the device belongs to whoever samples) and folds it in. */
static void take_sample(struct mb_meter *m)
{
    struct mb_telemetry tel;
    memset(&tel, 0, sizeof(tel));
    struct mb_error e;
    int rc = mb_device_telemetry(m->dev, &tel, &e);
    bool ok = rc == MB_OK;
    /* Backends stamp every reading (a manual emulator clock may start at 0); a failed read may
     * carry no stamp, and then only its CSV row uses our clock. */
    int64_t t = ok || tel.t_ns != 0 ? tel.t_ns : mb_meter_now_ns();
    struct mb_mig_instance inst[MB_MAX_MIG_INSTANCES];
    struct mb_mig_activity act[MB_MAX_MIG_INSTANCES];
    bool act_ok[MB_MAX_MIG_INSTANCES] = {false};
    char act_why[160] = "";
    size_t n_inst = 0;
    if (m->n_gi > 0) {
        if (mb_device_mig_instances(m->dev, inst, MB_MAX_MIG_INSTANCES, &n_inst, NULL) != MB_OK)
            n_inst = 0;
        for (unsigned g = 0; g < m->n_gi; g++) {
            int arc = mb_device_mig_activity(m->dev, m->gi_ids[g], &act[g], &e);
            act_ok[g] = arc == MB_OK;
            if (!act_ok[g] && arc != MB_EGONE && arc != MB_ENOTFOUND && !act_why[0])
                snprintf(act_why, sizeof(act_why), "%.159s", e.msg);
        }
    }
    pthread_mutex_lock(&m->mu);
    if (act_why[0] && !m->activity_why[0])
        memcpy(m->activity_why, act_why, sizeof(act_why));
    if (!m->have_t0) {
        m->have_t0 = true;
        m->csv_t0 = t;
    }
    fold_sample(m, &tel, ok, t);
    if (rc == MB_EGONE)
        device_lost(m, e.msg);
    pthread_cond_broadcast(&m->changed);
    pthread_mutex_unlock(&m->mu);
    if (m->csv)
        csv_row(m, &tel, ok, t, inst, n_inst, act, act_ok);
}

static struct timespec to_ts(int64_t ns)
{
    return (struct timespec){.tv_sec = (time_t)(ns / 1000000000),
                             .tv_nsec = (long)(ns % 1000000000)};
}

/*
 * Absolute deadlines on CLOCK_MONOTONIC, so the schedule does not drift with read latency. The
 * wait is a condition variable on that clock rather than clock_nanosleep so that stop and kick
 * wake the thread at once (a 10 s interval would otherwise delay stop by up to 10 s).
 */
static void *meter_thread(void *arg)
{
    struct mb_meter *m = arg;
    int64_t next = mb_meter_now_ns() + m->interval_ns;
    for (;;) {
        pthread_mutex_lock(&m->mu);
        struct timespec dl = to_ts(next);
        while (!m->stop_req && !m->kick && mb_meter_now_ns() < next)
            pthread_cond_timedwait(&m->wake, &m->mu, &dl);
        bool stop = m->stop_req, kicked = m->kick;
        m->kick = false;
        pthread_mutex_unlock(&m->mu);
        if (stop)
            break;
        take_sample(m);
        if (kicked && mb_meter_now_ns() < next)
            continue;
        next += m->interval_ns;
        int64_t now = mb_meter_now_ns();
        if (next <= now) {
            /* A read took longer than the interval: skip the missed deadlines, do not burst. */
            int64_t behind = (now - next) / m->interval_ns + 1;
            next += behind * m->interval_ns;
            pthread_mutex_lock(&m->mu);
            m->counts.overruns += (uint64_t)behind;
            pthread_mutex_unlock(&m->mu);
        }
    }
    return NULL;
}

/* ---- life cycle --------------------------------------------------------------------------- */

int mb_meter_create(const struct mb_meter_opts *opts, struct mb_meter **out, struct mb_error *err)
{
    *out = NULL;
    struct mb_device *dev = opts->device;
    int rc;
    struct mb_meter *m = calloc(1, sizeof(*m));
    if (!m) {
        mb_device_close(dev);
        return mb_error_set(err, MB_ENOMEM, "out of memory");
    }
    pthread_mutex_init(&m->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&m->wake, &ca);
    pthread_cond_init(&m->changed, &ca);
    pthread_condattr_destroy(&ca);
    m->dev = dev;

    m->interval_ns = opts->interval_ns ? opts->interval_ns : MB_METER_INTERVAL_DEFAULT_NS;
    if (m->interval_ns < MB_METER_INTERVAL_MIN_NS || m->interval_ns > MB_METER_INTERVAL_MAX_NS) {
        rc = mb_error_set(err, MB_EINVAL, "sampling interval %.3f ms is outside 1 ms .. 10 s",
                          (double)m->interval_ns / 1e6);
        goto fail;
    }
    if (opts->min_window_ns < 0) {
        rc = mb_error_set(err, MB_EINVAL, "minimum window must not be negative");
        goto fail;
    }
    if (!m->dev) {
        rc = mb_device_open(opts->device_spec ? opts->device_spec : "auto", &m->dev, err);
        if (rc != MB_OK)
            goto fail;
    }
    rc = mb_device_info(m->dev, &m->info, err);
    if (rc != MB_OK)
        goto fail;
    rc = mb_device_sensor(m->dev, &m->sensor, err);
    if (rc != MB_OK)
        goto fail;
    m->min_window_set = opts->min_window_ns > 0;
    if (opts->min_window_ns > 0)
        m->min_window_ns = opts->min_window_ns;
    else
        m->min_window_ns = max64(2 * (int64_t)m->sensor.power_update_period_ms * 1000000,
                                 MB_METER_MIN_WINDOW_FLOOR_NS);
    /* A reading averaged over the W before it describes the moment W/2 earlier: an A100's 25 ms
     * boxcar as much as an H100's 1 s average. */
    if (m->sensor.power_kind == MB_POWER_INSTANT || m->sensor.power_kind == MB_POWER_AVERAGED)
        m->shift_ns = (int64_t)m->sensor.power_avg_window_ms * 1000000 / 2;
    if (!opts->no_mig) {
        struct mb_mig_instance inst[MB_MAX_MIG_INSTANCES];
        size_t n = 0;
        if (mb_device_mig_instances(m->dev, inst, MB_MAX_MIG_INSTANCES, &n, NULL) == MB_OK) {
            for (size_t i = 0; i < n; i++) {
                bool seen = false;
                for (unsigned g = 0; g < m->n_gi; g++)
                    seen |= m->gi_ids[g] == inst[i].gi_id;
                if (!seen && m->n_gi < MB_MAX_MIG_INSTANCES)
                    m->gi_ids[m->n_gi++] = inst[i].gi_id;
            }
        }
    }
    if (opts->csv_path) {
        m->csv = fopen(opts->csv_path, "w");
        if (!m->csv) {
            rc = mb_error_set(err, MB_EIO, "cannot create '%s': %s", opts->csv_path,
                              strerror(errno));
            goto fail;
        }
        if (csv_header(m) != MB_OK) {
            rc =
                mb_error_set(err, MB_EIO, "cannot write '%s': %s", opts->csv_path, strerror(errno));
            goto fail;
        }
    }
    *out = m;
    return MB_OK;
fail:
    mb_meter_destroy(m);
    return rc;
}

int mb_meter_start(struct mb_meter *m, struct mb_error *err)
{
    pthread_mutex_lock(&m->mu);
    bool busy = m->running || m->thread_started;
    pthread_mutex_unlock(&m->mu);
    if (busy)
        return mb_error_set(err, MB_ESTATE, "the meter was already started");
    /* The first sample is taken here so that a window opened right after start is covered. */
    take_sample(m);
    pthread_mutex_lock(&m->mu);
    m->running = true;
    m->stop_req = false;
    pthread_mutex_unlock(&m->mu);
    int e = pthread_create(&m->thread, NULL, meter_thread, m);
    if (e != 0) {
        pthread_mutex_lock(&m->mu);
        m->running = false;
        pthread_mutex_unlock(&m->mu);
        return mb_error_set(err, MB_ENORESOURCES, "cannot start the meter thread: %s", strerror(e));
    }
    m->thread_started = true;
    return MB_OK;
}

int mb_meter_sample(struct mb_meter *m, struct mb_error *err)
{
    pthread_mutex_lock(&m->mu);
    bool running = m->running;
    pthread_mutex_unlock(&m->mu);
    if (running)
        return mb_error_set(err, MB_ESTATE, "the meter thread owns the device");
    take_sample(m);
    return MB_OK;
}

int mb_meter_stop(struct mb_meter *m, struct mb_error *err)
{
    (void)err;
    pthread_mutex_lock(&m->mu);
    bool running = m->running;
    m->stop_req = true;
    pthread_cond_signal(&m->wake);
    pthread_mutex_unlock(&m->mu);
    if (running) {
        pthread_join(m->thread, NULL);
        take_sample(m);
    }
    pthread_mutex_lock(&m->mu);
    m->running = false;
    m->stopped = true;
    /* Whatever is still open ends here: truncated where its end was not reached. */
    for (int i = 0; i < MB_METER_MAX_WINDOWS; i++) {
        struct window *x = &m->win[i];
        if (x->used && !x->done && x->end_set) {
            x->done = true;
            x->truncated = m->last_t < x->t1 + m->shift_ns;
        }
    }
    pthread_cond_broadcast(&m->changed);
    pthread_mutex_unlock(&m->mu);
    if (m->csv && fflush(m->csv) != 0) {
        pthread_mutex_lock(&m->mu);
        m->counts.csv_errors++;
        pthread_mutex_unlock(&m->mu);
    }
    return MB_OK;
}

void mb_meter_destroy(struct mb_meter *m)
{
    if (!m)
        return;
    mb_meter_stop(m, NULL);
    if (m->csv)
        fclose(m->csv);
    mb_device_close(m->dev);
    pthread_cond_destroy(&m->wake);
    pthread_cond_destroy(&m->changed);
    pthread_mutex_destroy(&m->mu);
    free(m);
}

void mb_meter_device(const struct mb_meter *m, struct mb_device_info *info,
                     struct mb_sensor_info *sensor)
{
    if (info)
        *info = m->info;
    if (sensor)
        *sensor = m->sensor;
}

int64_t mb_meter_interval_ns(const struct mb_meter *m)
{
    return m->interval_ns;
}

int64_t mb_meter_min_window_ns(const struct mb_meter *m)
{
    return m->min_window_ns;
}

/* ---- windows ----------------------------------------------------------------------------- */

int mb_meter_window_begin(struct mb_meter *m, int64_t t0_ns, int *id, struct mb_error *err)
{
    pthread_mutex_lock(&m->mu);
    int slot = -1;
    for (int i = 0; i < MB_METER_MAX_WINDOWS && slot < 0; i++)
        if (!m->win[i].used)
            slot = i;
    if (slot < 0) {
        pthread_mutex_unlock(&m->mu);
        return mb_error_set(err, MB_ENORESOURCES, "more than %d energy windows open",
                            MB_METER_MAX_WINDOWS);
    }
    /* A sample already folded in cannot be split again: a start that raced with a sample moves
     * to that sample (by at most one read's latency). */
    if (t0_ns < m->last_t)
        t0_ns = m->last_t;
    m->win[slot] = (struct window){.used = true, .t0 = t0_ns, .lost = m->lost, .done = m->lost};
    *id = slot;
    pthread_mutex_unlock(&m->mu);
    return MB_OK;
}

int mb_meter_window_end_n(struct mb_meter *m, const int *ids, size_t n, int64_t t1_ns,
                          struct mb_error *err)
{
    for (size_t k = 0; k < n; k++)
        if (ids[k] < 0 || ids[k] >= MB_METER_MAX_WINDOWS)
            return mb_error_set(err, MB_EINVAL, "no energy window %d", ids[k]);
    pthread_mutex_lock(&m->mu);
    for (size_t k = 0; k < n; k++) {
        struct window *x = &m->win[ids[k]];
        if (!x->used || x->end_set) {
            pthread_mutex_unlock(&m->mu);
            return mb_error_set(err, MB_ESTATE, "energy window %d is not open", ids[k]);
        }
    }
    /* As for the start: the last folded sample bounds the end. All windows end at one instant,
     * under one lock, so the extra sample below cannot come between them. */
    if (t1_ns < m->last_t)
        t1_ns = m->last_t;
    for (size_t k = 0; k < n; k++) {
        struct window *x = &m->win[ids[k]];
        x->t1 = t1_ns < x->t0 ? x->t0 : t1_ns;
        x->end_set = true;
    }
    settle_windows(m);
    if (m->running) {
        m->kick = true;
        pthread_cond_signal(&m->wake);
    }
    pthread_mutex_unlock(&m->mu);
    return MB_OK;
}

int mb_meter_window_end(struct mb_meter *m, int id, int64_t t1_ns, struct mb_error *err)
{
    return mb_meter_window_end_n(m, &id, 1, t1_ns, err);
}

/*
 * A counter that did not advance inside the window, or whose update period is longer than half
 * the window, measured nothing there: 0 J, or a whole period's joules in a part of one. It is
 * refused (why gets the reason), as a window shorter than the power reading resolves is.
 */
static void counter_unresolved(const struct mb_meter *m, const struct window *x,
                               struct mb_energy *r, char *why, size_t cap)
{
    uint32_t period = m->sensor.energy_update_period_ms;
    if (x->e_ticks == 0 || !(x->e_sum_j > 0))
        snprintf(why, cap, "the energy counter did not advance in the %.3f s window%s",
                 r->duration_s,
                 period ? "" : " (no counter tick, or one that wraps at every reading)");
    else if (period && (double)period * 2e-3 > r->duration_s)
        snprintf(why, cap,
                 "window of %.3f s is shorter than 2 x the %u ms update period of the energy "
                 "counter",
                 r->duration_s, period);
    else
        return;
    if (period && x->e_ticks == 0)
        snprintf(why + strlen(why), cap - strlen(why), " (it updates every %u ms)", period);
    r->counter_valid = false;
    r->counter_j = 0;
    r->counter_patched_s = 0;
}

/* A missing reading's reason, with the device's own words for it when it gave them. */
static const char *sensor_why(const char *note, const char *what, char *buf, size_t cap)
{
    if (!note[0])
        return what;
    snprintf(buf, cap, "%s (%.112s)", what, note);
    return buf;
}

/* Why a figure is missing (r->reason), or what was patched; counter_why is counter_unresolved's
 * verdict (or "") and a buffer for the device's words. */
static void explain(const struct mb_meter *m, const struct window *x, struct mb_energy *r,
                    char counter_why[180])
{
    const size_t cap = 180;
    const char *why = NULL;
    if (!r->integral_valid && !r->counter_valid)
        why = m->sensor.power_kind == MB_POWER_NONE && !m->sensor.has_energy_counter
                  ? sensor_why(m->sensor.energy_note,
                               "the device has neither a power reading nor an energy counter",
                               counter_why, cap)
                  : "no valid power or energy readings cover the window";
    else if (!r->counter_valid)
        why = counter_why[0] ? counter_why
              : !m->sensor.has_energy_counter
                  ? sensor_why(m->sensor.energy_note, "the device has no energy counter",
                               counter_why, cap)
              : x->e_lost_ns > 0 ? "energy counter reset and no power to patch it"
                                 : "energy counter readings do not cover the window";
    else if (!r->integral_valid)
        why = m->sensor.power_kind == MB_POWER_NONE
                  ? sensor_why(m->sensor.power_note, "the device has no power reading", counter_why,
                               cap)
                  : "power readings do not cover the window";
    if (why)
        snprintf(r->reason, sizeof(r->reason), "%s%s", why,
                 x->truncated ? " (the meter stopped before the window's end)" : "");
    else if (x->resets)
        snprintf(r->reason, sizeof(r->reason),
                 "energy counter went backwards %u time(s) (driver reload?): %.3f s patched "
                 "from the power integral",
                 x->resets, r->counter_patched_s);
}

static void result_of(const struct mb_meter *m, const struct window *x, struct mb_energy *r)
{
    memset(r, 0, sizeof(*r));
    r->t0_ns = x->t0;
    r->t1_ns = x->t1;
    int64_t dur = x->t1 - x->t0;
    r->duration_s = (double)dur * 1e-9;
    r->samples = x->samples;
    r->read_failures = x->failures;
    r->missed_updates = x->missed;
    r->truncated = x->truncated;
    r->counter_wraps = x->wraps;
    r->counter_resets = x->resets;
    r->sensor = m->sensor;
    r->interval_ns = m->interval_ns;
    r->min_window_ns = m->min_window_ns;
    r->power_shift_ns = m->shift_ns;
    r->peak_power_valid = x->peak_valid;
    r->peak_power_w = x->peak_w;
    r->throttle_valid = x->throttle_valid;
    r->throttle_reasons = x->throttle;
    if (x->lost) {
        /* No figure from a window the GPU did not live through: not 0 J, not a part of it. */
        r->device_lost = true;
        r->truncated = true; /* it covers less than asked, as a window the meter stopped in */
        r->peak_power_valid = false;
        r->throttle_valid = false;
        snprintf(r->reason, sizeof(r->reason), "GPU lost during the window: %.160s", m->lost_why);
        return;
    }
    bool any_sensor = m->sensor.power_kind != MB_POWER_NONE || m->sensor.has_energy_counter;
    if (dur < m->min_window_ns && any_sensor) {
        r->refused = true;
        char why[96];
        if (m->min_window_set)
            snprintf(why, sizeof(why), "as configured");
        else if (2 * (int64_t)m->sensor.power_update_period_ms * 1000000 > m->min_window_ns - 1)
            snprintf(why, sizeof(why), "2 x the %u ms update period of the %s power reading",
                     m->sensor.power_update_period_ms, mb_power_kind_str(m->sensor.power_kind));
        else
            snprintf(why, sizeof(why), "the 1 s floor");
        snprintf(r->reason, sizeof(r->reason),
                 "window of %.3f s is shorter than the sensor can resolve (minimum %.3f s: %s)",
                 r->duration_s, (double)m->min_window_ns * 1e-9, why);
        return;
    }
    /* Nanosecond coverage is exact integer arithmetic: anything short means missing samples. */
    if (x->p_cov_ns >= dur && x->p_cov_ns > 0) {
        r->integral_valid = true;
        r->integral_j = x->p_area_j;
    }
    if (x->e_cov_ns + x->e_lost_ns >= dur && x->e_cov_ns > 0) {
        if (x->e_lost_ns == 0) {
            r->counter_valid = true;
            r->counter_j = x->e_sum_j;
        } else if (r->integral_valid) {
            r->counter_valid = true;
            r->counter_patched_s = (double)x->e_lost_ns * 1e-9;
            r->counter_j = x->e_sum_j + r->integral_j / r->duration_s * r->counter_patched_s;
        }
    }
    char counter_why[180] = "";
    if (r->counter_valid)
        counter_unresolved(m, x, r, counter_why, sizeof(counter_why));
    /* The counter is the reference where it exists: it sees every joule, while an averaged
     * reading smears a step across the window's edge. */
    if (r->counter_valid) {
        r->mean_power_valid = true;
        r->mean_power_w = r->counter_j / r->duration_s;
    } else if (r->integral_valid) {
        r->mean_power_valid = true;
        r->mean_power_w = r->integral_j / r->duration_s;
    }
    if (r->integral_valid && r->counter_valid && r->counter_j > 0) {
        r->gap_valid = true;
        r->gap_rel = (r->integral_j - r->counter_j) / r->counter_j;
        r->gap_flag = mb_meter_gap_exceeds(r->integral_j, r->counter_j, mb_meter_gap_edge_j(r));
    }
    explain(m, x, r, counter_why);
}

int mb_meter_window_result(struct mb_meter *m, int id, int timeout_ms, struct mb_energy *out,
                           struct mb_error *err)
{
    if (id < 0 || id >= MB_METER_MAX_WINDOWS)
        return mb_error_set(err, MB_EINVAL, "no energy window %d", id);
    int64_t deadline =
        timeout_ms < 0 ? INT64_MAX : mb_meter_now_ns() + (int64_t)timeout_ms * 1000000;
    pthread_mutex_lock(&m->mu);
    struct window *x = &m->win[id];
    if (!x->used || !x->end_set) {
        pthread_mutex_unlock(&m->mu);
        return mb_error_set(err, MB_ESTATE, "energy window %d has no end", id);
    }
    while (!x->done && m->running) {
        if (mb_meter_now_ns() >= deadline)
            break;
        struct timespec dl =
            to_ts(deadline == INT64_MAX ? mb_meter_now_ns() + 1000000000 : deadline);
        pthread_cond_timedwait(&m->changed, &m->mu, &dl);
    }
    if (!x->done && !m->stopped) {
        pthread_mutex_unlock(&m->mu);
        return mb_error_set(err, MB_ETIMEDOUT, "energy window %d is not covered yet", id);
    }
    if (!x->done) {
        x->done = true;
        x->truncated = m->last_t < x->t1 + m->shift_ns;
    }
    result_of(m, x, out);
    x->used = false;
    pthread_mutex_unlock(&m->mu);
    return MB_OK;
}

bool mb_meter_lost(struct mb_meter *m, char *why, size_t cap)
{
    pthread_mutex_lock(&m->mu);
    bool lost = m->lost;
    if (lost && why && cap)
        snprintf(why, cap, "%s", m->lost_why);
    pthread_mutex_unlock(&m->mu);
    return lost;
}

bool mb_meter_activity_note(struct mb_meter *m, char *why, size_t cap)
{
    pthread_mutex_lock(&m->mu);
    bool any = m->activity_why[0] != '\0';
    if (any && why && cap)
        snprintf(why, cap, "%s", m->activity_why);
    pthread_mutex_unlock(&m->mu);
    return any;
}

void mb_meter_get_counts(struct mb_meter *m, struct mb_meter_counts *out)
{
    pthread_mutex_lock(&m->mu);
    *out = m->counts;
    pthread_mutex_unlock(&m->mu);
}

bool mb_meter_latest(struct mb_meter *m, struct mb_telemetry *out)
{
    pthread_mutex_lock(&m->mu);
    bool have = m->have_latest;
    if (have)
        *out = m->latest;
    pthread_mutex_unlock(&m->mu);
    return have;
}
