/* SPDX-License-Identifier: Apache-2.0 */
/* Experiment sessions on the emulated H100: cell selection, subset runs, two sessions merging. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "results/results_json.h"
#include "migbench/experiment.h"
#include "migbench/results.h"
#include "migbench/session.h"

#define SPEC "emu:H100-80GB:mig=on"

static char dir[64];
static volatile sig_atomic_t stop_flag;

struct seen {
    size_t cells, notes, n_cells;
    size_t order[8], done[8], n_done; /* the cells announced, and those ended, in order */
    double est[8], after[8];
};

static void on_event(void *ctx, const struct mb_session_event *ev)
{
    struct seen *s = ctx;
    if (ev->kind == MB_SESSION_CELL) {
        if (s->cells < 8) {
            s->order[s->cells] = ev->cell;
            s->est[s->cells] = ev->cell_estimate_s;
            s->after[s->cells] = ev->remaining_after_s;
        }
        s->cells++;
        s->n_cells = ev->n_cells;
    } else if (ev->kind == MB_SESSION_CELL_DONE) {
        if (s->n_done < 8)
            s->done[s->n_done] = ev->cell;
        s->n_done++;
    } else if (ev->kind == MB_SESSION_NOTE) {
        s->notes++;
    }
}

/* Two runs (exclusive with two jobs, mig with two instances) x 2 repetitions: 4 cells. */
static struct mb_experiment *load(const char *const *sets, size_t n_sets)
{
    char yaml[2048];
    snprintf(yaml, sizeof(yaml),
             "version: 1\nname: sess\nworkloads:\n"
             "  a: {command: [\"%s/fixtures/fx_steady\", --rate, \"50\", --duration, \"30\"]}\n"
             "runs:\n"
             "  - {name: alone, mode: exclusive, jobs: [a]}\n"
             "  - {name: mix, mode: mig, layout: [3g.40gb, 2g.20gb], jobs: [a, a]}\n"
             "  - {name: cpu, mode: partition, jobs: [a, a]}\n"
             "measure: {warmup: 50ms, duration: 200ms, grace: 1s, progress_timeout: 10s,\n"
             "          repetitions: 2, idle: 0s, cooldown: 0s}\n",
             MB_BINARY_DIR);
    struct mb_error err;
    struct mb_experiment *exp = NULL;
    if (mb_experiment_parse("sess.yaml", yaml, strlen(yaml), sets, n_sets, &exp, &err) != MB_OK)
        fail_msg("parse: %s", err.msg);
    return exp;
}

static struct mb_session *open_session(const struct mb_experiment *exp, const char *res,
                                       struct seen *seen)
{
    struct mb_session_opts o = {
        .device_spec = SPEC,
        .results_dir = res,
        .stop = &stop_flag,
        .on_event = on_event,
        .ctx = seen,
    };
    struct mb_session *s = NULL;
    struct mb_error err;
    if (mb_session_open(exp, &o, &s, &err) != MB_OK)
        fail_msg("open: %s", err.msg);
    return s;
}

static void expect_selection(struct mb_session *s, const char *list, const char *shard,
                             const size_t *want, size_t n_want)
{
    struct mb_error err;
    assert_int_equal(mb_session_select(s, list, shard, &err), MB_OK);
    const size_t *idx = NULL;
    assert_int_equal(mb_session_cells(s, NULL, &idx), n_want);
    for (size_t i = 0; i < n_want; i++)
        assert_int_equal(idx[i], want[i]);
}

