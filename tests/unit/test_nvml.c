/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The real nvml backend (src/device/nvml.c) run against the fake libnvidia-ml.so.1 built in
 * tests/fake-nvml/ on top of the emulator: identity, telemetry, sensor semantics, the profile
 * walk and its two kinds of id, MIG create/list/destroy, process size-retry loops, every error
 * mapping, a missing library, and the legacy fake's symbol fallbacks.
 */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "migbench/catalog.h"
#include "migbench/device.h"

static char fake_full[1024];
static char fake_legacy[1024];
static char state_path[256];

static const char *const knobs[] = {
    "MIGBENCH_FAKE_NVML_SPEC",  "MIGBENCH_FAKE_NVML_FAIL",      "MIGBENCH_FAKE_NVML_INIT_FAIL",
    "MIGBENCH_FAKE_NVML_PROCS", "MIGBENCH_FAKE_NVML_PROC_GROW", "MIGBENCH_FAKE_NVML_GPI_VERSION",
};

/* Points the backend at a fake (full or legacy) emulating spec, with no knobs set. */
static void use_fake(int legacy, const char *spec)
{
    for (size_t i = 0; i < sizeof(knobs) / sizeof(knobs[0]); i++)
        unsetenv(knobs[i]);
    setenv("MIGBENCH_NVML_LIBRARY", legacy ? fake_legacy : fake_full, 1);
    setenv("MIGBENCH_FAKE_NVML_SPEC", spec, 1);
}

/* Devices a test opened through open_ok; teardown closes what a failed test left open, so that
 * the fake's reference count (and with it its configuration) starts afresh in the next test. */
static struct mb_device *opened[8];

static void track(struct mb_device *dev)
{
    for (size_t i = 0; i < sizeof(opened) / sizeof(opened[0]); i++)
        if (!opened[i]) {
            opened[i] = dev;
            return;
        }
}

static void close_dev(struct mb_device *dev)
{
    for (size_t i = 0; i < sizeof(opened) / sizeof(opened[0]); i++)
        if (opened[i] == dev)
            opened[i] = NULL;
    mb_device_close(dev);
}

static struct mb_device *open_ok(const char *spec)
{
    struct mb_device *dev = NULL;
    struct mb_error err;
    mb_error_clear(&err);
    int rc = mb_device_open(spec, &dev, &err);
    if (rc != MB_OK)
        fprintf(stderr, "open %s: %s\n", spec, err.msg);
    assert_int_equal(rc, MB_OK);
    assert_non_null(dev);
    track(dev);
    assert_string_equal(mb_device_backend(dev), "nvml");
    return dev;
}

static int group_setup(void **state)
{
    (void)state;
    const char *bin = getenv("MB_BINARY_DIR");
    if (!bin)
        bin = MB_BINARY_DIR;
    /* MB_FAKE_NVML: another build of the full fake (tests/nvidia builds one from NVIDIA's own
     * nvml.h, and runs this test against it). */
    const char *full = getenv("MB_FAKE_NVML");
    if (full && *full)
        snprintf(fake_full, sizeof(fake_full), "%s", full);
    else
        snprintf(fake_full, sizeof(fake_full), "%s/tests/fake-nvml/libnvidia-ml.so.1", bin);
    snprintf(fake_legacy, sizeof(fake_legacy), "%s/tests/fake-nvml/legacy/libnvidia-ml.so.1", bin);
    if (access(fake_full, R_OK) != 0 || access(fake_legacy, R_OK) != 0) {
        fprintf(stderr, "fake NVML not built at %s\n", fake_full);
        return -1;
    }
    snprintf(state_path, sizeof(state_path), "/tmp/mb-test-nvml-%ld.json", (long)getpid());
    return 0;
}

static int test_teardown(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(opened) / sizeof(opened[0]); i++) {
        mb_device_close(opened[i]);
        opened[i] = NULL;
    }
    unlink(state_path);
    char lock[300];
    snprintf(lock, sizeof(lock), "%s.lock", state_path);
    unlink(lock);
    return 0;
}

/* "H100-80GB:mig=on:state=<state_path>" and friends. */
static const char *with_state(const char *spec)
{
    static char buf[512];
    snprintf(buf, sizeof(buf), "%s:state=%s", spec, state_path);
    return buf;
}

/* ---- identity ---------------------------------------------------------------------------------
 */

static void check_identity(int legacy)
{
    use_fake(legacy, "H100-80GB:mig=on");
    struct mb_device *dev = open_ok("nvml:0");
    struct mb_device_info info;
    struct mb_error err;
    assert_int_equal(mb_device_info(dev, &info, &err), MB_OK);
    assert_string_equal(info.backend, "nvml");
    assert_false(info.emulated);
    assert_int_equal(info.index, 0);
    assert_string_equal(info.name, "NVIDIA H100 80GB HBM3");
    assert_string_equal(info.model, "H100-SXM5-80GB");
    assert_int_equal(strncmp(info.uuid, "GPU-", 4), 0);
    assert_non_null(strstr(info.driver_version, "fake"));
    assert_true(info.nvml_version[0] != '\0');
    assert_string_equal(info.pci_bus_id, "00000000:18:00.0");
    assert_true(info.mem_total_valid);
    assert_true(info.mem_total_bytes > 80ull * 1000 * 1000 * 1000);
    assert_true(info.mig_capable);
    uint32_t caps = mb_device_caps(dev);
    assert_true(caps & MB_CAP_GPU);
    assert_true(caps & MB_CAP_MIG);
    assert_true(caps & MB_CAP_POWER);
    assert_false(caps & MB_CAP_EMULATED); /* NVML cannot tell; the fake is a real NVML to us */
    close_dev(dev);
}

static void test_identity(void **state)
{
    (void)state;
    check_identity(0);
}

static void test_identity_legacy(void **state)
{
    (void)state;
    check_identity(1);
}

