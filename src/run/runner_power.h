/* SPDX-License-Identifier: Apache-2.0 */
/* Private to the runner: a cell's power limit (set before, restored after, described in cell.json).
 */
#ifndef MIGBENCH_RUNNER_POWER_H
#define MIGBENCH_RUNNER_POWER_H

#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "migbench/experiment.h"
#include "migbench/meter.h"
#include "migbench/powercap.h"
#include "migbench/runner.h"

struct mb__cell_power {
    bool active;                       /* the run has a power limit */
    struct mb_power_setting requested; /* the run's, as parsed from the experiment */
    char base_run[MB_EXP_NAME_MAX];    /* the run as written */
    bool requested_ok;
    uint32_t requested_mw; /* resolved against the device */
    bool enforced_ok;
    uint32_t enforced_mw; /* read back after setting */
    bool set;             /* migbench changed the limit: restore */
    bool restored;
    enum mb_powercap_outcome outcome; /* of the restore */
};

/*
 * Sets run's power limit on o->dev through the restore ledger; a run without one is left alone
 * (p->active false). A device that cannot set its limit keeps it for "default" (recorded) and
 * refuses any other. Returns MB_OK or a status with the reason in why (the cell fails).
 */
int mb__cell_power_prepare(struct mb__cell_power *p, const struct mb_runner_opts *o,
                           const struct mb_exp_run *run, struct mb_error *why);

/* Restores what prepare set (no-op otherwise). MB_OK, or a status with why. */
int mb__cell_power_restore(struct mb__cell_power *p, const struct mb_runner_opts *o,
                           struct mb_error *why);

#endif