static void test_select(void **state)
{
    (void)state;
    struct mb_experiment *exp = load(NULL, 0);
    struct seen seen = {0};
    char res[128];
    snprintf(res, sizeof(res), "%s/select", dir);
    struct mb_session *s = open_session(exp, res, &seen);
    assert_true(seen.notes >= 1); /* run 'cpu' skipped: partition is for the host */
    assert_true(mb_session_caps(s) & MB_CAP_EMULATED);
    assert_int_equal(mb_session_cells(s, NULL, NULL), 4);
    expect_selection(s, "0-2", NULL, (const size_t[]){0, 1, 2}, 3);
    expect_selection(s, "3,0", NULL, (const size_t[]){0, 3}, 2);
    expect_selection(s, "mix", NULL, (const size_t[]){2, 3}, 2);
    expect_selection(s, NULL, "1/2", (const size_t[]){1, 3}, 2);
    expect_selection(s, "1-3", "0/2", (const size_t[]){1, 3}, 2);
    struct mb_error err;
    const char *bad[] = {"4", "2-1", "nosuch", "", "1-x", "9999999999", "0,,1", "0,"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(mb_session_select(s, bad[i], NULL, &err), MB_EINVAL);
    const char *bad_shard[] = {"2/2", "1", "0/0", "a/2"};
    for (size_t i = 0; i < sizeof(bad_shard) / sizeof(bad_shard[0]); i++)
        assert_int_equal(mb_session_select(s, NULL, bad_shard[i], &err), MB_EINVAL);
    /* A failed selection keeps the last good one. */
    assert_int_equal(mb_session_cells(s, NULL, NULL), 2);
    /* A run skipped on this device (its note says why) selects nothing, for --cells as for
     * --only; the check then refuses the empty selection. */
    assert_int_equal(mb_session_select(s, "cpu", NULL, &err), MB_OK);
    assert_int_equal(mb_session_cells(s, NULL, NULL), 0);
    assert_int_equal(mb_session_check(s, &err), MB_EINVAL);
    assert_non_null(strstr(err.msg, "the selection holds no cell"));
    /* An index of any length past the last cell says so. */
    assert_int_equal(mb_session_select(s, "9999999999", NULL, &err), MB_EINVAL);
    assert_non_null(strstr(err.msg, "'9999999999' is past the last cell (4 cells: 0-3)"));
    mb_session_close(s);
    mb_experiment_destroy(exp);
}

/*
 * MIG mode off, no phases: the mig run's 2 cells are skipped, and the session still answers
 * every cell of both modes for the two-phase commands `run` prints (it opens no device itself).
 */
static void test_mig_mode_cells(void **state)
{
    (void)state;
    struct mb_experiment *exp = load(NULL, 0);
    char res[128];
    snprintf(res, sizeof(res), "%s/modes", dir);
    struct mb_session_opts o = {
        .device_spec = "emu:H100-80GB", .results_dir = res, .stop = &stop_flag};
    struct mb_session *s = NULL;
    struct mb_error err;
    if (mb_session_open(exp, &o, &s, &err) != MB_OK)
        fail_msg("open: %s", err.msg);
    const struct mb_cell *cells = NULL;
    size_t n = 0;
    assert_int_equal(mb_session_mig_mode_cells(s, &cells, &n), 2);
    assert_int_equal(n, 4);
    size_t mix = 0;
    for (size_t i = 0; i < n; i++)
        mix += strcmp(exp->runs[cells[i].run].name, "mix") == 0;
    assert_int_equal(mix, 2);
    assert_int_equal(mb_session_cells(s, NULL, NULL), 2); /* alone 0, alone 1 */
    mb_session_close(s);
    /* MIG on (an emulated GPU runs whole-GPU cells too): nothing removed. */
    struct seen seen = {0};
    s = open_session(exp, res, &seen);
    assert_int_equal(mb_session_mig_mode_cells(s, NULL, NULL), 0);
    mb_session_close(s);
    mb_experiment_destroy(exp);
}

/* Cells 0-1, then 2-3 in a second session: one results directory with all four cells. */
static void test_two_sessions_merge(void **state)
{
    (void)state;
    struct mb_experiment *exp = load(NULL, 0);
    char res[128];
    snprintf(res, sizeof(res), "%s/merge", dir);
    struct mb_error err;
    struct mb_session_summary sum;
    const char *halves[] = {"0-1", "2-3"};
    for (size_t h = 0; h < 2; h++) {
        struct seen seen = {0};
        struct mb_session *s = open_session(exp, res, &seen);
        assert_int_equal(mb_session_select(s, halves[h], NULL, &err), MB_OK);
        if (mb_session_start(s, &err) != MB_OK)
            fail_msg("start: %s", err.msg);
        if (mb_session_run(s, &sum, &err) != MB_OK)
            fail_msg("run: %s", err.msg);
        assert_int_equal(sum.ok, 2);
        assert_int_equal(sum.failed + sum.skipped + (size_t)sum.signal, 0);
        assert_int_equal(seen.cells, 2);
        assert_int_equal(seen.n_cells, 2);
        mb_session_close(s);
    }
    assert_true(mb_results_cell_done(res, "alone", 0) && mb_results_cell_done(res, "alone", 1));
    assert_true(mb_results_cell_done(res, "mix", 0) && mb_results_cell_done(res, "mix", 1));

    /* Again with a selection of done cells: joined, nothing runs. */
    struct seen seen = {0};
    struct mb_session *s = open_session(exp, res, &seen);
    assert_int_equal(mb_session_select(s, "alone", NULL, &err), MB_OK);
    assert_int_equal(mb_session_start(s, &err), MB_OK);
    assert_int_equal(mb_session_run(s, &sum, &err), MB_OK);
    assert_int_equal(sum.skipped, 2);
    assert_int_equal(seen.cells, 0);
    mb_session_close(s);

    /* Without a selection or resume the directory is refused, before anything changes. */
    s = open_session(exp, res, &seen);
    assert_int_equal(mb_session_check(s, &err), MB_EINVAL);
    assert_non_null(strstr(err.msg, "already holds results"));
    mb_session_close(s);

    /* Another experiment (other --set) does not join it. */
    const char *sets[] = {"measure.duration=300ms"};
    struct mb_experiment *other = load(sets, 1);
    s = open_session(other, res, &seen);
    assert_int_equal(mb_session_select(s, "0", NULL, &err), MB_OK);
    assert_int_equal(mb_session_check(s, &err), MB_EINVAL);
    assert_non_null(strstr(err.msg, "different experiment"));
    mb_session_close(s);
    mb_experiment_destroy(other);

    /* The journal holds both sessions, each with the cells it selected. */
    cJSON *events = NULL;
    size_t skipped = 0;
    char jpath[160];
    snprintf(jpath, sizeof(jpath), "%s/journal.jsonl", res);
    assert_int_equal(mb_journal_read(jpath, &events, &skipped, &err), MB_OK);
    size_t started = 0, finished = 0;
    const cJSON *ev;
    cJSON_ArrayForEach(ev, events)
    {
        const char *name = cJSON_GetObjectItemCaseSensitive(ev, "event")->valuestring;
        started += strcmp(name, "experiment_started") == 0;
        finished += strcmp(name, "cell_finished") == 0;
    }
    assert_int_equal(started, 3);
    assert_int_equal(finished, 4);
    cJSON_Delete(events);
    mb_experiment_destroy(exp);
}

/* A stop flag set before a cell interrupts it: journaled, MB_EINTR, no cell.json. */
static void test_stop(void **state)
{
    (void)state;
    struct mb_experiment *exp = load(NULL, 0);
    char res[128];
    snprintf(res, sizeof(res), "%s/stop", dir);
    struct seen seen = {0};
    struct mb_session *s = open_session(exp, res, &seen);
    struct mb_error err;
    assert_int_equal(mb_session_start(s, &err), MB_OK);
    stop_flag = SIGTERM;
    struct mb_session_summary sum;
    assert_int_equal(mb_session_run(s, &sum, &err), MB_EINTR);
    assert_int_equal(sum.signal, SIGTERM);
    assert_non_null(strstr(err.msg, "interrupted by signal 15 during alone 0"));
    assert_false(mb_results_cell_done(res, "alone", 0));
    stop_flag = 0;
    mb_session_close(s);
    mb_experiment_destroy(exp);
}

/*
 * One GPU runs through the same queue as several (one worker, on this thread): the cells in
 * selection order, each announced with its estimate and the estimate of the cells after it,
 * each ended before the next is announced; one cell_started per cell in the journal, in order.
 */
static void test_one_gpu_queue(void **state)
{
    (void)state;
    struct mb_experiment *exp = load(NULL, 0);
    char res[128];
    snprintf(res, sizeof(res), "%s/queue", dir);
    struct seen seen = {0};
    struct mb_session *s = open_session(exp, res, &seen);
    struct mb_error err;
    assert_int_equal(mb_session_select(s, "3,0,2", NULL, &err), MB_OK);
    assert_int_equal(mb_session_gpus(s), 1);
    assert_int_equal(mb_session_start(s, &err), MB_OK);
    struct mb_session_summary sum;
    if (mb_session_run(s, &sum, &err) != MB_OK)
        fail_msg("run: %s", err.msg);
    assert_int_equal(sum.ok, 3);
    assert_int_equal(seen.cells, 3);
    assert_int_equal(seen.n_done, 3);
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(seen.order[i], i); /* selection order: alone 0, mix 0, mix 1 */
        assert_int_equal(seen.done[i], i);
        assert_true(seen.est[i] > 0);
    }
    assert_true(fabs(seen.after[0] - (seen.est[1] + seen.est[2])) < 1e-9);
    assert_true(fabs(seen.after[1] - seen.est[2]) < 1e-9);
    assert_true(fabs(seen.after[2]) < 1e-9);
    cJSON *events = NULL;
    size_t skipped = 0;
    char jpath[160];
    snprintf(jpath, sizeof(jpath), "%s/journal.jsonl", res);
    assert_int_equal(mb_journal_read(jpath, &events, &skipped, &err), MB_OK);
    const char *want[] = {"alone0", "mix0", "mix1"};
    size_t k = 0;
    const cJSON *ev;
    cJSON_ArrayForEach(ev, events)
    {
        if (strcmp(cJSON_GetObjectItemCaseSensitive(ev, "event")->valuestring, "cell_started"))
            continue;
        char got[64];
        snprintf(got, sizeof(got), "%s%d", cJSON_GetObjectItemCaseSensitive(ev, "run")->valuestring,
                 cJSON_GetObjectItemCaseSensitive(ev, "rep")->valueint);
        assert_true(k < 3);
        assert_string_equal(got, want[k++]);
    }
    assert_int_equal(k, 3);
    cJSON_Delete(events);
    mb_session_close(s);
    mb_experiment_destroy(exp);
}

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof(dir), "/tmp/mb-test-session-XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char *argv[] = {"rm", "-rf", dir, NULL};
    pid_t pid = fork();
    if (pid == 0) {
        execvp(argv[0], argv);
        _exit(127);
    }
    int st = 0;
    return pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_select),
        cmocka_unit_test(test_mig_mode_cells),
        cmocka_unit_test(test_two_sessions_merge),
        cmocka_unit_test(test_stop),
        cmocka_unit_test(test_one_gpu_queue),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
