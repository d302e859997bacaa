/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The power-limit axis through the runner on an emulated H100 with a state file, with the
 * modelled workload (fx_model): runs expanded per limit; each cell sets its limit (recorded in
 * the ledger first) and restores it; cell.json names the requested and enforced limit and the
 * throttle reasons of the window; an interrupted cell restores too; a limit out of range fails
 * its cell without touching the GPU; a device that cannot set limits skips the axis with a note.
 * MB_TEST_THREADS: the runner's meter samples on its own thread.
 */
#define _XOPEN_SOURCE 700
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "migbench/analysis.h"
#include "migbench/device.h"
#include "power/poweraxis.h"
#include "migbench/experiment.h"
#include "migbench/fileio.h"
#include "migbench/powercap.h"
#include "migbench/results.h"
#include "results/results_json.h"
#include "migbench/runner.h"

static char dir[64], spec[256], ledger[256], res[128], jpath[160];

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof(dir), "/tmp/mb-test-runner-power-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    snprintf(spec, sizeof(spec), "emu:H100-80GB:idle_w=70:max_w=700:state=%s/gpu.json", dir);
    snprintf(ledger, sizeof(ledger), "%s/gpu.json.powercap.json", dir);
    snprintf(res, sizeof(res), "%s/res", dir);
    snprintf(jpath, sizeof(jpath), "%s/journal.jsonl", res);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    return nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static struct mb_experiment *load(const char *limits_a, const char *limits_b, const char *extra)
{
    char yaml[4096];
    snprintf(yaml, sizeof(yaml),
             "version: 1\nname: caps\nworkloads:\n"
             "  m: {command: [\"%s/fixtures/fx_model\", --device, \"%s\", --rate, \"40\", "
             "--duration, \"60\"%s]}\n"
             "runs:\n"
             "  - {name: solo, mode: exclusive, jobs: [m]}\n"
             "measure: {warmup: 2 steps, duration: 5200ms, sample_interval: 50ms, grace: 1s, "
             "progress_timeout: 10s}\n",
             MB_BINARY_DIR, spec, extra);
    struct mb_error err;
    struct mb_experiment *exp;
    if (mb_experiment_parse("caps.yaml", yaml, strlen(yaml), NULL, 0, &exp, &err) != MB_OK)
        fail_msg("%s", err.msg);
    /* The YAML field is parsed elsewhere; the axis starts from these lists. */
    assert_int_equal(mb_power_setting_parse(limits_a, &exp->runs[0].power_limits[0], &err), MB_OK);
    exp->runs[0].n_power_limits = 1;
    if (limits_b) {
        assert_int_equal(mb_power_setting_parse(limits_b, &exp->runs[0].power_limits[1], &err),
                         MB_OK);
        exp->runs[0].n_power_limits = 2;
    }
    assert_int_equal(mb_experiment_expand_power(exp, &err), MB_OK);
    return exp;
}

static uint32_t limit_now(void)
{
    struct mb_device *dev;
    struct mb_power_limit pl;
    assert_int_equal(mb_device_open(spec, &dev, NULL), MB_OK);
    assert_int_equal(mb_device_power_limit(dev, &pl, NULL), MB_OK);
    mb_device_close(dev);
    return pl.limit_mw;
}

struct stopper {
    volatile sig_atomic_t *stop;
};

/* Interrupts the cell once its measurement window starts: an event, not a timer. */
static void stop_at_window(void *ctx, const struct mb_runner_event *ev)
{
    struct stopper *s = ctx;
    if (s && ev->kind == MB_RUNNER_WINDOW_START)
        *s->stop = SIGINT;
}

static int run_cells(struct mb_experiment *exp, struct mb_device *dev, struct stopper *st,
                     bool *failed, struct mb_error *err)
{
    struct mb_journal *j;
    assert_int_equal(mb_results_mkdirs(res, 0755, err), MB_OK);
    assert_int_equal(mb_journal_open(jpath, &j, err), MB_OK);
    volatile sig_atomic_t stop = 0;
    if (st)
        st->stop = &stop;
    struct mb_runner_opts o = {
        .exp = exp,
        .dev = dev,
        .device_spec = spec,
        .results_dir = res,
        .workloads_dir = "/nonexistent",
        .journal = j,
        .stop = &stop,
        .on_event = st ? stop_at_window : NULL,
        .ctx = st,
        .power_ledger = ledger,
    };
    int rc = MB_OK;
    for (size_t r = 0; r < exp->n_runs && rc == MB_OK; r++) {
        struct mb_cell cell = {r, 0};
        rc = mb_runner_run_cell(&o, &cell, &failed[r], err);
        /* Between cells the GPU is back at its limit and nothing is recorded. */
        assert_int_equal(limit_now(), 700000);
        assert_int_equal(access(ledger, F_OK), -1);
    }
    mb_journal_close(j);
    return rc;
}

