/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The report renderers called directly (report.h): the committed fixture rendered to a buffer
 * equals the golden file byte for byte, every format renders, format names parse, and what a
 * renderer says about the device comes from the facts the cells record, not the backend name.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "migbench/analysis.h"
#include "migbench/fileio.h"
#include "migbench/report.h"
#include "migbench/report_verbs.h"

static struct mb_analysis *load(const char *dir)
{
    struct mb_analysis *a = NULL;
    struct mb_error err;
    int st = mb_analysis_load(&a, &dir, 1, &err);
    if (st != MB_OK)
        fail_msg("%s", err.msg);
    return a;
}

static void test_table_equals_golden(void **state)
{
    (void)state;
    /* The golden was made from the source directory with this relative path. */
    assert_int_equal(chdir(MB_SOURCE_DIR), 0);
    struct mb_analysis *a = load("tests/golden/results-h100");
    char *text = NULL;
    size_t len = 0;
    assert_int_equal(mb_report_render(&text, &len, a, MB_REPORT_TABLE), MB_OK);
    char *want = NULL;
    size_t wlen = 0;
    struct mb_error err;
    assert_int_equal(mb_file_read("tests/golden/report-h100.txt", 1u << 24, &want, &wlen, &err),
                     MB_OK);
    assert_int_equal(len, wlen);
    assert_memory_equal(text, want, len);
    free(want);
    free(text);
    mb_analysis_destroy(a);
}

static void test_every_format(void **state)
{
    (void)state;
    assert_int_equal(chdir(MB_SOURCE_DIR), 0);
    struct mb_analysis *a = load("tests/golden/results-a100");
    static const struct {
        enum mb_report_format f;
        const char *starts;
    } cases[] = {
        {MB_REPORT_TABLE, "migbench report\n"},     {MB_REPORT_MARKDOWN, "# migbench report\n"},
        {MB_REPORT_CSV, "results_dir,experiment,"}, {MB_REPORT_JSON, "{\n\t\"schema\":\t1,"},
        {MB_REPORT_HTML, "<!DOCTYPE html>"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *text = NULL;
        size_t len = 0;
        assert_int_equal(mb_report_render(&text, &len, a, cases[i].f), MB_OK);
        assert_true(len > strlen(cases[i].starts));
        assert_memory_equal(text, cases[i].starts, strlen(cases[i].starts));
        assert_int_equal(strlen(text), len);
        free(text);
    }
    char *text = (char *)"x";
    size_t len = 7;
    assert_int_equal(mb_report_render(&text, &len, a, (enum mb_report_format)99), MB_EINVAL);
    assert_null(text);
    assert_int_equal(len, 0);
    mb_analysis_destroy(a);
}

static void test_format_names(void **state)
{
    (void)state;
    enum mb_report_format f = MB_REPORT_HTML;
    assert_int_equal(mb_report_format_parse("csv", &f), MB_OK);
    assert_int_equal(f, MB_REPORT_CSV);
    assert_int_equal(mb_report_format_parse("markdown", &f), MB_OK);
    assert_int_equal(f, MB_REPORT_MARKDOWN);
    assert_int_equal(mb_report_format_parse("md", &f), MB_OK);
    assert_int_equal(f, MB_REPORT_MARKDOWN);
    assert_int_equal(mb_report_format_parse("pdf", &f), MB_EINVAL);
    assert_int_equal(f, MB_REPORT_MARKDOWN);
    assert_int_equal(mb_report_format_parse(NULL, &f), MB_EINVAL);
    for (int i = MB_REPORT_TABLE; i <= MB_REPORT_MARKDOWN; i++) {
        enum mb_report_format g;
        assert_int_equal(mb_report_format_parse(mb_report_format_name(i), &g), MB_OK);
        assert_int_equal(g, i);
    }
    assert_string_equal(mb_report_format_name((enum mb_report_format)42), "?");
}

/* A one-cell results directory whose device object is dev (JSON text). */
static void write_exp(const char *root, const char *dev)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/x", root);
    assert_int_equal(mkdir(path, 0755), 0);
    snprintf(path, sizeof(path), "%s/x/0", root);
    assert_int_equal(mkdir(path, 0755), 0);
    snprintf(path, sizeof(path), "%s/x/0/cell.json", root);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f,
            "{\"schema\":1,\"run\":\"x\",\"mode\":\"timeslice\",\"status\":\"ok\",\"device\":%s,"
            "\"jobs\":[{\"name\":\"a\",\"cores\":3,\"throughput\":{\"mean\":5}}]}",
            dev);
    fclose(f);
}

