/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Hostile input, third round (issue 26): shared runtime files, restore records, selections,
 * cells.tsv, device specs, job clocks and energy counters. Each case is what another user (or a
 * damaged file) could hand migbench, with the refusal it must get.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "fleet/fleet_internal.h"
#include "migbench/device.h"
#include "migbench/experiment.h"
#include "migbench/live.h"
#include "migbench/powercap.h"
#include "migbench/progress.h"
#include "monitor/live_internal.h"
#include "run/selection.h"

static char tmpdir[64];

static int setup(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/mb-hostile3-XXXXXX");
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

#define has(s, part) assert_non_null(strstr((s), (part)))

/* ---- restore records ---------------------------------------------------------------------- */

/* Numbers no integer holds (UB when cast: UBSan's float-cast-overflow) are refused by field. */
static void test_record_numbers(void **state)
{
    (void)state;
    static const struct {
        const char *extra, *field;
    } cases[] = {
        {"\"pid_start\": 1e300", "pid_start"},      {"\"time_unix_s\": 1e300", "time_unix_s"},
        {"\"time_unix_s\": -1e300", "time_unix_s"}, {"\"pid_start\": -1", "pid_start"},
        {"\"pid_start\": 1.5", "pid_start"},        {"\"prev_mw\": 1e300", "prev_mw"},
    };
    char path[128];
    join(path, sizeof(path), "rec.json");
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char text[512];
        snprintf(text, sizeof(text),
                 "{\"uuid\": \"GPU-1\", \"original_mw\": 700000, \"set_mw\": 350000, "
                 "\"pid\": 12, \"boot_id\": \"b\", %s}\n",
                 cases[i].extra);
        put(path, text);
        struct mb_powercap_record r;
        struct mb_error err;
        assert_int_equal(mb_powercap_read(path, &r, &err), MB_EPARSE);
        char want[64];
        snprintf(want, sizeof(want), "field '%s'", cases[i].field);
        has(err.msg, want);
        has(err.msg, path);
    }
    put(path, "{\"uuid\": \"GPU-1\", \"original_mw\": 700000, \"set_mw\": 350000, \"pid\": 12, "
              "\"pid_start\": 99, \"time_unix_s\": 1700000000}\n");
    struct mb_powercap_record r;
    assert_int_equal(mb_powercap_read(path, &r, NULL), MB_OK);
    assert_int_equal(r.pid_start, 99);
    assert_int_equal(r.t_unix_s, 1700000000);
}

/* A dead owner's record whose original limit the GPU cannot take names the record file. */
static void test_record_unrestorable(void **state)
{
    (void)state;
    char gpu[128], spec[256], ledger[160];
    join(gpu, sizeof(gpu), "gpu.json");
    snprintf(spec, sizeof(spec), "emu:H100-80GB:idle_w=70:max_w=700:state=%s", gpu);
    snprintf(ledger, sizeof(ledger), "%s.powercap.json", gpu);
    struct mb_device *dev = NULL;
    struct mb_error err;
    assert_int_equal(mb_device_open(spec, &dev, &err), MB_OK);
    struct mb_device_info info;
    assert_int_equal(mb_device_info(dev, &info, &err), MB_OK);
    assert_int_equal(mb_device_set_power_limit(dev, 350000, &err), MB_OK);
    pid_t c = fork();
    assert_true(c >= 0);
    if (c == 0)
        _exit(0);
    waitpid(c, NULL, 0);
    char text[512];
    snprintf(text, sizeof(text),
             "{\"uuid\": \"%s\", \"original_mw\": 900000, \"set_mw\": 350000, \"pid\": %ld}\n",
             info.uuid, (long)c);
    put(ledger, text);
    struct mb_powercap pc = {dev, ledger, NULL};
    assert_int_not_equal(mb_powercap_recover(&pc, NULL, &err), MB_OK);
    has(err.msg, ledger);
    has(err.msg, "remove the record");
    mb_device_close(dev);
}

/* A limit too large for a double is out of range, not "expected default, ...". */
static void test_limit_text(void **state)
{
    (void)state;
    struct mb_power_setting ps;
    struct mb_error err;
    assert_int_equal(mb_power_setting_parse("1e400W", &ps, &err), MB_EINVAL);
    has(err.msg, "out of range");
    assert_int_equal(mb_power_setting_parse("1e400%", &ps, &err), MB_EINVAL);
    has(err.msg, "out of range");
}

