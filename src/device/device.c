/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The device dispatcher: the backend table, opening a spec, the checked wrappers. It calls the
 * backends (through their ops tables); they call only device_spec.c, never this file.
 */
#include "migbench/device.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/backends.h"
#include "device/state.h"

/*
 * Every backend, in the order "auto" tries them. A backend is added here by the commit that adds
 * its file; there is no constructor self-registration (STYLE.md).
 */
static const struct mb_device_ops *const backends[] = {
    &mb__nvml_ops,
    &mb__host_ops,
    &mb__emu_ops,
};

#define N_BACKENDS (sizeof(backends) / sizeof(backends[0]))

static const struct mb_device_ops *find_backend(const char *name, size_t len)
{
    for (size_t i = 0; i < N_BACKENDS; i++)
        if (strlen(backends[i]->name) == len && strncmp(backends[i]->name, name, len) == 0)
            return backends[i];
    return NULL;
}

int mb__device_open_ops(const struct mb_device_ops *ops, const char *args, const char *spec,
                        struct mb_device **out, struct mb_error *err)
{
    if (!ops || !out)
        return mb_error_set(err, MB_EINVAL, "mb__device_open_ops: NULL argument");
    *out = NULL;
    if (ops->version != MB_DEVICE_OPS_VERSION || !ops->name || !ops->open || !ops->close ||
        !ops->info || !ops->telemetry || !ops->sensor || !ops->caps)
        return mb_error_set(err, MB_EINVAL,
                            "device backend '%s' has ops version %d (this build expects %d) or "
                            "lacks a required operation",
                            ops->name ? ops->name : "?", ops->version, MB_DEVICE_OPS_VERSION);
    struct mb_device *dev = NULL;
    int rc = ops->open(args, &dev, err);
    if (rc != MB_OK) {
        char sb[96];
        if (err && spec && !strstr(err->msg, spec))
            mb_error_prefix(err, "device '%s': ", mb__spec_short(spec, sb, sizeof(sb)));
        return rc;
    }
    dev->ops = ops;
    *out = dev;
    return MB_OK;
}

/* Why the last "auto" open in this thread used the host instead of an NVIDIA GPU. */
static _Thread_local char fallback_note[sizeof(((struct mb_error *)0)->msg) + 64];

const char *mb_device_fallback_note(void)
{
    return fallback_note;
}

static void note_fallback(const struct mb_error *why)
{
    snprintf(fallback_note, sizeof(fallback_note), "no NVIDIA GPU through NVML, using the host: %s",
             why->msg[0] ? why->msg : "no nvml backend in this build");
}

bool mb__device_state_in_file(const char *spec)
{
    return spec && find_backend(spec, strcspn(spec, ":")) == &mb__emu_ops;
}

bool mb__device_state_file(const char *spec, char *out, size_t cap)
{
    if (!spec || cap == 0 || !mb__device_state_in_file(spec))
        return false;
    size_t nlen = strcspn(spec, ":");
    if (spec[nlen] != ':')
        return false;
    /* emu:MODEL[:options]: the options follow the model. */
    const char *p = spec + nlen + 1;
    p += strcspn(p, ":,");
    char key[MB__SPEC_KEY_MAX], val[MB__SPEC_VAL_MAX];
    while (mb__spec_next(&p, spec, key, val, NULL) == MB_OK)
        if (strcmp(key, "state") == 0) {
            if (!val[0] || strlen(val) >= cap)
                return false;
            memcpy(out, val, strlen(val) + 1);
            return true;
        }
    return false;
}

/*
 * True (with the error copied to err) when opening NVML failed because the library named in
 * MIGBENCH_NVML_LIBRARY does not load: a mistake to report, not a reason to fall back to the host.
 */
static bool named_library_failed(const struct mb_error *nvml_err, struct mb_error *err)
{
    const char *lib = getenv("MIGBENCH_NVML_LIBRARY");
    if (!lib || !*lib || nvml_err->status != MB_ELIB)
        return false;
    /* The library loaded but found no driver (NVML's DRIVER_NOT_LOADED, also MB_ELIB): that is
     * the no-GPU case, and auto falls back to the host with a note. */
    if (!strstr(nvml_err->msg, "(from MIGBENCH_NVML_LIBRARY)") && !strstr(nvml_err->msg, " lacks "))
        return false;
    if (err)
        *err = *nvml_err;
    return true;
}

