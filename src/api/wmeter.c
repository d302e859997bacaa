/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Named windows over the meter (migbench/api.h): the handle API bindings use. The meter does the
 * measuring; this file maps names to the meter's window ids and renders a result as JSON.
 */
#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "migbench/api.h"
#include "migbench/meter.h"
#include "power/window_wait.h"
#include "results/energy_json.h"

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

static void add_energy(cJSON *o, const struct mb_energy *e)
{
    cJSON_AddNumberToObject(o, "t0_s", (double)e->t0_ns * 1e-9);
    cJSON_AddNumberToObject(o, "t1_s", (double)e->t1_ns * 1e-9);
    mb__energy_json_add(o, e);
    cJSON_AddNumberToObject(o, "power_shift_s", (double)e->power_shift_ns * 1e-9);
    cJSON_AddNumberToObject(o, "interval_s", (double)e->interval_ns * 1e-9);
    cJSON_AddNumberToObject(o, "min_window_s", (double)e->min_window_ns * 1e-9);
    mb__sensor_json_add(cJSON_AddObjectToObject(o, "sensor"), &e->sensor);
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
        st = mb_window_result(m->meter, id, false, &e, err); /* the runner's and measure's wait */
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
        mb__json_str_or_null(o, "name", info.name);
        mb__json_str_or_null(o, "model", info.model);
        mb__json_str_or_null(o, "uuid", info.uuid);
        mb__json_str_or_null(o, "driver_version", info.driver_version);
        mb__sensor_json_add(cJSON_AddObjectToObject(o, "sensor"), &sensor);
        cJSON_AddNumberToObject(o, "interval_s", (double)mb_meter_interval_ns(m->meter) * 1e-9);
        cJSON_AddNumberToObject(o, "min_window_s", (double)mb_meter_min_window_ns(m->meter) * 1e-9);
    }
    return give_json(o, json, err);
}

void mb_free(void *p)
{
    free(p);
}
