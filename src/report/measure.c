/* SPDX-License-Identifier: Apache-2.0 */
/* The `migbench measure` documents: the summary on stderr and the --json document. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json_io.h"
#include "migbench/report_verbs.h"
#include "results/energy_json.h"

static cJSON *window_json(const struct mb_energy *e)
{
    cJSON *o = cJSON_CreateObject();
    mb__energy_json_add(o, e);
    return o;
}

/*
 * "visible": the GPU and MIG instance a scheduler gave the job through CUDA_VISIBLE_DEVICES, or
 * null. The meter reads the parent GPU: MIG instances share its one power sensor, so the energy
 * is the whole GPU's and the instance is named beside it, not metered apart.
 */
static void add_visible(cJSON *o, const struct mb_visible *v)
{
    if (!v->resolved) {
        cJSON_AddNullToObject(o, "visible");
        return;
    }
    cJSON *x = cJSON_AddObjectToObject(o, "visible");
    cJSON_AddStringToObject(x, "cuda_visible_devices", v->entry);
    cJSON_AddStringToObject(x, "gpu_uuid", v->gpu_uuid);
    cJSON_AddStringToObject(x, "energy_scope", "whole GPU");
    if (!v->has_instance) {
        cJSON_AddNullToObject(x, "mig_instance");
        return;
    }
    cJSON *m = cJSON_AddObjectToObject(x, "mig_instance");
    cJSON_AddStringToObject(m, "profile", v->instance.profile_name);
    cJSON_AddNumberToObject(m, "gi_id", v->instance.gi_id);
    if (v->instance.has_ci)
        cJSON_AddNumberToObject(m, "ci_id", v->instance.ci_id);
    else
        cJSON_AddNullToObject(m, "ci_id");
    cJSON_AddNumberToObject(m, "placement_start", v->instance.placement.start);
    cJSON_AddNumberToObject(m, "placement_size", v->instance.placement.size);
    mb__json_str_or_null(m, "uuid", v->instance.uuid);
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
    mb__json_str_or_null(d, "name", r->info.name);
    mb__json_str_or_null(d, "model", r->info.model);
    mb__json_str_or_null(d, "uuid", r->info.uuid);
    mb__json_str_or_null(d, "driver_version", r->info.driver_version);
    add_visible(o, &r->vis);

    cJSON *s = cJSON_AddObjectToObject(o, "sensor");
    cJSON_AddStringToObject(s, "power_kind", mb_power_kind_str(r->sensor.power_kind));
    mb__json_num_or_null(s, "power_update_period_ms", r->sensor.power_update_period_ms > 0,
                         r->sensor.power_update_period_ms);
    mb__json_num_or_null(s, "power_avg_window_ms", r->sensor.power_avg_window_ms > 0,
                         r->sensor.power_avg_window_ms);
    cJSON_AddBoolToObject(s, "has_energy_counter", r->sensor.has_energy_counter);
    mb__json_num_or_null(s, "energy_update_period_ms", r->sensor.energy_update_period_ms > 0,
                         r->sensor.energy_update_period_ms);
    mb__json_num_or_null(s, "energy_wrap_mj", r->sensor.energy_wrap_mj > 0,
                         (double)r->sensor.energy_wrap_mj);
    mb__json_str_or_null(s, "scope", r->sensor.scope);
    mb__json_str_or_null(s, "source", r->sensor.source);
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
    mb__json_num_or_null(o, "static_energy_j", r->split_valid, r->static_j);
    mb__json_num_or_null(o, "dynamic_energy_j", r->split_valid, r->dynamic_j);

    cJSON *p = cJSON_AddObjectToObject(o, "progress");
    cJSON_AddStringToObject(p, "source", r->progress_regex ? "regex" : "pipe");
    cJSON_AddStringToObject(p, "unit", r->unit);
    cJSON_AddNumberToObject(p, "lines", (double)r->pc.lines);
    cJSON_AddNumberToObject(p, "records", (double)r->pc.records);
    cJSON_AddNumberToObject(p, "garbage", (double)r->pc.garbage);
    cJSON_AddNumberToObject(p, "overlong", (double)r->pc.overlong);
    cJSON_AddNumberToObject(p, "partial", (double)r->pc.partial);
    cJSON_AddNumberToObject(p, "rejected", (double)r->pc.rejected);
    mb__json_num_or_null(p, "steps", r->have_progress, (double)r->last.step);
    mb__json_num_or_null(p, "work", r->have_progress, r->last.work);

    cJSON *t = cJSON_AddObjectToObject(o, "throughput");
    mb__json_num_or_null(t, "per_s", r->tp.valid, r->tp.rate.mean);
    mb__json_num_or_null(t, "ci95_half", r->tp.valid && r->tp.rate.ci_valid, r->tp.rate.ci95_half);
    cJSON_AddNumberToObject(t, "batches", (double)r->tp.batches);
    mb__json_num_or_null(t, "window_s", r->tp.valid, r->tp.duration_s);
    mb__json_num_or_null(t, "warmup_s", !r->warmup_steps, (double)r->warmup_ns * 1e-9);
    mb__json_num_or_null(t, "warmup_steps", r->warmup_steps > 0, (double)r->warmup_steps);
    if (r->tp.valid)
        cJSON_AddNullToObject(t, "reason");
    else
        cJSON_AddStringToObject(t, "reason", r->tp.reason);
    if (r->have_steady)
        cJSON_AddItemToObject(o, "steady", window_json(&r->steady));
    else
        cJSON_AddNullToObject(o, "steady");
    mb__json_num_or_null(o, "energy_per_unit_j", r->epu_valid, r->epu_j);
    if (r->have_load)
        cJSON_AddItemToObject(o, "outside_load", mb__hostload_json(&r->load));
    else
        cJSON_AddNullToObject(o, "outside_load");

    char *text = cJSON_Print(o);
    cJSON_Delete(o);
    return text;
}

