/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The emulated MIG GPU. It is built from the catalog and follows NVML's MIG semantics (pending
 * mode changes, placements, max counts, +me exclusivity, ids, IN_USE on destroy). Its power is a
 * stated model: idle + load * (max - idle), or a piecewise-linear trace; the energy counter is
 * the exact integral of that function since open. The reported power is that function seen
 * through the model's sensor: a boxcar (instant) or moving (averaged) window, published once per
 * update period. With state=PATH the MIG state, processes and power limit live in a JSON file
 * guarded by flock, so that separate processes see one GPU.
 *
 * The power limit (a stated DVFS model, emulation, not a measurement). Let D = max_w - idle_w and
 * s = f / f_max the SM clock as a fraction of its maximum. Dynamic power is D * load * g(s) with
 * g(s) = s^3 while the voltage follows the clock (P ~ f V^2, V ~ f: s >= S_VFLOOR = 0.7) and
 * g(s) = s * S_VFLOOR^2 below that, where the voltage stays at its floor (P ~ f). Under a limit L
 * below idle_w + D * load the clock drops to the s that fits, g(s) = (L - idle_w) / (D * load),
 * floored at s_min = sm_idle_mhz / sm_max_mhz; the power is then idle_w + D * load * g(s) (the
 * limit, unless the floor binds), the throttle reason "sw power cap" is set, and the work rate of
 * compute-bound work is proportional to s (mb__emu_speed). The energy counter stays the exact
 * integral of this clipped power. The default and maximum limit is max_w; the minimum is
 * min_limit_w (default 30% of max_w). With trace= the trace is played as given and the limit
 * cannot be set.
 */
#include "device/emu.h"

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

#define EMU_MAX_GI 15 /* GI ids 0..14 (mig-geometry.md §8.1) */
#define EMU_MAX_CI 8  /* CI ids 0..7 */
#define EMU_MAX_FAULTS 16
#define EMU_MAX_BUSY 16
#define EMU_MAX_SEGMENTS 256
#define EMU_TRACE_MAX 100000
#define EMU_STATE_MAX (4u << 20) /* a state file larger than this is not ours */
#define EMU_PATH_MAX 1024
#define MIB (1024ull * 1024ull)

/* Per-model defaults that the catalog does not hold. Emulation defaults, not measurements. */
struct emu_model_defaults {
    const char *model; /* catalog name */
    const char *vendor_name;
    double idle_w, max_w;
    bool gpm; /* Hopper and later */
    uint32_t sm_idle_mhz, sm_max_mhz, mem_mhz;
};

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

/* The operations that fault injection and call counting know, in one list. */
#define EMU_OP_LIST(X)                                                                             \
    X(info)                                                                                        \
    X(telemetry)                                                                                   \
    X(sensor)                                                                                      \
    X(mig_mode)                                                                                    \
    X(mig_set_mode)                                                                                \
    X(mig_profiles)                                                                                \
    X(mig_placements)                                                                              \
    X(create_gi)                                                                                   \
    X(create_ci)                                                                                   \
    X(mig_instances)                                                                               \
    X(destroy_ci)                                                                                  \
    X(destroy_gi)                                                                                  \
    X(processes)                                                                                   \
    X(mig_activity)                                                                                \
    X(attach_process)                                                                              \
    X(detach_process)                                                                              \
    X(reset)                                                                                       \
    X(power_limit)                                                                                 \
    X(set_power_limit)                                                                             \
    X(speed)                                                                                       \
    X(mig_switch_mode)

enum emu_op {
#define EMU_OP_ENUM(n) OP_##n,
    EMU_OP_LIST(EMU_OP_ENUM)
#undef EMU_OP_ENUM
        OP__COUNT
};

static const char *const op_names[] = {
#define EMU_OP_NAME(n) #n,
    EMU_OP_LIST(EMU_OP_NAME)
#undef EMU_OP_NAME
};

struct emu_ci {
    bool used;
    unsigned profile_id; /* CI profile id (= NVML CI enum) */
    unsigned start, slices;
};

struct emu_gi {
    bool used;
    unsigned profile_id; /* driver id */
    unsigned start, size;
    struct emu_ci ci[EMU_MAX_CI];
};

struct emu_proc {
    unsigned pid;
    int gi, ci;
    uint64_t mem_bytes;
    char name[64];
    bool live; /* a real process of this host: dropped when its pid no longer exists */
};

/* Everything that a state file shares between processes. */
struct emu_state {
    int mig_current, mig_pending;
    struct emu_gi gi[EMU_MAX_GI];
    size_t n_procs;
    struct emu_proc procs[MB_MAX_PROCESSES];
    uint32_t limit_mw; /* the power limit set; 0: the default (never set) */
};

/* The clock fraction below which the voltage stays at its floor (see the model above). */
#define S_VFLOOR 0.7

struct emu_fault {
    enum emu_op op;
    unsigned long long nth;
    int status; /* EMU_CRASH: the process is killed instead */
};

#define EMU_CRASH (-1)

/* A stretch of time with constant load (power model without a trace). */
struct emu_segment {
    int64_t t0_ns; /* since open */
    double e0_j;   /* energy delivered since open at t0 */
    double power_w;
};

struct emu_trace_pt {
    double t_s, w, cum_j; /* cum_j: energy from time 0 to t_s */
};

struct emu {
    struct mb_device base;
    struct mb_catalog *cat;
    const struct mb_gpu_model *model;
    struct emu_model_defaults defs;
    unsigned index;
    char uuid[MB_UUID_MAX];
    char state_path[EMU_PATH_MAX];
    int lock_fd;
    struct emu_state st;
    /* Power model. */
    double idle_w, max_w;
    double min_limit_w;  /* lowest settable power limit; default and maximum are max_w */
    bool limit_denied;   /* limit_perm=deny: setting the limit answers "no permission" */
    double init_limit_w; /* limit_w=: the limit of a new GPU; 0: the default */
    bool load_fixed;
    double load;
    struct emu_trace_pt *trace;
    size_t n_trace;
    size_t n_seg;
    struct emu_segment seg[EMU_MAX_SEGMENTS];
    /* Energy counter. */
    bool counter;
    unsigned long long energy0_mj, wrap_mj, energy_update_ms;
    /* Sensor: the catalog's facts (sens), then what the options changed. */
    struct mb_model_sensor sens;
    enum mb_power_kind sensor;
    unsigned long long update_ms, avg_ms;
    /* Clock. */
    bool manual_clock;
    int64_t manual_ns;
    int64_t open_ns;
    /* Faults. */
    size_t n_faults;
    struct emu_fault faults[EMU_MAX_FAULTS];
    unsigned long long op_calls[OP__COUNT];
    unsigned long long calls;
    bool lost_set;
    unsigned long long lost_after;
    /* MIG-mode activation: reset=unavailable (a passthrough VM), busy=PID+PID (clients that
     * hold the GPU without being compute processes: a monitoring agent, a display server). */
    bool no_reset;
    size_t n_busy;
    unsigned busy[EMU_MAX_BUSY];
    bool crash_midway; /* crash=mig_switch_mode:N: killed after staging, before activating */
};

static struct emu *as_emu(struct mb_device *dev)
{
    return (struct emu *)dev;
}

/* ---- ids, names, hashing --------------------------------------------------------------- */

static uint64_t fnv1a(const char *s, uint64_t h)
{
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 0x100000001b3ull;
    }
    return h;
}

/* A deterministic UUID-shaped string from text: prefix + 8-4-4-4-12 hex digits. */
static void make_uuid(const char *prefix, const char *text, char *out, size_t cap)
{
    uint64_t a = fnv1a(text, 0xcbf29ce484222325ull);
    uint64_t b = fnv1a(text, a ^ 0x9e3779b97f4a7c15ull);
    snprintf(out, cap, "%s%08x-%04x-%04x-%04x-%012llx", prefix, (unsigned)(a >> 32),
             (unsigned)((a >> 16) & 0xffff), (unsigned)(a & 0xffff), (unsigned)(b >> 48),
             (unsigned long long)(b & 0xffffffffffffull));
}

static void mig_uuid(const struct emu *e, unsigned gi, unsigned ci, char *out, size_t cap)
{
    char text[MB_UUID_MAX + 32];
    snprintf(text, sizeof(text), "%s/gi%u/ci%u", e->uuid, gi, ci);
    make_uuid("MIG-", text, out, cap);
}

static const struct mb_gi_profile *profile_by_id(const struct emu *e, unsigned driver_id)
{
    if (driver_id > 0x7fffffffu)
        return NULL;
    return mb_model_profile_by_driver_id(e->model, (int)driver_id);
}

/* ---- the power model ------------------------------------------------------------------- */

static int64_t emu_now(const struct emu *e)
{
    return e->manual_clock ? e->manual_ns : (int64_t)(mb_clock_monotonic_ns() - e->open_ns);
}

static double trace_power(const struct emu *e, double t)
{
    const struct emu_trace_pt *p = e->trace;
    if (t <= p[0].t_s)
        return p[0].w;
    if (t >= p[e->n_trace - 1].t_s)
        return p[e->n_trace - 1].w;
    size_t lo = 0, hi = e->n_trace - 1;
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if (p[mid].t_s <= t)
            lo = mid;
        else
            hi = mid;
    }
    double f = (t - p[lo].t_s) / (p[hi].t_s - p[lo].t_s);
    return p[lo].w + f * (p[hi].w - p[lo].w);
}

static double trace_energy(const struct emu *e, double t)
{
    const struct emu_trace_pt *p = e->trace;
    if (t <= p[0].t_s)
        return p[0].w * t; /* constant before the first point; negative before time 0 */
    size_t last = e->n_trace - 1;
    if (t >= p[last].t_s)
        return p[last].cum_j + (t - p[last].t_s) * p[last].w;
    size_t lo = 0, hi = last;
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if (p[mid].t_s <= t)
            lo = mid;
        else
            hi = mid;
    }
    return p[lo].cum_j + (t - p[lo].t_s) * (p[lo].w + trace_power(e, t)) / 2.0;
}

