/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The meter on scripted devices with a manual clock: both energy figures against the script's
 * exact integral (constant, steps, ramps, averaged sensor, wrap, reset, missing counter), the
 * short-window refusal, failed reads, missed updates and the CSV.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fake_device.h"
#include "migbench/meter.h"

#define MS 1000000LL
#define S 1000000000LL

static struct mb_meter *make(struct fake_dev *f, int64_t interval, int64_t min_window,
                             const char *csv)
{
    struct mb_meter_opts o = {
        .device = &f->base, .interval_ns = interval, .min_window_ns = min_window, .csv_path = csv};
    struct mb_meter *m = NULL;
    struct mb_error err;
    int rc = mb_meter_create(&o, &m, &err);
    if (rc != MB_OK)
        fail_msg("create: %s", err.msg);
    return m;
}

/* Samples every step_ns from `from` to `to` inclusive; window [w0, w1]. */
static void run_window(struct mb_meter *m, struct fake_dev *f, int64_t step, int64_t from,
                       int64_t to, int64_t w0, int64_t w1, struct mb_energy *r)
{
    struct mb_error err;
    int id = -1;
    bool begun = false, ended = false;
    for (int64_t t = from; t <= to; t += step) {
        f->now_ns = t;
        if (!begun && t >= w0) {
            assert_int_equal(mb_meter_window_begin(m, w0, &id, &err), MB_OK);
            begun = true;
        }
        if (!ended && begun && t >= w1) {
            assert_int_equal(mb_meter_window_end(m, id, w1, &err), MB_OK);
            ended = true;
        }
        assert_int_equal(mb_meter_sample(m, &err), MB_OK);
    }
    assert_true(ended);
    assert_int_equal(mb_meter_window_result(m, id, 0, r, &err), MB_OK);
}

static void test_constant(void **state)
{
    (void)state;
    struct fake_dev *f = fake_new(200);
    struct mb_meter *m = make(f, 100 * MS, 0, NULL);
    struct mb_energy r;
    run_window(m, f, 100 * MS, 0, 10 * S, 1 * S, 9 * S, &r);
    assert_false(r.refused);
    assert_true(r.counter_valid);
    assert_true(r.integral_valid);
    assert_float_equal(r.counter_j, 1600, 1e-6);
    assert_float_equal(r.integral_j, 1600, 1e-6);
    assert_true(r.gap_valid);
    assert_float_equal(r.gap_rel, 0, 1e-9);
    assert_false(r.gap_flag);
    assert_float_equal(r.mean_power_w, 200, 1e-9);
    assert_float_equal(r.peak_power_w, 200, 1e-9);
    assert_float_equal(r.duration_s, 8, 1e-12);
    assert_int_equal(r.samples, 81);
    assert_string_equal(r.reason, "");
    assert_int_equal(r.sensor.power_kind, MB_POWER_INSTANT);
    assert_int_equal(r.min_window_ns, 1 * S);
    mb_meter_destroy(m);
}

/* Steps (100 -> 300 W within one sample interval) and ramps; windows between samples. */
static void test_steps_and_ramps(void **state)
{
    (void)state;
    struct fake_dev *f = fake_new(100);
    fake_point(f, 3.0, 100);
    fake_point(f, 3.1, 300);
    fake_point(f, 5.0, 300);
    fake_point(f, 8.0, 50); /* ramp down */
    struct mb_meter *m = make(f, 100 * MS, 0, NULL);
    struct mb_energy r;
    /* Window edges between samples: interpolation at both ends. */
    int64_t w0 = 1 * S + 37 * MS, w1 = 9 * S + 512 * MS;
    run_window(m, f, 100 * MS, 0, 10 * S, w0, w1, &r);
    double exact = fake_energy_at(f, 9.512) - fake_energy_at(f, 1.037);
    assert_true(r.counter_valid && r.integral_valid);
    assert_float_equal(r.integral_j, exact, 1e-6);
    /* The counter is published every 100 ms and interpolated: exact where power is linear
     * across the edge's interval, which both edges are here. */
    assert_float_equal(r.counter_j, exact, 0.01);
    assert_false(r.gap_flag);
    assert_float_equal(r.peak_power_w, 300, 1e-9);
    mb_meter_destroy(m);
}

