/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The device layer: one interface, three backends.
 *
 *   nvml  real NVIDIA GPUs through libnvidia-ml.so.1 loaded with dlopen
 *   host  the CPU: core sets as partitions, RAPL energy where readable
 *   emu   an emulated MIG GPU built from the catalog, for tests and --dry-run
 *
 * A device is opened from a spec string: "auto", "nvml:N", "nvml:UUID", "host",
 * "emu:MODEL[:option=value,...]". Every value a device cannot provide is marked invalid in the
 * structure's `valid` bits (or returned as MB_EUNSUPPORTED); it is never reported as 0.
 *
 * Threads: a struct mb_device is used by one thread at a time. The meter opens its own handle.
 */
#ifndef MIGBENCH_DEVICE_H
#define MIGBENCH_DEVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "migbench/catalog.h"
#include "migbench/status.h"

#define MB_DEVICE_OPS_VERSION 1
#define MB_UUID_MAX 96
#define MB_DEVICE_NAME_MAX 96
#define MB_VERSION_MAX 80
#define MB_MAX_MIG_INSTANCES 16
#define MB_MAX_PROCESSES 128

/* Identity of a device. */
struct mb_device_info {
    char backend[16];                    /* "nvml", "host" or "emu" */
    bool emulated;                       /* true for emu: numbers are modelled, not measured */
    unsigned index;                      /* index within its backend */
    char name[MB_DEVICE_NAME_MAX];       /* as the vendor names it: "NVIDIA H100 80GB HBM3" */
    char model[MB_MODEL_NAME_MAX];       /* catalog model name, "" if not in the catalog */
    char uuid[MB_UUID_MAX];              /* "GPU-...", "" when none */
    char driver_version[MB_VERSION_MAX]; /* "" when none */
    char nvml_version[MB_VERSION_MAX];   /* "" when none */
    char pci_bus_id[32];                 /* "" when none */
    uint64_t mem_total_bytes;            /* 0 only when mem_total_valid is false */
    bool mem_total_valid;
    bool mig_capable;
    unsigned cpu_count; /* host: online CPUs; GPUs: 0 */
};

/* Validity bits of struct mb_telemetry. */
enum {
    MB_TEL_POWER = 1u << 0,         /* power_mw: the device's default reading */
    MB_TEL_POWER_INSTANT = 1u << 1, /* power_instant_mw */
    MB_TEL_POWER_AVG = 1u << 2,     /* power_avg_mw */
    MB_TEL_ENERGY = 1u << 3,        /* energy_mj */
    MB_TEL_UTIL_GPU = 1u << 4,
    MB_TEL_UTIL_MEM = 1u << 5,
    MB_TEL_MEM_USED = 1u << 6,
    MB_TEL_CLOCK_SM = 1u << 7,
    MB_TEL_CLOCK_MEM = 1u << 8,
    MB_TEL_TEMP = 1u << 9,
    MB_TEL_THROTTLE = 1u << 10,
    MB_TEL_POWER_LIMIT = 1u << 11,
    MB_TEL_ENERGY_DRAM = 1u << 12, /* host: RAPL DRAM domain */
};

/* One telemetry reading. Fields whose bit is not set in `valid` hold no reading. */
struct mb_telemetry {
    uint32_t valid;
    int64_t t_ns;              /* CLOCK_MONOTONIC when read, filled by the backend */
    uint32_t power_mw;         /* the default power reading (instant or averaged, see sensor) */
    uint32_t power_instant_mw; /* NVML_FI_DEV_POWER_INSTANT */
    uint32_t power_avg_mw;     /* NVML_FI_DEV_POWER_AVERAGE (1 s) */
    uint64_t energy_mj;        /* monotonic counter since driver load (or RAPL, unwrapped) */
    uint64_t energy_dram_mj;   /* host only */
    uint32_t util_gpu_pct;
    uint32_t util_mem_pct;
    uint64_t mem_used_bytes;
    uint32_t clock_sm_mhz;
    uint32_t clock_mem_mhz;
    int32_t temp_c;
    uint64_t throttle_reasons; /* NVML clocks-event reason bits */
    uint32_t power_limit_mw;   /* enforced limit */
};

