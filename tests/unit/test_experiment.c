/* SPDX-License-Identifier: Apache-2.0 */
/* Experiment files: parsing, every kind of error with file:line:field, overrides, cells, argv
 * substitution and interpreter resolution with fake interpreters. */
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

#include "run/experiment_internal.h"
#include "migbench/experiment.h"
#include "migbench/device.h"

/* The MB_CAP_* bits of the host, an emulated GPU and a measured GPU. */
#define HOST_CAPS ((uint32_t)MB_CAP_CPU_PARTITIONS)
#define EMU_CAPS ((uint32_t)(MB_CAP_EMULATED | MB_CAP_GPU | MB_CAP_MIG | MB_CAP_MPS))
#define NVML_CAPS ((uint32_t)(MB_CAP_GPU | MB_CAP_MIG | MB_CAP_MPS))

static const char *GOOD =
    "version: 1\n"   /* 1 */
    "name: quick\n"  /* 2 */
    "device: host\n" /* 3 */
    "workloads:\n"   /* 4 */
    "  resnet18:\n"  /* 5 */
    "    command: [\"{python}\", \"{workloads}/vision.py\", --model, resnet18]\n"
    "    unit: images\n"                                /* 7 */
    "    host_args: [--device, cpu, --batch-size, 8]\n" /* 8 */
    "    gpu_args: [--device, cuda]\n"                  /* 9 */
    "    memory_mib: 12000\n"                           /* 10 */
    "  legacy:\n"                                       /* 11 */
    "    command: [/bin/legacy]\n"                      /* 12 */
    "    progress_regex: 'iter ([0-9]+)'\n"             /* 13 */
    "    samples_per_step: 64\n"                        /* 14 */
    "runs:\n"                                           /* 15 */
    "  - {name: alone, mode: exclusive, jobs: [resnet18, legacy]}\n"
    "  - {name: split, mode: partition, jobs: [resnet18, resnet18]}\n"
    "  - {name: mix, mode: mig, layout: [4g.40gb, 1g.10gb], jobs: [resnet18, legacy]}\n"
    "  - {name: mps, mode: mps, jobs: [resnet18, legacy], match_layout: [4g.40gb, 2g.20gb]}\n"
    "  - {name: gpu-ts, mode: timeslice, jobs: [legacy], only: [gpu]}\n"
    "measure:\n" /* 21 */
    "  warmup: 50 steps\n"
    "  duration: 2m\n"
    "  sample_interval: 50ms\n"
    "  grace: 1.5s\n";

static struct mb_experiment *parse(const char *text, const char *const *ov, size_t n_ov,
                                   struct mb_error *err)
{
    struct mb_experiment *exp = NULL;
    mb_error_clear(err);
    int rc = mb_experiment_parse("exp.yaml", text, strlen(text), ov, n_ov, &exp, err);
    if (rc != MB_OK)
        assert_null(exp);
    return exp;
}

static void test_good_file(void **state)
{
    (void)state;
    struct mb_error err;
    struct mb_experiment *exp = parse(GOOD, NULL, 0, &err);
    if (!exp)
        fail_msg("%s", err.msg);
    assert_string_equal(exp->name, "quick");
    assert_string_equal(exp->device, "host");
    assert_string_equal(exp->python, "auto");
    assert_int_equal(exp->n_workloads, 2);
    assert_int_equal(exp->workloads[0].n_command, 4);
    assert_string_equal(exp->workloads[0].unit, "images");
    assert_int_equal(exp->workloads[0].n_host_args, 4);
    assert_string_equal(exp->workloads[0].host_args[3], "8");
    assert_int_equal(exp->workloads[0].memory_mib, 12000);
    assert_int_equal(exp->workloads[1].memory_mib, -1);
    assert_string_equal(exp->workloads[1].unit, "samples");
    assert_true(exp->workloads[1].samples_per_step == 64.0);
    assert_int_equal(exp->n_runs, 5);
    assert_int_equal(exp->runs[0].mode, MB_MODE_EXCLUSIVE);
    assert_int_equal(exp->runs[0].line, 16);
    assert_string_equal(exp->runs[1].job_name[0], "resnet18");
    assert_string_equal(exp->runs[1].job_name[1], "resnet18-2");
    assert_int_equal(exp->runs[2].n_layout, 2);
    assert_string_equal(exp->runs[2].layout[1], "1g.10gb");
    assert_int_equal(exp->runs[4].only, MB_ONLY_GPU);
    assert_int_equal(exp->measure.warmup.kind, MB_AMOUNT_STEPS);
    assert_int_equal(exp->measure.warmup.steps, 50);
    assert_int_equal(exp->measure.duration.kind, MB_AMOUNT_TIME);
    assert_int_equal(exp->measure.duration.ns, 120000000000LL);
    assert_int_equal(exp->measure.sample_interval_ns, 50000000LL);
    assert_int_equal(exp->measure.grace_ns, 1500000000LL);
    assert_int_equal(exp->measure.repetitions, -1);
    assert_int_equal(strlen(exp->sha), 16);
    unsigned pct[MB_EXP_MAX_JOBS];
    mb_exp_run_thread_pct(&exp->runs[3], 7, pct);
    assert_int_equal(pct[0], 57);
    assert_int_equal(pct[1], 29);
    mb_exp_run_thread_pct(&exp->runs[0], 7, pct);
    assert_int_equal(pct[0], 50);
    mb_experiment_destroy(exp);
}

