/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Cells in MIG-mode phases on emulated GPUs: each cell runs in the mode it needs, the original
 * mode is journaled once and restored (at the end, after a failure, after a crash on resume),
 * cells of the other mode are skipped without the opt-in, and four GPUs run their cells at once
 * with their own switches. Starts threads: MB_TEST_THREADS.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mig/migmode.h"
#include "run/phased.h"

static const char exp_text[] = "version: 1\n"
                               "name: phases\n"
                               "manage_mig_mode: true\n"
                               "workloads:\n"
                               "  a: {command: [true], unit: steps}\n"
                               "runs:\n"
                               "  - {name: solo, mode: exclusive, jobs: [a]}\n"
                               "  - {name: mix, mode: mig, layout: [3g, 3g], jobs: [a, a]}\n"
                               "  - {name: ts, mode: timeslice, jobs: [a, a]}\n"
                               "measure: {repetitions: 4}\n";

struct rec {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    struct mb_device **gpus;
    const struct mb_cell *cells;
    const struct mb_experiment *exp;
    cJSON *journal;
    char events[256][48];
    size_t n_events;
    int mode_seen[64]; /* per cell: the GPU's MIG mode while it ran */
    size_t gpu_seen[64];
    int fail_cell;     /* -1 none */
    bool wait_overlap; /* cells 0..3 each wait until all four started */
    size_t started;
    bool timed_out;
    size_t notes;
};

static void event(struct rec *r, const char *what, size_t cell)
{
    if (r->n_events < 256)
        snprintf(r->events[r->n_events++], sizeof(r->events[0]), "%s %zu", what, cell);
}

static void event_name(struct rec *r, const char *name)
{
    if (r->n_events < 256)
        snprintf(r->events[r->n_events++], sizeof(r->events[0]), "%s", name);
}

static int run_cell(void *ctx, size_t gpu, size_t cell, struct mb_error *err)
{
    struct rec *r = ctx;
    struct mb_mig_mode m;
    int rc = mb_device_mig_mode(r->gpus[gpu], &m, err);
    if (rc != MB_OK)
        return rc;
    /* A mig cell makes and removes its instance, as the runner does. */
    if (r->exp->runs[r->cells[cell].run].mode == MB_MODE_MIG) {
        unsigned gi;
        if ((rc = mb_device_mig_create_gi(r->gpus[gpu], 9, NULL, &gi, err)) != MB_OK ||
            (rc = mb_device_mig_destroy_gi(r->gpus[gpu], gi, err)) != MB_OK)
            return rc;
    }
    pthread_mutex_lock(&r->lock);
    r->mode_seen[cell] = m.current;
    r->gpu_seen[cell] = gpu;
    event(r, "start", cell);
    r->started++;
    pthread_cond_broadcast(&r->cond);
    if (r->wait_overlap && cell < 4) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += 60;
        while (r->started < 4 && !r->timed_out)
            if (pthread_cond_timedwait(&r->cond, &r->lock, &until) == ETIMEDOUT)
                r->timed_out = true;
    }
    event(r, "end", cell);
    pthread_mutex_unlock(&r->lock);
    if ((int)cell == r->fail_cell)
        return mb_error_set(err, MB_EIO, "cell %zu: results disk gone (test)", cell);
    return MB_OK;
}

static int journal(void *ctx, const cJSON *ev, struct mb_error *err)
{
    (void)err;
    struct rec *r = ctx;
    pthread_mutex_lock(&r->lock);
    cJSON_AddItemToArray(r->journal, cJSON_Duplicate(ev, 1));
    const cJSON *name = cJSON_GetObjectItem(ev, "event");
    event_name(r, name->valuestring);
    pthread_mutex_unlock(&r->lock);
    return MB_OK;
}

static void note(void *ctx, size_t gpu, const char *line)
{
    (void)gpu;
    (void)line;
    struct rec *r = ctx;
    pthread_mutex_lock(&r->lock);
    r->notes++;
    pthread_mutex_unlock(&r->lock);
}

static struct mb_experiment *load_exp(void)
{
    struct mb_experiment *exp = NULL;
    struct mb_error err;
    if (mb_experiment_parse("phases.yaml", exp_text, sizeof(exp_text) - 1, NULL, 0, &exp, &err) !=
        MB_OK)
        fail_msg("%s", err.msg);
    return exp;
}

static void rec_init(struct rec *r, struct mb_device **gpus, const struct mb_cell *cells,
                     const struct mb_experiment *exp)
{
    memset(r, 0, sizeof(*r));
    pthread_mutex_init(&r->lock, NULL);
    pthread_cond_init(&r->cond, NULL);
    r->gpus = gpus;
    r->cells = cells;
    r->exp = exp;
    r->journal = cJSON_CreateArray();
    r->fail_cell = -1;
    for (size_t i = 0; i < 64; i++)
        r->mode_seen[i] = -9;
}

