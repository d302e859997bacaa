/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Waiting for a meter window's result (library-private): one rule for how long, used by the
 * runner's windows and `measure`'s, so that a window the one gives a figure for the other does
 * not refuse.
 */
#ifndef MIGBENCH_WINDOW_WAIT_H
#define MIGBENCH_WINDOW_WAIT_H

#include <stdbool.h>

#include "migbench/meter.h"

/* The floor of the wait: what the runner always allowed. */
#define MB_WINDOW_WAIT_MIN_MS 5000
#define MB_WINDOW_WAIT_MAX_MS 60000

/*
 * How long an ended window's result may take to be covered by samples: three sample periods
 * beyond the sensor's averaging shift and two seconds of slack, at least MB_WINDOW_WAIT_MIN_MS
 * and at most MB_WINDOW_WAIT_MAX_MS.
 */
int mb_window_wait_ms(const struct mb_meter *m);

/*
 * The result of window id (already ended), waiting mb_window_wait_ms. When samples stop coming (a
 * failing or lost sensor) and stop_on_stall, the meter is stopped so that the window ends with
 * what it has (marked truncated); otherwise MB_ETIMEDOUT stands (the caller's meter goes on).
 */
int mb_window_result(struct mb_meter *m, int id, bool stop_on_stall, struct mb_energy *out,
                     struct mb_error *err);

#endif
