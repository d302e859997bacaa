/* SPDX-License-Identifier: Apache-2.0 */
/* Internal helpers shared by the planner's source files. */
#ifndef MIGBENCH_PLAN_INTERNAL_H
#define MIGBENCH_PLAN_INTERNAL_H

#include "migbench/plan.h"

/* Removes the last row added (no-op when empty): undoes a partial load. */
void mb__plan_profiles_pop(struct mb_plan_profiles *p);

#endif
