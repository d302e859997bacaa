/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The multi-GPU queue: repetitions spread over GPUs (or pinned), balanced by estimates, cells on
 * different GPUs running at the same time (shown by event order, never by timing), failures and
 * stop requests. Starts threads: MB_TEST_THREADS.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "migbench/gpuqueue.h"

static void test_assign_spread_and_pin(void **state)
{
    (void)state;
    /* 3 runs x 4 repetitions, as an experiment lists them. */
    struct mb_gpuqueue_item items[12];
    for (size_t i = 0; i < 12; i++)
        items[i] = (struct mb_gpuqueue_item){i / 4, 10.0};
    size_t gpu[12];
    double load[4];
    struct mb_error err;
    assert_int_equal(mb_gpuqueue_assign(items, 12, 4, false, gpu, load, &err), MB_OK);
    for (size_t r = 0; r < 3; r++) {
        bool seen[4] = {false};
        for (size_t k = 0; k < 4; k++) {
            assert_false(seen[gpu[r * 4 + k]]); /* every repetition on another GPU */
            seen[gpu[r * 4 + k]] = true;
        }
    }
    for (size_t g = 0; g < 4; g++)
        assert_true(load[g] == 30.0);

    /* Pinned: each run stays on one GPU, runs spread by load. */
    assert_int_equal(mb_gpuqueue_assign(items, 12, 4, true, gpu, load, &err), MB_OK);
    for (size_t r = 0; r < 3; r++)
        for (size_t k = 1; k < 4; k++)
            assert_int_equal(gpu[r * 4 + k], gpu[r * 4]);
    assert_int_not_equal(gpu[0], gpu[4]);
    assert_int_not_equal(gpu[4], gpu[8]);

    /* Two GPUs, four repetitions: two on each. */
    assert_int_equal(mb_gpuqueue_assign(items, 4, 2, false, gpu, load, &err), MB_OK);
    assert_int_equal(gpu[0] + gpu[1] + gpu[2] + gpu[3], 2);

    /* A long cell: the short ones go elsewhere. */
    struct mb_gpuqueue_item mixed[4] = {{0, 100.0}, {1, 10.0}, {2, 10.0}, {3, 10.0}};
    assert_int_equal(mb_gpuqueue_assign(mixed, 4, 2, false, gpu, load, &err), MB_OK);
    assert_int_equal(gpu[0], 0);
    assert_int_equal(gpu[1], 1);
    assert_int_equal(gpu[2], 1);
    assert_int_equal(gpu[3], 1);
    assert_true(load[0] == 100.0 && load[1] == 30.0);

    /* One GPU takes everything; bad counts are refused. */
    assert_int_equal(mb_gpuqueue_assign(items, 12, 1, false, gpu, NULL, &err), MB_OK);
    for (size_t i = 0; i < 12; i++)
        assert_int_equal(gpu[i], 0);
    assert_int_equal(mb_gpuqueue_assign(items, 12, 0, false, gpu, NULL, &err), MB_EINVAL);
    assert_int_equal(mb_gpuqueue_assign(items, 12, MB_MAX_DEVICES + 1, false, gpu, NULL, &err),
                     MB_EINVAL);
}

/* Event log shared by the hooks; a cell waits for another's start through a condition. */
struct log {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    char events[64][16];
    size_t n;
    bool started[8];
    size_t gpu_of_item[8];
    pthread_t thread_of_item[8];
    int fail_item; /* -1 none */
    volatile sig_atomic_t *stop;
    int stop_at_item; /* -1 none */
    bool timed_out;
};

static void note(struct log *l, const char *what, size_t item)
{
    snprintf(l->events[l->n++], sizeof(l->events[0]), "%s %zu", what, item);
}

/* Waits (a test failure after a long timeout, never a timing assumption) until item started. */
static void wait_started(struct log *l, size_t item)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 60;
    while (!l->started[item])
        if (pthread_cond_timedwait(&l->cond, &l->lock, &until) == ETIMEDOUT) {
            l->timed_out = true;
            return;
        }
}

/* Items 0 and 1 wait for each other's start: both only finish if they overlap. */
static int hook(void *ctx, size_t gpu, size_t item, struct mb_error *err)
{
    struct log *l = ctx;
    pthread_mutex_lock(&l->lock);
    note(l, "start", item);
    l->started[item] = true;
    l->gpu_of_item[item] = gpu;
    l->thread_of_item[item] = pthread_self();
    pthread_cond_broadcast(&l->cond);
    if (item <= 1)
        wait_started(l, 1 - item);
    if (l->stop_at_item == (int)item)
        *l->stop = 1;
    int rc =
        l->fail_item == (int)item ? mb_error_set(err, MB_ECHILD, "item %zu failed", item) : MB_OK;
    note(l, "end", item);
    pthread_mutex_unlock(&l->lock);
    return rc;
}

