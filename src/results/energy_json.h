/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One JSON encoding (library-private) of a meter window's energy and of a sensor's semantics,
 * for every document that shows them: `measure --json` (report/measure.c), the window meter's
 * results (api/wmeter.c) and cell.json (results/cell.c), and of the host's outside load during a
 * window (`measure --json`, cell.json). Unknown figures are null, never 0.
 */
#ifndef MIGBENCH_ENERGY_JSON_H
#define MIGBENCH_ENERGY_JSON_H

#include <cjson/cJSON.h>

#include "migbench/hostload.h"
#include "migbench/device.h"
#include "migbench/meter.h"

/* Adds a window's figures to o: duration_s, counter_j, integral_j, gap_rel, gap_flag,
 * mean_power_w, peak_power_w, samples, missed_updates, read_failures, counter_wraps,
 * counter_resets, counter_patched_s, refused, truncated, reason. */
void mb__energy_json_add(cJSON *o, const struct mb_energy *e);

/* Adds a sensor's semantics to o: power_kind, power_update_period_ms, power_avg_window_ms,
 * has_energy_counter, energy_update_period_ms, scope, source. */
void mb__sensor_json_add(cJSON *o, const struct mb_sensor_info *s);

/* A window's outside load (base/hostload.h): loaded (null when no figure could be judged), why,
 * steal_pct, other_cpu_pct, load1, cpus, job_cores; each figure null when unread. */
cJSON *mb__hostload_json(const struct mb_hostload *w);

/* A number, or null when !valid or not finite; a string, or null when NULL or "". */
void mb__json_num_or_null(cJSON *o, const char *k, bool valid, double v);
void mb__json_str_or_null(cJSON *o, const char *k, const char *v);

#endif
