/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Hostile YAML: the time to refuse a deeply nested experiment file of about 1 MB (under the size
 * limit) as a ratio to the time to load a normal experiment file, both in this run. Goal: the
 * refusal under a second, whatever the machine. Also a file of many flat nodes, refused at the
 * node limit, and the same 1 MB nesting given to the plan jobs reader and the mig-parted reader.
 * Usage: bench_hostile [REPS] [EXAMPLE.yaml]   (from the source tree: examples/quickstart.yaml)
 */
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

    double normal = time_exp(example, MB_OK, reps);
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
    printf("1 MB nested, plan jobs reader: %.3f ms; mig-parted reader: %.3f ms (one run each)\n",
           t_plan * 1e3, t_mig * 1e3);
    printf("goal (refusal < 1 s): %s\n", nested < 1.0 && wide < 1.0 ? "met" : "MISSED");
    unlink(deep);
    unlink(flat);
    rmdir(dir);
    return nested < 1.0 && wide < 1.0 ? 0 : 1;
}
