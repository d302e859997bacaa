/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Formatting every report renderer shares. The public entry points of report.h (format names,
 * dispatch) are in report.c, which calls the renderers; the renderers call down into this file.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "power/poweraxis.h"
#include "migbench/report.h"
#include "migbench/status.h"
#include "report_internal.h"
#include "migbench/num.h"

/* ---------------------------------------------------------------------------------------- */
/* Formatting shared by every renderer                                                        */

void mb__fmt_est(char *buf, size_t cap, const struct mb_estimate *e, int decimals, double scale)
{
    if (!e->valid) {
        snprintf(buf, cap, "n/a");
        return;
    }
    if (e->ci_valid)
        snprintf(buf, cap, "%.*f ± %.*f", decimals, e->mean * scale, decimals, e->ci95 * scale);
    else if (e->n == 1) /* one repetition: the interval is unavailable, and says so */
        snprintf(buf, cap, "%.*f ± n/a", decimals, e->mean * scale);
    else
        snprintf(buf, cap, "%.*f", decimals, e->mean * scale);
}

int mb__no_energy_sensor(const struct mb_an_experiment *e)
{
    size_t n = 0;
    for (size_t i = 0; i < e->nruns; i++)
        for (size_t k = 0; k < e->runs[i].ncells; k++) {
            if (strcmp(e->runs[i].cells[k].energy_flag, "no_sensor") != 0)
                return 0;
            n++;
        }
    return n > 0;
}

const char *mb__device_label(char *buf, size_t cap, const struct mb_an_experiment *e)
{
    if (e->model[0])
        snprintf(buf, cap, "%s", e->model);
    else if (e->device_name[0])
        snprintf(buf, cap, "%s (%s)", e->device_name, e->backend[0] ? e->backend : "n/a");
    else
        snprintf(buf, cap, "an unnamed device");
    return buf;
}

void mb__run_label(char *buf, size_t cap, const struct mb_an_run *r)
{
    if (r->layout[0] && strcmp(r->name, r->mode) == 0)
        snprintf(buf, cap, "%s %s", r->mode, r->layout);
    else if (r->layout[0])
        snprintf(buf, cap, "%s (%s %s)", r->name, r->mode, r->layout);
    else if (strcmp(r->name, r->mode) == 0)
        snprintf(buf, cap, "%s", r->name);
    else
        snprintf(buf, cap, "%s (%s)", r->name, r->mode);
}

/* "31% less energy (95% CI 27–35%)" from a signed gain g ± ci (g > 0 means `up` wins). */
static void fmt_gain(char *buf, size_t cap, const struct mb_estimate *g, const char *more,
                     const char *less, const char *what)
{
    if (!g->valid) {
        snprintf(buf, cap, "%s n/a", what);
        return;
    }
    double m = g->mean * 100;
    const char *dir = m >= 0 ? more : less;
    double s = m >= 0 ? 1 : -1;
    double v = fabs(m);
    if (!g->ci_valid) {
        snprintf(buf, cap, "%.0f%% %s %s (no CI: one repetition)", v, dir, what);
        return;
    }
    double lo = s * (g->mean - g->ci95) * 100, hi = s * (g->mean + g->ci95) * 100;
    if (lo > hi) {
        double t = lo;
        lo = hi;
        hi = t;
    }
    if (lo < 0)
        snprintf(buf, cap, "%.0f%% %s %s (95%% CI %.0f%% to %.0f%%)", v, dir, what, lo, hi);
    else
        snprintf(buf, cap, "%.0f%% %s %s (95%% CI %.0f–%.0f%%)", v, dir, what, lo, hi);
}

void mb__fmt_headline(char *buf, size_t cap, const struct mb_an_run *r)
{
    buf[0] = '\0';
    if (!r->has_baseline || !r->stp.valid)
        return;
    char e[160], t[160];
    fmt_gain(e, sizeof(e), &r->energy_saving, "less", "more", "energy");
    fmt_gain(t, sizeof(t), &r->throughput_gain, "more", "less", "throughput");
    if (!r->energy_saving.valid) /* no energy measured: say nothing of it here */
        snprintf(buf, cap, "%s than running the jobs one after another", t);
    else
        snprintf(buf, cap, "%s and %s than running the jobs one after another", e, t);
}

void mb__fmt_j(char *buf, size_t cap, int64_t mj)
{
    snprintf(buf, cap, "%s%lld.%03lld", mj < 0 ? "-" : "", (long long)(llabs(mj) / 1000),
             (long long)(llabs(mj) % 1000));
}

char *mb__fmt_sig(char *buf, size_t cap, double v, int sig)
{
    return mb_num_fmt_sig(buf, cap, v, sig);
}
