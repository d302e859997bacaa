/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Job progress: a bounded line parser fed raw bytes from a job's progress pipe or its stdout.
 *
 * Protocol mode (default): lines like "step=120 samples=7680 loss=3.91" — whitespace-separated
 * key=value pairs; `step` (required) is the step count so far, `samples` the cumulative samples
 * processed so far, `t` (optional) the job's own clock in seconds when it wrote the line, `unit`
 * (optional) what `samples` counts ("images", "tokens": letters and '_', at most 15); other keys
 * are ignored. Regex mode: a POSIX extended regular expression applied to each line; its
 * first parenthesised group is the step number and its second, when there is one, the job's own
 * clock in seconds; lines that do not match are ordinary output and are not counted as errors.
 *
 * Arrival and the job's clock: records are timed by their arrival, which is right only when the
 * job's output reaches us line by line. A job whose output is block-buffered (Python writing to a
 * pipe, C stdio) delivers many records in one read, long after they were written. The parser
 * counts the reads that carried records; the throughput then uses the job's own clock when every
 * record in the window carries one, and otherwise refuses a rate that bursts would make wrong
 * ("progress arrived in bursts (output buffered?)").
 *
 * Work is counted in samples (from `samples=`, or step x samples_per_step) or, when neither is
 * available, in steps. Each line is timestamped with the t_ns given to the mb_progress_feed call
 * that completed it (CLOCK_MONOTONIC, the meter's clock).
 *
 * Garbage (control or non-ASCII bytes, no step), partial (the last line without its newline),
 * over-long lines and records that go backwards are counted and skipped. Memory is fixed at
 * creation: one line buffer and a fixed number of checkpoints; when the checkpoints fill up,
 * every other one is dropped and the spacing doubles, so a run of any length keeps exact
 * cumulative work at each kept checkpoint.
 *
 * Threads: one thread at a time.
 */
#ifndef MIGBENCH_PROGRESS_H
#define MIGBENCH_PROGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "migbench/stats.h"
#include "migbench/status.h"

#define MB_PROGRESS_LINE_DEFAULT 4096
#define MB_PROGRESS_POINTS_DEFAULT 1024
#define MB_PROGRESS_REASON_MAX 400
/* Bursty arrival is refused unless the window's records came in at least this many reads: the
 * error of arrival timing is then below about 1/200 = 0.5%. */
#define MB_PROGRESS_MIN_READS 200

struct mb_progress_opts {
    const char *regex;       /* NULL: protocol mode */
    double samples_per_step; /* 0: unknown */
    size_t max_line_bytes;   /* 0: MB_PROGRESS_LINE_DEFAULT */
    size_t max_points;       /* 0: MB_PROGRESS_POINTS_DEFAULT; at least 8 */
    /* When the job started, on the clock of mb_progress_feed's t_ns (at or before it: the time
     * the parser is made, before the spawn, will do); 0 unknown. Bounds the job's own clock: a
     * window on it longer than the job has been running is refused. */
    int64_t started_ns;
};

struct mb_progress_counts {
    uint64_t bytes;
    uint64_t lines;    /* complete lines seen */
    uint64_t records;  /* lines accepted as progress */
    uint64_t ignored;  /* regex mode: lines that did not match (normal output) */
    uint64_t garbage;  /* unparseable lines, binary junk */
    uint64_t overlong; /* lines longer than max_line_bytes */
    uint64_t partial;  /* a last line without its newline (counted by mb_progress_end) */
    uint64_t rejected; /* records whose step, samples or own time went backwards */
    uint64_t reads;    /* mb_progress_feed calls that completed at least one record */
};

/* One progress record. */
struct mb_progress_point {
    int64_t t_ns; /* arrival */
    uint64_t step;
    double work;    /* cumulative samples, or steps when the unit is steps */
    double job_t_s; /* the job's own clock (t= or the regex's second group); < 0 when absent */
    uint64_t seq;   /* 1 for the first accepted record, then 2, 3, ... */
    uint64_t read;  /* counts.reads when this record arrived: records of one read share it */
};

struct mb_progress;

/*
 * Creates a parser. *out is owned by the caller (mb_progress_destroy). A regex that does not
 * compile or has no group: MB_EINVAL with regerror's text in err.
 */
int mb_progress_create(const struct mb_progress_opts *opts, struct mb_progress **out,
                       struct mb_error *err);

/* Frees the parser; NULL is a no-op. */
void mb_progress_destroy(struct mb_progress *p);

/* Feeds n raw bytes that arrived at t_ns. Never fails; bad input is counted. */
void mb_progress_feed(struct mb_progress *p, const char *buf, size_t n, int64_t t_ns);

/* Marks the end of input: a pending unterminated line is counted as partial and dropped. */
void mb_progress_end(struct mb_progress *p);

/* Copies the counters. */
void mb_progress_get_counts(const struct mb_progress *p, struct mb_progress_counts *out);

/* The unit the job named with unit= (the first one it gave), or NULL when it named none. */
const char *mb_progress_unit_name(const struct mb_progress *p);

/* True when work is counted in samples, false when in steps. */
bool mb_progress_unit_is_samples(const struct mb_progress *p);

/* The first and the last accepted record; false when there is none. */
bool mb_progress_first(const struct mb_progress *p, struct mb_progress_point *out);
bool mb_progress_last(const struct mb_progress *p, struct mb_progress_point *out);

/* Steady-state throughput after a warm-up. */
struct mb_throughput {
    bool valid;
    char reason[MB_PROGRESS_REASON_MAX]; /* why not valid */
    bool unit_is_samples;
    int64_t t_start_ns; /* the steady window: from the first record after the warm-up ... */
    int64_t t_end_ns;   /* ... to the last record */
    double duration_s;
    double work;                  /* work done in the steady window */
    double steps;                 /* steps done in the steady window */
    struct mb_stats_summary rate; /* work per second: mean (overall) and batch-means 95% CI */
    size_t batches;
    bool job_clock;   /* times from the job's own clock (every record in the window had one) */
    uint64_t records; /* records in the steady window */
    uint64_t reads;   /* reads that delivered them */
};

/*
 * Throughput over the steady window: records with t >= origin_ns + warmup_ns and step >=
 * warmup_steps, to the last record, in `batches` batches (0: 10). Not valid (with a reason) when
 * fewer than two records lie in the window (the reason says how many arrived, in how many reads,
 * and when), or when the records arrived in bursts (on average two or more per read) in fewer
 * than MB_PROGRESS_MIN_READS reads and do not all carry the job's own clock: arrival times would
 * then be off by up to a burst's length, about 1/reads of the window. The job's own clock is
 * checked before it is used: a window on it longer than the job's wall time up to the last
 * record (from opts.started_ns; a clock in ms read as s) and progress of which most records were
 * rejected (a clock group that is no clock, such as a per-iteration time) are refused, with the
 * cause, never a number.
 */
void mb_progress_throughput(const struct mb_progress *p, int64_t origin_ns, int64_t warmup_ns,
                            uint64_t warmup_steps, size_t batches, struct mb_throughput *out);

#endif