int mb_device_open(const char *spec, struct mb_device **out, struct mb_error *err)
{
    if (!out)
        return mb_error_set(err, MB_EINVAL, "mb_device_open: NULL out");
    *out = NULL;
    if (!spec || !spec[0])
        return mb_error_set(err, MB_EINVAL,
                            "empty device spec (expected auto, host, nvml:N, "
                            "nvml:UUID or emu:MODEL[:option=value...])");
    if (strcmp(spec, "auto") == 0) {
        /* The first NVIDIA GPU if NVML loads and has one, else the host. */
        const struct mb_device_ops *nvml = find_backend("nvml", 4);
        struct mb_error why;
        mb_error_clear(&why);
        fallback_note[0] = '\0';
        if (nvml && mb__device_open_ops(nvml, "0", spec, out, &why) == MB_OK)
            return MB_OK;
        if (nvml && named_library_failed(&why, err))
            return err ? err->status : MB_ELIB;
        note_fallback(&why);
        return mb__device_open_ops(&mb__host_ops, NULL, spec, out, err);
    }
    size_t nlen = strcspn(spec, ":");
    const struct mb_device_ops *ops = find_backend(spec, nlen);
    if (!ops) {
        char names[128] = "auto";
        for (size_t i = 0; i < N_BACKENDS; i++) {
            size_t used = strlen(names);
            snprintf(names + used, sizeof(names) - used, ", %s", backends[i]->name);
        }
        if (nlen == 4 && strncmp(spec, "nvml", 4) == 0)
            return mb_error_set(err, MB_EUNSUPPORTED,
                                "device spec '%s': this build has no NVML backend (known: %s)",
                                spec, names);
        return mb_error_set(err, MB_EINVAL, "device spec '%s': unknown backend '%.*s' (known: %s)",
                            spec, (int)(nlen > 32 ? 32 : nlen), spec, names);
    }
    const char *args = spec[nlen] == ':' ? spec + nlen + 1 : NULL;
    return mb__device_open_ops(ops, args, spec, out, err);
}

int mb_device_open_nth(size_t i, char *spec, size_t spec_cap, struct mb_device **out,
                       struct mb_error *err)
{
    *out = NULL;
    const struct mb_device_ops *nvml = find_backend("nvml", 4);
    struct mb_error why;
    mb_error_clear(&why);
    fallback_note[0] = '\0';
    if (nvml) {
        char args[24];
        snprintf(args, sizeof(args), "%zu", i);
        snprintf(spec, spec_cap, "nvml:%zu", i);
        if (mb__device_open_ops(nvml, args, spec, out, &why) == MB_OK)
            return MB_OK;
        if (i == 0 && named_library_failed(&why, err))
            return err ? err->status : MB_ELIB;
    }
    /* No GPU i: the end of the GPUs, or, when there is none at all, the host as device 0. */
    if (i > 0)
        return mb_error_set(err, MB_ENOTFOUND, "no device %zu", i);
    note_fallback(&why);
    snprintf(spec, spec_cap, "host");
    return mb__device_open_ops(&mb__host_ops, NULL, spec, out, err);
}

void mb_device_close(struct mb_device *dev)
{
    if (!dev)
        return;
    dev->ops->close(dev);
}

const char *mb_device_backend(const struct mb_device *dev)
{
    return dev && dev->ops ? dev->ops->name : "none";
}

static int unsupported(const struct mb_device *dev, const char *op, struct mb_error *err)
{
    return mb_error_set(err, MB_EUNSUPPORTED, "the %s backend does not support %s",
                        mb_device_backend(dev), op);
}

#define CHECK_DEV(dev, err)                                                                        \
    do {                                                                                           \
        if (!(dev) || !(dev)->ops)                                                                 \
            return mb_error_set((err), MB_EINVAL, "%s: no device", __func__);                      \
    } while (0)

