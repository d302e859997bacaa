/* SPDX-License-Identifier: Apache-2.0 */
/* What `migbench devices` shows of a device: the report collected through the ops table and its
 * JSON document. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/json_io.h"
#include "migbench/report_verbs.h"

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

int mb_device_report_collect(struct mb_device *dev, const char *spec, struct mb_device_report *r,
                             struct mb_error *err)
{
    memset(r, 0, sizeof(*r));
    snprintf(r->spec, sizeof(r->spec), "%s", spec ? spec : "");
    int rc = mb_device_info(dev, &r->info, err);
    if (rc != MB_OK)
        return rc;
    r->caps = mb_device_caps(dev);
    struct mb_error e2;
    r->sensor_rc = mb_device_sensor(dev, &r->sensor, &e2);
    r->tel_rc = mb_device_telemetry(dev, &r->tel, &e2);
    if (r->tel_rc == MB_OK && (r->caps & MB_CAP_DELTA_TELEMETRY)) {
        /* Power and utilisation are deltas (the host's): give them an interval to cover. */
        sleep_ms(200);
        r->tel_rc = mb_device_telemetry(dev, &r->tel, &e2);
    }
    r->pl_rc = mb_device_power_limit(dev, &r->pl, &e2);
    r->mode_rc = mb_device_mig_mode(dev, &r->mode, &e2);
    r->prof_rc = MB_EUNSUPPORTED;
    r->inst_rc = MB_EUNSUPPORTED;
    if (r->mode_rc == MB_OK) {
        r->prof_rc = mb_device_mig_profiles(dev, r->prof, MB_MAX_PROFILES, &r->n_prof, &e2);
        if (r->prof_rc != MB_OK)
            snprintf(r->prof_msg, sizeof(r->prof_msg), "%s", e2.msg);
        if (r->mode.current)
            r->inst_rc = mb_device_mig_instances(dev, r->inst, MB_DEVICE_REPORT_MAX_INSTANCES,
                                                 &r->n_inst, &e2);
    }
    r->proc_rc = mb_device_processes(dev, r->proc, MB_MAX_PROCESSES, &r->n_proc, &e2);
    if (r->n_prof > MB_MAX_PROFILES)
        r->n_prof = MB_MAX_PROFILES;
    if (r->n_inst > MB_DEVICE_REPORT_MAX_INSTANCES)
        r->n_inst = MB_DEVICE_REPORT_MAX_INSTANCES;
    if (r->n_proc > MB_MAX_PROCESSES)
        r->n_proc = MB_MAX_PROCESSES;
    return MB_OK;
}

/* ---- JSON --------------------------------------------------------------------------------- */

static void add_str_or_null(cJSON *o, const char *k, const char *v)
{
    if (v && v[0])
        cJSON_AddStringToObject(o, k, v);
    else
        cJSON_AddNullToObject(o, k);
}

static void add_num_if(cJSON *o, const char *k, bool valid, double v)
{
    if (valid)
        cJSON_AddNumberToObject(o, k, v);
    else
        cJSON_AddNullToObject(o, k);
}

/* The power sensor's semantics (null when the device could not say). */
static void json_sensor(cJSON *d, const struct mb_device_report *r)
{
    if (r->sensor_rc == MB_OK) {
        const struct mb_sensor_info *s = &r->sensor;
        cJSON *o = cJSON_AddObjectToObject(d, "sensor");
        cJSON_AddStringToObject(o, "power_kind", mb_power_kind_str(s->power_kind));
        add_num_if(o, "power_update_period_ms", s->power_update_period_ms > 0,
                   s->power_update_period_ms);
        add_num_if(o, "power_avg_window_ms", s->power_avg_window_ms > 0, s->power_avg_window_ms);
        cJSON_AddBoolToObject(o, "has_instant", s->has_instant);
        cJSON_AddBoolToObject(o, "has_average", s->has_average);
        cJSON_AddBoolToObject(o, "has_energy_counter", s->has_energy_counter);
        add_num_if(o, "energy_update_period_ms", s->energy_update_period_ms > 0,
                   s->energy_update_period_ms);
        add_num_if(o, "energy_resolution_mj", s->energy_resolution_mj > 0, s->energy_resolution_mj);
        add_num_if(o, "energy_wrap_mj", s->energy_wrap_mj > 0, (double)s->energy_wrap_mj);
        add_str_or_null(o, "scope", s->scope);
        add_str_or_null(o, "source", s->source);
    } else {
        cJSON_AddNullToObject(d, "sensor");
    }
}

