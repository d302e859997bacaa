/* SPDX-License-Identifier: Apache-2.0 */
/* Zeus's selection rules over measured power-limit points, their intervals and their errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <string.h>

#include "migbench/powersel.h"

/* Four limits of one run: the default is fastest, 280 W the most frugal. */
static const struct mb_power_point pts[] = {
    {NAN, 0.274, 0.002, 2560, 5},
    {420, 0.205, 0.002, 2100, 5},
    {280, 0.170, 0.002, 1740, 5},
    {210, 0.176, 0.002, 1420, 5},
};

static struct mb_power_choice pick(const char *rule, double max_power_w, int want_rc)
{
    struct mb_power_rule_opts o;
    struct mb_error err;
    assert_int_equal(mb_power_rule_parse(rule, &o, &err), MB_OK);
    o.max_power_w = max_power_w;
    struct mb_power_choice c;
    assert_int_equal(mb_power_select(pts, 4, &o, &c, &err), want_rc);
    return c;
}

static void test_rules(void **state)
{
    (void)state;
    struct mb_power_choice c = pick("energy", NAN, MB_OK);
    assert_int_equal(c.index, 2);
    assert_true(c.has_runner);
    assert_int_equal(c.runner_up, 3);
    assert_true(c.distinct); /* 0.170 + 0.002 < 0.176 - 0.002 */
    c = pick("time", NAN, MB_OK);
    assert_int_equal(c.index, 0);
    assert_true(fabs(c.value - 1.0 / 2560) < 1e-15);
    /* Cost: eta = 1 is energy, eta = 0 is time; 0.5 weighs 700 W x T against E. */
    assert_int_equal(pick("cost:1", 700, MB_OK).index, 2);
    assert_int_equal(pick("cost:0", 700, MB_OK).index, 0);
    c = pick("cost:0.5", 700, MB_OK);
    size_t arg = 0;
    double best = INFINITY;
    for (size_t i = 0; i < 4; i++) {
        double v = 0.5 * pts[i].energy_per_unit + 0.5 * 700 / pts[i].throughput;
        if (v < best) {
            best = v;
            arg = i;
        }
    }
    assert_int_equal(c.index, arg);
    assert_true(fabs(c.value - best) < 1e-12);
    /* Slowdown: 25% allows 2048/s and up (420 W); 60% allows 280 W too. */
    assert_int_equal(pick("slowdown:25%", NAN, MB_OK).index, 1);
    assert_int_equal(pick("slowdown:0.6", NAN, MB_OK).index, 2);
    assert_int_equal(pick("slowdown:0", NAN, MB_OK).index, 0);
}

static void test_intervals_and_gaps(void **state)
{
    (void)state;
    struct mb_power_point p[] = {
        {NAN, 0.20, 0.01, 100, 1},
        {300, 0.19, 0.01, 90, 1},
        {250, NAN, NAN, 80, 1}, /* energy not measured: skipped by energy rules */
    };
    struct mb_power_rule_opts o = {.rule = MB_PSEL_ENERGY};
    struct mb_power_choice c;
    struct mb_error err;
    assert_int_equal(mb_power_select(p, 3, &o, &c, &err), MB_OK);
    assert_int_equal(c.index, 1);
    assert_int_equal(c.runner_up, 0);
    assert_false(c.distinct); /* 0.19 +- 0.01 overlaps 0.20 +- 0.01 */
    o.rule = MB_PSEL_TIME;
    assert_int_equal(mb_power_select(p, 3, &o, &c, &err), MB_OK);
    assert_int_equal(c.index, 0);
    /* Nothing eligible, bad options, bad text. */
    o.rule = MB_PSEL_ENERGY;
    assert_int_equal(mb_power_select(p + 2, 1, &o, &c, &err), MB_ENOTFOUND);
    o.rule = MB_PSEL_COST;
    o.eta = 0.5;
    o.max_power_w = NAN;
    assert_int_equal(mb_power_select(p, 3, &o, &c, &err), MB_EINVAL);
    assert_int_equal(mb_power_rule_parse("cost:2", &o, &err), MB_EINVAL);
    assert_int_equal(mb_power_rule_parse("slowdown:x", &o, &err), MB_EINVAL);
    assert_int_equal(mb_power_rule_parse("fastest", &o, &err), MB_EINVAL);
    assert_non_null(strstr(err.msg, "expected energy, time, cost:ETA or slowdown:S"));
    assert_string_equal(mb_power_rule_str(MB_PSEL_SLOWDOWN), "slowdown");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rules),
        cmocka_unit_test(test_intervals_and_gaps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