#define CALL(dev, op, err, ...)                                                                    \
    do {                                                                                           \
        CHECK_DEV(dev, err);                                                                       \
        if (!(dev)->ops->op)                                                                       \
            return unsupported((dev), #op, (err));                                                 \
        return (dev)->ops->op((dev), __VA_ARGS__);                                                 \
    } while (0)

int mb_device_info(struct mb_device *dev, struct mb_device_info *out, struct mb_error *err)
{
    CALL(dev, info, err, out, err);
}

int mb_device_telemetry(struct mb_device *dev, struct mb_telemetry *out, struct mb_error *err)
{
    CALL(dev, telemetry, err, out, err);
}

int mb_device_sensor(struct mb_device *dev, struct mb_sensor_info *out, struct mb_error *err)
{
    CALL(dev, sensor, err, out, err);
}

uint32_t mb_device_caps(struct mb_device *dev)
{
    return dev->ops->caps(dev);
}

int mb_device_mig_mode(struct mb_device *dev, struct mb_mig_mode *out, struct mb_error *err)
{
    CALL(dev, mig_mode, err, out, err);
}

int mb_device_mig_set_mode(struct mb_device *dev, int enable, struct mb_error *err)
{
    CALL(dev, mig_set_mode, err, enable, err);
}

int mb_device_mig_profiles(struct mb_device *dev, struct mb_device_profile *out, size_t cap,
                           size_t *n, struct mb_error *err)
{
    CALL(dev, mig_profiles, err, out, cap, n, err);
}

int mb_device_mig_placements(struct mb_device *dev, unsigned driver_id, struct mb_placement *out,
                             size_t cap, size_t *n, struct mb_error *err)
{
    CALL(dev, mig_placements, err, driver_id, out, cap, n, err);
}

int mb_device_mig_create_gi(struct mb_device *dev, unsigned driver_id,
                            const struct mb_placement *placement, unsigned *gi_id,
                            struct mb_error *err)
{
    CALL(dev, mig_create_gi, err, driver_id, placement, gi_id, err);
}

int mb_device_mig_create_ci(struct mb_device *dev, unsigned gi_id, int ci_profile_id,
                            unsigned *ci_id, struct mb_error *err)
{
    CALL(dev, mig_create_ci, err, gi_id, ci_profile_id, ci_id, err);
}

int mb_device_mig_instances(struct mb_device *dev, struct mb_mig_instance *out, size_t cap,
                            size_t *n, struct mb_error *err)
{
    CALL(dev, mig_instances, err, out, cap, n, err);
}

int mb_device_mig_destroy_ci(struct mb_device *dev, unsigned gi_id, unsigned ci_id,
                             struct mb_error *err)
{
    CALL(dev, mig_destroy_ci, err, gi_id, ci_id, err);
}

int mb_device_mig_destroy_gi(struct mb_device *dev, unsigned gi_id, struct mb_error *err)
{
    CALL(dev, mig_destroy_gi, err, gi_id, err);
}

int mb_device_processes(struct mb_device *dev, struct mb_process *out, size_t cap, size_t *n,
                        struct mb_error *err)
{
    CALL(dev, processes, err, out, cap, n, err);
}

int mb_device_mig_activity(struct mb_device *dev, unsigned gi_id, struct mb_mig_activity *out,
                           struct mb_error *err)
{
    CALL(dev, mig_activity, err, gi_id, out, err);
}

int mb_device_cpu_partitions(struct mb_device *dev, unsigned n, struct mb_cpuset *out,
                             struct mb_error *err)
{
    CALL(dev, cpu_partitions, err, n, out, err);
}

int mb_device_power_limit(struct mb_device *dev, struct mb_power_limit *out, struct mb_error *err)
{
    CALL(dev, power_limit, err, out, err);
}

int mb_device_set_power_limit(struct mb_device *dev, uint32_t limit_mw, struct mb_error *err)
{
    CALL(dev, set_power_limit, err, limit_mw, err);
}

char *mb_throttle_reasons_str(uint64_t reasons, char *out, size_t cap)
{
    static const struct {
        uint64_t bit;
        const char *name;
    } names[] = {
        {MB_THROTTLE_GPU_IDLE, "gpu_idle"},
        {0x2ull, "applications_clocks"},
        {MB_THROTTLE_SW_POWER_CAP, "sw_power_cap"},
        {MB_THROTTLE_HW_SLOWDOWN, "hw_slowdown"},
        {0x10ull, "sync_boost"},
        {MB_THROTTLE_SW_THERMAL, "sw_thermal"},
        {MB_THROTTLE_HW_THERMAL, "hw_thermal"},
        {MB_THROTTLE_HW_POWER_BRAKE, "hw_power_brake"},
        {0x100ull, "display_clocks"},
    };
    if (!out || cap == 0)
        return out;
    out[0] = '\0';
    size_t used = 0;
    uint64_t left = reasons;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (!(reasons & names[i].bit))
            continue;
        left &= ~names[i].bit;
        int w = snprintf(out + used, cap - used, "%s%s", used ? "," : "", names[i].name);
        if (w < 0 || (size_t)w >= cap - used)
            return out;
        used += (size_t)w;
    }
    if (left)
        snprintf(out + used, cap - used, "%s0x%llx", used ? "," : "", (unsigned long long)left);
    return out;
}