static void rm_exp(const char *root)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/x/0/cell.json", root);
    unlink(path);
    snprintf(path, sizeof(path), "%s/x/0", root);
    rmdir(path);
    snprintf(path, sizeof(path), "%s/x", root);
    rmdir(path);
    rmdir(root);
}

/* Renders the table for a directory with device dev; says whether the CPU-cores line is there. */
static int cores_line(const char *dev, int *emulated)
{
    char root[] = "/tmp/mb-report-XXXXXX";
    assert_non_null(mkdtemp(root));
    write_exp(root, dev);
    struct mb_analysis *a = load(root);
    *emulated = a->exps[0].emulated;
    char *text = NULL;
    size_t len = 0;
    assert_int_equal(mb_report_render(&text, &len, a, MB_REPORT_TABLE), MB_OK);
    int has = strstr(text, "CPU cores per job") != NULL;
    free(text);
    mb_analysis_destroy(a);
    rm_exp(root);
    return has;
}

static void test_device_facts_not_names(void **state)
{
    (void)state;
    int emu;
    /* The recorded flag decides, whatever the backend is called. */
    assert_true(cores_line("{\"backend\":\"cpu0\",\"gpu\":false}", &emu));
    assert_false(emu);
    assert_false(cores_line("{\"backend\":\"host\",\"gpu\":true}", &emu));
    assert_false(cores_line("{\"backend\":\"nvml\",\"gpu\":true,\"emulated\":true}", &emu));
    assert_true(emu);
    /* A backend named emu that does not say it is emulated is not labelled so. */
    assert_false(cores_line("{\"backend\":\"emu\"}", &emu));
    assert_false(emu);
    /* Cells from before the gpu flag: the host backend was the CPU device. */
    assert_true(cores_line("{\"backend\":\"host\"}", &emu));
}

/* run's end-of-run summary over the fixture's exclusive run: one row per job, 3 of 3 cells, a
 * mean with its CI, energy and J/unit; a run without results reads n/a. */
static void test_run_summary(void **state)
{
    (void)state;
    assert_int_equal(chdir(MB_SOURCE_DIR), 0);
    struct mb_analysis *a = load("tests/golden/results-h100");
    const struct mb_an_run *ar = NULL;
    for (size_t i = 0; i < a->exps[0].nruns; i++)
        if (strcmp(a->exps[0].runs[i].name, "exclusive") == 0)
            ar = &a->exps[0].runs[i];
    assert_non_null(ar);
    static struct mb_experiment exp;
    memset(&exp, 0, sizeof(exp));
    exp.n_runs = 2;
    snprintf(exp.runs[0].name, sizeof(exp.runs[0].name), "exclusive");
    exp.runs[0].mode = MB_MODE_EXCLUSIVE;
    exp.runs[0].n_jobs = ar->njobs;
    for (size_t j = 0; j < ar->njobs; j++)
        snprintf(exp.runs[0].job_name[j], sizeof(exp.runs[0].job_name[j]), "%.*s",
                 (int)sizeof(exp.runs[0].job_name[j]) - 1, ar->jobs[j].name);
    snprintf(exp.runs[1].name, sizeof(exp.runs[1].name), "never");
    exp.runs[1].mode = MB_MODE_TIMESLICE;
    exp.runs[1].n_jobs = 1;
    snprintf(exp.runs[1].job_name[0], sizeof(exp.runs[1].job_name[0]), "x");
    struct mb_cell cells[] = {{0, 0}, {0, 1}, {0, 2}, {1, 0}};
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    mb_run_summary_write(f, &exp, "tests/golden/results-h100", cells, 4, 20);
    fclose(f);
    assert_non_null(strstr(text, "throughput (mean +- 95% CI)"));
    char want[256];
    snprintf(want, sizeof(want), "\nexclusive            exclusive  3/3   %-20s ",
             ar->jobs[0].name);
    assert_non_null(strstr(text, want));
    assert_non_null(strstr(text, " +- "));
    assert_non_null(
        strstr(text, "\nnever                timeslice  0/1   x                    n/a"));
    free(text);
    mb_analysis_destroy(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table_equals_golden),    cmocka_unit_test(test_run_summary),
        cmocka_unit_test(test_every_format),           cmocka_unit_test(test_format_names),
        cmocka_unit_test(test_device_facts_not_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