/* enum mb_power_kind and mb_power_kind_str() are in catalog.h: the catalog holds each model's. */

/* The sensor's semantics, recorded in every output. Unknown periods are 0 with a note. */
struct mb_sensor_info {
    enum mb_power_kind power_kind;
    uint32_t power_update_period_ms; /* how often a new value is published; 0 unknown */
    uint32_t power_avg_window_ms;    /* averaging window of the default reading; 0 unknown */
    bool has_instant;                /* a separate instant reading exists */
    bool has_average;                /* a separate averaged reading exists */
    bool has_energy_counter;
    uint32_t energy_update_period_ms; /* 0 unknown */
    uint32_t energy_resolution_mj;    /* smallest step of the counter; 0 unknown */
    uint64_t energy_wrap_mj;          /* counter wraps at this value; 0 never */
    char scope[32];                   /* "board", "module (GPU+CPU)", "package+dram", ... */
    char source[96];                  /* where the semantics come from: "catalog", "measured" */
    /* Why a reading is missing, in the device's words ("" when present or unknown): NVML's answer
     * to nvmlDeviceGetTotalEnergyConsumption / nvmlDeviceGetPowerUsage, e.g. "NVML 3: Not
     * Supported". Energy is then measured the other way, and the result names the method. */
    char energy_note[112];
    char power_note[112];
};

/* MIG mode; each is 0 (disabled) or 1 (enabled). */
struct mb_mig_mode {
    int current;
    int pending;
};

/* A GPU-instance profile as the device reports it, with its free capacity. */
struct mb_device_profile {
    char name[MB_PROFILE_NAME_MAX];
    int nvml_enum;
    unsigned driver_id; /* pass this to placement and create operations */
    unsigned compute_slices;
    unsigned memory_slices;
    unsigned max_count;
    unsigned remaining; /* instances of this profile that can still be created */
    int sm_count;       /* -1 unknown */
    int64_t memory_mib; /* -1 unknown */
};

/* An existing MIG instance: one GPU instance and one of its compute instances. */
struct mb_mig_instance {
    unsigned gi_id;
    unsigned ci_id; /* valid when has_ci */
    bool has_ci;
    unsigned profile_id; /* driver id of the GI profile */
    char profile_name[MB_PROFILE_NAME_MAX];
    struct mb_placement placement;
    unsigned ci_profile_id;
    unsigned ci_slices;
    char uuid[MB_UUID_MAX]; /* "MIG-..." of the compute instance; "" without one */
    uint64_t mem_total_bytes;
    uint64_t mem_used_bytes;
    bool mem_valid;
};

/* A compute process. gi_id/ci_id are -1 when it runs on the whole GPU (or the host). */
struct mb_process {
    unsigned pid;
    uint64_t used_mem_bytes;
    bool used_mem_valid;
    int gi_id;
    int ci_id;
    char name[64];
};

/* Activity of one GPU instance over the interval since the previous call (GPM on Hopper+). */
struct mb_mig_activity {
    uint32_t valid; /* MB_ACT_* bits */
    double sm_util_pct;
    double sm_occupancy_pct;
    double tensor_util_pct;
    double dram_bw_util_pct;
};
enum {
    MB_ACT_SM_UTIL = 1u << 0,
    MB_ACT_SM_OCCUPANCY = 1u << 1,
    MB_ACT_TENSOR = 1u << 2,
    MB_ACT_DRAM_BW = 1u << 3,
};

/* A set of CPUs (host partitions). */
#define MB_CPUSET_MAX 1024
struct mb_cpuset {
    unsigned n;
    unsigned cpus[MB_CPUSET_MAX / 8];
};

