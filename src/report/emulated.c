/* SPDX-License-Identifier: Apache-2.0 */
/* The note an emulated experiment's findings carry: which model they come from. */
#include <stdio.h>
#include <string.h>

#include "device/gpumodel.h"
#include "report/report_internal.h"

void mb__emulated_findings(char *buf, size_t cap, const struct mb_an_experiment *e)
{
    /* The emulator names its power model in the sensor's source, which every cell records. */
    if (strstr(e->sensor, "gpumodel"))
        snprintf(buf, cap,
                 "EMULATED: these findings come from the emulator's GPU model (%s), not from "
                 "hardware.",
                 mb__gm_calibration());
    else if (strstr(e->sensor, "trace"))
        snprintf(buf, cap,
                 "EMULATED: these findings come from a power trace the emulator played, not from "
                 "hardware.");
    else
        snprintf(buf, cap,
                 "EMULATED: these findings come from the emulator's uncalibrated power model (an "
                 "older migbench), not from hardware.");
}