static void test_open_specs(void **state)
{
    (void)state;
    use_fake(0, "H100-80GB:mig=on;A100-40GB");
    struct mb_device *dev = open_ok("nvml:1");
    struct mb_device_info info;
    assert_int_equal(mb_device_info(dev, &info, NULL), MB_OK);
    assert_int_equal(info.index, 1);
    assert_string_equal(info.model, "A100-SXM4-40GB");
    char spec[160];
    snprintf(spec, sizeof(spec), "nvml:%s", info.uuid);
    close_dev(dev);

    dev = open_ok(spec);
    struct mb_device_info again;
    assert_int_equal(mb_device_info(dev, &again, NULL), MB_OK);
    assert_string_equal(again.uuid, info.uuid);
    assert_int_equal(again.index, 1);
    close_dev(dev);

    dev = open_ok("nvml");
    assert_int_equal(mb_device_info(dev, &info, NULL), MB_OK);
    assert_int_equal(info.index, 0);
    close_dev(dev);

    struct mb_error err;
    dev = NULL;
    assert_int_equal(mb_device_open("nvml:2", &dev, &err), MB_ENOTFOUND);
    assert_null(dev);
    assert_non_null(strstr(err.msg, "reports 2"));
    assert_int_equal(mb_device_open("nvml:GPU-00000000-0000-0000-0000-000000000000", &dev, &err),
                     MB_ENOTFOUND);
    assert_int_equal(mb_device_open("nvml:MIG-1234", &dev, &err), MB_EINVAL);
    assert_non_null(strstr(err.msg, "parent GPU"));
    assert_int_equal(mb_device_open("nvml:gpu0", &dev, &err), MB_EINVAL);
    assert_null(dev);
}

/* ---- telemetry and sensor ------------------------------------------------------------------- */

static void test_telemetry_matches_emulator(void **state)
{
    (void)state;
    const char *emu = "H100-80GB:clock=manual:load=0.5:energy0_mj=12345";
    use_fake(0, emu);
    struct mb_device *dev = open_ok("nvml:0");
    struct mb_telemetry t;
    assert_int_equal(mb_device_telemetry(dev, &t, NULL), MB_OK);
    close_dev(dev);

    char direct_spec[256];
    snprintf(direct_spec, sizeof(direct_spec), "emu:%s", emu);
    struct mb_device *direct = NULL;
    assert_int_equal(mb_device_open(direct_spec, &direct, NULL), MB_OK);
    struct mb_telemetry e;
    assert_int_equal(mb_device_telemetry(direct, &e, NULL), MB_OK);
    mb_device_close(direct);

    uint32_t want = MB_TEL_POWER | MB_TEL_POWER_AVG | MB_TEL_POWER_INSTANT | MB_TEL_ENERGY |
                    MB_TEL_MEM_USED | MB_TEL_CLOCK_SM | MB_TEL_CLOCK_MEM | MB_TEL_TEMP |
                    MB_TEL_POWER_LIMIT | MB_TEL_THROTTLE;
    assert_int_equal(t.valid & want, e.valid & want);
    assert_int_equal(t.valid & MB_TEL_ENERGY, MB_TEL_ENERGY);
    assert_int_equal(t.power_mw, e.power_mw);
    assert_int_equal(t.power_avg_mw, e.power_avg_mw);
    assert_int_equal(t.power_instant_mw, e.power_instant_mw);
    assert_int_equal(t.energy_mj, 12345);
    assert_int_equal(t.clock_sm_mhz, e.clock_sm_mhz);
    assert_int_equal(t.temp_c, e.temp_c);
    assert_int_equal(t.power_limit_mw, e.power_limit_mw);
    /* MIG is off here, so utilisation is a reading. */
    assert_int_equal(t.valid & MB_TEL_UTIL_GPU, e.valid & MB_TEL_UTIL_GPU);
    assert_true(t.t_ns > 0);
}

static void test_telemetry_mig_util_unsupported(void **state)
{
    (void)state;
    use_fake(0, "H100-80GB:mig=on");
    struct mb_device *dev = open_ok("nvml:0");
    struct mb_telemetry t;
    assert_int_equal(mb_device_telemetry(dev, &t, NULL), MB_OK);
    assert_false(t.valid & MB_TEL_UTIL_GPU);
    assert_int_equal(t.util_gpu_pct, 0);
    assert_true(t.valid & MB_TEL_POWER);
    close_dev(dev);
}

static void test_telemetry_unsupported_and_lost(void **state)
{
    (void)state;
    use_fake(0, "H100-80GB");
    setenv("MIGBENCH_FAKE_NVML_FAIL", "nvmlDeviceGetPowerUsage:*:3,nvmlDeviceGetTemperature:*:3",
           1);
    struct mb_device *dev = open_ok("nvml:0");
    struct mb_telemetry t;
    assert_int_equal(mb_device_telemetry(dev, &t, NULL), MB_OK);
    assert_false(t.valid & MB_TEL_POWER);
    assert_false(t.valid & MB_TEL_TEMP);
    assert_true(t.valid & MB_TEL_ENERGY);
    close_dev(dev);

    setenv("MIGBENCH_FAKE_NVML_FAIL", "nvmlDeviceGetTotalEnergyConsumption:2:15", 1);
    dev = open_ok("nvml:0");
    struct mb_error err;
    assert_int_equal(mb_device_telemetry(dev, &t, &err), MB_OK);
    assert_int_equal(mb_device_telemetry(dev, &t, &err), MB_EGONE);
    assert_non_null(strstr(err.msg, "lost"));
    close_dev(dev);
}

