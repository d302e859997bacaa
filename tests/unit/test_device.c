/* SPDX-License-Identifier: Apache-2.0 */
/* The device dispatcher: spec parsing, backend choice, ops checks and NULL optional ops. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "device/backends.h"
#include "migbench/device.h"

static int open_rc(const char *spec, struct mb_error *err)
{
    struct mb_device *dev = NULL;
    mb_error_clear(err);
    int rc = mb_device_open(spec, &dev, err);
    if (rc == MB_OK)
        assert_non_null(dev);
    else
        assert_null(dev);
    mb_device_close(dev);
    return rc;
}

static void test_bad_specs(void **state)
{
    (void)state;
    struct mb_error err;
    struct mb_device *dev = (struct mb_device *)&err; /* must be reset to NULL on failure */
    assert_int_equal(mb_device_open(NULL, &dev, &err), MB_EINVAL);
    assert_null(dev);
    assert_int_equal(open_rc("", &err), MB_EINVAL);
    assert_int_equal(open_rc("bogus", &err), MB_EINVAL);
    assert_non_null(strstr(err.msg, "unknown backend 'bogus'"));
    assert_non_null(strstr(err.msg, "emu"));
    assert_int_equal(open_rc("gpu:0", &err), MB_EINVAL);
    assert_int_equal(open_rc("host:frob=1", &err), MB_EINVAL);
    assert_non_null(strstr(err.msg, "frob"));
    assert_int_equal(open_rc("host:novalue", &err), MB_EINVAL);
    assert_non_null(strstr(err.msg, "key=value"));
    assert_int_equal(open_rc("host:=x", &err), MB_EINVAL);
    assert_int_equal(open_rc("emu:", &err), MB_EINVAL);
    assert_int_equal(open_rc("emu::mig=on", &err), MB_EINVAL);
    /* Errors from a backend name the spec. */
    assert_int_equal(open_rc("emu:H100-80GB:mig=perhaps", &err), MB_EINVAL);
    assert_non_null(strstr(err.msg, "emu:H100-80GB:mig=perhaps"));
    assert_int_equal(mb_device_open("host", NULL, &err), MB_EINVAL);
}

static void test_good_specs(void **state)
{
    (void)state;
    struct mb_error err;
    struct mb_device *dev = NULL;
    assert_int_equal(mb_device_open("host", &dev, &err), MB_OK);
    assert_string_equal(mb_device_backend(dev), "host");
    mb_device_close(dev);
    assert_int_equal(mb_device_open("auto", &dev, &err), MB_OK);
    /* With no NVIDIA GPU (or no NVML backend in the build) auto is the host. */
    const char *b = mb_device_backend(dev);
    assert_true(strcmp(b, "host") == 0 || strcmp(b, "nvml") == 0);
    mb_device_close(dev);
    assert_int_equal(mb_device_open("emu:H100-80GB:mig=on,index=2", &dev, &err), MB_OK);
    assert_string_equal(mb_device_backend(dev), "emu");
    struct mb_device_info info;
    assert_int_equal(mb_device_info(dev, &info, &err), MB_OK);
    assert_int_equal(info.index, 2);
    struct mb_mig_mode m;
    assert_int_equal(mb_device_mig_mode(dev, &m, &err), MB_OK);
    assert_int_equal(m.current, 1);
    mb_device_close(dev);
    mb_device_close(NULL);
    assert_string_equal(mb_device_backend(NULL), "none");

    /* The machine's devices in order: every GPU NVML reports, else the host as the only one. */
    char spec[32];
    assert_int_equal(mb_device_open_nth(0, spec, sizeof(spec), &dev, &err), MB_OK);
    assert_string_equal(spec, strcmp(mb_device_backend(dev), "host") == 0 ? "host" : "nvml:0");
    bool host = strcmp(spec, "host") == 0;
    mb_device_close(dev);
    if (host) {
        assert_int_equal(mb_device_open_nth(1, spec, sizeof(spec), &dev, &err), MB_ENOTFOUND);
        assert_null(dev);
    }
    assert_int_equal(mb_device_open_nth(4096, spec, sizeof(spec), &dev, &err), MB_ENOTFOUND);
}