/* ---- live files ------------------------------------------------------------------------------ */

static int live(const char *json, struct mb_error *err)
{
    struct mb_live_cell c;
    return mb__live_parse(json, strlen(json), "run-1.json", &c, err);
}

static void test_live_values(void **state)
{
    (void)state;
    struct mb_error err;
    assert_int_equal(live("{\"pid\": 5, \"run\": \"mix\", \"cell_index\": 1, \"cells\": 4, "
                          "\"window_s\": 3, \"power_w\": 300, \"jobs\": [{\"name\": \"a\", "
                          "\"rate\": 12.5}]}",
                          &err),
                     MB_OK);
    static const struct {
        const char *json, *field;
    } bad[] = {
        {"{\"pid\": 5, \"device\": \"x\\npower=9999.0W\"}", "device"},
        {"{\"pid\": 5, \"run\": \"\\u001b[2J\"}", "run"},
        {"{\"pid\": 5, \"run\": \"\\u009b2J\"}", "run"},
        {"{\"pid\": 5, \"experiment\": \"a\\u007f\"}", "experiment"},
        {"{\"pid\": 5, \"cell_index\": 5, \"cells\": 2}", "cell_index"},
        {"{\"pid\": 5, \"window_s\": -5}", "window_s"},
        {"{\"pid\": 5, \"elapsed_s\": 1e300}", "elapsed_s"},
        {"{\"pid\": 5, \"power_w\": 9e9}", "power_w"},
        {"{\"pid\": 5, \"rep\": 1.5}", "rep"},
        {"{\"pid\": 5, \"jobs\": [{\"name\": \"a\", \"rate\": -1}]}", "rate"},
        {"{\"pid\": 5, \"jobs\": [{\"name\": \"a\\r\"}]}", "name"},
        {"{\"pid\": 1e300}", "pid"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(live(bad[i].json, &err), MB_EPARSE);
        char want[64];
        snprintf(want, sizeof(want), "field '%s'", bad[i].field);
        has(err.msg, want);
    }
}

/* The runtime directory: another user's, or one anyone can write to, is refused. */
static void test_live_dir(void **state)
{
    (void)state;
    char open_dir[128], cell_dir[128], buf[256];
    join(open_dir, sizeof(open_dir), "open");
    assert_int_equal(mkdir(open_dir, 0700), 0);
    assert_int_equal(chmod(open_dir, 0777), 0);
    struct mb_error err;
    assert_int_equal(mb__live_dir_check(open_dir, &err), MB_EPERM);
    has(err.msg, "mode 0777");
    setenv("MIGBENCH_RUNTIME_DIR", open_dir, 1);
    assert_int_equal(mb_live_dir(buf, sizeof(buf), &err), MB_EPERM);
    unsetenv("MIGBENCH_RUNTIME_DIR");
    struct mb_live_cell c = {.pid = (long)getpid()}, out[2];
    assert_int_equal(mb_live_write(open_dir, &c, &err), MB_EPERM);
    size_t n = 9;
    assert_int_equal(mb_live_scan(open_dir, out, 2, &n, &err), MB_EPERM);
    assert_int_equal(n, 0);
    /* Another owner: as root a directory given to nobody, else one root owns. */
    join(cell_dir, sizeof(cell_dir), "theirs");
    assert_int_equal(mkdir(cell_dir, 0700), 0);
    const char *theirs = geteuid() == 0 && chown(cell_dir, 65534, 65534) == 0 ? cell_dir : "/";
    assert_int_equal(mb__live_dir_check(theirs, &err), MB_EPERM);
    has(err.msg, "not by you");
    /* A link is not followed. */
    join(buf, sizeof(buf), "link");
    assert_int_equal(symlink(tmpdir, buf), 0);
    assert_int_equal(mb__live_dir_check(buf, &err), MB_EPERM);
    /* Ours, private, or missing: fine. */
    assert_int_equal(mb__live_dir_check(tmpdir, &err), MB_OK);
    join(buf, sizeof(buf), "missing");
    assert_int_equal(mb__live_dir_check(buf, &err), MB_OK);
}

/* ---- selections ---------------------------------------------------------------------------- */

static void test_selection(void **state)
{
    (void)state;
    assert_true(mb__selection_is_index("1", 1));
    assert_true(mb__selection_is_index("0-1", 3));
    assert_true(mb__selection_is_index("99999999999999999999999", 23));
    assert_false(mb__selection_is_index("1a", 2));
    assert_false(mb__selection_is_index("0-", 2));
    assert_false(mb__selection_is_index("r1", 2));
    const char *names[] = {"a", "a", "b", "b"};
    const char *runs[] = {"a", "b", "cpu"};
    struct mb__selection_cells sc = {names, 4, runs, 3};
    bool keep[4] = {false};
    struct mb_error err;
    assert_int_equal(mb__selection_mark("9999999999", "--cells", &sc, keep, &err), MB_EINVAL);
    has(err.msg, "'9999999999' is past the last cell (4 cells: 0-3)");
    assert_int_equal(mb__selection_mark("99999999999999999999999999", "--cells", &sc, keep, &err),
                     MB_EINVAL);
    has(err.msg, "past the last cell");
    assert_int_equal(mb__selection_mark("0,,1", "--only", &sc, keep, &err), MB_EINVAL);
    has(err.msg, "--only: an empty item");
    assert_int_equal(mb__selection_mark("nosuch", "--cells", &sc, keep, &err), MB_EINVAL);
    has(err.msg, "nor a run of the experiment");
    memset(keep, 0, sizeof(keep));
    assert_int_equal(mb__selection_mark("b,cpu,0", "--cells", &sc, keep, &err), MB_OK);
    assert_true(keep[0] && !keep[1] && keep[2] && keep[3]);
}

/* A run named like an index or a range is refused where it is written. */
static void test_run_names(void **state)
{
    (void)state;
    static const char *const names[] = {"1", "0-1", "007"};
    char path[128];
    join(path, sizeof(path), "exp.yaml");
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        char text[512];
        snprintf(text, sizeof(text),
                 "version: 1\nname: e\nworkloads:\n  a: {command: [\"true\"], unit: steps}\n"
                 "runs:\n  - {name: \"%s\", mode: exclusive, jobs: [a]}\n",
                 names[i]);
        put(path, text);
        struct mb_experiment *exp = NULL;
        struct mb_error err;
        assert_int_equal(mb_experiment_load(path, NULL, 0, &exp, &err), MB_EPARSE);
        has(err.msg, "exp.yaml:6: field 'runs[0].name'");
        has(err.msg, "reads as a cell index or range");
    }
}