static void test_sensor_semantics(void **state)
{
    (void)state;
    struct mb_sensor_info s;
    use_fake(0, "H100-80GB");
    struct mb_device *dev = open_ok("nvml:0");
    assert_int_equal(mb_device_sensor(dev, &s, NULL), MB_OK);
    assert_int_equal(s.power_kind, MB_POWER_AVERAGED);
    assert_int_equal(s.power_avg_window_ms, 1000);
    assert_int_equal(s.power_update_period_ms, 100);
    assert_true(s.has_average);
    assert_true(s.has_instant);
    assert_true(s.has_energy_counter);
    assert_int_equal(s.energy_update_period_ms, 100);
    assert_int_equal(s.energy_wrap_mj, 0);
    assert_string_equal(s.scope, "board");
    assert_non_null(strstr(s.source, "literature"));
    /* A model the catalog knows: its sensor facts, named with their status. */
    assert_non_null(strstr(s.source, "catalog H100-SXM5-80GB (verified)"));
    close_dev(dev);

    use_fake(0, "A100-40GB");
    dev = open_ok("nvml:0");
    assert_int_equal(mb_device_sensor(dev, &s, NULL), MB_OK);
    assert_int_equal(s.power_kind, MB_POWER_INSTANT);
    assert_int_equal(s.power_avg_window_ms, 25);
    assert_false(s.has_average); /* GA100 has no 1 s average field */
    assert_int_equal(s.power_update_period_ms, 100);
    assert_non_null(strstr(s.source, "catalog A100-SXM4-40GB"));
    close_dev(dev);

    use_fake(0, "GH200");
    dev = open_ok("nvml:0");
    assert_int_equal(mb_device_sensor(dev, &s, NULL), MB_OK);
    assert_string_equal(s.scope, "module (GPU+CPU)");
    close_dev(dev);

    /* No power reading at all: "none", never a 0 W sensor. */
    use_fake(0, "H100-80GB");
    setenv("MIGBENCH_FAKE_NVML_FAIL", "nvmlDeviceGetPowerUsage:*:3", 1);
    dev = open_ok("nvml:0");
    assert_int_equal(mb_device_sensor(dev, &s, NULL), MB_OK);
    assert_int_equal(s.power_kind, MB_POWER_NONE);
    assert_int_equal(s.power_update_period_ms, 0);
    close_dev(dev);

    /* Legacy driver: no field values, so no separate instant/average readings. */
    use_fake(1, "H100-80GB");
    dev = open_ok("nvml:0");
    assert_int_equal(mb_device_sensor(dev, &s, NULL), MB_OK);
    assert_int_equal(s.power_kind, MB_POWER_AVERAGED);
    assert_false(s.has_average);
    assert_false(s.has_instant);
    assert_true(s.has_energy_counter);
    struct mb_telemetry t;
    assert_int_equal(mb_device_telemetry(dev, &t, NULL), MB_OK);
    assert_false(t.valid & (MB_TEL_POWER_AVG | MB_TEL_POWER_INSTANT));
    assert_true(t.valid & MB_TEL_POWER);
    assert_true(t.valid & MB_TEL_THROTTLE); /* via the ...ThrottleReasons fallback name */
    assert_true(t.valid & MB_TEL_MEM_USED); /* via nvmlDeviceGetMemoryInfo (v1) */
    close_dev(dev);
}

/* ---- profiles and placements ----------------------------------------------------------------- */

static void check_profiles_against_catalog(int legacy, const char *gpi_version)
{
    use_fake(legacy, "H100-80GB:mig=on");
    if (gpi_version)
        setenv("MIGBENCH_FAKE_NVML_GPI_VERSION", gpi_version, 1);
    struct mb_device *dev = open_ok("nvml:0");
    struct mb_device_profile ps[MB_MAX_PROFILES];
    size_t n = 0;
    struct mb_error err;
    int rc = mb_device_mig_profiles(dev, ps, MB_MAX_PROFILES, &n, &err);
    if (rc != MB_OK)
        fprintf(stderr, "%s\n", err.msg);
    assert_int_equal(rc, MB_OK);

    struct mb_catalog *cat = NULL;
    assert_int_equal(mb_catalog_create(&cat, NULL), MB_OK);
    const struct mb_gpu_model *m = NULL;
    assert_int_equal(mb_catalog_find(cat, "H100-80GB", &m, NULL), MB_OK);
    assert_int_equal(n, m->n_profiles);
    for (size_t i = 0; i < m->n_profiles; i++) {
        const struct mb_gi_profile *cp = &m->profiles[i];
        const struct mb_device_profile *dp = NULL;
        for (size_t k = 0; k < n; k++)
            if (strcmp(ps[k].name, cp->name) == 0)
                dp = &ps[k];
        if (!dp)
            fprintf(stderr, "profile %s missing\n", cp->name);
        assert_non_null(dp);
        assert_int_equal(dp->nvml_enum, cp->nvml_enum);
        assert_int_equal((int)dp->driver_id, cp->driver_id);
        assert_int_equal(dp->compute_slices, cp->compute_slices);
        assert_int_equal(dp->memory_slices, cp->memory_slices);
        assert_int_equal(dp->max_count, cp->max_count);
        assert_int_equal(dp->remaining, cp->max_count);
        assert_int_equal(dp->sm_count, cp->sm_count);
        assert_int_equal(dp->memory_mib, cp->memory_mib);
    }
    /* The two kinds of id: enum 0 is driver profile 19, enum 9 is 15, enum 4 is 0. */
    for (size_t k = 0; k < n; k++) {
        if (ps[k].nvml_enum == 0)
            assert_int_equal(ps[k].driver_id, 19);
        if (ps[k].nvml_enum == 9)
            assert_int_equal(ps[k].driver_id, 15);
        if (ps[k].nvml_enum == 4)
            assert_int_equal(ps[k].driver_id, 0);
    }
    mb_catalog_destroy(cat);
    close_dev(dev);
}

static void test_profiles_v3(void **state)
{
    (void)state;
    check_profiles_against_catalog(0, NULL);
}

static void test_profiles_v2_struct(void **state)
{
    (void)state;
    check_profiles_against_catalog(0, "2");
}

/* A V call that accepts no struct version we know: the unversioned call takes over. */
static void test_profiles_v_unusable(void **state)
{
    (void)state;
    check_profiles_against_catalog(0, "1");
}

static void test_profiles_legacy_unversioned(void **state)
{
    (void)state;
    check_profiles_against_catalog(1, NULL);
}

static void test_profiles_mig_off_and_pending(void **state)
{
    (void)state;
    /* A GPU the driver cannot reset (a passthrough VM): setting the mode leaves it pending. */
    use_fake(0, with_state("H100-80GB:reset=unavailable"));
    struct mb_device *dev = open_ok("nvml:0");
    struct mb_device_profile ps[MB_MAX_PROFILES];
    size_t n = 0;
    struct mb_error err;
    assert_int_equal(mb_device_mig_profiles(dev, ps, MB_MAX_PROFILES, &n, &err), MB_ESTATE);
    assert_non_null(strstr(err.msg, "MIG mode is disabled"));

    struct mb_mig_mode mode;
    assert_int_equal(mb_device_mig_mode(dev, &mode, NULL), MB_OK);
    assert_int_equal(mode.current, 0);
    assert_int_equal(mode.pending, 0);
    assert_int_equal(mb_device_mig_set_mode(dev, 1, &err), MB_OK);
    assert_int_equal(mb_device_mig_mode(dev, &mode, NULL), MB_OK);
    assert_int_equal(mode.current, 0);
    assert_int_equal(mode.pending, 1);
    close_dev(dev);

    /* A fresh open sees the pending mode; MIG operations explain the reset that is needed. */
    dev = open_ok("nvml:0");
    unsigned gi;
    assert_int_equal(mb_device_mig_create_gi(dev, 19, NULL, &gi, &err), MB_ERESET_REQUIRED);
    assert_non_null(strstr(err.msg, "pending a GPU reset"));
    assert_non_null(strstr(err.msg, "never resets"));
    assert_non_null(strstr(err.msg, "nvidia-smi -r -i 0"));
    close_dev(dev);
}

