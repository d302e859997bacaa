/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Small statistics for measurements: running mean/variance, Student-t 95% confidence intervals,
 * batch means over a cumulative work curve, and trapezoid integration.
 *
 * Pure functions and caller-owned accumulators; no allocation, safe from any thread.
 */
#ifndef MIGBENCH_STATS_H
#define MIGBENCH_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Running mean, variance, min and max (Welford). Zero-initialise before use. */
struct mb_stats_acc {
    uint64_t n;
    double mean;
    double m2;
    double min;
    double max;
};

/* Adds one observation. */
void mb_stats_add(struct mb_stats_acc *a, double x);

/* Sample standard deviation (n-1); 0 when n < 2. */
double mb_stats_stddev(const struct mb_stats_acc *a);

/*
 * A mean with its 95% confidence interval. ci_valid is false when n < 2 (no interval can be
 * given); the interval is then unknown, not zero.
 */
struct mb_stats_summary {
    size_t n;
    double mean;
    double stddev;
    double ci95_half; /* half-width of the two-sided 95% interval: mean +- ci95_half */
    bool ci_valid;
};

/* The two-sided 95% Student-t quantile t(0.975, df); df >= 1 (df 0 returns INFINITY). */
double mb_stats_t95(unsigned df);

/* Summarises n observations (n may be 0: mean 0 and nothing valid). */
void mb_stats_summarize(const double *x, size_t n, struct mb_stats_summary *out);

/* Summary of an accumulator. */
void mb_stats_summary_of(const struct mb_stats_acc *a, struct mb_stats_summary *out);

/*
 * Batch means for a rate: given n points (t[i] seconds, cum[i] cumulative work, both
 * non-decreasing), splits [t[0], t[n-1]] into `batches` consecutive batches at the points nearest
 * the equal-time boundaries, computes each batch's rate (work / time) and summarises the rates.
 * The mean reported is the overall rate (total work / total time), which is what a reader expects
 * of "throughput"; the interval comes from the spread of the batch rates. Returns the number of
 * batches used (fewer when there are too few points; 0 when no rate can be computed).
 */
size_t mb_stats_batch_means(const double *t, const double *cum, size_t n, size_t batches,
                            struct mb_stats_summary *out);

/* Trapezoid integral of y(t) over n points (t non-decreasing); 0 for n < 2. */
double mb_stats_trapezoid(const double *t, const double *y, size_t n);

/* Incremental trapezoid integration: feed points in time order. Zero-initialise before use. */
struct mb_trapz {
    bool have;
    double t_prev;
    double y_prev;
    double area;
};

/* Adds the point (t, y): area grows by the trapezoid since the previous point. */
void mb_trapz_add(struct mb_trapz *z, double t, double y);

/* Linear interpolation of y at t between (t0, y0) and (t1, y1); y0 when t1 == t0. */
double mb_stats_lerp(double t0, double y0, double t1, double y1, double t);

#endif
