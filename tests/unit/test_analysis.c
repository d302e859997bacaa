/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Analysis numbers against hand computations. A tiny results directory is written to a temp
 * folder: an exclusive run and a MIG run (4g + 3g), two repetitions each, with round numbers so
 * that every expected value below can be checked with a pocket calculator; the derivation is in
 * the comment next to each assertion.
 */
#define _XOPEN_SOURCE 700 /* nftw */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include "migbench/analysis.h"

static char tmpdir[256];

static void write_file(const char *rel, const char *text)
{
    char path[512], dir[512];
    snprintf(path, sizeof(path), "%s/%s", tmpdir, rel);
    /* mkdir -p of the parent */
    snprintf(dir, sizeof(dir), "%s", path);
    for (char *p = dir + strlen(tmpdir) + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            mkdir(dir, 0755);
            *p = '/';
        }
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* One cell.json; jobs given as ready JSON text. */
static void write_cell(const char *run, const char *mode, int rep, const char *energy,
                       const char *mig, const char *jobs, const char *status)
{
    char rel[128], text[4096];
    snprintf(rel, sizeof(rel), "exp/%s/%d/cell.json", run, rep);
    snprintf(text, sizeof(text),
             "{\"schema\":1,\"experiment\":\"t\",\"run\":\"%s\",\"mode\":\"%s\",\"rep\":%d,"
             "\"status\":\"%s\",\"failure\":%s,\"t0_ns\":1000000000,"
             "\"window\":{\"start_ns\":1000000000,\"end_ns\":%s,\"seconds\":%s},"
             "\"device\":{\"backend\":\"emu\",\"emulated\":true,\"model\":\"H100-80GB\","
             "\"mig\":{\"instances\":%s}},\"energy\":%s,\"jobs\":%s,\"unknown\":[1,2]}",
             run, mode, rep, status,
             strcmp(status, "ok") ? "{\"job\":\"A\",\"reason\":\"out of memory\"}" : "null",
             strcmp(mode, "exclusive") == 0 ? "21000000000" : "11000000000",
             strcmp(mode, "exclusive") == 0 ? "20" : "10", mig, energy, jobs);
    write_file(rel, text);
}

static int setup(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/mb-analysis-XXXXXX");
    assert_non_null(mkdtemp(tmpdir));
    write_file("exp/journal.jsonl", "{\"event\":\"experiment_started\"}\n");
    /* Exclusive: A then B, 10 s each; no telemetry, so the interval split is by duration. */
    write_cell("exclusive", "exclusive", 0, "{\"counter_j\":3000.0,\"integrated_j\":3010.0}", "[]",
               "[{\"name\":\"A\",\"workload\":\"a\",\"unit\":\"images\",\"steps\":100,"
               "\"units\":1000,\"throughput\":{\"mean\":100},\"started_ns\":1000000000,"
               "\"ended_ns\":11000000000},"
               "{\"name\":\"B\",\"workload\":\"b\",\"unit\":\"tokens\",\"steps\":50,"
               "\"units\":500,\"throughput\":{\"mean\":50},\"started_ns\":11000000000,"
               "\"ended_ns\":21000000000}]",
               "ok");
    write_cell("exclusive", "exclusive", 1, "{\"counter_j\":3300.003}", "[]",
               "[{\"name\":\"A\",\"workload\":\"a\",\"steps\":110,\"units\":1100,"
               "\"throughput\":{\"mean\":110},\"started_ns\":1000000000,"
               "\"ended_ns\":11000000000},"
               "{\"name\":\"B\",\"workload\":\"b\",\"steps\":54,\"units\":540,"
               "\"throughput\":{\"mean\":54},\"started_ns\":11000000000,"
               "\"ended_ns\":21000000000}]",
               "ok");
    const char *mig = "[{\"profile\":\"4g.40gb\",\"gi_id\":1},"
                      "{\"profile\":\"3g.40gb\",\"gi_id\":2}]";
    write_cell("mig", "mig", 0, "{\"counter_j\":1000.003,\"idle_power_w\":50}", mig,
               "[{\"name\":\"A\",\"workload\":\"a\",\"steps\":60,\"units\":600,"
               "\"throughput\":{\"mean\":60}},"
               "{\"name\":\"B\",\"workload\":\"b\",\"steps\":30,\"units\":300,"
               "\"throughput\":{\"mean\":30}}]",
               "ok");
    write_cell("mig", "mig", 1, "{\"counter_j\":1100.0,\"idle_power_w\":50}", mig,
               "[{\"name\":\"A\",\"workload\":\"a\",\"steps\":66,\"units\":660,"
               "\"throughput\":{\"mean\":66}},"
               "{\"name\":\"B\",\"workload\":\"b\",\"steps\":28,\"units\":280,"
               "\"throughput\":{\"mean\":28}}]",
               "ok");
    /* The meter's per-GPU-instance columns, in the window (1..11 s) twice, once outside. */
    write_file("exp/mig/0/telemetry.csv",
               "t_ns,t_s,read_ok,power_mw,energy_mj,gi1_sm_util_pct,gi2_sm_util_pct\n"
               "1000000000,0.0,1,100000,0,90.0,80.0\n"
               "6000000000,5.0,1,100000,500000,90.0,80.0\n"
               "12000000000,11.0,1,100000,1100000,10.0,10.0\n");
    /* A failed cell: counted, never averaged in. */
    write_cell("mig", "mig", 2, "{\"counter_j\":null}", mig,
               "[{\"name\":\"A\",\"workload\":\"a\",\"throughput\":{\"mean\":null}},"
               "{\"name\":\"B\",\"workload\":\"b\",\"throughput\":{\"mean\":null}}]",
               "failed");
    /* Timeslice: one repetition only, no CI. Activity columns in telemetry. */
    write_cell("ts", "timeslice", 0, "{\"counter_j\":7.0}", "[]",
               "[{\"name\":\"A\",\"workload\":\"a\",\"units\":300,\"throughput\":{\"mean\":30}},"
               "{\"name\":\"B\",\"workload\":\"b\",\"units\":100,\"throughput\":{\"mean\":10}}]",
               "ok");
    write_file("exp/ts/0/telemetry.csv", "t_ns,power_w,activity_0,activity_1\n"
                                         "1000000000,100,0.5,0.25\n"
                                         "6000000000,100,0.5,0.25\n"
                                         "11000000000,100,,0.25\n");
    return 0;
}

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static int teardown(void **state)
{
    (void)state;
    return nftw(tmpdir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static struct mb_analysis *load_exp(void)
{
    char dir[300];
    snprintf(dir, sizeof(dir), "%s/exp", tmpdir);
    const char *dirs[] = {dir};
    struct mb_analysis *a = NULL;
    struct mb_error err;
    int st = mb_analysis_load(&a, dirs, 1, &err);
    if (st != MB_OK)
        fail_msg("load failed: %s", err.msg);
    assert_int_equal(a->nexp, 1);
    return a;
}

static const struct mb_an_run *run_named(const struct mb_analysis *a, const char *name)
{
    for (size_t i = 0; i < a->exps[0].nruns; i++)
        if (strcmp(a->exps[0].runs[i].name, name) == 0)
            return &a->exps[0].runs[i];
    fail_msg("no run %s", name);
    return NULL;
}

static void test_split_closure(void **state)
{
    (void)state;
    int64_t parts[MB_AN_JOBS_MAX];
    /* 1000003 mJ over 3: floor(333334.33) twice, the last takes 1000003 - 666668 = 333335. */
    assert_int_equal(mb_analysis_split(1000003, NULL, 3, parts), MB_OK);
    assert_int_equal(parts[0], 333334);
    assert_int_equal(parts[1], 333334);
    assert_int_equal(parts[2], 333335);
    /* 4:2:1 -> floor(4000012/7) = 571430, floor(2000006/7) = 285715, rest 142858. */
    int64_t w[] = {4, 2, 1};
    assert_int_equal(mb_analysis_split(1000003, w, 3, parts), MB_OK);
    assert_int_equal(parts[0], 571430);
    assert_int_equal(parts[1], 285715);
    assert_int_equal(parts[2], 142858);
    assert_int_equal(parts[0] + parts[1] + parts[2], 1000003);
    /* Closure for many awkward totals and weights. */
    int64_t w2[] = {57, 29, 14, 1, 99};
    for (int64_t total = 0; total < 5000; total += 7) {
        assert_int_equal(mb_analysis_split(total, w2, 5, parts), MB_OK);
        int64_t sum = 0;
        for (int i = 0; i < 5; i++) {
            assert_true(parts[i] >= 0);
            sum += parts[i];
        }
        assert_int_equal(sum, total);
    }
    int64_t zero[] = {0, 0};
    assert_int_equal(mb_analysis_split(10, zero, 2, parts), MB_EINVAL);
    assert_int_equal(mb_analysis_split(10, NULL, 0, parts), MB_EINVAL);
}

static void test_exclusive(void **state)
{
    (void)state;
    struct mb_analysis *a = load_exp();
    const struct mb_an_run *r = run_named(a, "exclusive");
    assert_int_equal(r->nok, 2);
    const struct mb_an_job *A = &r->jobs[0], *B = &r->jobs[1];
    assert_string_equal(A->unit, "images/s");
    /* A: 100 and 110 -> mean 105, sd 7.0711, se 5, t(1) 12.7062 -> 63.531. */
    assert_float_equal(A->throughput.mean, 105.0, 1e-9);
    assert_float_equal(A->throughput.ci95, 63.531, 1e-9);
    assert_float_equal(B->throughput.mean, 52.0, 1e-9);
    assert_float_equal(B->throughput.ci95, 25.4124, 1e-9);
    /* The baseline normalised to itself is exactly 1, with no interval. */
    assert_float_equal(A->normalised.mean, 1.0, 1e-12);
    assert_false(A->normalised.ci_valid);
    /* s/step = units/steps / throughput: 10/100 = 0.1 and 10/110 = 0.0909 -> 0.0954545. */
    assert_float_equal(A->s_per_step.mean, (0.1 + 10.0 / 110.0) / 2.0, 1e-12);
    /* Interval by duration, equal 10 s each: rep 0 1500000/1500000 mJ; rep 1 3300003 mJ ->
     * floor(1650001.5) = 1650001 and the rest 1650002. */
    assert_true(r->attr[MB_ATTR_INTERVAL].available);
    assert_int_equal(r->attr[MB_ATTR_INTERVAL].job_mj[0], 1500000 + 1650001);
    assert_int_equal(r->attr[MB_ATTR_INTERVAL].job_mj[1], 1500000 + 1650002);
    assert_int_equal(r->attr[MB_ATTR_INTERVAL].total_mj, 6300003);
    assert_false(r->attr[MB_ATTR_EQUAL].available);
    /* J/unit: A 1500/1000 = 1.5 and 1650.001/1100 = 1.50000091 -> mean 1.50000045. */
    assert_float_equal(A->j_per_unit.mean, 1.5000004545, 1e-9);
    /* B: 3.0 and 1650.002/540 = 3.0555593 -> mean 3.0277796, CI 12.7062 x 0.0277796. */
    assert_float_equal(B->j_per_unit.mean, 3.0277796296, 1e-9);
    assert_float_equal(B->j_per_unit.ci95, 0.3529735300, 1e-8);
    /* Counter preferred over integration; the gap is derived when not given: +0.333%. */
    assert_string_equal(r->cells[0].energy_source, "counter");
    assert_float_equal(r->cells[0].gap_pct.v, 100.0 * 10.0 / 3000.0, 1e-9);
    assert_false(r->stp.valid); /* the baseline is not compared with itself */
    mb_analysis_destroy(a);
}

static void test_mig(void **state)
{
    (void)state;
    struct mb_analysis *a = load_exp();
    const struct mb_an_run *r = run_named(a, "mig");
    assert_int_equal(r->ncells, 3);
    assert_int_equal(r->nok, 2);
    assert_int_equal(r->nfailed, 1);
    assert_string_equal(r->layout, "4g.40gb+3g.40gb");
    assert_int_equal(r->jobs[0].compute_weight, 4);
    assert_int_equal(r->jobs[1].compute_weight, 3);
    /* A: 60, 66 -> 63; normalised 63/105 = 0.6; delta method: relative se 3/63 and 5/105,
     * 0.6 x sqrt(2) x 0.047619 x 12.7062 = 0.51341. */
    assert_float_equal(r->jobs[0].normalised.mean, 0.6, 1e-12);
    assert_float_equal(r->jobs[0].normalised.ci95, 0.5134080104, 1e-8);
    /* STP per rep: 60/105 + 30/52 = 1.148352, 66/105 + 28/52 = 1.167033; mean 1.157692. The
     * CI adds the baseline's variance: sqrt(se_rep^2 + sum (x_R/x_E^2 se_E)^2) x 12.7062. */
    assert_float_equal(r->stp.mean, 1.1576923077, 1e-9);
    assert_float_equal(r->stp.ci95, 0.4692123294, 1e-8);
    assert_float_equal(r->throughput_gain.mean, 0.1576923077, 1e-9);
    /* ANTT per rep: (105/60 + 52/30)/2 and (105/66 + 52/28)/2 -> mean 1.732846. */
    assert_float_equal(r->antt.mean, 1.7328463203, 1e-9);
    assert_float_equal(r->antt.ci95, 0.6773206864, 1e-8);
    /* Energy ratio per rep: E / (units_A x 1.50000045 + units_B x 3.02777963): rep 0
     * 1000.003 / 1808.33 ..., mean 0.575773 -> saving 42.4%. */
    assert_float_equal(r->energy_ratio.mean, 0.5757727515, 1e-9);
    assert_float_equal(r->energy_ratio.ci95, 0.2911959891, 1e-8);
    assert_float_equal(r->energy_saving.mean, 0.4242272485, 1e-9);
    /* Attribution closure, per cell and summed, to the millijoule. Rep 0: 1000003 mJ;
     * equal 500001 + 500002; compute 4:3 floor(4000012/7) = 571430 + 428573; static 50 W x
     * 10 s = 500000 split 250000 each, dynamic 500003 by 4:3 = 285716 + 214287. */
    const struct mb_an_cell *c0 = &r->cells[0];
    assert_int_equal(c0->rep, 0);
    assert_int_equal(c0->energy_mj, 1000003);
    assert_int_equal(c0->attr[MB_ATTR_EQUAL].job_mj[0], 500001);
    assert_int_equal(c0->attr[MB_ATTR_EQUAL].job_mj[1], 500002);
    assert_int_equal(c0->attr[MB_ATTR_COMPUTE_SHARE].job_mj[0], 571430);
    assert_int_equal(c0->attr[MB_ATTR_COMPUTE_SHARE].job_mj[1], 428573);
    assert_int_equal(c0->attr[MB_ATTR_STATIC_DYNAMIC].job_mj[0], 250000 + 285716);
    assert_int_equal(c0->attr[MB_ATTR_STATIC_DYNAMIC].job_mj[1], 250000 + 214287);
    /* Activity from gi<id>_sm_util_pct, weighted by instance size: A 2 x 90% x 4 slices =
     * 720, B 2 x 80% x 3 = 480 (3:2) -> integer weights 1000000 : 666667 ->
     * floor(1000003 x 1000000 / 1666667) = 600001, the rest 400002. */
    assert_true(c0->attr[MB_ATTR_ACTIVITY].available);
    assert_int_equal(c0->attr[MB_ATTR_ACTIVITY].job_mj[0], 600001);
    assert_int_equal(c0->attr[MB_ATTR_ACTIVITY].job_mj[1], 400002);
    assert_false(r->cells[1].attr[MB_ATTR_ACTIVITY].available); /* no telemetry in rep 1 */
    assert_false(r->attr[MB_ATTR_ACTIVITY].available);          /* so not for the run */
    /* Rep 1: 1100000 mJ -> compute floor(4400000/7) = 628571 + 471429. */
    assert_int_equal(r->attr[MB_ATTR_COMPUTE_SHARE].job_mj[0], 571430 + 628571);
    assert_int_equal(r->attr[MB_ATTR_COMPUTE_SHARE].job_mj[1], 428573 + 471429);
    for (int m = 0; m < MB_ATTR_COUNT; m++) {
        if (!r->attr[m].available)
            continue;
        assert_int_equal(r->attr[m].total_mj, 2100003);
        assert_int_equal(r->attr[m].job_mj[0] + r->attr[m].job_mj[1], 2100003);
    }
    assert_string_equal(mb_analysis_method_name(r->default_method), "compute-share");
    /* J/unit of A by compute share: 571.430/600 and 628.571/660 -> mean 0.952381. */
    assert_float_equal(r->jobs[0].j_per_unit.mean, (571.430 / 600.0 + 628.571 / 660.0) / 2.0,
                       1e-12);
    assert_int_equal(r->static_mj, 1000000);
    assert_int_equal(r->dynamic_mj, 1100003);
    /* The failed cell is listed with its reason. */
    const struct mb_an_experiment *e = &a->exps[0];
    assert_int_equal(e->cells_failed, 1);
    int seen = 0;
    for (size_t i = 0; i < e->nnotes; i++)
        seen |= strstr(e->notes[i], "mig rep 2 failed: A: out of memory") != NULL;
    assert_true(seen);
    mb_analysis_destroy(a);
}

static void test_timeslice_single_rep(void **state)
{
    (void)state;
    struct mb_analysis *a = load_exp();
    const struct mb_an_run *r = run_named(a, "ts");
    /* One repetition: a mean, but no interval, and never a made-up 0. */
    assert_true(r->stp.valid);
    assert_false(r->stp.ci_valid);
    assert_float_equal(r->stp.mean, 30.0 / 105.0 + 10.0 / 52.0, 1e-12);
    assert_false(r->jobs[0].s_per_step.valid); /* no steps recorded */
    /* compute-share is not defined for time slicing, and says so. */
    assert_false(r->attr[MB_ATTR_COMPUTE_SHARE].available);
    assert_non_null(strstr(r->attr[MB_ATTR_COMPUTE_SHARE].note, "not defined for timeslice"));
    /* Activity over the window: A 0.5 + 0.5 (one blank sample) = 1.0, B 0.75 -> 4:3 of
     * 7000 mJ = 4000 + 3000. */
    const struct mb_an_cell *c = &r->cells[0];
    assert_true(c->attr[MB_ATTR_ACTIVITY].available);
    assert_int_equal(c->attr[MB_ATTR_ACTIVITY].job_mj[0], 4000);
    assert_int_equal(c->attr[MB_ATTR_ACTIVITY].job_mj[1], 3000);
    assert_false(c->attr[MB_ATTR_STATIC_DYNAMIC].available); /* no idle baseline */
    /* Timeline: three points, 100 W, starting at 0 s. */
    assert_int_equal(c->ntimeline, 3);
    assert_float_equal(c->timeline[0].t_s, 0.0, 1e-12);
    assert_float_equal(c->timeline[2].t_s, 10.0, 1e-12);
    assert_float_equal(c->timeline[1].power_w, 100.0, 1e-12);
    mb_analysis_destroy(a);
}

/* Every cell of the committed H100 fixture closes to the millijoule under every method. */
static void test_golden_closure(void **state)
{
    (void)state;
    const char *dirs[] = {MB_SOURCE_DIR "/tests/golden/results-h100",
                          MB_SOURCE_DIR "/tests/golden/results-a100"};
    struct mb_analysis *a = NULL;
    struct mb_error err;
    assert_int_equal(mb_analysis_load(&a, dirs, 2, &err), MB_OK);
    assert_int_equal(a->nexp, 2);
    size_t checked = 0;
    for (size_t x = 0; x < a->nexp; x++) {
        const struct mb_an_experiment *e = &a->exps[x];
        assert_true(e->emulated);
        assert_string_equal(e->runs[0].mode, "exclusive");
        for (size_t i = 0; i < e->nruns; i++)
            for (size_t k = 0; k < e->runs[i].ncells; k++) {
                const struct mb_an_cell *c = &e->runs[i].cells[k];
                for (int m = 0; m < MB_ATTR_COUNT; m++) {
                    if (!c->attr[m].available)
                        continue;
                    int64_t sum = 0;
                    for (size_t j = 0; j < c->njobs; j++)
                        sum += c->attr[m].job_mj[j];
                    assert_int_equal(sum, c->energy_mj);
                    checked++;
                }
            }
    }
    assert_true(checked > 30);
    assert_int_equal(a->exps[0].cells_total, 12);
    assert_int_equal(a->exps[0].cells_failed, 1);
    /* The journal's interrupted fourth mig repetition, and its torn last line. */
    assert_int_equal(a->exps[0].cells_unfinished, 1);
    assert_int_equal(a->exps[1].cells_unfinished, 0);
    mb_analysis_destroy(a);
}

/* Each workload measured alone in its own exclusive run, as in DESIGN.md's example. */
static void test_solo_baselines(void **state)
{
    (void)state;
    write_file("solo/solo-a/0/cell.json",
               "{\"run\":\"solo-a\",\"mode\":\"exclusive\",\"status\":\"ok\","
               "\"jobs\":[{\"name\":\"a\",\"throughput\":{\"mean\":200}}]}");
    write_file("solo/solo-b/0/cell.json",
               "{\"run\":\"solo-b\",\"mode\":\"exclusive\",\"status\":\"ok\","
               "\"jobs\":[{\"name\":\"b\",\"throughput\":{\"mean\":40}}]}");
    write_file("solo/both/0/cell.json",
               "{\"run\":\"both\",\"mode\":\"timeslice\",\"status\":\"ok\","
               "\"jobs\":[{\"name\":\"b\",\"throughput\":{\"mean\":30}},"
               "{\"name\":\"a\",\"throughput\":{\"mean\":50}}]}");
    char dir[300];
    snprintf(dir, sizeof(dir), "%s/solo", tmpdir);
    const char *dirs[] = {dir};
    struct mb_analysis *a = NULL;
    struct mb_error err;
    assert_int_equal(mb_analysis_load(&a, dirs, 1, &err), MB_OK);
    const struct mb_an_experiment *e = &a->exps[0];
    assert_int_equal(e->nruns, 3);
    /* Sorted: exclusive runs first (by name), then timeslice. */
    assert_string_equal(e->runs[0].name, "solo-a");
    assert_string_equal(e->runs[2].name, "both");
    const struct mb_an_run *r = &e->runs[2];
    assert_true(r->has_baseline);
    /* b: 30/40 = 0.75, a: 50/200 = 0.25; STP 1.0 and no energy anywhere: n/a, not 0. */
    assert_float_equal(r->jobs[0].normalised.mean, 0.75, 1e-12);
    assert_float_equal(r->jobs[1].normalised.mean, 0.25, 1e-12);
    assert_float_equal(r->stp.mean, 1.0, 1e-12);
    assert_false(r->energy_saving.valid);
    assert_false(r->energy_j.valid);
    assert_false(r->attr[MB_ATTR_EQUAL].available);
    mb_analysis_destroy(a);
}

/* Array tasks keep their own journals (journal-NAME.jsonl): their unfinished cells and
 * interruptions count like the main journal's. */
static void test_task_journals(void **state)
{
    (void)state;
    write_file("tasks/journal.jsonl", "{\"event\":\"experiment_started\"}\n");
    write_file("tasks/journal-7_0.jsonl",
               "{\"event\":\"cell_started\",\"run\":\"solo\",\"rep\":0}\n"
               "{\"event\":\"interrupted\",\"signal\":15,\"run\":\"solo\",\"rep\":0}\n");
    write_file("tasks/journal-7_1.jsonl",
               "{\"event\":\"cell_started\",\"run\":\"solo\",\"rep\":1}\n{torn");
    write_file("tasks/journal.jsonl.lock", "");
    /* One finished cell, a copy of the main fixture's first. */
    char src[400];
    snprintf(src, sizeof(src), "%s/exp/exclusive/0/cell.json", tmpdir);
    FILE *f = fopen(src, "r");
    assert_non_null(f);
    static char cell[65536];
    size_t len = fread(cell, 1, sizeof(cell) - 1, f);
    fclose(f);
    cell[len] = '\0';
    write_file("tasks/exclusive/0/cell.json", cell);
    write_file("tasks/journalish.txt", "{\"event\":\"cell_started\",\"run\":\"x\",\"rep\":0}\n");
    char dir[300];
    snprintf(dir, sizeof(dir), "%s/tasks", tmpdir);
    const char *dirs[] = {dir};
    struct mb_analysis *a = NULL;
    struct mb_error err;
    int st = mb_analysis_load(&a, dirs, 1, &err);
    if (st != MB_OK)
        fail_msg("load: %s", err.msg);
    assert_int_equal(a->exps[0].cells_unfinished, 2);
    bool interrupted = false, torn = false;
    for (size_t i = 0; i < a->exps[0].nnotes; i++) {
        interrupted |= strstr(a->exps[0].notes[i], "1 interruption") != NULL;
        torn |= strstr(a->exps[0].notes[i], "1 unreadable journal line") != NULL;
    }
    assert_true(interrupted);
    assert_true(torn);
    mb_analysis_destroy(a);
}

/* The journal is read by its one reader, up to the writer's line limit (64 KiB): a 10 KiB
 * cell_started line is a cell that wrote no cell.json, not an unreadable line (the analysis
 * once had its own reader with an 8 KiB buffer). */
static void test_long_journal_line(void **state)
{
    (void)state;
    static char line[12000];
    int n = snprintf(line, sizeof(line),
                     "{\"event\":\"cell_started\",\"run\":\"solo\",\"rep\":4,"
                     "\"pad\":\"");
    memset(line + n, 'x', 10000);
    snprintf(line + n + 10000, sizeof(line) - (size_t)n - 10000, "\"}\n");
    write_file("long/journal.jsonl", line);
    char src[400];
    snprintf(src, sizeof(src), "%s/exp/exclusive/0/cell.json", tmpdir);
    FILE *f = fopen(src, "r");
    assert_non_null(f);
    static char cell[65536];
    size_t len = fread(cell, 1, sizeof(cell) - 1, f);
    fclose(f);
    cell[len] = '\0';
    write_file("long/exclusive/0/cell.json", cell);
    char dir[300];
    snprintf(dir, sizeof(dir), "%s/long", tmpdir);
    const char *dirs[] = {dir};
    struct mb_analysis *a = NULL;
    struct mb_error err;
    if (mb_analysis_load(&a, dirs, 1, &err) != MB_OK)
        fail_msg("load: %s", err.msg);
    assert_int_equal(a->exps[0].cells_unfinished, 1);
    for (size_t i = 0; i < a->exps[0].nnotes; i++)
        assert_null(strstr(a->exps[0].notes[i], "unreadable journal line"));
    mb_analysis_destroy(a);
}

static bool has_note(const struct mb_an_experiment *e, const char *text)
{
    for (size_t i = 0; i < e->nnotes; i++)
        if (strstr(e->notes[i], text))
            return true;
    return false;
}

/* A multi-GPU run: the GPUs are counted and the board-to-board spread of exclusive runs noted. */
static void test_gpus_and_board_spread(void **state)
{
    (void)state;
    static const char *const gpu[4] = {"GPU-a", "GPU-b", "GPU-a", "GPU-b"};
    static const int tp[4] = {100, 110, 100, 110};
    for (int rep = 0; rep < 4; rep++) {
        char rel[64], text[512];
        snprintf(rel, sizeof(rel), "node/solo/%d/cell.json", rep);
        snprintf(text, sizeof(text),
                 "{\"run\":\"solo\",\"mode\":\"exclusive\",\"rep\":%d,\"status\":\"ok\","
                 "\"device\":{\"backend\":\"emu\",\"uuid\":\"%s\"},"
                 "\"jobs\":[{\"name\":\"a\",\"argv\":[\"/usr/bin/python3\",\"x.py\"],"
                 "\"throughput\":{\"mean\":%d}}]}",
                 rep, gpu[rep], tp[rep]);
        write_file(rel, text);
    }
    char dir[300];
    snprintf(dir, sizeof(dir), "%s/node", tmpdir);
    const char *dirs[] = {dir};
    struct mb_analysis *a = NULL;
    struct mb_error err;
    assert_int_equal(mb_analysis_load(&a, dirs, 1, &err), MB_OK);
    const struct mb_an_experiment *e = &a->exps[0];
    assert_string_equal(e->runs[0].cells[1].gpu_uuid, "GPU-b");
    assert_true(has_note(e, "cells ran on 2 GPUs"));
    /* 100 and 110 around a mean of 105: 9.5% of it. */
    assert_true(has_note(e, "board spread: solo a per-GPU throughput 100..110 (9.5% of the mean"));
    assert_int_equal(e->nworkloads, 1);
    assert_int_equal(e->norigins, 1);
    assert_int_equal(e->runs[0].cells[3].origin, 0);
    mb_analysis_destroy(a);

    /* The same GPU for every cell: nothing to say. */
    a = load_exp();
    assert_false(has_note(&a->exps[0], "GPUs"));
    mb_analysis_destroy(a);
}

/* The runner's flag decides (it allows for the averaging at the window's edges): a 4 % gap
 * flagged "ok" is not counted, one flagged "gap" is; a cell without a flag falls back to 2 %. */
static void test_gap_flag_from_runner(void **state)
{
    (void)state;
    static const char *const energy[3] = {
        "{\"counter_j\":3500,\"integrated_j\":3360,\"gap_pct\":-4.0,\"flag\":\"ok\"}",
        "{\"counter_j\":3500,\"integrated_j\":3150,\"gap_pct\":-10.0,\"flag\":\"gap\"}",
        "{\"counter_j\":3500,\"integrated_j\":3325,\"gap_pct\":-5.0}"};
    for (int rep = 0; rep < 3; rep++) {
        char rel[64], text[512];
        snprintf(rel, sizeof(rel), "gaps/solo/%d/cell.json", rep);
        snprintf(text, sizeof(text),
                 "{\"run\":\"solo\",\"mode\":\"exclusive\",\"rep\":%d,\"status\":\"ok\","
                 "\"energy\":%s,\"jobs\":[{\"name\":\"a\",\"throughput\":{\"mean\":10}}]}",
                 rep, energy[rep]);
        write_file(rel, text);
    }
    char dir[300];
    snprintf(dir, sizeof(dir), "%s/gaps", tmpdir);
    const char *dirs[] = {dir};
    struct mb_analysis *a = NULL;
    struct mb_error err;
    assert_int_equal(mb_analysis_load(&a, dirs, 1, &err), MB_OK);
    const struct mb_an_experiment *e = &a->exps[0];
    assert_int_equal(e->cells_gap_flagged, 2);
    assert_false(has_note(e, "solo rep 0: counter vs integrated"));
    assert_true(has_note(e, "solo rep 1: counter vs integrated energy gap -10.0%"));
    assert_true(has_note(e, "solo rep 2: counter vs integrated energy gap -5.0%"));
    mb_analysis_destroy(a);
}

static void test_bad_input(void **state)
{
    (void)state;
    struct mb_analysis *a = NULL;
    struct mb_error err;
    const char *missing[] = {"/nonexistent/results"};
    assert_int_equal(mb_analysis_load(&a, missing, 1, &err), MB_ENOTFOUND);
    assert_non_null(strstr(err.msg, "/nonexistent/results"));
    assert_null(a);

    char dir[300];
    snprintf(dir, sizeof(dir), "%s/empty", tmpdir);
    mkdir(dir, 0755);
    const char *empty[] = {dir};
    assert_int_equal(mb_analysis_load(&a, empty, 1, &err), MB_ENOTFOUND);
    assert_non_null(strstr(err.msg, "not a results directory"));

    write_file("bad/journal.jsonl", "\n");
    write_file("bad/r/0/cell.json", "{\"run\": \"r\", \"mode\": \"mig\", \"jobs\": [");
    snprintf(dir, sizeof(dir), "%s/bad", tmpdir);
    const char *bad[] = {dir};
    assert_int_equal(mb_analysis_load(&a, bad, 1, &err), MB_EPARSE);
    assert_non_null(strstr(err.msg, "bad/r/0/cell.json"));
    assert_non_null(strstr(err.msg, "not valid JSON"));

    write_file("bad/r/0/cell.json", "{\"run\": \"r\", \"jobs\": []}");
    assert_int_equal(mb_analysis_load(&a, bad, 1, &err), MB_EPARSE);
    assert_non_null(strstr(err.msg, "field 'mode'"));
    assert_null(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_split_closure),
        cmocka_unit_test(test_exclusive),
        cmocka_unit_test(test_mig),
        cmocka_unit_test(test_timeslice_single_rep),
        cmocka_unit_test(test_golden_closure),
        cmocka_unit_test(test_solo_baselines),
        cmocka_unit_test(test_task_journals),
        cmocka_unit_test(test_long_journal_line),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_gpus_and_board_spread),
        cmocka_unit_test(test_gap_flag_from_runner),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