/* One telemetry reading; a field the device did not give is null. */
static void json_telemetry(cJSON *d, const struct mb_device_report *r)
{
    if (r->tel_rc == MB_OK) {
        const struct mb_telemetry *t = &r->tel;
        uint32_t v = t->valid;
        cJSON *o = cJSON_AddObjectToObject(d, "telemetry");
        add_num_if(o, "power_mw", v & MB_TEL_POWER, t->power_mw);
        add_num_if(o, "power_instant_mw", v & MB_TEL_POWER_INSTANT, t->power_instant_mw);
        add_num_if(o, "power_avg_mw", v & MB_TEL_POWER_AVG, t->power_avg_mw);
        add_num_if(o, "energy_mj", v & MB_TEL_ENERGY, (double)t->energy_mj);
        add_num_if(o, "energy_dram_mj", v & MB_TEL_ENERGY_DRAM, (double)t->energy_dram_mj);
        /* The host's "utilisation" is the CPU's: named so, with no GPU field beside it. */
        bool host = !(r->caps & MB_CAP_GPU);
        add_num_if(o, host ? "util_cpu_pct" : "util_gpu_pct", v & MB_TEL_UTIL_GPU, t->util_gpu_pct);
        add_num_if(o, "util_mem_pct", v & MB_TEL_UTIL_MEM, t->util_mem_pct);
        add_num_if(o, "mem_used_bytes", v & MB_TEL_MEM_USED, (double)t->mem_used_bytes);
        add_num_if(o, "clock_sm_mhz", v & MB_TEL_CLOCK_SM, t->clock_sm_mhz);
        add_num_if(o, "clock_mem_mhz", v & MB_TEL_CLOCK_MEM, t->clock_mem_mhz);
        add_num_if(o, "temp_c", v & MB_TEL_TEMP, t->temp_c);
        add_num_if(o, "throttle_reasons", v & MB_TEL_THROTTLE, (double)t->throttle_reasons);
        add_num_if(o, "power_limit_mw", v & MB_TEL_POWER_LIMIT, t->power_limit_mw);
    } else {
        cJSON_AddNullToObject(d, "telemetry");
    }
}

/* The power limit, its range and whether migbench may set it. */
static void json_power_limit(cJSON *d, const struct mb_device_report *r)
{
    if (r->pl_rc == MB_OK) {
        const struct mb_power_limit *pl = &r->pl;
        cJSON *o = cJSON_AddObjectToObject(d, "power_limit");
        add_num_if(o, "limit_mw", pl->valid & MB_PL_LIMIT, pl->limit_mw);
        add_num_if(o, "enforced_mw", pl->valid & MB_PL_ENFORCED, pl->enforced_mw);
        add_num_if(o, "min_mw", pl->valid & MB_PL_RANGE, pl->min_mw);
        add_num_if(o, "max_mw", pl->valid & MB_PL_RANGE, pl->max_mw);
        add_num_if(o, "default_mw", pl->valid & MB_PL_DEFAULT, pl->default_mw);
        cJSON_AddBoolToObject(o, "settable", (r->caps & MB_CAP_SET_POWER_LIMIT) != 0);
    } else {
        cJSON_AddNullToObject(d, "power_limit");
    }
}

/* MIG mode, profiles and instances. */
static void json_mig(cJSON *d, const struct mb_device_report *r)
{
    if (r->mode_rc == MB_OK) {
        cJSON *o = cJSON_AddObjectToObject(d, "mig_mode");
        cJSON_AddBoolToObject(o, "current", r->mode.current);
        cJSON_AddBoolToObject(o, "pending", r->mode.pending);
    } else {
        cJSON_AddNullToObject(d, "mig_mode");
    }

    if (r->prof_rc == MB_OK) {
        cJSON *a = cJSON_AddArrayToObject(d, "mig_profiles");
        for (size_t i = 0; i < r->n_prof; i++) {
            const struct mb_device_profile *p = &r->prof[i];
            cJSON *o = cJSON_CreateObject();
            cJSON_AddItemToArray(a, o);
            cJSON_AddStringToObject(o, "name", p->name);
            cJSON_AddNumberToObject(o, "driver_id", p->driver_id);
            cJSON_AddNumberToObject(o, "nvml_enum", p->nvml_enum);
            cJSON_AddNumberToObject(o, "compute_slices", p->compute_slices);
            cJSON_AddNumberToObject(o, "memory_slices", p->memory_slices);
            cJSON_AddNumberToObject(o, "max_count", p->max_count);
            cJSON_AddNumberToObject(o, "remaining", p->remaining);
            add_num_if(o, "sm_count", p->sm_count >= 0, p->sm_count);
            add_num_if(o, "memory_mib", p->memory_mib >= 0, (double)p->memory_mib);
        }
    } else {
        cJSON_AddNullToObject(d, "mig_profiles");
    }

    if (r->inst_rc == MB_OK) {
        cJSON *a = cJSON_AddArrayToObject(d, "mig_instances");
        for (size_t i = 0; i < r->n_inst; i++) {
            const struct mb_mig_instance *m = &r->inst[i];
            cJSON *o = cJSON_CreateObject();
            cJSON_AddItemToArray(a, o);
            cJSON_AddNumberToObject(o, "gi_id", m->gi_id);
            add_num_if(o, "ci_id", m->has_ci, m->ci_id);
            cJSON_AddStringToObject(o, "profile", m->profile_name);
            cJSON_AddNumberToObject(o, "profile_id", m->profile_id);
            cJSON_AddNumberToObject(o, "placement_start", m->placement.start);
            cJSON_AddNumberToObject(o, "placement_size", m->placement.size);
            add_num_if(o, "ci_profile_id", m->has_ci, m->ci_profile_id);
            add_num_if(o, "ci_slices", m->has_ci, m->ci_slices);
            add_str_or_null(o, "uuid", m->uuid);
            add_num_if(o, "mem_total_bytes", m->mem_valid, (double)m->mem_total_bytes);
            add_num_if(o, "mem_used_bytes", m->mem_valid, (double)m->mem_used_bytes);
        }
    } else {
        cJSON_AddNullToObject(d, "mig_instances");
    }
}

