/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The planner's power-limit axis: rows that differ only in their limit, the CSV column, the
 * choice of the limit with the layout (the best candidate under the objective; each candidate's
 * plan equal to a plain solve restricted to its rows), and its errors. The rows follow the
 * emulator's stated DVFS model (src/device/emu.c) for an H100 at 70 W idle, 700 W full load.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "migbench/plan.h"

#include "h100_fixture.h"

/* The emulator's model: clock fraction and power of a load (share of slices) under a limit. */
static void model(double load, double limit_w, double *speed, double *power)
{
    const double idle = 70, dyn = 630 * load, vf = 0.7;
    double room = limit_w - idle, s = 1;
    if (dyn > room) {
        double g = room / dyn;
        s = g >= vf * vf * vf ? cbrt(g) : g / (vf * vf);
    }
    *speed = s;
    *power = idle + dyn * (s >= vf ? s * s * s : s * vf * vf);
}

static int add(struct mb_plan_profiles *p, const char *w, const char *part, double slices,
               double rate, double limit_w, struct mb_error *err)
{
    struct mb_plan_profile r;
    memset(&r, 0, sizeof(r));
    double s, pw;
    model(slices / 7.0, limit_w > 0 ? limit_w : 700, &s, &pw);
    snprintf(r.workload, sizeof(r.workload), "%s", w);
    snprintf(r.gpu, sizeof(r.gpu), "H100-80GB");
    snprintf(r.partition, sizeof(r.partition), "%s", part);
    snprintf(r.unit, sizeof(r.unit), "steps");
    snprintf(r.source, sizeof(r.source), "model %g W", limit_w);
    r.throughput = rate * slices / 7.0 * s;
    r.power_w = pw;
    r.idle_power_w = 70;
    r.peak_mem_mib = NAN;
    r.power_limit_w = limit_w;
    return mb_plan_profiles_add(p, cat, &r, err);
}

static struct mb_plan_profiles *model_profiles(const double *caps, size_t n_caps)
{
    static const char *const parts[] = {"full",    "7g.80gb", "4g.40gb",
                                        "3g.40gb", "2g.20gb", "1g.10gb"};
    static const double slices[] = {7, 7, 4, 3, 2, 1};
    struct mb_plan_profiles *p;
    struct mb_error err;
    assert_int_equal(mb_plan_profiles_create(&p, &err), MB_OK);
    for (size_t c = 0; c < n_caps; c++)
        for (size_t k = 0; k < 6; k++)
            if (add(p, "train", parts[k], slices[k], 40, caps[c], &err) != MB_OK)
                fail_msg("add: %s", err.msg);
    return p;
}

static void jobs_of(struct mb_plan_job *jobs, size_t n)
{
    memset(jobs, 0, n * sizeof(*jobs));
    for (size_t j = 0; j < n; j++) {
        snprintf(jobs[j].name, sizeof(jobs[j].name), "j%zu", j);
        snprintf(jobs[j].workload, sizeof(jobs[j].workload), "train");
        jobs[j].work = 4000.0 * (double)(1 + j % 3);
        jobs[j].deadline_s = NAN;
        jobs[j].memory_mib = NAN;
    }
}

static void test_rows_per_limit(void **state)
{
    (void)state;
    struct mb_plan_profiles *p;
    struct mb_error err;
    assert_int_equal(mb_plan_profiles_create(&p, &err), MB_OK);
    assert_int_equal(add(p, "a", "full", 7, 10, 0, &err), MB_OK);
    assert_int_equal(add(p, "a", "full", 7, 10, 420, &err), MB_OK);
    assert_int_equal(add(p, "a", "full", 7, 10, 280, &err), MB_OK);
    assert_int_equal(add(p, "a", "full", 7, 10, 420, &err), MB_EINVAL);
    assert_non_null(strstr(err.msg, "420 W power limit is profiled twice"));
    assert_int_equal(add(p, "a", "full", 7, 10, NAN, &err), MB_EINVAL); /* NaN = default: twice */
    assert_int_equal(add(p, "a", "full", 7, 10, -5, &err), MB_EINVAL);
    assert_non_null(strstr(err.msg, "power_limit_w"));
    assert_int_equal(mb_plan_profiles_count(p), 3);
    mb_plan_profiles_destroy(p);

    char path[128];
    snprintf(path, sizeof(path), "/tmp/mb-test-plan-power-%ld.csv", (long)getpid());
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("workload,gpu,partition,throughput,power_w,idle_power_w,power_limit_w\n"
          "a,H100-80GB,full,10,700,70,\n"
          "a,H100-80GB,full,8,420,70,420\n"
          "a,H100-80GB,full,7,280,70,280W\n",
          f);
    fclose(f);
    assert_int_equal(mb_plan_profiles_create(&p, &err), MB_OK);
    assert_int_equal(mb_plan_profiles_load_csv(p, cat, path, &err), MB_EPARSE);
    assert_non_null(strstr(err.msg, ":4: field 'power_limit_w'"));
    f = fopen(path, "w");
    assert_non_null(f);
    fputs("workload,gpu,partition,throughput,power_w,idle_power_w,power_limit_w\n"
          "a,H100-80GB,full,10,700,70,\n"
          "a,H100-80GB,full,8,420,70,420\n",
          f);
    fclose(f);
    assert_int_equal(mb_plan_profiles_load_csv(p, cat, path, &err), MB_OK);
    assert_true(isnan(mb_plan_profiles_get(p, 0)->power_limit_w));
    assert_true(mb_plan_profiles_get(p, 1)->power_limit_w == 420);
    mb_plan_profiles_destroy(p);
    unlink(path);
}