static size_t count(const struct rec *r, const char *name)
{
    size_t n = 0;
    for (size_t i = 0; i < r->n_events; i++)
        n += strcmp(r->events[i], name) == 0;
    return n;
}

static void expect_mode(struct mb_device *dev, int current, int pending)
{
    struct mb_mig_mode m;
    assert_int_equal(mb_device_mig_mode(dev, &m, NULL), MB_OK);
    assert_int_equal(m.current, current);
    assert_int_equal(m.pending, pending);
}

static struct mb_device *open_ok(const char *spec)
{
    struct mb_device *dev = NULL;
    struct mb_error err;
    if (mb_device_open(spec, &dev, &err) != MB_OK)
        fail_msg("open %s: %s", spec, err.msg);
    return dev;
}

/* One GPU, MIG off: whole-GPU runs, one switch, mig runs, the original back. */
static void test_one_gpu_phases(void **state)
{
    (void)state;
    struct mb_experiment *exp = load_exp();
    struct mb_cell cells[12];
    for (size_t i = 0; i < 12; i++)
        cells[i] = (struct mb_cell){i / 4, (unsigned)(i % 4)};
    struct mb_device *dev = open_ok("emu:H100-80GB");
    struct rec r;
    rec_init(&r, &dev, cells, exp);
    struct mb_phased_hooks h = {run_cell, journal, NULL, note, &r};
    struct mb_phased_opts o = {.exp = exp,
                               .cells = cells,
                               .n_cells = 12,
                               .gpus = &dev,
                               .n_gpus = 1,
                               .manage_mig_mode = true};
    struct mb_phased_result res;
    assert_int_equal(mb_phased_run(&o, &h, NULL, &res), MB_OK);
    assert_int_equal(res.cells_run, 12);
    assert_int_equal(res.switches, 1);
    assert_int_equal(res.restores, 1);
    for (size_t c = 0; c < 12; c++)
        assert_int_equal(r.mode_seen[c], cells[c].run == 1 ? 1 : 0);
    /* Phase order: solo and ts (MIG off, the current mode) first, then the switch, then mix. */
    assert_string_equal(r.events[0], "start 0");
    assert_string_equal(r.events[16], "mig_mode_original");
    assert_string_equal(r.events[17], "mig_mode_switched");
    assert_string_equal(r.events[18], "start 4");
    assert_string_equal(r.events[r.n_events - 1], "mig_mode_restored");
    assert_int_equal(count(&r, "mig_mode_original"), 1);
    expect_mode(dev, 0, 0);
    assert_true(r.notes >= 2); /* the switch described, the restore said */

    /* Without the opt-in: the cells given (the caller left out the mig ones) run as given,
     * nothing is switched or journaled. */
    cJSON_Delete(r.journal);
    struct mb_cell off_cells[8];
    for (size_t i = 0; i < 8; i++)
        off_cells[i] = (struct mb_cell){i < 4 ? 2 : 0, (unsigned)(i % 4)};
    rec_init(&r, &dev, off_cells, exp);
    o.manage_mig_mode = false;
    o.cells = off_cells;
    o.n_cells = 8;
    assert_int_equal(mb_phased_run(&o, &h, NULL, &res), MB_OK);
    assert_int_equal(res.cells_run, 8);
    assert_int_equal(res.switches, 0);
    assert_int_equal(cJSON_GetArraySize(r.journal), 0);
    assert_int_equal(r.notes, 0);
    assert_string_equal(r.events[0], "start 0"); /* ts first, as given */
    o.cells = cells;
    o.n_cells = 12;

    /* A cell that fails fatally in the MIG-on phase: the GPU still gets its mode back. */
    cJSON_Delete(r.journal);
    rec_init(&r, &dev, cells, exp);
    r.fail_cell = 5;
    o.manage_mig_mode = true;
    assert_int_equal(mb_phased_run(&o, &h, NULL, &res), MB_EIO);
    assert_non_null(strstr(res.err.msg, "results disk gone"));
    assert_int_equal(res.restores, 1);
    expect_mode(dev, 0, 0);
    mb_device_close(dev);
    cJSON_Delete(r.journal);
    mb_experiment_destroy(exp);
}

