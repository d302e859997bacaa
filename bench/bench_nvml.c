/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Cost of the nvml backend's own work, measured through the fake libnvidia-ml.so.1 (the
 * emulator answers behind it, in memory): open + close (dlopen, symbol table, nvmlInit, catalog
 * lookup), one telemetry reading (about a dozen NVML calls), the profile walk with remaining
 * capacity, and the instance listing of a GPU with three MIG instances. A real driver's calls
 * cost more than the fake's; these figures bound migbench's share, not NVML's.
 *
 * Run: MB_BINARY_DIR=build ./build/bench_nvml  (finds build/tests/fake-nvml/libnvidia-ml.so.1)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "migbench/clock.h"
#include "migbench/device.h"

static double now_s(void)
{
    return (double)mb_clock_monotonic_ns() * 1e-9;
}

static void report(const char *label, int n, double dt)
{
    printf("%-36s %7d calls %8.3f s %9.2f us/call\n", label, n, dt, dt * 1e6 / n);
}

static int fail(const struct mb_error *err)
{
    fprintf(stderr, "bench_nvml: %s\n", err->msg);
    return 1;
}

int main(int argc, char **argv)
{
    int scale = argc > 1 ? atoi(argv[1]) : 1;
    if (scale < 1)
        scale = 1;
    const char *bin = getenv("MB_BINARY_DIR");
    char path[1024];
    snprintf(path, sizeof(path), "%s/tests/fake-nvml/libnvidia-ml.so.1", bin ? bin : "build");
    setenv("MIGBENCH_NVML_LIBRARY", path, 1);
    setenv("MIGBENCH_FAKE_NVML_SPEC", "H100-80GB:mig=on", 1);

    struct mb_error err;
    struct mb_device *dev = NULL;
    int n = 200 * scale;
    double t0 = now_s();
    for (int i = 0; i < n; i++) {
        if (mb_device_open("nvml:0", &dev, &err) != MB_OK)
            return fail(&err);
        mb_device_close(dev);
    }
    report("open + close", n, now_s() - t0);

    if (mb_device_open("nvml:0", &dev, &err) != MB_OK)
        return fail(&err);
    struct mb_telemetry t;
    n = 20000 * scale;
    t0 = now_s();
    for (int i = 0; i < n; i++)
        if (mb_device_telemetry(dev, &t, &err) != MB_OK)
            return fail(&err);
    report("telemetry", n, now_s() - t0);

    struct mb_device_profile ps[MB_MAX_PROFILES];
    size_t np;
    n = 2000 * scale;
    t0 = now_s();
    for (int i = 0; i < n; i++)
        if (mb_device_mig_profiles(dev, ps, MB_MAX_PROFILES, &np, &err) != MB_OK)
            return fail(&err);
    report("profiles (cached walk + capacity)", n, now_s() - t0);

    unsigned gi, ci;
    static const unsigned ids[3] = {9, 14, 19};
    for (int k = 0; k < 3; k++)
        if (mb_device_mig_create_gi(dev, ids[k], NULL, &gi, &err) != MB_OK ||
            mb_device_mig_create_ci(dev, gi, -1, &ci, &err) != MB_OK)
            return fail(&err);
    struct mb_mig_instance v[MB_MAX_MIG_INSTANCES];
    size_t ni;
    n = 500 * scale;
    t0 = now_s();
    for (int i = 0; i < n; i++)
        if (mb_device_mig_instances(dev, v, MB_MAX_MIG_INSTANCES, &ni, &err) != MB_OK)
            return fail(&err);
    report("instances (3 GI+CI)", n, now_s() - t0);
    mb_device_close(dev);
    return 0;
}