static void check_placements(int legacy)
{
    use_fake(legacy, "H100-80GB:mig=on");
    struct mb_device *dev = open_ok("nvml:0");
    struct mb_placement pl[MB_MAX_PLACEMENTS];
    size_t n = 0;
    assert_int_equal(mb_device_mig_placements(dev, 9, pl, MB_MAX_PLACEMENTS, &n, NULL), MB_OK);
    assert_int_equal(n, 2);
    assert_int_equal(pl[0].start, 0);
    assert_int_equal(pl[0].size, 4);
    assert_int_equal(pl[1].start, 4);
    assert_int_equal(pl[1].size, 4);
    assert_int_equal(mb_device_mig_placements(dev, 15, pl, MB_MAX_PLACEMENTS, &n, NULL), MB_OK);
    assert_int_equal(n, 4);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(pl[i].start, 2 * i);
        assert_int_equal(pl[i].size, 2);
    }
    assert_int_equal(mb_device_mig_placements(dev, 19, pl, MB_MAX_PLACEMENTS, &n, NULL), MB_OK);
    assert_int_equal(n, 7);
    struct mb_error err;
    assert_int_equal(mb_device_mig_placements(dev, 19, pl, 3, &n, &err), MB_ERANGE);
    assert_int_equal(mb_device_mig_placements(dev, 77, pl, MB_MAX_PLACEMENTS, &n, &err), MB_EINVAL);
    close_dev(dev);
}

static void test_placements(void **state)
{
    (void)state;
    check_placements(0);
}

static void test_placements_legacy(void **state)
{
    (void)state;
    check_placements(1);
}

/* ---- MIG create / list / destroy --------------------------------------------------------------
 */

static const struct mb_mig_instance *find_inst(const struct mb_mig_instance *v, size_t n,
                                               unsigned gi)
{
    for (size_t i = 0; i < n; i++)
        if (v[i].gi_id == gi)
            return &v[i];
    return NULL;
}

static void check_mig_lifecycle(int legacy)
{
    use_fake(legacy, "H100-80GB:mig=on");
    struct mb_device *dev = open_ok("nvml:0");
    struct mb_error err;
    unsigned gi3 = 99, gi1 = 99, ci = 99;
    struct mb_placement at = {4, 4};
    assert_int_equal(mb_device_mig_create_gi(dev, 9, &at, &gi3, &err), MB_OK);
    assert_int_equal(mb_device_mig_create_ci(dev, gi3, -1, &ci, &err), MB_OK);
    assert_int_equal(mb_device_mig_create_gi(dev, 19, NULL, &gi1, &err), MB_OK);
    assert_int_not_equal(gi1, gi3);

    struct mb_mig_instance v[MB_MAX_MIG_INSTANCES];
    size_t n = 0;
    int rc = mb_device_mig_instances(dev, v, MB_MAX_MIG_INSTANCES, &n, &err);
    if (rc != MB_OK)
        fprintf(stderr, "%s\n", err.msg);
    assert_int_equal(rc, MB_OK);
    assert_int_equal(n, 2);
    const struct mb_mig_instance *a = find_inst(v, n, gi3);
    assert_non_null(a);
    assert_true(a->has_ci);
    assert_int_equal(a->ci_id, ci);
    assert_int_equal(a->profile_id, 9);
    assert_string_equal(a->profile_name, "3g.40gb");
    assert_int_equal(a->placement.start, 4);
    assert_int_equal(a->placement.size, 4);
    assert_int_equal(a->ci_slices, 3);
    assert_int_equal(strncmp(a->uuid, "MIG-", 4), 0);
    assert_true(a->mem_valid);
    assert_true(a->mem_total_bytes > 39ull << 30);
    const struct mb_mig_instance *b = find_inst(v, n, gi1);
    assert_non_null(b);
    assert_false(b->has_ci);
    assert_string_equal(b->profile_name, "1g.10gb");
    assert_int_equal(b->uuid[0], '\0');
    assert_int_equal(b->placement.size, 1);

    /* Remaining capacity follows the instances. */
    struct mb_device_profile ps[MB_MAX_PROFILES];
    size_t np;
    assert_int_equal(mb_device_mig_profiles(dev, ps, MB_MAX_PROFILES, &np, NULL), MB_OK);
    for (size_t k = 0; k < np; k++)
        if (ps[k].driver_id == 9)
            assert_int_equal(ps[k].remaining, 0);

    /* Overlap and bad placements map to the NVML codes' statuses. */
    assert_int_equal(mb_device_mig_create_gi(dev, 9, &at, &gi1, &err), MB_ENORESOURCES);
    assert_non_null(strstr(err.msg, "no free placement"));
    struct mb_placement bad = {1, 4};
    assert_int_equal(mb_device_mig_create_gi(dev, 9, &bad, &gi1, &err), MB_EINVAL);

    /* A GI with a CI is in use; destroy in order. */
    assert_int_equal(mb_device_mig_destroy_gi(dev, gi3, &err), MB_EBUSY);
    assert_non_null(strstr(err.msg, "in use"));
    assert_int_equal(mb_device_mig_destroy_ci(dev, gi3, ci, &err), MB_OK);
    assert_int_equal(mb_device_mig_destroy_ci(dev, gi3, ci, &err), MB_ENOTFOUND);
    assert_int_equal(mb_device_mig_destroy_gi(dev, gi3, &err), MB_OK);
    assert_int_equal(mb_device_mig_destroy_gi(dev, gi3, &err), MB_ENOTFOUND);
    assert_int_equal(mb_device_mig_destroy_gi(dev, gi1, &err), MB_OK);
    assert_int_equal(mb_device_mig_instances(dev, v, MB_MAX_MIG_INSTANCES, &n, &err), MB_OK);
    assert_int_equal(n, 0);
    close_dev(dev);
}

static void test_mig_lifecycle(void **state)
{
    (void)state;
    check_mig_lifecycle(0);
}