/* An averaged (1 s moving) reading, published every 100 ms: delay-corrected integral. */
static void test_averaged_sensor(void **state)
{
    (void)state;
    struct fake_dev *f = fake_new(100);
    f->kind = MB_POWER_AVERAGED;
    f->avg_ms = 1000;
    fake_point(f, 3.0, 100);
    fake_point(f, 5.0, 400);
    fake_point(f, 7.0, 400);
    fake_point(f, 7.5, 150);
    struct mb_meter *m = make(f, 100 * MS, 0, NULL);
    struct mb_energy r;
    /* The window needs samples until its end plus half the averaging window. */
    struct mb_error err;
    int id;
    for (int64_t t = 0; t <= 12 * S; t += 100 * MS) {
        f->now_ns = t;
        if (t == 1 * S)
            assert_int_equal(mb_meter_window_begin(m, t, &id, &err), MB_OK);
        if (t == 10 * S)
            assert_int_equal(mb_meter_window_end(m, id, t, &err), MB_OK);
        if (t == 10 * S + 400 * MS) /* not yet covered: 10 s + 0.5 s shift */
            assert_int_equal(mb_meter_window_result(m, id, 0, &r, &err), MB_ETIMEDOUT);
        mb_meter_sample(m, &err);
    }
    assert_int_equal(mb_meter_window_result(m, id, 0, &r, &err), MB_OK);
    double exact = fake_energy_at(f, 10) - fake_energy_at(f, 1);
    assert_int_equal(r.power_shift_ns, 500 * MS);
    assert_true(r.integral_valid && r.counter_valid);
    assert_float_equal(r.counter_j, exact, 1e-6);
    assert_true(fabs(r.integral_j - exact) / exact < 0.005);
    assert_false(r.gap_flag);
    mb_meter_destroy(m);
}

static void test_missing_counter(void **state)
{
    (void)state;
    struct fake_dev *f = fake_new(250);
    f->counter = false;
    struct mb_meter *m = make(f, 100 * MS, 0, NULL);
    struct mb_energy r;
    run_window(m, f, 100 * MS, 0, 5 * S, 1 * S, 4 * S, &r);
    assert_false(r.counter_valid);
    assert_true(r.integral_valid);
    assert_float_equal(r.integral_j, 750, 1e-6);
    assert_false(r.gap_valid);
    assert_non_null(strstr(r.reason, "no energy counter"));
    mb_meter_destroy(m);

    /* Neither power nor counter: no figure at all, never 0 J. */
    f = fake_new(250);
    f->counter = false;
    f->kind = MB_POWER_NONE;
    m = make(f, 100 * MS, 0, NULL);
    run_window(m, f, 100 * MS, 0, 5 * S, 1 * S, 4 * S, &r);
    assert_false(r.counter_valid || r.integral_valid || r.mean_power_valid || r.peak_power_valid);
    assert_non_null(strstr(r.reason, "neither"));
    mb_meter_destroy(m);

    /* Counter only: mean power comes from the counter. */
    f = fake_new(250);
    f->kind = MB_POWER_NONE;
    m = make(f, 100 * MS, 0, NULL);
    run_window(m, f, 100 * MS, 0, 5 * S, 1 * S, 4 * S, &r);
    assert_true(r.counter_valid);
    assert_false(r.integral_valid);
    assert_float_equal(r.mean_power_w, 250, 1e-6);
    assert_non_null(strstr(r.reason, "no power reading"));
    mb_meter_destroy(m);
}