static void test_choose_limit(void **state)
{
    (void)state;
    const double caps[] = {0, 560, 420, 280};
    struct mb_plan_profiles *p = model_profiles(caps, 4);
    struct mb_plan_job jobs[6];
    jobs_of(jobs, 6);
    struct mb_plan_options opt = {.objective = MB_PLAN_ENERGY, .count = 1};
    struct mb_plan_cap_result res[4];
    struct mb_plan *best = NULL;
    struct mb_error err;
    assert_int_equal(mb_plan_solve_caps(h100, p, jobs, 6, &opt, caps, 4, res, &best, &err), MB_OK);
    /* Each candidate is the plain solve on its own rows; the choice is the least energy. */
    size_t arg = 0;
    for (size_t i = 0; i < 4; i++) {
        assert_int_equal(res[i].status, MB_OK);
        struct mb_plan_options o = opt;
        o.power_limit_w = caps[i];
        struct mb_plan *one = NULL;
        assert_int_equal(mb_plan_solve(h100, p, jobs, 6, &o, &one, &err), MB_OK);
        assert_true(fabs(one->energy_j - res[i].energy_j) < 1e-6 * one->energy_j);
        mb_plan_destroy(one);
        if (res[i].energy_j < res[arg].energy_j)
            arg = i;
    }
    assert_true(isnan(res[0].power_limit_w));
    assert_true(fabs(best->energy_j - res[arg].energy_j) < 1e-9 * best->energy_j);
    assert_true(best->power_limit_w == caps[arg]);
    /* On this model a cap below the default saves energy and costs time. */
    assert_true(arg != 0);
    assert_true(best->energy_j < res[0].energy_j);
    assert_true(best->makespan_s > res[0].makespan_s);
    fprintf(stderr, "plan: default %.0f J / %.1f s; best %.0f W: %.0f J / %.1f s (%.1f%% less)\n",
            res[0].energy_j, res[0].makespan_s, best->power_limit_w, best->energy_j,
            best->makespan_s, 100.0 * (1 - best->energy_j / res[0].energy_j));
    mb_plan_destroy(best);

    /* The makespan objective takes the default: full clock is fastest. */
    opt.objective = MB_PLAN_MAKESPAN;
    assert_int_equal(mb_plan_solve_caps(h100, p, jobs, 6, &opt, caps, 4, res, &best, &err), MB_OK);
    assert_true(isnan(best->power_limit_w));
    mb_plan_destroy(best);

    /* A candidate without rows fails alone; with no candidate left, its error comes back. */
    const double other[] = {300, 420};
    opt.objective = MB_PLAN_ENERGY;
    assert_int_equal(mb_plan_solve_caps(h100, p, jobs, 6, &opt, other, 2, res, &best, &err), MB_OK);
    assert_int_not_equal(res[0].status, MB_OK);
    assert_true(best->power_limit_w == 420);
    mb_plan_destroy(best);
    assert_int_not_equal(mb_plan_solve_caps(h100, p, jobs, 6, &opt, other, 1, NULL, &best, &err),
                         MB_OK);
    assert_null(best);
    assert_non_null(strstr(err.msg, "no power limit gives a plan: 300 W: "));
    /* When every candidate fails, the message names every one (issue 29: it named the first). */
    const double none[] = {300, 350, 390};
    assert_int_not_equal(mb_plan_solve_caps(h100, p, jobs, 6, &opt, none, 3, NULL, &best, &err),
                         MB_OK);
    assert_non_null(strstr(err.msg, "300 W, 350 W, 390 W: "));
    assert_int_equal(mb_plan_solve_caps(h100, p, jobs, 6, &opt, other, 0, NULL, &best, &err),
                     MB_EINVAL);
    mb_plan_profiles_destroy(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rows_per_limit),
        cmocka_unit_test(test_choose_limit),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
