/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One power limit per GPU (issue 29): with several candidate limits on a fleet the plan may give
 * each GPU its own limit. A constructed fleet where that beats every shared limit (jobs that
 * barely slow on a low limit together on one GPU, jobs that need the default on the other), a
 * job without a row under a limit kept off GPUs on that limit, never worse than the best shared
 * limit on random fleets, and the same plan twice for a given seed and thread count.
 *
 * MB_TEST_TIMEOUT: 600 (tens of CPU seconds under ASan: the searches run to their budgets)
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

#include "migbench/plan.h"

#include "h100_fixture.h"

static void row(struct mb_plan_profiles *p, const char *w, const char *part, double thr,
                double power, double limit_w)
{
    fx_plan_row(p, w, part, "steps", thr, power, 70, NAN, limit_w);
}

static void job(struct mb_plan_job *j, const char *name, const char *w, double work)
{
    memset(j, 0, sizeof(*j));
    snprintf(j->name, sizeof(j->name), "%s", name);
    snprintf(j->workload, sizeof(j->workload), "%s", w);
    j->work = work;
    j->deadline_s = NAN;
    j->memory_mib = NAN;
}

/*
 * "lite" barely slows under 280 W and draws far less there; "heavy" runs at half speed there.
 * Two heavy jobs of 100 s and four lite jobs of 50 s (at the default limit) on two GPUs.
 */
static struct mb_plan_profiles *two_kinds(bool heavy_at_280)
{
    struct mb_plan_profiles *p;
    struct mb_error err;
    assert_int_equal(mb_plan_profiles_create(&p, &err), MB_OK);
    row(p, "lite", "full", 1.0, 400, NAN);
    row(p, "lite", "full", 0.97, 250, 280);
    row(p, "heavy", "full", 1.0, 650, NAN);
    if (heavy_at_280)
        row(p, "heavy", "full", 0.5, 280, 280);
    return p;
}

static void six_jobs(struct mb_plan_job *jobs)
{
    job(&jobs[0], "h0", "heavy", 100);
    job(&jobs[1], "l0", "lite", 50);
    job(&jobs[2], "h1", "heavy", 100);
    job(&jobs[3], "l1", "lite", 50);
    job(&jobs[4], "l2", "lite", 50);
    job(&jobs[5], "l3", "lite", 50);
}

/* Each GPU holds only one kind of job; the heavy ones' GPU is on the default, the other 280 W. */
static void assert_split(const struct mb_plan *pl, const struct mb_plan_job *jobs)
{
    assert_true(isnan(pl->power_limit_w)); /* the limits differ */
    for (size_t j = 0; j < pl->n_slots; j++) {
        const struct mb_plan_gpu *g = &pl->gpus[pl->slots[j].gpu];
        if (strcmp(jobs[j].workload, "heavy") == 0)
            assert_true(isnan(g->power_limit_w));
        else
            assert_true(g->power_limit_w == 280);
    }
}

