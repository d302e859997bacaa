/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Private to the emulated GPU's files: the emulator's structures and the functions they share.
 * Calls go one way, from the top: emu_entry.c (emu.h's entry points for tests and the fake NVML)
 * -> emu.c (options, open, the ops table) -> emu_mig.c (MIG and processes), emu_telemetry.c
 * (telemetry, sensor, power limit) -> emu_state.c (state file, operation framing) -> emu_power.c
 * (the power model over time) -> emu_model.c (the link to the GPU model) -> gpumodel.c. Nothing
 * outside src/device/emu*.c includes it; the entry points for tests and the fake NVML are in
 * emu.h.
 */
#ifndef MIGBENCH_DEVICE_EMU_INTERNAL_H
#define MIGBENCH_DEVICE_EMU_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "device/emu.h"
#include "device/gpumodel.h"

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

/* The operations' names, in enum emu_op order (emu_state.c). */
extern const char *const mb__emu_op_names[];

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
    /* A modelled job (mb__emu_attach_job): its workload preset ("" unmodelled), batch and MPS
     * active-thread percentage (0: not an MPS client). */
    char workload[MB_GM_NAME_MAX];
    double batch, mps_pct;
};

/* Everything that a state file shares between processes. */
struct emu_state {
    int mig_current, mig_pending;
    struct emu_gi gi[EMU_MAX_GI];
    size_t n_procs;
    struct emu_proc procs[MB_MAX_PROCESSES];
    uint32_t limit_mw; /* the power limit set; 0: the default (never set) */
};

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
    /* Power model: the GPU as the model sees it (gpumodel.h), idle and maximum power. */
    struct mb_gm_gpu gm;
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
    char
        lost_when[EMU_PATH_MAX]; /* lost_when=PATH: every call answers MB_EGONE while PATH exists */
    /* MIG-mode activation: reset=unavailable (a passthrough VM), busy=PID+PID (clients that
     * hold the GPU without being compute processes: a monitoring agent, a display server). */
    bool no_reset;
    size_t n_busy;
    unsigned busy[EMU_MAX_BUSY];
    bool crash_midway; /* crash=mig_switch_mode:N: killed after staging, before activating */
};

static inline struct emu *as_emu(struct mb_device *dev)
{
    return (struct emu *)dev;
}

/* emu_state.c */
void mb__emu_make_uuid(const char *prefix, const char *text, char *out, size_t cap);
/* The emulated GPU's UUID, from its state file's absolute path or its spec (args). */
void mb__emu_gpu_uuid(const struct emu *e, const char *args, char *out, size_t cap);
void mb__emu_mig_uuid(const struct emu *e, unsigned gi, unsigned ci, char *out, size_t cap);
void mb__emu_state_init(struct emu_state *st, int mig);
int mb__emu_state_load(struct emu *e, bool *found, struct mb_error *err);
int mb__emu_state_save(struct emu *e, struct mb_error *err);
int mb__emu_op_begin(struct emu *e, enum emu_op op, struct mb_error *err);
int mb__emu_op_end(struct emu *e, int rc, bool changed, struct mb_error *err);
int mb__emu_need_mig(const struct emu *e, const char *what, struct mb_error *err);

/* emu_power.c: the power model over time (the GPU model's segments or a trace). */
int64_t mb__emu_now(const struct emu *e);
double mb__emu_energy_at(const struct emu *e, int64_t t_ns);
double mb__emu_power_at(const struct emu *e, int64_t t_ns);
double mb__emu_model_power(const struct emu *e);
double mb__emu_speed_now(const struct emu *e);
void mb__emu_update_load(struct emu *e);
double mb__emu_sensor_reading(const struct emu *e, int64_t now_ns, unsigned long long window_ms);
uint32_t mb__emu_mw(double w);
double mb__emu_current_load(const struct emu *e, int64_t now);
uint64_t mb__emu_procs_mem(const struct emu *e, int gi);

/* emu_telemetry.c: the operations that report the power model. */
int mb__emu_info(struct mb_device *dev, struct mb_device_info *out, struct mb_error *err);
int mb__emu_telemetry(struct mb_device *dev, struct mb_telemetry *out, struct mb_error *err);
uint32_t mb__emu_caps(struct mb_device *dev);
int mb__emu_sensor(struct mb_device *dev, struct mb_sensor_info *out, struct mb_error *err);
int mb__emu_power_limit(struct mb_device *dev, struct mb_power_limit *out, struct mb_error *err);
int mb__emu_set_power_limit(struct mb_device *dev, uint32_t limit_mw, struct mb_error *err);

/* emu_mig.c */
int mb__emu_mig_mode(struct mb_device *dev, struct mb_mig_mode *out, struct mb_error *err);
int mb__emu_mig_set_mode(struct mb_device *dev, int enable, struct mb_error *err);
int mb__emu_mig_switch_mode(struct mb_device *dev, int enable, struct mb_error *err);
int mb__emu_mig_profiles(struct mb_device *dev, struct mb_device_profile *out, size_t cap,
                         size_t *n, struct mb_error *err);
int mb__emu_mig_placements(struct mb_device *dev, unsigned driver_id, struct mb_placement *out,
                           size_t cap, size_t *n, struct mb_error *err);
int mb__emu_mig_create_gi(struct mb_device *dev, unsigned driver_id,
                          const struct mb_placement *placement, unsigned *gi_id,
                          struct mb_error *err);
int mb__emu_mig_create_ci(struct mb_device *dev, unsigned gi_id, int ci_profile_id, unsigned *ci_id,
                          struct mb_error *err);
int mb__emu_mig_instances(struct mb_device *dev, struct mb_mig_instance *out, size_t cap, size_t *n,
                          struct mb_error *err);
int mb__emu_mig_destroy_ci(struct mb_device *dev, unsigned gi_id, unsigned ci_id,
                           struct mb_error *err);
int mb__emu_mig_destroy_gi(struct mb_device *dev, unsigned gi_id, struct mb_error *err);
int mb__emu_processes(struct mb_device *dev, struct mb_process *out, size_t cap, size_t *n,
                      struct mb_error *err);
int mb__emu_mig_activity(struct mb_device *dev, unsigned gi_id, struct mb_mig_activity *out,
                         struct mb_error *err);

/* emu_model.c: the catalog profile of a driver id, and the link to the GPU model. */
const struct mb_gi_profile *mb__emu_profile_by_id(const struct emu *e, unsigned driver_id);
size_t mb__emu_jobs(const struct emu *e, struct mb_gm_job *jobs, bool from_procs);
double mb__emu_limit_w(const struct emu *e);
size_t mb__emu_solve(const struct emu *e, struct mb_gm_job *jobs, bool from_procs,
                     struct mb_gm_result *r);
double mb__emu_jobs_util(const struct emu *e, const struct mb_gm_job *jobs, size_t n);

/* emu_mig.c: attaches a process with the modelled-job fields of extra (NULL: unmodelled); the
 * entry points of emu.h (emu_entry.c) check the device first. */
int mb__emu_attach_with(struct emu *e, unsigned pid, int gi_id, int ci_id, uint64_t mem_bytes,
                        const char *name, bool live, const struct emu_proc *extra,
                        struct mb_error *err);

#endif