/* ---- CUDA_VISIBLE_DEVICES ------------------------------------------------------------------ */

/* Parses "MIG-GPU-<uuid>/<gi>/<ci>" into "GPU-<uuid>", gi and ci; false for any other shape. */
static bool parse_legacy_mig(const char *entry, char *gpu_uuid, size_t cap, unsigned *gi,
                             unsigned *ci)
{
    if (strncmp(entry, "MIG-GPU-", 8) != 0)
        return false;
    const char *slash = strchr(entry, '/');
    if (!slash || (size_t)(slash - entry - 4) >= cap)
        return false;
    unsigned a, b;
    char tail;
    if (sscanf(slash, "/%u/%u%c", &a, &b, &tail) != 2)
        return false;
    memcpy(gpu_uuid, entry + 4, (size_t)(slash - entry - 4));
    gpu_uuid[slash - entry - 4] = '\0';
    *gi = a;
    *ci = b;
    return true;
}

/*
 * Looks for entry on dev itself: its GPU UUID, one of its MIG instance UUIDs, or the legacy form
 * with its GPU UUID. *found false when dev does not have it.
 */
static int match_visible(struct mb_device *dev, const char *entry, struct mb_visible *out,
                         bool *found, struct mb_error *err)
{
    *found = false;
    struct mb_device_info info;
    int rc = mb_device_info(dev, &info, err);
    if (rc != MB_OK)
        return rc;
    char legacy_gpu[MB_UUID_MAX];
    unsigned gi = 0, ci = 0;
    bool legacy = parse_legacy_mig(entry, legacy_gpu, sizeof(legacy_gpu), &gi, &ci);
    if (strcmp(entry, info.uuid) == 0) {
        *found = true;
    } else if (strncmp(entry, "MIG-", 4) == 0 && (!legacy || strcmp(legacy_gpu, info.uuid) == 0)) {
        struct mb_mig_instance inst[MB_MAX_MIG_INSTANCES * 2];
        size_t n = 0;
        rc = mb_device_mig_instances(dev, inst, sizeof(inst) / sizeof(inst[0]), &n, err);
        if (rc == MB_EUNSUPPORTED)
            n = 0; /* MIG disabled: no instance can match */
        else if (rc != MB_OK)
            return rc;
        for (size_t i = 0; i < n && !*found; i++) {
            bool hit = legacy ? inst[i].has_ci && inst[i].gi_id == gi && inst[i].ci_id == ci
                              : inst[i].uuid[0] && strcmp(inst[i].uuid, entry) == 0;
            if (hit) {
                out->has_instance = true;
                out->instance = inst[i];
                *found = true;
            }
        }
    }
    if (*found) {
        out->resolved = true;
        snprintf(out->gpu_uuid, sizeof(out->gpu_uuid), "%s", info.uuid);
    }
    return MB_OK;
}

