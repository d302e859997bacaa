/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Hostile YAML: the time to refuse a deeply nested experiment file of about 1 MB (under the size
 * limit) as a ratio to the time to load a normal experiment file, both in this run. Goal: the
 * refusal under a second, whatever the machine. Also a file of many flat nodes, refused at the
 * node limit, one of 49,000 keys with the last one repeated (the repeat check was pairwise), a
 * plan jobs file of 30,000 jobs with a repeated name, and the same 1 MB nesting given to the plan
 * jobs reader and the mig-parted reader.
 * Usage: bench_hostile [REPS] [EXAMPLE.yaml]   (from the source tree: examples/quickstart.yaml)
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "migbench/clock.h"
#include "migbench/experiment.h"
#include "migbench/migcfg.h"
#include "migbench/plan.h"

static double now_s(void)
{
    return (double)mb_clock_monotonic_ns() * 1e-9;
}

static void write_file(const char *path, const char *text, size_t n)
{
    FILE *f = fopen(path, "w");
    if (!f || fwrite(text, 1, n, f) != n || fclose(f) != 0) {
        perror(path);
        exit(1);
    }
}

/* Best (least disturbed) of reps timings of one load, which must end with status want. */
static double time_exp(const char *path, int want, int reps)
{
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        struct mb_experiment *exp = NULL;
        struct mb_error err;
        double t0 = now_s();
        int rc = mb_experiment_load(path, NULL, 0, &exp, &err);
        double dt = now_s() - t0;
        mb_experiment_destroy(exp);
        if (rc != want) {
            fprintf(stderr, "bench_hostile: %s: status %d, expected %d: %s\n", path, rc, want,
                    err.msg);
            exit(1);
        }
        if (dt < best)
            best = dt;
    }
    return best;
}

int main(int argc, char **argv)
{
    int reps = argc > 1 ? atoi(argv[1]) : 20;
    const char *example = argc > 2 ? argv[2] : "examples/quickstart.yaml";
    if (reps < 1)
        reps = 1;
    char dir[] = "/tmp/mb-bench-hostile-XXXXXX";
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    char deep[64], flat[64];
    snprintf(deep, sizeof(deep), "%s/deep.yaml", dir);
    snprintf(flat, sizeof(flat), "%s/flat.yaml", dir);
    size_t half = 512 * 1024;
    char *text = malloc(2 * half + 2);
    if (!text)
        return 1;
    memset(text, '[', half);
    memset(text + half, ']', half);
    text[2 * half] = '\n';
    write_file(deep, text, 2 * half + 1);
    /* ~1 MB of one-character list items: 400,000+ nodes, refused at the node limit. */
    size_t n = 0;
    n += (size_t)snprintf(text, 16, "[");
    while (n + 3 < 2 * half) {
        text[n++] = '1';
        text[n++] = ',';
    }
    text[n++] = '1';
    text[n++] = ']';
    write_file(flat, text, n);
    free(text);

    char keys[64], jobs[64];
    snprintf(keys, sizeof(keys), "%s/keys.yaml", dir);
    snprintf(jobs, sizeof(jobs), "%s/jobs.yaml", dir);
    FILE *f = fopen(keys, "w");
    for (int i = 0; f && i < 49000; i++)
        fprintf(f, "k%d: 1\n", i);
    if (!f || fprintf(f, "k1: 2\n") < 0 || fclose(f) != 0)
        return 1;
    f = fopen(jobs, "w");
    if (!f)
        return 1;
    fprintf(f, "gpu: H100-80GB\nworkloads:\n  w: {command: [/bin/true], unit: images}\njobs:\n");
    for (int i = 0; i < 30000; i++)
        fprintf(f, "  - {name: j%d, workload: w, work: 1e6}\n", i);
    if (fprintf(f, "  - {name: j1, workload: w, work: 1e6}\n") < 0 || fclose(f) != 0)
        return 1;

    double normal = time_exp(example, MB_OK, reps);
    double many_keys = time_exp(keys, MB_EPARSE, reps < 3 ? reps : 3);
    double t_jobs = 1e30;
    for (int r = 0; r < (reps < 3 ? reps : 3); r++) {
        struct mb_plan_jobset *js = NULL;
        struct mb_error err;
        double t = now_s();
        if (mb_plan_jobset_load(jobs, &js, &err) != MB_EPARSE ||
            !strstr(err.msg, "also the name")) {
            fprintf(stderr, "bench_hostile: the repeated job name was not refused\n");
            return 1;
        }
        t = now_s() - t;
        t_jobs = t < t_jobs ? t : t_jobs;
    }
    double nested = time_exp(deep, MB_EPARSE, reps);
    double wide = time_exp(flat, MB_EPARSE, reps);
    double t0 = now_s();
    struct mb_plan_jobset *js = NULL;
    struct mb_migcfg *cfg = NULL;
    int r1 = mb_plan_jobset_load(deep, &js, NULL);
    double t_plan = now_s() - t0;
    t0 = now_s();
    int r2 = mb_migcfg_load(deep, &cfg, NULL);
    double t_mig = now_s() - t0;
    if (r1 != MB_EPARSE || r2 != MB_EPARSE) {
        fprintf(stderr, "bench_hostile: a reader accepted the nested file\n");
        return 1;
    }
    printf("normal experiment (%s): %.3f ms (best of %d)\n", example, normal * 1e3, reps);
    printf("1 MB nested, refused:     %.3f ms  ratio %.2f x normal\n", nested * 1e3,
           nested / normal);
    printf("1 MB flat list, refused:  %.3f ms  ratio %.2f x normal\n", wide * 1e3, wide / normal);
    printf("49,000 keys, repeat refused: %.3f ms  ratio %.2f x normal\n", many_keys * 1e3,
           many_keys / normal);
    printf("30,000 plan jobs, repeated name refused: %.3f ms\n", t_jobs * 1e3);
    printf("1 MB nested, plan jobs reader: %.3f ms; mig-parted reader: %.3f ms (one run each)\n",
           t_plan * 1e3, t_mig * 1e3);
    bool met = nested < 1.0 && wide < 1.0 && many_keys < 1.0 && t_jobs < 1.0;
    printf("goal (every refusal < 1 s): %s\n", met ? "met" : "MISSED");
    unlink(deep);
    unlink(flat);
    unlink(keys);
    unlink(jobs);
    rmdir(dir);
    return met ? 0 : 1;
}