/* The host's outside load over the job's window: the verdict, then the figures read. */
static void load_text_write(FILE *f, const struct mb_hostload *w)
{
    if (!w->verdict_ok) {
        fprintf(f, "  outside load  n/a (no CPU figures in /proc)\n");
        return;
    }
    if (w->loaded) {
        fprintf(f, "  outside load  FLAGGED: %s; the throughput may be affected\n", w->why);
        return;
    }
    fprintf(f, "  outside load  none seen");
    const char *pre = " (";
    if (w->steal_ok)
        fprintf(f, "%ssteal %.1f %%", pre, w->steal_pct), pre = ", ";
    if (w->other_ok)
        fprintf(f, "%sother processes %.1f %% of the CPU time", pre, w->other_pct), pre = ", ";
    if (w->load_ok)
        fprintf(f, "%sload average %.2f", pre, w->load1), pre = ", ";
    if (w->cpus)
        fprintf(f, "%s%u CPUs", pre, w->cpus), pre = ", ";
    fprintf(f, "%s\n", pre[0] == ',' ? ")" : "");
}

static void fmt_j(char *buf, size_t n, bool valid, double v)
{
    if (valid)
        snprintf(buf, n, "%.3f J", v);
    else
        snprintf(buf, n, "n/a");
}

/* The summary's sensor line: what the power reading is, its update period, counter, scope. */
static void sensor_text_write(FILE *f, const struct mb_sensor_info *sn)
{
    if (sn->power_kind == MB_POWER_NONE)
        fprintf(f, "  sensor        no power reading");
    else
        fprintf(f, "  sensor        %s power", mb_power_kind_str(sn->power_kind));
    if (sn->power_avg_window_ms)
        fprintf(f, " (%u ms average)", sn->power_avg_window_ms);
    if (sn->power_update_period_ms)
        fprintf(f, ", updated every %u ms", sn->power_update_period_ms);
    else
        fprintf(f, ", update period unknown");
    fprintf(f, "; %s; scope %s; from %s\n",
            sn->has_energy_counter ? "energy counter" : "no energy counter",
            sn->scope[0] ? sn->scope : "unknown", sn->source[0] ? sn->source : "unknown");
}