static void test_spec_tokenizer(void **state)
{
    (void)state;
    const char *p = "a=1:b=x:y:z,c=3,";
    char key[MB__SPEC_KEY_MAX], val[MB__SPEC_VAL_MAX];
    struct mb_error err;
    assert_int_equal(mb__spec_next(&p, "t", key, val, &err), MB_OK);
    assert_string_equal(key, "a");
    assert_string_equal(val, "1");
    assert_int_equal(mb__spec_next(&p, "t", key, val, &err), MB_OK);
    assert_string_equal(key, "b");
    assert_string_equal(val, "x:y:z"); /* pieces without '=' continue the value */
    assert_int_equal(mb__spec_next(&p, "t", key, val, &err), MB_OK);
    assert_string_equal(key, "c");
    assert_string_equal(val, "3");
    assert_int_equal(mb__spec_next(&p, "t", key, val, &err), MB_ENOTFOUND);
    p = "k=";
    assert_int_equal(mb__spec_next(&p, "t", key, val, &err), MB_OK);
    assert_string_equal(val, "");
    char longkey[80];
    memset(longkey, 'k', sizeof(longkey) - 3);
    memcpy(longkey + sizeof(longkey) - 3, "=1", 3);
    p = longkey;
    assert_int_equal(mb__spec_next(&p, "t", key, val, &err), MB_EINVAL);

    unsigned long long u;
    double d;
    assert_int_equal(mb__spec_u64("n", "42", &u, &err), MB_OK);
    assert_int_equal(u, 42);
    assert_int_equal(mb__spec_u64("n", "-1", &u, &err), MB_EINVAL);
    assert_int_equal(mb__spec_u64("n", "4x", &u, &err), MB_EINVAL);
    assert_int_equal(mb__spec_u64("n", "", &u, &err), MB_EINVAL);
    assert_int_equal(mb__spec_u64("n", "99999999999999999999999", &u, &err), MB_EINVAL);
    assert_int_equal(mb__spec_double("x", "0.25", &d, &err), MB_OK);
    assert_true(d == 0.25);
    assert_int_equal(mb__spec_double("x", "nan", &d, &err), MB_EINVAL);
    assert_int_equal(mb__spec_double("x", "1e999", &d, &err), MB_EINVAL);
    assert_int_equal(mb__spec_double("x", "", &d, &err), MB_EINVAL);
}

/* A minimal backend with only the required operations. */
struct mini {
    struct mb_device base;
};

static int mini_open(const char *args, struct mb_device **out, struct mb_error *err)
{
    if (args && strcmp(args, "fail") == 0)
        return mb_error_set(err, MB_EIO, "mini cannot open");
    struct mini *m = calloc(1, sizeof(*m));
    if (!m)
        return MB_ENOMEM;
    *out = &m->base;
    return MB_OK;
}

static void mini_close(struct mb_device *dev)
{
    free(dev);
}

static int mini_info(struct mb_device *dev, struct mb_device_info *out, struct mb_error *err)
{
    (void)dev;
    (void)err;
    memset(out, 0, sizeof(*out));
    return MB_OK;
}

static int mini_tel(struct mb_device *dev, struct mb_telemetry *out, struct mb_error *err)
{
    (void)dev;
    (void)err;
    memset(out, 0, sizeof(*out));
    return MB_OK;
}

static int mini_sensor(struct mb_device *dev, struct mb_sensor_info *out, struct mb_error *err)
{
    (void)dev;
    (void)err;
    memset(out, 0, sizeof(*out));
    return MB_OK;
}

static uint32_t mini_caps(struct mb_device *dev)
{
    (void)dev;
    return MB_CAP_GPU | MB_CAP_POWER;
}

static const struct mb_device_ops mini_ops = {
    .version = MB_DEVICE_OPS_VERSION,
    .name = "mini",
    .open = mini_open,
    .close = mini_close,
    .info = mini_info,
    .telemetry = mini_tel,
    .sensor = mini_sensor,
    .caps = mini_caps,
};

