/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The nvml backend's power-limit calls through the fake libnvidia-ml.so.1 (tests/fake-nvml) on
 * the emulator: reading the limit, range, default and throttle reasons; setting it; and the NVML
 * errors mapped to statuses (NO_PERMISSION -> MB_EPERM, INVALID_ARGUMENT -> MB_ERANGE, a lost GPU,
 * a library without the set call).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "migbench/device.h"

static char fake_full[1024];
static char fake_legacy[1024];

static void use_fake(const char *lib, const char *spec, const char *fail)
{
    setenv("MIGBENCH_NVML_LIBRARY", lib, 1);
    setenv("MIGBENCH_FAKE_NVML_SPEC", spec, 1);
    if (fail)
        setenv("MIGBENCH_FAKE_NVML_FAIL", fail, 1);
    else
        unsetenv("MIGBENCH_FAKE_NVML_FAIL");
}

static struct mb_device *open_nvml(void)
{
    struct mb_device *dev = NULL;
    struct mb_error err;
    mb_error_clear(&err);
    if (mb_device_open("nvml:0", &dev, &err) != MB_OK)
        fail_msg("open nvml:0: %s", err.msg);
    assert_string_equal(mb_device_backend(dev), "nvml");
    return dev;
}

static int group_setup(void **state)
{
    (void)state;
    const char *bin = getenv("MB_BINARY_DIR");
    if (!bin)
        bin = MB_BINARY_DIR;
    snprintf(fake_full, sizeof(fake_full), "%s/tests/fake-nvml/libnvidia-ml.so.1", bin);
    snprintf(fake_legacy, sizeof(fake_legacy), "%s/tests/fake-nvml/legacy/libnvidia-ml.so.1", bin);
    return access(fake_full, R_OK) == 0 && access(fake_legacy, R_OK) == 0 ? 0 : -1;
}

static void test_read_and_set(void **state)
{
    (void)state;
    use_fake(fake_full, "H100-80GB:idle_w=70:max_w=700:load=1", NULL);
    struct mb_device *dev = open_nvml();
    assert_true(mb_device_caps(dev) & MB_CAP_SET_POWER_LIMIT);
    struct mb_power_limit pl;
    struct mb_error err;
    assert_int_equal(mb_device_power_limit(dev, &pl, &err), MB_OK);
    assert_int_equal(pl.valid,
                     MB_PL_LIMIT | MB_PL_ENFORCED | MB_PL_RANGE | MB_PL_DEFAULT | MB_PL_THROTTLE);
    assert_int_equal(pl.limit_mw, 700000);
    assert_int_equal(pl.enforced_mw, 700000);
    assert_int_equal(pl.default_mw, 700000);
    assert_int_equal(pl.min_mw, 210000);
    assert_int_equal(pl.max_mw, 700000);
    assert_int_equal(pl.throttle_reasons, 0);
    assert_int_equal(mb_device_set_power_limit(dev, 400000, &err), MB_OK);
    assert_int_equal(mb_device_power_limit(dev, &pl, &err), MB_OK);
    assert_int_equal(pl.limit_mw, 400000);
    assert_int_equal(pl.enforced_mw, 400000);
    assert_int_equal(pl.throttle_reasons, MB_THROTTLE_SW_POWER_CAP);
    struct mb_telemetry t;
    assert_int_equal(mb_device_telemetry(dev, &t, &err), MB_OK);
    assert_int_equal(t.power_limit_mw, 400000);
    assert_int_equal(t.throttle_reasons, MB_THROTTLE_SW_POWER_CAP);
    /* Out of range: NVML's INVALID_ARGUMENT becomes MB_ERANGE with the range named. */
    assert_int_equal(mb_device_set_power_limit(dev, 100000, &err), MB_ERANGE);
    assert_non_null(strstr(err.msg, "210000..700000"));
    assert_int_equal(mb_device_power_limit(dev, &pl, &err), MB_OK);
    assert_int_equal(pl.limit_mw, 400000);
    mb_device_close(dev);
}

static void test_errors(void **state)
{
    (void)state;
    struct mb_error err;
    /* Not root: the emulator's limit_perm=deny answers NO_PERMISSION. */
    use_fake(fake_full, "H100-80GB:limit_perm=deny", NULL);
    struct mb_device *dev = open_nvml();
    assert_int_equal(mb_device_set_power_limit(dev, 400000, &err), MB_EPERM);
    assert_non_null(strstr(err.msg, "permission denied"));
    mb_device_close(dev);
    /* Injected: NO_PERMISSION (4) on the first set, a lost GPU (15) on a read. */
    use_fake(fake_full, "H100-80GB",
             "nvmlDeviceSetPowerManagementLimit:1:4,"
             "nvmlDeviceGetPowerManagementLimit:1:15");
    dev = open_nvml();
    assert_int_equal(mb_device_set_power_limit(dev, 400000, &err), MB_EPERM);
    assert_int_equal(mb_device_set_power_limit(dev, 400000, &err), MB_OK);
    struct mb_power_limit pl;
    assert_int_equal(mb_device_power_limit(dev, &pl, &err), MB_EGONE);
    assert_int_equal(mb_device_power_limit(dev, &pl, &err), MB_OK);
    assert_int_equal(pl.limit_mw, 400000);
    assert_int_equal(mb_device_set_power_limit(dev, 700000, &err), MB_OK);
    mb_device_close(dev);
    /* The range cannot be read (NOT_SUPPORTED = 3): the limit is never set blind. */
    use_fake(fake_full, "H100-80GB", "nvmlDeviceGetPowerManagementLimitConstraints:*:3");
    dev = open_nvml();
    assert_false(mb_device_caps(dev) & MB_CAP_SET_POWER_LIMIT);
    assert_int_equal(mb_device_power_limit(dev, &pl, &err), MB_OK);
    assert_false(pl.valid & MB_PL_RANGE);
    assert_true(pl.valid & MB_PL_LIMIT);
    mb_device_close(dev);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_read_and_set),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, group_setup, NULL);
}
