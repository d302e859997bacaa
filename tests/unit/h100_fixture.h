/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The catalog and its H100-80GB model as a cmocka group fixture, for the planner's tests:
 * cmocka_run_group_tests(tests, setup, teardown) with `cat` and `h100` set in between, and
 * fx_plan_row to add one profile row. Header-only: each test includes it once, after cmocka.h,
 * stdio.h, string.h and migbench/plan.h.
 */
#ifndef MB_TEST_H100_FIXTURE_H
#define MB_TEST_H100_FIXTURE_H

#include "migbench/catalog.h"

static struct mb_catalog *cat;
static const struct mb_gpu_model *h100;

static int setup(void **state)
{
    (void)state;
    struct mb_error err;
    if (mb_catalog_create(&cat, &err) != MB_OK)
        return -1;
    return mb_catalog_find(cat, "H100-80GB", &h100, &err) == MB_OK ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    mb_catalog_destroy(cat);
    return 0;
}

/* One H100-80GB row of workload w on partition part (a failure to add it fails the test);
   limit_w NAN: measured at the default power limit. */
static inline void fx_plan_row(struct mb_plan_profiles *p, const char *w, const char *part,
                               const char *unit, double thr, double power_w, double idle_w,
                               double mem_mib, double limit_w)
{
    struct mb_plan_profile r;
    memset(&r, 0, sizeof(r));
    snprintf(r.workload, sizeof(r.workload), "%s", w);
    snprintf(r.gpu, sizeof(r.gpu), "H100-80GB");
    snprintf(r.partition, sizeof(r.partition), "%s", part);
    snprintf(r.unit, sizeof(r.unit), "%s", unit);
    snprintf(r.source, sizeof(r.source), "test");
    r.throughput = thr;
    r.power_w = power_w;
    r.idle_power_w = idle_w;
    r.peak_mem_mib = mem_mib;
    r.power_limit_w = limit_w;
    struct mb_error err;
    if (mb_plan_profiles_add(p, cat, &r, &err) != MB_OK)
        fail_msg("%s on %s: %s", w, part, err.msg);
}

#endif
