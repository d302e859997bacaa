/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Regressions from the malformed-input corpus (issue 12): each case is a file or value another
 * user could hand migbench, with the refusal it must get and the damage it must not do.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/json_io.h"
#include "migbench/analysis.h"
#include "migbench/catalog.h"
#include "migbench/device.h"
#include "migbench/experiment.h"
#include "migbench/fileio.h"
#include "migbench/migcfg.h"
#include "migbench/num.h"
#include "migbench/plan.h"
#include "base/yaml_internal.h"

static char tmpdir[64];

static int setup(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/mb-hostile-XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

static void put(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

static void join(char *out, size_t cap, const char *name)
{
    int n = snprintf(out, cap, "%s/%s", tmpdir, name);
    assert_true(n > 0 && (size_t)n < cap);
}

/* A text of depth opening brackets: "[[[[...". */
static char *nested(size_t depth, char open, char close)
{
    char *s = malloc(2 * depth + 2);
    assert_non_null(s);
    memset(s, open, depth);
    memset(s + depth, close, depth);
    s[2 * depth] = '\n';
    s[2 * depth + 1] = '\0';
    return s;
}

/* ---- the one number parser ---------------------------------------------------------------- */

/* Figures print rounded to significant digits, without trailing zeros. */
static void test_fmt_sig(void **state)
{
    (void)state;
    char b[32];
    assert_string_equal(mb_num_fmt_sig(b, sizeof(b), 149.6, 2), "150");
    assert_string_equal(mb_num_fmt_sig(b, sizeof(b), 0.4000, 3), "0.4");
    assert_string_equal(mb_num_fmt_sig(b, sizeof(b), 51320.4, 4), "51320");
    assert_string_equal(mb_num_fmt_sig(b, sizeof(b), 2.0467, 3), "2.05");
    assert_string_equal(mb_num_fmt_sig(b, sizeof(b), -0.012345, 2), "-0.012");
    assert_string_equal(mb_num_fmt_sig(b, sizeof(b), 0, 3), "0");
    char tiny[4];
    assert_string_equal(mb_num_fmt_sig(tiny, sizeof(tiny), 1.23456, 5), "1.2"); /* cut, no crash */
}

static void test_num(void **state)
{
    (void)state;
    double v;
    const char *rest;
    assert_int_equal(mb_num_parse("12.5", &v, NULL), MB_OK);
    assert_true(v == 12.5);
    assert_int_equal(mb_num_parse("-3e2", &v, NULL), MB_OK);
    assert_true(v == -300);
    assert_int_equal(mb_num_parse(".5", &v, NULL), MB_OK);
    assert_int_equal(mb_num_parse("5.", &v, NULL), MB_OK);
    assert_int_equal(mb_num_parse("0e-400", &v, NULL), MB_OK);
    assert_true(v == 0);
    static const char *const bad[] = {"",   "0x10", "0x1p4", "inf", "-inf", "nan", "NAN",
                                      " 1", "1 ",   ".",     "e5",  "+",    "1e",  "1.2.3",
                                      "٣",  "0b1",  "1,5",   "1e+", "--1"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (mb_num_parse(bad[i], &v, NULL) != MB_EPARSE)
            fail_msg("'%s' was not refused as not a number", bad[i]);
    /* Numbers out of a double's range are numbers: they get their own status and message. */
    assert_int_equal(mb_num_parse("1e-308", &v, NULL), MB_ERANGE);
    assert_int_equal(mb_num_parse("1e400", &v, NULL), MB_ERANGE);
    assert_int_equal(mb_num_parse("-1e400", &v, NULL), MB_ERANGE);
    assert_int_equal(mb_num_parse("1e-400", &v, NULL), MB_ERANGE);
    /* With rest: the number ends where the grammar does, never inside a hex or inf spelling. */
    assert_int_equal(mb_num_parse("0x10s", &v, &rest), MB_OK);
    assert_true(v == 0);
    assert_string_equal(rest, "x10s");
    assert_int_equal(mb_num_parse("20ms", &v, &rest), MB_OK);
    assert_string_equal(rest, "ms");
    assert_int_equal(mb_num_parse("2em", &v, &rest), MB_OK);
    assert_string_equal(rest, "em");
    char longnum[400];
    memset(longnum, '1', sizeof(longnum) - 1);
    longnum[sizeof(longnum) - 1] = '\0';
    assert_int_equal(mb_num_parse(longnum, &v, NULL), MB_ERANGE);

    assert_true(mb_num_fits_i64(-9.2e18));
    assert_false(mb_num_fits_i64(9.3e18));
    assert_false(mb_num_fits_i64(1e308));
    assert_true(mb_num_fits_u64(1.8e19));
    assert_false(mb_num_fits_u64(1.9e19));
    assert_false(mb_num_fits_u64(-1));
    int64_t i;
    assert_int_equal(mb_num_to_i64(1e20, 0, INT32_MAX, &i), MB_ERANGE);
    assert_int_equal(mb_num_to_i64(2.5, 0, 10, &i), MB_ERANGE);
    assert_int_equal(mb_num_to_i64(7, 0, 10, &i), MB_OK);
    assert_int_equal(i, 7);
}

/* ---- the bounded reader ---------------------------------------------------------------------- */

/* A FIFO with no writer: open(2) without O_NONBLOCK would wait for a writer forever. */
static void test_fifo_refused(void **state)
{
    (void)state;
    char fifo[128];
    join(fifo, sizeof(fifo), "fifo");
    assert_int_equal(mkfifo(fifo, 0600), 0);
    char *buf = NULL;
    struct mb_error err;
    assert_int_equal(mb_file_read(fifo, 1024, &buf, NULL, &err), MB_EIO);
    assert_null(buf);
    assert_non_null(strstr(err.msg, "a FIFO, not a regular file"));
    assert_non_null(strstr(err.msg, fifo));
    assert_int_equal(mb_file_read(tmpdir, 1024, &buf, NULL, &err), MB_EIO);
    assert_non_null(strstr(err.msg, "a directory"));
    assert_int_equal(mb_file_read("/dev/zero", 1024, &buf, NULL, &err), MB_EIO);
    assert_non_null(strstr(err.msg, "a character device"));

    /* Every reader of outside files goes through it. */
    struct mb_experiment *exp = NULL;
    assert_int_equal(mb_experiment_load(fifo, NULL, 0, &exp, &err), MB_EIO);
    assert_non_null(strstr(err.msg, "FIFO"));
    struct mb_plan_jobset *js = NULL;
    assert_int_equal(mb_plan_jobset_load(fifo, &js, &err), MB_EIO);
    struct mb_catalog *cat = NULL;
    assert_int_equal(mb_catalog_create(&cat, &err), MB_OK);
    assert_int_not_equal(mb_catalog_load_file(cat, fifo, &err), MB_OK);
    assert_non_null(strstr(err.msg, "FIFO"));
    mb_catalog_destroy(cat);
    assert_int_equal(unlink(fifo), 0);
}

/* ---- the one YAML loader --------------------------------------------------------------------- */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void test_yaml_limits(void **state)
{
    (void)state;
    yaml_document_t doc;
    bool loaded;
    struct mb__yaml_fail f;
    /* 1 MB of flow nesting: refused at the first level past the limit, on line 1 column 33. */
    char *deep = nested(512 * 1024, '[', ']');
    assert_int_equal(mb__yaml_load(deep, strlen(deep), 32, 100000, &doc, &loaded, &f), MB_EPARSE);
    assert_non_null(strstr(f.msg, "nesting deeper than 32 levels"));
    assert_int_equal(f.line, 1);
    assert_int_equal(f.column, 33);
    free(deep);
    /* Block nesting the same way. */
    char block[4096] = "";
    for (int i = 0; i < 40; i++) {
        size_t n = strlen(block);
        snprintf(block + n, sizeof(block) - n, "%*sk%d:\n", i * 2, "", i);
    }
    assert_int_equal(mb__yaml_load(block, strlen(block), 32, 100000, &doc, &loaded, &f), MB_EPARSE);
    assert_int_equal(f.line, 33);
    /* Node count. */
    assert_int_equal(mb__yaml_load("[1, 2, 3, 4]", 12, 32, 4, &doc, &loaded, &f), MB_EPARSE);
    assert_non_null(strstr(f.msg, "more than 4 YAML nodes"));
    /* One document only, aliases refused, NUL refused. */
    static const char two[] = "a: 1\n---\nb: 2\n";
    assert_int_equal(mb__yaml_load(two, strlen(two), 32, 100, &doc, &loaded, &f), MB_EPARSE);
    assert_non_null(strstr(f.msg, "second YAML document"));
    assert_int_equal(f.line, 2);
    static const char alias[] = "a: &x [1]\nb: *x\n";
    assert_int_equal(mb__yaml_load(alias, strlen(alias), 32, 100, &doc, &loaded, &f), MB_EPARSE);
    assert_non_null(strstr(f.msg, "aliases"));
    static const char nul[] = "a: 1\nb: \0\n";
    assert_int_equal(mb__yaml_load(nul, sizeof(nul) - 1, 32, 100, &doc, &loaded, &f), MB_EPARSE);
    assert_int_equal(f.line, 2);
    /* Empty streams load nothing; a good document keeps its structure and lines. */
    assert_int_equal(mb__yaml_load("", 0, 32, 100, &doc, &loaded, &f), MB_OK);
    assert_false(loaded);
    assert_int_equal(mb__yaml_load("# only\n", 7, 32, 100, &doc, &loaded, &f), MB_OK);
    assert_false(loaded);
    static const char good[] = "a: 1\nb:\n  - x\n  - {c: d}\n";
    assert_int_equal(mb__yaml_load(good, strlen(good), 32, 100, &doc, &loaded, &f), MB_OK);
    assert_true(loaded);
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    assert_int_equal(root->type, YAML_MAPPING_NODE);
    assert_int_equal(root->data.mapping.pairs.top - root->data.mapping.pairs.start, 2);
    yaml_node_t *b = yaml_document_get_node(&doc, root->data.mapping.pairs.start[1].value);
    assert_int_equal(b->type, YAML_SEQUENCE_NODE);
    assert_int_equal(b->start_mark.line, 2);
    yaml_node_t *m = yaml_document_get_node(&doc, b->data.sequence.items.start[1]);
    assert_int_equal(m->type, YAML_MAPPING_NODE);
    assert_int_equal(m->start_mark.line, 3);
    yaml_document_delete(&doc);
}

/* Deep nesting is refused in every YAML reader, fast: ~1 MB in well under a second. */
static void test_yaml_deep_every_reader(void **state)
{
    (void)state;
    char path[128];
    join(path, sizeof(path), "deep.yaml");
    char *deep = nested(500000, '[', ']');
    put(path, deep);
    free(deep);
    struct mb_error err;
    double t0 = now_s();
    struct mb_experiment *exp = NULL;
    assert_int_equal(mb_experiment_load(path, NULL, 0, &exp, &err), MB_EPARSE);
    assert_non_null(strstr(err.msg, "nesting deeper than"));
    struct mb_plan_jobset *js = NULL;
    assert_int_equal(mb_plan_jobset_load(path, &js, &err), MB_EPARSE);
    assert_non_null(strstr(err.msg, "nesting deeper than"));
    struct mb_migcfg *cfg = NULL;
    assert_int_equal(mb_migcfg_load(path, &cfg, &err), MB_EPARSE);
    assert_non_null(strstr(err.msg, "nesting deeper than"));
    /* --set values go through the same loader. */
    static const char *const ov[] = {
        "measure.duration=[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]"
        "]]]]]]]]]]]]]]]]]]]]]]]]]]]]]"};
    assert_int_equal(
        mb_experiment_load(MB_SOURCE_DIR "/examples/quickstart.yaml", ov, 1, &exp, &err),
        MB_EPARSE);
    assert_non_null(strstr(err.msg, "nesting deeper than"));
    /* Generous: under ASan on a loaded machine; the unbounded loader took minutes. */
    assert_true(now_s() - t0 < 10.0);
}

static void test_yaml_second_document(void **state)
{
    (void)state;
    char path[128];
    join(path, sizeof(path), "two.yaml");
    FILE *in = fopen(MB_SOURCE_DIR "/examples/quickstart.yaml", "r");
    assert_non_null(in);
    static char text[1 << 16];
    size_t n = fread(text, 1, sizeof(text) - 64, in);
    fclose(in);
    snprintf(text + n, sizeof(text) - n, "---\nname: other\n");
    put(path, text);
    struct mb_error err;
    struct mb_experiment *exp = NULL;
    assert_int_equal(mb_experiment_load(path, NULL, 0, &exp, &err), MB_EPARSE);
    assert_non_null(strstr(err.msg, "second YAML document"));
    static const char *const ov[] = {"measure.duration=20s\n---\n30s"};
    assert_int_equal(
        mb_experiment_load(MB_SOURCE_DIR "/examples/quickstart.yaml", ov, 1, &exp, &err),
        MB_EPARSE);
    assert_non_null(strstr(err.msg, "--set"));
    assert_non_null(strstr(err.msg, "second YAML document"));
}

/* Repeated names are found by sorting or hashing now (pairwise took 20 s on 49,000 keys). */
static void test_repeats(void **state)
{
    (void)state;
    static const char text[] = "version: 1\nb: 1\na: 1\nc: 1\na: 2\na: 3\nb: 2\n";
    struct mb_experiment *exp = NULL;
    struct mb_error err;
    assert_int_equal(mb_experiment_parse("r.yaml", text, strlen(text), NULL, 0, &exp, &err),
                     MB_EPARSE);
    assert_non_null(strstr(err.msg, "r.yaml:5: duplicate key 'a' (first on line 3)"));
    char path[128];
    join(path, sizeof(path), "wl.yaml");
    put(path, "gpu: H100-80GB\n"
              "workloads:\n"
              "  w: {command: [/bin/true]}\n"
              "  v: {command: [/bin/true]}\n"
              "  w: {command: [/bin/false]}\n"
              "jobs: [{workload: w, work: 1}]\n");
    struct mb_plan_jobset *js = NULL;
    assert_int_equal(mb_plan_jobset_load(path, &js, &err), MB_EPARSE);
    assert_non_null(strstr(err.msg, "wl.yaml:5: duplicate key 'w' (first on line 3)"));
    /* Two 'workloads:' (or 'jobs:') once made the reader write past the first one's array. */
    put(path, "gpu: H100-80GB\n"
              "workloads: {w: {command: [/bin/true]}}\n"
              "jobs: [{workload: w, work: 1}]\n"
              "workloads: {v: {command: [/bin/true]}, u: {command: [/bin/true]}}\n");
    assert_int_equal(mb_plan_jobset_load(path, &js, &err), MB_EPARSE);
    assert_non_null(strstr(err.msg, "jobs.yaml:4: duplicate key 'workloads' (first on line 2)") ||
                    strstr(err.msg, ":4: duplicate key 'workloads' (first on line 2)"));
    put(path, "gpu: H100-80GB\n"
              "workloads: {w: {command: [/bin/true]}}\n"
              "jobs:\n"
              "  - {name: a, workload: w, work: 1}\n"
              "  - {name: b, workload: w, work: 1, replicas: 3}\n"
              "  - {name: b-1, workload: w, work: 1}\n");
    assert_int_equal(mb_plan_jobset_load(path, &js, &err), MB_EPARSE);
    assert_non_null(strstr(err.msg, "'b-1' is also the name of the job on line 5"));
}

/* ---- durations and amounts ----------------------------------------------------------------- */

static void test_amounts(void **state)
{
    (void)state;
    struct mb_amount a;
    struct mb_error err;
    assert_int_equal(mb_amount_parse("0x10s", false, false, &a, &err), MB_EPARSE);
    assert_int_equal(mb_amount_parse("0x1p4", false, false, &a, &err), MB_EPARSE);
    assert_int_equal(mb_amount_parse("infs", false, false, &a, &err), MB_EPARSE);
    assert_int_equal(mb_amount_parse("1e-308s", false, false, &a, &err), MB_EPARSE);
    assert_non_null(strstr(err.msg, "out of range"));
    assert_int_equal(mb_amount_parse("1e400 steps", true, false, &a, &err), MB_EPARSE);
    assert_non_null(strstr(err.msg, "out of range"));
    assert_int_equal(mb_amount_parse("1e300 steps", true, false, &a, &err), MB_EPARSE);
    assert_int_equal(mb_amount_parse("1e300s", false, false, &a, &err), MB_EPARSE);
    assert_int_equal(mb_amount_parse("1.5m", false, false, &a, &err), MB_OK);
    assert_true(a.ns == 90000000000LL);
}

/* ---- plan input ---------------------------------------------------------------------------- */

static void expect_jobs(const char *jobs_line, const char *expect)
{
    char path[128];
    join(path, sizeof(path), "jobs.yaml");
    char text[512];
    snprintf(text, sizeof(text),
             "gpu: H100-80GB\n"
             "jobs:\n"
             "  - %s\n"
             "workloads:\n"
             "  w: {command: [/bin/true], unit: images}\n",
             jobs_line);
    put(path, text);
    struct mb_plan_jobset *js = NULL;
    struct mb_error err;
    int rc = mb_plan_jobset_load(path, &js, &err);
    if (!expect) {
        if (rc != MB_OK)
            fail_msg("%s: %s", jobs_line, err.msg);
        mb_plan_jobset_destroy(js);
        return;
    }
    assert_int_equal(rc, MB_EPARSE);
    assert_null(js);
    if (!strstr(err.msg, expect))
        fail_msg("%s: got '%s', expected '%s'", jobs_line, err.msg, expect);
}

static void test_plan_numbers(void **state)
{
    (void)state;
    expect_jobs("{name: a, workload: w, work: 1e6, priority: 3}", NULL);
    expect_jobs("{name: a, workload: w, work: 1e308}", "at most 1e+18");
    expect_jobs("{name: a, workload: w, work: 1e400}", "out of range");
    expect_jobs("{name: a, workload: w, work: 0x10}", "expected a number");
    expect_jobs("{name: a, workload: w, work: 1e6, priority: 1e100}",
                "expected an integer between");
    expect_jobs("{name: a, workload: w, work: 1e6, deadline: 0x10s}", "not a positive number");
}

static void test_plan_csv_header_only(void **state)
{
    (void)state;
    char path[128];
    join(path, sizeof(path), "profiles.csv");
    put(path, "workload,gpu,partition,throughput,unit,power_w,idle_power_w,peak_mem_mib,source,"
              "proxy\n");
    struct mb_catalog *cat = NULL;
    struct mb_plan_profiles *p = NULL;
    struct mb_error err;
    assert_int_equal(mb_catalog_create(&cat, &err), MB_OK);
    assert_int_equal(mb_plan_profiles_create(&p, &err), MB_OK);
    assert_int_equal(mb_plan_profiles_load_csv(p, cat, path, &err), MB_EPARSE);
    assert_non_null(strstr(err.msg, "a header but no profile rows"));
    put(path, "workload,gpu,partition,throughput,unit,power_w\n"
              "resnet50,H100-80GB,full,1e-308,images,300\n");
    assert_int_equal(mb_plan_profiles_load_csv(p, cat, path, &err), MB_EPARSE);
    assert_non_null(strstr(err.msg, "not a number in range"));
    mb_plan_profiles_destroy(p);
    mb_catalog_destroy(cat);
}

/* ---- JSON inputs -------------------------------------------------------------------------------
 */

static void test_json(void **state)
{
    (void)state;
    cJSON *root;
    struct mb_error err;
    char *deep = nested(2000, '[', ']');
    assert_int_equal(mb_json_parse(deep, strlen(deep), "deep.json", &root, &err), MB_EPARSE);
    assert_non_null(strstr(err.msg, "deep.json: JSON nested deeper than 1000 levels"));
    free(deep);
    static const char nul[] = "{\"H100\\u0000evil\": {}}";
    assert_int_equal(mb_json_parse(nul, strlen(nul), "c.json", &root, &err), MB_EPARSE);
    assert_non_null(strstr(err.msg, "\\u0000"));
    static const char bad[] = "{\n  \"a\": 1,,\n}";
    assert_int_equal(mb_json_parse(bad, strlen(bad), "b.json", &root, &err), MB_EPARSE);
    assert_non_null(strstr(err.msg, "b.json:2:"));
    static const char ok[] = "{\"a\": \"\\\\u0000 is text here\"}";
    assert_int_equal(mb_json_parse(ok, strlen(ok), "ok.json", &root, &err), MB_OK);
    cJSON_Delete(root);

    /* A catalog naming a model with \u0000 is refused, not truncated to "H100". */
    char path[128];
    join(path, sizeof(path), "catalog.json");
    put(path, "{\"H100\\u0000-fake\": {}}");
    struct mb_catalog *cat = NULL;
    assert_int_equal(mb_catalog_create(&cat, &err), MB_OK);
    assert_int_equal(mb_catalog_load_file(cat, path, &err), MB_EPARSE);
    assert_non_null(strstr(err.msg, "\\u0000"));
    mb_catalog_destroy(cat);
}

/* A results directory holding one cell.json with the given text. */
static int load_cell(const char *cell, struct mb_error *err)
{
    char dir[128], path[192];
    join(dir, sizeof(dir), "res");
    mkdir(dir, 0755);
    snprintf(path, sizeof(path), "%s/r", dir);
    mkdir(path, 0755);
    snprintf(path, sizeof(path), "%s/r/0", dir);
    mkdir(path, 0755);
    snprintf(path, sizeof(path), "%s/r/0/cell.json", dir);
    put(path, cell);
    struct mb_analysis *a = NULL;
    const char *dirs[] = {dir};
    int rc = mb_analysis_load(&a, dirs, 1, err);
    mb_analysis_destroy(a);
    return rc;
}

static void test_cell_json(void **state)
{
    (void)state;
    struct mb_error err;
    /* Huge numbers where integers are kept: no float-to-integer overflow (UBSan checks). */
    assert_int_equal(load_cell("{\"run\": \"r\", \"rep\": 1e20, \"mode\": \"mig\", \"status\": "
                               "\"ok\", \"jobs\": [{\"name\": \"a\", \"started_ns\": 1e300, "
                               "\"ended_ns\": 1e308, \"window\": {\"start_ns\": -1e300, "
                               "\"end_ns\": 1e300}, \"instance\": {\"profile\": \"1g.10gb\"}}],"
                               " \"device\": {\"mig\": {\"instances\": [{\"gi_id\": 1e30}]}}}",
                               &err),
                     MB_OK);
    assert_int_equal(load_cell("{\"run\": \"r\", \"mode\": \"mig\", \"status\": \"ok\", \"jobs\": "
                               "[{\"name\": \"a\", \"throughput\": {\"mean\": -5}}]}",
                               &err),
                     MB_EPARSE);
    assert_non_null(strstr(err.msg, "field 'jobs[0].throughput.mean': negative"));
    assert_int_equal(load_cell("{\"run\": \"r\", \"mode\": \"warp\", \"status\": \"ok\", \"jobs\": "
                               "[{\"name\": \"a\"}]}",
                               &err),
                     MB_EPARSE);
    assert_non_null(strstr(err.msg, "field 'mode': 'warp' is not a sharing mode"));
    char *deep = nested(1500, '[', ']');
    assert_int_equal(load_cell(deep, &err), MB_EPARSE);
    assert_non_null(strstr(err.msg, "nested deeper than 1000 levels"));
    free(deep);
}

/* ---- emulator state ----------------------------------------------------------------------------
 */

static char *slurp(const char *path)
{
    char *buf = NULL;
    assert_int_equal(mb_file_read(path, 1 << 20, &buf, NULL, NULL), MB_OK);
    return buf;
}

/* A state file another user damaged is refused before anything is changed. */
static void expect_state_refused(const char *spec, const char *state_path, const char *text,
                                 const char *expect)
{
    put(state_path, text);
    struct mb_device *dev = NULL;
    struct mb_error err;
    mb_error_clear(&err);
    int rc = mb_device_open(spec, &dev, &err);
    if (rc == MB_OK) {
        struct mb_mig_mode mode;
        rc = mb_device_mig_mode(dev, &mode, &err);
        if (rc == MB_OK)
            rc = mb_device_mig_set_mode(dev, 0, &err);
        mb_device_close(dev);
    }
    if (rc != MB_EPARSE || !strstr(err.msg, expect))
        fail_msg("got %d '%s', expected '%s'", rc, err.msg, expect);
    char *after = slurp(state_path);
    assert_string_equal(after, text);
    free(after);
}

static void test_emu_state(void **state)
{
    (void)state;
    char sp[128], spec[256];
    join(sp, sizeof(sp), "emu-state.json");
    snprintf(spec, sizeof(spec), "emu:A100-80GB,state=%s", sp);
    /* Let the emulator write a real state with one GI, then damage copies of it. */
    struct mb_device *dev = NULL;
    struct mb_error err;
    assert_int_equal(mb_device_open(spec, &dev, &err), MB_OK);
    assert_int_equal(mb_device_mig_set_mode(dev, 1, &err), MB_OK);
    mb_device_close(dev);
    char *good = slurp(sp);
    assert_non_null(strstr(good, "\"mig_pending\":\t1"));
    free(good);
    static const char head[] = "{\"version\": 1, \"model\": \"A100-SXM4-80GB\", \"uuid\": \"x\", "
                               "\"mig_current\": 1, \"mig_pending\": 1, ";
    char text[1024];
    snprintf(text, sizeof(text),
             "%s\"gpu_instances\": [{\"id\": 1, \"profile_id\": 19, \"start\": 0, \"size\": 1, "
             "\"compute_instances\": []}, {\"id\": 1, \"profile_id\": 19, \"start\": 1, "
             "\"size\": 1, \"compute_instances\": []}], \"processes\": []}",
             head);
    expect_state_refused(spec, sp, text, "GI id 1 appears twice");
    snprintf(text, sizeof(text), "%s\"gpu_instances\": {\"id\": 1}, \"processes\": []}", head);
    expect_state_refused(spec, sp, text, "field 'gpu_instances': expected a list");
    snprintf(text, sizeof(text), "%s\"gpu_instances\": [\"x\"], \"processes\": []}", head);
    expect_state_refused(spec, sp, text, "field 'gpu_instances[0]': expected an object");
    snprintf(text, sizeof(text), "%s\"gpu_instances\": [], \"processes\": 7}", head);
    expect_state_refused(spec, sp, text, "field 'processes': expected a list");
    snprintf(
        text, sizeof(text),
        "{\"version\": 1, \"model\": \"A100-SXM4-80GB\", \"mig_current\": 0, \"mig_pending\": 0, "
        "\"gpu_instances\": [], \"processes\": [{\"pid\": 5, \"gi\": -1, \"ci\": -1, "
        "\"mem_bytes\": 1e300}]}");
    expect_state_refused(spec, sp, text, "mem_bytes' missing or out of range");
    snprintf(text, sizeof(text),
             "{\"version\": 1, \"model\": \"A100-SXM4-80GB\", \"mig_current\": \"1\", "
             "\"mig_pending\": 0}");
    expect_state_refused(spec, sp, text, "field 'mig_current'");
    snprintf(text, sizeof(text), "{\"model\": \"A100-SXM4-80GB\"}\n{\"model\": 1}");
    expect_state_refused(spec, sp, text, "not valid JSON");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_num),
        cmocka_unit_test(test_fmt_sig),
        cmocka_unit_test(test_fifo_refused),
        cmocka_unit_test(test_yaml_limits),
        cmocka_unit_test(test_yaml_deep_every_reader),
        cmocka_unit_test(test_yaml_second_document),
        cmocka_unit_test(test_repeats),
        cmocka_unit_test(test_amounts),
        cmocka_unit_test(test_plan_numbers),
        cmocka_unit_test(test_plan_csv_header_only),
        cmocka_unit_test(test_json),
        cmocka_unit_test(test_cell_json),
        cmocka_unit_test(test_emu_state),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