/* The first entry of a CUDA_VISIBLE_DEVICES value, when it is a UUID form; false otherwise. */
static bool first_uuid_entry(const char *visible, char *entry, size_t cap)
{
    size_t n = strcspn(visible, ",");
    while (n > 0 && visible[n - 1] == ' ')
        n--;
    if (n == 0 || n >= cap)
        return false;
    memcpy(entry, visible, n);
    entry[n] = '\0';
    return strncmp(entry, "GPU-", 4) == 0 || strncmp(entry, "MIG-", 4) == 0;
}

int mb_device_resolve_visible(const char *spec, const char *visible, struct mb_visible *out,
                              struct mb_error *err)
{
    if (!spec || !out)
        return mb_error_set(err, MB_EINVAL, "mb_device_resolve_visible: NULL argument");
    memset(out, 0, sizeof(*out));
    if (strlen(spec) >= sizeof(out->spec))
        return mb_error_set(err, MB_EINVAL, "device spec too long");
    snprintf(out->spec, sizeof(out->spec), "%s", spec);
    char entry[MB_VISIBLE_ENTRY_MAX];
    if (!visible || !first_uuid_entry(visible, entry, sizeof(entry)))
        return MB_OK;
    struct mb_device *dev = NULL;
    int rc = mb_device_open(spec, &dev, err);
    if (rc != MB_OK)
        return rc;
    bool found = false;
    if (!(mb_device_caps(dev) & MB_CAP_GPU))
        goto done; /* the host: a GPU's UUID says nothing about the CPU */
    snprintf(out->entry, sizeof(out->entry), "%s", entry);
    rc = match_visible(dev, entry, out, &found, err);
    if (rc != MB_OK || found || !dev->ops->visible_parent)
        goto done;
    /* Another GPU of the same backend: reopen on the parent the backend names. */
    char parent[MB_UUID_MAX];
    rc = dev->ops->visible_parent(dev, entry, parent, sizeof(parent), err);
    if (rc == MB_ENOTFOUND) {
        rc = MB_OK;
        goto done;
    }
    if (rc != MB_OK)
        goto done;
    char reopen[MB_DEVICE_SPEC_MAX];
    snprintf(reopen, sizeof(reopen), "%s:%s", mb_device_backend(dev), parent);
    mb_device_close(dev);
    dev = NULL;
    rc = mb_device_open(reopen, &dev, err);
    if (rc != MB_OK)
        goto done;
    snprintf(out->spec, sizeof(out->spec), "%s", reopen);
    rc = match_visible(dev, entry, out, &found, err);
done:
    mb_device_close(dev);
    if (rc == MB_OK && out->entry[0] && !found)
        rc = mb_error_set(err, MB_ENOTFOUND,
                          "CUDA_VISIBLE_DEVICES=%s: no GPU or MIG instance with this UUID on "
                          "device '%s' (unset the variable to meter the device itself)",
                          entry, spec);
    if (rc != MB_OK)
        out->resolved = false;
    return rc;
}

int mb_device_mig_switch_mode(struct mb_device *dev, int enable, struct mb_error *err)
{
    CALL(dev, mig_switch_mode, err, enable, err);
}

int mb_device_spec_expand(const char *spec, struct mb_device_spec_list *out, struct mb_error *err)
{
    if (!out)
        return mb_error_set(err, MB_EINVAL, "mb_device_spec_expand: NULL out");
    out->n = 0;
    if (!spec || !spec[0])
        return mb_error_set(err, MB_EINVAL, "empty device spec");
    size_t nlen = strcspn(spec, ":");
    const struct mb_device_ops *ops = find_backend(spec, nlen);
    if (!ops || !ops->expand || spec[nlen] != ':')
        return mb_device_spec_list_add(out, spec, err);
    int rc = ops->expand(spec + nlen + 1, out, err);
    if (rc != MB_OK) {
        char sb[96];
        if (err && !strstr(err->msg, spec) && strncmp(err->msg, "device spec '", 13) != 0)
            mb_error_prefix(err, "device spec '%s': ", mb__spec_short(spec, sb, sizeof(sb)));
        mb_device_spec_list_free(out);
        return rc;
    }
    if (out->n == 0)
        return mb_error_set(err, MB_ENOTFOUND, "device spec '%s' names no device", spec);
    return MB_OK;
}