static void test_null_optional_ops(void **state)
{
    (void)state;
    struct mb_error err;
    struct mb_device *dev = NULL;
    assert_int_equal(mb__device_open_ops(&mini_ops, NULL, "mini", &dev, &err), MB_OK);
    assert_ptr_equal(dev->ops, &mini_ops);
    struct mb_mig_mode m;
    assert_int_equal(mb_device_mig_mode(dev, &m, &err), MB_EUNSUPPORTED);
    assert_string_equal(err.msg, "the mini backend does not support mig_mode");
    unsigned id;
    assert_int_equal(mb_device_mig_create_gi(dev, 19, NULL, &id, &err), MB_EUNSUPPORTED);
    assert_non_null(strstr(err.msg, "mig_create_gi"));
    size_t n;
    struct mb_process procs[1];
    assert_int_equal(mb_device_processes(dev, procs, 1, &n, &err), MB_EUNSUPPORTED);
    struct mb_cpuset sets[1];
    assert_int_equal(mb_device_cpu_partitions(dev, 1, sets, &err), MB_EUNSUPPORTED);
    struct mb_mig_activity act;
    assert_int_equal(mb_device_mig_activity(dev, 0, &act, &err), MB_EUNSUPPORTED);
    assert_int_equal(mb_device_mig_set_mode(dev, 1, &err), MB_EUNSUPPORTED);
    assert_int_equal(mb_device_mig_destroy_gi(dev, 1, &err), MB_EUNSUPPORTED);
    assert_int_equal(mb_device_mig_destroy_ci(dev, 1, 0, &err), MB_EUNSUPPORTED);
    assert_int_equal(mb_device_mig_create_ci(dev, 1, -1, &id, &err), MB_EUNSUPPORTED);
    struct mb_placement pl[1];
    assert_int_equal(mb_device_mig_placements(dev, 19, pl, 1, &n, &err), MB_EUNSUPPORTED);
    struct mb_device_profile prof[1];
    assert_int_equal(mb_device_mig_profiles(dev, prof, 1, &n, &err), MB_EUNSUPPORTED);
    struct mb_mig_instance inst[1];
    assert_int_equal(mb_device_mig_instances(dev, inst, 1, &n, &err), MB_EUNSUPPORTED);
    struct mb_device_info info;
    assert_int_equal(mb_device_info(dev, &info, &err), MB_OK);
    assert_int_equal(mb_device_caps(dev), MB_CAP_GPU | MB_CAP_POWER);
    mb_device_close(dev);

    /* A NULL device is an argument error, not a crash. */
    assert_int_equal(mb_device_info(NULL, &info, &err), MB_EINVAL);

    /* The open failure is prefixed with the spec. */
    assert_int_equal(mb__device_open_ops(&mini_ops, "fail", "mini:fail", &dev, &err), MB_EIO);
    assert_string_equal(err.msg, "device 'mini:fail': mini cannot open");
}

static void test_ops_version(void **state)
{
    (void)state;
    struct mb_device_ops bad = mini_ops;
    bad.version = MB_DEVICE_OPS_VERSION + 1;
    struct mb_error err;
    struct mb_device *dev = NULL;
    assert_int_equal(mb__device_open_ops(&bad, NULL, "mini", &dev, &err), MB_EINVAL);
    assert_non_null(strstr(err.msg, "version"));
    assert_null(dev);
    bad = mini_ops;
    bad.telemetry = NULL; /* a required operation */
    assert_int_equal(mb__device_open_ops(&bad, NULL, "mini", &dev, &err), MB_EINVAL);
    assert_null(dev);
    bad = mini_ops;
    bad.caps = NULL; /* required too: code above the layer tests bits, not names */
    assert_int_equal(mb__device_open_ops(&bad, NULL, "mini", &dev, &err), MB_EINVAL);
    assert_null(dev);
}

static void test_power_kind_str(void **state)
{
    (void)state;
    assert_string_equal(mb_power_kind_str(MB_POWER_INSTANT), "instant");
    assert_string_equal(mb_power_kind_str(MB_POWER_AVERAGED), "averaged");
    assert_string_equal(mb_power_kind_str(MB_POWER_NONE), "none");
    assert_string_equal(mb_power_kind_str(MB_POWER_UNKNOWN), "unknown");
    assert_string_equal(mb_power_kind_str((enum mb_power_kind)42), "unknown");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_specs),      cmocka_unit_test(test_good_specs),
        cmocka_unit_test(test_spec_tokenizer), cmocka_unit_test(test_null_optional_ops),
        cmocka_unit_test(test_ops_version),    cmocka_unit_test(test_power_kind_str),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