/* Energy delivered from time 0 to t (ns since open); before 0 the first power extends back. */
static double energy_at(const struct emu *e, int64_t t_ns)
{
    if (e->trace)
        return trace_energy(e, (double)t_ns / 1e9);
    size_t i = e->n_seg - 1;
    while (i > 0 && e->seg[i].t0_ns > t_ns)
        i--;
    const struct emu_segment *s = &e->seg[i];
    return s->e0_j + s->power_w * (double)(t_ns - s->t0_ns) / 1e9;
}

static double power_at(const struct emu *e, int64_t t_ns)
{
    if (e->trace)
        return trace_power(e, (double)t_ns / 1e9);
    size_t i = e->n_seg - 1;
    while (i > 0 && e->seg[i].t0_ns > t_ns)
        i--;
    return e->seg[i].power_w;
}

static double limit_w(const struct emu *e)
{
    return e->st.limit_mw ? (double)e->st.limit_mw / 1000.0 : e->max_w;
}

static double vf_curve(double s)
{
    return s >= S_VFLOOR ? s * s * s : s * S_VFLOOR * S_VFLOOR;
}

static double min_speed(const struct emu *e)
{
    return e->defs.sm_max_mhz ? (double)e->defs.sm_idle_mhz / (double)e->defs.sm_max_mhz : 0.1;
}

/* The clock fraction at which `load` fits under the power limit (1 when it fits at full clock). */
static double speed_for(const struct emu *e, double load)
{
    double dyn = (e->max_w - e->idle_w) * load;
    double room = limit_w(e) - e->idle_w;
    if (dyn <= 0 || dyn <= room)
        return 1.0;
    double g = room > 0 ? room / dyn : 0;
    double s = g >= S_VFLOOR * S_VFLOOR * S_VFLOOR ? cbrt(g) : g / (S_VFLOOR * S_VFLOOR);
    double lo = min_speed(e);
    return s < lo ? lo : (s > 1 ? 1 : s);
}

/* The power drawn at `load` under the power limit. */
static double model_power(const struct emu *e, double load)
{
    return e->idle_w + (e->max_w - e->idle_w) * load * vf_curve(speed_for(e, load));
}

/* The load that the attached processes put on the GPU (when load= and trace= are not given). */
static double auto_load(const struct emu *e)
{
    if (e->st.n_procs == 0)
        return 0.0;
    if (!e->st.mig_current)
        return 1.0;
    unsigned busy = 0;
    for (unsigned g = 0; g < EMU_MAX_GI; g++) {
        if (!e->st.gi[g].used)
            continue;
        for (size_t p = 0; p < e->st.n_procs; p++) {
            if (e->st.procs[p].gi == (int)g) {
                const struct mb_gi_profile *prof = profile_by_id(e, e->st.gi[g].profile_id);
                busy += prof ? prof->compute_slices : 0;
                break;
            }
        }
    }
    double l = (double)busy / (double)e->model->compute_slices;
    return l > 1.0 ? 1.0 : l;
}

/* Starts a new constant-power segment when the load changed (processes came or went). */
static void update_load(struct emu *e)
{
    if (e->trace)
        return;
    double w = model_power(e, e->load_fixed ? e->load : auto_load(e));
    struct emu_segment *last = &e->seg[e->n_seg - 1];
    if (w == last->power_w)
        return;
    int64_t now = emu_now(e);
    struct emu_segment next = {now, energy_at(e, now), w};
    if (now <= last->t0_ns) {
        /* Same instant: replace rather than add an empty segment. */
        next.e0_j = last->e0_j;
        *last = next;
        return;
    }
    if (e->n_seg == EMU_MAX_SEGMENTS) {
        /* Forget the oldest; only sensor windows reaching that far back lose precision. */
        memmove(&e->seg[0], &e->seg[1], sizeof(e->seg[0]) * (EMU_MAX_SEGMENTS - 1));
        e->n_seg--;
    }
    e->seg[e->n_seg++] = next;
}

/* Mean power over the window [end - width, end]. */
static double window_mean(const struct emu *e, int64_t end_ns, int64_t width_ns)
{
    if (width_ns <= 0)
        return power_at(e, end_ns);
    return (energy_at(e, end_ns) - energy_at(e, end_ns - width_ns)) * 1e9 / (double)width_ns;
}

/* The sensor publishes a new value every update period, computed over the window before it. */
static double sensor_reading(const struct emu *e, int64_t now_ns, unsigned long long window_ms)
{
    int64_t period = (int64_t)e->update_ms * 1000000;
    int64_t published = period > 0 ? (now_ns / period) * period : now_ns;
    return window_mean(e, published, (int64_t)window_ms * 1000000);
}

static uint32_t to_mw(double w)
{
    double mw = w * 1000.0 + 0.5;
    if (mw < 0)
        return 0;
    if (mw > 4e9)
        return 4000000000u;
    return (uint32_t)mw;
}

/* Load implied by the current power, for utilisation and activity. */
static double current_load(const struct emu *e, int64_t now)
{
    if (!e->trace)
        return e->load_fixed ? e->load : auto_load(e);
    if (e->max_w <= e->idle_w)
        return 0.0;
    double l = (power_at(e, now) - e->idle_w) / (e->max_w - e->idle_w);
    return l < 0 ? 0 : (l > 1 ? 1 : l);
}

/* ---- the state file -------------------------------------------------------------------- */

static void state_init(struct emu_state *st, int mig)
{
    memset(st, 0, sizeof(*st));
    st->mig_current = mig;
    st->mig_pending = mig;
}

static int json_uint(const cJSON *obj, const char *field, unsigned max, unsigned *out,
                     const char *path, struct mb_error *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, field);
    if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > max ||
        v->valuedouble != floor(v->valuedouble))
        return mb_error_set(err, MB_EPARSE, "%s: field '%s' missing or out of range (0..%u)", path,
                            field, max);
    *out = (unsigned)v->valuedouble;
    return MB_OK;
}

static int json_int(const cJSON *obj, const char *field, int min, int max, int *out,
                    const char *path, struct mb_error *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, field);
    if (!cJSON_IsNumber(v) || v->valuedouble < min || v->valuedouble > max ||
        v->valuedouble != floor(v->valuedouble))
        return mb_error_set(err, MB_EPARSE, "%s: field '%s' missing or out of range (%d..%d)", path,
                            field, min, max);
    *out = (int)v->valuedouble;
    return MB_OK;
}

/* A state file is outside input: every GI, CI and process must be one the emulator could make. */
static int state_check(const struct emu *e, const struct emu_state *st, struct mb_error *err)
{
    const char *path = e->state_path;
    for (unsigned g = 0; g < EMU_MAX_GI; g++) {
        const struct emu_gi *gi = &st->gi[g];
        if (!gi->used)
            continue;
        if (!st->mig_current)
            return mb_error_set(err, MB_EPARSE, "%s: gpu_instances: GI %u exists with MIG disabled",
                                path, g);
        const struct mb_gi_profile *p = profile_by_id(e, gi->profile_id);
        if (!p)
            return mb_error_set(err, MB_EPARSE,
                                "%s: gpu_instances: GI %u: profile_id %u is not a %s profile", path,
                                g, gi->profile_id, e->model->name);
        bool valid = false;
        for (size_t i = 0; i < p->n_placements; i++)
            valid =
                valid || (p->placements[i].start == gi->start && p->placements[i].size == gi->size);
        if (!valid)
            return mb_error_set(err, MB_EPARSE,
                                "%s: gpu_instances: GI %u: %u:%u is not a placement of %s", path, g,
                                gi->start, gi->size, p->name);
        for (unsigned h = 0; h < g; h++) {
            const struct emu_gi *o = &st->gi[h];
            if (o->used && gi->start < o->start + o->size && o->start < gi->start + gi->size)
                return mb_error_set(err, MB_EPARSE, "%s: gpu_instances: GIs %u and %u overlap",
                                    path, h, g);
        }
        unsigned used = 0;
        for (unsigned c = 0; c < EMU_MAX_CI; c++) {
            const struct emu_ci *ci = &gi->ci[c];
            if (!ci->used)
                continue;
            used += ci->slices;
            if (ci->slices == 0 || ci->start + ci->slices > p->compute_slices ||
                used > p->compute_slices)
                return mb_error_set(err, MB_EPARSE,
                                    "%s: compute_instances: GI %u CI %u does not fit in %s", path,
                                    g, c, p->name);
        }
    }
    for (size_t i = 0; i < st->n_procs; i++) {
        const struct emu_proc *pr = &st->procs[i];
        bool ok = st->mig_current ? (pr->gi >= 0 && pr->ci >= 0 && st->gi[pr->gi].used &&
                                     st->gi[pr->gi].ci[pr->ci].used)
                                  : (pr->gi < 0 && pr->ci < 0);
        if (!ok)
            return mb_error_set(err, MB_EPARSE,
                                "%s: processes: pid %u runs on GI %d CI %d, which does not exist",
                                path, pr->pid, pr->gi, pr->ci);
    }
    return MB_OK;
}

/* A list field of the state: absent is empty; anything but an array of objects is refused. */
static int json_list(const cJSON *obj, const char *field, const char *where, const cJSON **out,
                     const char *path, struct mb_error *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, field);
    *out = v;
    if (!v)
        return MB_OK;
    if (!cJSON_IsArray(v))
        return mb_error_set(err, MB_EPARSE, "%s: field '%s%s': expected a list", path, where,
                            field);
    size_t i = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, v)
    {
        if (!cJSON_IsObject(it))
            return mb_error_set(err, MB_EPARSE, "%s: field '%s%s[%zu]': expected an object", path,
                                where, field, i);
        i++;
    }
    return MB_OK;
}

