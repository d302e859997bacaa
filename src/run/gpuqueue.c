/* SPDX-License-Identifier: Apache-2.0 */
/* The multi-GPU work queue: a deterministic assignment of cells to GPUs, one worker per GPU. */
#include "migbench/gpuqueue.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int mb_gpuqueue_assign(const struct mb_gpuqueue_item *items, size_t n, size_t n_gpus, bool pin_reps,
                       size_t *gpu_of, double *load_s, struct mb_error *err)
{
    if (n_gpus == 0 || n_gpus > MB_MAX_DEVICES || (n && (!items || !gpu_of)))
        return mb_error_set(err, MB_EINVAL, "gpu queue: %zu GPUs (expected 1..%d)", n_gpus,
                            MB_MAX_DEVICES);
    double load[MB_MAX_DEVICES] = {0};
    for (size_t i = 0; i < n; i++) {
        /* Repetitions already placed for this run, per GPU. */
        unsigned reps_on[MB_MAX_DEVICES] = {0};
        size_t pinned = n_gpus;
        for (size_t k = 0; k < i; k++)
            if (items[k].run == items[i].run) {
                reps_on[gpu_of[k]]++;
                pinned = gpu_of[k];
            }
        size_t best = 0;
        if (pin_reps && pinned < n_gpus) {
            best = pinned;
        } else {
            for (size_t g = 1; g < n_gpus; g++)
                if (reps_on[g] < reps_on[best] ||
                    (reps_on[g] == reps_on[best] && load[g] < load[best]))
                    best = g;
        }
        gpu_of[i] = best;
        load[best] += items[i].est_s > 0 ? items[i].est_s : 1.0;
    }
    if (load_s)
        memcpy(load_s, load, n_gpus * sizeof(load[0]));
    return MB_OK;
}

struct queue {
    pthread_mutex_t lock;
    size_t n_gpus;
    const size_t *gpu_of;
    const size_t *order;
    size_t n; /* entries of order (or items, without one) */
    mb_gpuqueue_run_fn fn;
    void *ctx;
    volatile sig_atomic_t *stop;
    bool abort; /* a worker failed: the others stop after their current item */
    struct mb_gpuqueue_result *result;
};

struct worker {
    struct queue *q;
    size_t gpu;
    pthread_t thread;
    bool started;
};

static bool should_stop(struct queue *q)
{
    pthread_mutex_lock(&q->lock);
    bool s = q->abort || (q->stop && *q->stop);
    pthread_mutex_unlock(&q->lock);
    return s;
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    struct queue *q = w->q;
    for (size_t k = 0; k < q->n; k++) {
        size_t item = q->order ? q->order[k] : k;
        if (q->gpu_of[item] != w->gpu)
            continue;
        if (should_stop(q))
            break;
        struct mb_error err;
        mb_error_clear(&err);
        int rc = q->fn(q->ctx, w->gpu, item, &err);
        pthread_mutex_lock(&q->lock);
        if (rc == MB_OK) {
            q->result->done++;
        } else if (q->result->status == MB_OK) {
            q->result->status = rc;
            q->result->failed_gpu = w->gpu;
            q->result->failed_item = item;
            q->result->err = err;
            q->result->err.status = rc;
        }
        if (rc != MB_OK)
            q->abort = true;
        pthread_mutex_unlock(&q->lock);
        if (rc != MB_OK)
            break;
    }
    return NULL;
}

int mb_gpuqueue_run(size_t n_gpus, const size_t *gpu_of, size_t n_items, const size_t *order,
                    size_t n_order, mb_gpuqueue_run_fn fn, void *ctx, volatile sig_atomic_t *stop,
                    struct mb_gpuqueue_result *result)
{
    memset(result, 0, sizeof(*result));
    size_t n = order ? n_order : n_items;
    if (n_gpus == 0 || n_gpus > MB_MAX_DEVICES || !fn || (n_items && !gpu_of))
        return result->status = mb_error_set(&result->err, MB_EINVAL, "gpu queue: bad arguments");
    for (size_t i = 0; i < n_items; i++)
        if (gpu_of[i] >= n_gpus)
            return result->status =
                       mb_error_set(&result->err, MB_EINVAL, "gpu queue: item %zu on no GPU", i);
    for (size_t i = 0; order && i < n_order; i++)
        if (order[i] >= n_items)
            return result->status = mb_error_set(&result->err, MB_EINVAL,
                                                 "gpu queue: order[%zu] names no item", i);
    struct queue q = {.n_gpus = n_gpus,
                      .gpu_of = gpu_of,
                      .order = order,
                      .n = n,
                      .fn = fn,
                      .ctx = ctx,
                      .stop = stop,
                      .result = result};
    pthread_mutex_init(&q.lock, NULL);
    struct worker w[MB_MAX_DEVICES];
    memset(w, 0, sizeof(w));
    bool used[MB_MAX_DEVICES] = {false};
    size_t n_used = 0;
    size_t first = n_gpus;
    for (size_t k = 0; k < n; k++) {
        size_t g = gpu_of[order ? order[k] : k];
        if (!used[g]) {
            used[g] = true;
            n_used++;
            first = first < n_gpus ? first : g;
        }
    }
    if (n_used <= 1) {
        /* One GPU: the caller's thread, as a serial run always was. */
        w[0] = (struct worker){&q, first < n_gpus ? first : 0, 0, false};
        worker_main(&w[0]);
    } else {
        for (size_t g = 0; g < n_gpus; g++) {
            if (!used[g])
                continue;
            w[g] = (struct worker){&q, g, 0, false};
            if (pthread_create(&w[g].thread, NULL, worker_main, &w[g]) != 0) {
                pthread_mutex_lock(&q.lock);
                q.abort = true;
                if (result->status == MB_OK)
                    result->status = mb_error_set(
                        &result->err, MB_EIO, "gpu queue: cannot start a worker for GPU %zu", g);
                pthread_mutex_unlock(&q.lock);
                break;
            }
            w[g].started = true;
        }
        for (size_t g = 0; g < n_gpus; g++)
            if (w[g].started)
                pthread_join(w[g].thread, NULL);
    }
    pthread_mutex_destroy(&q.lock);
    return result->status;
}
