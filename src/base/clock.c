/* SPDX-License-Identifier: Apache-2.0 */
/* The monotonic clock, in one place so that every module's timestamps compare. */
#include <time.h>

#include "migbench/clock.h"

int64_t mb_clock_monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}
