/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The planner at fleet scale (issue 29): one generated instance per call, solved once, with the
 * wall and CPU time, the plan's makespan and energy, its reported bounds and gap.
 *
 * Usage: bench_plan_fleet JOBS GPUS energy|makespan [SEED [TIME_LIMIT_S [THREADS]]]
 *
 * Instances: eight workloads on H100-80GB with rows for 1g.10gb, 1g.20gb, 2g.20gb, 3g.40gb,
 * 4g.40gb, 7g.80gb and the whole GPU, throughput growing sublinearly with the partition
 * (exponent 0.3-1.0), power 70 W idle plus 150-600 W dynamic growing with it, two workloads
 * needing 15 GB and 30 GB (so they cannot use the smallest partitions); jobs of 0.2-2.2 x 10^5
 * units, spread so that each GPU gets about JOBS/GPUS of them. Fixed by SEED (default 1).
 * Output: one line "jobs gpus objective seed wall_s cpu_s makespan_s energy_j bound_makespan_s
 * bound_energy_j gap_makespan_pct gap_energy_pct method", for bench/plan_fleet.sh.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "migbench/clock.h"
#include "migbench/plan.h"

static uint64_t rng;
static double urand(void)
{
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return (double)((rng * 2685821657736338717ull) >> 11) / 9007199254740992.0;
}

static double now_s(void)
{
    return (double)mb_clock_monotonic_ns() * 1e-9;
}

static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static const char *const sizes[] = {"1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb",
                                    "4g.40gb", "7g.80gb", "full"};
static const double slices[] = {1, 1, 2, 3, 4, 7, 7};
#define NW 8

static struct mb_plan_profiles *profiles(const struct mb_catalog *cat)
{
    struct mb_plan_profiles *p;
    if (mb_plan_profiles_create(&p, NULL) != MB_OK)
        exit(1);
    for (int w = 0; w < NW; w++) {
        double base = 100 + 900 * urand(), alpha = 0.3 + 0.7 * urand();
        double dyn = 150 + 450 * urand();
        double mem = w == 0 ? 30000 : w == 1 ? 15000 : 3000 + 6000 * urand();
        for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
            struct mb_plan_profile r;
            memset(&r, 0, sizeof(r));
            snprintf(r.workload, sizeof(r.workload), "w%d", w);
            snprintf(r.gpu, sizeof(r.gpu), "H100-80GB");
            snprintf(r.partition, sizeof(r.partition), "%s", sizes[s]);
            r.throughput = base * pow(slices[s] / 7, alpha);
            r.power_w = 70 + dyn * pow(slices[s] / 7, 0.6);
            r.idle_power_w = 70;
            r.peak_mem_mib = mem;
            r.power_limit_w = NAN;
            snprintf(r.source, sizeof(r.source), "bench");
            struct mb_error err;
            if (mb_plan_profiles_add(p, cat, &r, &err) != MB_OK) {
                fprintf(stderr, "bench_plan_fleet: %s\n", err.msg);
                exit(1);
            }
        }
    }
    return p;
}

static void jobs_fill(struct mb_plan_job *jobs, size_t n)
{
    memset(jobs, 0, n * sizeof(*jobs));
    for (size_t j = 0; j < n; j++) {
        snprintf(jobs[j].name, sizeof(jobs[j].name), "j%zu", j);
        snprintf(jobs[j].workload, sizeof(jobs[j].workload), "w%d", (int)(urand() * NW));
        jobs[j].work = 1e5 * (0.2 + 2 * urand());
        jobs[j].deadline_s = NAN;
        jobs[j].memory_mib = NAN;
    }
}

static double gap(double v, double lb)
{
    return lb > 0 ? (v - lb) / lb * 100 : NAN;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: bench_plan_fleet JOBS GPUS energy|makespan [SEED [TIME_LIMIT_S "
                        "[THREADS]]]\n");
        return 2;
    }
    size_t nj = (size_t)atol(argv[1]);
    unsigned G = (unsigned)atoi(argv[2]);
    enum mb_plan_objective obj =
        strcmp(argv[3], "makespan") == 0 ? MB_PLAN_MAKESPAN : MB_PLAN_ENERGY;
    unsigned long seed = argc > 4 ? strtoul(argv[4], NULL, 10) : 1;
    rng = 0x9e3779b97f4a7c15ull ^ (seed * 0x5851f42d4c957f2dull);
    for (int k = 0; k < 8; k++)
        (void)urand();
    struct mb_catalog *cat;
    const struct mb_gpu_model *model;
    struct mb_error err;
    if (mb_catalog_create(&cat, &err) != MB_OK ||
        mb_catalog_find(cat, "H100-80GB", &model, &err) != MB_OK) {
        fprintf(stderr, "bench_plan_fleet: %s\n", err.msg);
        return 1;
    }
    struct mb_plan_profiles *p = profiles(cat);
    struct mb_plan_job *jobs = calloc(nj ? nj : 1, sizeof(*jobs));
    if (!jobs)
        return 1;
    jobs_fill(jobs, nj);
    struct mb_plan_options o;
    memset(&o, 0, sizeof(o));
    o.count = G;
    o.objective = obj;
    o.makespan_cap_s = o.energy_cap_j = NAN;
    o.heuristic = G > 1;
    o.time_limit_s = argc > 5 ? atof(argv[5]) : 0;
    o.threads = argc > 6 ? (unsigned)atoi(argv[6]) : 0;
    o.seed = seed;
    struct mb_plan *pl = NULL;
    double t0 = now_s(), c0 = cpu_s();
    int st = mb_plan_solve(model, p, jobs, nj, &o, &pl, &err);
    double wall = now_s() - t0, cpu = cpu_s() - c0;
    if (st != MB_OK) {
        fprintf(stderr, "bench_plan_fleet: %s\n", err.msg);
        return 1;
    }
    printf("%zu %u %s %lu %.3f %.3f %.6g %.6g %.6g %.6g %.2f %.2f %s\n", nj, G, argv[3], seed, wall,
           cpu, pl->makespan_s, pl->energy_j, pl->bound_makespan_s, pl->bound_energy_j,
           gap(pl->makespan_s, pl->bound_makespan_s), gap(pl->energy_j, pl->bound_energy_j),
           pl->exact ? "exact" : "heuristic");
    mb_plan_destroy(pl);
    mb_plan_profiles_destroy(p);
    free(jobs);
    mb_catalog_destroy(cat);
    return 0;
}