/* The optional power limit of a state: absent is the default; else within the device's range. */
static int limit_from_json(const struct emu *e, const cJSON *root, struct emu_state *st,
                           struct mb_error *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "power_limit_mw");
    if (!v)
        return MB_OK;
    double lo = floor(e->min_limit_w * 1000.0), hi = ceil(e->max_w * 1000.0);
    if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || v->valuedouble < lo ||
        v->valuedouble > hi)
        return mb_error_set(err, MB_EPARSE,
                            "%s: field 'power_limit_mw' out of range (%.0f..%.0f mW for this GPU)",
                            e->state_path, lo, hi);
    st->limit_mw = (uint32_t)v->valuedouble;
    return MB_OK;
}

static int state_from_json(const struct emu *e, const char *text, struct emu_state *st,
                           struct mb_error *err)
{
    const char *path = e->state_path;
    int rc = MB_OK;
    cJSON *root = NULL;
    if ((rc = mb_json_parse(text, strlen(text), path, &root, err)) != MB_OK) {
        mb_error_prefix(err, "not a migbench emulator state: ");
        goto done;
    }
    if (!cJSON_IsObject(root)) {
        rc =
            mb_error_set(err, MB_EPARSE, "%s: not a migbench emulator state (not an object)", path);
        goto done;
    }
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
    if (!cJSON_IsString(model)) {
        rc = mb_error_set(err, MB_EPARSE, "%s: field 'model' missing", path);
        goto done;
    }
    if (strcmp(model->valuestring, e->model->name) != 0) {
        rc = mb_error_set(err, MB_EINVAL, "%s: state belongs to a %s, not a %s", path,
                          model->valuestring, e->model->name);
        goto done;
    }
    memset(st, 0, sizeof(*st));
    if ((rc = limit_from_json(e, root, st, err)) != MB_OK)
        goto done;
    unsigned cur = 0, pend = 0;
    if ((rc = json_uint(root, "mig_current", 1, &cur, path, err)) ||
        (rc = json_uint(root, "mig_pending", 1, &pend, path, err)))
        goto done;
    st->mig_current = (int)cur;
    st->mig_pending = (int)pend;
    const cJSON *gis, *procs;
    if ((rc = json_list(root, "gpu_instances", "", &gis, path, err)) ||
        (rc = json_list(root, "processes", "", &procs, path, err)))
        goto done;
    const cJSON *g;
    size_t gi_index = 0;
    cJSON_ArrayForEach(g, gis)
    {
        unsigned id, prof, start, size;
        char where[64];
        snprintf(where, sizeof(where), "gpu_instances[%zu].", gi_index++);
        const cJSON *cis;
        if ((rc = json_uint(g, "id", EMU_MAX_GI - 1, &id, path, err)) ||
            (rc = json_uint(g, "profile_id", 1000, &prof, path, err)) ||
            (rc = json_uint(g, "start", MB_MAX_MEMORY_SLICES, &start, path, err)) ||
            (rc = json_uint(g, "size", MB_MAX_MEMORY_SLICES, &size, path, err)) ||
            (rc = json_list(g, "compute_instances", where, &cis, path, err)))
            goto done;
        struct emu_gi *gi = &st->gi[id];
        if (gi->used) {
            rc = mb_error_set(err, MB_EPARSE, "%s: field '%sid': GI id %u appears twice", path,
                              where, id);
            goto done;
        }
        gi->used = true;
        gi->profile_id = prof;
        gi->start = start;
        gi->size = size;
        const cJSON *c;
        cJSON_ArrayForEach(c, cis)
        {
            unsigned cid, cprof, cstart, cslices;
            if ((rc = json_uint(c, "id", EMU_MAX_CI - 1, &cid, path, err)) ||
                (rc = json_uint(c, "profile_id", 100, &cprof, path, err)) ||
                (rc = json_uint(c, "start", 8, &cstart, path, err)) ||
                (rc = json_uint(c, "slices", 8, &cslices, path, err)))
                goto done;
            if (gi->ci[cid].used) {
                rc = mb_error_set(err, MB_EPARSE,
                                  "%s: field '%scompute_instances': CI id %u appears twice", path,
                                  where, cid);
                goto done;
            }
            gi->ci[cid] = (struct emu_ci){true, cprof, cstart, cslices};
        }
    }
    const cJSON *p;
    cJSON_ArrayForEach(p, procs)
    {
        if (st->n_procs == MB_MAX_PROCESSES) {
            rc = mb_error_set(err, MB_EPARSE, "%s: too many processes", path);
            goto done;
        }
        struct emu_proc *pr = &st->procs[st->n_procs];
        unsigned pid;
        const cJSON *mem = cJSON_GetObjectItemCaseSensitive(p, "mem_bytes");
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(p, "name");
        if ((rc = json_uint(p, "pid", 0x7fffffff, &pid, path, err)) ||
            (rc = json_int(p, "gi", -1, EMU_MAX_GI - 1, &pr->gi, path, err)) ||
            (rc = json_int(p, "ci", -1, EMU_MAX_CI - 1, &pr->ci, path, err)))
            goto done;
        if (!cJSON_IsNumber(mem) || mem->valuedouble < 0 || mem->valuedouble > 0x1p62) {
            rc = mb_error_set(err, MB_EPARSE,
                              "%s: field 'processes[%zu].mem_bytes' missing or out of range", path,
                              st->n_procs);
            goto done;
        }
        for (size_t k = 0; k < st->n_procs; k++)
            if (st->procs[k].pid == pid) {
                rc = mb_error_set(err, MB_EPARSE,
                                  "%s: field 'processes[%zu].pid': pid %u appears twice", path,
                                  st->n_procs, pid);
                goto done;
            }
        pr->pid = pid;
        pr->mem_bytes = (uint64_t)mem->valuedouble;
        pr->live = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(p, "live"));
        if (cJSON_IsString(name))
            snprintf(pr->name, sizeof(pr->name), "%s", name->valuestring);
        st->n_procs++;
    }
    rc = state_check(e, st, err);
done:
    cJSON_Delete(root);
    return rc;
}

static cJSON *state_to_json(const struct emu *e)
{
    cJSON *root = cJSON_CreateObject();
    if (!root)
        return NULL;
    cJSON_AddNumberToObject(root, "version", 1);
    cJSON_AddStringToObject(root, "model", e->model->name);
    cJSON_AddStringToObject(root, "uuid", e->uuid);
    cJSON_AddNumberToObject(root, "mig_current", e->st.mig_current);
    cJSON_AddNumberToObject(root, "mig_pending", e->st.mig_pending);
    if (e->st.limit_mw)
        cJSON_AddNumberToObject(root, "power_limit_mw", e->st.limit_mw);
    cJSON *gis = cJSON_AddArrayToObject(root, "gpu_instances");
    for (unsigned g = 0; gis && g < EMU_MAX_GI; g++) {
        const struct emu_gi *gi = &e->st.gi[g];
        if (!gi->used)
            continue;
        cJSON *o = cJSON_CreateObject();
        if (!o)
            break;
        cJSON_AddItemToArray(gis, o);
        cJSON_AddNumberToObject(o, "id", g);
        cJSON_AddNumberToObject(o, "profile_id", gi->profile_id);
        cJSON_AddNumberToObject(o, "start", gi->start);
        cJSON_AddNumberToObject(o, "size", gi->size);
        cJSON *cis = cJSON_AddArrayToObject(o, "compute_instances");
        for (unsigned c = 0; cis && c < EMU_MAX_CI; c++) {
            if (!gi->ci[c].used)
                continue;
            cJSON *co = cJSON_CreateObject();
            if (!co)
                break;
            cJSON_AddItemToArray(cis, co);
            cJSON_AddNumberToObject(co, "id", c);
            cJSON_AddNumberToObject(co, "profile_id", gi->ci[c].profile_id);
            cJSON_AddNumberToObject(co, "start", gi->ci[c].start);
            cJSON_AddNumberToObject(co, "slices", gi->ci[c].slices);
        }
    }
    cJSON *procs = cJSON_AddArrayToObject(root, "processes");
    for (size_t i = 0; procs && i < e->st.n_procs; i++) {
        const struct emu_proc *p = &e->st.procs[i];
        cJSON *o = cJSON_CreateObject();
        if (!o)
            break;
        cJSON_AddItemToArray(procs, o);
        cJSON_AddNumberToObject(o, "pid", p->pid);
        cJSON_AddNumberToObject(o, "gi", p->gi);
        cJSON_AddNumberToObject(o, "ci", p->ci);
        cJSON_AddNumberToObject(o, "mem_bytes", (double)p->mem_bytes);
        cJSON_AddStringToObject(o, "name", p->name);
        if (p->live)
            cJSON_AddBoolToObject(o, "live", true);
    }
    return root;
}

/* Reads the state file into e->st. *found is false when the file does not exist yet. */
static int state_load(struct emu *e, bool *found, struct mb_error *err)
{
    *found = false;
    char *buf = NULL;
    int rc = mb_file_read(e->state_path, EMU_STATE_MAX, &buf, NULL, err);
    if (rc == MB_ENOTFOUND)
        return MB_OK;
    if (rc == MB_ERANGE)
        return mb_error_set(err, MB_EPARSE, "%s: not a migbench emulator state (size)",
                            e->state_path);
    if (rc != MB_OK)
        return rc;
    struct emu_state st;
    rc = state_from_json(e, buf, &st, err);
    if (rc == MB_OK) {
        e->st = st;
        *found = true;
    }
    free(buf);
    return rc;
}