/*
 * A device's power limit ("power cap"), in mW. Fields whose bit is not set in `valid` are unknown
 * (never 0). The limit applies to the whole GPU: under MIG or MPS every instance and client
 * shares it.
 */
struct mb_power_limit {
    uint32_t valid;          /* MB_PL_* bits */
    uint32_t limit_mw;       /* the management limit set now (nvmlDeviceGetPowerManagementLimit) */
    uint32_t enforced_mw;    /* the limit in force: the lowest of every limit that applies */
    uint32_t min_mw, max_mw; /* the range a limit may be set in */
    uint32_t default_mw;     /* the limit after the driver loads */
    uint64_t throttle_reasons; /* NVML clocks-event reason bits now (MB_THROTTLE_*) */
};
enum {
    MB_PL_LIMIT = 1u << 0,
    MB_PL_ENFORCED = 1u << 1,
    MB_PL_RANGE = 1u << 2, /* min_mw and max_mw */
    MB_PL_DEFAULT = 1u << 3,
    MB_PL_THROTTLE = 1u << 4,
};

/* NVML clocks-event (throttle) reason bits that migbench names. */
#define MB_THROTTLE_GPU_IDLE 0x1ull
#define MB_THROTTLE_SW_POWER_CAP 0x4ull
#define MB_THROTTLE_HW_SLOWDOWN 0x8ull
#define MB_THROTTLE_SW_THERMAL 0x20ull
#define MB_THROTTLE_HW_THERMAL 0x40ull
#define MB_THROTTLE_HW_POWER_BRAKE 0x80ull

/*
 * Writes the names of the reason bits set in reasons, comma-separated ("sw_power_cap,hw_slowdown";
 * unknown bits as hex), into out (always NUL-terminated, truncated at cap). Returns out.
 */
char *mb_throttle_reasons_str(uint64_t reasons, char *out, size_t cap);

struct mb_device;

/* Most devices one spec may expand to (mb_device_spec_expand). */
#define MB_MAX_DEVICES 64

/* Single-device specs, each a heap string owned by the list (mb_device_spec_list_free). */
struct mb_device_spec_list {
    size_t n;
    char *specs[MB_MAX_DEVICES];
};

/*
 * What a device can do, as bits (mb_device_caps). Code above the device layer tests these bits,
 * never a backend's name.
 */
enum mb_device_cap {
    MB_CAP_EMULATED = 1u << 0,        /* numbers are modelled, not measured */
    MB_CAP_GPU = 1u << 1,             /* a GPU (jobs get CUDA_VISIBLE_DEVICES), not the host CPU */
    MB_CAP_MIG = 1u << 2,             /* MIG-capable: instances can be listed and created */
    MB_CAP_SET_MIG_MODE = 1u << 3,    /* MIG mode can be changed (root, idle GPU) */
    MB_CAP_MPS = 1u << 4,             /* jobs can share it through an MPS daemon */
    MB_CAP_POWER = 1u << 5,           /* a power reading exists */
    MB_CAP_ENERGY_COUNTER = 1u << 6,  /* a cumulative energy counter exists */
    MB_CAP_SET_POWER_LIMIT = 1u << 7, /* the power limit can be set */
    MB_CAP_CPU_PARTITIONS = 1u << 8,  /* host: disjoint core sets as partitions */
    /* power and utilisation are rates over the time since the previous telemetry read (or the
     * open), as the host's RAPL and /proc/stat give them: a read soon after is not a figure */
    MB_CAP_DELTA_TELEMETRY = 1u << 9,
};

/*
 * A backend (SQLite VFS style): a const table of operations. `open` parses the part of the spec
 * after "name:" (NULL if none). Operations marked optional may be NULL; the mb_device_* wrappers
 * then return MB_EUNSUPPORTED. All operations return an mb_status and fill err on failure.
 */