struct bad_case {
    const char *text;
    const char *want; /* substring of the message */
};

/* Each file differs from a valid one in one place; each message names file, line and field. */
static void test_errors(void **state)
{
    (void)state;
    static const struct bad_case cases[] = {
        {"", "exp.yaml:1: the file is empty"},
        {"version: 1\nname: x\n  bad: [\n", "exp.yaml:"},
        {"- a\n", "expected a mapping at the top level"},
        {"name: x\nworkloads: {a: {command: [a]}}\nruns: [{name: r, mode: timeslice, jobs: [a]}]\n",
         "field 'version': missing"},
        {"version: 2\nname: x\n", "exp.yaml:1: field 'version': version 2 is not supported"},
        {"version: 1\nname: x\nbogus: 3\n",
         "exp.yaml:3: field 'bogus': unknown key (expected one of: version, name"},
        {"version: 1\nname: ../x\n", "exp.yaml:2: field 'name': '../x' is not a usable name"},
        {"version: 1\nname: x\nname: y\n", "exp.yaml:3: duplicate key 'name' (first on line 2)"},
        {"version: 1\nname: x\nworkloads:\n  a:\n    command: \"python3 train.py\"\n",
         "exp.yaml:5: field 'workloads.a.command': expected a list of strings"},
        {"version: 1\nname: x\nworkloads:\n  a:\n    unit: images\n",
         "exp.yaml:4: field 'workloads.a.command': missing"},
        {"version: 1\nname: x\nworkloads:\n  a:\n    command: [a]\n    unit: bananas\n",
         "exp.yaml:6: field 'workloads.a.unit': 'bananas' is not a unit"},
        {"version: 1\nname: x\nworkloads:\n  a:\n    command: [a]\n    colour: red\n",
         "exp.yaml:6: field 'workloads.a.colour': unknown key"},
        {"version: 1\nname: x\nworkloads:\n  a:\n    command: [a]\n    progress_regex: 'iter'\n",
         "exp.yaml:6: field 'workloads.a.progress_regex': needs a group"},
        {"version: 1\nname: x\nworkloads:\n  a:\n    command: [a]\n    progress_regex: '(['\n",
         "field 'workloads.a.progress_regex': not a POSIX extended regex"},
        {"version: 1\nname: x\nworkloads:\n  a:\n    command: [a]\n    samples_per_step: 3\n",
         "exp.yaml:6: field 'workloads.a.samples_per_step': only with progress_regex"},
        {"version: 1\nname: x\nworkloads:\n  a:\n    command: [a]\n    memory_mib: lots\n",
         "exp.yaml:6: field 'workloads.a.memory_mib': 'lots' is not an integer"},
        {"version: 1\nname: x\nworkloads: {a: {command: [a]}}\nruns:\n"
         "  - {name: r, mode: timeslice, jobs: [a]}\n  - {name: s, mode: timeslice, jobs: [a, "
         "b]}\n",
         "exp.yaml:6: field 'runs[1].jobs[1]': unknown workload 'b'"},
        {"version: 1\nname: x\nworkloads: {a: {command: [a]}}\nruns:\n"
         "  - {name: r, mode: timeslice, jobs: [a]}\n  - {name: r, mode: exclusive, jobs: [a]}\n",
         "exp.yaml:6: field 'runs[1].name': duplicate run name 'r'"},
        {"version: 1\nname: x\nworkloads: {a: {command: [a]}}\nruns:\n"
         "  - {name: r, mode: sharing, jobs: [a]}\n",
         "exp.yaml:5: field 'runs[0].mode': unknown mode 'sharing'"},
        {"version: 1\nname: x\nworkloads: {a: {command: [a]}}\nruns:\n"
         "  - {name: r, mode: timeslice, jobs: [a], layout: [1g.10gb]}\n",
         "exp.yaml:5: field 'runs[0].layout': only for mode: mig"},
        {"version: 1\nname: x\nworkloads: {a: {command: [a]}}\nruns:\n"
         "  - {name: r, mode: mig, jobs: [a]}\n",
         "exp.yaml:5: field 'runs[0].layout': missing"},
        {"version: 1\nname: x\nworkloads: {a: {command: [a]}}\nruns:\n"
         "  - {name: r, mode: mig, jobs: [a, a], layout: [1g.10gb]}\n",
         "exp.yaml:5: field 'runs[0].layout': 1 profiles for 2 jobs"},
        {"version: 1\nname: x\nworkloads: {a: {command: [a]}}\nruns:\n"
         "  - name: r\n    mode: mig\n    jobs: [a]\n    layout: [3g.forty]\n",
         "exp.yaml:8: field 'runs[0].layout[0]': '3g.forty' is neither a MIG size"},
        {"version: 1\nname: x\nworkloads: {a: {command: [a]}}\nruns:\n"
         "  - {name: r, mode: mps, jobs: [a], thread_percentage: [150]}\n",
         "exp.yaml:5: field 'runs[0].thread_percentage[0]': 150 is out of range 1..100"},
        {"version: 1\nname: x\nworkloads: {a: {command: [a]}}\nruns:\n"
         "  - {name: r, mode: mps, jobs: [a], thread_percentage: [0]}\n",
         "field 'runs[0].thread_percentage[0]': 0 is out of range 1..100"},
        {"version: 1\nname: x\nworkloads: {a: {command: [a]}}\nruns:\n"
         "  - {name: r, mode: timeslice, jobs: [a], only: [tpu]}\n",
         "exp.yaml:5: field 'runs[0].only': 'tpu' is not host or gpu"},
        {"version: 1\nname: x\nworkloads: {a: {command: [a]}}\nruns:\n"
         "  - {name: r, mode: timeslice, jobs: [a]}\nmeasure:\n  duration: 20\n",
         "exp.yaml:7: field 'measure.duration': '20' needs a unit"},
        {"version: 1\nname: x\nworkloads: {a: {command: [a]}}\nruns:\n"
         "  - {name: r, mode: timeslice, jobs: [a]}\nmeasure:\n  duration: 20 parsecs\n",
         "exp.yaml:7: field 'measure.duration': '20 parsecs': unknown unit 'parsecs'"},
        {"version: 1\nname: x\nworkloads: {a: {command: [a]}}\nruns:\n"
         "  - {name: r, mode: timeslice, jobs: [a]}\nmeasure:\n  grace: 5 steps\n",
         "exp.yaml:7: field 'measure.grace': '5 steps': a time is needed here"},
        {"version: 1\nname: x\nworkloads: {a: {command: [a]}}\nruns:\n"
         "  - {name: r, mode: timeslice, jobs: [a]}\nmeasure:\n  warmup: stable\n",
         "exp.yaml:7: field 'measure.warmup': 'stable' is only allowed for measure.duration"},
        {"version: 1\nname: x\nworkloads: {a: {command: [a]}}\nruns:\n"
         "  - {name: r, mode: timeslice, jobs: [a]}\nmeasure:\n  ci_target: 0.02\n",
         "exp.yaml:7: field 'measure.ci_target': only with duration: stable"},
        {"version: 1\nname: x\nworkloads: {a: {command: [a]}}\nruns:\n"
         "  - {name: r, mode: timeslice, jobs: [a]}\nmeasure:\n  max_duration: 5m\n",
         "exp.yaml:7: field 'measure.max_duration': only with duration: stable or completion"},
        {"version: 1\nname: x\nworkloads: {a: {command: [a]}}\nruns:\n"
         "  - {name: r, mode: timeslice, jobs: [a]}\nmeasure:\n  repetitions: 0\n",
         "exp.yaml:7: field 'measure.repetitions': 0 is out of range 1..1000"},
        {"version: 1\nname: x\nworkloads: {a: {command: [a]}}\nruns:\n"
         "  - {name: r, mode: timeslice, jobs: [a]}\nmeasure:\n  sample_interval: 10us\n",
         "exp.yaml:7: field 'measure.sample_interval': '10us' is shorter than the minimum"},
        {"version: 1\nname: x\nworkloads: {a: {command: [a]}}\nruns: {}\n",
         "exp.yaml:4: field 'runs': expected a list of runs, got a mapping"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct mb_error err;
        struct mb_experiment *exp = parse(cases[i].text, NULL, 0, &err);
        if (exp)
            fail_msg("case %zu parsed but should fail with '%s'", i, cases[i].want);
        assert_int_equal(err.status, MB_EPARSE);
        if (!strstr(err.msg, cases[i].want))
            fail_msg("case %zu: got '%s', want '%s'", i, err.msg, cases[i].want);
    }
}

static void test_overrides(void **state)
{
    (void)state;
    struct mb_error err;
    const char *ov[] = {"measure.duration=30s", "device=emu:A100-80GB", "python=/usr/bin/python3",
                        "measure.repetitions=2"};
    struct mb_experiment *exp = parse(GOOD, ov, 4, &err);
    if (!exp)
        fail_msg("%s", err.msg);
    assert_int_equal(exp->measure.duration.ns, 30000000000LL);
    assert_string_equal(exp->device, "emu:A100-80GB");
    assert_string_equal(exp->python, "/usr/bin/python3");
    assert_int_equal(exp->measure.repetitions, 2);
    char sha[17];
    memcpy(sha, exp->sha, sizeof(sha));
    mb_experiment_destroy(exp);
    /* The hash covers the overrides. */
    exp = parse(GOOD, NULL, 0, &err);
    assert_non_null(exp);
    assert_string_not_equal(sha, exp->sha);
    mb_experiment_destroy(exp);

    /* A bad override value names the override, not a line. */
    const char *bad[] = {"measure.duration=3"};
    assert_null(parse(GOOD, bad, 1, &err));
    assert_int_equal(err.status, MB_EPARSE);
    assert_string_equal(err.msg, "--set measure.duration=3: field 'measure.duration': '3' needs a "
                                 "unit (ms, s, m, h or steps)");
    const char *unknown[] = {"measure.speed=3"};
    assert_null(parse(GOOD, unknown, 1, &err));
    assert_non_null(strstr(err.msg, "--set measure.speed=3: field 'measure.speed': unknown key"));
    const char *malformed[] = {"duration"};
    assert_null(parse(GOOD, malformed, 1, &err));
    assert_int_equal(err.status, MB_EINVAL);
    assert_non_null(strstr(err.msg, "expected KEY=VALUE"));
    const char *intoscalar[] = {"name.x=1"};
    assert_null(parse(GOOD, intoscalar, 1, &err));
    assert_int_equal(err.status, MB_EINVAL);
    /* A new section is created by an override. */
    const char *minimal = "version: 1\nname: x\nworkloads: {a: {command: [a]}}\n"
                          "runs: [{name: r, mode: timeslice, jobs: [a]}]\n";
    const char *newsec[] = {"measure.idle=5s"};
    exp = parse(minimal, newsec, 1, &err);
    if (!exp)
        fail_msg("%s", err.msg);
    assert_int_equal(exp->measure.idle_ns, 5000000000LL);
    assert_int_equal(exp->measure.duration.ns, 60000000000LL); /* default */
    mb_experiment_destroy(exp);
}

static void test_amounts(void **state)
{
    (void)state;
    struct mb_amount a;
    struct mb_error err;
    assert_int_equal(mb_amount_parse("100ms", true, false, &a, &err), MB_OK);
    assert_int_equal(a.ns, 100000000LL);
    assert_int_equal(mb_amount_parse("2m", true, false, &a, &err), MB_OK);
    assert_int_equal(a.ns, 120000000000LL);
    assert_int_equal(mb_amount_parse("1h", false, false, &a, &err), MB_OK);
    assert_int_equal(mb_amount_parse("50 steps", true, false, &a, &err), MB_OK);
    assert_int_equal(a.kind, MB_AMOUNT_STEPS);
    assert_int_equal(a.steps, 50);
    assert_int_equal(mb_amount_parse("1 step", true, false, &a, &err), MB_OK);
    /* A warm-up of 0 steps is none (issue 11); a window of 0 steps is refused by its field. */
    assert_int_equal(mb_amount_parse("0steps", true, false, &a, &err), MB_OK);
    assert_int_equal(a.kind, MB_AMOUNT_STEPS);
    assert_int_equal(a.steps, 0);
    const char *w0[] = {"measure.warmup=0 steps"}, *d0[] = {"measure.duration=0 steps"};
    struct mb_experiment *exp = parse(GOOD, w0, 1, &err);
    assert_non_null(exp);
    assert_int_equal(exp->measure.warmup.kind, MB_AMOUNT_STEPS);
    assert_int_equal(exp->measure.warmup.steps, 0);
    mb_experiment_destroy(exp);
    assert_null(parse(GOOD, d0, 1, &err));
    assert_non_null(strstr(err.msg, "measure.duration"));
    assert_int_equal(mb_amount_parse("2.5 steps", true, false, &a, &err), MB_EPARSE);
    assert_int_equal(mb_amount_parse("-1s", true, false, &a, &err), MB_EPARSE);
    assert_int_equal(mb_amount_parse("stable", true, true, &a, &err), MB_OK);
    assert_int_equal(a.kind, MB_AMOUNT_STABLE);
    assert_int_equal(mb_amount_parse("nan s", true, true, &a, &err), MB_EPARSE);
    assert_int_equal(mb_amount_parse("completion", true, true, &a, &err), MB_OK);
    assert_int_equal(a.kind, MB_AMOUNT_COMPLETION);
    assert_int_equal(mb_amount_parse("completion", true, false, &a, &err), MB_EPARSE);
    char buf[32];
    a.kind = MB_AMOUNT_TIME;
    a.ns = 1500000000LL;
    mb_amount_format(&a, buf, sizeof(buf));
    assert_string_equal(buf, "1500ms");
}

/* measure.cooldown_margin: "10%" or "0.1", 0..1, default 10 %; errors name line and field. */
static void test_cooldown_margin(void **state)
{
    (void)state;
    struct mb_error err;
    struct mb_experiment *exp = parse(GOOD, NULL, 0, &err);
    assert_non_null(exp);
    assert_true(exp->measure.cooldown_margin > 0.0999 && exp->measure.cooldown_margin < 0.1001);
    assert_int_equal(exp->measure.cooldown_ns, 0);
    mb_experiment_destroy(exp);
    static const struct {
        const char *set;
        double want;
    } good[] = {{"measure.cooldown_margin=5%", 0.05},
                {"measure.cooldown_margin=0.25", 0.25},
                {"measure.cooldown_margin=0", 0.0},
                {"measure.cooldown_margin=100%", 1.0}};
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        const char *ov[] = {good[i].set, "measure.cooldown=45s"};
        exp = parse(GOOD, ov, 2, &err);
        if (!exp)
            fail_msg("%s: %s", good[i].set, err.msg);
        assert_true(fabs(exp->measure.cooldown_margin - good[i].want) < 1e-12);
        assert_int_equal(exp->measure.cooldown_ns, 45000000000LL);
        mb_experiment_destroy(exp);
    }
    static const struct {
        const char *set, *msg;
    } bad[] = {{"measure.cooldown_margin=150%", "out of range 0..1"},
               {"measure.cooldown_margin=1.5", "out of range 0..1"},
               {"measure.cooldown_margin=-0.1", "out of range 0..1"},
               {"measure.cooldown_margin=10%%", "is not a fraction"},
               {"measure.cooldown_margin=ten", "is not a fraction"},
               {"measure.cooldown_margin=[1]", "expected a fraction"}};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        const char *ov[] = {bad[i].set};
        exp = parse(GOOD, ov, 1, &err);
        assert_null(exp);
        if (!strstr(err.msg, "field 'measure.cooldown_margin'") || !strstr(err.msg, bad[i].msg))
            fail_msg("%s: %s", bad[i].set, err.msg);
    }
    /* In the file, the line is named. */
    char text[2048];
    snprintf(text, sizeof(text), "%s  cooldown_margin: 2\n", GOOD);
    exp = parse(text, NULL, 0, &err);
    assert_null(exp);
    if (!strstr(err.msg, "exp.yaml:26: field 'measure.cooldown_margin'"))
        fail_msg("%s", err.msg);
}

