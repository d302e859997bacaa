/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Times layout enumeration for every catalog model: the default profile set with --all and
 * maximal-only, and every profile (+me included) with --all. Prints microseconds per call.
 * Usage: bench_layout [ITERATIONS]   (default 2000)
 */
#include <stdio.h>
#include <stdlib.h>

#include "migbench/catalog.h"
#include "migbench/clock.h"
#include "migbench/layout.h"

static double now_us(void)
{
    return (double)mb_clock_monotonic_ns() * 1e-3;
}

/* Layouts are consumed so the work cannot be skipped. */
static int consume(const struct mb_layout *l, void *arg)
{
    size_t *sum = arg;
    *sum += l->n;
    return 0;
}

static double time_one(const struct mb_gpu_model *m, uint32_t mask, unsigned flags, long iters,
                       size_t *count)
{
    size_t sum = 0;
    double best = 1e300;
    /* Best of five rounds: the machine is shared, the minimum is the least disturbed figure. */
    for (int round = 0; round < 5; round++) {
        double t0 = now_us();
        for (long i = 0; i < iters; i++)
            if (mb_layout_enumerate(m, mask, flags, consume, &sum, count, NULL) != MB_OK)
                return -1;
        double per = (now_us() - t0) / (double)iters;
        if (per < best)
            best = per;
    }
    return sum ? best : -1;
}

int main(int argc, char **argv)
{
    long iters = argc > 1 ? strtol(argv[1], NULL, 10) : 2000;
    if (iters < 1)
        iters = 1;
    struct mb_catalog *cat = NULL;
    struct mb_error err;
    if (mb_catalog_create(&cat, &err) != MB_OK) {
        fprintf(stderr, "bench_layout: %s\n", err.msg);
        return 1;
    }
    printf("%-18s %10s %10s %12s %10s %14s %10s\n", "model", "all", "us/call", "maximal", "us/call",
           "all(+me)", "us/call");
    for (size_t i = 0; i < mb_catalog_count(cat); i++) {
        const struct mb_gpu_model *m = mb_catalog_model(cat, i);
        uint32_t every = m->n_profiles >= 32 ? UINT32_MAX : (1u << m->n_profiles) - 1;
        size_t n_all = 0, n_max = 0, n_every = 0;
        double t_all = time_one(m, 0, MB_LAYOUT_ALL, iters, &n_all);
        double t_max = time_one(m, 0, MB_LAYOUT_MAXIMAL, iters, &n_max);
        double t_every = time_one(m, every, MB_LAYOUT_ALL, iters, &n_every);
        printf("%-18s %10zu %10.1f %12zu %10.1f %14zu %10.1f\n", m->name, n_all, t_all, n_max,
               t_max, n_every, t_every);
    }
    mb_catalog_destroy(cat);
    return 0;
}
