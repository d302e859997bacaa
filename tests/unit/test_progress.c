/* SPDX-License-Identifier: Apache-2.0 */
/* Progress parsing: protocol and regex lines, garbage, partial and over-long input, throughput. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "migbench/progress.h"

#define S 1000000000LL

static struct mb_progress *make(const char *re, double sps, size_t max_line, size_t max_pts)
{
    struct mb_progress_opts o = {
        .regex = re, .samples_per_step = sps, .max_line_bytes = max_line, .max_points = max_pts};
    struct mb_progress *p = NULL;
    struct mb_error err;
    assert_int_equal(mb_progress_create(&o, &p, &err), MB_OK);
    return p;
}

static void feed_str(struct mb_progress *p, const char *s, int64_t t)
{
    mb_progress_feed(p, s, strlen(s), t);
}

static void test_protocol_lines(void **state)
{
    (void)state;
    struct mb_progress *p = make(NULL, 0, 0, 0);
    feed_str(p, "step=1 samples=64 loss=3.9\nstep=2 samples=128\r\n", 10);
    feed_str(p, "  step=3\tsamples=192   \n", 20);
    struct mb_progress_counts c;
    mb_progress_get_counts(p, &c);
    assert_int_equal(c.lines, 3);
    assert_int_equal(c.records, 3);
    assert_int_equal(c.garbage, 0);
    assert_true(mb_progress_unit_is_samples(p));
    struct mb_progress_point pt;
    assert_true(mb_progress_first(p, &pt));
    assert_int_equal(pt.step, 1);
    assert_int_equal(pt.t_ns, 10);
    assert_true(mb_progress_last(p, &pt));
    assert_int_equal(pt.step, 3);
    assert_float_equal(pt.work, 192, 0);
    assert_int_equal(pt.t_ns, 20);
    mb_progress_destroy(p);

    /* Steps only: the unit is steps; samples_per_step turns steps into samples. */
    p = make(NULL, 0, 0, 0);
    feed_str(p, "step=5\nstep=7\n", 1);
    assert_false(mb_progress_unit_is_samples(p));
    assert_true(mb_progress_last(p, &pt));
    assert_float_equal(pt.work, 7, 0);
    mb_progress_destroy(p);
    p = make(NULL, 32, 0, 0);
    feed_str(p, "step=5\n", 1);
    assert_true(mb_progress_last(p, &pt));
    assert_float_equal(pt.work, 160, 0);
    mb_progress_destroy(p);
}

/* The same bytes as tests/fixtures/fx_garbage.c writes. */
static void test_garbage_partial_overlong(void **state)
{
    (void)state;
    struct mb_progress *p = make(NULL, 0, 256, 0);
    static const char junk[] = {'s', 't', 'e', 'p', '=', '\0', '\x01', '\xff', '\n'};
    feed_str(p, "step=1 samples=10\n", 1);
    mb_progress_feed(p, junk, sizeof(junk), 2);
    feed_str(p, "hello world\n", 3);
    char big[10000];
    memset(big, 'a', sizeof(big));
    memcpy(big, "step=99 samples=", 16);
    /* Over-long line arriving in pieces. */
    for (size_t i = 0; i < sizeof(big); i += 1000)
        mb_progress_feed(p, big + i, 1000, 4);
    feed_str(p, "\n", 4);
    feed_str(p, "step=2 samples=20 loss=1.5\n", 5);
    feed_str(p, "step=1 samples=10\n", 6);
    feed_str(p, "step=3 samp", 7);
    feed_str(p, "les=30\n", 8);
    feed_str(p, "step=x samples=1\nstep=4 samples=-3\nstep=4 samples=nan\n=\n\n", 9);
    feed_str(p, "step=99999999999999999999999\nstep=4 samples=1e30\n", 9);
    feed_str(p, "step=4 samples=4", 10);
    mb_progress_end(p);
    struct mb_progress_counts c;
    mb_progress_get_counts(p, &c);
    assert_int_equal(c.records, 3);
    assert_int_equal(c.overlong, 1);
    assert_int_equal(c.rejected, 1);
    assert_int_equal(c.partial, 1);
    /* junk, hello, step=x, -3, nan, "=", empty line, huge step, 1e30 */
    assert_int_equal(c.garbage, 9);
    assert_int_equal(c.lines, 14);
    struct mb_progress_point pt;
    assert_true(mb_progress_last(p, &pt));
    assert_int_equal(pt.step, 3);
    assert_int_equal(pt.t_ns, 8); /* the line is stamped when its newline arrives */
    mb_progress_destroy(p);
}

