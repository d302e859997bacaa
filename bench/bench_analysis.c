/* SPDX-License-Identifier: Apache-2.0 */
/*
 * How long `migbench report` spends loading and analysing results: writes a synthetic
 * experiment (4 runs x REPS repetitions x 3 jobs, telemetry at 10 Hz for SECONDS per cell) to a
 * temporary directory, then times mb_analysis_load over it. Usage: bench_analysis [REPS [SECONDS]]
 */
#define _XOPEN_SOURCE 700 /* nftw */
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "migbench/clock.h"
#include "migbench/analysis.h"

static double now_s(void)
{
    return (double)mb_clock_monotonic_ns() * 1e-9;
}

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static int write_cell(const char *root, const char *run, const char *mode, int rep, int seconds)
{
    char dir[512], path[600];
    snprintf(dir, sizeof(dir), "%s/%s", root, run);
    mkdir(dir, 0755);
    snprintf(dir, sizeof(dir), "%s/%s/%d", root, run, rep);
    mkdir(dir, 0755);
    long long t0 = 1000000000000LL, end = t0 + (long long)seconds * 1000000000LL;
    snprintf(path, sizeof(path), "%s/cell.json", dir);
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fprintf(f,
            "{\"schema\":1,\"experiment\":\"bench\",\"run\":\"%s\",\"mode\":\"%s\",\"rep\":%d,"
            "\"status\":\"ok\",\"t0_ns\":%lld,\"window\":{\"start_ns\":%lld,\"end_ns\":%lld},"
            "\"device\":{\"backend\":\"emu\",\"emulated\":true,\"model\":\"H100-80GB\","
            "\"mig\":{\"instances\":[{\"profile\":\"4g.40gb\"},{\"profile\":\"2g.20gb\"},"
            "{\"profile\":\"1g.10gb\"}]}},\"mps\":{\"thread_percentage\":[57,29,14]},"
            "\"energy\":{\"counter_j\":%d.5,\"integrated_j\":%d.0,\"idle_power_w\":80},"
            "\"jobs\":[",
            run, mode, rep, t0, t0, end, 500 * seconds, 500 * seconds);
    for (int j = 0; j < 3; j++) {
        long long s = t0, e = end;
        if (strcmp(mode, "exclusive") == 0) {
            s = t0 + (end - t0) / 3 * j;
            e = s + (end - t0) / 3;
        }
        fprintf(f,
                "%s{\"name\":\"job%d\",\"workload\":\"w%d\",\"unit\":\"images\",\"steps\":%d,"
                "\"units\":%d,\"throughput\":{\"mean\":%d.%d},\"started_ns\":%lld,"
                "\"ended_ns\":%lld}",
                j ? "," : "", j, j, 100 * seconds, 6400 * seconds, 1000 + 10 * rep + j, rep, s, e);
    }
    fputs("]}\n", f);
    fclose(f);
    snprintf(path, sizeof(path), "%s/telemetry.csv", dir);
    f = fopen(path, "w");
    if (!f)
        return -1;
    fputs("t_ns,power_mw,energy_mj,activity_0,activity_1,activity_2\n", f);
    for (long long t = t0, k = 0; t <= end; t += 100000000LL, k++)
        fprintf(f, "%lld,%lld,%lld,0.5%lld,0.4,0.3\n", t, 450000 + (k * 37) % 9000, k * 50, k % 10);
    fclose(f);
    return 0;
}

int main(int argc, char **argv)
{
    int reps = argc > 1 ? atoi(argv[1]) : 5;
    int seconds = argc > 2 ? atoi(argv[2]) : 120;
    if (reps < 1 || seconds < 3) {
        fprintf(stderr, "usage: bench_analysis [REPS>=1 [SECONDS>=3]]\n");
        return 2;
    }
    char root[] = "/tmp/mb-bench-analysis-XXXXXX";
    if (!mkdtemp(root)) {
        perror("mkdtemp");
        return 1;
    }
    static const char *const runs[4][2] = {
        {"exclusive", "exclusive"}, {"timeslice", "timeslice"}, {"mps", "mps"}, {"mig", "mig"}};
    int rc = 0;
    for (int r = 0; r < 4 && rc == 0; r++)
        for (int k = 0; k < reps && rc == 0; k++)
            rc = write_cell(root, runs[r][0], runs[r][1], k, seconds);
    if (rc != 0) {
        fprintf(stderr, "bench_analysis: cannot write the results\n");
        nftw(root, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
        return 1;
    }
    const char *dirs[] = {root};
    double best = 1e30;
    for (int i = 0; i < 5; i++) {
        struct mb_analysis *a = NULL;
        struct mb_error err;
        double t = now_s();
        if (mb_analysis_load(&a, dirs, 1, &err) != MB_OK) {
            fprintf(stderr, "bench_analysis: %s\n", err.msg);
            rc = 1;
            break;
        }
        t = now_s() - t;
        best = t < best ? t : best;
        mb_analysis_destroy(a);
    }
    if (rc == 0) {
        long cells = 4L * reps, rows = cells * (seconds * 10L + 1);
        printf("cells %ld, telemetry rows %ld: best of 5 loads %.3f s (%.0f rows/s, %.1f ms "
               "per cell)\n",
               cells, rows, best, (double)rows / best, best * 1000 / (double)cells);
    }
    nftw(root, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    return rc;
}