/* Writes the state atomically, so a process that dies mid-write leaves the previous state. */
static int state_save(struct emu *e, struct mb_error *err)
{
    cJSON *root = state_to_json(e);
    int rc = root ? mb_file_write_json_atomic(e->state_path, root, 0666, err)
                  : mb_error_set(err, MB_ENOMEM, "%s: out of memory", e->state_path);
    cJSON_Delete(root);
    if (rc != MB_OK)
        mb_error_prefix(err, "cannot write the emulator state: ");
    return rc;
}

/* ---- operation framing: faults, locking, state ----------------------------------------- */

/* True when pid is gone or a zombie: it has exited, and a driver has torn its context down. */
static bool pid_dead(unsigned pid)
{
    if (kill((pid_t)pid, 0) != 0)
        return errno == ESRCH;
    char path[64], buf[512];
    snprintf(path, sizeof(path), "/proc/%u/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')');
    return p && (p[1] == ' ') && (p[2] == 'Z' || p[2] == 'X');
}

/* Drops live processes whose pid is gone (a job that was killed cannot detach itself); true if
 * any was dropped. */
static bool prune_dead(struct emu *e)
{
    size_t kept = 0;
    for (size_t i = 0; i < e->st.n_procs; i++) {
        const struct emu_proc *p = &e->st.procs[i];
        if (p->live && pid_dead(p->pid))
            continue;
        e->st.procs[kept++] = *p;
    }
    bool pruned = kept != e->st.n_procs;
    e->st.n_procs = kept;
    return pruned;
}

/* Counts the call and applies injected faults, then locks and loads the shared state. */
static int op_begin(struct emu *e, enum emu_op op, struct mb_error *err)
{
    e->calls++;
    e->op_calls[op]++;
    if (e->lost_set && e->calls > e->lost_after)
        return mb_error_set(err, MB_EGONE,
                            "emu: the GPU has fallen off the bus (injected: lost_after=%llu)",
                            e->lost_after);
    for (size_t i = 0; i < e->n_faults; i++) {
        if (e->faults[i].op != op || e->faults[i].nth != e->op_calls[op])
            continue;
        if (e->faults[i].status == EMU_CRASH) {
            /* A crash for tests of recovery: a switch dies halfway, anything else at once. */
            if (op == OP_mig_switch_mode) {
                e->crash_midway = true;
                continue;
            }
            raise(SIGKILL);
        }
        return mb_error_set(err, e->faults[i].status, "emu: %s (injected failure of %s call %llu)",
                            mb_status_str(e->faults[i].status), op_names[op], e->faults[i].nth);
    }
    if (!e->state_path[0]) {
        if (prune_dead(e))
            update_load(e);
        return MB_OK;
    }
    if (flock(e->lock_fd, LOCK_EX) != 0)
        return mb_error_set(err, MB_EIO, "%s: lock: %s", e->state_path, strerror(errno));
    bool found;
    int rc = state_load(e, &found, err);
    if (rc == MB_OK && prune_dead(e))
        rc = state_save(e, err);
    if (rc != MB_OK) {
        flock(e->lock_fd, LOCK_UN);
        return rc;
    }
    update_load(e);
    return MB_OK;
}

/* Saves the state when the operation changed it and releases the lock; returns rc. */
static int op_end(struct emu *e, int rc, bool changed, struct mb_error *err)
{
    if (changed)
        update_load(e);
    if (!e->state_path[0])
        return rc;
    if (changed && rc == MB_OK)
        rc = state_save(e, err);
    flock(e->lock_fd, LOCK_UN);
    return rc;
}

static int need_mig(const struct emu *e, const char *what, struct mb_error *err)
{
    if (e->st.mig_current)
        return MB_OK;
    if (e->st.mig_pending)
        return mb_error_set(err, MB_EUNSUPPORTED,
                            "emu %s: cannot %s: MIG mode is pending enable; a GPU reset is "
                            "required before it takes effect",
                            e->model->name, what);
    return mb_error_set(err, MB_EUNSUPPORTED,
                        "emu %s: cannot %s: MIG mode is disabled (enable it, then reset the GPU)",
                        e->model->name, what);
}

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
        if (strcmp(opname, op_names[i]) == 0)
            op = i;
    if (op < 0) {
        char known[512] = "";
        for (int i = 0; i < OP__COUNT; i++) {
            size_t used = strlen(known);
            snprintf(known + used, sizeof(known) - used, "%s%s", i ? ", " : "", op_names[i]);
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

static int parse_option(struct emu *e, struct emu_opts *o, const char *key, const char *val,
                        struct mb_error *err)
{
    unsigned long long u;
    double d;
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
    } else if (strcmp(key, "idle_w") == 0 || strcmp(key, "max_w") == 0) {
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
    } else if (strcmp(key, "energy0_mj") == 0) {
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
    } else if (strcmp(key, "sensor") == 0) {
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
    } else if (strcmp(key, "fail") == 0) {
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
    } else if (strcmp(key, "count") == 0) {
        /* Several GPUs are several devices: mb_device_spec_expand splits the spec first. */
        if (strcmp(val, "1") != 0)
            return mb_error_set(err, MB_EINVAL,
                                "option count=%s names several GPUs: expand the spec into one "
                                "spec per GPU first (mb_device_spec_expand)",
                                val);
    } else if (strcmp(key, "lost_after") == 0) {
        if (mb__spec_u64(key, val, &e->lost_after, err))
            return MB_EINVAL;
        e->lost_set = true;
    } else {
        return mb_error_set(err, MB_EINVAL,
                            "unknown emu option '%s' (known: mig, index, state, catalog, idle_w, "
                            "max_w, min_limit_w, limit_w, limit_perm, load, trace, energy0_mj, "
                            "wrap_mj, energy_update_ms, counter, sensor, update_ms, avg_ms, clock, "
                            "fail, crash, lost_after, reset, busy, count)",
                            key);
    }
    return MB_OK;
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
    if ((rc = limit_options(e, err)) != MB_OK)
        goto fail;
    sensor_defaults(e, &o);
    if (o.trace[0] && e->load_fixed) {
        rc = mb_error_set(err, MB_EINVAL, "emu: give load= or trace=, not both");
        goto fail;
    }
    if (o.trace[0] && (rc = load_trace(e, o.trace, err)) != MB_OK)
        goto fail;

    char text[MB_MODEL_NAME_MAX + 64];
    snprintf(text, sizeof(text), "migbench-emu/%s/%u", e->model->name, e->index);
    make_uuid("GPU-", text, e->uuid, sizeof(e->uuid));

    state_init(&e->st, o.mig > 0);
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
        rc = state_load(e, &found, err);
        if (rc == MB_OK && !found)
            rc = state_save(e, err); /* a new GPU: its first state, from the options */
        flock(e->lock_fd, LOCK_UN);
        if (rc != MB_OK)
            goto fail;
    }
    e->open_ns = mb_clock_monotonic_ns();
    e->n_seg = 1;
    double l = e->load_fixed ? e->load : auto_load(e);
    e->seg[0] = (struct emu_segment){0, 0.0, model_power(e, l)};
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

bool mb__emu_is(const struct mb_device *dev)
{
    return dev && dev->ops == &mb__emu_ops;
}

const struct mb_gpu_model *mb__emu_model(const struct mb_device *dev)
{
    return mb__emu_is(dev) ? ((const struct emu *)dev)->model : NULL;
}

/* ---- identity, telemetry, sensor ------------------------------------------------------- */

static int emu_info(struct mb_device *dev, struct mb_device_info *out, struct mb_error *err)
{
    struct emu *e = as_emu(dev);
    int rc = op_begin(e, OP_info, err);
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
    return op_end(e, MB_OK, false, err);
}

static uint64_t procs_mem(const struct emu *e, int gi)
{
    uint64_t m = 0;
    for (size_t i = 0; i < e->st.n_procs; i++)
        if (gi < 0 || e->st.procs[i].gi == gi)
            m += e->st.procs[i].mem_bytes;
    return m;
}

static unsigned long long counter_mj(const struct emu *e, int64_t now)
{
    int64_t t = now;
    if (e->energy_update_ms) {
        int64_t q = (int64_t)e->energy_update_ms * 1000000;
        t = (now / q) * q;
    }
    double j = energy_at(e, t);
    unsigned long long mj = e->energy0_mj + (unsigned long long)llround(j * 1000.0);
    return e->wrap_mj ? mj % e->wrap_mj : mj;
}

static int emu_telemetry(struct mb_device *dev, struct mb_telemetry *out, struct mb_error *err)
{
    struct emu *e = as_emu(dev);
    int rc = op_begin(e, OP_telemetry, err);
    if (rc)
        return rc;
    memset(out, 0, sizeof(*out));
    int64_t now = emu_now(e);
    out->t_ns = e->manual_clock ? e->open_ns + now : mb_clock_monotonic_ns();
    double inst = sensor_reading(e, now, e->sensor == MB_POWER_INSTANT ? e->avg_ms : 25);
    out->power_instant_mw = to_mw(inst);
    out->valid |= MB_TEL_POWER_INSTANT;
    if (e->sensor == MB_POWER_AVERAGED || e->sens.average_field == 1) {
        double avg = sensor_reading(e, now, e->sensor == MB_POWER_AVERAGED ? e->avg_ms : 1000);
        out->power_avg_mw = to_mw(avg);
        out->valid |= MB_TEL_POWER_AVG;
    }
    out->power_mw = e->sensor == MB_POWER_AVERAGED ? out->power_avg_mw : out->power_instant_mw;
    out->valid |= MB_TEL_POWER;
    if (e->counter) {
        out->energy_mj = counter_mj(e, now);
        out->valid |= MB_TEL_ENERGY;
    }
    double load = current_load(e, now);
    /* NVML: utilisation is not supported on a MIG-enabled GPU. */
    if (!e->st.mig_current) {
        out->util_gpu_pct = (uint32_t)lround(load * 100.0);
        out->util_mem_pct = (uint32_t)lround(load * 40.0);
        out->valid |= MB_TEL_UTIL_GPU | MB_TEL_UTIL_MEM;
    }
    out->mem_used_bytes = procs_mem(e, -1);
    out->valid |= MB_TEL_MEM_USED;
    double p = power_at(e, now);
    double speed = e->trace ? 1.0 : speed_for(e, load);
    out->clock_sm_mhz =
        p > e->idle_w ? (uint32_t)lround(e->defs.sm_max_mhz * speed) : e->defs.sm_idle_mhz;
    out->clock_mem_mhz = e->defs.mem_mhz;
    out->temp_c = (int32_t)lround(30.0 + (e->max_w > 0 ? 50.0 * p / e->max_w : 0.0));
    out->throttle_reasons = speed < 1.0 ? MB_THROTTLE_SW_POWER_CAP : 0;
    out->power_limit_mw = to_mw(limit_w(e));
    out->valid |=
        MB_TEL_CLOCK_SM | MB_TEL_CLOCK_MEM | MB_TEL_TEMP | MB_TEL_THROTTLE | MB_TEL_POWER_LIMIT;
    return op_end(e, MB_OK, false, err);
}

static uint32_t emu_caps(struct mb_device *dev)
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

static int emu_sensor(struct mb_device *dev, struct mb_sensor_info *out, struct mb_error *err)
{
    struct emu *e = as_emu(dev);
    int rc = op_begin(e, OP_sensor, err);
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
             e->trace ? "trace" : "idle+load", mb_power_kind_str(e->sensor), e->avg_ms,
             e->update_ms,
             !e->counter           ? "none"
             : e->energy_update_ms ? "stepped"
                                   : "exact");
    return op_end(e, MB_OK, false, err);
}

/* ---- MIG --------------------------------------------------------------------------------- */

static int emu_mig_mode(struct mb_device *dev, struct mb_mig_mode *out, struct mb_error *err)
{
    struct emu *e = as_emu(dev);
    int rc = op_begin(e, OP_mig_mode, err);
    if (rc)
        return rc;
    out->current = e->st.mig_current;
    out->pending = e->st.mig_pending;
    return op_end(e, MB_OK, false, err);
}

static bool any_gi(const struct emu *e)
{
    for (unsigned g = 0; g < EMU_MAX_GI; g++)
        if (e->st.gi[g].used)
            return true;
    return false;
}

static int emu_mig_set_mode(struct mb_device *dev, int enable, struct mb_error *err)
{
    struct emu *e = as_emu(dev);
    if (enable != 0 && enable != 1)
        return mb_error_set(err, MB_EINVAL, "emu: MIG mode must be 0 or 1, not %d", enable);
    int rc = op_begin(e, OP_mig_set_mode, err);
    if (rc)
        return rc;
    bool changed = false;
    if (!enable && any_gi(e)) {
        rc =
            mb_error_set(err, MB_EBUSY, "emu %s: cannot disable MIG mode while GPU instances exist",
                         e->model->name);
    } else if (e->st.mig_pending != enable) {
        /* Like a GPU that cannot be reset in place: the change waits for a reset. */
        e->st.mig_pending = enable;
        changed = true;
    }
    return op_end(e, rc, changed, err);
}

int mb__emu_reset(struct mb_device *dev, struct mb_error *err)
{
    if (!mb__emu_is(dev))
        return mb_error_set(err, MB_EINVAL, "not an emulated device");
    struct emu *e = as_emu(dev);
    int rc = op_begin(e, OP_reset, err);
    if (rc)
        return rc;
    if (e->st.n_procs)
        return op_end(e,
                      mb_error_set(err, MB_EBUSY, "emu: cannot reset the GPU: %zu processes run",
                                   e->st.n_procs),
                      false, err);
    e->st.mig_current = e->st.mig_pending;
    memset(e->st.gi, 0, sizeof(e->st.gi));
    return op_end(e, MB_OK, true, err);
}

/* "12, 34": the PIDs of the clients that hold the GPU, then of its compute processes. */
static void pid_list(const struct emu *e, char *out, size_t cap)
{
    size_t used = 0;
    out[0] = '\0';
    for (size_t i = 0; i < e->n_busy + e->st.n_procs && used < cap; i++) {
        unsigned pid = i < e->n_busy ? e->busy[i] : e->st.procs[i - e->n_busy].pid;
        int w = snprintf(out + used, cap - used, "%s%u", used ? ", " : "", pid);
        if (w < 0)
            break;
        used += (size_t)w;
    }
}

/*
 * Whether the driver could activate a staged mode now by unbinding and resetting the GPU: not in
 * a VM without reset, not while anything holds the GPU, not while instances exist.
 */
static int activation_check(const struct emu *e, int enable, struct mb_error *err)
{
    const char *mode = enable ? "enabled" : "disabled";
    if (e->no_reset)
        return mb_error_set(
            err, MB_ERESET_REQUIRED,
            "emu %s: MIG mode %s is pending: activating it needs a GPU reset that "
            "cannot be done here (reset=unavailable, as in a passthrough VM); reset "
            "the GPU from the host or reboot",
            e->model->name, mode);
    if (e->n_busy || e->st.n_procs) {
        char pids[256];
        pid_list(e, pids, sizeof(pids));
        return mb_error_set(err, MB_EBUSY,
                            "emu %s: MIG mode %s is pending: the GPU is in use by PIDs %s; stop "
                            "them and set the mode again",
                            e->model->name, mode, pids);
    }
    if (any_gi(e))
        return mb_error_set(err, MB_EBUSY,
                            "emu %s: MIG mode %s is pending: GPU instances still exist",
                            e->model->name, mode);
    return MB_OK;
}

static int emu_mig_switch_mode(struct mb_device *dev, int enable, struct mb_error *err)
{
    struct emu *e = as_emu(dev);
    if (enable != 0 && enable != 1)
        return mb_error_set(err, MB_EINVAL, "emu: MIG mode must be 0 or 1, not %d", enable);
    int rc = op_begin(e, OP_mig_switch_mode, err);
    if (rc)
        return rc;
    if (!enable && any_gi(e))
        return op_end(e,
                      mb_error_set(err, MB_EBUSY,
                                   "emu %s: cannot disable MIG mode while GPU instances exist",
                                   e->model->name),
                      false, err);
    bool changed = e->st.mig_pending != enable;
    e->st.mig_pending = enable;
    if (e->crash_midway) {
        op_end(e, MB_OK, changed, err); /* the staged mode is saved, as a driver would keep it */
        raise(SIGKILL);
    }
    int arc = MB_OK;
    if (e->st.mig_current != enable) {
        arc = activation_check(e, enable, err);
        if (arc == MB_OK) {
            e->st.mig_current = enable;
            changed = true;
        }
    }
    /* A refused activation leaves the mode pending, saved like any other change. */
    rc = op_end(e, MB_OK, changed, err);
    return rc != MB_OK ? rc : arc;
}

static unsigned gi_count(const struct emu *e, unsigned driver_id, bool *me_used, unsigned *total,
                         unsigned *slices_used)
{
    unsigned n = 0;
    *me_used = false;
    *total = 0;
    *slices_used = 0;
    for (unsigned g = 0; g < EMU_MAX_GI; g++) {
        if (!e->st.gi[g].used)
            continue;
        (*total)++;
        if (e->st.gi[g].profile_id == driver_id)
            n++;
        const struct mb_gi_profile *p = profile_by_id(e, e->st.gi[g].profile_id);
        if (p && p->media_extension)
            *me_used = true;
        if (p)
            *slices_used += p->compute_slices;
    }
    return n;
}

static bool slices_free(const struct emu *e, unsigned start, unsigned size)
{
    for (unsigned g = 0; g < EMU_MAX_GI; g++) {
        const struct emu_gi *gi = &e->st.gi[g];
        if (gi->used && start < gi->start + gi->size && gi->start < start + size)
            return false;
    }
    return true;
}

/*
 * Automatic placement order. mig-geometry.md §8.3 shows the driver filling 1-slice GIs at 6, 4,
 * 5, 0, 1, 2, 3 and putting a 2-slice GI at 4:2 first, then 0:2, on 8-slice GPUs; elsewhere the
 * emulator takes the lowest free start.
 */
static void auto_order(const struct emu *e, const struct mb_gi_profile *p, unsigned *order,
                       size_t *n)
{
    static const unsigned pref1[] = {6, 4, 5, 0, 1, 2, 3, 7};
    static const unsigned pref2[] = {4, 0, 2, 6};
    const unsigned *pref = NULL;
    size_t npref = 0;
    if (e->model->memory_slices == 8 && p->memory_slices == 1) {
        pref = pref1;
        npref = sizeof(pref1) / sizeof(pref1[0]);
    } else if (e->model->memory_slices == 8 && p->memory_slices == 2) {
        pref = pref2;
        npref = sizeof(pref2) / sizeof(pref2[0]);
    }
    *n = 0;
    for (size_t k = 0; k < npref; k++)
        for (size_t i = 0; i < p->n_placements; i++)
            if (p->placements[i].start == pref[k])
                order[(*n)++] = (unsigned)i;
    for (size_t i = 0; i < p->n_placements; i++) {
        bool seen = false;
        for (size_t k = 0; k < *n; k++)
            seen = seen || order[k] == i;
        if (!seen)
            order[(*n)++] = (unsigned)i;
    }
}

/* Why a GI of profile p cannot be created at pl (or anywhere, pl NULL); MB_OK if it can. */
static int gi_check(const struct emu *e, const struct mb_gi_profile *p,
                    const struct mb_placement *pl, struct mb_placement *chosen,
                    struct mb_error *err)
{
    bool me_used;
    unsigned total, used_slices;
    unsigned same = gi_count(e, (unsigned)p->driver_id, &me_used, &total, &used_slices);
    if (same >= p->max_count)
        return mb_error_set(err, MB_ENORESOURCES,
                            "emu %s: insufficient resources: %s already has its maximum of %u "
                            "instance%s",
                            e->model->name, p->name, p->max_count, p->max_count == 1 ? "" : "s");
    if (p->media_extension && me_used)
        return mb_error_set(err, MB_ENORESOURCES,
                            "emu %s: insufficient resources: only one +me instance per GPU, and "
                            "one exists",
                            e->model->name);
    if (total >= e->model->max_gpu_instances)
        return mb_error_set(err, MB_ENORESOURCES,
                            "emu %s: insufficient resources: the GPU already has its maximum of "
                            "%u GPU instances",
                            e->model->name, e->model->max_gpu_instances);
    if (used_slices + p->compute_slices > e->model->compute_slices)
        return mb_error_set(err, MB_ENORESOURCES,
                            "emu %s: insufficient resources: %s needs %u compute slices, %u of %u "
                            "are free",
                            e->model->name, p->name, p->compute_slices,
                            e->model->compute_slices - used_slices, e->model->compute_slices);
    if (pl) {
        if (!slices_free(e, pl->start, pl->size))
            return mb_error_set(err, MB_ENORESOURCES,
                                "emu %s: insufficient resources: placement %u:%u of %s overlaps "
                                "an existing GPU instance",
                                e->model->name, pl->start, pl->size, p->name);
        *chosen = *pl;
        return MB_OK;
    }
    unsigned order[MB_MAX_PLACEMENTS];
    size_t n;
    auto_order(e, p, order, &n);
    for (size_t k = 0; k < n; k++) {
        const struct mb_placement *c = &p->placements[order[k]];
        if (slices_free(e, c->start, c->size)) {
            *chosen = *c;
            return MB_OK;
        }
    }
    return mb_error_set(err, MB_ENORESOURCES,
                        "emu %s: insufficient resources: no free placement for %s", e->model->name,
                        p->name);
}

static unsigned remaining_of(struct emu *e, const struct mb_gi_profile *p)
{
    /* Same-size placements are aligned and disjoint, so greedy filling finds the maximum. */
    struct emu_state saved = e->st;
    unsigned n = 0;
    struct mb_placement c;
    while (gi_check(e, p, NULL, &c, NULL) == MB_OK) {
        unsigned g = 0;
        while (g < EMU_MAX_GI && e->st.gi[g].used)
            g++;
        if (g == EMU_MAX_GI)
            break;
        e->st.gi[g] = (struct emu_gi){
            .used = true, .profile_id = (unsigned)p->driver_id, .start = c.start, .size = c.size};
        n++;
    }
    e->st = saved;
    return n;
}

static int emu_mig_profiles(struct mb_device *dev, struct mb_device_profile *out, size_t cap,
                            size_t *n, struct mb_error *err)
{
    struct emu *e = as_emu(dev);
    int rc = op_begin(e, OP_mig_profiles, err);
    if (rc)
        return rc;
    *n = 0;
    if ((rc = need_mig(e, "list GPU-instance profiles", err)) != MB_OK)
        return op_end(e, rc, false, err);
    size_t total = 0;
    for (size_t i = 0; i < e->model->n_profiles; i++) {
        const struct mb_gi_profile *p = &e->model->profiles[i];
        if (p->driver_id < 0)
            continue;
        if (total < cap) {
            struct mb_device_profile *d = &out[total];
            memset(d, 0, sizeof(*d));
            snprintf(d->name, sizeof(d->name), "%s", p->name);
            d->nvml_enum = p->nvml_enum;
            d->driver_id = (unsigned)p->driver_id;
            d->compute_slices = p->compute_slices;
            d->memory_slices = p->memory_slices;
            d->max_count = p->max_count;
            d->remaining = remaining_of(e, p);
            d->sm_count = p->sm_count;
            d->memory_mib = p->memory_mib;
        }
        total++;
    }
    *n = total;
    if (total > cap)
        rc = mb_error_set(err, MB_ERANGE, "emu: %zu profiles, room for %zu", total, cap);
    return op_end(e, rc, false, err);
}

static int emu_mig_placements(struct mb_device *dev, unsigned driver_id, struct mb_placement *out,
                              size_t cap, size_t *n, struct mb_error *err)
{
    struct emu *e = as_emu(dev);
    int rc = op_begin(e, OP_mig_placements, err);
    if (rc)
        return rc;
    *n = 0;
    const struct mb_gi_profile *p = profile_by_id(e, driver_id);
    if (!p)
        return op_end(e,
                      mb_error_set(err, MB_EINVAL, "emu %s: no GPU-instance profile with id %u",
                                   e->model->name, driver_id),
                      false, err);
    /* NVML returns every placement regardless of MIG mode and of what is in use. */
    for (size_t i = 0; i < p->n_placements && i < cap; i++)
        out[i] = p->placements[i];
    *n = p->n_placements;
    if (p->n_placements > cap)
        rc =
            mb_error_set(err, MB_ERANGE, "emu: %zu placements, room for %zu", p->n_placements, cap);
    return op_end(e, rc, false, err);
}

/* mig-geometry.md §8.2: 0 whole, 1-2 halves, 3-6 quarters, 7-14 eighths (A30: 0, 1-2, 3-6). */
static unsigned gi_id_for(const struct emu *e, const struct mb_placement *pl)
{
    unsigned m = e->model->memory_slices;
    if (pl->size > 0 && m % pl->size == 0 && pl->start % pl->size == 0) {
        unsigned id = m / pl->size - 1 + pl->start / pl->size;
        if (id < EMU_MAX_GI && !e->st.gi[id].used)
            return id;
    }
    for (unsigned g = 0; g < EMU_MAX_GI; g++)
        if (!e->st.gi[g].used)
            return g;
    return EMU_MAX_GI;
}

static int emu_mig_create_gi(struct mb_device *dev, unsigned driver_id,
                             const struct mb_placement *placement, unsigned *gi_id,
                             struct mb_error *err)
{
    struct emu *e = as_emu(dev);
    int rc = op_begin(e, OP_create_gi, err);
    if (rc)
        return rc;
    if ((rc = need_mig(e, "create a GPU instance", err)) != MB_OK)
        return op_end(e, rc, false, err);
    const struct mb_gi_profile *p = profile_by_id(e, driver_id);
    if (!p)
        return op_end(e,
                      mb_error_set(err, MB_EINVAL,
                                   "emu %s: invalid argument: no GPU-instance profile with id %u",
                                   e->model->name, driver_id),
                      false, err);
    if (placement) {
        bool valid = false;
        for (size_t i = 0; i < p->n_placements; i++)
            valid = valid || (p->placements[i].start == placement->start &&
                              p->placements[i].size == placement->size);
        if (!valid)
            return op_end(e,
                          mb_error_set(err, MB_EINVAL,
                                       "emu %s: invalid argument: %u:%u is not a placement of %s",
                                       e->model->name, placement->start, placement->size, p->name),
                          false, err);
    }
    struct mb_placement chosen;
    if ((rc = gi_check(e, p, placement, &chosen, err)) != MB_OK)
        return op_end(e, rc, false, err);
    unsigned id = gi_id_for(e, &chosen);
    if (id == EMU_MAX_GI)
        return op_end(e,
                      mb_error_set(err, MB_ENORESOURCES,
                                   "emu: insufficient resources: no free "
                                   "GPU-instance id"),
                      false, err);
    e->st.gi[id] = (struct emu_gi){
        .used = true, .profile_id = driver_id, .start = chosen.start, .size = chosen.size};
    *gi_id = id;
    return op_end(e, MB_OK, true, err);
}

static const struct mb_gi_profile *gi_profile(const struct emu *e, unsigned gi_id)
{
    return profile_by_id(e, e->st.gi[gi_id].profile_id);
}

static int find_gi(const struct emu *e, unsigned gi_id, struct mb_error *err)
{
    if (gi_id >= EMU_MAX_GI || !e->st.gi[gi_id].used)
        return mb_error_set(err, MB_ENOTFOUND, "emu %s: no GPU instance with id %u", e->model->name,
                            gi_id);
    if (!gi_profile(e, gi_id))
        return mb_error_set(err, MB_EDEVICE, "emu: GPU instance %u has an unknown profile", gi_id);
    return MB_OK;
}

/*
 * The compute-instance options of a GI, from the catalog's list for the GI's compute-slice count.
 * A double-memory 1g GI (NVML enum 1_SLICE_REV2) on Hopper and later uses CI profile id 7
 * (1_SLICE_REV1), as seen on H100 and GH200 (mig-geometry.md §7); elsewhere id 0.
 */
static size_t ci_options(const struct emu *e, const struct mb_gi_profile *gp,
                         struct mb_ci_profile *out)
{
    size_t n = 0;
    for (size_t i = 0; i < e->model->n_ci_profiles && n < MB_MAX_CI_PROFILES; i++) {
        const struct mb_ci_profile *c = &e->model->ci_profiles[i];
        if (c->gi_compute_slices != gp->compute_slices)
            continue;
        out[n] = *c;
        if (gp->nvml_enum == 9 && e->defs.gpm && c->ci_slices == 1)
            out[n].nvml_ci_profile_id = 7;
        n++;
    }
    return n;
}

static int emu_mig_create_ci(struct mb_device *dev, unsigned gi_id, int ci_profile_id,
                             unsigned *ci_id, struct mb_error *err)
{
    struct emu *e = as_emu(dev);
    int rc = op_begin(e, OP_create_ci, err);
    if (rc)
        return rc;
    if ((rc = need_mig(e, "create a compute instance", err)) != MB_OK ||
        (rc = find_gi(e, gi_id, err)) != MB_OK)
        return op_end(e, rc, false, err);
    struct emu_gi *gi = &e->st.gi[gi_id];
    const struct mb_gi_profile *gp = gi_profile(e, gi_id);
    struct mb_ci_profile opts[MB_MAX_CI_PROFILES];
    size_t nopt = ci_options(e, gp, opts);
    const struct mb_ci_profile *cp = NULL;
    for (size_t i = 0; i < nopt; i++) {
        if (ci_profile_id < 0 ? opts[i].is_default : opts[i].nvml_ci_profile_id == ci_profile_id)
            cp = &opts[i];
    }
    if (!cp && ci_profile_id < 0) {
        /* No default listed: the whole-GI option is the default. */
        for (size_t i = 0; i < nopt; i++)
            if (opts[i].ci_slices == gp->compute_slices)
                cp = &opts[i];
    }
    if (!cp)
        return op_end(e,
                      mb_error_set(err, MB_EINVAL,
                                   "emu %s: invalid argument: compute-instance profile %d is not "
                                   "available in a %s GPU instance",
                                   e->model->name, ci_profile_id, gp->name),
                      false, err);
    unsigned same = 0, used = 0, slot = EMU_MAX_CI;
    bool busy[8] = {false};
    for (unsigned c = 0; c < EMU_MAX_CI; c++) {
        if (!gi->ci[c].used) {
            if (slot == EMU_MAX_CI)
                slot = c;
            continue;
        }
        if (gi->ci[c].profile_id == (unsigned)cp->nvml_ci_profile_id)
            same++;
        used += gi->ci[c].slices;
        for (unsigned s = gi->ci[c].start; s < gi->ci[c].start + gi->ci[c].slices && s < 8; s++)
            busy[s] = true;
    }
    if (same >= cp->max_count || used + cp->ci_slices > gp->compute_slices || slot == EMU_MAX_CI)
        return op_end(e,
                      mb_error_set(err, MB_ENORESOURCES,
                                   "emu %s: insufficient resources: GPU instance %u (%s) has %u "
                                   "of %u compute slices free, and %u of at most %u instances "
                                   "of this compute profile",
                                   e->model->name, gi_id, gp->name, gp->compute_slices - used,
                                   gp->compute_slices, same, cp->max_count),
                      false, err);
    /* The lowest start, aligned to the CI size, whose slices are free (placement UNVERIFIED). */
    unsigned start = 0;
    bool found = false;
    for (unsigned s = 0; !found && s + cp->ci_slices <= gp->compute_slices; s += cp->ci_slices) {
        bool ok = true;
        for (unsigned k = s; k < s + cp->ci_slices; k++)
            ok = ok && !busy[k];
        if (ok) {
            start = s;
            found = true;
        }
    }
    if (!found)
        return op_end(e,
                      mb_error_set(err, MB_ENORESOURCES,
                                   "emu %s: insufficient resources: no free compute-slice range "
                                   "of %u in GPU instance %u",
                                   e->model->name, cp->ci_slices, gi_id),
                      false, err);
    gi->ci[slot] = (struct emu_ci){true, (unsigned)cp->nvml_ci_profile_id, start, cp->ci_slices};
    *ci_id = slot;
    return op_end(e, MB_OK, true, err);
}

static int emu_mig_instances(struct mb_device *dev, struct mb_mig_instance *out, size_t cap,
                             size_t *n, struct mb_error *err)
{
    struct emu *e = as_emu(dev);
    int rc = op_begin(e, OP_mig_instances, err);
    if (rc)
        return rc;
    *n = 0;
    if ((rc = need_mig(e, "list MIG instances", err)) != MB_OK)
        return op_end(e, rc, false, err);
    size_t total = 0;
    for (unsigned g = 0; g < EMU_MAX_GI; g++) {
        const struct emu_gi *gi = &e->st.gi[g];
        if (!gi->used)
            continue;
        const struct mb_gi_profile *gp = gi_profile(e, g);
        bool any_ci = false;
        for (unsigned c = 0; c <= EMU_MAX_CI; c++) {
            bool last = c == EMU_MAX_CI;
            if (last ? any_ci : !gi->ci[c].used)
                continue;
            if (total < cap) {
                struct mb_mig_instance *m = &out[total];
                memset(m, 0, sizeof(*m));
                m->gi_id = g;
                m->profile_id = gi->profile_id;
                snprintf(m->profile_name, sizeof(m->profile_name), "%s", gp ? gp->name : "?");
                m->placement = (struct mb_placement){gi->start, gi->size};
                if (!last) {
                    m->has_ci = true;
                    m->ci_id = c;
                    m->ci_profile_id = gi->ci[c].profile_id;
                    m->ci_slices = gi->ci[c].slices;
                    mig_uuid(e, g, c, m->uuid, sizeof(m->uuid));
                }
                if (gp && gp->memory_mib > 0) {
                    m->mem_total_bytes = (uint64_t)gp->memory_mib * MIB;
                    m->mem_used_bytes = procs_mem(e, (int)g);
                    m->mem_valid = true;
                }
            }
            any_ci = true;
            total++;
        }
    }
    *n = total;
    if (total > cap)
        rc = mb_error_set(err, MB_ERANGE, "emu: %zu MIG instances, room for %zu", total, cap);
    return op_end(e, rc, false, err);
}

static size_t procs_on(const struct emu *e, int gi, int ci)
{
    size_t n = 0;
    for (size_t i = 0; i < e->st.n_procs; i++)
        if (e->st.procs[i].gi == gi && (ci < 0 || e->st.procs[i].ci == ci))
            n++;
    return n;
}

static int emu_mig_destroy_ci(struct mb_device *dev, unsigned gi_id, unsigned ci_id,
                              struct mb_error *err)
{
    struct emu *e = as_emu(dev);
    int rc = op_begin(e, OP_destroy_ci, err);
    if (rc)
        return rc;
    if ((rc = need_mig(e, "destroy a compute instance", err)) != MB_OK ||
        (rc = find_gi(e, gi_id, err)) != MB_OK)
        return op_end(e, rc, false, err);
    struct emu_gi *gi = &e->st.gi[gi_id];
    if (ci_id >= EMU_MAX_CI || !gi->ci[ci_id].used)
        return op_end(e,
                      mb_error_set(err, MB_ENOTFOUND,
                                   "emu %s: GPU instance %u has no compute instance %u",
                                   e->model->name, gi_id, ci_id),
                      false, err);
    size_t np = procs_on(e, (int)gi_id, (int)ci_id);
    if (np)
        return op_end(e,
                      mb_error_set(err, MB_EBUSY,
                                   "emu %s: compute instance %u/%u is in use by %zu process%s",
                                   e->model->name, gi_id, ci_id, np, np == 1 ? "" : "es"),
                      false, err);
    gi->ci[ci_id] = (struct emu_ci){0};
    return op_end(e, MB_OK, true, err);
}

static int emu_mig_destroy_gi(struct mb_device *dev, unsigned gi_id, struct mb_error *err)
{
    struct emu *e = as_emu(dev);
    int rc = op_begin(e, OP_destroy_gi, err);
    if (rc)
        return rc;
    if ((rc = need_mig(e, "destroy a GPU instance", err)) != MB_OK ||
        (rc = find_gi(e, gi_id, err)) != MB_OK)
        return op_end(e, rc, false, err);
    struct emu_gi *gi = &e->st.gi[gi_id];
    size_t np = procs_on(e, (int)gi_id, -1);
    unsigned nci = 0;
    for (unsigned c = 0; c < EMU_MAX_CI; c++)
        nci += gi->ci[c].used ? 1u : 0u;
    if (np)
        return op_end(e,
                      mb_error_set(err, MB_EBUSY,
                                   "emu %s: GPU instance %u is in use by %zu process%s",
                                   e->model->name, gi_id, np, np == 1 ? "" : "es"),
                      false, err);
    if (nci)
        return op_end(e,
                      mb_error_set(err, MB_EBUSY,
                                   "emu %s: GPU instance %u is in use: it still has %u compute "
                                   "instance%s",
                                   e->model->name, gi_id, nci, nci == 1 ? "" : "s"),
                      false, err);
    *gi = (struct emu_gi){0};
    return op_end(e, MB_OK, true, err);
}

static int emu_processes(struct mb_device *dev, struct mb_process *out, size_t cap, size_t *n,
                         struct mb_error *err)
{
    struct emu *e = as_emu(dev);
    int rc = op_begin(e, OP_processes, err);
    if (rc)
        return rc;
    for (size_t i = 0; i < e->st.n_procs && i < cap; i++) {
        const struct emu_proc *p = &e->st.procs[i];
        out[i] = (struct mb_process){.pid = p->pid,
                                     .used_mem_bytes = p->mem_bytes,
                                     .used_mem_valid = true,
                                     .gi_id = p->gi,
                                     .ci_id = p->ci};
        snprintf(out[i].name, sizeof(out[i].name), "%s", p->name);
    }
    *n = e->st.n_procs;
    if (e->st.n_procs > cap)
        rc = mb_error_set(err, MB_ERANGE, "emu: %zu processes, room for %zu", e->st.n_procs, cap);
    return op_end(e, rc, false, err);
}

static int emu_mig_activity(struct mb_device *dev, unsigned gi_id, struct mb_mig_activity *out,
                            struct mb_error *err)
{
    struct emu *e = as_emu(dev);
    int rc = op_begin(e, OP_mig_activity, err);
    if (rc)
        return rc;
    if (!e->defs.gpm)
        return op_end(e,
                      mb_error_set(err, MB_EUNSUPPORTED,
                                   "emu %s: per-instance activity needs GPM (Hopper or later)",
                                   e->model->name),
                      false, err);
    if ((rc = need_mig(e, "read per-instance activity", err)) != MB_OK ||
        (rc = find_gi(e, gi_id, err)) != MB_OK)
        return op_end(e, rc, false, err);
    memset(out, 0, sizeof(*out));
    /* A GI with processes is as busy as the load says (fully, under the automatic load). */
    double busy = 0;
    if (procs_on(e, (int)gi_id, -1)) {
        busy = 100.0;
        if (e->load_fixed || e->trace)
            busy = 100.0 * current_load(e, emu_now(e));
    }
    out->sm_util_pct = busy;
    out->sm_occupancy_pct = busy * 0.5;
    out->tensor_util_pct = busy * 0.3;
    out->dram_bw_util_pct = busy * 0.4;
    out->valid = MB_ACT_SM_UTIL | MB_ACT_SM_OCCUPANCY | MB_ACT_TENSOR | MB_ACT_DRAM_BW;
    return op_end(e, MB_OK, false, err);
}

/* ---- power limit ------------------------------------------------------------------------ */

static int emu_power_limit(struct mb_device *dev, struct mb_power_limit *out, struct mb_error *err)
{
    struct emu *e = as_emu(dev);
    int rc = op_begin(e, OP_power_limit, err);
    if (rc)
        return rc;
    memset(out, 0, sizeof(*out));
    out->limit_mw = out->enforced_mw = to_mw(limit_w(e));
    out->default_mw = out->max_mw = to_mw(e->max_w);
    out->min_mw = to_mw(e->min_limit_w);
    int64_t now = emu_now(e);
    double speed = e->trace ? 1.0 : speed_for(e, current_load(e, now));
    out->throttle_reasons = speed < 1.0 ? MB_THROTTLE_SW_POWER_CAP : 0;
    out->valid = MB_PL_LIMIT | MB_PL_ENFORCED | MB_PL_RANGE | MB_PL_DEFAULT | MB_PL_THROTTLE;
    return op_end(e, MB_OK, false, err);
}

static int emu_set_power_limit(struct mb_device *dev, uint32_t limit_mw, struct mb_error *err)
{
    struct emu *e = as_emu(dev);
    if (e->trace)
        return mb_error_set(err, MB_EUNSUPPORTED,
                            "emu: the power limit cannot be set while a power trace plays");
    int rc = op_begin(e, OP_set_power_limit, err);
    if (rc)
        return rc;
    uint32_t lo = to_mw(e->min_limit_w), hi = to_mw(e->max_w);
    if (e->limit_denied)
        rc = mb_error_set(err, MB_EPERM,
                          "emu %s: setting the power limit needs root (emulated: limit_perm=deny)",
                          e->model->name);
    else if (limit_mw < lo || limit_mw > hi)
        rc =
            mb_error_set(err, MB_ERANGE, "emu %s: power limit %u mW is outside the range %u..%u mW",
                         e->model->name, limit_mw, lo, hi);
    if (rc != MB_OK)
        return op_end(e, rc, false, err);
    /* The default is stored as "never set", so a restored GPU's state reads as it did before. */
    e->st.limit_mw = limit_mw == hi ? 0 : limit_mw;
    return op_end(e, MB_OK, true, err);
}

int mb__emu_speed(struct mb_device *dev, double *speed, struct mb_error *err)
{
    if (!mb__emu_is(dev))
        return mb_error_set(err, MB_EINVAL, "not an emulated device");
    struct emu *e = as_emu(dev);
    int rc = op_begin(e, OP_speed, err);
    if (rc)
        return rc;
    *speed = e->trace ? 1.0 : speed_for(e, current_load(e, emu_now(e)));
    return op_end(e, MB_OK, false, err);
}

/* ---- test and fake-NVML entry points --------------------------------------------------- */

static int attach(struct mb_device *dev, unsigned pid, int gi_id, int ci_id, uint64_t mem_bytes,
                  const char *name, bool live, struct mb_error *err)
{
    if (!mb__emu_is(dev))
        return mb_error_set(err, MB_EINVAL, "not an emulated device");
    struct emu *e = as_emu(dev);
    int rc = op_begin(e, OP_attach_process, err);
    if (rc)
        return rc;
    uint64_t cap_bytes =
        e->model->total_memory_mib > 0 ? (uint64_t)e->model->total_memory_mib * MIB : UINT64_MAX;
    if (e->st.mig_current) {
        if (gi_id < 0 || ci_id < 0)
            rc = mb_error_set(err, MB_EINVAL,
                              "emu: MIG is enabled: a process must run on a compute instance");
        else if ((rc = find_gi(e, (unsigned)gi_id, err)) == MB_OK &&
                 (ci_id >= EMU_MAX_CI || !e->st.gi[gi_id].ci[ci_id].used))
            rc = mb_error_set(err, MB_ENOTFOUND, "emu: GPU instance %d has no compute instance %d",
                              gi_id, ci_id);
        if (rc == MB_OK) {
            const struct mb_gi_profile *gp = gi_profile(e, (unsigned)gi_id);
            cap_bytes = gp->memory_mib > 0 ? (uint64_t)gp->memory_mib * MIB : UINT64_MAX;
        }
    } else if (gi_id >= 0 || ci_id >= 0) {
        rc = mb_error_set(err, MB_EINVAL,
                          "emu: MIG is disabled: a process runs on the whole GPU "
                          "(gi and ci -1)");
    }
    for (size_t i = 0; rc == MB_OK && i < e->st.n_procs; i++)
        if (e->st.procs[i].pid == pid)
            rc = mb_error_set(err, MB_EINVAL, "emu: process %u is already attached", pid);
    if (rc == MB_OK && e->st.n_procs == MB_MAX_PROCESSES)
        rc = mb_error_set(err, MB_ENORESOURCES, "emu: at most %d processes", MB_MAX_PROCESSES);
    if (rc == MB_OK) {
        uint64_t used = procs_mem(e, e->st.mig_current ? gi_id : -1);
        if (mem_bytes > cap_bytes || used > cap_bytes - mem_bytes)
            rc = mb_error_set(err, MB_ENORESOURCES,
                              "emu: out of memory: %llu MiB requested, %llu MiB free",
                              (unsigned long long)(mem_bytes / MIB),
                              (unsigned long long)((cap_bytes - used) / MIB));
    }
    if (rc != MB_OK)
        return op_end(e, rc, false, err);
    struct emu_proc *p = &e->st.procs[e->st.n_procs++];
    *p = (struct emu_proc){
        .pid = pid, .gi = gi_id, .ci = ci_id, .mem_bytes = mem_bytes, .live = live};
    snprintf(p->name, sizeof(p->name), "%s", name ? name : "");
    return op_end(e, MB_OK, true, err);
}

int mb__emu_attach_process(struct mb_device *dev, unsigned pid, int gi_id, int ci_id,
                           uint64_t mem_bytes, const char *name, struct mb_error *err)
{
    return attach(dev, pid, gi_id, ci_id, mem_bytes, name, false, err);
}

int mb__emu_attach_live(struct mb_device *dev, unsigned pid, int gi_id, int ci_id,
                        uint64_t mem_bytes, const char *name, struct mb_error *err)
{
    return attach(dev, pid, gi_id, ci_id, mem_bytes, name, true, err);
}

int mb__emu_detach_process(struct mb_device *dev, unsigned pid, struct mb_error *err)
{
    if (!mb__emu_is(dev))
        return mb_error_set(err, MB_EINVAL, "not an emulated device");
    struct emu *e = as_emu(dev);
    int rc = op_begin(e, OP_detach_process, err);
    if (rc)
        return rc;
    for (size_t i = 0; i < e->st.n_procs; i++) {
        if (e->st.procs[i].pid != pid)
            continue;
        memmove(&e->st.procs[i], &e->st.procs[i + 1],
                (e->st.n_procs - i - 1) * sizeof(e->st.procs[0]));
        e->st.n_procs--;
        return op_end(e, MB_OK, true, err);
    }
    return op_end(e, mb_error_set(err, MB_ENOTFOUND, "emu: no process %u", pid), false, err);
}

int mb__emu_advance(struct mb_device *dev, int64_t ns, struct mb_error *err)
{
    if (!mb__emu_is(dev))
        return mb_error_set(err, MB_EINVAL, "not an emulated device");
    struct emu *e = as_emu(dev);
    if (!e->manual_clock)
        return mb_error_set(err, MB_ESTATE, "emu: the clock is not manual (use clock=manual)");
    if (ns < 0)
        return mb_error_set(err, MB_EINVAL, "emu: the clock cannot go back");
    e->manual_ns += ns;
    return MB_OK;
}

int64_t mb__emu_elapsed_ns(struct mb_device *dev)
{
    return mb__emu_is(dev) ? emu_now(as_emu(dev)) : 0;
}

double mb__emu_energy_j(struct mb_device *dev)
{
    if (!mb__emu_is(dev))
        return 0.0;
    struct emu *e = as_emu(dev);
    return energy_at(e, emu_now(e));
}

/* GPU i's state file: PATH with ".i" before a ".json" suffix, else appended. */
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
    .info = emu_info,
    .telemetry = emu_telemetry,
    .sensor = emu_sensor,
    .caps = emu_caps,
    .mig_mode = emu_mig_mode,
    .mig_set_mode = emu_mig_set_mode,
    .mig_profiles = emu_mig_profiles,
    .mig_placements = emu_mig_placements,
    .mig_create_gi = emu_mig_create_gi,
    .mig_create_ci = emu_mig_create_ci,
    .mig_instances = emu_mig_instances,
    .mig_destroy_ci = emu_mig_destroy_ci,
    .mig_destroy_gi = emu_mig_destroy_gi,
    .processes = emu_processes,
    .mig_activity = emu_mig_activity,
    .power_limit = emu_power_limit,
    .set_power_limit = emu_set_power_limit,
    .mig_switch_mode = emu_mig_switch_mode,
    .expand = emu_expand,
};