static void test_mig_lifecycle_legacy(void **state)
{
    (void)state;
    check_mig_lifecycle(1);
}

static void test_mig_default_ci_double_memory(void **state)
{
    (void)state;
    use_fake(0, "H100-80GB:mig=on");
    struct mb_device *dev = open_ok("nvml:0");
    unsigned gi, ci;
    struct mb_error err;
    struct mb_placement at = {6, 2};
    assert_int_equal(mb_device_mig_create_gi(dev, 15, &at, &gi, &err), MB_OK);
    assert_int_equal(mb_device_mig_create_ci(dev, gi, -1, &ci, &err), MB_OK);
    struct mb_mig_instance v[MB_MAX_MIG_INSTANCES];
    size_t n;
    assert_int_equal(mb_device_mig_instances(dev, v, MB_MAX_MIG_INSTANCES, &n, &err), MB_OK);
    assert_int_equal(n, 1);
    assert_string_equal(v[0].profile_name, "1g.20gb");
    assert_true(v[0].has_ci);
    assert_int_equal(v[0].ci_slices, 1);
    /* An explicit CI profile that the GI does not offer. */
    unsigned ci2;
    assert_int_not_equal(mb_device_mig_create_ci(dev, gi, 3, &ci2, &err), MB_OK);
    assert_int_equal(mb_device_mig_create_ci(dev, 14, -1, &ci2, &err), MB_ENOTFOUND);
    close_dev(dev);
}

/* ---- error mapping -----------------------------------------------------------------------------
 */

static void expect_create_error(const char *code, int status, const char *text)
{
    use_fake(0, "H100-80GB:mig=on");
    char fail[128];
    snprintf(fail, sizeof(fail), "nvmlDeviceCreateGpuInstanceWithPlacement:1:%s", code);
    setenv("MIGBENCH_FAKE_NVML_FAIL", fail, 1);
    struct mb_device *dev = open_ok("nvml:0");
    struct mb_placement at = {0, 1};
    unsigned gi;
    struct mb_error err;
    mb_error_clear(&err);
    assert_int_equal(mb_device_mig_create_gi(dev, 19, &at, &gi, &err), status);
    if (!strstr(err.msg, text))
        fprintf(stderr, "message '%s' lacks '%s'\n", err.msg, text);
    assert_non_null(strstr(err.msg, text));
    assert_non_null(strstr(err.msg, "nvml:0"));
    /* Only the first call was injected: the second succeeds, nothing was damaged. */
    assert_int_equal(mb_device_mig_create_gi(dev, 19, &at, &gi, &err), MB_OK);
    close_dev(dev);
}

static void test_error_mapping(void **state)
{
    (void)state;
    expect_create_error("4", MB_EPERM, "run as root or grant the mig/config capability");
    expect_create_error("16", MB_ERESET_REQUIRED, "migbench never resets a GPU");
    expect_create_error("23", MB_ENORESOURCES, "no free placement");
    expect_create_error("19", MB_EBUSY, "in use by another process");
    expect_create_error("3", MB_EUNSUPPORTED, "not supported on this GPU");
    expect_create_error("15", MB_EGONE, "lost");
    expect_create_error("2", MB_EINVAL, "invalid argument");
    expect_create_error("999", MB_EDEVICE, "NVML error 999");
}

static void test_init_failures(void **state)
{
    (void)state;
    struct mb_device *dev = NULL;
    struct mb_error err;
    use_fake(0, "H100-80GB");
    setenv("MIGBENCH_FAKE_NVML_INIT_FAIL", "9", 1);
    assert_int_equal(mb_device_open("nvml:0", &dev, &err), MB_ELIB);
    assert_non_null(strstr(err.msg, "driver is not loaded"));
    assert_null(dev);
    setenv("MIGBENCH_FAKE_NVML_INIT_FAIL", "4", 1);
    assert_int_equal(mb_device_open("nvml:0", &dev, &err), MB_EPERM);
    unsetenv("MIGBENCH_FAKE_NVML_INIT_FAIL");
    setenv("MIGBENCH_FAKE_NVML_FAIL", "nvmlDeviceGetCount_v2:1:15", 1);
    assert_int_equal(mb_device_open("nvml:0", &dev, &err), MB_EGONE);
    assert_null(dev);
    /* The failed opens shut NVML down again: a clean open works. */
    unsetenv("MIGBENCH_FAKE_NVML_FAIL");
    dev = open_ok("nvml:0");
    close_dev(dev);
}

static void test_missing_library(void **state)
{
    (void)state;
    struct mb_device *dev = NULL;
    struct mb_error err;
    use_fake(0, "H100-80GB");
    setenv("MIGBENCH_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
    assert_int_equal(mb_device_open("nvml:0", &dev, &err), MB_ELIB);
    assert_non_null(strstr(err.msg, "/nonexistent/libnvidia-ml.so.1"));
    assert_null(dev);

    /* A library that is not NVML at all lacks the required symbols. */
    setenv("MIGBENCH_NVML_LIBRARY", "libm.so.6", 1);
    assert_int_equal(mb_device_open("nvml:0", &dev, &err), MB_ELIB);
    assert_non_null(strstr(err.msg, "nvmlInit_v2"));

    /* The default name, where this machine has no NVIDIA driver. */
    unsetenv("MIGBENCH_NVML_LIBRARY");
    void *real = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (real) {
        dlclose(real);
        return;
    }
    assert_int_equal(mb_device_open("nvml:0", &dev, &err), MB_ELIB);
    assert_non_null(strstr(err.msg, "libnvidia-ml.so.1 not found (no NVIDIA driver?)"));
}

/* ---- processes ---------------------------------------------------------------------------------
 */

static void check_processes_grow(int legacy)
{
    use_fake(legacy, "H100-80GB");
    char procs[2048] = "";
    for (unsigned i = 0; i < 20; i++) {
        char one[40];
        snprintf(one, sizeof(one), "%s%u:-1:-1:100", i ? "," : "", 4000 + i);
        strcat(procs, one);
    }
    setenv("MIGBENCH_FAKE_NVML_PROCS", procs, 1);
    struct mb_device *dev = open_ok("nvml:0");
    struct mb_process ps[MB_MAX_PROCESSES];
    size_t n = 0;
    struct mb_error err;
    /* 20 processes do not fit the backend's first buffer of 16: one retry. */
    assert_int_equal(mb_device_processes(dev, ps, MB_MAX_PROCESSES, &n, &err), MB_OK);
    assert_int_equal(n, 20);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(ps[i].pid, 4000 + i);
        assert_int_equal(ps[i].gi_id, -1);
        assert_int_equal(ps[i].ci_id, -1);
        assert_true(ps[i].used_mem_valid);
        assert_int_equal(ps[i].used_mem_bytes, 100ull << 20);
    }
    assert_string_equal(ps[0].name, "fake-proc-4000");
    assert_int_equal(mb_device_processes(dev, ps, 10, &n, &err), MB_ERANGE);
    close_dev(dev);

    /* The list grows by 10 between each sizing call and the next: the loop keeps up. */
    setenv("MIGBENCH_FAKE_NVML_PROC_GROW", "3", 1);
    dev = open_ok("nvml:0");
    assert_int_equal(mb_device_processes(dev, ps, MB_MAX_PROCESSES, &n, &err), MB_OK);
    assert_int_equal(n, 50);
    close_dev(dev);
}