static void test_random_bytes_do_not_crash(void **state)
{
    (void)state;
    struct mb_progress *p = make(NULL, 0, 64, 8);
    unsigned x = 12345;
    char buf[4096];
    for (int round = 0; round < 200; round++) {
        for (size_t i = 0; i < sizeof(buf); i++) {
            x = x * 1103515245u + 12345u;
            buf[i] = (char)(x >> 16);
        }
        mb_progress_feed(p, buf, (size_t)(x % sizeof(buf)), round);
    }
    mb_progress_end(p);
    struct mb_progress_counts c;
    mb_progress_get_counts(p, &c);
    assert_true(c.lines > 0);
    mb_progress_destroy(p);
}

static void test_regex_mode(void **state)
{
    (void)state;
    struct mb_progress_opts bad = {.regex = "iter ([0-9]+"};
    struct mb_progress *p = NULL;
    struct mb_error err;
    assert_int_equal(mb_progress_create(&bad, &p, &err), MB_EINVAL);
    assert_non_null(strstr(err.msg, "iter ([0-9]+"));
    struct mb_progress_opts nogroup = {.regex = "iter [0-9]+"};
    assert_int_equal(mb_progress_create(&nogroup, &p, &err), MB_EINVAL);
    assert_non_null(strstr(err.msg, "no group"));

    p = make("^iter ([0-9]+)", 16, 0, 0);
    feed_str(p, "starting up\niter 1 loss=2\nepoch done\niter 2 loss=1\n", 5);
    feed_str(p, "some iter 9 inside\niter x\n\n", 6);
    struct mb_progress_counts c;
    mb_progress_get_counts(p, &c);
    assert_int_equal(c.records, 2);
    assert_int_equal(c.ignored, 5);
    assert_int_equal(c.garbage, 0);
    struct mb_progress_point pt;
    assert_true(mb_progress_last(p, &pt));
    assert_float_equal(pt.work, 32, 0);
    mb_progress_destroy(p);
}

static void test_throughput_and_bounded_memory(void **state)
{
    (void)state;
    /* 100 steps/s of 10 samples for 1000 s, with a slow first 10 s; only 64 checkpoints. */
    struct mb_progress *p = make(NULL, 0, 0, 64);
    int64_t origin = 5 * S;
    char line[64];
    uint64_t step = 0;
    for (int64_t t = origin; t <= origin + 1000 * S; t += S / 100) {
        if (t < origin + 10 * S && (t / (S / 100)) % 4 != 0)
            continue; /* warm-up: a quarter of the rate */
        step++;
        int k = snprintf(line, sizeof(line), "step=%llu samples=%llu\n", (unsigned long long)step,
                         (unsigned long long)(step * 10));
        mb_progress_feed(p, line, (size_t)k, t);
    }
    struct mb_throughput tp;
    mb_progress_throughput(p, origin, 20 * S, 0, 10, &tp);
    assert_true(tp.valid);
    assert_true(tp.unit_is_samples);
    assert_float_equal(tp.rate.mean, 1000, 1e-6);
    assert_true(tp.rate.ci_valid);
    assert_true(tp.rate.ci95_half < 1e-6);
    assert_int_equal(tp.batches, 10);
    assert_true(tp.t_start_ns >= origin + 20 * S);
    assert_true(tp.t_start_ns < origin + 60 * S); /* checkpoint spacing after decimation */
    assert_int_equal(tp.t_end_ns, origin + 1000 * S);

    /* Without a warm-up the slow start lowers the rate. */
    mb_progress_throughput(p, origin, 0, 0, 10, &tp);
    assert_true(tp.valid);
    assert_true(tp.rate.mean < 1000);

    /* Warm-up in steps. */
    mb_progress_throughput(p, origin, 0, 2000, 5, &tp);
    assert_true(tp.valid);
    assert_float_equal(tp.rate.mean, 1000, 1e-6);

    /* A warm-up longer than the run: not valid, with a reason. */
    mb_progress_throughput(p, origin, 2000 * S, 0, 10, &tp);
    assert_false(tp.valid);
    assert_non_null(strstr(tp.reason, "warm-up"));
    mb_progress_destroy(p);

    p = make(NULL, 0, 0, 0);
    mb_progress_throughput(p, 0, 0, 0, 10, &tp);
    assert_false(tp.valid);
    assert_non_null(strstr(tp.reason, "no progress"));
    mb_progress_destroy(p);
}