static void test_energy_under_makespan_cap(void **state)
{
    (void)state;
    struct mb_plan_profiles *p = two_kinds(true);
    struct mb_plan_job jobs[6];
    six_jobs(jobs);
    const double caps[] = {0, 280};
    struct mb_plan_options opt = {
        .objective = MB_PLAN_ENERGY, .count = 2, .makespan_cap_s = 210, .threads = 1, .seed = 1};
    struct mb_plan_cap_result res[2];
    struct mb_plan *pl = NULL;
    struct mb_error err;
    assert_int_equal(mb_plan_solve_caps(h100, p, jobs, 6, &opt, caps, 2, res, &pl, &err), MB_OK);
    /* 280 W alone cannot meet the cap; the default alone costs 210 kJ. */
    assert_int_equal(res[0].status, MB_OK);
    assert_int_equal(res[1].status, MB_EINFEASIBLE);
    assert_true(fabs(res[0].energy_j - 210000) < 1);
    assert_split(pl, jobs);
    /* 2 x 70 W x 206.19 s + 580 W x 200 s + 180 W x 206.19 s */
    double m = 200 / 0.97;
    assert_true(fabs(pl->makespan_s - m) < 1e-6);
    assert_true(fabs(pl->energy_j - (140 * m + 116000 + 180 * m)) < 1e-3);
    assert_true(pl->energy_j < res[0].energy_j);
    /* The bound holds for any per-GPU choice, and the slots carry the rows of their GPU's limit. */
    assert_true(pl->bound_energy_j <= pl->energy_j);
    for (size_t j = 0; j < 6; j++) {
        const struct mb_plan_profile *r = mb_plan_profiles_get(p, pl->slots[j].profile);
        double lim = pl->gpus[pl->slots[j].gpu].power_limit_w;
        assert_true(isnan(lim) ? isnan(r->power_limit_w) : r->power_limit_w == lim);
        assert_true(fabs(pl->slots[j].time_s - jobs[j].work / r->throughput) < 1e-9);
    }
    assert_int_equal(pl->over_limit, 0);
    mb_plan_destroy(pl);
    mb_plan_profiles_destroy(p);
}

static void test_makespan_under_energy_cap(void **state)
{
    (void)state;
    struct mb_plan_profiles *p = two_kinds(true);
    struct mb_plan_job jobs[6];
    six_jobs(jobs);
    const double caps[] = {0, 280};
    struct mb_plan_options opt = {
        .objective = MB_PLAN_MAKESPAN, .count = 2, .energy_cap_j = 185000, .threads = 1};
    struct mb_plan_cap_result res[2];
    struct mb_plan *pl = NULL;
    struct mb_error err;
    assert_int_equal(mb_plan_solve_caps(h100, p, jobs, 6, &opt, caps, 2, res, &pl, &err), MB_OK);
    assert_int_equal(res[0].status, MB_EINFEASIBLE); /* the default needs >= 210 kJ */
    assert_int_equal(res[1].status, MB_OK);
    fprintf(stderr, "makespan under 185 kJ: 280 W %.1f s, per GPU %.1f s (%.0f J)\n",
            res[1].makespan_s, pl->makespan_s, pl->energy_j);
    assert_true(pl->makespan_s < res[1].makespan_s);
    assert_true(pl->energy_j <= 185000 * (1 + 1e-9));
    assert_split(pl, jobs);
    mb_plan_destroy(pl);
    mb_plan_profiles_destroy(p);
}

/* A job without a row under 280 W cannot stay on a GPU set to it; the others still may. */
static void test_job_without_row(void **state)
{
    (void)state;
    struct mb_plan_profiles *p = two_kinds(false);
    struct mb_plan_job jobs[6];
    six_jobs(jobs);
    const double caps[] = {280, 0};
    struct mb_plan_options opt = {
        .objective = MB_PLAN_ENERGY, .count = 2, .makespan_cap_s = 210, .threads = 1};
    struct mb_plan_cap_result res[2];
    struct mb_plan *pl = NULL;
    struct mb_error err;
    assert_int_equal(mb_plan_solve_caps(h100, p, jobs, 6, &opt, caps, 2, res, &pl, &err), MB_OK);
    assert_int_equal(res[0].status, MB_EINVAL); /* heavy has no 280 W row */
    assert_split(pl, jobs);
    mb_plan_destroy(pl);
    mb_plan_profiles_destroy(p);
}

/* Deadlines instead of a cap: every job due by 210 s. The kick breaks them until the jobs move. */
static void test_deadlines(void **state)
{
    (void)state;
    struct mb_plan_profiles *p = two_kinds(true);
    struct mb_plan_job jobs[6];
    six_jobs(jobs);
    for (size_t j = 0; j < 6; j++)
        jobs[j].deadline_s = 210;
    const double caps[] = {0, 280};
    struct mb_plan_options opt = {.objective = MB_PLAN_ENERGY, .count = 2, .threads = 1};
    struct mb_plan_cap_result res[2];
    struct mb_plan *pl = NULL;
    struct mb_error err;
    assert_int_equal(mb_plan_solve_caps(h100, p, jobs, 6, &opt, caps, 2, res, &pl, &err), MB_OK);
    assert_int_equal(res[1].status, MB_EINFEASIBLE);
    assert_split(pl, jobs);
    for (size_t j = 0; j < 6; j++)
        assert_true(pl->slots[j].start_s + pl->slots[j].time_s <= 210);
    assert_true(pl->energy_j < res[0].energy_j);
    mb_plan_destroy(pl);
    mb_plan_profiles_destroy(p);
}