static void test_counter_wrap_and_reset(void **state)
{
    (void)state;
    struct fake_dev *f = fake_new(200);
    f->wrap_mj = 1000000; /* 1000 J */
    f->offset_mj = 900000;
    struct mb_meter *m = make(f, 100 * MS, 0, NULL);
    struct mb_energy r;
    run_window(m, f, 100 * MS, 0, 10 * S, 1 * S, 9 * S, &r);
    assert_true(r.counter_valid);
    assert_float_equal(r.counter_j, 1600, 1e-6);
    /* Wraps at 0.5 s (before the window) and 5.5 s (inside it). */
    assert_int_equal(r.counter_wraps, 1);
    assert_int_equal(r.counter_resets, 0);
    struct mb_meter_counts wc;
    mb_meter_get_counts(m, &wc);
    assert_int_equal(wc.counter_wraps, 2);
    mb_meter_destroy(m);

    /* Driver reload at 5.05 s: the counter restarts; the window is split and the lost stretch
     * patched from the power integral, and flagged. */
    f = fake_new(200);
    f->offset_mj = 123456789;
    f->reset_at_s = 5.05;
    m = make(f, 100 * MS, 0, NULL);
    run_window(m, f, 100 * MS, 0, 10 * S, 1 * S, 9 * S, &r);
    assert_true(r.counter_valid);
    assert_int_equal(r.counter_resets, 1);
    assert_float_equal(r.counter_patched_s, 0.1, 1e-9);
    assert_float_equal(r.counter_j, 1600, 1e-6);
    assert_non_null(strstr(r.reason, "backwards"));
    struct mb_meter_counts c;
    mb_meter_get_counts(m, &c);
    assert_int_equal(c.counter_resets, 1);
    mb_meter_destroy(m);
}

static void test_short_window_refused(void **state)
{
    (void)state;
    struct fake_dev *f = fake_new(200);
    f->update_ms = 800; /* 2 x 800 ms = 1.6 s beats the 1 s floor */
    struct mb_meter *m = make(f, 100 * MS, 0, NULL);
    assert_int_equal(mb_meter_min_window_ns(m), 1600 * MS);
    struct mb_energy r;
    run_window(m, f, 100 * MS, 0, 3 * S, 1 * S, 2500 * MS, &r);
    assert_true(r.refused);
    assert_false(r.counter_valid || r.integral_valid || r.mean_power_valid);
    assert_non_null(strstr(r.reason, "shorter than the sensor can resolve"));
    assert_non_null(strstr(r.reason, "1.600 s: 2 x the 800 ms update period"));
    mb_meter_destroy(m);

    /* The default floor, and a configured minimum. */
    f = fake_new(200);
    m = make(f, 100 * MS, 0, NULL);
    run_window(m, f, 100 * MS, 0, 2 * S, 500 * MS, 1400 * MS, &r);
    assert_true(r.refused);
    mb_meter_destroy(m);
    f = fake_new(200);
    m = make(f, 10 * MS, 200 * MS, NULL);
    run_window(m, f, 10 * MS, 0, 2 * S, 500 * MS, 800 * MS, &r);
    assert_false(r.refused);
    assert_float_equal(r.integral_j, 60, 1e-6);
    assert_float_equal(r.counter_j, 60, 1e-6);
    mb_meter_destroy(m);
}