/*
 * A job at 100 steps/s whose output reaches us in bursts of `per_read` records (as from an 8 KiB
 * stdio buffer): each burst's records are fed in one call, timed at the burst's last record.
 * own_clock adds the job's clock ("t=" or a regex's second group) to every line.
 */
static struct mb_progress *bursty_job(const char *re, int steps, int per_read, bool own_clock)
{
    struct mb_progress *p = make(re, re ? 10 : 0, 0, 0);
    char buf[65536];
    size_t len = 0;
    for (int s = 1; s <= steps; s++) {
        double job_t = 3.0 + s * 0.01; /* the job's clock, offset from ours */
        if (re && own_clock)
            len += (size_t)snprintf(buf + len, sizeof(buf) - len, "iter %d t=%.3f\n", s, job_t);
        else if (re)
            len += (size_t)snprintf(buf + len, sizeof(buf) - len, "iter %d\n", s);
        else if (own_clock)
            len += (size_t)snprintf(buf + len, sizeof(buf) - len, "step=%d samples=%d t=%.3f\n", s,
                                    s * 10, job_t);
        else
            len +=
                (size_t)snprintf(buf + len, sizeof(buf) - len, "step=%d samples=%d\n", s, s * 10);
        if (s % per_read == 0 || s == steps) {
            mb_progress_feed(p, buf, len, (int64_t)s * (S / 100));
            len = 0;
        }
    }
    return p;
}

/*
 * A reader scheduled late at the start: the job's first 10 steps (10 ms apart) arrive in one read
 * at 100 ms, then one step per read. Timed from the first record, the window would count 9 steps
 * in no time (100 steps/s measured as 109); it opens on the first read's last record instead.
 */
static void test_late_first_read(void **state)
{
    (void)state;
    struct mb_progress *p = make(NULL, 0, 0, 0);
    char first[256] = "", line[64];
    for (int s = 1; s <= 10; s++) {
        snprintf(line, sizeof(line), "step=%d\n", s);
        strcat(first, line);
    }
    feed_str(p, first, 10 * (S / 100));
    for (int s = 11; s <= 100; s++) {
        snprintf(line, sizeof(line), "step=%d\n", s);
        feed_str(p, line, (int64_t)s * (S / 100));
    }
    struct mb_throughput tp;
    mb_progress_throughput(p, 0, 0, 0, 10, &tp);
    assert_true(tp.valid);
    assert_false(tp.job_clock);
    assert_float_equal(tp.rate.mean, 100, 1e-6);
    assert_int_equal(tp.records, 100); /* the counts still start at the first record */
    mb_progress_destroy(p);
}

