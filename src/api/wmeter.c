/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Named windows over the meter (migbench/api.h): the handle API bindings use. The meter does the
 * measuring; this file maps names to the meter's window ids and renders a result as JSON.
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "migbench/api.h"
#include "migbench/meter.h"

/* How long an end waits for samples to cover the window: the longest interval and then some. */
#define WAIT_MS 30000

struct slot {
    bool used;
    int id;
    char name[MB_WMETER_NAME_MAX + 1];
};

struct mb_wmeter {
    struct mb_meter *meter;
    pthread_mutex_t lock; /* guards slots; never held while the meter is waited on */
    struct slot slots[MB_METER_MAX_WINDOWS];
};

int mb_wmeter_open(const char *device_spec, int64_t interval_ns, int64_t min_window_ns,
                   struct mb_wmeter **out, struct mb_error *err)
{
    if (!out || !device_spec || !device_spec[0])
        return mb_error_set(err, MB_EINVAL, "window meter: no device spec");
    *out = NULL;
    if (interval_ns < 0 || min_window_ns < 0)
        return mb_error_set(err, MB_EINVAL, "window meter: negative interval or minimum window");
    struct mb_wmeter *m = calloc(1, sizeof(*m));
    if (!m)
        return mb_error_set(err, MB_ENOMEM, "window meter: out of memory");
    struct mb_meter_opts o = {
        .device_spec = device_spec, .interval_ns = interval_ns, .min_window_ns = min_window_ns};
    int st = mb_meter_create(&o, &m->meter, err);
    if (st == MB_OK)
        st = mb_meter_start(m->meter, err);
    if (st != MB_OK) {
        mb_meter_destroy(m->meter);
        free(m);
        return st;
    }
    pthread_mutex_init(&m->lock, NULL);
    *out = m;
    return MB_OK;
}

void mb_wmeter_close(struct mb_wmeter *m)
{
    if (!m)
        return;
    mb_meter_destroy(m->meter);
    pthread_mutex_destroy(&m->lock);
    free(m);
}

static int check_name(const char *name, struct mb_error *err)
{
    if (!name || !name[0])
        return mb_error_set(err, MB_EINVAL, "window name is empty");
    size_t n = strnlen(name, MB_WMETER_NAME_MAX + 1);
    if (n > MB_WMETER_NAME_MAX)
        return mb_error_set(err, MB_EINVAL, "window name longer than %d bytes", MB_WMETER_NAME_MAX);
    for (size_t i = 0; i < n; i++)
        if (name[i] < 0x20 || name[i] > 0x7e)
            return mb_error_set(err, MB_EINVAL,
                                "window name holds a byte that is not printable "
                                "ASCII (position %zu)",
                                i);
    return MB_OK;
}

static struct slot *find(struct mb_wmeter *m, const char *name)
{
    for (size_t i = 0; i < MB_METER_MAX_WINDOWS; i++)
        if (m->slots[i].used && strcmp(m->slots[i].name, name) == 0)
            return &m->slots[i];
    return NULL;
}

int mb_wmeter_begin(struct mb_wmeter *m, const char *name, struct mb_error *err)
{
    if (!m)
        return mb_error_set(err, MB_EINVAL, "window meter: NULL handle");
    int st = check_name(name, err);
    if (st != MB_OK)
        return st;
    pthread_mutex_lock(&m->lock);
    struct slot *free_slot = NULL;
    for (size_t i = 0; i < MB_METER_MAX_WINDOWS && !free_slot; i++)
        if (!m->slots[i].used)
            free_slot = &m->slots[i];
    if (find(m, name))
        st = mb_error_set(err, MB_EBUSY, "window '%s' is already open", name);
    else if (!free_slot)
        st = mb_error_set(err, MB_ENORESOURCES, "window '%s': %d windows are open already", name,
                          MB_METER_MAX_WINDOWS);
    else
        st = mb_meter_window_begin(m->meter, mb_meter_now_ns(), &free_slot->id, err);
    if (st == MB_OK) {
        free_slot->used = true;
        memcpy(free_slot->name, name, strlen(name) + 1);
    }
    pthread_mutex_unlock(&m->lock);
    return st;
}

static void add_num(cJSON *o, const char *k, bool valid, double v)
{
    if (valid && isfinite(v))
        cJSON_AddNumberToObject(o, k, v);
    else
        cJSON_AddNullToObject(o, k);
}