static void log_init(struct log *l)
{
    memset(l, 0, sizeof(*l));
    pthread_mutex_init(&l->lock, NULL);
    pthread_cond_init(&l->cond, NULL);
    l->fail_item = -1;
    l->stop_at_item = -1;
}

static size_t index_of(const struct log *l, const char *ev)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->events[i], ev) == 0)
            return i;
    fail_msg("event '%s' missing", ev);
    return 0;
}

static void test_run_overlaps(void **state)
{
    (void)state;
    struct log l;
    log_init(&l);
    size_t gpu_of[4] = {0, 1, 0, 1};
    struct mb_gpuqueue_result res;
    assert_int_equal(mb_gpuqueue_run(2, gpu_of, 4, NULL, 0, hook, &l, NULL, &res), MB_OK);
    assert_false(l.timed_out);
    assert_int_equal(res.done, 4);
    assert_int_equal(l.n, 8);
    /* Cell 1 (GPU 1) started before cell 0 (GPU 0) ended, and the other way round. */
    assert_true(index_of(&l, "start 1") < index_of(&l, "end 0"));
    assert_true(index_of(&l, "start 0") < index_of(&l, "end 1"));
    /* Each GPU runs its own cells in order. */
    assert_true(index_of(&l, "end 0") < index_of(&l, "start 2"));
    assert_true(index_of(&l, "end 1") < index_of(&l, "start 3"));
    for (size_t i = 0; i < 4; i++)
        assert_int_equal(l.gpu_of_item[i], gpu_of[i]);
    assert_false(pthread_equal(l.thread_of_item[0], l.thread_of_item[1]));
}

static void test_run_serial_failure_and_stop(void **state)
{
    (void)state;
    /* One GPU: the caller's thread, in the given order; a failure stops the rest. */
    struct log l;
    log_init(&l);
    l.started[0] = l.started[1] = true; /* no cross-waiting on one GPU */
    l.fail_item = 3;
    size_t gpu_of[5] = {2, 2, 2, 2, 2};
    size_t order[5] = {4, 3, 2, 1, 0};
    struct mb_gpuqueue_result res;
    assert_int_equal(mb_gpuqueue_run(3, gpu_of, 5, order, 5, hook, &l, NULL, &res), MB_ECHILD);
    assert_int_equal(res.done, 1);
    assert_int_equal(res.failed_item, 3);
    assert_int_equal(res.failed_gpu, 2);
    assert_non_null(strstr(res.err.msg, "item 3 failed"));
    assert_int_equal(l.n, 4);
    assert_string_equal(l.events[0], "start 4");
    assert_true(pthread_equal(l.thread_of_item[4], pthread_self()));

    /* A stop request: the current cell ends, no other starts. */
    volatile sig_atomic_t stop = 0;
    log_init(&l);
    l.started[0] = l.started[1] = true;
    l.stop = &stop;
    l.stop_at_item = 2;
    assert_int_equal(mb_gpuqueue_run(1, (size_t[4]){0, 0, 0, 0}, 4, NULL, 0, hook, &l, &stop, &res),
                     MB_OK);
    assert_int_equal(res.done, 3);
    assert_int_equal(l.n, 6);

    assert_int_equal(mb_gpuqueue_run(2, (size_t[1]){2}, 1, NULL, 0, hook, &l, NULL, &res),
                     MB_EINVAL);
    assert_int_equal(mb_gpuqueue_run(2, (size_t[1]){1}, 1, (size_t[1]){1}, 1, hook, &l, NULL, &res),
                     MB_EINVAL);

    /* Only the items in order run. */
    log_init(&l);
    l.started[0] = l.started[1] = true;
    assert_int_equal(
        mb_gpuqueue_run(2, (size_t[4]){0, 1, 0, 1}, 4, (size_t[2]){3, 2}, 2, hook, &l, NULL, &res),
        MB_OK);
    assert_int_equal(res.done, 2);
    assert_int_equal(l.n, 4);
    assert_int_not_equal(index_of(&l, "start 3"), index_of(&l, "start 2"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_assign_spread_and_pin),
        cmocka_unit_test(test_run_overlaps),
        cmocka_unit_test(test_run_serial_failure_and_stop),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