static void test_failures_and_missed_updates(void **state)
{
    (void)state;
    /* Every 7th read fails: the figures interpolate across the gaps and count the failures. */
    struct fake_dev *f = fake_new(300);
    f->fail_every = 7;
    struct mb_meter *m = make(f, 100 * MS, 0, NULL);
    struct mb_energy r;
    run_window(m, f, 100 * MS, 0, 10 * S, 1 * S, 9 * S, &r);
    assert_float_equal(r.integral_j, 2400, 1e-6);
    assert_float_equal(r.counter_j, 2400, 1e-6);
    assert_true(r.read_failures >= 11 && r.read_failures <= 12);
    mb_meter_destroy(m);

    /* Sampling every 50 ms a sensor that updates every 200 ms on a ramp: 3 of 4 unchanged. */
    f = fake_new(100);
    fake_point(f, 20, 500);
    f->update_ms = 200;
    f->energy_update_ms = 200;
    m = make(f, 50 * MS, 0, NULL);
    run_window(m, f, 50 * MS, 0, 10 * S, 1 * S, 9 * S, &r);
    assert_true(r.missed_updates >= 118 && r.missed_updates <= 121);
    struct mb_meter_counts c;
    mb_meter_get_counts(m, &c);
    assert_int_equal(c.samples, 201);
    assert_int_equal(c.missed_updates, 150);
    mb_meter_destroy(m);
}

static void test_csv_and_mig_columns(void **state)
{
    (void)state;
    char path[] = "/tmp/mb-test-meter-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    struct fake_dev *f = fake_new(123.456);
    f->counter = false;
    f->n_gi = 2;
    f->fail_every = 3;
    struct mb_meter *m = make(f, 100 * MS, 0, path);
    struct mb_error err;
    for (int i = 0; i < 4; i++) {
        f->now_ns = 5 * S + i * 100 * MS;
        assert_int_equal(mb_meter_sample(m, &err), MB_OK);
    }
    mb_meter_destroy(m);
    FILE *fp = fopen(path, "r");
    assert_non_null(fp);
    char line[1024];
    assert_non_null(fgets(line, sizeof(line), fp));
    assert_non_null(strstr(line, "t_ns,t_s,read_ok,power_mw,"));
    assert_non_null(strstr(line, ",gi1_mem_used_bytes,gi1_sm_util_pct,"));
    assert_non_null(strstr(line, ",gi2_dram_bw_util_pct\n"));
    assert_non_null(fgets(line, sizeof(line), fp));
    /* Empty fields for what the device does not give; never 0. */
    assert_string_equal(line, "5000000000,0.000000000,1,123456,,,,,,,,,,40,0x0000000000000004,,"
                              "1000,42.3,,,,,,,,\n");
    assert_non_null(fgets(line, sizeof(line), fp));
    assert_true(strncmp(line, "5100000000,0.100000000,1,123456,", 32) == 0);
    assert_non_null(fgets(line, sizeof(line), fp));
    /* The failed read: a row with read_ok 0 and no values. */
    assert_true(strncmp(line, "5200000000,0.200000000,0,,,,,,,,,,,,,,", 38) == 0);
    assert_non_null(fgets(line, sizeof(line), fp));
    assert_null(fgets(line, sizeof(line), fp));
    fclose(fp);
    unlink(path);
}

static void test_bad_options_and_slots(void **state)
{
    (void)state;
    struct mb_error err;
    struct mb_meter *m = NULL;
    struct mb_meter_opts o = {.device = &fake_new(1)->base, .interval_ns = 500000};
    assert_int_equal(mb_meter_create(&o, &m, &err), MB_EINVAL);
    assert_null(m);
    assert_non_null(strstr(err.msg, "1 ms .. 10 s"));
    o = (struct mb_meter_opts){.device = &fake_new(1)->base, .interval_ns = 11 * S};
    assert_int_equal(mb_meter_create(&o, &m, &err), MB_EINVAL);
    o = (struct mb_meter_opts){.device = &fake_new(1)->base, .csv_path = "/nonexistent/x.csv"};
    assert_int_equal(mb_meter_create(&o, &m, &err), MB_EIO);
    assert_non_null(strstr(err.msg, "/nonexistent/x.csv"));

    struct fake_dev *f = fake_new(10);
    m = make(f, 0, 0, NULL);
    assert_int_equal(mb_meter_interval_ns(m), 100 * MS);
    int ids[MB_METER_MAX_WINDOWS], extra;
    for (int i = 0; i < MB_METER_MAX_WINDOWS; i++)
        assert_int_equal(mb_meter_window_begin(m, 0, &ids[i], &err), MB_OK);
    assert_int_equal(mb_meter_window_begin(m, 0, &extra, &err), MB_ENORESOURCES);
    struct mb_energy r;
    assert_int_equal(mb_meter_window_result(m, ids[0], 0, &r, &err), MB_ESTATE);
    assert_int_equal(mb_meter_window_end(m, 99, 0, &err), MB_EINVAL);
    assert_int_equal(mb_meter_window_end(m, ids[0], 0, &err), MB_OK);
    assert_int_equal(mb_meter_window_end(m, ids[0], 0, &err), MB_ESTATE);
    /* Stopped with no sample after the end: the result says so instead of inventing one. */
    mb_meter_stop(m, &err);
    assert_int_equal(mb_meter_window_result(m, ids[0], 0, &r, &err), MB_OK);
    assert_true(r.refused);
    assert_int_equal(mb_meter_window_begin(m, 0, &extra, &err), MB_OK);
    mb_meter_destroy(m);
}