static void test_processes_retry(void **state)
{
    (void)state;
    check_processes_grow(0);
}

static void test_processes_retry_legacy(void **state)
{
    (void)state;
    check_processes_grow(1);
}

/*
 * Four processes on two MIG instances: every PID, instance id and memory figure must come back,
 * from the parent's list (one array of nvmlProcessInfo_t read at NVIDIA's 24-byte stride) and
 * from each MIG device's. A stride that differs from the library's garbles every entry after
 * the first (tests/nvidia runs this against a fake built from NVIDIA's own nvml.h).
 */
static void test_processes_on_mig(void **state)
{
    (void)state;
    use_fake(0, with_state("H100-80GB:mig=on"));
    struct mb_device *dev = open_ok("nvml:0");
    unsigned gi[2], ci[2];
    for (int k = 0; k < 2; k++) {
        assert_int_equal(mb_device_mig_create_gi(dev, 14, NULL, &gi[k], NULL), MB_OK);
        assert_int_equal(mb_device_mig_create_ci(dev, gi[k], -1, &ci[k], NULL), MB_OK);
    }
    close_dev(dev);

    char procs[128];
    snprintf(procs, sizeof(procs), "777:%u:%u:256,778:%u:%u:300,779:%u:%u:411,780:%u:%u:512", gi[0],
             ci[0], gi[0], ci[0], gi[1], ci[1], gi[1], ci[1]);
    setenv("MIGBENCH_FAKE_NVML_PROCS", procs, 1);
    dev = open_ok("nvml:0");
    struct mb_process ps[MB_MAX_PROCESSES];
    size_t n = 0;
    assert_int_equal(mb_device_processes(dev, ps, MB_MAX_PROCESSES, &n, NULL), MB_OK);
    assert_int_equal(n, 4);
    const unsigned pids[4] = {777, 778, 779, 780};
    const unsigned long long mib[4] = {256, 300, 411, 512};
    for (size_t want = 0; want < 4; want++) {
        size_t k = 0;
        while (k < n && ps[k].pid != pids[want])
            k++;
        assert_true(k < n);
        assert_int_equal(ps[k].gi_id, (int)gi[want / 2]);
        assert_int_equal(ps[k].ci_id, (int)ci[want / 2]);
        assert_true(ps[k].used_mem_valid);
        assert_int_equal(ps[k].used_mem_bytes, mib[want] << 20);
    }

    struct mb_mig_instance v[MB_MAX_MIG_INSTANCES];
    assert_int_equal(mb_device_mig_instances(dev, v, MB_MAX_MIG_INSTANCES, &n, NULL), MB_OK);
    assert_int_equal(n, 2);
    for (size_t k = 0; k < n; k++)
        assert_true(v[k].mem_used_bytes >= (v[k].gi_id == gi[0] ? 556ull : 923ull) << 20);

    /* A process on the instance keeps it in use. */
    struct mb_error err;
    assert_int_equal(mb_device_mig_destroy_ci(dev, gi[0], ci[0], &err), MB_EBUSY);
    close_dev(dev);
}

/* ---- MIG-mode switch --------------------------------------------------------------------------
 */

static void expect_mode(struct mb_device *dev, int current, int pending)
{
    struct mb_mig_mode mode;
    assert_int_equal(mb_device_mig_mode(dev, &mode, NULL), MB_OK);
    assert_int_equal(mode.current, current);
    assert_int_equal(mode.pending, pending);
}

/* An idle GPU: the driver activates the mode at once, both ways. */
static void test_switch_mode_success(void **state)
{
    (void)state;
    use_fake(0, with_state("H100-80GB"));
    struct mb_device *dev = open_ok("nvml:0");
    struct mb_error err;
    mb_error_clear(&err);
    assert_int_equal(mb_device_mig_switch_mode(dev, 1, &err), MB_OK);
    expect_mode(dev, 1, 1);
    unsigned gi, ci;
    assert_int_equal(mb_device_mig_create_gi(dev, 19, NULL, &gi, &err), MB_OK);
    assert_int_equal(mb_device_mig_create_ci(dev, gi, -1, &ci, &err), MB_OK);
    /* Instances are in the way of disabling: NVML refuses to stage it. */
    assert_int_equal(mb_device_mig_switch_mode(dev, 0, &err), MB_EBUSY);
    expect_mode(dev, 1, 1);
    assert_int_equal(mb_device_mig_destroy_ci(dev, gi, ci, &err), MB_OK);
    assert_int_equal(mb_device_mig_destroy_gi(dev, gi, &err), MB_OK);
    assert_int_equal(mb_device_mig_switch_mode(dev, 0, &err), MB_OK);
    expect_mode(dev, 0, 0);
    close_dev(dev);
}

/* A compute process on the GPU: IN_USE, named with its PID; the mode is left pending. */
static void test_switch_mode_busy(void **state)
{
    (void)state;
    use_fake(0, with_state("H100-80GB"));
    setenv("MIGBENCH_FAKE_NVML_PROCS", "4321:-1:-1:512", 1);
    struct mb_device *dev = open_ok("nvml:0");
    struct mb_error err;
    mb_error_clear(&err);
    assert_int_equal(mb_device_mig_switch_mode(dev, 1, &err), MB_EBUSY);
    assert_non_null(strstr(err.msg, "in use"));
    assert_non_null(strstr(err.msg, "4321"));
    assert_non_null(strstr(err.msg, "stop them"));
    expect_mode(dev, 0, 1);
    close_dev(dev);

    /* Held by a client that is not a compute process: no PID to name, and the message says so. */
    use_fake(0, "H100-80GB:busy=99");
    dev = open_ok("nvml:0");
    assert_int_equal(mb_device_mig_switch_mode(dev, 1, &err), MB_EBUSY);
    assert_non_null(strstr(err.msg, "not a compute process"));
    close_dev(dev);
}

