/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The emulated GPU's identity, telemetry, sensor, caps and power-limit operations: what the power
 * model (emu_power.c) gives, reported through the operation framing (emu_state.c).
 */
#include "device/emu_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "migbench/clock.h"

/* ---- identity, telemetry, sensor ------------------------------------------------------- */

int mb__emu_info(struct mb_device *dev, struct mb_device_info *out, struct mb_error *err)
{
    struct emu *e = as_emu(dev);
    int rc = mb__emu_op_begin(e, OP_info, err);
    if (rc)
        return rc;
    memset(out, 0, sizeof(*out));
    snprintf(out->backend, sizeof(out->backend), "emu");
    out->emulated = true;
    out->index = e->index;
    snprintf(out->name, sizeof(out->name), "%s", e->defs.vendor_name);
    snprintf(out->model, sizeof(out->model), "%s", e->model->name);
    snprintf(out->uuid, sizeof(out->uuid), "%s", e->uuid);
    if (e->model->total_memory_mib > 0) {
        out->mem_total_bytes = (uint64_t)e->model->total_memory_mib * MIB;
        out->mem_total_valid = true;
    }
    out->mig_capable = true;
    return mb__emu_op_end(e, MB_OK, false, err);
}

static unsigned long long counter_mj(const struct emu *e, int64_t now)
{
    int64_t t = now;
    if (e->energy_update_ms) {
        int64_t q = (int64_t)e->energy_update_ms * 1000000;
        t = (now / q) * q;
    }
    double j = mb__emu_energy_at(e, t);
    unsigned long long mj = e->energy0_mj + (unsigned long long)llround(j * 1000.0);
    return e->wrap_mj ? mj % e->wrap_mj : mj;
}

int mb__emu_telemetry(struct mb_device *dev, struct mb_telemetry *out, struct mb_error *err)
{
    struct emu *e = as_emu(dev);
    int rc = mb__emu_op_begin(e, OP_telemetry, err);
    if (rc)
        return rc;
    memset(out, 0, sizeof(*out));
    int64_t now = mb__emu_now(e);
    out->t_ns = e->manual_clock ? e->open_ns + now : mb_clock_monotonic_ns();
    double inst = mb__emu_sensor_reading(e, now, e->sensor == MB_POWER_INSTANT ? e->avg_ms : 25);
    out->power_instant_mw = mb__emu_mw(inst);
    out->valid |= MB_TEL_POWER_INSTANT;
    if (e->sensor == MB_POWER_AVERAGED || e->sens.average_field == 1) {
        double avg =
            mb__emu_sensor_reading(e, now, e->sensor == MB_POWER_AVERAGED ? e->avg_ms : 1000);
        out->power_avg_mw = mb__emu_mw(avg);
        out->valid |= MB_TEL_POWER_AVG;
    }
    out->power_mw = e->sensor == MB_POWER_AVERAGED ? out->power_avg_mw : out->power_instant_mw;
    out->valid |= MB_TEL_POWER;
    if (e->counter) {
        out->energy_mj = counter_mj(e, now);
        out->valid |= MB_TEL_ENERGY;
    }
    double load = mb__emu_current_load(e, now);
    /* NVML: utilisation is not supported on a MIG-enabled GPU. */
    if (!e->st.mig_current) {
        out->util_gpu_pct = (uint32_t)lround(load * 100.0);
        out->util_mem_pct = (uint32_t)lround(load * 40.0);
        out->valid |= MB_TEL_UTIL_GPU | MB_TEL_UTIL_MEM;
    }
    out->mem_used_bytes = mb__emu_procs_mem(e, -1);
    out->valid |= MB_TEL_MEM_USED;
    double p = mb__emu_power_at(e, now);
    double speed = mb__emu_speed_now(e);
    out->clock_sm_mhz =
        p > e->idle_w ? (uint32_t)lround(e->defs.sm_max_mhz * speed) : e->defs.sm_idle_mhz;
    out->clock_mem_mhz = e->defs.mem_mhz;
    out->temp_c = (int32_t)lround(30.0 + (e->max_w > 0 ? 50.0 * p / e->max_w : 0.0));
    out->throttle_reasons = speed < 1.0 ? MB_THROTTLE_SW_POWER_CAP : 0;
    out->power_limit_mw = mb__emu_mw(mb__emu_limit_w(e));
    out->valid |=
        MB_TEL_CLOCK_SM | MB_TEL_CLOCK_MEM | MB_TEL_TEMP | MB_TEL_THROTTLE | MB_TEL_POWER_LIMIT;
    return mb__emu_op_end(e, MB_OK, false, err);
}