/* Edges older than the last sample taken move to that sample; the result shows what was used. */
static void test_clamped_edges(void **state)
{
    (void)state;
    struct fake_dev *f = fake_new(100);
    struct mb_meter *m = make(f, 100 * MS, 0, NULL);
    struct mb_error err;
    int id;
    for (int64_t t = 0; t <= 2 * S; t += 100 * MS) {
        f->now_ns = t;
        mb_meter_sample(m, &err);
    }
    assert_int_equal(mb_meter_window_begin(m, 1 * S, &id, &err), MB_OK);
    for (int64_t t = 2100 * MS; t <= 5 * S; t += 100 * MS) {
        f->now_ns = t;
        mb_meter_sample(m, &err);
    }
    assert_int_equal(mb_meter_window_end(m, id, 4 * S, &err), MB_OK);
    struct mb_energy r;
    assert_int_equal(mb_meter_window_result(m, id, 0, &r, &err), MB_OK);
    assert_int_equal(r.t0_ns, 2 * S);
    assert_int_equal(r.t1_ns, 5 * S);
    assert_float_equal(r.counter_j, 300, 1e-6);
    assert_float_equal(r.integral_j, 300, 1e-6);

    /* Several windows ended at one instant share it. */
    int two[2];
    assert_int_equal(mb_meter_window_begin(m, 5 * S, &two[0], &err), MB_OK);
    assert_int_equal(mb_meter_window_begin(m, 5 * S, &two[1], &err), MB_OK);
    for (int64_t t = 5100 * MS; t <= 7 * S; t += 100 * MS) {
        f->now_ns = t;
        mb_meter_sample(m, &err);
    }
    assert_int_equal(mb_meter_window_end_n(m, two, 2, 6 * S, &err), MB_OK);
    assert_int_equal(mb_meter_window_end_n(m, two, 2, 6 * S, &err), MB_ESTATE);
    struct mb_energy r2;
    assert_int_equal(mb_meter_window_result(m, two[0], 0, &r, &err), MB_OK);
    assert_int_equal(mb_meter_window_result(m, two[1], 0, &r2, &err), MB_OK);
    assert_int_equal(r.t1_ns, r2.t1_ns);
    assert_int_equal(r.t1_ns, 7 * S);
    mb_meter_destroy(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_constant),
        cmocka_unit_test(test_steps_and_ramps),
        cmocka_unit_test(test_averaged_sensor),
        cmocka_unit_test(test_missing_counter),
        cmocka_unit_test(test_counter_wrap_and_reset),
        cmocka_unit_test(test_short_window_refused),
        cmocka_unit_test(test_failures_and_missed_updates),
        cmocka_unit_test(test_csv_and_mig_columns),
        cmocka_unit_test(test_bad_options_and_slots),
        cmocka_unit_test(test_clamped_edges),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
