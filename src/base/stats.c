/* SPDX-License-Identifier: Apache-2.0 */
/* Statistics helpers: Welford accumulators, Student-t intervals, batch means, trapezoids. */
#include "migbench/stats.h"

#include <math.h>

void mb_stats_add(struct mb_stats_acc *a, double x)
{
    a->n++;
    if (a->n == 1) {
        a->mean = x;
        a->m2 = 0;
        a->min = a->max = x;
        return;
    }
    double d = x - a->mean;
    a->mean += d / (double)a->n;
    a->m2 += d * (x - a->mean);
    if (x < a->min)
        a->min = x;
    if (x > a->max)
        a->max = x;
}

double mb_stats_stddev(const struct mb_stats_acc *a)
{
    if (a->n < 2)
        return 0;
    return sqrt(a->m2 / (double)(a->n - 1));
}

/* t(0.975, df) for df 1..30, from the standard tables. */
static const double t975[31] = {
    INFINITY, 12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646, 2.3060, 2.2622, 2.2281,
    2.2010,   2.1788,  2.1604, 2.1448, 2.1314, 2.1199, 2.1098, 2.1009, 2.0930, 2.0860, 2.0796,
    2.0739,   2.0687,  2.0639, 2.0595, 2.0555, 2.0518, 2.0484, 2.0452, 2.0423,
};

double mb_stats_t95(unsigned df)
{
    if (df <= 30)
        return t975[df];
    /* Cornish-Fisher expansion around the normal quantile; error < 1e-4 for df > 30. */
    const double z = 1.959963984540054;
    double v = (double)df;
    double z3 = z * z * z, z5 = z3 * z * z, z7 = z5 * z * z;
    return z + (z3 + z) / (4 * v) + (5 * z5 + 16 * z3 + 3 * z) / (96 * v * v) +
           (3 * z7 + 19 * z5 + 17 * z3 - 15 * z) / (384 * v * v * v);
}

void mb_stats_summary_of(const struct mb_stats_acc *a, struct mb_stats_summary *out)
{
    out->n = (size_t)a->n;
    out->mean = a->n ? a->mean : 0;
    out->stddev = mb_stats_stddev(a);
    out->ci_valid = a->n >= 2;
    out->ci95_half =
        out->ci_valid ? mb_stats_t95((unsigned)(a->n - 1)) * out->stddev / sqrt((double)a->n) : 0;
}

void mb_stats_summarize(const double *x, size_t n, struct mb_stats_summary *out)
{
    struct mb_stats_acc a = {0};
    for (size_t i = 0; i < n; i++)
        mb_stats_add(&a, x[i]);
    mb_stats_summary_of(&a, out);
}

size_t mb_stats_batch_means(const double *t, const double *cum, size_t n, size_t batches,
                            struct mb_stats_summary *out)
{
    *out = (struct mb_stats_summary){0};
    if (n < 2 || batches == 0 || !(t[n - 1] > t[0]))
        return 0;
    if (batches > n - 1)
        batches = n - 1;
    double span = t[n - 1] - t[0];
    struct mb_stats_acc a = {0};
    size_t used = 0, start = 0;
    for (size_t b = 1; b <= batches; b++) {
        size_t end;
        if (b == batches) {
            end = n - 1;
        } else {
            double edge = t[0] + span * (double)b / (double)batches;
            end = start + 1;
            while (end < n - 1 && t[end] < edge)
                end++;
            /* The point just before the edge may be nearer. */
            if (end > start + 1 && edge - t[end - 1] < t[end] - edge)
                end--;
        }
        if (end <= start)
            continue;
        double dt = t[end] - t[start];
        if (dt > 0) {
            mb_stats_add(&a, (cum[end] - cum[start]) / dt);
            used++;
        }
        start = end;
        if (start >= n - 1)
            break;
    }
    mb_stats_summary_of(&a, out);
    out->mean = (cum[n - 1] - cum[0]) / span;
    return used;
}

double mb_stats_trapezoid(const double *t, const double *y, size_t n)
{
    double area = 0;
    for (size_t i = 1; i < n; i++)
        area += (t[i] - t[i - 1]) * (y[i] + y[i - 1]) * 0.5;
    return area;
}

void mb_trapz_add(struct mb_trapz *z, double t, double y)
{
    if (z->have)
        z->area += (t - z->t_prev) * (y + z->y_prev) * 0.5;
    z->have = true;
    z->t_prev = t;
    z->y_prev = y;
}

double mb_stats_lerp(double t0, double y0, double t1, double y1, double t)
{
    if (t1 == t0)
        return y0;
    return y0 + (y1 - y0) * (t - t0) / (t1 - t0);
}
