/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Every GPU of a node at once: a work queue over an experiment's cells, one worker thread per
 * GPU, each cell pinned to one GPU.
 *
 * mb_gpuqueue_assign decides, before anything runs, which GPU runs which cell: cells go, in order,
 * to the least-loaded GPU by estimated duration, and the repetitions of one run are spread over
 * different GPUs (so board-to-board variance shows in the confidence interval instead of hiding),
 * or all kept on one GPU with pin_reps. The assignment is deterministic: a dry run shows the same
 * one, and its wall-clock estimate for N GPUs is the largest per-GPU load.
 *
 * mb_gpuqueue_run then starts one worker per GPU; each runs its own cells in the given order
 * through the caller's run hook, concurrently with the others. The hook is called from worker
 * threads: whatever it shares between GPUs (the journal, counters, printing) it must lock itself.
 * With one GPU the hook runs in the calling thread.
 */
#ifndef MIGBENCH_GPUQUEUE_H
#define MIGBENCH_GPUQUEUE_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

#include "migbench/device.h"
#include "migbench/status.h"

/* One cell as the queue sees it. */
struct mb_gpuqueue_item {
    size_t run;   /* items with equal run are repetitions of one run */
    double est_s; /* estimated duration; <= 0 unknown (balanced as 1 s) */
};

/*
 * Assigns n items to n_gpus GPUs (1..MB_MAX_DEVICES): gpu_of[i] receives item i's GPU. load_s
 * (n_gpus entries, may be NULL) receives each GPU's estimated total. MB_EINVAL on bad counts.
 */
int mb_gpuqueue_assign(const struct mb_gpuqueue_item *items, size_t n, size_t n_gpus, bool pin_reps,
                       size_t *gpu_of, double *load_s, struct mb_error *err);

/*
 * Runs item `item` on GPU `gpu` (the index into the caller's device list). Returns MB_OK to go on;
 * any other status stops this worker and asks the others to stop after their current item
 * (MB_EINTR for an interruption). Called from worker threads.
 */
typedef int (*mb_gpuqueue_run_fn)(void *ctx, size_t gpu, size_t item, struct mb_error *err);

/* What a queue run did. */
struct mb_gpuqueue_result {
    size_t done;         /* items whose hook returned MB_OK */
    int status;          /* MB_OK, or the first failing hook's status */
    size_t failed_gpu;   /* with status != MB_OK: where it failed */
    size_t failed_item;  /* with status != MB_OK */
    struct mb_error err; /* with status != MB_OK: the hook's message */
};

/*
 * Runs items, each on gpu_of[item] (n_items entries), one worker thread per GPU that has items.
 * order lists the n_order items to run, in the order each worker takes its own (NULL: all items,
 * 0..n_items-1); items not in it do not run. A worker stops early when *stop becomes non-zero (may
 * be NULL) or another worker failed. Returns result->status; MB_EINVAL on out-of-range input,
 * MB_EIO when a worker thread cannot start (the others are stopped and joined).
 */
int mb_gpuqueue_run(size_t n_gpus, const size_t *gpu_of, size_t n_items, const size_t *order,
                    size_t n_order, mb_gpuqueue_run_fn fn, void *ctx, volatile sig_atomic_t *stop,
                    struct mb_gpuqueue_result *result);

#endif