/* slurm.gpu must be a GPU model: refused with file, line and field. */
static void test_slurm_gpu(void **state)
{
    (void)state;
    char path[128];
    join(path, sizeof(path), "slurm.yaml");
    put(path, "version: 1\nname: e\nworkloads:\n  a: {command: [\"true\"], unit: steps}\n"
              "runs:\n  - {name: r, mode: exclusive, jobs: [a]}\nslurm:\n  gpu: Z9000\n");
    struct mb_experiment *exp = NULL;
    struct mb_error err;
    assert_int_equal(mb_experiment_load(path, NULL, 0, &exp, &err), MB_EPARSE);
    has(err.msg, "slurm.yaml:8: field 'slurm.gpu': 'Z9000'");
}

/* ---- cells.tsv ---------------------------------------------------------------------------------
 */

static int tsv(const char *text, struct mb_error *err)
{
    char *copy = strdup(text);
    assert_non_null(copy);
    struct mb_slurm_cell *cells = NULL;
    size_t n = 0;
    int rc = mb__cells_tsv_parse(copy, "cells.tsv", &cells, &n, err);
    free(cells);
    free(copy);
    return rc;
}

static void test_cells_tsv(void **state)
{
    (void)state;
    struct mb_error err;
    const char *head = "index\trun\trepetition\tmode\tjobs\n";
    char text[256];
    snprintf(text, sizeof(text), "%s0\tr\t0\texclusive\ta\n1\tr\t1\texclusive\ta\n", head);
    assert_int_equal(tsv(text, &err), MB_OK);
    static const struct {
        const char *row, *field;
    } bad[] = {
        {"-1\tr\t0\n", "index"},
        {"18446744073709551615\tr\t0\n", "index"},
        {"0\tr\t-5\n", "repetition"},
        {"0\tr\t1e22\n", "repetition"},
        {"0\tr\t4294967296\n", "repetition"},
        {"0\t../../etc\t0\n", "run"},
        {"1\tr\t0\n", "index"},
        {"0\tr\n", "not 'index, run, repetition'"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(text, sizeof(text), "%s%s", head, bad[i].row);
        assert_int_equal(tsv(text, &err), MB_EPARSE);
        has(err.msg, "cells.tsv:2:");
        has(err.msg, bad[i].field);
    }
}

/* ---- device specs ------------------------------------------------------------------------------
 */

static void test_spec_files(void **state)
{
    (void)state;
    char fifo[128], spec[512];
    join(fifo, sizeof(fifo), "fifo");
    assert_int_equal(mkfifo(fifo, 0600), 0);
    const char *opts[][2] = {
        {"trace", "/dev/zero"}, {"catalog", fifo}, {"state", tmpdir}, {"state", "/dev/null"}};
    for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++) {
        snprintf(spec, sizeof(spec), "emu:H100-80GB:%s=%s", opts[i][0], opts[i][1]);
        struct mb_device *dev = NULL;
        struct mb_error err;
        assert_int_equal(mb_device_open(spec, &dev, &err), MB_EINVAL);
        has(err.msg, "not a regular file");
    }
    /* 5,000 characters: the message keeps the reason at its end. */
    char *lng = malloc(6000);
    assert_non_null(lng);
    int n = snprintf(lng, 6000, "emu:H100-80GB:x=");
    memset(lng + n, 'a', 5000);
    lng[n + 5000] = '\0';
    struct mb_device *dev = NULL;
    struct mb_error err;
    assert_int_equal(mb_device_open(lng, &dev, &err), MB_EINVAL);
    has(err.msg, "too long");
    free(lng);
    /* Any message too long for the buffer keeps its head and its tail. */
    char big[3000];
    memset(big, 'p', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    mb_error_set(&err, MB_EIO, "trace file: %s: cannot open: No such file or directory", big);
    has(err.msg, "trace file: ppp");
    has(err.msg, " ... ");
    has(err.msg, "cannot open: No such file or directory");
    mb_error_prefix(&err, "device '%s': ", big);
    has(err.msg, "cannot open: No such file or directory");
}

/* ---- a job's own clock ----------------------------------------------------------------------- */

static void clocked(const char *fmt, double scale, int64_t started, struct mb_throughput *tp)
{
    struct mb_progress_opts o = {
        .regex = "iter ([0-9]+) t ([0-9.]+)", .samples_per_step = 1, .started_ns = started};
    struct mb_progress *p = NULL;
    assert_int_equal(mb_progress_create(&o, &p, NULL), MB_OK);
    for (int i = 1; i <= 40; i++) {
        char line[64];
        /* 20 steps/s; one line per read, arriving when printed. */
        double t = (fmt ? 20.0 + (double)(i * 7 % 10) : i * 0.05) * scale;
        snprintf(line, sizeof(line), "iter %d t %.3f\n", i, t);
        mb_progress_feed(p, line, strlen(line), 1000000000LL + (int64_t)i * 50000000);
    }
    mb_progress_throughput(p, 1000000000LL, 0, 0, 4, tp);
    mb_progress_destroy(p);
}

static void test_job_clock(void **state)
{
    (void)state;
    struct mb_throughput tp;
    clocked(NULL, 1.0, 1000000000LL, &tp);
    assert_true(tp.valid);
    assert_true(tp.job_clock);
    /* Milliseconds read as seconds: 1000x the wall time. */
    clocked(NULL, 1000.0, 1000000000LL, &tp);
    assert_false(tp.valid);
    has(tp.reason, "the job's own clock spans");
    has(tp.reason, "milliseconds?");
    /* A per-iteration time as the clock: most records go backwards. */
    clocked("per-iteration", 1.0, 1000000000LL, &tp);
    assert_false(tp.valid);
    has(tp.reason, "progress records were rejected");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_record_numbers), cmocka_unit_test(test_record_unrestorable),
        cmocka_unit_test(test_limit_text),     cmocka_unit_test(test_live_values),
        cmocka_unit_test(test_live_dir),       cmocka_unit_test(test_selection),
        cmocka_unit_test(test_run_names),      cmocka_unit_test(test_slurm_gpu),
        cmocka_unit_test(test_cells_tsv),      cmocka_unit_test(test_spec_files),
        cmocka_unit_test(test_job_clock),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
