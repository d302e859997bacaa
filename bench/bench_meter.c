/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_meter: the meter's own cost.
 *
 *   bench_meter [--device SPEC] [--seconds S] [--reps N] [--csv]
 *
 * 1. CPU cost: the meter runs alone at 10, 100 and 1000 Hz for S seconds each while the main
 *    thread sleeps; getrusage(RUSAGE_SELF) over that time gives the meter's CPU time, reported as
 *    % of one core and as microseconds per sample.
 * 2. Slowdown: a fixed CPU-bound loop is timed bare and with the meter at 100 Hz, alternating
 *    (bare, metered, bare, metered, ...) N times so that both see the same machine; the ratio of
 *    the medians and of each adjacent pair is reported.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "migbench/meter.h"

static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

static double wall_s(void)
{
    return (double)mb_meter_now_ns() * 1e-9;
}

static void sleep_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

/* A CPU-bound job: integer hashing that the compiler cannot fold away. */
static volatile uint64_t sink;
static double cpu_job(uint64_t iters)
{
    double t0 = wall_s();
    uint64_t h = 1469598103934665603ull;
    for (uint64_t i = 0; i < iters; i++) {
        h ^= i;
        h *= 1099511628211ull;
        h ^= h >> 29;
    }
    sink = h;
    return wall_s() - t0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static struct mb_meter *start_meter(const char *spec, int64_t interval_ns, const char *csv)
{
    struct mb_meter_opts o = {.device_spec = spec, .interval_ns = interval_ns, .csv_path = csv};
    struct mb_meter *m;
    struct mb_error err;
    if (mb_meter_create(&o, &m, &err) != MB_OK || mb_meter_start(m, &err) != MB_OK) {
        fprintf(stderr, "bench_meter: %s\n", err.msg);
        exit(1);
    }
    return m;
}

int main(int argc, char **argv)
{
    const char *spec = "emu:H100-80GB:load=0.5";
    double seconds = 5;
    int reps = 10;
    const char *csv = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--device") && i + 1 < argc)
            spec = argv[++i];
        else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
            seconds = atof(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--csv"))
            csv = "/tmp/bench_meter.csv";
        else {
            fprintf(stderr,
                    "usage: bench_meter [--device SPEC] [--seconds S] [--reps N] [--csv]\n");
            return 2;
        }
    }
    if (reps < 1 || reps > 1000 || !(seconds > 0)) {
        fprintf(stderr, "bench_meter: bad --reps or --seconds\n");
        return 2;
    }
    printf("bench_meter: device %s, %s CSV\n\n", spec, csv ? "with" : "without");
    printf("%-8s %10s %10s %12s %14s\n", "rate", "samples", "cpu_s", "core_pct", "us_per_sample");
    const int hz[] = {10, 100, 1000};
    for (int k = 0; k < 3; k++) {
        struct mb_meter *m = start_meter(spec, 1000000000LL / hz[k], csv);
        double c0 = cpu_s();
        sleep_s(seconds);
        double c1 = cpu_s();
        struct mb_meter_counts cnt;
        mb_meter_get_counts(m, &cnt);
        mb_meter_destroy(m);
        double cpu = c1 - c0;
        printf("%5d Hz %10llu %10.4f %11.4f%% %14.2f\n", hz[k], (unsigned long long)cnt.samples,
               cpu, 100 * cpu / seconds, cnt.samples ? cpu * 1e6 / (double)cnt.samples : 0);
    }

    /* The floor: CPU time of a thread that only wakes on an absolute 1 ms deadline. On a VM the
     * timer wake-up itself can cost tens of microseconds, which bounds the per-sample cost. */
    {
        int n = 2000;
        double c0 = cpu_s();
        int64_t next = mb_meter_now_ns();
        for (int i = 0; i < n; i++) {
            next += 1000000;
            struct timespec ts = {(time_t)(next / 1000000000), (long)(next % 1000000000)};
            clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
        }
        printf("%-8s %10d %10.4f %12s %14.2f   (bare clock_nanosleep wake-ups, no meter)\n",
               "floor", n, cpu_s() - c0, "", (cpu_s() - c0) * 1e6 / n);
    }

    /* Calibrate the job to about 0.5 s. */
    uint64_t iters = 1u << 20;
    while (cpu_job(iters) < 0.05)
        iters *= 2;
    iters = (uint64_t)((double)iters * 0.5 / cpu_job(iters));
    double *bare = calloc((size_t)reps, sizeof(double));
    double *metered = calloc((size_t)reps, sizeof(double));
    double *ratio = calloc((size_t)reps, sizeof(double));
    for (int r = 0; r < reps; r++) {
        bare[r] = cpu_job(iters);
        struct mb_meter *m = start_meter(spec, 10000000LL, csv);
        metered[r] = cpu_job(iters);
        mb_meter_destroy(m);
        ratio[r] = metered[r] / bare[r];
    }
    qsort(bare, (size_t)reps, sizeof(double), cmp_double);
    qsort(metered, (size_t)reps, sizeof(double), cmp_double);
    qsort(ratio, (size_t)reps, sizeof(double), cmp_double);
    printf("\nslowdown of a CPU-bound loop (%d pairs, meter at 100 Hz)\n", reps);
    printf("  bare median     %.4f s (min %.4f, max %.4f)\n", bare[reps / 2], bare[0],
           bare[reps - 1]);
    printf("  metered median  %.4f s (min %.4f, max %.4f)\n", metered[reps / 2], metered[0],
           metered[reps - 1]);
    printf("  ratio of medians %.4f; ratio of minima %.4f; pairwise ratio median %.4f "
           "(min %.4f, max %.4f)\n",
           metered[reps / 2] / bare[reps / 2], metered[0] / bare[0], ratio[reps / 2], ratio[0],
           ratio[reps - 1]);
    free(bare);
    free(metered);
    free(ratio);
    return 0;
}