/* The emulator-like DVFS model of test_plan_power.c, with a per-workload sensitivity. */
static void dvfs(double load, double limit_w, double vf, double *speed, double *power)
{
    const double idle = 70, dyn = 630 * load;
    double room = limit_w - idle, s = 1;
    if (dyn > room) {
        double g = room / dyn;
        s = g >= vf * vf * vf ? cbrt(g) : g / (vf * vf);
    }
    *speed = s;
    *power = idle + dyn * (s >= vf ? s * s * s : s * vf * vf);
}

static struct mb_plan_profiles *random_profiles(unsigned *rng, const double *caps, size_t nc)
{
    static const char *const parts[] = {"full",    "7g.80gb", "4g.40gb",
                                        "3g.40gb", "2g.20gb", "1g.10gb"};
    static const double slices[] = {7, 7, 4, 3, 2, 1};
    struct mb_plan_profiles *p;
    struct mb_error err;
    assert_int_equal(mb_plan_profiles_create(&p, &err), MB_OK);
    for (int w = 0; w < 4; w++) {
        char name[16];
        snprintf(name, sizeof(name), "w%d", w);
        double util = 0.4 + 0.15 * (rand_r(rng) % 5), vf = 0.5 + 0.1 * (rand_r(rng) % 4);
        double rate = 10 + rand_r(rng) % 30;
        for (size_t c = 0; c < nc; c++)
            for (size_t k = 0; k < 6; k++) {
                double s, pw, lim = caps[c] > 0 ? caps[c] : 700;
                dvfs(util * slices[k] / 7.0, lim, vf, &s, &pw);
                row(p, name, parts[k], rate * slices[k] / 7.0 * s, pw, caps[c] > 0 ? caps[c] : NAN);
            }
    }
    return p;
}

static double objective(const struct mb_plan_options *o, double e, double m)
{
    return o->objective == MB_PLAN_ENERGY ? e : m;
}

