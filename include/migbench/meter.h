/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The meter: samples one device at a fixed interval on its own thread, streams every sample to a
 * CSV file, and measures the energy of time windows two ways.
 *
 *   counter   the difference of the hardware energy counter at the window's edges (linearly
 *             interpolated between the samples around each edge), with wrap-around at the
 *             sensor's energy_wrap_mj; a counter that goes backwards (driver reload) splits the
 *             window, the lost stretch is filled from the power integral and the result flagged
 *   integral  the trapezoid integral of the sampled power (edges interpolated); a reading
 *             averaged over a window W (H100/H200: 1 s moving average; A100: 25 ms boxcar) is
 *             shifted back by W/2, the delay of a moving average, before integrating
 *
 * Both are given whenever the device allows, with their relative gap, flagged above 2%. A window
 * shorter than the sensor can resolve (default: max(2 x update period, 1 s)) is refused: no
 * energy, a reason string, never 0 J.
 *
 * Memory is fixed after mb_meter_create: samples are folded into per-window accumulators under a
 * mutex and written to the CSV as they come; nothing grows with the length of a run.
 *
 * Clock: every time is CLOCK_MONOTONIC in ns (the telemetry's t_ns as the backend stamps it), the
 * clock mb_proc uses for progress lines.
 *
 * Threads: after mb_meter_start the device belongs to the meter thread; window and query calls
 * may come from any thread. mb_meter_sample (manual sampling) is for a meter that is not started.
 */
#ifndef MIGBENCH_METER_H
#define MIGBENCH_METER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "migbench/device.h"
#include "migbench/status.h"

#define MB_METER_INTERVAL_DEFAULT_NS 100000000LL  /* 100 ms */
#define MB_METER_INTERVAL_MIN_NS 1000000LL        /* 1 ms */
#define MB_METER_INTERVAL_MAX_NS 10000000000LL    /* 10 s */
#define MB_METER_MIN_WINDOW_FLOOR_NS 1000000000LL /* the 1 s floor of the default rule */
#define MB_METER_GAP_FLAG 0.02                    /* counter vs integral gap that is flagged */
#define MB_METER_MAX_WINDOWS 16
#define MB_METER_REASON_MAX 200

struct mb_meter_opts {
    /* The device: either a spec, opened by mb_meter_create, or an open device handed over (the
     * meter then owns it and closes it in mb_meter_destroy, also on failure). */
    const char *device_spec;
    struct mb_device *device;
    int64_t interval_ns;   /* 0: 100 ms; else 1 ms .. 10 s */
    const char *csv_path;  /* NULL: no CSV */
    int64_t min_window_ns; /* 0: max(2 x power update period, 1 s) */
    bool no_mig;           /* leave out per-MIG-instance columns */
};

/* Energy and power of one window. A `_valid` false field holds no figure. */
struct mb_energy {
    int64_t t0_ns;
    int64_t t1_ns;
    double duration_s;
    bool refused;                     /* window too short: no energy or mean power */
    char reason[MB_METER_REASON_MAX]; /* why a figure is missing ("" when all are there) */
    bool counter_valid;
    double counter_j;
    unsigned counter_wraps;
    unsigned counter_resets;  /* counter went backwards: window split, lost stretch patched */
    double counter_patched_s; /* time filled from the power integral because of resets */
    bool integral_valid;
    double integral_j;
    bool gap_valid;
    double gap_rel; /* (integral - counter) / counter */
    bool gap_flag;  /* |gap| above MB_METER_GAP_FLAG plus the averaging's edge allowance */
    bool mean_power_valid;
    double mean_power_w; /* counter / duration, or integral / duration without a counter */
    bool peak_power_valid;
    double peak_power_w; /* the largest sampled reading inside the window */
    uint64_t samples;    /* samples taken inside the window */
    uint64_t read_failures;
    uint64_t missed_updates; /* samples whose reading had not changed (sensor not refreshed) */
    bool truncated;          /* the meter stopped before the window's end: covers less */
    bool device_lost;        /* the device answered GPU_IS_LOST before the window was covered:
                                no figure at all, reason says so in the device's words */
    struct mb_sensor_info sensor;
    int64_t interval_ns;
    int64_t min_window_ns;
    int64_t power_shift_ns;    /* the shift applied to power readings (W/2) */
    bool throttle_valid;       /* some sample in the window read the throttle reasons */
    uint64_t throttle_reasons; /* every reason bit seen in the window (OR over samples) */
};

/* Totals since start. */
struct mb_meter_counts {
    uint64_t samples;
    uint64_t read_failures;
    uint64_t missed_updates; /* power (and energy) unchanged from the previous sample */
    uint64_t overruns;       /* deadlines skipped because a read took longer than the interval */
    uint64_t csv_errors;
    uint64_t counter_wraps;
    uint64_t counter_resets;
};

struct mb_meter;

/*
 * Creates a meter: opens (or takes) the device, reads its identity and sensor semantics, opens
 * the CSV and writes its header. *out is owned by the caller (mb_meter_destroy). Bad interval or
 * options: MB_EINVAL; device errors as mb_device_open returns them.
 */
int mb_meter_create(const struct mb_meter_opts *opts, struct mb_meter **out, struct mb_error *err);

/* Starts the sampling thread; returns once the first sample has been taken. */
int mb_meter_start(struct mb_meter *m, struct mb_error *err);

/* Manual sampling (tests, single-threaded use): takes one sample now. MB_ESTATE when started. */
int mb_meter_sample(struct mb_meter *m, struct mb_error *err);

/*
 * Stops and joins the thread, takes one last sample so that open windows are covered, and
 * flushes the CSV. Idempotent.
 */
int mb_meter_stop(struct mb_meter *m, struct mb_error *err);

/* Stops if needed, closes the device and the CSV, frees. NULL is a no-op. */
void mb_meter_destroy(struct mb_meter *m);

/* The device identity and sensor semantics read at create. */
void mb_meter_device(const struct mb_meter *m, struct mb_device_info *info,
                     struct mb_sensor_info *sensor);

/* The interval and the minimum window in effect. */
int64_t mb_meter_interval_ns(const struct mb_meter *m);
int64_t mb_meter_min_window_ns(const struct mb_meter *m);

/* CLOCK_MONOTONIC now in ns (mb_clock_monotonic_ns): the time base for windows. */
int64_t mb_meter_now_ns(void);

/*
 * Opens a window starting at t0_ns (normally mb_meter_now_ns()). *id names it. Samples are
 * folded into windows as they come, so a t0_ns earlier than the last sample taken is moved to that
 * sample (the window's result shows the t0 used). MB_ENORESOURCES when MB_METER_MAX_WINDOWS
 * windows are in use.
 */
int mb_meter_window_begin(struct mb_meter *m, int64_t t0_ns, int *id, struct mb_error *err);

/*
 * Sets the end of window id to t1_ns (>= t0). As for the start, a t1_ns earlier than the last
 * sample taken is moved to that sample: end windows when they end, before waiting on results.
 * A started meter takes an extra sample right away so the result need not wait for the next
 * period. MB_EINVAL for an unknown id, MB_ESTATE when the window is not open.
 */
int mb_meter_window_end(struct mb_meter *m, int id, int64_t t1_ns, struct mb_error *err);

/* Ends n windows at the same t1_ns, atomically (the extra sample cannot fall between them). */
int mb_meter_window_end_n(struct mb_meter *m, const int *ids, size_t n, int64_t t1_ns,
                          struct mb_error *err);

/*
 * The part of a window's integral-vs-counter gap (J) that the power reading's averaging window W
 * explains alone: peak reading x W / 4, a load step at each edge of the window (meter_gap.c
 * derives it). 0 without a peak reading or for an unaveraged reading.
 */
double mb_meter_gap_edge_j(const struct mb_energy *r);

/* Whether |integral_j - counter_j| is above MB_METER_GAP_FLAG of the counter plus edge_j. */
bool mb_meter_gap_exceeds(double integral_j, double counter_j, double edge_j);

/*
 * Waits up to timeout_ms (-1: no limit) until samples cover the window's end (or the meter has
 * stopped: the window is then truncated), fills *out and frees the window id. MB_ETIMEDOUT when
 * not yet covered (the window stays open); MB_ESTATE when the end was never set.
 */
int mb_meter_window_result(struct mb_meter *m, int id, int timeout_ms, struct mb_energy *out,
                           struct mb_error *err);

/*
 * True once a read answered MB_EGONE (NVML's GPU_IS_LOST); why gets the device's message (NVIDIA's
 * code and words through the nvml backend). Every window open then, or begun later, ends at once
 * with device_lost set and no figure. The meter keeps sampling (the rows say read_ok 0).
 */
bool mb_meter_lost(struct mb_meter *m, char *why, size_t cap);

/*
 * True when per-MIG-instance activity (the CSV's gi<N>_ columns, optional) could not be read;
 * why gets the first failure in the device's words (e.g. NVML's ARGUMENT_VERSION_MISMATCH from
 * the versioned GPM call). Those columns are then empty, never 0.
 */
bool mb_meter_activity_note(struct mb_meter *m, char *why, size_t cap);

/* Copies the counters. */
void mb_meter_get_counts(struct mb_meter *m, struct mb_meter_counts *out);

/* The most recent successful sample; false when there is none yet. */
bool mb_meter_latest(struct mb_meter *m, struct mb_telemetry *out);

#endif
