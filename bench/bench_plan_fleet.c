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
 * With BENCH_PLAN_DUMP=DIR the instance is also written to DIR/profiles.csv and DIR/jobs.yaml.
 */
#include "plan_gen.h"

#define NW 8

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
    gen_rng = 0x9e3779b97f4a7c15ull ^ (seed * 0x5851f42d4c957f2dull);
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
    struct mb_plan_profiles *p = gen_profiles(cat, NW, true);
    struct mb_plan_job *jobs = calloc(nj ? nj : 1, sizeof(*jobs));
    if (!jobs)
        return 1;
    gen_jobs(jobs, nj, NW);
    const char *dump = getenv("BENCH_PLAN_DUMP");
    if (dump && !gen_dump(dump, p, jobs, nj, G)) {
        fprintf(stderr, "bench_plan_fleet: cannot write the instance to %s\n", dump);
        return 1;
    }
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
