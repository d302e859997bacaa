/* SPDX-License-Identifier: Apache-2.0 */
/* One wait rule for a window's result (power/window_wait.h), as the runner and `measure` use it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "migbench/device.h"
#include "migbench/meter.h"
#include "power/window_wait.h"

static int wait_for(const char *spec, int64_t interval_ns)
{
    struct mb_device *dev;
    struct mb_error err;
    assert_int_equal(mb_device_open(spec, &dev, &err), MB_OK);
    struct mb_meter_opts o = {.device = dev, .interval_ns = interval_ns};
    struct mb_meter *m;
    assert_int_equal(mb_meter_create(&o, &m, &err), MB_OK);
    int ms = mb_window_wait_ms(m);
    mb_meter_destroy(m);
    return ms;
}

/*
 * The runner waited a fixed 5 s for a window's covering sample: with a 10 s sample interval
 * (allowed by measure.sample_interval) the sample comes later and the window was refused. The
 * shared rule scales with the interval and the sensor's averaging, and never waits less than
 * 5 s or more than 60 s.
 */
static void test_wait_rule(void **state)
{
    (void)state;
    /* H100: power averaged over 1 s. 100 ms sampling: 3 x 0.1 + 1 + 2 = 3.3 s -> the 5 s floor. */
    assert_int_equal(wait_for("emu:H100-80GB", 100000000), MB_WINDOW_WAIT_MIN_MS);
    /* 10 s sampling: 30 + 1 + 2 = 33 s. */
    assert_int_equal(wait_for("emu:H100-80GB", 10000000000LL), 33000);
    /* A100: a 25 ms boxcar reading, no averaging shift to speak of: 3 x 5 + 2 = 17 s and up. */
    int a100 = wait_for("emu:A100-40GB", 5000000000LL);
    assert_true(a100 >= 17000 && a100 < 18000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wait_rule),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
