/* SPDX-License-Identifier: Apache-2.0 */
/*
 * When the gap between the power integral and the energy counter is flagged.
 *
 * A reading averaged over a window W describes the moment W/2 before it (the meter shifts it
 * back by W/2), so a step of dP watts at time ts shows up as a linear ramp over
 * [ts - W/2, ts + W/2]. Inside a measurement window the ramp's area equals the step's, so a step
 * there costs nothing; at a window edge the part of the ramp outside the window is lost (or the
 * part inside gained): at most dP * W / 8 when the step falls on the edge. A window whose jobs
 * start just before it and stop at its end has a step at both edges, each at most the peak
 * reading, so up to peak * W / 4 of the gap is the sensor's averaging and says nothing about the
 * counter or the readings. That much is allowed on top of MB_METER_GAP_FLAG.
 */
#include <math.h>

#include "migbench/meter.h"

double mb_meter_gap_edge_j(const struct mb_energy *r)
{
    if (!r->peak_power_valid || r->power_shift_ns <= 0)
        return 0.0;
    double w_s = 2.0 * (double)r->power_shift_ns * 1e-9;
    return r->peak_power_w * w_s / 4.0;
}

bool mb_meter_gap_exceeds(double integral_j, double counter_j, double edge_j)
{
    return fabs(integral_j - counter_j) > MB_METER_GAP_FLAG * fabs(counter_j) + edge_j;
}