/* Random fleets: the per-GPU plan is never worse than the best shared limit, caps or not. */
static void test_never_worse(void **state)
{
    (void)state;
    const double caps[] = {0, 450, 300, 200};
    unsigned rng = 29;
    size_t better = 0;
    for (int t = 0; t < 12; t++) {
        struct mb_plan_profiles *p = random_profiles(&rng, caps, 4);
        size_t n = 6 + rand_r(&rng) % 20;
        struct mb_plan_job jobs[32];
        for (size_t j = 0; j < n; j++) {
            char name[32], w[32];
            snprintf(name, sizeof(name), "j%zu", j);
            snprintf(w, sizeof(w), "w%d", rand_r(&rng) % 4);
            job(&jobs[j], name, w, 1000.0 * (1 + rand_r(&rng) % 8));
        }
        struct mb_plan_options o = {.objective = t % 2 ? MB_PLAN_MAKESPAN : MB_PLAN_ENERGY,
                                    .count = 2 + (unsigned)(t % 3),
                                    .threads = 1,
                                    .seed = (uint64_t)t,
                                    .time_limit_s = 30};
        struct mb_plan_cap_result res[4];
        struct mb_plan *pl = NULL;
        struct mb_error err;
        assert_int_equal(mb_plan_solve_caps(h100, p, jobs, n, &o, caps, 4, res, &pl, &err), MB_OK);
        /* With a cap halfway between the best shared plan's figure and the default's. */
        double lo = INFINITY;
        for (size_t i = 0; i < 4; i++)
            if (res[i].status == MB_OK)
                lo = fmin(lo, objective(&o, res[i].energy_j, res[i].makespan_s));
        double got = objective(&o, pl->energy_j, pl->makespan_s);
        assert_true(got <= lo * (1 + 1e-9));
        better += got < lo * (1 - 1e-6);
        if (o.objective == MB_PLAN_ENERGY)
            o.makespan_cap_s = 0.5 * (res[0].makespan_s + pl->makespan_s) * 1.05;
        else
            o.energy_cap_j = 0.5 * (res[3].energy_j + res[0].energy_j);
        mb_plan_destroy(pl);
        pl = NULL;
        if (mb_plan_solve_caps(h100, p, jobs, n, &o, caps, 4, res, &pl, &err) == MB_OK) {
            lo = INFINITY;
            for (size_t i = 0; i < 4; i++)
                if (res[i].status == MB_OK)
                    lo = fmin(lo, objective(&o, res[i].energy_j, res[i].makespan_s));
            got = objective(&o, pl->energy_j, pl->makespan_s);
            assert_true(got <= lo * (1 + 1e-9));
            better += got < lo * (1 - 1e-6);
            if (o.objective == MB_PLAN_ENERGY)
                assert_true(pl->makespan_s <= o.makespan_cap_s * (1 + 1e-9));
            else
                assert_true(pl->energy_j <= o.energy_cap_j * (1 + 1e-9));
        }
        mb_plan_destroy(pl);
        mb_plan_profiles_destroy(p);
    }
    fprintf(stderr, "per-GPU limits beat the best shared limit in %zu of the runs\n", better);
}

/* The same seed and thread count give the same plan, limits included. */
static void test_deterministic(void **state)
{
    (void)state;
    const double caps[] = {0, 450, 300};
    unsigned rng = 7;
    struct mb_plan_profiles *p = random_profiles(&rng, caps, 3);
    struct mb_plan_job jobs[40];
    for (size_t j = 0; j < 40; j++) {
        char name[32], w[32];
        snprintf(name, sizeof(name), "j%zu", j);
        snprintf(w, sizeof(w), "w%zu", j % 4);
        job(&jobs[j], name, w, 500.0 * (double)(1 + j % 7));
    }
    struct mb_plan_options o = {.objective = MB_PLAN_ENERGY,
                                .count = 4,
                                .threads = 2,
                                .seed = 5,
                                .time_limit_s = 60,
                                .makespan_cap_s = 4000};
    struct mb_plan *a = NULL, *b = NULL;
    struct mb_error err;
    assert_int_equal(mb_plan_solve_caps(h100, p, jobs, 40, &o, caps, 3, NULL, &a, &err), MB_OK);
    assert_int_equal(mb_plan_solve_caps(h100, p, jobs, 40, &o, caps, 3, NULL, &b, &err), MB_OK);
    assert_false(a->time_limited);
    assert_true(a->energy_j == b->energy_j && a->makespan_s == b->makespan_s);
    for (unsigned g = 0; g < 4; g++) {
        double la = a->gpus[g].power_limit_w, lb = b->gpus[g].power_limit_w;
        assert_true((isnan(la) && isnan(lb)) || la == lb);
    }
    for (size_t j = 0; j < 40; j++) {
        assert_int_equal(a->slots[j].gpu, b->slots[j].gpu);
        assert_int_equal(a->slots[j].instance, b->slots[j].instance);
        assert_int_equal(a->slots[j].profile, b->slots[j].profile);
    }
    mb_plan_destroy(a);
    mb_plan_destroy(b);
    mb_plan_profiles_destroy(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_energy_under_makespan_cap),
        cmocka_unit_test(test_makespan_under_energy_cap),
        cmocka_unit_test(test_job_without_row),
        cmocka_unit_test(test_deadlines),
        cmocka_unit_test(test_never_worse),
        cmocka_unit_test(test_deterministic),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
