/* SPDX-License-Identifier: Apache-2.0 */
/* The device dispatcher: spec parsing, backend choice, ops checks and NULL optional ops. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "device/backends.h"
#include "device/state.h"
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

/* CUDA_VISIBLE_DEVICES on an emulated GPU: its GPU UUID, a MIG UUID, the legacy form. */
static void test_resolve_visible_emu(void **state)
{
    (void)state;
    char path[128], lock[140], spec[200];
    snprintf(path, sizeof(path), "/tmp/mb-test-visible-%ld.json", (long)getpid());
    snprintf(lock, sizeof(lock), "%s.lock", path);
    snprintf(spec, sizeof(spec), "emu:H100-80GB:mig=on:state=%s", path);
    unlink(path);
    struct mb_error err;
    struct mb_device *dev = NULL;
    assert_int_equal(mb_device_open(spec, &dev, &err), MB_OK);
    unsigned gi[2], ci[2];
    assert_int_equal(mb_device_mig_create_gi(dev, 9, NULL, &gi[0], &err), MB_OK); /* 3g.40gb */
    assert_int_equal(mb_device_mig_create_ci(dev, gi[0], -1, &ci[0], &err), MB_OK);
    assert_int_equal(mb_device_mig_create_gi(dev, 19, NULL, &gi[1], &err), MB_OK); /* 1g.10gb */
    assert_int_equal(mb_device_mig_create_ci(dev, gi[1], -1, &ci[1], &err), MB_OK);
    struct mb_mig_instance inst[MB_MAX_MIG_INSTANCES];
    size_t n = 0;
    assert_int_equal(mb_device_mig_instances(dev, inst, MB_MAX_MIG_INSTANCES, &n, &err), MB_OK);
    assert_int_equal(n, 2);
    struct mb_device_info info;
    assert_int_equal(mb_device_info(dev, &info, &err), MB_OK);
    mb_device_close(dev);

    struct mb_visible v;
    for (size_t i = 0; i < n; i++) {
        /* Slurm may hand several; the first is the one a job's CUDA device 0 is. */
        char cvd[256];
        snprintf(cvd, sizeof(cvd), "%s,%s", inst[i].uuid, inst[1 - i].uuid);
        assert_int_equal(mb_device_resolve_visible(spec, cvd, &v, &err), MB_OK);
        assert_true(v.resolved);
        assert_true(v.has_instance);
        assert_string_equal(v.entry, inst[i].uuid);
        assert_string_equal(v.spec, spec);
        assert_string_equal(v.gpu_uuid, info.uuid);
        assert_int_equal(v.instance.gi_id, inst[i].gi_id);
        assert_int_equal(v.instance.ci_id, inst[i].ci_id);
        assert_string_equal(v.instance.profile_name, inst[i].profile_name);
    }
    char legacy[256];
    snprintf(legacy, sizeof(legacy), "MIG-%s/%u/%u", info.uuid, gi[1], ci[1]);
    assert_int_equal(mb_device_resolve_visible(spec, legacy, &v, &err), MB_OK);
    assert_true(v.has_instance);
    assert_string_equal(v.instance.profile_name, "1g.10gb");
    assert_string_equal(v.instance.uuid,
                        strcmp(inst[0].profile_name, "1g.10gb") == 0 ? inst[0].uuid : inst[1].uuid);
    assert_int_equal(mb_device_resolve_visible(spec, info.uuid, &v, &err), MB_OK);
    assert_true(v.resolved);
    assert_false(v.has_instance);

    /* Not this GPU's: refused with the entry named, never metered as if it were. */
    snprintf(legacy, sizeof(legacy), "MIG-%s/%u/%u", info.uuid, gi[1] + 5, ci[1]);
    assert_int_equal(mb_device_resolve_visible(spec, legacy, &v, &err), MB_ENOTFOUND);
    assert_non_null(strstr(err.msg, legacy));
    assert_false(v.resolved);
    assert_int_equal(
        mb_device_resolve_visible(spec, "MIG-00000000-0000-0000-0000-000000000000", &v, &err),
        MB_ENOTFOUND);
    assert_non_null(strstr(err.msg, "MIG-00000000"));
    assert_int_equal(mb_device_resolve_visible(spec, "MIG-GPU-x/1", &v, &err), MB_ENOTFOUND);

    /* Nothing to resolve: unset, an index, NoDevFiles, the host. */
    const char *none[] = {NULL, "", "0", "1,2", "NoDevFiles"};
    for (size_t i = 0; i < sizeof(none) / sizeof(none[0]); i++) {
        assert_int_equal(mb_device_resolve_visible(spec, none[i], &v, &err), MB_OK);
        assert_false(v.resolved);
        assert_string_equal(v.spec, spec);
    }
    assert_int_equal(mb_device_resolve_visible("host", inst[0].uuid, &v, &err), MB_OK);
    assert_false(v.resolved);
    assert_string_equal(v.spec, "host");
    unlink(path);
    unlink(lock);
}

/* The device layer answers where a device keeps state (mig.c and powercap.c ask it). */
static void test_state_file(void **state)
{
    (void)state;
    char path[64];
    assert_true(mb__device_state_in_file("emu:H100-80GB"));
    assert_false(mb__device_state_in_file("nvml:0"));
    assert_false(mb__device_state_in_file("host"));
    assert_false(mb__device_state_in_file(NULL));
    assert_true(
        mb__device_state_file("emu:H100-80GB:mig=on:state=/tmp/g.json", path, sizeof(path)));
    assert_string_equal(path, "/tmp/g.json");
    assert_true(mb__device_state_file("emu:A100-40GB:state=/s/a.json,mig=on", path, sizeof(path)));
    assert_string_equal(path, "/s/a.json");
    assert_false(mb__device_state_file("emu:H100-80GB:mig=on", path, sizeof(path)));
    assert_false(mb__device_state_file("nvml:0", path, sizeof(path)));
    assert_false(mb__device_state_file("emu:H100-80GB:state=/a/very/long/path.json", path, 8));
    /* A model name that looks like an option is the model, not a state file. */
    assert_false(mb__device_state_file("emu:state=x", path, sizeof(path)));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_specs),      cmocka_unit_test(test_good_specs),
        cmocka_unit_test(test_spec_tokenizer), cmocka_unit_test(test_null_optional_ops),
        cmocka_unit_test(test_ops_version),    cmocka_unit_test(test_resolve_visible_emu),
        cmocka_unit_test(test_power_kind_str), cmocka_unit_test(test_state_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
