/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Live status of running `migbench run` invocations: each one keeps a small JSON file in a
 * runtime directory, replaced atomically as its cells progress and removed when it ends, so that
 * `migbench monitor` can show which run, cell and jobs are on a GPU and their current throughput
 * without talking to the running process.
 *
 * The runtime directory is $MIGBENCH_RUNTIME_DIR, else $XDG_RUNTIME_DIR/migbench, else
 * /tmp/migbench-UID. Files are named run-PID.json; a file whose process is gone is ignored.
 *
 * Threads: no shared state; the functions may be called from any thread.
 */
#ifndef MIGBENCH_LIVE_H
#define MIGBENCH_LIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "migbench/device.h"
#include "migbench/status.h"

#define MB_LIVE_NAME_MAX 128
#define MB_LIVE_JOBS_MAX 16
#define MB_LIVE_PATH_MAX 1024
#define MB_LIVE_FILE_MAX (64u * 1024) /* a live file larger than this is not ours */

/* One job of the active cell. */
struct mb_live_job {
    char name[MB_LIVE_NAME_MAX];
    bool rate_valid;
    double rate;                 /* current throughput in unit per second */
    char unit[MB_LIVE_NAME_MAX]; /* "images", "tokens", "steps" */
};

/* The cell a run is working on. */
struct mb_live_cell {
    long pid;
    char experiment[MB_LIVE_NAME_MAX];
    char results_dir[MB_LIVE_PATH_MAX];
    char device_spec[MB_LIVE_NAME_MAX];
    char device_uuid[MB_UUID_MAX]; /* matches struct mb_device_info.uuid; "" when none */
    char run[MB_LIVE_NAME_MAX];
    char mode[32];
    unsigned rep;
    size_t cell_index; /* 0-based among the cells of this invocation */
    size_t n_cells;
    char phase[16];         /* "starting", "warm-up", "window", "stopping" */
    double elapsed_s;       /* since the cell began */
    double window_s;        /* time in the measurement window so far */
    double window_target_s; /* its planned length; 0 when not a time */
    bool power_valid;
    double power_w;
    size_t n_jobs;
    struct mb_live_job jobs[MB_LIVE_JOBS_MAX];
};

/* Writes the runtime directory's path into out. MB_ERANGE when it does not fit. */
int mb_live_dir(char *out, size_t cap, struct mb_error *err);

/*
 * Replaces DIR/run-PID.json with c (creating dir, mode 0700, when missing). MB_EIO, MB_ENOMEM,
 * MB_ERANGE as the file layer returns them.
 */
int mb_live_write(const char *dir, const struct mb_live_cell *c, struct mb_error *err);

/* Removes DIR/run-PID.json; a missing file is not an error. */
void mb_live_remove(const char *dir, long pid);

/*
 * Reads every live file in dir whose process still exists into out[0..cap-1] (sorted by pid);
 * *n gets how many. A missing dir gives *n = 0 and MB_OK; unreadable or malformed files are
 * skipped (a writer may be replacing one).
 */
int mb_live_scan(const char *dir, struct mb_live_cell *out, size_t cap, size_t *n,
                 struct mb_error *err);

#endif
