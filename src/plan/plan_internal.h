/* SPDX-License-Identifier: Apache-2.0 */
/* Internal helpers shared by the planner's source files. */
#ifndef MIGBENCH_PLAN_INTERNAL_H
#define MIGBENCH_PLAN_INTERNAL_H

#include "migbench/plan.h"

/* Removes the last row added (no-op when empty): undoes a partial load. */
void mb__plan_profiles_pop(struct mb_plan_profiles *p);

/* True when row was measured under the power limit cap_w (W; 0 or NaN on either side: default). */
bool mb__plan_cap_match(const struct mb_plan_profile *row, double cap_w);

#endif