static cJSON *cell_of(const char *run)
{
    char path[300];
    snprintf(path, sizeof(path), "%s/%s/0/cell.json", res, run);
    cJSON *c = NULL;
    struct mb_error err;
    if (mb_results_read_json(path, 1 << 20, &c, &err) != MB_OK)
        fail_msg("%s", err.msg);
    return cJSON_GetObjectItem(c, "power_limit") ? c : NULL;
}

static void test_axis_sets_and_restores(void **state)
{
    (void)state;
    struct mb_experiment *exp = load("default", "60%", "");
    assert_int_equal(exp->n_runs, 2);
    assert_string_equal(exp->runs[0].name, "solo.cap-default");
    assert_string_equal(exp->runs[1].name, "solo.cap-60pct");
    assert_string_equal(exp->runs[1].base_run, "solo");
    struct mb_device *dev;
    struct mb_error err;
    assert_int_equal(mb_device_open(spec, &dev, &err), MB_OK);
    bool failed[2] = {true, true};
    if (run_cells(exp, dev, NULL, failed, &err) != MB_OK)
        fail_msg("%s", err.msg);
    assert_false(failed[0]);
    assert_false(failed[1]);
    cJSON *c0 = cell_of("solo.cap-default"), *c1 = cell_of("solo.cap-60pct");
    cJSON *p0 = cJSON_GetObjectItem(c0, "power_limit"),
          *p1 = cJSON_GetObjectItem(c1, "power_limit");
    assert_string_equal(cJSON_GetObjectItem(p0, "requested")->valuestring, "default");
    assert_int_equal(cJSON_GetObjectItem(p0, "enforced_mw")->valuedouble, 700000);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(p0, "throttle_reason_names")), 0);
    assert_string_equal(cJSON_GetObjectItem(p1, "requested")->valuestring, "60%");
    assert_int_equal(cJSON_GetObjectItem(p1, "requested_mw")->valuedouble, 420000);
    assert_int_equal(cJSON_GetObjectItem(p1, "enforced_mw")->valuedouble, 420000);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(p1, "set_by_migbench")));
    /* The job loads the whole GPU (700 W demand): under 420 W the cap binds in the window. */
    cJSON *names = cJSON_GetObjectItem(p1, "throttle_reason_names");
    assert_int_equal(cJSON_GetArraySize(names), 1);
    assert_string_equal(cJSON_GetArrayItem(names, 0)->valuestring, "sw_power_cap");
    double peak =
        cJSON_GetObjectItem(cJSON_GetObjectItem(c1, "energy"), "peak_power_w")->valuedouble;
    assert_true(peak <= 420.0 + 1e-6);
    cJSON_Delete(c0);
    cJSON_Delete(c1);
    /* The journal says when it was set and that it came back. */
    char *text = NULL;
    assert_int_equal(mb_file_read(jpath, 1 << 20, &text, NULL, &err), MB_OK);
    assert_non_null(strstr(text, "\"event\":\"power_limit_set\",\"run\":\"solo.cap-60pct\""));
    assert_non_null(strstr(text, "\"outcome\":\"restored\""));
    free(text);
    /* The analysis puts both limits under the run as written, strongest first. */
    struct mb_analysis *an = NULL;
    const char *dirs[1] = {res};
    assert_int_equal(mb_analysis_load(&an, dirs, 1, &err), MB_OK);
    struct mb_paxis ax;
    assert_int_equal(mb_paxis_build(&an->exps[0], NULL, &ax, &err), MB_OK);
    assert_int_equal(ax.n, 1);
    assert_string_equal(ax.items[0].run, "solo");
    assert_string_equal(ax.items[0].job, "m");
    assert_int_equal(ax.items[0].npoints, 2);
    assert_string_equal(ax.items[0].points[0].limit, "default");
    assert_true(ax.items[0].points[0].enforced_w.v == 700);
    assert_false(ax.items[0].points[0].power_capped);
    assert_string_equal(ax.items[0].points[1].limit, "60%");
    assert_true(ax.items[0].points[1].power_capped);
    assert_true(ax.items[0].points[1].throughput.valid && ax.items[0].points[1].j_per_unit.valid);
    assert_true(ax.items[0].optimal_ok);
    mb_paxis_free(&ax);
    mb_analysis_destroy(an);
    mb_device_close(dev);
    mb_experiment_destroy(exp);
}

