/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The plan JSON (plan_io.h): a solved plan written and read back gives the same figures; and
 * plan verification against a small results directory, every expected number worked by hand in
 * the comments.
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
#include <sys/stat.h>
#include <unistd.h>

#include "base/json_io.h"
#include "migbench/analysis.h"
#include "migbench/plan.h"
#include "migbench/plan_io.h"
#include "migbench/report_verbs.h"

#include "h100_fixture.h"

static void add_row(struct mb_plan_profiles *p, const char *w, const char *part, double thr,
                    double power)
{
    struct mb_plan_profile r;
    memset(&r, 0, sizeof(r));
    snprintf(r.workload, sizeof(r.workload), "%s", w);
    snprintf(r.gpu, sizeof(r.gpu), "H100-80GB");
    snprintf(r.partition, sizeof(r.partition), "%s", part);
    snprintf(r.unit, sizeof(r.unit), "samples");
    snprintf(r.source, sizeof(r.source), "test");
    r.throughput = thr;
    r.power_w = power;
    r.idle_power_w = 61.5;
    r.peak_mem_mib = NAN;
    struct mb_error err;
    if (mb_plan_profiles_add(p, cat, &r, &err) != MB_OK)
        fail_msg("add_row: %s", err.msg);
}

static int close_to(double a, double b)
{
    return fabs(a - b) <= 1e-14 * fmax(fabs(a), fabs(b));
}

/* A plan of three jobs on two H100s, solved from made-up profiles. */
struct rt_fixture {
    struct mb_plan_profiles *prof;
    struct mb_plan_job jobs[3];
    struct mb_plan_jobset js;
    struct mb_plan *p;
    struct mb_plan_context c;
};

static void rt_setup(struct rt_fixture *fx)
{
    memset(fx, 0, sizeof(*fx));
    assert_int_equal(mb_plan_profiles_create(&fx->prof, NULL), MB_OK);
    static const char *const parts[] = {"1g.10gb", "2g.20gb", "3g.40gb", "4g.40gb", "full"};
    static const double sl[] = {1, 2, 3, 4, 7};
    for (size_t i = 0; i < 5; i++) {
        add_row(fx->prof, "resnet", parts[i], 100.0 / 3 * pow(sl[i], 0.7), 90 + 40 * sl[i]);
        add_row(fx->prof, "gpt", parts[i], 1000.0 / 7 * pow(sl[i], 0.9), 100 + 50 * sl[i]);
    }
    struct mb_plan_job *jobs = fx->jobs;
    static const char *const names[] = {"a", "b", "c"};
    for (size_t j = 0; j < 3; j++) {
        snprintf(jobs[j].name, sizeof(jobs[j].name), "%s", names[j]);
        snprintf(jobs[j].workload, sizeof(jobs[j].workload), "%s", j == 1 ? "gpt" : "resnet");
        jobs[j].work = 1e5 / (double)(j + 3);
        jobs[j].deadline_s = NAN;
        jobs[j].memory_mib = NAN;
    }
    fx->js.n_jobs = 3;
    fx->js.jobs = jobs;
    struct mb_plan_options po = {.objective = MB_PLAN_ENERGY, .count = 2};
    po.makespan_cap_s = NAN;
    po.energy_cap_j = NAN;
    struct mb_error err;
    assert_int_equal(mb_plan_solve(h100, fx->prof, jobs, 3, &po, &fx->p, &err), MB_OK);
    fx->c = (struct mb_plan_context){h100, fx->prof, &fx->js, "test"};
}

static void rt_teardown(struct rt_fixture *fx)
{
    mb_plan_destroy(fx->p);
    mb_plan_profiles_destroy(fx->prof);
}

