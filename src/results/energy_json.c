/* SPDX-License-Identifier: Apache-2.0 */
/* One JSON encoding of a window's energy and a sensor's semantics (results/energy_json.h). */
#include "results/energy_json.h"

#include <math.h>

void mb__json_num_or_null(cJSON *o, const char *k, bool valid, double v)
{
    if (valid && isfinite(v))
        cJSON_AddNumberToObject(o, k, v);
    else
        cJSON_AddNullToObject(o, k);
}

void mb__json_str_or_null(cJSON *o, const char *k, const char *v)
{
    if (v && v[0])
        cJSON_AddStringToObject(o, k, v);
    else
        cJSON_AddNullToObject(o, k);
}

void mb__energy_json_add(cJSON *o, const struct mb_energy *e)
{
    cJSON_AddNumberToObject(o, "duration_s", e->duration_s);
    mb__json_num_or_null(o, "counter_j", e->counter_valid, e->counter_j);
    mb__json_num_or_null(o, "integral_j", e->integral_valid, e->integral_j);
    mb__json_num_or_null(o, "gap_rel", e->gap_valid, e->gap_rel);
    if (e->gap_valid)
        cJSON_AddBoolToObject(o, "gap_flag", e->gap_flag);
    else
        cJSON_AddNullToObject(o, "gap_flag");
    mb__json_num_or_null(o, "mean_power_w", e->mean_power_valid, e->mean_power_w);
    mb__json_num_or_null(o, "peak_power_w", e->peak_power_valid, e->peak_power_w);
    cJSON_AddNumberToObject(o, "samples", (double)e->samples);
    cJSON_AddNumberToObject(o, "missed_updates", (double)e->missed_updates);
    cJSON_AddNumberToObject(o, "read_failures", (double)e->read_failures);
    cJSON_AddNumberToObject(o, "counter_wraps", e->counter_wraps);
    cJSON_AddNumberToObject(o, "counter_resets", e->counter_resets);
    cJSON_AddNumberToObject(o, "counter_patched_s", e->counter_patched_s);
    cJSON_AddBoolToObject(o, "refused", e->refused);
    cJSON_AddBoolToObject(o, "truncated", e->truncated);
    mb__json_str_or_null(o, "reason", e->reason);
}

void mb__sensor_json_add(cJSON *o, const struct mb_sensor_info *s)
{
    cJSON_AddStringToObject(o, "power_kind", mb_power_kind_str(s->power_kind));
    mb__json_num_or_null(o, "power_update_period_ms", s->power_update_period_ms > 0,
                         s->power_update_period_ms);
    mb__json_num_or_null(o, "power_avg_window_ms", s->power_avg_window_ms > 0,
                         s->power_avg_window_ms);
    cJSON_AddBoolToObject(o, "has_energy_counter", s->has_energy_counter);
    mb__json_num_or_null(o, "energy_update_period_ms", s->energy_update_period_ms > 0,
                         s->energy_update_period_ms);
    mb__json_str_or_null(o, "scope", s->scope);
    mb__json_str_or_null(o, "source", s->source);
}

cJSON *mb__hostload_json(const struct mb_hostload *w)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    if (w->verdict_ok)
        cJSON_AddBoolToObject(o, "loaded", w->loaded);
    else
        cJSON_AddNullToObject(o, "loaded");
    mb__json_str_or_null(o, "why", w->why);
    mb__json_num_or_null(o, "steal_pct", w->steal_ok, w->steal_pct);
    mb__json_num_or_null(o, "other_cpu_pct", w->other_ok, w->other_pct);
    mb__json_num_or_null(o, "load1", w->load_ok, w->load1);
    mb__json_num_or_null(o, "cpus", w->cpus > 0, w->cpus);
    mb__json_num_or_null(o, "job_cores", w->job_cores > 0, w->job_cores);
    return o;
}