/* A crashed run left the GPU switched: the resumed run ends with the journaled original. */
static void test_resume_restores(void **state)
{
    (void)state;
    struct mb_experiment *exp = load_exp();
    struct mb_device *dev = open_ok("emu:H100-80GB");
    struct rec r;
    struct mb_cell cells[2] = {{1, 2}, {1, 3}}; /* what was left: two mig cells */
    rec_init(&r, &dev, cells, exp);
    /* The crashed run: original journaled, switched, then killed. */
    struct mb_migmode_hooks mh = {NULL, NULL, journal, &r};
    struct mb_migmode_plan plan;
    struct mb_error err;
    assert_int_equal(mb_migmode_plan(dev, 1, &mh, &plan, &err), MB_OK);
    assert_int_equal(mb_migmode_switch(dev, &plan, true, &mh, &err), MB_OK);
    expect_mode(dev, 1, 1);
    cJSON *old = r.journal;
    rec_init(&r, &dev, cells, exp);
    struct mb_phased_hooks h = {run_cell, journal, NULL, note, &r};
    struct mb_phased_opts o = {.exp = exp,
                               .cells = cells,
                               .n_cells = 2,
                               .gpus = &dev,
                               .n_gpus = 1,
                               .manage_mig_mode = true,
                               .old_journal = old};
    struct mb_phased_result res;
    assert_int_equal(mb_phased_run(&o, &h, NULL, &res), MB_OK);
    assert_int_equal(res.cells_run, 2);
    assert_int_equal(res.switches, 0);
    assert_int_equal(r.mode_seen[0], 1);
    assert_int_equal(res.restores, 1);
    assert_int_equal(count(&r, "mig_mode_original"), 0); /* the old original stands */
    expect_mode(dev, 0, 0);

    /* Nothing left to run: the restore alone. */
    assert_int_equal(mb_migmode_switch(dev, &plan, false, &mh, &err), MB_OK);
    cJSON_Delete(r.journal);
    rec_init(&r, &dev, cells, exp);
    o.n_cells = 0;
    assert_int_equal(mb_phased_run(&o, &h, NULL, &res), MB_OK);
    assert_int_equal(res.restores, 1);
    expect_mode(dev, 0, 0);
    cJSON_Delete(old);
    cJSON_Delete(r.journal);
    mb_device_close(dev);
    mb_experiment_destroy(exp);
}

/* Four GPUs: cells on different GPUs overlap, each GPU switches on its own, all restored. */
static void test_four_gpus(void **state)
{
    (void)state;
    struct mb_experiment *exp = load_exp();
    struct mb_cell cells[12];
    for (size_t i = 0; i < 12; i++)
        cells[i] = (struct mb_cell){i / 4, (unsigned)(i % 4)};
    struct mb_device *gpus[4];
    struct mb_device_spec_list l = {0};
    assert_int_equal(mb_device_spec_expand("emu:H100-80GB:count=4", &l, NULL), MB_OK);
    for (size_t g = 0; g < 4; g++)
        gpus[g] = open_ok(l.specs[g]);
    mb_device_spec_list_free(&l);
    struct rec r;
    rec_init(&r, gpus, cells, exp);
    r.wait_overlap = true;
    struct mb_phased_hooks h = {run_cell, journal, NULL, note, &r};
    struct mb_phased_opts o = {.exp = exp,
                               .cells = cells,
                               .n_cells = 12,
                               .gpus = gpus,
                               .n_gpus = 4,
                               .manage_mig_mode = true};
    struct mb_phased_result res;
    size_t gpu_of[12];
    assert_int_equal(mb_phased_run(&o, &h, gpu_of, &res), MB_OK);
    assert_false(r.timed_out);
    assert_int_equal(res.cells_run, 12);
    /* The four repetitions of each run on four different GPUs. */
    for (size_t run = 0; run < 3; run++) {
        bool seen[4] = {false};
        for (size_t k = 0; k < 4; k++) {
            size_t g = gpu_of[run * 4 + k];
            assert_false(seen[g]);
            seen[g] = true;
            assert_int_equal(r.gpu_seen[run * 4 + k], g);
        }
    }
    /* Cells 0..3 (solo, one per GPU) all started before any of them ended. */
    for (size_t i = 0; i < 4; i++) {
        assert_true(strncmp(r.events[i], "start ", 6) == 0);
    }
    for (size_t c = 0; c < 12; c++)
        assert_int_equal(r.mode_seen[c], cells[c].run == 1 ? 1 : 0);
    assert_int_equal(res.switches, 4);
    assert_int_equal(res.restores, 4);
    assert_int_equal(count(&r, "mig_mode_original"), 4);
    for (size_t g = 0; g < 4; g++) {
        expect_mode(gpus[g], 0, 0);
        mb_device_close(gpus[g]);
    }
    cJSON_Delete(r.journal);
    mb_experiment_destroy(exp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_gpu_phases),
        cmocka_unit_test(test_resume_restores),
        cmocka_unit_test(test_four_gpus),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