static void test_round_trip(void **state)
{
    (void)state;
    struct rt_fixture fx;
    rt_setup(&fx);
    struct mb_plan *p = fx.p;
    struct mb_plan_context c = fx.c;
    const struct mb_plan_job *jobs = fx.jobs;
    struct mb_error err;
    char *buf = NULL;
    size_t len = 0;
    FILE *f;

    f = open_memstream(&buf, &len);
    assert_non_null(f);
    assert_int_equal(mb_plan_json_write(f, &c, p), MB_OK);
    assert_int_equal(fclose(f), 0);
    struct mb_plan_record r;
    assert_int_equal(mb_plan_record_parse(buf, len, "mem", &r, &err), MB_OK);
    assert_string_equal(r.gpu_model, h100->name);
    assert_true(r.count == 2);
    assert_true(close_to(r.idle_power_w, p->idle_power_w));
    assert_true(close_to(r.makespan_s, p->makespan_s));
    assert_true(close_to(r.energy_j, p->energy_j));
    assert_int_equal(r.njobs, 3);
    for (size_t j = 0; j < 3; j++) {
        const struct mb_plan_slot *s = &p->slots[j];
        const struct mb_plan_record_job *x = &r.jobs[j];
        assert_string_equal(x->name, jobs[s->job].name);
        assert_string_equal(x->workload, jobs[s->job].workload);
        /* cJSON prints 15 significant digits (17 only when 15 are not within its epsilon). */
        assert_true(close_to(x->work, jobs[s->job].work));
        assert_true(x->gpu == s->gpu && x->instance == s->instance && x->order == s->order);
        assert_true(close_to(x->throughput, s->throughput));
        assert_true(close_to(x->time_s, s->time_s));
        assert_true(close_to(x->dynamic_j, s->dynamic_j));
    }
    mb_plan_record_free(&r);
    assert_null(r.jobs);
    /* Not a plan: the message names the source. */
    assert_int_equal(mb_plan_record_parse("{}", 2, "x.json", &r, &err), MB_EPARSE);
    assert_non_null(strstr(err.msg, "x.json: not a plan written by 'migbench plan --json'"));
    assert_int_equal(mb_plan_record_parse("{", 1, "y.json", &r, &err), MB_EPARSE);
    assert_non_null(strstr(err.msg, "y.json"));
    free(buf);

    rt_teardown(&fx);
}

/* The text renderers: a finite plan on two GPUs, its figures, the cap table, the front. */
static void test_plan_text(void **state)
{
    (void)state;
    struct rt_fixture fx;
    rt_setup(&fx);
    struct mb_plan *p = fx.p;
    struct mb_plan_context c = fx.c;
    char *buf = NULL;
    size_t len = 0;
    FILE *f;
    f = open_memstream(&buf, &len);
    assert_non_null(f);
    mb_plan_text_write(f, &c, p);
    struct mb_plan_cap_result cr[2] = {{.power_limit_w = NAN, .status = MB_OK},
                                       {.power_limit_w = 300, .status = MB_EINFEASIBLE}};
    cr[0].energy_j = 1500;
    cr[0].makespan_s = 3725;
    mb_plan_caps_text_write(f, p, cr, 2);
    struct mb_plan *front[1] = {p};
    mb_plan_pareto_text_write(f, &c, front, 1, 2);
    assert_int_equal(fclose(f), 0);
    assert_non_null(strstr(buf, "plan: 3 jobs on 2 x H100"));
    assert_non_null(strstr(buf, "profiles: test; idle power "));
    assert_non_null(strstr(buf, "\nGPU 0: "));
    assert_non_null(strstr(buf, "\nGPU 1: "));
    assert_non_null(strstr(buf, "\njobs:\n  job "));
    assert_non_null(strstr(buf, "\npredicted: makespan "));
    assert_non_null(strstr(buf, "energy per unit: "));
    assert_null(strstr(buf, "PROXY\n")); /* no proxy rows, no note */
    assert_non_null(strstr(buf, "  default          1.500 kJ     1h 02m 05s  <- chosen"));
    assert_non_null(strstr(buf, "  300 W                   -              -  ("));
    assert_non_null(strstr(buf, "energy vs makespan front: 1 plan on 2 x H100"));
    free(buf);

    rt_teardown(&fx);
}

/* The emitted files: no command for a workload until the jobs file gives one. */
static void test_plan_emit(void **state)
{
    (void)state;
    struct rt_fixture fx;
    rt_setup(&fx);
    struct mb_plan *p = fx.p;
    struct mb_plan_context c = fx.c;
    char *buf = NULL;
    size_t len = 0;
    FILE *f;
    assert_string_equal(mb_plan_uncommanded_workload(&c, NULL), "resnet");
    struct mb_plan_workload wl[2];
    memset(wl, 0, sizeof(wl));
    char *argv_r[] = {(char *)"train", (char *)"--model=\"r\""}, *argv_g[] = {(char *)"gpt"};
    snprintf(wl[0].name, sizeof(wl[0].name), "resnet");
    wl[0].argc = 2;
    wl[0].argv[0] = argv_r[0];
    wl[0].argv[1] = argv_r[1];
    snprintf(wl[1].name, sizeof(wl[1].name), "gpt");
    wl[1].argc = 1;
    wl[1].argv[0] = argv_g[0];
    fx.js.workloads = wl;
    fx.js.n_workloads = 2;
    assert_null(mb_plan_uncommanded_workload(&c, NULL));
    f = open_memstream(&buf, &len);
    assert_non_null(f);
    assert_int_equal(mb_plan_write_experiment(f, &c, p, NULL), MB_OK);
    assert_int_equal(mb_plan_write_mig_parted(f, &c, p), MB_OK);
    assert_int_equal(fclose(f), 0);
    /* YAML double-quoted scalars escape the quote; every job is a workload; a run per queue. */
    assert_non_null(strstr(buf, "\"a\":\n    command: [\"train\", \"--model=\\\"r\\\"\"]"));
    assert_non_null(strstr(buf, "  - {name: g0-r1, mode: "));
    assert_non_null(strstr(buf, "version: v1\nmig-configs:\n  migbench-plan:\n"));
    free(buf);
    rt_teardown(&fx);
}

