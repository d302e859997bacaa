/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The power-limit axis of an analysed experiment: for each run written with `power_limits` and
 * each of its jobs, throughput, energy per unit and power at every limit (means with 95%
 * intervals over repetitions), the energy-optimal limit, and the limit a selection rule picks
 * (migbench/powersel.h). Plain data for the report renderers.
 */
#ifndef MIGBENCH_POWERAXIS_H
#define MIGBENCH_POWERAXIS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "migbench/analysis.h"
#include "migbench/powersel.h"

#define MB_PAXIS_MAX_POINTS 16

/* One job of one run at one limit. */
struct mb_paxis_point {
    size_t run;               /* index into the experiment's runs */
    char limit[32];           /* as requested */
    struct mb_opt enforced_w; /* the limit in force (first cell that read it) */
    struct mb_estimate throughput;
    struct mb_estimate j_per_unit; /* the run's default attribution / units of work */
    struct mb_estimate power_w;    /* whole-GPU power in the window */
    int throttle_valid;            /* some cell read the throttle reasons */
    int power_capped;              /* some cell's window saw "sw power cap" */
};

/* One job of one run across its limits, strongest limit first. */
struct mb_paxis_item {
    char run[MB_AN_NAME_MAX]; /* the run as written */
    char job[MB_AN_NAME_MAX];
    char unit[MB_AN_NAME_MAX];
    size_t npoints;
    struct mb_paxis_point points[MB_PAXIS_MAX_POINTS];
    int optimal_ok; /* the least energy per unit (Zeus's "energy" rule) */
    struct mb_power_choice optimal;
    int chosen_ok; /* the rule's choice */
    struct mb_power_choice chosen;
    char note[MB_AN_TEXT_MAX]; /* why there is no choice, when there is none */
};

struct mb_paxis {
    struct mb_power_rule_opts rule; /* the rule applied (energy when none was asked for) */
    size_t n;
    struct mb_paxis_item *items; /* owned */
};

/*
 * Builds the axis of experiment e; rule NULL means "energy". For the cost rule, MAXPOWER is the
 * largest enforced limit among a job's points. An experiment without the axis gives n = 0.
 * MB_ENOMEM, or MB_ERANGE for more than MB_PAXIS_MAX_POINTS limits of one run.
 */
int mb_paxis_build(const struct mb_an_experiment *e, const struct mb_power_rule_opts *rule,
                   struct mb_paxis *out, struct mb_error *err);

/*
 * The axis as JSON (docs/power.md): {"rule": ..., "runs": [{run, job, unit, points: [{limit,
 * enforced_w, throughput, throughput_ci95, j_per_unit, j_per_unit_ci95, power_w, power_capped}],
 * energy_optimal: {limit, enforced_w, distinct}, chosen: {...} or null, note}]}. Unknown figures
 * are null. NULL when out of memory.
 */
cJSON *mb_paxis_json(const struct mb_paxis *a);

/*
 * The axis as a plain-text table, one block per run and job, into f (the caller's stream; the
 * report writes it after its other tables). Returns 0, or -1 when writing failed.
 */
int mb_paxis_write_text(FILE *f, const struct mb_paxis *a);

/* Frees what mb_paxis_build allocated; a zeroed struct is fine. */
void mb_paxis_free(struct mb_paxis *a);

#endif
