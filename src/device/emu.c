/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The emulated MIG GPU. It is built from the catalog and follows NVML's MIG semantics (pending
 * mode changes, placements, max counts, +me exclusivity, ids, IN_USE on destroy). Its power comes
 * from the GPU model (gpumodel.h, docs/devices.md "The GPU model"): the attached processes are
 * jobs on their MIG instance, MPS share or time slice (emu_model.c), and the model gives the
 * power, the SM clock under the power limit and each modelled job's rate; or the power is a
 * piecewise-linear trace. The energy counter is the exact integral of the power since open. The
 * reported power is that function seen through the model's sensor: a boxcar (instant) or moving
 * (averaged) window, published once per update period. With state=PATH the MIG state, processes
 * (with their modelled demand) and power limit live in a JSON file guarded by flock, so that
 * separate processes see one GPU.
 *
 * The power limit: under a limit below the jobs' power the clock drops to the highest fraction s
 * that fits (floored at s_min = sm_idle_mhz / sm_max_mhz, where the power stays above the limit),
 * the throttle reason "sw power cap" is set, and the jobs' rates follow s. The default and maximum
 * limit is max_w; the minimum is min_limit_w (default 30% of max_w). With trace= the trace is
 * played as given and the limit cannot be set. Files: emu.c (options, open, ops table),
 * emu_entry.c (emu.h's entry points for tests and the fake NVML), emu_mig.c (MIG, processes),
 * emu_telemetry.c (telemetry, sensor, limit), emu_state.c (ids, state file, operation framing),
 * emu_power.c (the power model over time), emu_model.c (the link to the GPU model); each calls
 * only the ones after it (emu_internal.h).
 */
#include "device/emu_internal.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "device/backends.h"
#include "migbench/clock.h"
#include "migbench/fileio.h"
#include "migbench/num.h"
#include "base/json_io.h"

/* The sensor of a model whose catalog entry has none (a --catalog model): emulation defaults. */
static const struct mb_model_sensor generic_sensor = {
    .known = true,
    .power_kind = MB_POWER_AVERAGED,
    .power_avg_window_ms = 1000,
    .power_update_period_ms = 100,
    .average_field = 1,
    .scope = "board",
    .status = MB_VALUE_UNVERIFIED,
};

static const struct emu_model_defaults model_defaults[] = {
    {"A30-24GB", "NVIDIA A30", 30, 165, false, 210, 1440, 1215},
    {"A100-SXM4-40GB", "NVIDIA A100-SXM4-40GB", 50, 400, false, 210, 1410, 1215},
    {"A100-SXM4-80GB", "NVIDIA A100-SXM4-80GB", 60, 400, false, 210, 1410, 1593},
    {"H100-SXM5-80GB", "NVIDIA H100 80GB HBM3", 70, 700, true, 345, 1980, 2619},
    {"H100-NVL-94GB", "NVIDIA H100 NVL", 60, 400, true, 345, 1785, 2619},
    {"GH200-H100-96GB", "NVIDIA GH200 480GB", 100, 900, true, 345, 1980, 2619},
    {"H200-141GB", "NVIDIA H200", 75, 700, true, 345, 1980, 3201},
    {"B200-180GB", "NVIDIA B200", 140, 1000, true, 345, 1965, 3996},
    {"GB200-186GB", "NVIDIA GB200", 150, 1200, true, 345, 2062, 3996},
};

/* Used for a model from a user catalog that the table above does not know. */
static const struct emu_model_defaults generic_defaults = {NULL,  NULL, 60,   400,
                                                           false, 300,  1500, 1500};

/* ---- option parsing -------------------------------------------------------------------- */

static int parse_status_word(const char *w, int *out)
{
    static const struct {
        const char *name;
        int status;
    } aliases[] = {
        {"insufficient_resources", MB_ENORESOURCES},
        {"in_use", MB_EBUSY},
        {"not_supported", MB_EUNSUPPORTED},
        {"no_permission", MB_EPERM},
        {"invalid_argument", MB_EINVAL},
        {"not_found", MB_ENOTFOUND},
        {"gpu_is_lost", MB_EGONE},
        {"lost", MB_EGONE},
        {"unknown", MB_EDEVICE},
    };
    for (size_t i = 0; i < sizeof(aliases) / sizeof(aliases[0]); i++)
        if (strcasecmp(w, aliases[i].name) == 0) {
            *out = aliases[i].status;
            return 0;
        }
    for (int s = MB_EINVAL; s <= MB_EINFEASIBLE; s++) {
        const char *name = mb_status_name(s); /* "MB_ENORESOURCES" */
        if (strcasecmp(w, name) == 0 || strcasecmp(w, name + 4) == 0) {
            *out = s;
            return 0;
        }
    }
    return -1;
}

static int parse_fault(struct emu *e, const char *val, struct mb_error *err)
{
    char buf[MB__SPEC_VAL_MAX];
    snprintf(buf, sizeof(buf), "%s", val);
    char *c1 = strchr(buf, ':');
    char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    if (!c1 || !c2)
        return mb_error_set(err, MB_EINVAL, "option fail=%s: expected fail=OP:N:ERROR", val);
    *c1 = *c2 = '\0';
    const char *opname = buf;
    if (strncmp(opname, "mig_create_", 11) == 0 || strncmp(opname, "mig_destroy_", 12) == 0)
        opname += 4;
    int op = -1;
    for (int i = 0; i < OP__COUNT; i++)
        if (strcmp(opname, mb__emu_op_names[i]) == 0)
            op = i;
    if (op < 0) {
        char known[512] = "";
        for (int i = 0; i < OP__COUNT; i++) {
            size_t used = strlen(known);
            snprintf(known + used, sizeof(known) - used, "%s%s", i ? ", " : "",
                     mb__emu_op_names[i]);
        }
        return mb_error_set(err, MB_EINVAL, "option fail=%s: unknown operation '%s' (known: %s)",
                            val, buf, known);
    }
    unsigned long long nth;
    if (mb__spec_u64("fail", c1 + 1, &nth, err) || nth == 0)
        return mb_error_set(err, MB_EINVAL, "option fail=%s: N must be a call number >= 1", val);
    int status;
    if (strcmp(c2 + 1, "crash") == 0)
        status = EMU_CRASH;
    else if (parse_status_word(c2 + 1, &status) != 0)
        return mb_error_set(err, MB_EINVAL,
                            "option fail=%s: unknown error '%s' (e.g. noresources, busy, inval, "
                            "unsupported, perm, gone, io, device, notfound)",
                            val, c2 + 1);
    if (e->n_faults == EMU_MAX_FAULTS)
        return mb_error_set(err, MB_EINVAL, "option fail: at most %d faults", EMU_MAX_FAULTS);
    e->faults[e->n_faults++] = (struct emu_fault){(enum emu_op)op, nth, status};
    return MB_OK;
}

/* Reads a trace file: lines "t_seconds,watts", '#' comments; times strictly increasing. */
static int load_trace(struct emu *e, const char *path, struct mb_error *err)
{
    FILE *f;
    int orc = mb_file_fopen_input(path, &f, err);
    if (orc != MB_OK) {
        mb_error_prefix(err, "trace file: ");
        return orc == MB_ENOTFOUND ? MB_EIO : orc;
    }
    int rc = MB_OK;
    size_t cap = 64;
    e->trace = malloc(cap * sizeof(*e->trace));
    if (!e->trace) {
        rc = mb_error_set(err, MB_ENOMEM, "trace file %s: out of memory", path);
        goto done;
    }
    char line[256];
    unsigned lineno = 0;
    while (fgets(line, sizeof(line), f)) {
        lineno++;
        if (!strchr(line, '\n') && !feof(f)) {
            rc = mb_error_set(err, MB_EPARSE, "%s:%u: line too long", path, lineno);
            goto done;
        }
        const char *s = line + strspn(line, " \t");
        if (*s == '#' || *s == '\n' || *s == '\r' || *s == '\0')
            continue;
        const char *end;
        double t, w;
        if (mb_num_parse(s, &t, &end) != MB_OK || t < 0) {
            rc = mb_error_set(err, MB_EPARSE, "%s:%u: field t_seconds: expected a time >= 0", path,
                              lineno);
            goto done;
        }
        s = end + strspn(end, " \t");
        if (*s != ',') {
            rc = mb_error_set(err, MB_EPARSE, "%s:%u: expected 't_seconds,watts'", path, lineno);
            goto done;
        }
        s++;
        s += strspn(s, " \t");
        if (mb_num_parse(s, &w, &end) != MB_OK || w < 0) {
            rc = mb_error_set(err, MB_EPARSE, "%s:%u: field watts: expected a power >= 0", path,
                              lineno);
            goto done;
        }
        end += strspn(end, " \t\r\n");
        if (*end) {
            rc = mb_error_set(err, MB_EPARSE, "%s:%u: unexpected text after watts", path, lineno);
            goto done;
        }
        if (e->n_trace > 0 && t <= e->trace[e->n_trace - 1].t_s) {
            rc = mb_error_set(err, MB_EPARSE, "%s:%u: field t_seconds: times must increase", path,
                              lineno);
            goto done;
        }
        if (e->n_trace == EMU_TRACE_MAX) {
            rc = mb_error_set(err, MB_EPARSE, "%s:%u: more than %d points", path, lineno,
                              EMU_TRACE_MAX);
            goto done;
        }
        if (e->n_trace == cap) {
            cap *= 2;
            struct emu_trace_pt *grown = realloc(e->trace, cap * sizeof(*e->trace));
            if (!grown) {
                rc = mb_error_set(err, MB_ENOMEM, "trace file %s: out of memory", path);
                goto done;
            }
            e->trace = grown;
        }
        e->trace[e->n_trace++] = (struct emu_trace_pt){t, w, 0};
    }
    if (ferror(f)) {
        rc = mb_error_set(err, MB_EIO, "trace file %s: read error", path);
        goto done;
    }
    if (e->n_trace == 0) {
        rc = mb_error_set(err, MB_EPARSE, "trace file %s: no points", path);
        goto done;
    }
    /* Energy from 0 to each point: constant before the first point, trapezoids after. */
    e->trace[0].cum_j = e->trace[0].w * e->trace[0].t_s;
    for (size_t i = 1; i < e->n_trace; i++) {
        const struct emu_trace_pt *a = &e->trace[i - 1];
        e->trace[i].cum_j = a->cum_j + (e->trace[i].t_s - a->t_s) * (a->w + e->trace[i].w) / 2.0;
    }
done:
    fclose(f);
    if (rc != MB_OK) {
        free(e->trace);
        e->trace = NULL;
        e->n_trace = 0;
    }
    return rc;
}

/* busy=PID[+PID...]: clients that hold the GPU, so that MIG-mode activation answers busy. */
static int parse_busy(struct emu *e, const char *val, struct mb_error *err)
{
    const char *p = val;
    while (*p) {
        char pid[16];
        size_t len = strcspn(p, "+");
        unsigned long long u;
        if (len == 0 || len >= sizeof(pid))
            return mb_error_set(err, MB_EINVAL, "option busy=%s: expected PID[+PID...]", val);
        memcpy(pid, p, len);
        pid[len] = '\0';
        if (mb__spec_u64("busy", pid, &u, err) || u == 0 || u > 0x7fffffff)
            return mb_error_set(err, MB_EINVAL, "option busy=%s: expected PID[+PID...]", val);
        if (e->n_busy == EMU_MAX_BUSY)
            return mb_error_set(err, MB_EINVAL, "option busy=%s: at most %d PIDs", val,
                                EMU_MAX_BUSY);
        e->busy[e->n_busy++] = (unsigned)u;
        p += len;
        if (*p == '+')
            p++;
    }
    if (e->n_busy == 0)
        return mb_error_set(err, MB_EINVAL, "option busy=: expected PID[+PID...]");
    return MB_OK;
}

struct emu_opts {
    int mig;
    bool have_idle, have_max, have_sensor, have_update, have_avg;
    char trace[MB__SPEC_VAL_MAX];
    char catalog[MB__SPEC_VAL_MAX];
};

/* Not an option of this group: parse_option asks the next one. */
#define EMU_OTHER (-1)

/* What the GPU is: mode, index, state file, catalog, trace. */
static int parse_identity(struct emu *e, struct emu_opts *o, const char *key, const char *val,
                          struct mb_error *err)
{
    unsigned long long u;
    if (strcmp(key, "mig") == 0) {
        if (strcmp(val, "on") == 0 || strcmp(val, "1") == 0)
            o->mig = 1;
        else if (strcmp(val, "off") == 0 || strcmp(val, "0") == 0)
            o->mig = 0;
        else
            return mb_error_set(err, MB_EINVAL, "option mig=%s: expected on or off", val);
    } else if (strcmp(key, "index") == 0) {
        if (mb__spec_u64(key, val, &u, err) || u > 63)
            return mb_error_set(err, MB_EINVAL, "option index=%s: expected 0..63", val);
        e->index = (unsigned)u;
    } else if (strcmp(key, "state") == 0) {
        if (!val[0] || strlen(val) >= sizeof(e->state_path) - 40)
            return mb_error_set(err, MB_EINVAL, "option state=: empty or over-long path");
        if (mb__spec_path(key, val, err))
            return MB_EINVAL;
        snprintf(e->state_path, sizeof(e->state_path), "%s", val);
    } else if (strcmp(key, "catalog") == 0 || strcmp(key, "trace") == 0) {
        if (mb__spec_path(key, val, err))
            return MB_EINVAL;
        snprintf(key[0] == 'c' ? o->catalog : o->trace, sizeof(o->trace), "%s", val);
    } else if (strcmp(key, "count") == 0) {
        /* Several GPUs are several devices: mb_device_spec_expand splits the spec first. */
        if (strcmp(val, "1") != 0)
            return mb_error_set(err, MB_EINVAL,
                                "option count=%s names several GPUs: expand the spec into one "
                                "spec per GPU first (mb_device_spec_expand)",
                                val);
    } else {
        return EMU_OTHER;
    }
    return MB_OK;
}

/* The power model and its limit: idle and maximum power, limit range and permission, load. */
static int parse_power(struct emu *e, struct emu_opts *o, const char *key, const char *val,
                       struct mb_error *err)
{
    double d;
    if (strcmp(key, "idle_w") == 0 || strcmp(key, "max_w") == 0) {
        if (mb__spec_double(key, val, &d, err) || d < 0 || d > 100000)
            return mb_error_set(err, MB_EINVAL, "option %s=%s: expected watts in 0..100000", key,
                                val);
        if (key[0] == 'i') {
            e->idle_w = d;
            o->have_idle = true;
        } else {
            e->max_w = d;
            o->have_max = true;
        }
    } else if (strcmp(key, "min_limit_w") == 0 || strcmp(key, "limit_w") == 0) {
        if (mb__spec_double(key, val, &d, err) || d <= 0 || d > 100000)
            return mb_error_set(err, MB_EINVAL, "option %s=%s: expected watts in 0..100000", key,
                                val);
        if (key[0] == 'm')
            e->min_limit_w = d;
        else
            e->init_limit_w = d;
    } else if (strcmp(key, "limit_perm") == 0) {
        if (strcmp(val, "deny") == 0)
            e->limit_denied = true;
        else if (strcmp(val, "allow") == 0)
            e->limit_denied = false;
        else
            return mb_error_set(err, MB_EINVAL, "option limit_perm=%s: expected allow or deny",
                                val);
    } else if (strcmp(key, "load") == 0) {
        if (mb__spec_double(key, val, &d, err) || d < 0 || d > 1)
            return mb_error_set(err, MB_EINVAL, "option load=%s: expected 0..1", val);
        e->load = d;
        e->load_fixed = true;
    } else {
        return EMU_OTHER;
    }
    return MB_OK;
}

/* The energy counter: its start, wrap, update period, presence. */
static int parse_counter(struct emu *e, const char *key, const char *val, struct mb_error *err)
{
    if (strcmp(key, "energy0_mj") == 0) {
        if (mb__spec_u64(key, val, &e->energy0_mj, err))
            return MB_EINVAL;
    } else if (strcmp(key, "wrap_mj") == 0) {
        if (mb__spec_u64(key, val, &e->wrap_mj, err) || e->wrap_mj == 0)
            return mb_error_set(err, MB_EINVAL, "option wrap_mj=%s: expected a number >= 1", val);
    } else if (strcmp(key, "energy_update_ms") == 0) {
        if (mb__spec_u64(key, val, &e->energy_update_ms, err) || e->energy_update_ms > 60000)
            return mb_error_set(err, MB_EINVAL, "option energy_update_ms=%s: expected 0..60000",
                                val);
    } else if (strcmp(key, "counter") == 0) {
        if (strcmp(val, "none") == 0)
            e->counter = false;
        else if (strcmp(val, "exact") == 0)
            e->counter = true;
        else
            return mb_error_set(err, MB_EINVAL, "option counter=%s: expected none or exact", val);
    } else {
        return EMU_OTHER;
    }
    return MB_OK;
}

/* The power reading: its kind, update period and averaging window; the clock it is stamped by. */
static int parse_sensor(struct emu *e, struct emu_opts *o, const char *key, const char *val,
                        struct mb_error *err)
{
    unsigned long long u;
    if (strcmp(key, "sensor") == 0) {
        if (strcmp(val, "instant") == 0)
            e->sensor = MB_POWER_INSTANT;
        else if (strcmp(val, "averaged") == 0)
            e->sensor = MB_POWER_AVERAGED;
        else
            return mb_error_set(err, MB_EINVAL, "option sensor=%s: expected instant or averaged",
                                val);
        o->have_sensor = true;
    } else if (strcmp(key, "update_ms") == 0 || strcmp(key, "avg_ms") == 0) {
        if (mb__spec_u64(key, val, &u, err) || u > 60000)
            return mb_error_set(err, MB_EINVAL, "option %s=%s: expected 0..60000", key, val);
        if (key[0] == 'u') {
            e->update_ms = u;
            o->have_update = true;
        } else {
            e->avg_ms = u;
            o->have_avg = true;
        }
    } else if (strcmp(key, "clock") == 0) {
        if (strcmp(val, "manual") == 0)
            e->manual_clock = true;
        else if (strcmp(val, "monotonic") == 0)
            e->manual_clock = false;
        else
            return mb_error_set(err, MB_EINVAL, "option clock=%s: expected monotonic or manual",
                                val);
    } else {
        return EMU_OTHER;
    }
    return MB_OK;
}

/* Injected faults: a failing or crashing operation, a GPU that is lost, no reset, busy clients. */
static int parse_faults(struct emu *e, const char *key, const char *val, struct mb_error *err)
{
    if (strcmp(key, "fail") == 0) {
        return parse_fault(e, val, err);
    } else if (strcmp(key, "crash") == 0) {
        char f[MB__SPEC_VAL_MAX + 8];
        snprintf(f, sizeof(f), "%.*s:crash", MB__SPEC_VAL_MAX - 1, val);
        return parse_fault(e, f, err);
    } else if (strcmp(key, "reset") == 0) {
        if (strcmp(val, "ok") == 0)
            e->no_reset = false;
        else if (strcmp(val, "unavailable") == 0)
            e->no_reset = true;
        else
            return mb_error_set(err, MB_EINVAL, "option reset=%s: expected ok or unavailable", val);
    } else if (strcmp(key, "busy") == 0) {
        return parse_busy(e, val, err);
    } else if (strcmp(key, "lost_after") == 0) {
        if (mb__spec_u64(key, val, &e->lost_after, err))
            return MB_EINVAL;
        e->lost_set = true;
    } else if (strcmp(key, "lost_when") == 0) {
        if (!val[0] || strlen(val) >= sizeof(e->lost_when) || mb__spec_path(key, val, err))
            return mb_error_set(err, MB_EINVAL, "option lost_when=: empty or over-long path");
        snprintf(e->lost_when, sizeof(e->lost_when), "%s", val);
    } else {
        return EMU_OTHER;
    }
    return MB_OK;
}

static int parse_option(struct emu *e, struct emu_opts *o, const char *key, const char *val,
                        struct mb_error *err)
{
    int rc = parse_identity(e, o, key, val, err);
    if (rc == EMU_OTHER)
        rc = parse_power(e, o, key, val, err);
    if (rc == EMU_OTHER)
        rc = parse_counter(e, key, val, err);
    if (rc == EMU_OTHER)
        rc = parse_sensor(e, o, key, val, err);
    if (rc == EMU_OTHER)
        rc = parse_faults(e, key, val, err);
    if (rc == EMU_OTHER)
        return mb_error_set(err, MB_EINVAL,
                            "unknown emu option '%s' (known: mig, index, state, catalog, idle_w, "
                            "max_w, min_limit_w, limit_w, limit_perm, load, trace, energy0_mj, "
                            "wrap_mj, energy_update_ms, counter, sensor, update_ms, avg_ms, clock, "
                            "fail, crash, lost_after, lost_when, reset, busy, count)",
                            key);
    return rc;
}

/* Checks the power-limit options against the power model once idle_w and max_w are known. */
static int limit_options(struct emu *e, struct mb_error *err)
{
    if (e->min_limit_w == 0)
        e->min_limit_w = 0.3 * e->max_w;
    if (e->min_limit_w > e->max_w)
        return mb_error_set(err, MB_EINVAL, "emu: min_limit_w (%g) is above max_w (%g)",
                            e->min_limit_w, e->max_w);
    if (e->init_limit_w && (e->init_limit_w < e->min_limit_w || e->init_limit_w > e->max_w))
        return mb_error_set(err, MB_EINVAL, "emu: limit_w (%g) is outside %g..%g W",
                            e->init_limit_w, e->min_limit_w, e->max_w);
    return MB_OK;
}

static void emu_close(struct mb_device *dev)
{
    if (!dev)
        return;
    struct emu *e = as_emu(dev);
    if (e->lock_fd >= 0)
        close(e->lock_fd);
    free(e->trace);
    mb_catalog_destroy(e->cat);
    free(e);
}

/* The sensor as the catalog states it for the model (generic_sensor when it states nothing), for
 * what the options did not set. A window not given follows the kind when an option changed it. */
static void sensor_defaults(struct emu *e, const struct emu_opts *o)
{
    e->sens = e->model->sensor.known ? e->model->sensor : generic_sensor;
    if (e->sens.power_kind == MB_POWER_UNKNOWN)
        e->sens.power_kind = generic_sensor.power_kind;
    if (!e->sens.scope[0])
        snprintf(e->sens.scope, sizeof(e->sens.scope), "%s", generic_sensor.scope);
    if (!o->have_sensor)
        e->sensor = e->sens.power_kind;
    if (!o->have_update)
        e->update_ms = e->sens.power_update_period_ms ? e->sens.power_update_period_ms : 100;
    if (!o->have_avg)
        e->avg_ms = e->sensor == e->sens.power_kind && e->sens.power_avg_window_ms
                        ? e->sens.power_avg_window_ms
                    : e->sensor == MB_POWER_AVERAGED ? 1000
                                                     : 25;
}

int mb__emu_open(const char *args, struct mb_device **out, struct mb_error *err)
{
    *out = NULL;
    if (!args || !args[0] || args[0] == ':' || args[0] == ',')
        return mb_error_set(err, MB_EINVAL,
                            "emu: a model is required, e.g. emu:H100-80GB or emu:A100-40GB:mig=on");
    struct emu *e = calloc(1, sizeof(*e));
    if (!e)
        return mb_error_set(err, MB_ENOMEM, "emu: out of memory");
    struct emu_opts o;
    memset(&o, 0, sizeof(o));
    e->base.ops = &mb__emu_ops;
    e->lock_fd = -1;
    e->counter = true;
    int rc;
    char model_name[MB_MODEL_NAME_MAX + 64];
    size_t mlen = strcspn(args, ":,");
    if (mlen >= sizeof(model_name)) {
        rc = mb_error_set(err, MB_EINVAL, "emu: model name too long");
        goto fail;
    }
    memcpy(model_name, args, mlen);
    model_name[mlen] = '\0';
    const char *p = args + mlen;
    char key[MB__SPEC_KEY_MAX], val[MB__SPEC_VAL_MAX];
    while ((rc = mb__spec_next(&p, args, key, val, err)) == MB_OK)
        if ((rc = parse_option(e, &o, key, val, err)) != MB_OK)
            goto fail;
    if (rc != MB_ENOTFOUND)
        goto fail;
    if ((rc = mb_catalog_create(&e->cat, err)) != MB_OK)
        goto fail;
    if (o.catalog[0] && (rc = mb_catalog_load_file(e->cat, o.catalog, err)) != MB_OK)
        goto fail;
    if ((rc = mb_catalog_find(e->cat, model_name, &e->model, err)) != MB_OK)
        goto fail;

    e->defs = generic_defaults;
    e->defs.model = e->model->name;
    e->defs.vendor_name = e->model->name;
    for (size_t i = 0; i < sizeof(model_defaults) / sizeof(model_defaults[0]); i++)
        if (strcmp(model_defaults[i].model, e->model->name) == 0)
            e->defs = model_defaults[i];
    if (!o.have_idle)
        e->idle_w = e->defs.idle_w;
    if (!o.have_max)
        e->max_w = e->defs.max_w;
    if (e->idle_w > e->max_w) {
        rc = mb_error_set(err, MB_EINVAL, "emu: idle_w (%g) is above max_w (%g)", e->idle_w,
                          e->max_w);
        goto fail;
    }
    if ((rc = limit_options(e, err)) != MB_OK || (rc = mb__gm_load(err)) != MB_OK)
        goto fail;
    mb__gm_gpu_for(&e->gm, e->model, e->idle_w, e->max_w,
                   e->defs.sm_max_mhz ? (double)e->defs.sm_idle_mhz / e->defs.sm_max_mhz : 0.1);
    sensor_defaults(e, &o);
    if (o.trace[0] && e->load_fixed) {
        rc = mb_error_set(err, MB_EINVAL, "emu: give load= or trace=, not both");
        goto fail;
    }
    if (o.trace[0] && (rc = load_trace(e, o.trace, err)) != MB_OK)
        goto fail;

    mb__emu_gpu_uuid(e, args, e->uuid, sizeof(e->uuid));

    mb__emu_state_init(&e->st, o.mig > 0);
    if (e->init_limit_w && !o.trace[0])
        e->st.limit_mw = (uint32_t)llround(e->init_limit_w * 1000.0);
    if (e->state_path[0]) {
        char lock[EMU_PATH_MAX + 8];
        snprintf(lock, sizeof(lock), "%s.lock", e->state_path);
        e->lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (e->lock_fd < 0) {
            rc = mb_error_set(err, MB_EIO, "emu: lock file %s: %s", lock, strerror(errno));
            goto fail;
        }
        if (flock(e->lock_fd, LOCK_EX) != 0) {
            rc = mb_error_set(err, MB_EIO, "emu: lock %s: %s", lock, strerror(errno));
            goto fail;
        }
        bool found;
        rc = mb__emu_state_load(e, &found, err);
        if (rc == MB_OK && !found)
            rc = mb__emu_state_save(e, err); /* a new GPU: its first state, from the options */
        flock(e->lock_fd, LOCK_UN);
        if (rc != MB_OK)
            goto fail;
    }
    e->open_ns = mb_clock_monotonic_ns();
    e->n_seg = 1;
    e->seg[0] = (struct emu_segment){0, 0.0, mb__emu_model_power(e)};
    *out = &e->base;
    return MB_OK;
fail:
    emu_close(&e->base);
    return rc;
}

static int emu_open(const char *args, struct mb_device **out, struct mb_error *err)
{
    return mb__emu_open(args, out, err);
}

static int state_for(const char *path, unsigned i, char *out, size_t cap, struct mb_error *err)
{
    size_t len = strlen(path);
    int w;
    if (len > 5 && strcmp(path + len - 5, ".json") == 0)
        w = snprintf(out, cap, "%.*s.%u.json", (int)(len - 5), path, i);
    else
        w = snprintf(out, cap, "%s.%u", path, i);
    if (w < 0 || (size_t)w >= cap)
        return mb_error_set(err, MB_EINVAL, "option state=: path too long");
    return MB_OK;
}

/* "MODEL:count=N[,index=K][,state=PATH][,...]" -> N specs with index=K+i and their own state. */
static int emu_expand(const char *args, struct mb_device_spec_list *out, struct mb_error *err)
{
    char rest[2048] = "", state[MB__SPEC_VAL_MAX] = "";
    unsigned long long count = 1, base = 0;
    bool have_count = false;
    size_t mlen = args ? strcspn(args, ":,") : 0;
    if (!args || mlen == 0 || mlen >= MB_MODEL_NAME_MAX + 64)
        return mb_error_set(err, MB_EINVAL, "emu: a model is required, e.g. emu:H100-80GB");
    const char *p = args + mlen;
    char key[MB__SPEC_KEY_MAX], val[MB__SPEC_VAL_MAX];
    int rc;
    while ((rc = mb__spec_next(&p, args, key, val, err)) == MB_OK) {
        if (strcmp(key, "count") == 0) {
            have_count = true;
            if (mb__spec_u64(key, val, &count, err) || count < 1 || count > MB_MAX_DEVICES)
                return mb_error_set(err, MB_EINVAL, "option count=%s: expected 1..%d", val,
                                    MB_MAX_DEVICES);
        } else if (strcmp(key, "index") == 0) {
            if (mb__spec_u64(key, val, &base, err) || base > 63)
                return mb_error_set(err, MB_EINVAL, "option index=%s: expected 0..63", val);
        } else if (strcmp(key, "state") == 0) {
            snprintf(state, sizeof(state), "%s", val);
        } else {
            size_t used = strlen(rest);
            int w = snprintf(rest + used, sizeof(rest) - used, ",%s=%s", key, val);
            if (w < 0 || (size_t)w >= sizeof(rest) - used)
                return mb_error_set(err, MB_EINVAL, "emu:%s: options too long", args);
        }
    }
    if (rc != MB_ENOTFOUND)
        return rc;
    if (!have_count) {
        char spec[4096];
        snprintf(spec, sizeof(spec), "emu:%s", args);
        return mb_device_spec_list_add(out, spec, err);
    }
    if (base + count > 64)
        return mb_error_set(err, MB_EINVAL, "emu:%s: GPU indices run past 63", args);
    for (unsigned i = 0; i < count; i++) {
        char spec[4096], st[MB__SPEC_VAL_MAX + 32] = "";
        unsigned index = (unsigned)base + i;
        if (state[0]) {
            char path[MB__SPEC_VAL_MAX];
            if (count == 1)
                snprintf(path, sizeof(path), "%s", state);
            else if ((rc = state_for(state, index, path, sizeof(path), err)) != MB_OK)
                return rc;
            snprintf(st, sizeof(st), ",state=%s", path);
        }
        snprintf(spec, sizeof(spec), "emu:%.*s:index=%u%s%s", (int)mlen, args, index, st, rest);
        if ((rc = mb_device_spec_list_add(out, spec, err)) != MB_OK)
            return rc;
    }
    return MB_OK;
}

const struct mb_device_ops mb__emu_ops = {
    .version = MB_DEVICE_OPS_VERSION,
    .name = "emu",
    .open = emu_open,
    .close = emu_close,
    .info = mb__emu_info,
    .telemetry = mb__emu_telemetry,
    .sensor = mb__emu_sensor,
    .caps = mb__emu_caps,
    .mig_mode = mb__emu_mig_mode,
    .mig_set_mode = mb__emu_mig_set_mode,
    .mig_profiles = mb__emu_mig_profiles,
    .mig_placements = mb__emu_mig_placements,
    .mig_create_gi = mb__emu_mig_create_gi,
    .mig_create_ci = mb__emu_mig_create_ci,
    .mig_instances = mb__emu_mig_instances,
    .mig_destroy_ci = mb__emu_mig_destroy_ci,
    .mig_destroy_gi = mb__emu_mig_destroy_gi,
    .processes = mb__emu_processes,
    .mig_activity = mb__emu_mig_activity,
    .power_limit = mb__emu_power_limit,
    .set_power_limit = mb__emu_set_power_limit,
    .mig_switch_mode = mb__emu_mig_switch_mode,
    .expand = emu_expand,
};