static char tmpdir[64];

static void write_cell(const char *run, int rep, const char *status, const char *energy,
                       const char *jobs)
{
    char path[256];
    snprintf(path, sizeof(path), "%s/%s", tmpdir, run);
    mkdir(path, 0755);
    snprintf(path, sizeof(path), "%s/%s/%d", tmpdir, run, rep);
    assert_int_equal(mkdir(path, 0755), 0);
    snprintf(path, sizeof(path), "%s/%s/%d/cell.json", tmpdir, run, rep);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f,
            "{\"schema\":1,\"run\":\"%s\",\"mode\":\"mig\",\"rep\":%d,\"status\":\"%s\","
            "\"device\":{\"backend\":\"emu\",\"emulated\":true},\"energy\":%s,\"jobs\":%s}",
            run, rep, status, energy, jobs);
    fclose(f);
}

static struct mb_plan_record hand_plan(void)
{
    /* One GPU: a on instance 0; b then c on instance 1. */
    struct mb_plan_record r;
    memset(&r, 0, sizeof(r));
    snprintf(r.gpu_model, sizeof(r.gpu_model), "H100-80GB");
    r.count = 1;
    r.idle_power_w = 60;
    r.makespan_s = 120;
    r.energy_j = 15000;
    r.njobs = 3;
    r.jobs = calloc(3, sizeof(*r.jobs));
    assert_non_null(r.jobs);
    static const char *const n[] = {"a", "b", "c"};
    static const double work[] = {1000, 600, 500}, inst[] = {0, 1, 1}, order[] = {0, 0, 1};
    for (size_t j = 0; j < 3; j++) {
        snprintf(r.jobs[j].name, sizeof(r.jobs[j].name), "%s", n[j]);
        r.jobs[j].work = work[j];
        r.jobs[j].gpu = 0;
        r.jobs[j].instance = inst[j];
        r.jobs[j].order = order[j];
        r.jobs[j].throughput = 9;
        r.jobs[j].time_s = 100;
        r.jobs[j].dynamic_j = 1000;
    }
    return r;
}

/* Results of two runs, r1 (a and b) and r2 (c beside an unplanned job), under tmpdir. */
static void write_verify_cells(void)
{
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/mb-planio-XXXXXX");
    assert_non_null(mkdtemp(tmpdir));
    /* r1: a on 4g (10/s), b on 3g (20/s); 120 W mean, 50 W idle: 70 W above idle split 4:3,
     * a 40 W, b 30 W. A job the plan does not know ("x") counts for the slices only. */
    write_cell("r1", 0, "ok", "{\"mean_power_w\":120,\"idle_power_w\":50}",
               "[{\"name\":\"a\",\"workload\":\"a\",\"instance\":{\"profile\":\"4g.40gb\"},"
               "\"argv\":[\"python\",\"a.py\",7],\"throughput\":{\"mean\":10}},"
               "{\"name\":\"b\",\"workload\":\"b\",\"instance\":{\"profile\":\"3g.40gb\"},"
               "\"throughput\":{\"mean\":20}}]");
    /* A failed repetition is never averaged in. */
    write_cell("r1", 1, "failed", "{\"mean_power_w\":999,\"idle_power_w\":1}",
               "[{\"name\":\"a\",\"workload\":\"a\",\"throughput\":{\"mean\":1000}},"
               "{\"name\":\"b\",\"workload\":\"b\",\"throughput\":{\"mean\":1000}}]");
    /* r2: c (matched by its workload name) on 3g at 5/s with a 1g job "x" beside it; 90 W mean,
     * 50 W idle: 40 W split 3:1, c 30 W. */
    write_cell("r2", 0, "ok", "{\"mean_power_w\":90,\"idle_power_w\":50}",
               "[{\"name\":\"job-c\",\"workload\":\"c\",\"instance\":{\"profile\":\"3g.40gb\"},"
               "\"throughput\":{\"mean\":5}},"
               "{\"name\":\"x\",\"workload\":\"x\",\"instance\":{\"profile\":\"1g.10gb\"},"
               "\"throughput\":{\"mean\":7}}]");
}

static void remove_verify_cells(void)
{
    static const char *const rm[] = {"r1/0/cell.json",
                                     "r1/1/cell.json",
                                     "r2/0/cell.json",
                                     "r1/0",
                                     "r1/1",
                                     "r2/0",
                                     "r1",
                                     "r2",
                                     ""};
    for (size_t i = 0; i < sizeof(rm) / sizeof(rm[0]); i++) {
        char path[256];
        snprintf(path, sizeof(path), "%s/%s", tmpdir, rm[i]);
        assert_int_equal(remove(path), 0);
    }
}