/* The compute processes on the GPU. */
static void json_processes(cJSON *d, const struct mb_device_report *r)
{
    if (r->proc_rc == MB_OK) {
        cJSON *a = cJSON_AddArrayToObject(d, "processes");
        for (size_t i = 0; i < r->n_proc; i++) {
            const struct mb_process *p = &r->proc[i];
            cJSON *o = cJSON_CreateObject();
            cJSON_AddItemToArray(a, o);
            cJSON_AddNumberToObject(o, "pid", p->pid);
            add_str_or_null(o, "name", p->name);
            add_num_if(o, "used_mem_bytes", p->used_mem_valid, (double)p->used_mem_bytes);
            add_num_if(o, "gi_id", p->gi_id >= 0, p->gi_id);
            add_num_if(o, "ci_id", p->ci_id >= 0, p->ci_id);
        }
    } else {
        cJSON_AddNullToObject(d, "processes");
    }
}

static cJSON *device_json(const struct mb_device_report *r)
{
    const struct mb_device_info *in = &r->info;
    cJSON *d = cJSON_CreateObject();
    cJSON_AddStringToObject(d, "spec", r->spec);
    cJSON_AddStringToObject(d, "backend", in->backend);
    cJSON_AddBoolToObject(d, "emulated", in->emulated);
    cJSON_AddNumberToObject(d, "index", in->index);
    add_str_or_null(d, "name", in->name);
    add_str_or_null(d, "model", in->model);
    add_str_or_null(d, "uuid", in->uuid);
    add_str_or_null(d, "driver_version", in->driver_version);
    add_str_or_null(d, "nvml_version", in->nvml_version);
    add_str_or_null(d, "pci_bus_id", in->pci_bus_id);
    add_num_if(d, "mem_total_bytes", in->mem_total_valid, (double)in->mem_total_bytes);
    add_num_if(d, "cpu_count", in->cpu_count > 0, in->cpu_count);
    cJSON_AddBoolToObject(d, "mig_capable", in->mig_capable);

    json_sensor(d, r);
    json_telemetry(d, r);
    json_power_limit(d, r);
    json_mig(d, r);
    json_processes(d, r);
    return d;
}

struct mb_devices_json {
    cJSON *root;
    cJSON *arr;
};

int mb_devices_json_create(struct mb_devices_json **out, struct mb_error *err)
{
    *out = NULL;
    struct mb_devices_json *j = calloc(1, sizeof(*j));
    if (j)
        j->root = cJSON_CreateObject();
    if (j && j->root)
        j->arr = cJSON_AddArrayToObject(j->root, "devices");
    if (!j || !j->arr) {
        mb_devices_json_destroy(j);
        return mb_error_set(err, MB_ENOMEM, "out of memory");
    }
    *out = j;
    return MB_OK;
}

int mb_devices_json_add(struct mb_devices_json *j, const struct mb_device_report *r,
                        struct mb_error *err)
{
    cJSON *d = device_json(r);
    if (!d || !cJSON_AddItemToArray(j->arr, d)) {
        cJSON_Delete(d);
        return mb_error_set(err, MB_ENOMEM, "out of memory");
    }
    return MB_OK;
}

char *mb_devices_json_text(const struct mb_devices_json *j)
{
    return cJSON_Print(j->root);
}

void mb_devices_json_destroy(struct mb_devices_json *j)
{
    if (!j)
        return;
    cJSON_Delete(j->root);
    free(j);
}
