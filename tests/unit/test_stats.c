/* SPDX-License-Identifier: Apache-2.0 */
/* Statistics helpers checked against hand-computed values. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>

#include "migbench/stats.h"

static void test_mean_stddev_ci(void **state)
{
    (void)state;
    /* 2 4 4 4 5 5 7 9: mean 5, sum of squares 32, sample sd sqrt(32/7) = 2.13809. */
    const double x[] = {2, 4, 4, 4, 5, 5, 7, 9};
    struct mb_stats_summary s;
    mb_stats_summarize(x, 8, &s);
    assert_int_equal(s.n, 8);
    assert_float_equal(s.mean, 5.0, 1e-12);
    assert_float_equal(s.stddev, 2.138089935, 1e-8);
    assert_true(s.ci_valid);
    /* t(0.975, 7) = 2.3646; half-width = 2.3646 * 2.13809 / sqrt(8) = 1.78748. */
    assert_float_equal(s.ci95_half, 1.78748, 1e-4);

    struct mb_stats_acc a = {0};
    for (int i = 0; i < 8; i++)
        mb_stats_add(&a, x[i]);
    assert_float_equal(a.min, 2, 0);
    assert_float_equal(a.max, 9, 0);

    /* One observation: a mean but no interval (unknown, not zero-width). */
    mb_stats_summarize(x, 1, &s);
    assert_false(s.ci_valid);
    assert_float_equal(s.mean, 2, 0);
    mb_stats_summarize(x, 0, &s);
    assert_int_equal(s.n, 0);
    assert_false(s.ci_valid);
}

static void test_t_quantiles(void **state)
{
    (void)state;
    assert_float_equal(mb_stats_t95(1), 12.7062, 1e-4);
    assert_float_equal(mb_stats_t95(10), 2.2281, 1e-4);
    assert_float_equal(mb_stats_t95(30), 2.0423, 1e-4);
    /* Beyond the table: t(0.975,40)=2.0211, 60: 2.0003, 120: 1.9799, large: 1.95996. */
    assert_float_equal(mb_stats_t95(40), 2.0211, 2e-4);
    assert_float_equal(mb_stats_t95(60), 2.0003, 2e-4);
    assert_float_equal(mb_stats_t95(120), 1.9799, 2e-4);
    assert_float_equal(mb_stats_t95(100000), 1.95996, 1e-4);
    assert_true(isinf(mb_stats_t95(0)));
    /* Continuous at the table's end. */
    assert_true(fabs(mb_stats_t95(31) - 2.0395) < 2e-4);
}

static void test_batch_means(void **state)
{
    (void)state;
    /* Constant rate 10/s sampled every 0.5 s for 10 s: every batch rate is exactly 10. */
    double t[21], cum[21];
    for (int i = 0; i <= 20; i++) {
        t[i] = 0.5 * i;
        cum[i] = 10 * t[i];
    }
    struct mb_stats_summary s;
    assert_int_equal(mb_stats_batch_means(t, cum, 21, 5, &s), 5);
    assert_float_equal(s.mean, 10, 1e-12);
    assert_float_equal(s.ci95_half, 0, 1e-12);
    assert_true(s.ci_valid);

    /* Two halves at 8/s and 12/s, two batches: rates 8 and 12, overall 10,
     * sd = sqrt(8) = 2.828427, half-width = 12.7062 * 2.828427 / sqrt(2) = 25.4124. */
    for (int i = 0; i <= 20; i++)
        cum[i] = i <= 10 ? 8 * t[i] : 40 + 12 * (t[i] - 5);
    assert_int_equal(mb_stats_batch_means(t, cum, 21, 2, &s), 2);
    assert_float_equal(s.mean, 10, 1e-12);
    assert_float_equal(s.stddev, 2.828427, 1e-6);
    assert_float_equal(s.ci95_half, 25.4124, 1e-3);

    /* More batches than intervals: limited to n-1. */
    assert_int_equal(mb_stats_batch_means(t, cum, 3, 10, &s), 2);
    /* No time span: nothing. */
    double same[2] = {1, 1};
    assert_int_equal(mb_stats_batch_means(same, cum, 2, 2, &s), 0);
    assert_int_equal(mb_stats_batch_means(t, cum, 1, 2, &s), 0);
}

static void test_trapezoid(void **state)
{
    (void)state;
    /* y = 2t on [0, 3]: area 9, exact for a linear function. */
    const double t[] = {0, 1, 1.5, 3};
    const double y[] = {0, 2, 3, 6};
    assert_float_equal(mb_stats_trapezoid(t, y, 4), 9, 1e-12);
    assert_float_equal(mb_stats_trapezoid(t, y, 1), 0, 0);
    struct mb_trapz z = {0};
    for (int i = 0; i < 4; i++)
        mb_trapz_add(&z, t[i], y[i]);
    assert_float_equal(z.area, 9, 1e-12);
    assert_float_equal(mb_stats_lerp(1, 10, 3, 30, 2.5), 25, 1e-12);
    assert_float_equal(mb_stats_lerp(1, 10, 1, 30, 1), 10, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mean_stddev_ci),
        cmocka_unit_test(test_t_quantiles),
        cmocka_unit_test(test_batch_means),
        cmocka_unit_test(test_trapezoid),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
