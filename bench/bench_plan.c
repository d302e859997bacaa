/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Planner speed: the exact optimum for 8 jobs on one GPU (goal < 50 ms) and the heuristic for
 * 1,000 jobs on 128 GPUs (goal < 2 s with a gap to the lower bound < 5%). Random but fixed-seed
 * profiles shaped like the study's: sublinear speed-up with partition size, power rising with it.
 * Usage: bench_plan [INSTANCES]
 */
#include "plan_gen.h"

#define NW 6

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    int reps = argc > 1 ? atoi(argv[1]) : 10;
    if (reps < 1 || reps > 1000)
        reps = 10;
    struct mb_catalog *cat;
    const struct mb_gpu_model *model;
    struct mb_error err;
    if (mb_catalog_create(&cat, &err) != MB_OK ||
        mb_catalog_find(cat, "H100-80GB", &model, &err) != MB_OK) {
        fprintf(stderr, "bench_plan: %s\n", err.msg);
        return 1;
    }
    double *t = calloc((size_t)reps, sizeof(double));
    double *gap = calloc((size_t)reps, sizeof(double));
    double *cpu = calloc((size_t)reps, sizeof(double));
    struct mb_plan_job *jobs = calloc(1000, sizeof(*jobs));
    if (!t || !gap || !cpu || !jobs)
        return 1;
    const enum mb_plan_objective objs[] = {MB_PLAN_ENERGY, MB_PLAN_MAKESPAN};
    for (size_t ni = 0; ni < 2; ni++) {
        size_t nj = ni == 0 ? 8 : 10;
        for (size_t oi = 0; oi < 2; oi++) {
            size_t nodes = 0;
            for (int r = 0; r < reps; r++) {
                struct mb_plan_profiles *p = gen_profiles(cat, NW, false);
                gen_jobs(jobs, nj, NW);
                struct mb_plan_options o;
                memset(&o, 0, sizeof(o));
                o.count = 1;
                o.objective = objs[oi];
                struct mb_plan *pl = NULL;
                double t0 = now_s();
                int st = mb_plan_solve(model, p, jobs, nj, &o, &pl, &err);
                t[r] = now_s() - t0;
                if (st != MB_OK || !pl->exact) {
                    fprintf(stderr, "bench_plan: %s\n", st ? err.msg : "not exact");
                    return 1;
                }
                nodes += pl->nodes;
                mb_plan_destroy(pl);
                mb_plan_profiles_destroy(p);
            }
            qsort(t, (size_t)reps, sizeof(double), cmp_d);
            printf("exact, %zu jobs, 1 GPU, objective %-8s: median %.1f ms, max %.1f ms over %d "
                   "instances (%.0f nodes on average)\n",
                   nj, mb_plan_objective_str(objs[oi]), t[reps / 2] * 1e3, t[reps - 1] * 1e3, reps,
                   (double)nodes / reps);
        }
    }
    int big = reps < 5 ? reps : 5;
    for (size_t oi = 0; oi < 2; oi++) {
        for (int r = 0; r < big; r++) {
            struct mb_plan_profiles *p = gen_profiles(cat, NW, false);
            gen_jobs(jobs, 1000, NW);
            struct mb_plan_options o;
            memset(&o, 0, sizeof(o));
            o.count = 128;
            o.objective = objs[oi];
            struct mb_plan *pl = NULL;
            double t0 = now_s(), c0 = cpu_s();
            int st = mb_plan_solve(model, p, jobs, 1000, &o, &pl, &err);
            t[r] = now_s() - t0;
            cpu[r] = cpu_s() - c0;
            if (st != MB_OK) {
                fprintf(stderr, "bench_plan: %s\n", err.msg);
                return 1;
            }
            gap[r] = pl->gap_pct;
            mb_plan_destroy(pl);
            mb_plan_profiles_destroy(p);
        }
        qsort(t, (size_t)big, sizeof(double), cmp_d);
        qsort(gap, (size_t)big, sizeof(double), cmp_d);
        qsort(cpu, (size_t)big, sizeof(double), cmp_d);
        printf("heuristic, 1000 jobs, 128 GPUs, objective %-8s: median %.3f s, max %.3f s "
               "(CPU median %.3f s, max %.3f s); gap to bound median %.2f%%, max %.2f%% over %d "
               "instances\n",
               mb_plan_objective_str(objs[oi]), t[big / 2], t[big - 1], cpu[big / 2], cpu[big - 1],
               gap[big / 2], gap[big - 1], big);
    }
    free(t);
    free(gap);
    free(cpu);
    free(jobs);
    mb_catalog_destroy(cat);
    return 0;
}
