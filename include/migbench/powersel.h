/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Choosing a power limit from measurements: Zeus's selection rules (You et al., NSDI'23) over the
 * points of one run measured at several limits. Per unit of work, with E the energy per unit and
 * T = 1 / throughput the time per unit:
 *
 *   energy      the least E
 *   time        the least T
 *   cost:ETA    the least ETA * E + (1 - ETA) * MAXPOWER * T (Zeus's weighted cost; MAXPOWER is the
 *               GPU's largest limit, so both terms are joules)
 *   slowdown:S  the least E among the limits whose T is at most (1 + S) times the least T
 *
 * Each figure carries its 95% confidence half-width; a choice is "distinct" when its interval
 * does not overlap the runner-up's, else the measurements do not separate the two.
 *
 * Pure functions; safe from any thread.
 */
#ifndef MIGBENCH_POWERSEL_H
#define MIGBENCH_POWERSEL_H

#include <stdbool.h>
#include <stddef.h>

#include "migbench/status.h"

/* One run measured at one power limit. Unknown figures are NaN. */
struct mb_power_point {
    double limit_w;         /* the limit asked for; NaN: the default */
    double energy_per_unit; /* J per unit of work */
    double energy_ci95;     /* half-width */
    double throughput;      /* units per second */
    double throughput_ci95; /* half-width */
};

enum mb_power_rule {
    MB_PSEL_ENERGY = 0,
    MB_PSEL_TIME,
    MB_PSEL_COST,
    MB_PSEL_SLOWDOWN,
};

struct mb_power_rule_opts {
    enum mb_power_rule rule;
    double eta;          /* cost: weight of energy, 0..1 */
    double max_power_w;  /* cost: the GPU's largest power limit */
    double max_slowdown; /* slowdown: 0.1 for 10% */
};

/* The choice of a rule. */
struct mb_power_choice {
    size_t index;     /* the chosen point */
    double value;     /* its figure under the rule (J/unit, s/unit or J/unit of cost) */
    double ci95;      /* the figure's half-width (NaN unknown) */
    bool has_runner;  /* another point was eligible */
    size_t runner_up; /* the next best eligible point */
    bool intervals;   /* both the choice and the runner-up have a 95% interval */
    bool distinct;    /* the two intervals do not overlap */
};

/* "energy", "time", "cost" or "slowdown". */
const char *mb_power_rule_str(enum mb_power_rule r);

/*
 * Parses a rule as `report --power-rule` takes it: "energy", "time", "cost:ETA" (0..1) or
 * "slowdown:S" (S as "10%" or 0.1). max_power_w is left to the caller. MB_EINVAL naming the text.
 */
int mb_power_rule_parse(const char *text, struct mb_power_rule_opts *out, struct mb_error *err);

/*
 * Applies the rule to n points; points lacking a figure the rule needs are skipped.
 * MB_ENOTFOUND when no point is eligible (none measured, or none within the slowdown bound);
 * MB_EINVAL for bad options (cost without a positive max_power_w).
 */
int mb_power_select(const struct mb_power_point *pts, size_t n, const struct mb_power_rule_opts *o,
                    struct mb_power_choice *out, struct mb_error *err);

#endif