static void test_bursts_refused_or_job_clock(void **state)
{
    (void)state;
    struct mb_throughput tp;
    /* Line by line: arrival times are right. */
    struct mb_progress *p = bursty_job(NULL, 500, 1, false);
    mb_progress_throughput(p, 0, 0, 0, 10, &tp);
    assert_true(tp.valid);
    assert_false(tp.job_clock);
    assert_int_equal(tp.records, 500);
    assert_int_equal(tp.reads, 500);
    assert_float_equal(tp.rate.mean, 1000, 1e-6);
    mb_progress_destroy(p);

    /* 500 records in bursts of 160 (Python's 8 KiB buffer): refused, with the fix. */
    p = bursty_job(NULL, 500, 160, false);
    mb_progress_throughput(p, 0, 0, 0, 10, &tp);
    assert_false(tp.valid);
    assert_non_null(strstr(tp.reason, "progress arrived in bursts (output buffered?)"));
    assert_non_null(strstr(tp.reason, "PYTHONUNBUFFERED=1"));
    assert_non_null(strstr(tp.reason, "--pty"));
    mb_progress_destroy(p);

    /* The same with the job's own clock: exact. */
    p = bursty_job(NULL, 500, 160, true);
    mb_progress_throughput(p, 0, 0, 0, 10, &tp);
    assert_true(tp.valid);
    assert_true(tp.job_clock);
    assert_float_equal(tp.rate.mean, 1000, 1e-6);
    mb_progress_destroy(p);
    p = bursty_job("^iter ([0-9]+)( t=([0-9.]+))?", 500, 160, true);
    mb_progress_throughput(p, 0, 0, 0, 10, &tp);
    assert_false(tp.valid); /* the second group is " t=..." with its prefix: not a number */
    mb_progress_destroy(p);
    p = bursty_job("^iter ([0-9]+) t=([0-9.]+)", 500, 160, true);
    mb_progress_throughput(p, 0, 0, 0, 10, &tp);
    assert_true(tp.valid);
    assert_true(tp.job_clock);
    assert_float_equal(tp.rate.mean, 1000, 1e-6);
    mb_progress_destroy(p);

    /* A fast job read a few records at a time over many reads: accepted. */
    p = bursty_job(NULL, 5000, 4, false);
    mb_progress_throughput(p, 0, 0, 0, 10, &tp);
    assert_true(tp.valid);
    assert_int_equal(tp.reads, 1250);
    mb_progress_destroy(p);

    /* A short buffered run: everything in one read at the end; the reason says so. */
    p = bursty_job(NULL, 50, 1000, false);
    mb_progress_throughput(p, 0, 0, 0, 10, &tp);
    assert_false(tp.valid);
    assert_non_null(strstr(tp.reason, "50 arrived"));
    assert_non_null(strstr(tp.reason, "in 1 read,"));
    assert_non_null(strstr(tp.reason, "0.5 s after the start"));
    assert_non_null(strstr(tp.reason, "progress arrived in bursts (output buffered?)"));
    mb_progress_destroy(p);

    /* The job's clock going backwards is rejected like a step going backwards. */
    p = make(NULL, 0, 0, 0);
    feed_str(p, "step=1 t=5\nstep=2 t=4\nstep=3 t=6\n", 1);
    struct mb_progress_counts c;
    mb_progress_get_counts(p, &c);
    assert_int_equal(c.records, 2);
    assert_int_equal(c.rejected, 1);
    assert_int_equal(c.reads, 1);
    assert_null(mb_progress_unit_name(p));
    mb_progress_destroy(p);

    /* The unit the job names: the first well-formed one. */
    p = make(NULL, 0, 0, 0);
    feed_str(p, "step=1 samples=9 unit=tok$ns\nstep=2 samples=18 unit=tokens\n", 1);
    feed_str(p, "step=3 samples=27 unit=images\n", 2);
    assert_string_equal(mb_progress_unit_name(p), "tokens");
    mb_progress_destroy(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_protocol_lines),
        cmocka_unit_test(test_garbage_partial_overlong),
        cmocka_unit_test(test_random_bytes_do_not_crash),
        cmocka_unit_test(test_regex_mode),
        cmocka_unit_test(test_throughput_and_bounded_memory),
        cmocka_unit_test(test_bursts_refused_or_job_clock),
        cmocka_unit_test(test_late_first_read),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
