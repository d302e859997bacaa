/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The stable API of libmigbench.so, for programs and language bindings (the Python package in
 * python/migbench uses nothing else). Everything here takes opaque handles, scalars and strings;
 * results come back as JSON text (the same field names as the CLI's --json documents) that the
 * caller frees with mb_free. No value struct crosses this boundary except struct mb_error
 * (status.h), whose layout is frozen. docs/api.md lists the exported functions and the ABI rules.
 *
 * Threads: a window meter may be used from several threads at once; calls that wait (ending a
 * window) wait without holding any lock another call needs.
 */
#ifndef MIGBENCH_API_H
#define MIGBENCH_API_H

#include <stdint.h>

#include "migbench/export.h"
#include "migbench/status.h"
#include "migbench/version.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Longest window name, without its NUL. */
#define MB_WMETER_NAME_MAX 63

/* A meter that measures named windows: a sampling thread on one device (see meter.h). */
struct mb_wmeter;

/*
 * Opens device_spec ("auto", "nvml:0", "emu:A100-40GB", "host", as the CLI's --device) and starts
 * sampling it every interval_ns (0: 100 ms). min_window_ns is the shortest window whose energy is
 * given (0: the sensor's rule, max(2 x update period, 1 s)); shorter windows are refused with a
 * reason. *out is the caller's (mb_wmeter_close). Errors as mb_device_open; MB_EINVAL for a bad
 * interval.
 */
MB_API int mb_wmeter_open(const char *device_spec, int64_t interval_ns, int64_t min_window_ns,
                          struct mb_wmeter **out, struct mb_error *err);

/* Stops sampling, closes the device and frees m; open windows are dropped. NULL is a no-op. */
MB_API void mb_wmeter_close(struct mb_wmeter *m);

/*
 * Opens the window called name (1..MB_WMETER_NAME_MAX printable ASCII bytes) now. Windows nest
 * and overlap freely; MB_EBUSY when a window of that name is open, MB_ENORESOURCES when 16 are.
 */
MB_API int mb_wmeter_begin(struct mb_wmeter *m, const char *name, struct mb_error *err);

/*
 * Ends the window called name now, waits until samples cover its end (at most one sampling
 * interval, never holding a lock) and returns its figures in *json (caller frees with mb_free):
 * name, t0_s, t1_s, duration_s, counter_j, integral_j, gap_rel, gap_flag, mean_power_w,
 * peak_power_w (null where not measured), samples, refused with its reason, the sensor's
 * power_kind, update period and averaging window, interval_s and min_window_s. MB_ENOTFOUND when
 * no window of that name is open.
 */
MB_API int mb_wmeter_end(struct mb_wmeter *m, const char *name, char **json, struct mb_error *err);

/* The device and sensor the meter reads, as JSON in *json (caller frees with mb_free): backend,
 * emulated, name, model, uuid, sensor {...}, interval_s, min_window_s. */
MB_API int mb_wmeter_info(struct mb_wmeter *m, char **json, struct mb_error *err);

/*
 * The analysis of results directory dir as the report's JSON (exactly `migbench report DIR
 * --format json`, with the power-limit rule power_rule, NULL for the energy rule) in *json
 * (caller frees with mb_free). Errors as the report: MB_ENOTFOUND, MB_EPARSE with file and field.
 */
MB_API int mb_report_json(const char *dir, const char *power_rule, char **json,
                          struct mb_error *err);

/*
 * One cell's own record (a results directory's <run>/<rep>/cell.json, docs/results.md) as the
 * report reads it: decoded by the library's one cell.json decoder and written back by its encoder,
 * as JSON text in *json (caller frees with mb_free). Fields this migbench does not know are left
 * out. MB_ENOTFOUND when there is no file at path, MB_EPARSE naming the file and field when it is
 * damaged or of another schema.
 */
MB_API int mb_cell_json(const char *path, char **json, struct mb_error *err);

/*
 * The progress descriptor migbench gave this process (MIGBENCH_PROGRESS_FD, read once), or -1
 * when the process does not run under `migbench run`/`measure` (or after a write failed).
 */
MB_API int mb_progress_fd(void);

/*
 * Reports cumulative progress to the progress descriptor in one write: step=STEP samples=WORK
 * t=SECONDS (CLOCK_MONOTONIC) and unit=UNIT when unit is not NULL ("images", "tokens": letters and
 * '_', at most 15). A negative work leaves samples= out (migbench then counts steps). A no-op
 * returning MB_OK without a descriptor. MB_EINVAL for a non-finite work or a bad unit; MB_EIO when
 * the reader went away (further calls are no-ops).
 */
MB_API int mb_progress_report(uint64_t step, double work, const char *unit, struct mb_error *err);

/* Frees text returned by this API. NULL is a no-op. */
MB_API void mb_free(void *p);

#ifdef __cplusplus
}
#endif

#endif