static void test_verify(void **state)
{
    (void)state;
    write_verify_cells();
    struct mb_analysis *a = NULL;
    struct mb_error err;
    const char *dir = tmpdir;
    assert_int_equal(mb_analysis_load(&a, &dir, 1, &err), MB_OK);
    struct mb_plan_record plan = hand_plan();
    struct mb_plan_check ck;
    assert_int_equal(mb_plan_check(&plan, h100, a, &ck, &err), MB_OK);
    assert_int_equal(ck.cells, 2);
    assert_true(ck.idle_measured);
    assert_float_equal(ck.idle_power_w, 50, 1e-12);
    assert_true(ck.complete);
    /* Times: a 1000/10 = 100 s, b 600/20 = 30 s, c 500/5 = 100 s. */
    assert_float_equal(ck.jobs[0].measured_throughput, 10, 1e-12);
    assert_float_equal(ck.jobs[0].measured_time_s, 100, 1e-9);
    assert_float_equal(ck.jobs[1].measured_time_s, 30, 1e-9);
    assert_float_equal(ck.jobs[2].measured_time_s, 100, 1e-9);
    assert_int_equal(ck.jobs[2].cells, 1);
    /* Dynamic energy: a 40 W x 100 s, b 30 W x 30 s, c 30 W x 100 s. */
    assert_float_equal(ck.jobs[0].measured_dynamic_j, 4000, 1e-6);
    assert_float_equal(ck.jobs[1].measured_dynamic_j, 900, 1e-6);
    assert_float_equal(ck.jobs[2].measured_dynamic_j, 3000, 1e-6);
    /* Queue replay: instance 1 runs b then c, 130 s; energy 1 x 50 W x 130 s + 7900 J. */
    assert_float_equal(ck.measured_makespan_s, 130, 1e-9);
    assert_float_equal(ck.measured_energy_j, 14400, 1e-6);
    assert_float_equal(ck.predicted_makespan_s, 120, 0);
    assert_float_equal(ck.predicted_energy_j, 15000, 0);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    mb_plan_check_text_write(f, &ck, "p.json", "res");
    assert_int_equal(fclose(f), 0);
    assert_non_null(strstr(buf, "verify: plan p.json against res (2 successful cells; idle "
                                "power 50.0 W measured)\n"));
    assert_non_null(strstr(buf, "makespan: predicted 2m 00s, measured 2m 10s (prediction error "
                                "-7.7%)\nenergy: predicted 15.000 kJ, measured 14.400 kJ "
                                "(prediction error +4.2%)\n"));
    free(buf);
    mb_plan_check_free(&ck);

    /* A job without measurements: totals are unknown, never 0. */
    snprintf(plan.jobs[2].name, sizeof(plan.jobs[2].name), "nosuch");
    assert_int_equal(mb_plan_check(&plan, h100, a, &ck, &err), MB_OK);
    assert_false(ck.complete);
    assert_true(isnan(ck.jobs[2].measured_throughput));
    assert_true(isnan(ck.measured_makespan_s) && isnan(ck.measured_energy_j));
    mb_plan_check_free(&ck);

    /* The analysis keeps each run job's recorded command (a non-string argument as ""), and a
     * workload the results recorded a command for needs none in the jobs file. */
    const struct mb_an_run *r1 = &a->exps[0].runs[0];
    assert_string_equal(r1->name, "r1");
    assert_int_equal(r1->jobs[0].argc, 3);
    assert_string_equal(r1->jobs[0].argv[1], "a.py");
    assert_string_equal(r1->jobs[0].argv[2], "");
    assert_null(r1->jobs[1].argv);
    struct mb_plan_job pj[2];
    memset(pj, 0, sizeof(pj));
    snprintf(pj[0].workload, sizeof(pj[0].workload), "a");
    snprintf(pj[1].workload, sizeof(pj[1].workload), "b");
    struct mb_plan_jobset js = {.n_jobs = 1, .jobs = pj};
    struct mb_plan_context c = {h100, NULL, &js, ""};
    assert_null(mb_plan_uncommanded_workload(&c, a));
    js.n_jobs = 2;
    assert_string_equal(mb_plan_uncommanded_workload(&c, a), "b");

    /* A continuous plan cannot be verified. */
    plan.makespan_s = NAN;
    assert_int_equal(mb_plan_check(&plan, h100, a, &ck, &err), MB_EINVAL);
    mb_plan_record_free(&plan);
    mb_analysis_destroy(a);
    remove_verify_cells();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_plan_text),
        cmocka_unit_test(test_plan_emit),
        cmocka_unit_test(test_verify),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