struct mb_device_ops {
    int version; /* MB_DEVICE_OPS_VERSION */
    const char *name;
    int (*open)(const char *args, struct mb_device **out, struct mb_error *err);
    void (*close)(struct mb_device *dev);
    int (*info)(struct mb_device *dev, struct mb_device_info *out, struct mb_error *err);
    int (*telemetry)(struct mb_device *dev, struct mb_telemetry *out, struct mb_error *err);
    int (*sensor)(struct mb_device *dev, struct mb_sensor_info *out, struct mb_error *err);
    /* MB_CAP_* bits of this device. */
    uint32_t (*caps)(struct mb_device *dev);
    /* Optional from here on. */
    int (*mig_mode)(struct mb_device *dev, struct mb_mig_mode *out, struct mb_error *err);
    int (*mig_set_mode)(struct mb_device *dev, int enable, struct mb_error *err);
    int (*mig_profiles)(struct mb_device *dev, struct mb_device_profile *out, size_t cap, size_t *n,
                        struct mb_error *err);
    int (*mig_placements)(struct mb_device *dev, unsigned driver_id, struct mb_placement *out,
                          size_t cap, size_t *n, struct mb_error *err);
    int (*mig_create_gi)(struct mb_device *dev, unsigned driver_id,
                         const struct mb_placement *placement, unsigned *gi_id,
                         struct mb_error *err);
    /* ci_profile_id < 0 means the GI's default (whole-GI) compute instance. */
    int (*mig_create_ci)(struct mb_device *dev, unsigned gi_id, int ci_profile_id, unsigned *ci_id,
                         struct mb_error *err);
    int (*mig_instances)(struct mb_device *dev, struct mb_mig_instance *out, size_t cap, size_t *n,
                         struct mb_error *err);
    int (*mig_destroy_ci)(struct mb_device *dev, unsigned gi_id, unsigned ci_id,
                          struct mb_error *err);
    int (*mig_destroy_gi)(struct mb_device *dev, unsigned gi_id, struct mb_error *err);
    int (*processes)(struct mb_device *dev, struct mb_process *out, size_t cap, size_t *n,
                     struct mb_error *err);
    int (*mig_activity)(struct mb_device *dev, unsigned gi_id, struct mb_mig_activity *out,
                        struct mb_error *err);
    /* Host: split the CPUs into n disjoint core sets (for mode: partition). */
    int (*cpu_partitions)(struct mb_device *dev, unsigned n, struct mb_cpuset *out,
                          struct mb_error *err);
    /* The power limit with its range and default, and the throttle reasons now. */
    int (*power_limit)(struct mb_device *dev, struct mb_power_limit *out, struct mb_error *err);
    /* Sets the power limit (MB_CAP_SET_POWER_LIMIT): MB_ERANGE outside [min, max], MB_EPERM
     * without the privilege. */
    int (*set_power_limit)(struct mb_device *dev, uint32_t limit_mw, struct mb_error *err);
    /*
     * Optional: the UUID ("GPU-...") of the GPU that id belongs to, where id is a GPU UUID, a MIG
     * device UUID ("MIG-...") or a legacy "MIG-GPU-<uuid>/<gi>/<ci>", searched over every GPU of
     * the backend, not only dev. MB_ENOTFOUND when no GPU has it.
     */
    int (*visible_parent)(struct mb_device *dev, const char *id, char *gpu_uuid, size_t cap,
                          struct mb_error *err);
    /*
     * Sets the MIG mode and makes it current now, as nvmlDeviceSetMigMode does when the driver
     * can unbind and reset an idle GPU. MB_EBUSY (the message names the PIDs) when the GPU is in
     * use, MB_ERESET_REQUIRED when activation needs a reset the driver cannot do (a passthrough
     * VM); in both cases the new mode is left pending, as NVML leaves it.
     */
    int (*mig_switch_mode)(struct mb_device *dev, int enable, struct mb_error *err);
    /*
     * Not a device operation: splits the part of a spec after "name:" that names several devices
     * ("0,1,2,3", "all", "H100-80GB:count=8") into single-device specs appended to out. NULL:
     * every spec of this backend names one device.
     */
    int (*expand)(const char *args, struct mb_device_spec_list *out, struct mb_error *err);
};