static void test_interrupt_and_range(void **state)
{
    (void)state;
    /* Interrupted in its window: the cell is not recorded, the limit comes back. */
    char extra[256];
    snprintf(extra, sizeof(extra), ", --release-dir, \"%s/never\"", dir);
    struct mb_experiment *exp = load("50%", NULL, extra);
    struct mb_device *dev;
    struct mb_error err;
    assert_int_equal(mb_device_open(spec, &dev, &err), MB_OK);
    struct stopper st;
    bool failed[1] = {false};
    assert_int_equal(run_cells(exp, dev, &st, failed, &err), MB_EINTR);
    mb_experiment_destroy(exp);
    /* 20% of 700 W is below the 210 W minimum: the cell fails, the GPU is not touched. */
    exp = load("20%", NULL, "");
    assert_int_equal(run_cells(exp, dev, NULL, failed, &err), MB_OK);
    assert_true(failed[0]);
    char path[300];
    snprintf(path, sizeof(path), "%s/solo.cap-20pct/0/cell.json", res);
    char *text = NULL;
    assert_int_equal(mb_file_read(path, 1 << 20, &text, NULL, &err), MB_OK);
    assert_non_null(strstr(text, "outside the device's range 210..700 W"));
    free(text);
    mb_experiment_destroy(exp);
    mb_device_close(dev);
}

static void test_no_cap_device(void **state)
{
    (void)state;
    struct mb_experiment *exp = load("default", "80%", "");
    struct mb_cell cells[2] = {{0, 0}, {1, 0}};
    size_t n = 2, n_notes = 0;
    char **notes = NULL;
    struct mb_error err;
    assert_int_equal(mb_experiment_power_filter(exp, cells, &n, &notes, &n_notes, &err), MB_OK);
    assert_int_equal(n, 1);
    assert_int_equal(cells[0].run, 0);
    assert_int_equal(n_notes, 1);
    assert_non_null(
        strstr(notes[0], "run 'solo.cap-80pct' skipped: its 80% power limit cannot be set here"));
    mb_notes_free(notes, n_notes);
    mb_experiment_destroy(exp);
    /*
     * Bad lists, refused where they are written: a limit that is none, one listed twice (80 and
     * 80W ask for one limit), and two that would name one run (both "cap-212.5W").
     */
    const char *bad[][2] = {
        {"80, 80W", "[1]"}, {"fast", "[0]"}, {"0%", "[0]"}, {"212.5W, 212.500001W", "[1]"}};
    for (size_t i = 0; i < 4; i++) {
        char yaml[512], want[128];
        snprintf(yaml, sizeof(yaml),
                 "version: 1\nname: caps\nworkloads:\n  m: {command: [x]}\nruns:\n"
                 "  - {name: solo, mode: exclusive, jobs: [m], power_limits: [%s]}\n",
                 bad[i][0]);
        snprintf(want, sizeof(want), "b.yaml:6: field 'runs[0].power_limits%s", bad[i][1]);
        int rc = mb_experiment_parse("b.yaml", yaml, strlen(yaml), NULL, 0, &exp, &err);
        if (rc == MB_OK) {
            rc = mb_experiment_expand_power(exp, &err);
            mb_experiment_destroy(exp);
        }
        assert_int_equal(rc, MB_EPARSE);
        if (!strstr(err.msg, want))
            fail_msg("%s: %s (want %s)", bad[i][0], err.msg, want);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_axis_sets_and_restores, setup, teardown),
        cmocka_unit_test_setup_teardown(test_interrupt_and_range, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_cap_device, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
