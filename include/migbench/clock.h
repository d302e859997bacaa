/* SPDX-License-Identifier: Apache-2.0 */
/* The one clock that migbench measures intervals with. */
#ifndef MIGBENCH_CLOCK_H
#define MIGBENCH_CLOCK_H

#include <stdint.h>

/*
 * Nanoseconds on CLOCK_MONOTONIC: never steps back, counts from an unspecified start, so only
 * differences mean anything. Thread-safe, never fails.
 */
int64_t mb_clock_monotonic_ns(void);

#endif
