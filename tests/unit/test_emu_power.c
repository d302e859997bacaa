/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The emulated GPU's power limit: the range and default, the stated DVFS model (power clipped to
 * the limit, the clock and work rate falling along the curve, the floor), the exact energy
 * counter under a limit, errors (range, permission, trace), the limit shared through a state
 * file, and live processes that the emulator forgets when they die.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "device/emu.h"
#include "device/gpumodel.h"
#include "migbench/device.h"
#include "migbench/fileio.h"

#define MIB (1024ull * 1024ull)

static struct mb_device *open_ok(const char *spec)
{
    struct mb_device *dev = NULL;
    struct mb_error err;
    mb_error_clear(&err);
    if (mb_device_open(spec, &dev, &err) != MB_OK)
        fail_msg("open %s: %s", spec, err.msg);
    return dev;
}

static void advance(struct mb_device *dev, double s)
{
    struct mb_error err;
    assert_int_equal(mb__emu_advance(dev, (int64_t)(s * 1e9 + 0.5), &err), MB_OK);
}

static uint64_t energy(struct mb_device *dev)
{
    struct mb_telemetry t;
    struct mb_error err;
    assert_int_equal(mb_device_telemetry(dev, &t, &err), MB_OK);
    assert_true(t.valid & MB_TEL_ENERGY);
    return t.energy_mj;
}

static void set_ok(struct mb_device *dev, uint32_t mw)
{
    struct mb_error err;
    mb_error_clear(&err);
    if (mb_device_set_power_limit(dev, mw, &err) != MB_OK)
        fail_msg("set %u mW: %s", mw, err.msg);
}

static double speed(struct mb_device *dev)
{
    double s = -1;
    struct mb_error err;
    assert_int_equal(mb__emu_speed(dev, &s, &err), MB_OK);
    return s;
}

static void test_range_and_default(void **state)
{
    (void)state;
    struct mb_device *dev = open_ok("emu:H100-80GB:idle_w=70:max_w=700");
    assert_true(mb_device_caps(dev) & MB_CAP_SET_POWER_LIMIT);
    struct mb_power_limit pl;
    struct mb_error err;
    assert_int_equal(mb_device_power_limit(dev, &pl, &err), MB_OK);
    assert_int_equal(pl.valid,
                     MB_PL_LIMIT | MB_PL_ENFORCED | MB_PL_RANGE | MB_PL_DEFAULT | MB_PL_THROTTLE);
    assert_int_equal(pl.limit_mw, 700000);
    assert_int_equal(pl.enforced_mw, 700000);
    assert_int_equal(pl.default_mw, 700000);
    assert_int_equal(pl.max_mw, 700000);
    assert_int_equal(pl.min_mw, 210000); /* 30% of max_w */
    assert_int_equal(pl.throttle_reasons, 0);
    /* Out of range either side, and nothing changes. */
    assert_int_equal(mb_device_set_power_limit(dev, 209999, &err), MB_ERANGE);
    assert_non_null(strstr(err.msg, "210000..700000"));
    assert_int_equal(mb_device_set_power_limit(dev, 700001, &err), MB_ERANGE);
    assert_int_equal(mb_device_power_limit(dev, &pl, &err), MB_OK);
    assert_int_equal(pl.limit_mw, 700000);
    mb_device_close(dev);

    /* Options: a minimum, a first limit, and the errors in them. */
    dev = open_ok("emu:H100-80GB:max_w=500:min_limit_w=100:limit_w=250");
    assert_int_equal(mb_device_power_limit(dev, &pl, &err), MB_OK);
    assert_int_equal(pl.min_mw, 100000);
    assert_int_equal(pl.limit_mw, 250000);
    assert_int_equal(pl.default_mw, 500000);
    mb_device_close(dev);
    struct mb_device *bad = NULL;
    assert_int_equal(mb_device_open("emu:H100-80GB:max_w=500:limit_w=600", &bad, &err), MB_EINVAL);
    assert_non_null(strstr(err.msg, "limit_w"));
    assert_int_equal(mb_device_open("emu:H100-80GB:max_w=500:min_limit_w=501", &bad, &err),
                     MB_EINVAL);
    assert_int_equal(mb_device_open("emu:H100-80GB:limit_perm=maybe", &bad, &err), MB_EINVAL);
}

