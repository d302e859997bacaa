/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The nvml backend's telemetry, power limit and power-sensor description (see nvml.c).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/text_internal.h"
#include "device/nvml_internal.h"
#include "migbench/catalog.h"
#include "migbench/clock.h"
#include "migbench/device.h"

/* ---- telemetry and sensor ------------------------------------------------------------------ */

static bool name_has(const struct nvml_dev *d, const char *needle)
{
    return strstr(d->name, needle) != NULL;
}

/* GA100 boards: A100, A30 and A800 read an instantaneous power value. */
static bool is_ga100(const struct nvml_dev *d)
{
    return name_has(d, "A100") || name_has(d, "A30") || name_has(d, "A800");
}

static bool is_grace_module(const struct nvml_dev *d)
{
    return name_has(d, "GH200") || name_has(d, "GB200") || name_has(d, "Grace");
}

/* Reads fields 185/186/191 (GPU scope) in one call; each entry's own return says if it is valid. */
static nvmlReturn_t read_fields(struct nvml_dev *d, nvmlFieldValue_t fv[3])
{
    memset(fv, 0, 3 * sizeof(*fv));
    fv[0].fieldId = NVML_FI_DEV_POWER_AVERAGE;
    fv[1].fieldId = NVML_FI_DEV_POWER_INSTANT;
    fv[2].fieldId = NVML_FI_DEV_ENERGY;
    for (int i = 0; i < 3; i++) {
        fv[i].scopeId = NVML_POWER_SCOPE_GPU;
        fv[i].nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
    }
    if (!d->f.field_values)
        return NVML_ERROR_FUNCTION_NOT_FOUND;
    return d->f.field_values(d->h, 3, fv);
}

static bool field_u64(const nvmlFieldValue_t *fv, uint64_t *out)
{
    if (fv->nvmlReturn != NVML_SUCCESS)
        return false;
    switch (fv->valueType) {
    case NVML_VALUE_TYPE_UNSIGNED_INT:
        *out = fv->value.uiVal;
        return true;
    case NVML_VALUE_TYPE_UNSIGNED_LONG:
        *out = fv->value.ulVal;
        return true;
    case NVML_VALUE_TYPE_UNSIGNED_LONG_LONG:
        *out = fv->value.ullVal;
        return true;
    case NVML_VALUE_TYPE_SIGNED_LONG_LONG:
        if (fv->value.sllVal < 0)
            return false;
        *out = (uint64_t)fv->value.sllVal;
        return true;
    case NVML_VALUE_TYPE_SIGNED_INT:
        if (fv->value.siVal < 0)
            return false;
        *out = (uint64_t)fv->value.siVal;
        return true;
    case NVML_VALUE_TYPE_DOUBLE:
        if (!(fv->value.dVal >= 0.0) || fv->value.dVal > 1.8e19)
            return false;
        *out = (uint64_t)fv->value.dVal;
        return true;
    default:
        return false;
    }
}

