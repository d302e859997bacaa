/* SPDX-License-Identifier: Apache-2.0 */
/* The host backend against a fake powercap and procfs tree: RAPL wrap, utilisation, partitions. */
#define _GNU_SOURCE /* sched_getaffinity */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "migbench/device.h"

#define MAX_RANGE 262143328850ull

static char root[64];

static void put(const char *rel, const char *text)
{
    char path[256];
    snprintf(path, sizeof(path), "%s/%s", root, rel);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void put_u64(const char *rel, unsigned long long v)
{
    char buf[32];
    snprintf(buf, sizeof(buf), "%llu\n", v);
    put(rel, buf);
}

static void mk(const char *rel)
{
    char path[256];
    snprintf(path, sizeof(path), "%s/%s", root, rel);
    assert_int_equal(mkdir(path, 0755), 0);
}

static int setup(void **state)
{
    (void)state;
    snprintf(root, sizeof(root), "/tmp/mb-test-host-XXXXXX");
    if (!mkdtemp(root))
        return -1;
    mk("powercap");
    mk("powercap/intel-rapl:0");
    mk("powercap/intel-rapl:0:0");
    mk("powercap/intel-rapl:0:1");
    put("powercap/intel-rapl:0/name", "package-0\n");
    put_u64("powercap/intel-rapl:0/max_energy_range_uj", MAX_RANGE);
    put_u64("powercap/intel-rapl:0/energy_uj", MAX_RANGE - 5000000); /* 5 J before the wrap */
    put("powercap/intel-rapl:0:0/name", "core\n");
    put_u64("powercap/intel-rapl:0:0/max_energy_range_uj", MAX_RANGE);
    put_u64("powercap/intel-rapl:0:0/energy_uj", 123);
    put("powercap/intel-rapl:0:1/name", "dram\n");
    put_u64("powercap/intel-rapl:0:1/max_energy_range_uj", 65532610987ull);
    put_u64("powercap/intel-rapl:0:1/energy_uj", 1000000);
    mk("proc");
    put("proc/stat", "cpu  100 0 100 800 0 0 0 0 0 0\ncpu0 1 2 3 4\n");
    put("proc/meminfo", "MemTotal:        1000 kB\nMemFree:          100 kB\n"
                        "MemAvailable:     400 kB\n");
    put("proc/cpuinfo", "processor\t: 0\nmodel name\t: Fake CPU 9000 @ 1.00GHz\n");
    mk("empty");
    return 0;
}

static void rm_tree(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    char path[512];
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        struct stat sb;
        if (lstat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
            rm_tree(path);
        else
            unlink(path);
    }
    closedir(d);
    rmdir(dir);
}

static int teardown(void **state)
{
    (void)state;
    rm_tree(root);
    return 0;
}

static struct mb_device *open_fake(const char *powercap)
{
    char spec[256];
    snprintf(spec, sizeof(spec), "host:powercap=%s/%s:proc=%s/proc", root, powercap, root);
    struct mb_device *dev = NULL;
    struct mb_error err;
    if (mb_device_open(spec, &dev, &err) != MB_OK)
        fail_msg("open %s: %s", spec, err.msg);
    return dev;
}

static void test_rapl_wrap(void **state)
{
    (void)state;
    struct mb_device *dev = open_fake("powercap");
    struct mb_error err;
    struct mb_sensor_info s;
    assert_int_equal(mb_device_sensor(dev, &s, &err), MB_OK);
    assert_true(s.has_energy_counter);
    assert_int_equal(s.energy_wrap_mj, 0); /* unwrapped by the backend */
    assert_string_equal(s.scope, "package+dram");
    assert_int_equal(s.power_kind, MB_POWER_AVERAGED);

    struct mb_telemetry t0, t1, t2;
    assert_int_equal(mb_device_telemetry(dev, &t0, &err), MB_OK);
    assert_true(t0.valid & MB_TEL_ENERGY);
    assert_true(t0.valid & MB_TEL_ENERGY_DRAM);
    assert_int_equal(t0.energy_mj, (MAX_RANGE - 5000000) / 1000);
    assert_int_equal(t0.energy_dram_mj, 1000);

    /* The package counter wraps: 5 J to the end of the range, then 3 J more. */
    put_u64("powercap/intel-rapl:0/energy_uj", 3000000);
    put_u64("powercap/intel-rapl:0:1/energy_uj", 3500000);
    assert_int_equal(mb_device_telemetry(dev, &t1, &err), MB_OK);
    assert_int_equal(t1.energy_mj - t0.energy_mj, 8000);
    assert_int_equal(t1.energy_dram_mj - t0.energy_dram_mj, 2500);
    /* The core subdomain is inside the package and never added. */
    put_u64("powercap/intel-rapl:0:0/energy_uj", 999999999);
    put_u64("powercap/intel-rapl:0/energy_uj", 4000000);
    assert_int_equal(mb_device_telemetry(dev, &t2, &err), MB_OK);
    assert_int_equal(t2.energy_mj - t1.energy_mj, 1000);

    struct mb_device_info info;
    assert_int_equal(mb_device_info(dev, &info, &err), MB_OK);
    assert_string_equal(info.backend, "host");
    assert_false(info.emulated);
    assert_string_equal(info.name, "Fake CPU 9000 @ 1.00GHz");
    assert_true(info.mem_total_valid);
    assert_int_equal(info.mem_total_bytes, 1000 * 1024);
    assert_true(info.cpu_count >= 1);
    assert_false(info.mig_capable);
    /* A CPU with RAPL: power and a counter, read as deltas; no GPU, no MIG. */
    uint32_t caps = mb_device_caps(dev);
    assert_int_equal(
        caps &
            (MB_CAP_POWER | MB_CAP_ENERGY_COUNTER | MB_CAP_DELTA_TELEMETRY | MB_CAP_CPU_PARTITIONS),
        MB_CAP_POWER | MB_CAP_ENERGY_COUNTER | MB_CAP_DELTA_TELEMETRY | MB_CAP_CPU_PARTITIONS);
    assert_false(caps & (MB_CAP_GPU | MB_CAP_MIG | MB_CAP_EMULATED | MB_CAP_MPS));
    struct mb_mig_mode m;
    assert_int_equal(mb_device_mig_mode(dev, &m, &err), MB_EUNSUPPORTED);
    mb_device_close(dev);
}

static void test_util_and_memory(void **state)
{
    (void)state;
    put("proc/stat", "cpu  100 0 100 800 0 0 0 0 0 0\n");
    struct mb_device *dev = open_fake("powercap");
    struct mb_error err;
    struct mb_telemetry t;
    /* 1000 more jiffies, 800 of them idle or iowait: 20 % busy. */
    put("proc/stat", "cpu  200 0 200 1500 100 0 0 0 0 0\n");
    assert_int_equal(mb_device_telemetry(dev, &t, &err), MB_OK);
    assert_true(t.valid & MB_TEL_UTIL_GPU);
    assert_int_equal(t.util_gpu_pct, 20);
    assert_true(t.valid & MB_TEL_MEM_USED);
    assert_int_equal(t.mem_used_bytes, 600 * 1024);
    /* What a CPU does not have is not reported. */
    assert_false(t.valid &
                 (MB_TEL_CLOCK_SM | MB_TEL_TEMP | MB_TEL_UTIL_MEM | MB_TEL_POWER_INSTANT));
    mb_device_close(dev);
}

static void test_no_powercap(void **state)
{
    (void)state;
    struct mb_error err;
    for (int k = 0; k < 2; k++) {
        struct mb_device *dev = open_fake(k ? "empty" : "nonexistent");
        struct mb_sensor_info s;
        assert_int_equal(mb_device_sensor(dev, &s, &err), MB_OK);
        assert_int_equal(s.power_kind, MB_POWER_NONE);
        assert_false(s.has_energy_counter);
        assert_non_null(strstr(s.source, k ? "no powercap RAPL domains" : "no powercap"));
        struct mb_telemetry t;
        assert_int_equal(mb_device_telemetry(dev, &t, &err), MB_OK);
        assert_false(t.valid & (MB_TEL_ENERGY | MB_TEL_POWER | MB_TEL_ENERGY_DRAM));
        assert_false(mb_device_caps(dev) & (MB_CAP_POWER | MB_CAP_ENERGY_COUNTER));
        mb_device_close(dev);
    }
}

static void test_partitions(void **state)
{
    (void)state;
    cpu_set_t set;
    CPU_ZERO(&set);
    assert_int_equal(sched_getaffinity(0, sizeof(set), &set), 0);
    unsigned count = (unsigned)CPU_COUNT(&set);
    struct mb_device *dev = open_fake("powercap");
    struct mb_error err;
    struct mb_cpuset *sets = calloc(count + 1, sizeof(*sets));
    assert_non_null(sets);
    assert_int_equal(mb_device_cpu_partitions(dev, 0, sets, &err), MB_EINVAL);
    assert_int_equal(mb_device_cpu_partitions(dev, count + 1, sets, &err), MB_ENORESOURCES);
    assert_non_null(strstr(err.msg, "partitions"));
    for (unsigned n = 1; n <= count && n <= 8; n++) {
        assert_int_equal(mb_device_cpu_partitions(dev, n, sets, &err), MB_OK);
        cpu_set_t seen;
        CPU_ZERO(&seen);
        unsigned total = 0, lo = count, hi = 0;
        for (unsigned i = 0; i < n; i++) {
            if (sets[i].n < lo)
                lo = sets[i].n;
            if (sets[i].n > hi)
                hi = sets[i].n;
            for (unsigned k = 0; k < sets[i].n; k++) {
                unsigned c = sets[i].cpus[k];
                assert_true(CPU_ISSET(c, &set));   /* allowed to run there */
                assert_false(CPU_ISSET(c, &seen)); /* disjoint */
                CPU_SET(c, &seen);
                total++;
            }
        }
        assert_int_equal(total, count); /* every CPU used */
        assert_true(hi - lo <= 1);      /* as even as possible */
    }
    free(sets);
    mb_device_close(dev);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rapl_wrap),
        cmocka_unit_test(test_util_and_memory),
        cmocka_unit_test(test_no_powercap),
        cmocka_unit_test(test_partitions),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