/* mb_experiment_load reads through mb_file_read and keeps its documented statuses. */
static void test_load_file(void **state)
{
    (void)state;
    char dir[] = "/tmp/mb-test-load-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256];
    struct mb_error err;
    struct mb_experiment *exp = NULL;
    snprintf(path, sizeof(path), "%s/missing.yaml", dir);
    assert_int_equal(mb_experiment_load(path, NULL, 0, &exp, &err), MB_EIO);
    assert_int_equal(err.status, MB_EIO);
    assert_null(exp);
    assert_non_null(strstr(err.msg, "missing.yaml: cannot open"));
    snprintf(path, sizeof(path), "%s/good.yaml", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(GOOD, f);
    fclose(f);
    assert_int_equal(mb_experiment_load(path, NULL, 0, &exp, &err), MB_OK);
    assert_non_null(exp);
    assert_int_equal(exp->n_runs, 5);
    mb_experiment_destroy(exp);
    exp = NULL;
    f = fopen(path, "a");
    assert_non_null(f);
    for (size_t i = 0; i < MB_EXP_FILE_MAX / 32; i++) /* over 1 MiB */
        fputs("# padding padding padding padding padding padding padding pad\n", f);
    fclose(f);
    assert_int_equal(mb_experiment_load(path, NULL, 0, &exp, &err), MB_EPARSE);
    assert_null(exp);
    if (!strstr(err.msg, "good.yaml: larger than 1048576 bytes"))
        fail_msg("%s", err.msg);
    assert_int_equal(mb_experiment_load(dir, NULL, 0, &exp, &err), MB_EIO);
    unlink(path);
    rmdir(dir);
}

static void test_cells(void **state)
{
    (void)state;
    struct mb_error err;
    const char *ov[] = {"measure.repetitions=3"};
    struct mb_experiment *exp = parse(GOOD, ov, 1, &err);
    assert_non_null(exp);
    struct mb_cell *cells;
    size_t n, nn;
    char **notes;
    /* Host: exclusive and partition apply; mig, mps and the gpu-only run are skipped. */
    assert_int_equal(mb_experiment_cells(exp, HOST_CAPS, NULL, &cells, &n, &notes, &nn, &err),
                     MB_OK);
    assert_int_equal(n, 6);
    assert_int_equal(cells[0].run, 0);
    assert_int_equal(cells[2].rep, 2);
    assert_int_equal(cells[3].run, 1);
    assert_int_equal(nn, 3);
    assert_string_equal(notes[0], "run 'mix' skipped: mode mig needs a GPU");
    assert_string_equal(notes[2], "run 'gpu-ts' skipped: only: gpu");
    free(cells);
    mb_notes_free(notes, nn);
    /* emu: partition skipped. */
    assert_int_equal(mb_experiment_cells(exp, EMU_CAPS, "mix,split", &cells, &n, &notes, &nn, &err),
                     MB_OK);
    assert_int_equal(n, 3);
    assert_int_equal(cells[0].run, 2);
    assert_int_equal(nn, 1);
    assert_string_equal(notes[0], "run 'split' skipped: mode partition is for the host CPU");
    free(cells);
    mb_notes_free(notes, nn);
    assert_int_equal(
        mb_experiment_cells(exp, EMU_CAPS, "mix,nosuch", &cells, &n, &notes, &nn, &err), MB_EINVAL);
    assert_non_null(strstr(err.msg, "'nosuch' is not a run"));
    mb_experiment_destroy(exp);
    /* Default repetitions: 4 on real GPUs, 1 elsewhere. */
    exp = parse(GOOD, NULL, 0, &err);
    assert_int_equal(mb_experiment_repetitions(exp, NVML_CAPS), 4);
    assert_int_equal(mb_experiment_repetitions(exp, HOST_CAPS), 1);
    mb_experiment_destroy(exp);
}

/* The experiment of test_check_cells and test_check_cells_skip. */
static const char *const sizes_text =
    "version: 1\n"
    "name: sizes\n"
    "workloads:\n"
    "  a: {command: [/bin/a], memory_mib: 9000}\n"
    "  b: {command: [/bin/b]}\n"
    "  big: {command: [/bin/big], memory_mib: 30000}\n"
    "runs:\n"
    "  - {name: alone, mode: exclusive, jobs: [a, b]}\n"             /* runs[0] */
    "  - {name: sizes, mode: mig, layout: [4g, 3G], jobs: [a, b]}\n" /* runs[1] */
    "  - {name: h100, mode: mig, layout: [3g.40gb, 4g.40gb], jobs: [a, b]}\n"
    "  - {name: matched, mode: mps, match_layout: [4g, 3g], jobs: [a, b]}\n"
    "  - {name: seven, mode: mig, layout: [7g], jobs: [b]}\n"
    "  - {name: media, mode: mig, layout: [1g+me, 1g.2m, 2g], jobs: [b, b, b]}\n"
    "  - {name: large, mode: mig, layout: [3g], jobs: [big]}\n";

/* Parses sizes_text and finds the models the checks use. */
static struct mb_experiment *sizes_setup(struct mb_catalog **cat, const struct mb_gpu_model *m[4])
{
    struct mb_error err;
    struct mb_experiment *exp = parse(sizes_text, NULL, 0, &err);
    if (!exp)
        fail_msg("%s", err.msg);
    assert_int_equal(mb_catalog_create(cat, &err), MB_OK);
    static const char *names[4] = {"H200", "H100", "A30", "A100-40GB"};
    for (int k = 0; k < 4; k++)
        assert_int_equal(mb_catalog_find(*cat, names[k], &m[k], &err), MB_OK);
    return exp;
}

/* Profile names are checked only for the runs that will run, against the model they run on. */
static void test_check_cells(void **state)
{
    (void)state;
    struct mb_error err;
    struct mb_catalog *cat;
    const struct mb_gpu_model *m[4];
    struct mb_experiment *exp = sizes_setup(&cat, m);
    const struct mb_gpu_model *h200 = m[0], *h100 = m[1], *a30 = m[2];
    assert_string_equal(exp->runs[1].layout[1], "3g");
    struct mb_cell *cells;
    size_t n, nn;
    char **notes;

    const char *portable = "alone,sizes,matched,seven,media,large";
    /* Every run on an H200: the H100 names are wrong there. Nothing changes on failure. */
    assert_int_equal(mb_experiment_cells(exp, EMU_CAPS, NULL, &cells, &n, &notes, &nn, &err),
                     MB_OK);
    assert_int_equal(n, 7);
    assert_int_equal(mb_experiment_check_cells(exp, h200, cells, &n, &notes, &nn, &err), MB_EPARSE);
    assert_non_null(strstr(err.msg, "exp.yaml:10: field 'runs[2].layout[0]': H200-141GB has no "
                                    "profile '3g.40gb'"));
    assert_non_null(strstr(err.msg, "3g.71gb"));
    assert_int_equal(n, 7);
    assert_int_equal(nn, 0);
    free(cells);
    mb_notes_free(notes, nn);

    /* Without the H100 run (--only), the H200 takes every size. */
    assert_int_equal(mb_experiment_cells(exp, EMU_CAPS, portable, &cells, &n, &notes, &nn, &err),
                     MB_OK);
    assert_int_equal(mb_experiment_check_cells(exp, h200, cells, &n, &notes, &nn, &err), MB_OK);
    assert_int_equal(n, 6);
    assert_int_equal(nn, 0);
    free(cells);
    mb_notes_free(notes, nn);

    /* On the host the mig runs do not run, so their names are not held to any model. */
    assert_int_equal(mb_experiment_cells(exp, HOST_CAPS, NULL, &cells, &n, &notes, &nn, &err),
                     MB_OK);
    assert_int_equal(mb_experiment_check_cells(exp, a30, cells, &n, &notes, &nn, &err), MB_OK);
    assert_int_equal(n, 1);
    free(cells);
    mb_notes_free(notes, nn);

    /* An H100 has both spellings. */
    assert_int_equal(mb_experiment_cells(exp, EMU_CAPS, NULL, &cells, &n, &notes, &nn, &err),
                     MB_OK);
    assert_int_equal(mb_experiment_check_cells(exp, h100, cells, &n, &notes, &nn, &err), MB_OK);
    assert_int_equal(n, 7);
    free(cells);
    mb_notes_free(notes, nn);

    mb_catalog_destroy(cat);
    mb_experiment_destroy(exp);
}

/* Runs a model cannot hold are skipped with the reason; a job too big for its instance is an
 * error. */
static void test_check_cells_skip(void **state)
{
    (void)state;
    struct mb_error err;
    struct mb_catalog *cat;
    const struct mb_gpu_model *m[4];
    struct mb_experiment *exp = sizes_setup(&cat, m);
    const struct mb_gpu_model *a30 = m[2], *a100_40 = m[3];
    struct mb_cell *cells;
    size_t n, nn;
    char **notes;
    const char *portable = "alone,sizes,matched,seven,media,large";

    /* An A30 has no 3g or 7g: those runs are skipped with the reason; 1g.2m is missing too. */
    assert_int_equal(mb_experiment_cells(exp, EMU_CAPS, portable, &cells, &n, &notes, &nn, &err),
                     MB_OK);
    assert_int_equal(mb_experiment_check_cells(exp, a30, cells, &n, &notes, &nn, &err), MB_OK);
    assert_int_equal(n, 1);
    assert_int_equal(cells[0].run, 0);
    assert_int_equal(nn, 5);
    assert_non_null(strstr(notes[0], "run 'sizes' skipped: A30-24GB has no 3g (its sizes: 1g, "
                                     "1g+me, 2g, 2g+me, 4g;"));
    assert_non_null(strstr(notes[1], "run 'matched' skipped: A30-24GB has no 3g"));
    assert_non_null(strstr(notes[2], "run 'seven' skipped: A30-24GB has no 7g"));
    assert_non_null(strstr(notes[3], "run 'media' skipped: A30-24GB has no 1g.2m"));
    assert_non_null(strstr(notes[4], "run 'large' skipped: A30-24GB has no 3g"));
    assert_null(notes[5]);
    free(cells);
    mb_notes_free(notes, nn);

    /* Notes already there are kept; a job too big for its instance is an error. */
    assert_int_equal(
        mb_experiment_cells(exp, HOST_CAPS, "alone,sizes,large", &cells, &n, &notes, &nn, &err),
        MB_OK);
    assert_int_equal(nn, 2);
    mb_notes_free(notes, nn);
    free(cells);
    assert_int_equal(
        mb_experiment_cells(exp, EMU_CAPS, "alone,sizes,large", &cells, &n, &notes, &nn, &err),
        MB_OK);
    assert_int_equal(mb_experiment_check_cells(exp, a100_40, cells, &n, &notes, &nn, &err),
                     MB_EPARSE);
    assert_non_null(strstr(err.msg, "field 'runs[6].layout[0]': job 'big' needs 30000 MiB "
                                    "(workloads.big.memory_mib) but 3g (3g.20gb) on "
                                    "A100-SXM4-40GB has 19968 MiB"));
    free(cells);
    mb_notes_free(notes, nn);
    mb_catalog_destroy(cat);
    mb_experiment_destroy(exp);
}

static void test_argv(void **state)
{
    (void)state;
    struct mb_error err;
    struct mb_experiment *exp = parse(GOOD, NULL, 0, &err);
    assert_non_null(exp);
    char **argv;
    assert_int_equal(mb_experiment_job_argv(&exp->workloads[0], "/usr/bin/python3", "/opt/wl",
                                            false, &argv, &err),
                     MB_OK);
    assert_string_equal(argv[0], "/usr/bin/python3");
    assert_string_equal(argv[1], "/opt/wl/vision.py");
    assert_string_equal(argv[4], "--device");
    assert_string_equal(argv[5], "cpu");
    assert_null(argv[8]);
    mb_argv_free(argv);
    assert_int_equal(mb_experiment_job_argv(&exp->workloads[0], "py", "w", true, &argv, &err),
                     MB_OK);
    assert_string_equal(argv[5], "cuda");
    assert_null(argv[6]);
    mb_argv_free(argv);
    mb_experiment_destroy(exp);
}

static void write_script(const char *path, const char *body)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "#!/bin/sh\n%s\n", body);
    fclose(f);
    assert_int_equal(chmod(path, 0755), 0);
}

