/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The planner benchmarks' instance generator (bench_plan.c, bench_plan_fleet.c): random but
 * fixed-seed H100-80GB profiles shaped like the study's (throughput growing sublinearly with the
 * partition, exponent 0.3-1.0; power 70 W idle plus 150-600 W dynamic growing with it) and jobs
 * of 0.2-2.2 x 10^5 units on random workloads. Header only: each benchmark is one program.
 */
#ifndef MIGBENCH_BENCH_PLAN_GEN_H
#define MIGBENCH_BENCH_PLAN_GEN_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "migbench/clock.h"
#include "migbench/plan.h"

static uint64_t gen_rng = 0x5eed5eedull;

static double urand(void)
{
    gen_rng ^= gen_rng >> 12;
    gen_rng ^= gen_rng << 25;
    gen_rng ^= gen_rng >> 27;
    return (double)((gen_rng * 2685821657736338717ull) >> 11) / 9007199254740992.0;
}

static double now_s(void)
{
    return (double)mb_clock_monotonic_ns() * 1e-9;
}

/* CPU time of this process: on a shared machine, closer to what the search itself costs. */
static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/*
 * nw workloads w0..w(nw-1); w0 needs 30 GB, w1 15 GB when big2 (so they cannot use the smallest
 * partitions), the others 3-9 GB.
 */
static struct mb_plan_profiles *gen_profiles(const struct mb_catalog *cat, int nw, bool big2)
{
    static const char *const sizes[] = {"1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb",
                                        "4g.40gb", "7g.80gb", "full"};
    static const double slices[] = {1, 1, 2, 3, 4, 7, 7};
    struct mb_plan_profiles *p;
    if (mb_plan_profiles_create(&p, NULL) != MB_OK)
        exit(1);
    for (int w = 0; w < nw; w++) {
        double base = 100 + 900 * urand(), alpha = 0.3 + 0.7 * urand();
        double dyn = 150 + 450 * urand();
        double mem = w == 0 ? 30000 : w == 1 && big2 ? 15000 : 3000 + 6000 * urand();
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
                fprintf(stderr, "plan benchmark: %s\n", err.msg);
                exit(1);
            }
        }
    }
    return p;
}

/* n jobs j0..j(n-1) on random workloads among nw. */
static void gen_jobs(struct mb_plan_job *jobs, size_t n, int nw)
{
    memset(jobs, 0, n * sizeof(*jobs));
    for (size_t j = 0; j < n; j++) {
        snprintf(jobs[j].name, sizeof(jobs[j].name), "j%zu", j);
        snprintf(jobs[j].workload, sizeof(jobs[j].workload), "w%d", (int)(urand() * nw));
        jobs[j].work = 1e5 * (0.2 + 2 * urand());
        jobs[j].deadline_s = NAN;
        jobs[j].memory_mib = NAN;
    }
}

/*
 * Writes the instance as DIR/profiles.csv and DIR/jobs.yaml (for `migbench plan` and for
 * independent checks such as bench/plan_lp.py); false on an I/O error.
 */
static inline bool gen_dump(const char *dir, const struct mb_plan_profiles *p,
                            const struct mb_plan_job *jobs, size_t n, unsigned G)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/profiles.csv", dir);
    FILE *f = fopen(path, "w");
    if (!f)
        return false;
    fprintf(f, "workload,gpu,partition,throughput,unit,power_w,idle_power_w,peak_mem_mib\n");
    for (size_t i = 0; i < mb_plan_profiles_count(p); i++) {
        const struct mb_plan_profile *r = mb_plan_profiles_get(p, i);
        fprintf(f, "%s,%s,%s,%.17g,u,%.17g,%.17g,%.17g\n", r->workload, r->gpu, r->partition,
                r->throughput, r->power_w, r->idle_power_w, r->peak_mem_mib);
    }
    bool ok = fclose(f) == 0;
    snprintf(path, sizeof(path), "%s/jobs.yaml", dir);
    if (!(f = fopen(path, "w")))
        return false;
    fprintf(f, "gpu: H100-80GB\ncount: %u\njobs:\n", G);
    for (size_t j = 0; j < n; j++)
        fprintf(f, "  - {name: %s, workload: %s, work: %.17g}\n", jobs[j].name, jobs[j].workload,
                jobs[j].work);
    return fclose(f) == 0 && ok;
}

#endif
