/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Outside load on the host during a measurement window (an internal utility, not installed): CPU
 * steal, the other processes' CPU time and the load average, from /proc deltas between two
 * snapshots, and a verdict against stated thresholds (docs/run.md, "Outside load"). The /proc
 * root is a parameter, so tests read fake `stat`, `loadavg` and `<pid>/stat` files.
 */
#ifndef MIGBENCH_HOSTLOAD_H
#define MIGBENCH_HOSTLOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A window is taken under outside load when any measured figure reaches its threshold. */
#define MB_HOSTLOAD_STEAL_PCT 5.0  /* CPU steal, % of all CPU time in the window */
#define MB_HOSTLOAD_OTHER_PCT 10.0 /* other processes' CPU time, % of all CPU time */
/* ... or when the 1-minute load average, less the cores the jobs were given, is at least the
 * number of CPUs: runnable threads from outside could fill every CPU. */

/* What /proc said at one moment. Fields without their _ok hold nothing. */
struct mb_hostload_snap {
    bool stat_ok;                          /* the "cpu" line of stat */
    unsigned long long total, idle, steal; /* clock ticks, all CPUs */
    unsigned cpus;                         /* cpuN lines; 0 unknown */
    bool load_ok;
    double load1; /* loadavg's 1-minute figure */
    bool ours_ok;
    unsigned long long ours; /* ticks of the given process and every descendant */
};

/* The window between two snapshots. */
struct mb_hostload {
    bool steal_ok;
    double steal_pct;
    bool other_ok;
    double other_pct; /* CPU time of processes other than ours, % of all CPU time */
    bool load_ok;
    double load1;     /* the larger of the two snapshots' */
    unsigned cpus;    /* 0 unknown */
    double job_cores; /* the cores the jobs were given (0 unknown) */
    bool verdict_ok;  /* at least one figure was measured */
    bool loaded;
    char why[200]; /* the figures that reached their thresholds; "" when quiet */
};

/*
 * Reads root/stat, root/loadavg and root/[0-9]*\/stat (root NULL: "/proc"); `ours` sums the
 * user, system and waited-for children's ticks of process self_pid and its descendants. What
 * cannot be read stays invalid; never fails.
 */
void mb_hostload_snap(const char *root, int self_pid, struct mb_hostload_snap *out);

/* The /proc to read: MIGBENCH_PROC_ROOT where set and not empty (tests point it at fake files),
 * else "/proc". */
const char *mb_hostload_root(void);

/* The window from a to b; job_cores 0 when unknown (the load-average test is then skipped). */
void mb_hostload_window(const struct mb_hostload_snap *a, const struct mb_hostload_snap *b,
                        double job_cores, struct mb_hostload *out);

#endif