/* A passthrough VM: RESET_REQUIRED, with what the user must do. */
static void test_switch_mode_reset_required(void **state)
{
    (void)state;
    use_fake(0, with_state("H100-80GB:reset=unavailable"));
    struct mb_device *dev = open_ok("nvml:0");
    struct mb_error err;
    mb_error_clear(&err);
    assert_int_equal(mb_device_mig_switch_mode(dev, 1, &err), MB_ERESET_REQUIRED);
    assert_non_null(strstr(err.msg, "reset"));
    assert_non_null(strstr(err.msg, "reboot"));
    expect_mode(dev, 0, 1);
    /* Staging the original mode again leaves the GPU as it was found. */
    assert_int_equal(mb_device_mig_set_mode(dev, 0, &err), MB_OK);
    expect_mode(dev, 0, 0);
    close_dev(dev);

    /* No permission is the function's own answer, mapped as such. */
    use_fake(0, "H100-80GB");
    setenv("MIGBENCH_FAKE_NVML_FAIL", "nvmlDeviceSetMigMode:1:4", 1);
    dev = open_ok("nvml:0");
    assert_int_equal(mb_device_mig_switch_mode(dev, 1, &err), MB_EPERM);
    assert_non_null(strstr(err.msg, "root"));
    expect_mode(dev, 0, 0);
    close_dev(dev);
}