static uint32_t clamp_u32(uint64_t v)
{
    return v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

/* Any reading that says the GPU is gone fails the whole call; anything else unsupported or failing
 * just leaves its field invalid. */
#define LOST_CHECK(what)                                                                           \
    do {                                                                                           \
        if (r == NVML_ERROR_GPU_IS_LOST)                                                           \
            return nv_fail(d, r, what, err);                                                       \
    } while (0)

/* Power (default, averaged, instantaneous) and the energy counter. */
static int tel_power(struct nvml_dev *d, struct mb_telemetry *out, struct mb_error *err)
{
    nvmlReturn_t r;
    unsigned u;
    unsigned long long ull;
    if (d->f.power_usage) {
        r = d->f.power_usage(d->h, &u);
        LOST_CHECK("read power");
        if (r == NVML_SUCCESS) {
            out->power_mw = u;
            out->valid |= MB_TEL_POWER;
        }
    }
    nvmlFieldValue_t fv[3];
    r = read_fields(d, fv);
    LOST_CHECK("read power fields");
    uint64_t v;
    if (r == NVML_SUCCESS) {
        if (field_u64(&fv[0], &v)) {
            out->power_avg_mw = clamp_u32(v);
            out->valid |= MB_TEL_POWER_AVG;
        }
        if (field_u64(&fv[1], &v)) {
            out->power_instant_mw = clamp_u32(v);
            out->valid |= MB_TEL_POWER_INSTANT;
        }
    }
    if (d->f.total_energy) {
        r = d->f.total_energy(d->h, &ull);
        LOST_CHECK("read the energy counter");
        if (r == NVML_SUCCESS) {
            out->energy_mj = ull;
            out->valid |= MB_TEL_ENERGY;
        }
    }
    if (!(out->valid & MB_TEL_ENERGY) && field_u64(&fv[2], &v)) {
        out->energy_mj = v;
        out->valid |= MB_TEL_ENERGY;
    }
    return MB_OK;
}

/* Utilisation and memory in use. */
static int tel_activity(struct nvml_dev *d, struct mb_telemetry *out, struct mb_error *err)
{
    nvmlReturn_t r;
    if (d->f.utilization) {
        nvmlUtilization_t ut;
        r = d->f.utilization(d->h, &ut);
        LOST_CHECK("read utilisation");
        if (r == NVML_SUCCESS) {
            out->util_gpu_pct = ut.gpu;
            out->util_mem_pct = ut.memory;
            out->valid |= MB_TEL_UTIL_GPU | MB_TEL_UTIL_MEM;
        }
    }
    nvmlMemory_v2_t m2 = {.version = nvmlMemory_v2};
    nvmlMemory_t m1;
    if (d->f.memory_v2) {
        r = d->f.memory_v2(d->h, &m2);
        LOST_CHECK("read memory");
        if (r == NVML_SUCCESS) {
            out->mem_used_bytes = m2.used;
            out->valid |= MB_TEL_MEM_USED;
        }
    }
    if (!(out->valid & MB_TEL_MEM_USED) && d->f.memory) {
        r = d->f.memory(d->h, &m1);
        LOST_CHECK("read memory");
        if (r == NVML_SUCCESS) {
            out->mem_used_bytes = m1.used;
            out->valid |= MB_TEL_MEM_USED;
        }
    }
    return MB_OK;
}

/* Clocks, temperature, clocks-event (throttle) reasons and the enforced power limit. */
static int tel_clocks(struct nvml_dev *d, struct mb_telemetry *out, struct mb_error *err)
{
    nvmlReturn_t r;
    unsigned u;
    unsigned long long ull;
    if (d->f.clock_info) {
        r = d->f.clock_info(d->h, NVML_CLOCK_SM, &u);
        LOST_CHECK("read the SM clock");
        if (r == NVML_SUCCESS) {
            out->clock_sm_mhz = u;
            out->valid |= MB_TEL_CLOCK_SM;
        }
        r = d->f.clock_info(d->h, NVML_CLOCK_MEM, &u);
        LOST_CHECK("read the memory clock");
        if (r == NVML_SUCCESS) {
            out->clock_mem_mhz = u;
            out->valid |= MB_TEL_CLOCK_MEM;
        }
    }
    if (d->f.temperature) {
        r = d->f.temperature(d->h, NVML_TEMPERATURE_GPU, &u);
        LOST_CHECK("read the temperature");
        if (r == NVML_SUCCESS && u <= INT32_MAX) {
            out->temp_c = (int32_t)u;
            out->valid |= MB_TEL_TEMP;
        }
    }
    if (d->f.clocks_event_reasons) {
        r = d->f.clocks_event_reasons(d->h, &ull);
        LOST_CHECK("read clocks-event reasons");
        if (r == NVML_SUCCESS) {
            out->throttle_reasons = ull;
            out->valid |= MB_TEL_THROTTLE;
        }
    }
    if (d->f.enforced_power_limit) {
        r = d->f.enforced_power_limit(d->h, &u);
        LOST_CHECK("read the power limit");
        if (r == NVML_SUCCESS) {
            out->power_limit_mw = u;
            out->valid |= MB_TEL_POWER_LIMIT;
        }
    }
    return MB_OK;
}
#undef LOST_CHECK

int nvml_telemetry(struct mb_device *dev, struct mb_telemetry *out, struct mb_error *err)
{
    struct nvml_dev *d = to_nv(dev);
    memset(out, 0, sizeof(*out));
    out->t_ns = mb_clock_monotonic_ns();
    int rc = tel_power(d, out, err);
    if (rc == MB_OK)
        rc = tel_activity(d, out, err);
    if (rc == MB_OK)
        rc = tel_clocks(d, out, err);
    return rc;
}

uint32_t nvml_caps(struct mb_device *dev)
{
    struct nvml_dev *d = to_nv(dev);
    uint32_t caps = MB_CAP_GPU | MB_CAP_MPS;
    unsigned u, cur, pend;
    unsigned long long ull;
    if (d->f.power_usage && d->f.power_usage(d->h, &u) == NVML_SUCCESS)
        caps |= MB_CAP_POWER;
    if (d->f.total_energy && d->f.total_energy(d->h, &ull) == NVML_SUCCESS)
        caps |= MB_CAP_ENERGY_COUNTER;
    if (d->f.get_mig_mode && d->f.get_mig_mode(d->h, &cur, &pend) == NVML_SUCCESS) {
        caps |= MB_CAP_MIG;
        if (d->f.set_mig_mode)
            caps |= MB_CAP_SET_MIG_MODE;
    }
    /* Settable only where the range can be read too: a limit is never set blind. */
    if (d->f.set_power_limit && d->f.power_limit_range &&
        d->f.power_limit_range(d->h, &cur, &pend) == NVML_SUCCESS)
        caps |= MB_CAP_SET_POWER_LIMIT;
    return caps;
}

/* One optional reading of the power limit: a field left invalid unless it reads; a lost GPU fails.
 */
static int limit_read(struct nvml_dev *d, nvml_dev_uint_fn fn, const char *what, uint32_t *out,
                      uint32_t bit, uint32_t *valid, struct mb_error *err)
{
    unsigned u;
    if (!fn)
        return MB_OK;
    nvmlReturn_t r = fn(d->h, &u);
    if (r == NVML_ERROR_GPU_IS_LOST)
        return nv_fail(d, r, what, err);
    if (r == NVML_SUCCESS) {
        *out = u;
        *valid |= bit;
    }
    return MB_OK;
}

int nvml_power_limit(struct mb_device *dev, struct mb_power_limit *out, struct mb_error *err)
{
    struct nvml_dev *d = to_nv(dev);
    memset(out, 0, sizeof(*out));
    int rc;
    if ((rc = limit_read(d, d->f.power_limit, "read the power limit", &out->limit_mw, MB_PL_LIMIT,
                         &out->valid, err)) ||
        (rc = limit_read(d, d->f.enforced_power_limit, "read the enforced power limit",
                         &out->enforced_mw, MB_PL_ENFORCED, &out->valid, err)) ||
        (rc = limit_read(d, d->f.power_limit_default, "read the default power limit",
                         &out->default_mw, MB_PL_DEFAULT, &out->valid, err)))
        return rc;
    if (d->f.power_limit_range) {
        unsigned lo, hi;
        nvmlReturn_t r = d->f.power_limit_range(d->h, &lo, &hi);
        if (r == NVML_ERROR_GPU_IS_LOST)
            return nv_fail(d, r, "read the power limit range", err);
        if (r == NVML_SUCCESS && lo <= hi) {
            out->min_mw = lo;
            out->max_mw = hi;
            out->valid |= MB_PL_RANGE;
        }
    }
    if (d->f.clocks_event_reasons) {
        unsigned long long ull;
        nvmlReturn_t r = d->f.clocks_event_reasons(d->h, &ull);
        if (r == NVML_ERROR_GPU_IS_LOST)
            return nv_fail(d, r, "read clocks-event reasons", err);
        if (r == NVML_SUCCESS) {
            out->throttle_reasons = ull;
            out->valid |= MB_PL_THROTTLE;
        }
    }
    if (!(out->valid & (MB_PL_LIMIT | MB_PL_ENFORCED)))
        return mb_error_set(err, MB_EUNSUPPORTED, "nvml:%u: this GPU reports no power limit",
                            d->index);
    return MB_OK;
}

int nvml_set_power_limit(struct mb_device *dev, uint32_t limit_mw, struct mb_error *err)
{
    struct nvml_dev *d = to_nv(dev);
    if (!d->f.set_power_limit)
        return nv_missing(d, "set the power limit", "nvmlDeviceSetPowerManagementLimit", err);
    char what[64];
    snprintf(what, sizeof(what), "set the power limit to %u mW", limit_mw);
    nvmlReturn_t r = d->f.set_power_limit(d->h, limit_mw);
    if (r == NVML_SUCCESS)
        return MB_OK;
    if (r == NVML_ERROR_INVALID_ARGUMENT) {
        unsigned lo = 0, hi = 0;
        if (d->f.power_limit_range && d->f.power_limit_range(d->h, &lo, &hi) == NVML_SUCCESS)
            return mb_error_set(err, MB_ERANGE,
                                "nvml:%u: %s: outside the range %u..%u mW (NVML %d: %s)", d->index,
                                what, lo, hi, r, nv_str(d, r));
        return mb_error_set(err, MB_ERANGE, "nvml:%u: %s: out of range (NVML %d: %s)", d->index,
                            what, r, nv_str(d, r));
    }
    if (r == NVML_ERROR_NO_PERMISSION)
        return mb_error_set(err, MB_EPERM,
                            "nvml:%u: %s: permission denied: run as root or configure a power "
                            "helper (docs/power.md) (NVML %d: %s)",
                            d->index, what, r, nv_str(d, r));
    return nv_fail(d, r, what, err);
}

/* A GPU the catalog has no sensor facts for (or no power reading): NVML's documented rule by
 * architecture or name. */
static void sensor_from_rules(const struct nvml_dev *d, bool has_power, struct mb_sensor_info *out)
{
    /*
     * NVML documents nvmlDeviceGetPowerUsage as instantaneous on GA100 and older and as a 1 s
     * average on Ampere other than GA100 and everything newer. The ~100 ms publication period
     * and A100's 25 ms window are not in NVIDIA's docs: they come from the literature (Yang et
     * al., SC'24; Zeus), see shared/reference/energy-measurement.md §2.
     */
    const char *basis;
    bool ga100 = is_ga100(d);
    if (!has_power) {
        out->power_kind = MB_POWER_NONE;
        basis = "no power reading";
    } else if (d->arch != NVML_DEVICE_ARCH_UNKNOWN) {
        if (d->arch > NVML_DEVICE_ARCH_AMPERE || (d->arch == NVML_DEVICE_ARCH_AMPERE && !ga100))
            out->power_kind = MB_POWER_AVERAGED;
        else
            out->power_kind = MB_POWER_INSTANT;
        basis = "architecture";
    } else if (ga100) {
        out->power_kind = MB_POWER_INSTANT;
        basis = "GPU name";
    } else if (name_has(d, "H100") || name_has(d, "H200") || name_has(d, "H800") ||
               name_has(d, "H20") || name_has(d, "B200") || name_has(d, "B300") ||
               name_has(d, "GH200") || name_has(d, "GB200")) {
        out->power_kind = MB_POWER_AVERAGED;
        basis = "GPU name";
    } else {
        out->power_kind = MB_POWER_UNKNOWN;
        basis = "unknown architecture";
    }
    bool ampere_or_later = (d->arch != NVML_DEVICE_ARCH_UNKNOWN)
                               ? d->arch >= NVML_DEVICE_ARCH_AMPERE
                               : out->power_kind == MB_POWER_AVERAGED || ga100;
    if (out->power_kind == MB_POWER_AVERAGED)
        out->power_avg_window_ms = 1000;
    else if (out->power_kind == MB_POWER_INSTANT && ga100)
        out->power_avg_window_ms = 25;
    if (has_power && ampere_or_later)
        out->power_update_period_ms = 100;
    if (out->has_energy_counter && ampere_or_later)
        out->energy_update_period_ms = 100;
    out->energy_wrap_mj = 0; /* a 64-bit millijoule counter: no wrap within a GPU's life */
    mb__copy_str(out->scope, sizeof(out->scope), is_grace_module(d) ? "module (GPU+CPU)" : "board");
    snprintf(out->source, sizeof(out->source),
             "NVML docs (kind from %s); periods from the literature", basis);
}

/* The catalog's facts for the model, with its status word; the counter's period only when the
 * device has a counter. */
static void sensor_from_catalog(const struct nvml_dev *d, struct mb_sensor_info *out)
{
    const struct mb_model_sensor *c = &d->sens;
    out->power_kind = c->power_kind;
    out->power_avg_window_ms = c->power_avg_window_ms;
    out->power_update_period_ms = c->power_update_period_ms;
    if (out->has_energy_counter)
        out->energy_update_period_ms = c->energy_update_period_ms;
    out->energy_wrap_mj = 0; /* a 64-bit millijoule counter: no wrap within a GPU's life */
    mb__copy_str(out->scope, sizeof(out->scope),
                 c->scope[0]          ? c->scope
                 : is_grace_module(d) ? "module (GPU+CPU)"
                                      : "board");
    snprintf(out->source, sizeof(out->source), "catalog %.32s (%s): NVML docs, literature",
             d->model, mb_value_status_str(c->status));
}

/* Why a reading is missing, in NVIDIA's words: "nvmlDeviceGetTotalEnergyConsumption answered NVML
 * 3: Not Supported", or the symbol the library lacks. */
static void unsupported_note(const struct nvml_dev *d, const char *sym, nvmlReturn_t r, char *out,
                             size_t cap)
{
    if (r == NVML_ERROR_FUNCTION_NOT_FOUND)
        snprintf(out, cap, "libnvidia-ml lacks %s", sym);
    else
        snprintf(out, cap, "%s answered NVML %d: %s", sym, (int)r, nv_str(d, r));
}

int nvml_sensor(struct mb_device *dev, struct mb_sensor_info *out, struct mb_error *err)
{
    struct nvml_dev *d = to_nv(dev);
    memset(out, 0, sizeof(*out));
    unsigned u;
    nvmlReturn_t r = NVML_ERROR_FUNCTION_NOT_FOUND;
    if (d->f.power_usage) {
        r = d->f.power_usage(d->h, &u);
        if (r == NVML_ERROR_GPU_IS_LOST)
            return nv_fail(d, r, "read power", err);
    }
    bool has_power = r == NVML_SUCCESS;
    if (!has_power)
        unsupported_note(d, "nvmlDeviceGetPowerUsage", r, out->power_note, sizeof(out->power_note));
    nvmlFieldValue_t fv[3];
    uint64_t v;
    if (read_fields(d, fv) == NVML_SUCCESS) {
        out->has_average = field_u64(&fv[0], &v);
        out->has_instant = field_u64(&fv[1], &v);
        out->has_energy_counter = field_u64(&fv[2], &v);
    }
    unsigned long long ull;
    r = d->f.total_energy ? d->f.total_energy(d->h, &ull) : NVML_ERROR_FUNCTION_NOT_FOUND;
    if (r == NVML_SUCCESS)
        out->has_energy_counter = true;
    else if (!out->has_energy_counter)
        unsupported_note(d, "nvmlDeviceGetTotalEnergyConsumption", r, out->energy_note,
                         sizeof(out->energy_note));

    /* The catalog's facts for a model it knows; NVML's documented rule for any other GPU. */
    if (has_power && d->sens.known && d->sens.power_kind != MB_POWER_UNKNOWN)
        sensor_from_catalog(d, out);
    else
        sensor_from_rules(d, has_power, out);
    return MB_OK;
}
