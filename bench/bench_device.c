/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Cost of one device call, for the meter's sampling budget: emu telemetry in memory and with a
 * state file (flock + read + parse per call), emu MIG create/destroy with a state file, and host
 * telemetry. Prints one line per case: calls, total seconds, microseconds per call.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "migbench/clock.h"
#include "migbench/device.h"

static double now_s(void)
{
    return (double)mb_clock_monotonic_ns() * 1e-9;
}

static int bench_telemetry(const char *label, const char *spec, int n)
{
    struct mb_device *dev = NULL;
    struct mb_error err;
    if (mb_device_open(spec, &dev, &err) != MB_OK) {
        fprintf(stderr, "bench_device: %s: %s\n", spec, err.msg);
        return 1;
    }
    struct mb_telemetry t;
    double t0 = now_s();
    for (int i = 0; i < n; i++) {
        if (mb_device_telemetry(dev, &t, &err) != MB_OK) {
            fprintf(stderr, "bench_device: %s: %s\n", spec, err.msg);
            mb_device_close(dev);
            return 1;
        }
    }
    double dt = now_s() - t0;
    printf("%-34s %7d calls %8.3f s %9.2f us/call\n", label, n, dt, dt * 1e6 / n);
    mb_device_close(dev);
    return 0;
}

static int bench_mig(const char *spec, int n)
{
    struct mb_device *dev = NULL;
    struct mb_error err;
    if (mb_device_open(spec, &dev, &err) != MB_OK) {
        fprintf(stderr, "bench_device: %s: %s\n", spec, err.msg);
        return 1;
    }
    double t0 = now_s();
    for (int i = 0; i < n; i++) {
        unsigned gi, ci;
        if (mb_device_mig_create_gi(dev, 9, NULL, &gi, &err) != MB_OK ||
            mb_device_mig_create_ci(dev, gi, -1, &ci, &err) != MB_OK ||
            mb_device_mig_destroy_ci(dev, gi, ci, &err) != MB_OK ||
            mb_device_mig_destroy_gi(dev, gi, &err) != MB_OK) {
            fprintf(stderr, "bench_device: %s\n", err.msg);
            mb_device_close(dev);
            return 1;
        }
    }
    double dt = now_s() - t0;
    printf("%-34s %7d calls %8.3f s %9.2f us/call\n", "emu GI+CI create/destroy, state file", 4 * n,
           dt, dt * 1e6 / (4 * n));
    mb_device_close(dev);
    return 0;
}

int main(void)
{
    char dir[] = "/tmp/mb-bench-device-XXXXXX";
    if (!mkdtemp(dir)) {
        perror("bench_device: mkdtemp");
        return 1;
    }
    char spec[128], state[96], lock[104];
    snprintf(state, sizeof(state), "%s/gpu.json", dir);
    snprintf(lock, sizeof(lock), "%s.lock", state);
    int rc = 0;
    rc |= bench_telemetry("emu telemetry, in memory", "emu:H100-80GB:mig=on", 200000);
    snprintf(spec, sizeof(spec), "emu:H100-80GB:mig=on:state=%s", state);
    rc |= bench_telemetry("emu telemetry, state file", spec, 5000);
    rc |= bench_mig(spec, 500);
    rc |= bench_telemetry("host telemetry", "host", 5000);
    unlink(state);
    unlink(lock);
    rmdir(dir);
    return rc;
}