/* Every backend embeds this as its first member. */
struct mb_device {
    const struct mb_device_ops *ops;
};

/*
 * Why the last "auto" open (mb_device_open("auto"), mb_device_open_nth) in this thread used the
 * host rather than an NVIDIA GPU, with NVML's reason ("the NVIDIA driver is not loaded ...");
 * "" when it did not fall back. For a verbose note; the fallback itself is not an error.
 */
const char *mb_device_fallback_note(void);

/*
 * Opens the device named by spec. *out is owned by the caller (mb_device_close). "auto" picks the
 * first NVIDIA GPU when NVML loads and has one, else the host. Unknown backend or bad options:
 * MB_EINVAL with the spec named in err.
 */
int mb_device_open(const char *spec, struct mb_device **out, struct mb_error *err);

/*
 * Expands a spec that may name several devices into single-device specs, in device order:
 * "nvml:0,1,2,3" -> nvml:0 ... nvml:3; "nvml:all" -> every GPU the driver reports;
 * "emu:MODEL:count=N[,...]" -> N emulated GPUs with index=0..N-1 (from index=K if given), each
 * with its own UUID and, when state=PATH is given, its own state file (PATH with ".I" inserted
 * before a ".json" suffix, else appended). Any other spec comes back as the one entry. out is
 * caller-owned and must be freed with mb_device_spec_list_free, also after a failure. Bad lists:
 * MB_EINVAL naming the spec; nvml:all with no driver: the nvml open error.
 */
int mb_device_spec_expand(const char *spec, struct mb_device_spec_list *out, struct mb_error *err);

/* Frees the strings of a list filled by mb_device_spec_expand and empties it; NULL is a no-op. */
void mb_device_spec_list_free(struct mb_device_spec_list *list);

/* Appends a copy of spec to list; MB_ERANGE past MB_MAX_DEVICES, MB_ENOMEM. For backends. */
int mb_device_spec_list_add(struct mb_device_spec_list *list, const char *spec,
                            struct mb_error *err);

/*
 * Opens the i-th device of this machine as `devices` lists them: every NVIDIA GPU NVML reports
 * (spec "nvml:I"), or the host (spec "host") as device 0 when there is none; never an emulated
 * one. spec gets the device's spec. Returns MB_ENOTFOUND past the last device, or the host's
 * open error.
 */
int mb_device_open_nth(size_t i, char *spec, size_t spec_cap, struct mb_device **out,
                       struct mb_error *err);

/* Closes a device; NULL is a no-op. */
void mb_device_close(struct mb_device *dev);

/* Returns the backend name of an open device. */
const char *mb_device_backend(const struct mb_device *dev);

/* The MB_CAP_* bits of an open device. */
uint32_t mb_device_caps(struct mb_device *dev);

/* Wrappers over the ops table; optional operations that are NULL return MB_EUNSUPPORTED. */
int mb_device_info(struct mb_device *dev, struct mb_device_info *out, struct mb_error *err);
int mb_device_telemetry(struct mb_device *dev, struct mb_telemetry *out, struct mb_error *err);
int mb_device_sensor(struct mb_device *dev, struct mb_sensor_info *out, struct mb_error *err);
int mb_device_mig_mode(struct mb_device *dev, struct mb_mig_mode *out, struct mb_error *err);
int mb_device_mig_set_mode(struct mb_device *dev, int enable, struct mb_error *err);
int mb_device_mig_profiles(struct mb_device *dev, struct mb_device_profile *out, size_t cap,
                           size_t *n, struct mb_error *err);
