/* SPDX-License-Identifier: Apache-2.0 */
/* Waiting for a meter window's result: one rule for the runner and `measure` (window_wait.h). */
#include "power/window_wait.h"

int mb_window_wait_ms(const struct mb_meter *m)
{
    struct mb_sensor_info si;
    mb_meter_device(m, NULL, &si);
    int64_t ms = 3 * mb_meter_interval_ns(m) / 1000000 + si.power_avg_window_ms + 2000;
    if (ms < MB_WINDOW_WAIT_MIN_MS)
        return MB_WINDOW_WAIT_MIN_MS;
    return ms > MB_WINDOW_WAIT_MAX_MS ? MB_WINDOW_WAIT_MAX_MS : (int)ms;
}

int mb_window_result(struct mb_meter *m, int id, bool stop_on_stall, struct mb_energy *out,
                     struct mb_error *err)
{
    int rc = mb_meter_window_result(m, id, mb_window_wait_ms(m), out, err);
    if (rc == MB_ETIMEDOUT && stop_on_stall) {
        mb_meter_stop(m, NULL);
        rc = mb_meter_window_result(m, id, 0, out, err);
    }
    return rc;
}
