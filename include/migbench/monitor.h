/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The live monitor behind `migbench monitor`: reads, per device, the identity, sensor semantics,
 * telemetry, MIG instances with their activity and memory, and compute processes, keeps the
 * energy used since the monitor started, and finds the `migbench run` cells active on each
 * device through their live files (migbench/live.h). It only reads: no call here changes a GPU.
 *
 * A snapshot is plain data; mb_monitor_format renders it as a screen (for a terminal that the
 * caller clears), a plain line per device, or a JSON line, and mb_monitor_prom adds it to a
 * Prometheus exposition with dcgm-exporter's names and labels for whole-GPU values.
 *
 * Threads: a struct mb_monitor is used by one thread at a time.
 */
#ifndef MIGBENCH_MONITOR_H
#define MIGBENCH_MONITOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "migbench/device.h"
#include "migbench/live.h"
#include "migbench/prom.h"
#include "migbench/status.h"

#define MB_MONITOR_MAX_DEVICES 16
#define MB_MONITOR_MAX_CELLS 8
#define MB_MONITOR_SPEC_MAX 256

/* One MIG instance with what is known about it. */
struct mb_monitor_instance {
    struct mb_mig_instance mig;
    struct mb_mig_activity activity; /* activity.valid == 0: none measured */
    size_t n_procs;                  /* processes on this GPU instance */
};

/* One device at one sample. A field whose flag is false holds no reading. */
struct mb_monitor_gpu {
    char spec[MB_MONITOR_SPEC_MAX];
    struct mb_device_info info;
    uint32_t caps; /* MB_CAP_* of the device */
    struct mb_sensor_info sensor;
    bool tel_ok;
    struct mb_telemetry tel;
    char error[MB_ERROR_MSG_MAX]; /* why telemetry is missing, "" when it is there */
    bool energy_ok;               /* energy_j is known */
    double energy_j;              /* used since the monitor started */
    const char *energy_source;    /* "counter" or "integrated" (static) */
    bool mig_ok;
    struct mb_mig_mode mig;
    size_t n_inst;
    struct mb_monitor_instance inst[MB_MAX_MIG_INSTANCES];
    bool procs_ok;
    size_t n_procs;
    struct mb_process procs[MB_MAX_PROCESSES];
    size_t n_cells;
    struct mb_live_cell cells[MB_MONITOR_MAX_CELLS]; /* runs active on this device */
};

/* One sample of every device. */
struct mb_monitor_snapshot {
    uint64_t seq;     /* 1 for the first sample */
    int64_t t_ns;     /* CLOCK_MONOTONIC */
    double elapsed_s; /* since the first sample */
    int64_t unix_ms;  /* wall clock, for humans and JSON readers */
    char hostname[256];
    size_t n_gpus;
    struct mb_monitor_gpu gpus[MB_MONITOR_MAX_DEVICES];
};

struct mb_monitor_opts {
    /* Device specs as mb_device_open takes them. None, or the one spec "auto": every GPU NVML
     * reports, else the host. */
    const char *const *specs;
    size_t n_specs;
    /* Where `migbench run` keeps its live files; NULL: mb_live_dir's default; "" : none. */
    const char *live_dir;
};

struct mb_monitor;

/*
 * Opens the devices. *out is owned by the caller (mb_monitor_destroy). A spec that does not open
 * fails the call with mb_device_open's status and the spec named in err.
 */
int mb_monitor_create(const struct mb_monitor_opts *opts, struct mb_monitor **out,
                      struct mb_error *err);

/* Closes the devices and frees; NULL is a no-op. */
void mb_monitor_destroy(struct mb_monitor *m);

/*
 * Reads every device into *out. A device that fails a read keeps its row with the reason in
 * error (a GPU that stops answering does not stop the monitor). MB_OK unless out is NULL.
 */
int mb_monitor_sample(struct mb_monitor *m, struct mb_monitor_snapshot *out, struct mb_error *err);

enum mb_monitor_format {
    MB_MONITOR_SCREEN = 0, /* a multi-line table per device (no escape codes) */
    MB_MONITOR_PLAIN,      /* one line per device, key=value, "-" for unknown */
    MB_MONITOR_JSON,       /* one JSON object per snapshot on one line; unknown is null */
};

/* Renders s; *out (NUL-terminated, ends with a newline) is owned by the caller (free). */
int mb_monitor_format(const struct mb_monitor_snapshot *s, enum mb_monitor_format fmt, char **out,
                      struct mb_error *err);

/*
 * Adds s to p: whole-GPU values under dcgm-exporter's names, units and labels (gpu, UUID, device,
 * modelName, Hostname; MIG rows add GPU_I_ID and GPU_I_PROFILE), the rest as migbench_* series.
 * Whole-GPU power and energy never appear on a MIG-instance row.
 */
int mb_monitor_prom(const struct mb_monitor_snapshot *s, struct mb_prom *p, struct mb_error *err);

#endif
