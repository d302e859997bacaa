/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Cost of one `migbench monitor` sample (telemetry, MIG mode, instances with activity, processes
 * and the live-file scan) and of rendering it, per device spec given on the command line
 * (default: emu:H100-80GB:mig=on). Prints one line per case: samples, total seconds,
 * microseconds per sample.
 * usage: bench_monitor [N] [SPEC...]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "migbench/clock.h"
#include "migbench/monitor.h"
#include "migbench/prom.h"

static double now_s(void)
{
    return (double)mb_clock_monotonic_ns() * 1e-9;
}

static int bench(const char *spec, int n)
{
    const char *specs[1] = {spec};
    struct mb_monitor_opts o = {.specs = specs, .n_specs = 1, .live_dir = NULL};
    struct mb_monitor *m = NULL;
    struct mb_prom *p = NULL;
    struct mb_error err;
    struct mb_monitor_snapshot *s = calloc(1, sizeof(*s));
    if (!s || mb_monitor_create(&o, &m, &err) != MB_OK || mb_prom_create(&p, &err) != MB_OK) {
        fprintf(stderr, "bench_monitor: %s: %s\n", spec, err.msg);
        free(s);
        mb_monitor_destroy(m);
        return 1;
    }
    double t0 = now_s();
    for (int i = 0; i < n; i++)
        mb_monitor_sample(m, s, NULL);
    double t_sample = now_s() - t0;
    t0 = now_s();
    for (int i = 0; i < n; i++) {
        char *text = NULL;
        mb_monitor_format(s, MB_MONITOR_SCREEN, &text, NULL);
        free(text);
        mb_monitor_format(s, MB_MONITOR_JSON, &text, NULL);
        free(text);
        mb_prom_reset(p);
        mb_monitor_prom(s, p, NULL);
        mb_prom_text(p, &text, NULL, NULL);
        free(text);
    }
    double t_render = now_s() - t0;
    printf("%-40s %6d samples %8.3f s %9.2f us/sample; screen+json+prometheus %8.2f us\n", spec, n,
           t_sample, t_sample * 1e6 / n, t_render * 1e6 / n);
    mb_prom_destroy(p);
    mb_monitor_destroy(m);
    free(s);
    return 0;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 2000;
    if (n <= 0)
        n = 2000;
    int rc = 0;
    if (argc > 2) {
        for (int i = 2; i < argc; i++)
            rc |= bench(argv[i], n);
    } else {
        rc |= bench("emu:H100-80GB:mig=on", n);
    }
    return rc;
}