/* The clock fraction s at which g(s) = frac of the dynamic power: g(s) = s^3 above the fitted
 * voltage knee K (data/gpumodel.json), s * K^2 below it. */
static double clock_for(double frac)
{
    double k = mb__gm_knee();
    return frac >= k * k * k ? cbrt(frac) : frac / (k * k);
}

static void test_cap_clips_power_and_clock(void **state)
{
    (void)state;
    struct mb_device *dev =
        open_ok("emu:H100-80GB:clock=manual:idle_w=100:max_w=500:load=1:update_ms=0:avg_ms=0");
    struct mb_error err;
    assert_true(fabs(speed(dev) - 1.0) < 1e-12);
    advance(dev, 1);
    assert_int_equal(energy(dev), 500000);
    /* 300 W: (300-100)/400 = 0.5 of the dynamic power, so the clock falls to where g(s) = 0.5
     * (below the fitted knee: P ~ f there) and the power sits exactly at the limit. */
    set_ok(dev, 300000);
    double s = speed(dev);
    assert_true(fabs(s - clock_for(0.5)) < 1e-9);
    advance(dev, 2);
    assert_int_equal(energy(dev), 500000 + 600000);
    struct mb_telemetry t;
    assert_int_equal(mb_device_telemetry(dev, &t, &err), MB_OK);
    assert_int_equal(t.power_mw, 300000);
    assert_int_equal(t.power_limit_mw, 300000);
    assert_int_equal(t.throttle_reasons, MB_THROTTLE_SW_POWER_CAP);
    assert_int_equal(t.clock_sm_mhz, (uint32_t)lround(1980.0 * clock_for(0.5)));
    struct mb_power_limit pl;
    assert_int_equal(mb_device_power_limit(dev, &pl, &err), MB_OK);
    assert_int_equal(pl.throttle_reasons, MB_THROTTLE_SW_POWER_CAP);
    /* 160 W: 0.15 of the dynamic power, below the knee: P ~ f there. */
    set_ok(dev, 160000);
    assert_true(fabs(speed(dev) - clock_for(0.15)) < 1e-9);
    advance(dev, 1);
    assert_int_equal(energy(dev), 1100000 + 160000);
    /* Back to the default: full clock, full power, no throttle. */
    set_ok(dev, 500000);
    assert_true(fabs(speed(dev) - 1.0) < 1e-12);
    assert_int_equal(mb_device_telemetry(dev, &t, &err), MB_OK);
    assert_int_equal(t.throttle_reasons, 0);
    assert_int_equal(t.power_mw, 500000);
    mb_device_close(dev);
}

static void test_light_load_and_floor(void **state)
{
    (void)state;
    /* A light load fits under the limit: nothing throttles. */
    struct mb_device *dev =
        open_ok("emu:H100-80GB:clock=manual:idle_w=100:max_w=500:load=0.25:min_limit_w=101");
    set_ok(dev, 300000);
    assert_true(fabs(speed(dev) - 1.0) < 1e-12);
    advance(dev, 1);
    assert_int_equal(energy(dev), 200000);
    /* A limit barely above idle: the clock stops at its floor (sm idle / sm max) and the power
     * stays above the limit, as the model says, rather than pretending to meet it. */
    set_ok(dev, 101000);
    double floor_s = 345.0 / 1980.0;
    assert_true(fabs(speed(dev) - floor_s) < 1e-9);
    advance(dev, 1);
    double k = mb__gm_knee();
    uint64_t want = 200000 + (uint64_t)llround((100.0 + 100.0 * floor_s * k * k) * 1000.0);
    assert_int_equal(energy(dev), want);
    mb_device_close(dev);
}

static void test_permission_and_trace(void **state)
{
    (void)state;
    struct mb_device *dev = open_ok("emu:H100-80GB:limit_perm=deny");
    struct mb_error err;
    assert_int_equal(mb_device_set_power_limit(dev, 400000, &err), MB_EPERM);
    assert_non_null(strstr(err.msg, "root"));
    struct mb_power_limit pl;
    assert_int_equal(mb_device_power_limit(dev, &pl, &err), MB_OK);
    assert_int_equal(pl.limit_mw, 700000);
    mb_device_close(dev);

    char path[128];
    snprintf(path, sizeof(path), "/tmp/mb-test-emu-power-%ld.trace", (long)getpid());
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("0,100\n10,300\n", f);
    fclose(f);
    char spec[256];
    snprintf(spec, sizeof(spec), "emu:H100-80GB:trace=%s", path);
    dev = open_ok(spec);
    assert_false(mb_device_caps(dev) & MB_CAP_SET_POWER_LIMIT);
    assert_int_equal(mb_device_set_power_limit(dev, 400000, &err), MB_EUNSUPPORTED);
    mb_device_close(dev);
    unlink(path);
    /* The host has no power limit at all. */
    dev = open_ok("host");
    assert_false(mb_device_caps(dev) & MB_CAP_SET_POWER_LIMIT);
    assert_int_equal(mb_device_power_limit(dev, &pl, &err), MB_EUNSUPPORTED);
    assert_int_equal(mb_device_set_power_limit(dev, 1000, &err), MB_EUNSUPPORTED);
    mb_device_close(dev);
}