void mb_measure_text_write(FILE *f, const struct mb_measure_report *r)
{
    char a[48], b[48];
    fprintf(f, "\n Measurement of '");
    for (char **p = r->argv; *p; p++)
        fprintf(f, "%s%s", p == r->argv ? "" : " ", *p);
    fprintf(f, "':\n\n");
    fprintf(f, "  device        %s (%s backend%s)%s%s\n", r->info.name[0] ? r->info.name : "?",
            r->info.backend, r->info.emulated ? ", EMULATED: modelled, not measured" : "",
            r->info.uuid[0] ? " " : "", r->info.uuid);
    if (r->vis.has_instance)
        fprintf(f,
                "  instance      MIG %s (GI %u, CI %u) %s from CUDA_VISIBLE_DEVICES; energy is "
                "the whole GPU's\n",
                r->vis.instance.profile_name, r->vis.instance.gi_id, r->vis.instance.ci_id,
                r->vis.instance.uuid);
    sensor_text_write(f, &r->sensor);
    fprintf(f, "  wall time     %.3f s\n", r->wall_s);
    fmt_j(a, sizeof(a), r->job.counter_valid, r->job.counter_j);
    fmt_j(b, sizeof(b), r->job.integral_valid, r->job.integral_j);
    fprintf(f, "  energy        %s counter, %s integrated", a, b);
    if (r->job.gap_valid)
        fprintf(f, ", gap %+.2f%%%s", r->job.gap_rel * 100,
                r->job.gap_flag ? " (FLAGGED: above 2% plus the averaging allowance)" : "");
    else
        fprintf(f, ", gap n/a");
    fputc('\n', f);
    if (r->job.reason[0])
        fprintf(f, "                (%s)\n", r->job.reason);
    if (r->job.mean_power_valid)
        fprintf(f, "  mean power    %.2f W\n", r->job.mean_power_w);
    else
        fprintf(f, "  mean power    n/a\n");
    if (r->job.peak_power_valid)
        fprintf(f, "  peak power    %.2f W\n", r->job.peak_power_w);
    else
        fprintf(f, "  peak power    n/a\n");
    if (r->have_idle) {
        if (r->idle.mean_power_valid)
            fprintf(f, "  idle power    %.2f W over %.3f s", r->idle.mean_power_w,
                    r->idle.duration_s);
        else
            fprintf(f, "  idle power    n/a (%s)", r->idle.reason);
        if (r->split_valid)
            fprintf(f, "; static %.3f J, dynamic %.3f J", r->static_j, r->dynamic_j);
        fputc('\n', f);
    }
    fprintf(f,
            "  samples       %llu taken every %.3f ms, %llu missed updates, %llu failed reads, "
            "%llu overruns\n",
            (unsigned long long)r->counts.samples, (double)r->interval_ns * 1e-6,
            (unsigned long long)r->counts.missed_updates,
            (unsigned long long)r->counts.read_failures, (unsigned long long)r->counts.overruns);
    if (r->have_load)
        load_text_write(f, &r->load);
    if (r->have_progress)
        fprintf(f, "  work          %llu steps, %.0f %s\n", (unsigned long long)r->last.step,
                r->last.work, r->unit);
    else
        fprintf(f, "  work          n/a (no progress reported)\n");
    if (r->pc.garbage || r->pc.overlong || r->pc.partial || r->pc.rejected)
        fprintf(
            f,
            "  progress      %llu bad lines skipped (%llu garbage, %llu over-long, %llu partial, "
            "%llu backwards)\n",
            (unsigned long long)(r->pc.garbage + r->pc.overlong + r->pc.partial + r->pc.rejected),
            (unsigned long long)r->pc.garbage, (unsigned long long)r->pc.overlong,
            (unsigned long long)r->pc.partial, (unsigned long long)r->pc.rejected);
    if (r->tp.valid) {
        fprintf(f, "  throughput    %.3f", r->tp.rate.mean);
        if (r->tp.rate.ci_valid)
            fprintf(f, " +- %.3f", r->tp.rate.ci95_half);
        fprintf(f, " %s/s (95%% CI, %zu batches over %.3f s", r->unit, r->tp.batches,
                r->tp.duration_s);
        if (r->warmup_steps)
            fprintf(f, ", after %llu warm-up steps)\n", (unsigned long long)r->warmup_steps);
        else
            fprintf(f, ", after %.3f s warm-up)\n", (double)r->warmup_ns * 1e-9);
    } else {
        fprintf(f, "  throughput    n/a (%s)\n", r->tp.reason);
    }
    if (r->epu_valid) {
        /* "J/image" reads better than "J/images". */
        size_t ul = strlen(r->unit);
        int keep = ul > 1 && r->unit[ul - 1] == 's' ? (int)ul - 1 : (int)ul;
        fprintf(f, "  energy/unit   %.6g J/%.*s (steady window)\n", r->epu_j, keep, r->unit);
    } else
        fprintf(f, "  energy/unit   n/a\n");
    fprintf(f, "  exit status   %d\n\n", r->exit_code);
}