static void test_python(void **state)
{
    (void)state;
    char dir[] = "/tmp/mb-test-python-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char good[300], bad[300], gooddir[64], baddir[64], path[600], out[512];
    snprintf(gooddir, sizeof(gooddir), "%s/good", dir);
    snprintf(baddir, sizeof(baddir), "%s/bad", dir);
    mkdir(gooddir, 0755);
    mkdir(baddir, 0755);
    snprintf(good, sizeof(good), "%s/python3", gooddir);
    snprintf(bad, sizeof(bad), "%s/python3", baddir);
    /* The fake interpreters check that they were asked to import torch. */
    write_script(good, "[ \"$1\" = -c ] && [ \"$2\" = 'import torch' ] && exit 0; exit 3");
    write_script(bad, "echo 'No module named torch' >&2; exit 1");
    struct mb_error err;

    snprintf(path, sizeof(path), "%s:%s", gooddir, baddir);
    assert_int_equal(mb__experiment_resolve_python("auto", path, NULL, 10, out, sizeof(out), &err),
                     MB_OK);
    assert_string_equal(out, good);
    /* python3 on PATH lacks torch: the fallback is taken. */
    assert_int_equal(
        mb__experiment_resolve_python("auto", baddir, good, 10, out, sizeof(out), &err), MB_OK);
    assert_string_equal(out, good);
    /* Nothing works: a clear error naming each candidate. */
    assert_int_equal(mb__experiment_resolve_python("auto", baddir, "/nonexistent/python3", 10, out,
                                                   sizeof(out), &err),
                     MB_ENOTFOUND);
    assert_non_null(strstr(err.msg, bad));
    assert_non_null(strstr(err.msg, "'import torch' failed (exit 1)"));
    assert_non_null(strstr(err.msg, "/nonexistent/python3: not an executable file"));
    /* A hanging interpreter is killed at the limit. */
    write_script(bad, "sleep 30");
    assert_int_equal(mb__experiment_resolve_python("auto", baddir, NULL, 1, out, sizeof(out), &err),
                     MB_ENOTFOUND);
    assert_non_null(strstr(err.msg, "did not finish within 1s"));
    /* Explicit: a path must be executable; a bare name is looked up on PATH. */
    assert_int_equal(mb__experiment_resolve_python(good, "", NULL, 10, out, sizeof(out), &err),
                     MB_OK);
    assert_string_equal(out, good);
    assert_int_equal(
        mb__experiment_resolve_python("python3", gooddir, NULL, 10, out, sizeof(out), &err), MB_OK);
    assert_string_equal(out, good);
    assert_int_equal(
        mb__experiment_resolve_python("/nonexistent/py", "", NULL, 10, out, sizeof(out), &err),
        MB_ENOTFOUND);
    unlink(good);
    unlink(bad);
    rmdir(gooddir);
    rmdir(baddir);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good_file),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_overrides),
        cmocka_unit_test(test_amounts),
        cmocka_unit_test(test_cells),
        cmocka_unit_test(test_cooldown_margin),
        cmocka_unit_test(test_load_file),
        cmocka_unit_test(test_argv),
        cmocka_unit_test(test_python),
        cmocka_unit_test(test_check_cells),
        cmocka_unit_test(test_check_cells_skip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