static void add_str(cJSON *o, const char *k, const char *v)
{
    if (v && v[0])
        cJSON_AddStringToObject(o, k, v);
    else
        cJSON_AddNullToObject(o, k);
}

static void add_sensor(cJSON *o, const struct mb_sensor_info *s)
{
    cJSON *x = cJSON_AddObjectToObject(o, "sensor");
    cJSON_AddStringToObject(x, "power_kind", mb_power_kind_str(s->power_kind));
    add_num(x, "power_update_period_ms", s->power_update_period_ms > 0, s->power_update_period_ms);
    add_num(x, "power_avg_window_ms", s->power_avg_window_ms > 0, s->power_avg_window_ms);
    cJSON_AddBoolToObject(x, "has_energy_counter", s->has_energy_counter);
    add_num(x, "energy_update_period_ms", s->energy_update_period_ms > 0,
            s->energy_update_period_ms);
    add_str(x, "scope", s->scope);
    add_str(x, "source", s->source);
}

static void add_energy(cJSON *o, const struct mb_energy *e)
{
    cJSON_AddNumberToObject(o, "t0_s", (double)e->t0_ns * 1e-9);
    cJSON_AddNumberToObject(o, "t1_s", (double)e->t1_ns * 1e-9);
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
    cJSON_AddBoolToObject(o, "refused", e->refused);
    cJSON_AddBoolToObject(o, "truncated", e->truncated);
    add_str(o, "reason", e->reason);
    cJSON_AddNumberToObject(o, "power_shift_s", (double)e->power_shift_ns * 1e-9);
    cJSON_AddNumberToObject(o, "interval_s", (double)e->interval_ns * 1e-9);
    cJSON_AddNumberToObject(o, "min_window_s", (double)e->min_window_ns * 1e-9);
    add_sensor(o, &e->sensor);
}

/* Hands o over as text in *json; frees o. */
static int give_json(cJSON *o, char **json, struct mb_error *err)
{
    char *text = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    if (!text)
        return mb_error_set(err, MB_ENOMEM, "window meter: out of memory");
    *json = text;
    return MB_OK;
}

int mb_wmeter_end(struct mb_wmeter *m, const char *name, char **json, struct mb_error *err)
{
    if (!m || !json)
        return mb_error_set(err, MB_EINVAL, "window meter: NULL handle or result");
    *json = NULL;
    int64_t t1 = mb_meter_now_ns();
    int st = check_name(name, err);
    if (st != MB_OK)
        return st;
    pthread_mutex_lock(&m->lock);
    struct slot *s = find(m, name);
    int id = s ? s->id : -1;
    if (s) /* the id is ours alone from here: no other call can reach it by name */
        s->used = false;
    pthread_mutex_unlock(&m->lock);
    if (!s)
        return mb_error_set(err, MB_ENOTFOUND, "no window '%s' is open", name);
    struct mb_energy e;
    st = mb_meter_window_end(m->meter, id, t1, err);
    if (st == MB_OK)
        st = mb_meter_window_result(m->meter, id, WAIT_MS, &e, err);
    if (st != MB_OK)
        return mb_error_prefix(err, "window '%s': ", name);
    cJSON *o = cJSON_CreateObject();
    if (o) {
        cJSON_AddStringToObject(o, "name", name);
        add_energy(o, &e);
    }
    return give_json(o, json, err);
}

int mb_wmeter_info(struct mb_wmeter *m, char **json, struct mb_error *err)
{
    if (!m || !json)
        return mb_error_set(err, MB_EINVAL, "window meter: NULL handle or result");
    *json = NULL;
    struct mb_device_info info;
    struct mb_sensor_info sensor;
    mb_meter_device(m->meter, &info, &sensor);
    cJSON *o = cJSON_CreateObject();
    if (o) {
        cJSON_AddStringToObject(o, "backend", info.backend);
        cJSON_AddBoolToObject(o, "emulated", info.emulated);
        add_str(o, "name", info.name);
        add_str(o, "model", info.model);
        add_str(o, "uuid", info.uuid);
        add_str(o, "driver_version", info.driver_version);
        add_sensor(o, &sensor);
        cJSON_AddNumberToObject(o, "interval_s", (double)mb_meter_interval_ns(m->meter) * 1e-9);
        cJSON_AddNumberToObject(o, "min_window_s", (double)mb_meter_min_window_ns(m->meter) * 1e-9);
    }
    return give_json(o, json, err);
}

void mb_free(void *p)
{
    free(p);
}