uint32_t mb__emu_caps(struct mb_device *dev)
{
    struct emu *e = as_emu(dev);
    uint32_t caps = MB_CAP_EMULATED | MB_CAP_GPU | MB_CAP_MPS | MB_CAP_POWER;
    if (e->model->n_profiles > 0)
        caps |= MB_CAP_MIG | MB_CAP_SET_MIG_MODE;
    if (e->counter)
        caps |= MB_CAP_ENERGY_COUNTER;
    if (!e->trace)
        caps |= MB_CAP_SET_POWER_LIMIT;
    return caps;
}

int mb__emu_sensor(struct mb_device *dev, struct mb_sensor_info *out, struct mb_error *err)
{
    struct emu *e = as_emu(dev);
    int rc = mb__emu_op_begin(e, OP_sensor, err);
    if (rc)
        return rc;
    memset(out, 0, sizeof(*out));
    out->power_kind = e->sensor;
    out->power_update_period_ms = (uint32_t)e->update_ms;
    out->power_avg_window_ms = (uint32_t)e->avg_ms;
    out->has_instant = true;
    out->has_average = e->sensor == MB_POWER_AVERAGED || e->sens.average_field == 1;
    out->has_energy_counter = e->counter;
    if (e->counter) {
        out->energy_update_period_ms = (uint32_t)e->energy_update_ms;
        out->energy_resolution_mj = 1;
        out->energy_wrap_mj = e->wrap_mj;
    }
    snprintf(out->scope, sizeof(out->scope), "%s", e->sens.scope);
    snprintf(out->source, sizeof(out->source),
             "emulated: %s power, %s %llu ms window every %llu ms; energy %s",
             e->trace ? "trace" : "gpumodel", mb_power_kind_str(e->sensor), e->avg_ms, e->update_ms,
             !e->counter           ? "none"
             : e->energy_update_ms ? "stepped"
                                   : "exact");
    return mb__emu_op_end(e, MB_OK, false, err);
}

/* ---- power limit ------------------------------------------------------------------------ */

int mb__emu_power_limit(struct mb_device *dev, struct mb_power_limit *out, struct mb_error *err)
{
    struct emu *e = as_emu(dev);
    int rc = mb__emu_op_begin(e, OP_power_limit, err);
    if (rc)
        return rc;
    memset(out, 0, sizeof(*out));
    out->limit_mw = out->enforced_mw = mb__emu_mw(mb__emu_limit_w(e));
    out->default_mw = out->max_mw = mb__emu_mw(e->max_w);
    out->min_mw = mb__emu_mw(e->min_limit_w);
    int64_t now = mb__emu_now(e);
    double speed = mb__emu_speed_now(e);
    (void)now;
    out->throttle_reasons = speed < 1.0 ? MB_THROTTLE_SW_POWER_CAP : 0;
    out->valid = MB_PL_LIMIT | MB_PL_ENFORCED | MB_PL_RANGE | MB_PL_DEFAULT | MB_PL_THROTTLE;
    return mb__emu_op_end(e, MB_OK, false, err);
}

int mb__emu_set_power_limit(struct mb_device *dev, uint32_t limit_mw, struct mb_error *err)
{
    struct emu *e = as_emu(dev);
    if (e->trace)
        return mb_error_set(err, MB_EUNSUPPORTED,
                            "emu: the power limit cannot be set while a power trace plays");
    int rc = mb__emu_op_begin(e, OP_set_power_limit, err);
    if (rc)
        return rc;
    uint32_t lo = mb__emu_mw(e->min_limit_w), hi = mb__emu_mw(e->max_w);
    if (e->limit_denied)
        rc = mb_error_set(err, MB_EPERM,
                          "emu %s: setting the power limit needs root (emulated: limit_perm=deny)",
                          e->model->name);
    else if (limit_mw < lo || limit_mw > hi)
        rc =
            mb_error_set(err, MB_ERANGE, "emu %s: power limit %u mW is outside the range %u..%u mW",
                         e->model->name, limit_mw, lo, hi);
    if (rc != MB_OK)
        return mb__emu_op_end(e, rc, false, err);
    /* The default is stored as "never set", so a restored GPU's state reads as it did before. */
    e->st.limit_mw = limit_mw == hi ? 0 : limit_mw;
    return mb__emu_op_end(e, MB_OK, true, err);
}