static void test_state_file_and_live_processes(void **state)
{
    (void)state;
    char path[128], lock[160], spec[256];
    snprintf(path, sizeof(path), "/tmp/mb-test-emu-power-%ld.json", (long)getpid());
    snprintf(lock, sizeof(lock), "%s.lock", path);
    snprintf(spec, sizeof(spec), "emu:H100-80GB:idle_w=70:max_w=700:state=%s", path);
    struct mb_device *a = open_ok(spec), *b = open_ok(spec);
    struct mb_error err;
    set_ok(a, 350000);
    struct mb_power_limit pl;
    assert_int_equal(mb_device_power_limit(b, &pl, &err), MB_OK);
    assert_int_equal(pl.limit_mw, 350000);
    char *text = NULL;
    assert_int_equal(mb_file_read(path, 1 << 20, &text, NULL, &err), MB_OK);
    assert_non_null(strstr(text, "\"power_limit_mw\":\t350000"));
    free(text);
    /* A live process drives the load through the other handle; once it is dead it is forgotten
     * (a driver forgets a process that died), and the GPU is idle again. */
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        pause();
        _exit(0);
    }
    assert_int_equal(mb__emu_attach_live(a, (unsigned)child, -1, -1, MIB, "live", &err), MB_OK);
    assert_true(speed(b) < 1.0); /* 700 W of demand under a 350 W limit */
    struct mb_process procs[4];
    size_t n = 0;
    assert_int_equal(mb_device_processes(b, procs, 4, &n, &err), MB_OK);
    assert_int_equal(n, 1);
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    assert_int_equal(mb_device_processes(b, procs, 4, &n, &err), MB_OK);
    assert_int_equal(n, 0);
    assert_true(fabs(speed(b) - 1.0) < 1e-12);
    /* Back to the default: the state reads as if the limit had never been set. */
    set_ok(b, 700000);
    assert_int_equal(mb_file_read(path, 1 << 20, &text, NULL, &err), MB_OK);
    assert_null(strstr(text, "power_limit_mw"));
    free(text);
    mb_device_close(a);
    mb_device_close(b);
    /* A state file with a limit outside the range is refused, naming the field. */
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("{\"version\":1,\"model\":\"H100-SXM5-80GB\",\"mig_current\":0,\"mig_pending\":0,"
          "\"power_limit_mw\":5}\n",
          f);
    fclose(f);
    struct mb_device *bad = NULL;
    assert_int_equal(mb_device_open(spec, &bad, &err), MB_EPARSE);
    assert_non_null(strstr(err.msg, "power_limit_mw"));
    unlink(path);
    unlink(lock);
}

static void test_throttle_names(void **state)
{
    (void)state;
    char buf[128];
    assert_string_equal(mb_throttle_reasons_str(0, buf, sizeof(buf)), "");
    assert_string_equal(mb_throttle_reasons_str(MB_THROTTLE_SW_POWER_CAP, buf, sizeof(buf)),
                        "sw_power_cap");
    assert_string_equal(mb_throttle_reasons_str(0x5ull | (1ull << 40), buf, sizeof(buf)),
                        "gpu_idle,sw_power_cap,0x10000000000");
    assert_string_equal(mb_throttle_reasons_str(0xcull, buf, 8), "sw_powe");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_range_and_default),
        cmocka_unit_test(test_cap_clips_power_and_clock),
        cmocka_unit_test(test_light_load_and_floor),
        cmocka_unit_test(test_permission_and_trace),
        cmocka_unit_test(test_state_file_and_live_processes),
        cmocka_unit_test(test_throttle_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
