/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The meter's own thread on a real clock (MB_TEST_THREADS: CI runs this under TSan). No timed
 * assertions: figures are checked against each other and against the device's exact integral
 * over the window actually measured, whatever the machine's load made the timing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fake_device.h"
#include "migbench/meter.h"

#define MS 1000000LL

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

struct reader {
    struct mb_meter *m;
    volatile int stop; /* read and written under the race detector's eye: use the mutex */
    pthread_mutex_t mu;
    uint64_t seen;
};

static void *read_counts(void *arg)
{
    struct reader *r = arg;
    for (;;) {
        pthread_mutex_lock(&r->mu);
        int stop = r->stop;
        pthread_mutex_unlock(&r->mu);
        if (stop)
            break;
        struct mb_meter_counts c;
        struct mb_telemetry t;
        mb_meter_get_counts(r->m, &c);
        if (mb_meter_latest(r->m, &t))
            r->seen = c.samples;
        sleep_ms(2);
    }
    return NULL;
}

static void test_threaded_windows(void **state)
{
    (void)state;
    struct fake_dev *f = fake_new(150);
    f->real_clock = true;
    f->update_ms = 0; /* fresh value on every read */
    f->energy_update_ms = 0;
    fake_point(f, 0.2, 150);
    fake_point(f, 0.4, 450); /* a ramp inside the window */
    char csv[] = "/tmp/mb-test-meter-thread-XXXXXX";
    int fd = mkstemp(csv);
    assert_true(fd >= 0);
    close(fd);
    struct mb_meter_opts o = {
        .device = &f->base, .interval_ns = 5 * MS, .min_window_ns = 100 * MS, .csv_path = csv};
    struct mb_meter *m;
    struct mb_error err;
    assert_int_equal(mb_meter_create(&o, &m, &err), MB_OK);
    assert_int_equal(mb_meter_start(m, &err), MB_OK);
    assert_int_equal(mb_meter_start(m, &err), MB_ESTATE);
    assert_int_equal(mb_meter_sample(m, &err), MB_ESTATE);

    struct reader rd = {.m = m};
    pthread_mutex_init(&rd.mu, NULL);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, read_counts, &rd), 0);

    int a, b;
    assert_int_equal(mb_meter_window_begin(m, mb_meter_now_ns(), &a, &err), MB_OK);
    sleep_ms(150);
    assert_int_equal(mb_meter_window_begin(m, mb_meter_now_ns(), &b, &err), MB_OK);
    sleep_ms(450);
    assert_int_equal(mb_meter_window_end(m, a, mb_meter_now_ns(), &err), MB_OK);
    struct mb_energy ra, rb;
    assert_int_equal(mb_meter_window_result(m, a, -1, &ra, &err), MB_OK);
    /* The device's exact energy over the window the meter says it measured. */
    double t0 = (double)(ra.t0_ns - f->origin_ns) * 1e-9,
           t1 = (double)(ra.t1_ns - f->origin_ns) * 1e-9;
    double exact = fake_energy_at(f, t1) - fake_energy_at(f, t0);
    assert_false(ra.refused);
    assert_false(ra.truncated);
    assert_true(ra.counter_valid && ra.integral_valid);
    assert_true(fabs(ra.counter_j - exact) < 0.01 + exact * 1e-6);
    /* Trapezoid error only at the ramp's two corners: below 1% at 5 ms sampling. */
    assert_true(fabs(ra.integral_j - exact) / exact < 0.01);
    assert_true(ra.samples >= 2);

    /* Stopping with window b still open without an end: nothing is invented for it. */
    assert_int_equal(mb_meter_window_end(m, b, mb_meter_now_ns() + 60000 * MS, &err), MB_OK);
    assert_int_equal(mb_meter_window_result(m, b, 0, &rb, &err), MB_ETIMEDOUT);
    pthread_mutex_lock(&rd.mu);
    rd.stop = 1;
    pthread_mutex_unlock(&rd.mu);
    pthread_join(th, NULL);
    pthread_mutex_destroy(&rd.mu);
    assert_int_equal(mb_meter_stop(m, &err), MB_OK);
    assert_int_equal(mb_meter_stop(m, &err), MB_OK);
    assert_int_equal(mb_meter_window_result(m, b, -1, &rb, &err), MB_OK);
    assert_true(rb.truncated);
    assert_false(rb.integral_valid);
    assert_false(rb.counter_valid);

    struct mb_meter_counts c;
    mb_meter_get_counts(m, &c);
    assert_true(c.samples >= 3);
    assert_int_equal(c.read_failures, 0);
    mb_meter_destroy(m);

    /* Every sample reached the CSV: header + one row per sample. */
    FILE *fp = fopen(csv, "r");
    assert_non_null(fp);
    char line[512];
    uint64_t rows = 0;
    while (fgets(line, sizeof(line), fp))
        rows++;
    fclose(fp);
    unlink(csv);
    assert_int_equal(rows, c.samples + 1);
}

/* Start and stop at 1 kHz and at the 10 s maximum: stop returns without waiting a period. */
static void test_fast_and_slow_intervals(void **state)
{
    (void)state;
    const int64_t intervals[] = {1 * MS, 10000 * MS};
    for (int i = 0; i < 2; i++) {
        struct fake_dev *f = fake_new(80);
        f->real_clock = true;
        struct mb_meter_opts o = {.device = &f->base, .interval_ns = intervals[i]};
        struct mb_meter *m;
        struct mb_error err;
        assert_int_equal(mb_meter_create(&o, &m, &err), MB_OK);
        assert_int_equal(mb_meter_start(m, &err), MB_OK);
        int id;
        assert_int_equal(mb_meter_window_begin(m, mb_meter_now_ns(), &id, &err), MB_OK);
        sleep_ms(30);
        /* window_end kicks an immediate sample, so the result does not wait 10 s. */
        assert_int_equal(mb_meter_window_end(m, id, mb_meter_now_ns(), &err), MB_OK);
        struct mb_energy r;
        assert_int_equal(mb_meter_window_result(m, id, -1, &r, &err), MB_OK);
        assert_true(r.refused); /* 30 ms is below the 1 s floor */
        assert_true(i == 1 || r.samples >= 1);
        mb_meter_destroy(m); /* stops the thread */
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_threaded_windows),
        cmocka_unit_test(test_fast_and_slow_intervals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
