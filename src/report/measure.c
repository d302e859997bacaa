/* SPDX-License-Identifier: Apache-2.0 */
/* The `migbench measure --json` document. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>

#include "json_io.h"
#include "migbench/report_verbs.h"

static void add_num(cJSON *o, const char *k, bool valid, double v)
{
    if (valid && isfinite(v))
        cJSON_AddNumberToObject(o, k, v);
    else
        cJSON_AddNullToObject(o, k);
}

/* A string the device may not have: null rather than "". */
static void add_str(cJSON *o, const char *k, const char *v)
{
    if (v && v[0])
        cJSON_AddStringToObject(o, k, v);
    else
        cJSON_AddNullToObject(o, k);
}

static cJSON *window_json(const struct mb_energy *e)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "duration_s", e->duration_s);
    add_num(o, "counter_j", e->counter_valid, e->counter_j);
    add_num(o, "integral_j", e->integral_valid, e->integral_j);
    add_num(o, "gap_rel", e->gap_valid, e->gap_rel);
    if (e->gap_valid)
        cJSON_AddBoolToObject(o, "gap_flag", e->gap_flag);
    else
        cJSON_AddNullToObject(o, "gap_flag");
    add_num(o, "mean_power_w", e->mean_power_valid, e->mean_power_w);
    add_num(o, "peak_power_w", e->peak_power_valid, e->peak_power_w);
    cJSON_AddNumberToObject(o, "samples", (double)e->samples);
    cJSON_AddNumberToObject(o, "missed_updates", (double)e->missed_updates);
    cJSON_AddNumberToObject(o, "read_failures", (double)e->read_failures);
    cJSON_AddNumberToObject(o, "counter_wraps", e->counter_wraps);
    cJSON_AddNumberToObject(o, "counter_resets", e->counter_resets);
    cJSON_AddNumberToObject(o, "counter_patched_s", e->counter_patched_s);
    cJSON_AddBoolToObject(o, "refused", e->refused);
    cJSON_AddBoolToObject(o, "truncated", e->truncated);
    if (e->reason[0])
        cJSON_AddStringToObject(o, "reason", e->reason);
    else
        cJSON_AddNullToObject(o, "reason");
    return o;
}

char *mb_measure_json(const struct mb_measure_report *r)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cJSON *cmd = cJSON_AddArrayToObject(o, "command");
    for (char **a = r->argv; *a; a++)
        cJSON_AddItemToArray(cmd, cJSON_CreateString(*a));
    cJSON_AddNumberToObject(o, "exit_code", r->exit_code);
    cJSON_AddNumberToObject(o, "wall_time_s", r->wall_s);

    cJSON *d = cJSON_AddObjectToObject(o, "device");
    cJSON_AddStringToObject(d, "spec", r->device_spec);
    cJSON_AddStringToObject(d, "backend", r->info.backend);
    cJSON_AddBoolToObject(d, "emulated", r->info.emulated);
    add_str(d, "name", r->info.name);
    add_str(d, "model", r->info.model);
    add_str(d, "uuid", r->info.uuid);
    add_str(d, "driver_version", r->info.driver_version);

    cJSON *s = cJSON_AddObjectToObject(o, "sensor");
    cJSON_AddStringToObject(s, "power_kind", mb_power_kind_str(r->sensor.power_kind));
    add_num(s, "power_update_period_ms", r->sensor.power_update_period_ms > 0,
            r->sensor.power_update_period_ms);
    add_num(s, "power_avg_window_ms", r->sensor.power_avg_window_ms > 0,
            r->sensor.power_avg_window_ms);
    cJSON_AddBoolToObject(s, "has_energy_counter", r->sensor.has_energy_counter);
    add_num(s, "energy_update_period_ms", r->sensor.energy_update_period_ms > 0,
            r->sensor.energy_update_period_ms);
    add_num(s, "energy_wrap_mj", r->sensor.energy_wrap_mj > 0, (double)r->sensor.energy_wrap_mj);
    add_str(s, "scope", r->sensor.scope);
    add_str(s, "source", r->sensor.source);
    cJSON_AddNumberToObject(s, "power_shift_s", (double)r->job.power_shift_ns * 1e-9);

    cJSON *m = cJSON_AddObjectToObject(o, "sampling");
    cJSON_AddNumberToObject(m, "interval_s", (double)r->interval_ns * 1e-9);
    cJSON_AddNumberToObject(m, "min_window_s", (double)r->job.min_window_ns * 1e-9);
    cJSON_AddNumberToObject(m, "samples", (double)r->counts.samples);
    cJSON_AddNumberToObject(m, "missed_updates", (double)r->counts.missed_updates);
    cJSON_AddNumberToObject(m, "read_failures", (double)r->counts.read_failures);
    cJSON_AddNumberToObject(m, "overruns", (double)r->counts.overruns);
    if (r->csv)
        cJSON_AddStringToObject(m, "csv", r->csv);
    else
        cJSON_AddNullToObject(m, "csv");

    cJSON_AddItemToObject(o, "energy", window_json(&r->job));
    if (r->have_idle)
        cJSON_AddItemToObject(o, "idle", window_json(&r->idle));
    else
        cJSON_AddNullToObject(o, "idle");
    add_num(o, "static_energy_j", r->split_valid, r->static_j);
    add_num(o, "dynamic_energy_j", r->split_valid, r->dynamic_j);

    cJSON *p = cJSON_AddObjectToObject(o, "progress");
    cJSON_AddStringToObject(p, "source", r->progress_regex ? "regex" : "pipe");
    cJSON_AddStringToObject(p, "unit", r->unit);
    cJSON_AddNumberToObject(p, "lines", (double)r->pc.lines);
    cJSON_AddNumberToObject(p, "records", (double)r->pc.records);
    cJSON_AddNumberToObject(p, "garbage", (double)r->pc.garbage);
    cJSON_AddNumberToObject(p, "overlong", (double)r->pc.overlong);
    cJSON_AddNumberToObject(p, "partial", (double)r->pc.partial);
    cJSON_AddNumberToObject(p, "rejected", (double)r->pc.rejected);
    add_num(p, "steps", r->have_progress, (double)r->last.step);
    add_num(p, "work", r->have_progress, r->last.work);

    cJSON *t = cJSON_AddObjectToObject(o, "throughput");
    add_num(t, "per_s", r->tp.valid, r->tp.rate.mean);
    add_num(t, "ci95_half", r->tp.valid && r->tp.rate.ci_valid, r->tp.rate.ci95_half);
    cJSON_AddNumberToObject(t, "batches", (double)r->tp.batches);
    add_num(t, "window_s", r->tp.valid, r->tp.duration_s);
    add_num(t, "warmup_s", !r->warmup_steps, (double)r->warmup_ns * 1e-9);
    add_num(t, "warmup_steps", r->warmup_steps > 0, (double)r->warmup_steps);
    if (r->tp.valid)
        cJSON_AddNullToObject(t, "reason");
    else
        cJSON_AddStringToObject(t, "reason", r->tp.reason);
    if (r->have_steady)
        cJSON_AddItemToObject(o, "steady", window_json(&r->steady));
    else
        cJSON_AddNullToObject(o, "steady");
    add_num(o, "energy_per_unit_j", r->epu_valid, r->epu_j);

    char *text = cJSON_Print(o);
    cJSON_Delete(o);
    return text;
}