int mb_device_mig_placements(struct mb_device *dev, unsigned driver_id, struct mb_placement *out,
                             size_t cap, size_t *n, struct mb_error *err);
int mb_device_mig_create_gi(struct mb_device *dev, unsigned driver_id,
                            const struct mb_placement *placement, unsigned *gi_id,
                            struct mb_error *err);
int mb_device_mig_create_ci(struct mb_device *dev, unsigned gi_id, int ci_profile_id,
                            unsigned *ci_id, struct mb_error *err);
int mb_device_mig_instances(struct mb_device *dev, struct mb_mig_instance *out, size_t cap,
                            size_t *n, struct mb_error *err);
int mb_device_mig_destroy_ci(struct mb_device *dev, unsigned gi_id, unsigned ci_id,
                             struct mb_error *err);
int mb_device_mig_destroy_gi(struct mb_device *dev, unsigned gi_id, struct mb_error *err);
int mb_device_processes(struct mb_device *dev, struct mb_process *out, size_t cap, size_t *n,
                        struct mb_error *err);
int mb_device_mig_activity(struct mb_device *dev, unsigned gi_id, struct mb_mig_activity *out,
                           struct mb_error *err);
int mb_device_cpu_partitions(struct mb_device *dev, unsigned n, struct mb_cpuset *out,
                             struct mb_error *err);
int mb_device_mig_switch_mode(struct mb_device *dev, int enable, struct mb_error *err);

/*
 * Reads the power limit, its range, default and the throttle reasons into out; fields the device
 * cannot read are left invalid. MB_EUNSUPPORTED when it has no power limit at all.
 */
int mb_device_power_limit(struct mb_device *dev, struct mb_power_limit *out, struct mb_error *err);

/*
 * Sets the power limit to limit_mw. Changes the GPU for every user until restored: callers go
 * through the restore ledger (migbench/powercap.h), never straight here. MB_EUNSUPPORTED without
 * MB_CAP_SET_POWER_LIMIT, MB_ERANGE outside the device's range, MB_EPERM without the privilege.
 */
int mb_device_set_power_limit(struct mb_device *dev, uint32_t limit_mw, struct mb_error *err);

#define MB_VISIBLE_ENTRY_MAX 128
#define MB_DEVICE_SPEC_MAX 1200

/*
 * What a CUDA_VISIBLE_DEVICES entry names, as a scheduler (Slurm, the Kubernetes device plugin)
 * hands it to a job: the parent GPU and, for a MIG device, the instance.
 */
struct mb_visible {
    bool resolved;                    /* false: nothing to resolve (unset, an index, no GPU) */
    char entry[MB_VISIBLE_ENTRY_MAX]; /* the first entry of the variable, as given */
    char spec[MB_DEVICE_SPEC_MAX];    /* the device spec that opens the parent GPU */
    char gpu_uuid[MB_UUID_MAX];       /* the parent GPU's UUID */
    bool has_instance;                /* the entry names a MIG instance */
    struct mb_mig_instance instance;  /* when has_instance: ids, profile, placement, UUID */
};

/*
 * Resolves the first entry of visible (a CUDA_VISIBLE_DEVICES value; NULL or "" for none)
 * against the device spec: "GPU-<uuid>", "MIG-<uuid>" and the legacy "MIG-GPU-<uuid>/<gi>/<ci>"
 * name the parent GPU and instance; on nvml the parent may be any GPU of the machine and
 * out->spec then names it ("nvml:GPU-..."); on emu the entry must belong to the emulated GPU
 * (its state file holds the instances). Entries that are indices, and devices without
 * MB_CAP_GPU, leave out->resolved false and out->spec = spec. MB_ENOTFOUND with the entry and
 * the spec named when no GPU or instance has that UUID; errors of opening spec as they are.
 */
int mb_device_resolve_visible(const char *spec, const char *visible, struct mb_visible *out,
                              struct mb_error *err);

#endif