/* nvml:all and nvml:0,1 expand through the driver's GPU count. */
static void test_spec_expand(void **state)
{
    (void)state;
    use_fake(0, "H100-80GB;H100-80GB;A100-40GB");
    struct mb_device_spec_list l = {0};
    struct mb_error err;
    assert_int_equal(mb_device_spec_expand("nvml:all", &l, &err), MB_OK);
    assert_int_equal(l.n, 3);
    assert_string_equal(l.specs[0], "nvml:0");
    assert_string_equal(l.specs[2], "nvml:2");
    mb_device_spec_list_free(&l);
    assert_int_equal(mb_device_spec_expand("nvml:2,0", &l, &err), MB_OK);
    assert_int_equal(l.n, 2);
    assert_string_equal(l.specs[0], "nvml:2");
    assert_string_equal(l.specs[1], "nvml:0");
    mb_device_spec_list_free(&l);
    /* One GPU, or none named (GPU 0): the spec as given. */
    assert_int_equal(mb_device_spec_expand("nvml:GPU-x", &l, &err), MB_OK);
    assert_int_equal(l.n, 1);
    assert_string_equal(l.specs[0], "nvml:GPU-x");
    mb_device_spec_list_free(&l);
    assert_int_equal(mb_device_spec_expand("nvml:", &l, &err), MB_OK);
    assert_string_equal(l.specs[0], "nvml:");
    mb_device_spec_list_free(&l);
    assert_int_equal(mb_device_spec_expand("nvml:0,,1", &l, &err), MB_EINVAL);
    assert_non_null(strstr(err.msg, "nvml:0,,1"));
    assert_int_equal(mb_device_spec_expand("nvml:1,1", &l, &err), MB_EINVAL);
    assert_non_null(strstr(err.msg, "twice"));
    assert_int_equal(l.n, 0);

    setenv("MIGBENCH_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
    assert_int_equal(mb_device_spec_expand("nvml:all", &l, &err), MB_ELIB);
    assert_int_equal(l.n, 0);
}

/* ---- GPM ---------------------------------------------------------------------------------------
 */

static void test_gpm(void **state)
{
    (void)state;
    use_fake(0, with_state("H100-80GB:mig=on"));
    struct mb_device *dev = open_ok("nvml:0");
    unsigned gi, ci;
    assert_int_equal(mb_device_mig_create_gi(dev, 9, NULL, &gi, NULL), MB_OK);
    assert_int_equal(mb_device_mig_create_ci(dev, gi, -1, &ci, NULL), MB_OK);
    struct mb_mig_activity a;
    struct mb_error err;
    /* The first sample opens the interval: nothing to report yet. */
    int rc = mb_device_mig_activity(dev, gi, &a, &err);
    if (rc != MB_OK)
        fprintf(stderr, "%s\n", err.msg);
    assert_int_equal(rc, MB_OK);
    assert_int_equal(a.valid, 0);
    assert_int_equal(mb_device_mig_activity(dev, gi, &a, &err), MB_OK);

    /* What the backend reports is what the emulator's activity says for this GI. */
    struct mb_device *direct = NULL;
    char spec[600];
    snprintf(spec, sizeof(spec), "emu:%s", with_state("H100-80GB:mig=on"));
    assert_int_equal(mb_device_open(spec, &direct, NULL), MB_OK);
    struct mb_mig_activity e;
    assert_int_equal(mb_device_mig_activity(direct, gi, &e, NULL), MB_OK);
    assert_int_equal(a.valid, e.valid);
    if (a.valid & MB_ACT_SM_UTIL)
        assert_true(a.sm_util_pct >= 0.0 && a.sm_util_pct <= 100.0);
    mb_device_close(direct);

    assert_int_equal(mb_device_mig_activity(dev, 13, &a, &err), MB_ENOTFOUND);
    close_dev(dev);

    use_fake(0, "A100-40GB:mig=on");
    dev = open_ok("nvml:0");
    assert_int_equal(mb_device_mig_activity(dev, 0, &a, &err), MB_EUNSUPPORTED);
    assert_non_null(strstr(err.msg, "GPM"));
    close_dev(dev);

    use_fake(1, "H100-80GB:mig=on");
    dev = open_ok("nvml:0");
    assert_int_equal(mb_device_mig_activity(dev, 0, &a, &err), MB_EUNSUPPORTED);
    assert_non_null(strstr(err.msg, "lacks"));
    close_dev(dev);
}

/* ---- CUDA_VISIBLE_DEVICES -------------------------------------------------------------------
 */

/* A MIG UUID on the second GPU resolves to that GPU (by UUID) and its instance. */
static void test_resolve_visible(void **state)
{
    (void)state;
    char spec[600];
    snprintf(spec, sizeof(spec), "H100-80GB:mig=on:index=0;H100-80GB:mig=on:index=1:state=%s",
             state_path);
    use_fake(0, spec);
    struct mb_device *dev = open_ok("nvml:1");
    unsigned gi, ci;
    assert_int_equal(mb_device_mig_create_gi(dev, 9, NULL, &gi, NULL), MB_OK);
    assert_int_equal(mb_device_mig_create_ci(dev, gi, -1, &ci, NULL), MB_OK);
    struct mb_mig_instance inst[MB_MAX_MIG_INSTANCES];
    size_t n = 0;
    assert_int_equal(mb_device_mig_instances(dev, inst, MB_MAX_MIG_INSTANCES, &n, NULL), MB_OK);
    assert_int_equal(n, 1);
    assert_int_equal(strncmp(inst[0].uuid, "MIG-", 4), 0);
    struct mb_device_info info1, info0;
    assert_int_equal(mb_device_info(dev, &info1, NULL), MB_OK);
    struct mb_device *dev0 = open_ok("nvml:0");
    assert_int_equal(mb_device_info(dev0, &info0, NULL), MB_OK);
    assert_string_not_equal(info0.uuid, info1.uuid);

    struct mb_visible v;
    struct mb_error err;
    char want_spec[200];
    snprintf(want_spec, sizeof(want_spec), "nvml:%s", info1.uuid);
    assert_int_equal(mb_device_resolve_visible("nvml:0", inst[0].uuid, &v, &err), MB_OK);
    assert_true(v.resolved);
    assert_true(v.has_instance);
    assert_string_equal(v.spec, want_spec);
    assert_string_equal(v.gpu_uuid, info1.uuid);
    assert_int_equal(v.instance.gi_id, gi);
    assert_int_equal(v.instance.ci_id, ci);
    assert_string_equal(v.instance.profile_name, "3g.40gb");
    assert_string_equal(v.instance.uuid, inst[0].uuid);

    char legacy[256];
    snprintf(legacy, sizeof(legacy), "MIG-%s/%u/%u", info1.uuid, gi, ci);
    assert_int_equal(mb_device_resolve_visible("nvml:0", legacy, &v, &err), MB_OK);
    assert_string_equal(v.spec, want_spec);
    assert_true(v.has_instance);
    assert_string_equal(v.instance.uuid, inst[0].uuid);

    /* The GPU that was asked for already holds it: the spec stays. */
    assert_int_equal(mb_device_resolve_visible("nvml:1", inst[0].uuid, &v, &err), MB_OK);
    assert_string_equal(v.spec, "nvml:1");
    assert_int_equal(mb_device_resolve_visible("nvml:0", info1.uuid, &v, &err), MB_OK);
    assert_false(v.has_instance);
    assert_string_equal(v.spec, want_spec);

    assert_int_equal(
        mb_device_resolve_visible("nvml:0", "MIG-11111111-2222-3333-4444-555555555555", &v, &err),
        MB_ENOTFOUND);
    assert_non_null(strstr(err.msg, "MIG-11111111"));
    assert_false(v.resolved);
    close_dev(dev0);
    close_dev(dev);

    /* An old driver cannot name a MIG device's GPU: the GPU that holds it still resolves it,
     * another GPU says what the library lacks rather than guess. */
    use_fake(1, spec);
    dev = open_ok("nvml:1");
    assert_int_equal(mb_device_resolve_visible("nvml:1", inst[0].uuid, &v, &err), MB_OK);
    assert_true(v.has_instance);
    assert_int_equal(mb_device_resolve_visible("nvml:0", inst[0].uuid, &v, &err), MB_EUNSUPPORTED);
    assert_non_null(strstr(err.msg, "nvmlDeviceGetDeviceHandleFromMigDeviceHandle"));
    close_dev(dev);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_identity, test_teardown),
        cmocka_unit_test_teardown(test_identity_legacy, test_teardown),
        cmocka_unit_test_teardown(test_open_specs, test_teardown),
        cmocka_unit_test_teardown(test_telemetry_matches_emulator, test_teardown),
        cmocka_unit_test_teardown(test_telemetry_mig_util_unsupported, test_teardown),
        cmocka_unit_test_teardown(test_telemetry_unsupported_and_lost, test_teardown),
        cmocka_unit_test_teardown(test_sensor_semantics, test_teardown),
        cmocka_unit_test_teardown(test_profiles_v3, test_teardown),
        cmocka_unit_test_teardown(test_profiles_v2_struct, test_teardown),
        cmocka_unit_test_teardown(test_profiles_v_unusable, test_teardown),
        cmocka_unit_test_teardown(test_profiles_legacy_unversioned, test_teardown),
        cmocka_unit_test_teardown(test_profiles_mig_off_and_pending, test_teardown),
        cmocka_unit_test_teardown(test_placements, test_teardown),
        cmocka_unit_test_teardown(test_placements_legacy, test_teardown),
        cmocka_unit_test_teardown(test_mig_lifecycle, test_teardown),
        cmocka_unit_test_teardown(test_mig_lifecycle_legacy, test_teardown),
        cmocka_unit_test_teardown(test_mig_default_ci_double_memory, test_teardown),
        cmocka_unit_test_teardown(test_error_mapping, test_teardown),
        cmocka_unit_test_teardown(test_init_failures, test_teardown),
        cmocka_unit_test_teardown(test_missing_library, test_teardown),
        cmocka_unit_test_teardown(test_switch_mode_success, test_teardown),
        cmocka_unit_test_teardown(test_switch_mode_busy, test_teardown),
        cmocka_unit_test_teardown(test_switch_mode_reset_required, test_teardown),
        cmocka_unit_test_teardown(test_spec_expand, test_teardown),
        cmocka_unit_test_teardown(test_processes_retry, test_teardown),
        cmocka_unit_test_teardown(test_processes_retry_legacy, test_teardown),
        cmocka_unit_test_teardown(test_processes_on_mig, test_teardown),
        cmocka_unit_test_teardown(test_gpm, test_teardown),
        cmocka_unit_test_teardown(test_resolve_visible, test_teardown),
    };
    return cmocka_run_group_tests(tests, group_setup, NULL);
}
