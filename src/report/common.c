/* SPDX-License-Identifier: Apache-2.0 */
/* Formatting every report renderer shares, and the public entry points of report.h. */
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

/* ---------------------------------------------------------------------------------------- */
/* The public entry points                                                                    */

static const char *const format_names[] = {"table", "csv", "json", "html", "md"};

int mb_report_format_parse(const char *name, enum mb_report_format *out)
{
    if (!name || !out)
        return MB_EINVAL;
    if (strcmp(name, "markdown") == 0) {
        *out = MB_REPORT_MARKDOWN;
        return MB_OK;
    }
    for (size_t i = 0; i < sizeof(format_names) / sizeof(format_names[0]); i++)
        if (strcmp(name, format_names[i]) == 0) {
            *out = (enum mb_report_format)i;
            return MB_OK;
        }
    return MB_EINVAL;
}

const char *mb_report_format_name(enum mb_report_format fmt)
{
    if ((unsigned)fmt >= sizeof(format_names) / sizeof(format_names[0]))
        return "?";
    return format_names[fmt];
}

int mb_report_write(FILE *out, const struct mb_analysis *a, enum mb_report_format fmt)
{
    return mb_report_write_rule(out, a, fmt, NULL);
}

/* The power-limit axis of each experiment after the tables (docs/power.md). */
static int power_text(FILE *out, const struct mb_analysis *a, const struct mb_power_rule_opts *rule)
{
    for (size_t i = 0; i < a->nexp; i++) {
        struct mb_paxis ax;
        struct mb_error err;
        int st = mb_paxis_build(&a->exps[i], rule, &ax, &err);
        if (st != MB_OK)
            return st;
        if (ax.n && a->nexp > 1)
            fprintf(out, "\n%s:", a->exps[i].dir);
        mb_paxis_write_text(out, &ax);
        mb_paxis_free(&ax);
    }
    return MB_OK;
}

int mb_report_write_rule(FILE *out, const struct mb_analysis *a, enum mb_report_format fmt,
                         const struct mb_power_rule_opts *rule)
{
    if (!out || !a)
        return MB_EINVAL;
    int st = MB_OK;
    switch (fmt) {
    case MB_REPORT_TABLE:
        mb__report_table(out, a, 0);
        st = power_text(out, a, rule);
        break;
    case MB_REPORT_MARKDOWN:
        mb__report_table(out, a, 1);
        st = power_text(out, a, rule);
        break;
    case MB_REPORT_CSV:
        mb__report_csv(out, a);
        break;
    case MB_REPORT_JSON:
        st = mb__report_json(out, a, rule);
        break;
    case MB_REPORT_HTML:
        mb__report_html(out, a);
        break;
    default:
        return MB_EINVAL;
    }
    if (st == MB_OK && ferror(out))
        st = MB_EIO;
    return st;
}

int mb_report_render(char **text, size_t *len, const struct mb_analysis *a,
                     enum mb_report_format fmt)
{
    if (!text || !len)
        return MB_EINVAL;
    *text = NULL;
    *len = 0;
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    if (!f)
        return MB_ENOMEM;
    int st = mb_report_write(f, a, fmt);
    if (fclose(f) != 0 && st == MB_OK)
        st = MB_ENOMEM;
    if (st != MB_OK) {
        free(buf);
        return st;
    }
    *text = buf;
    *len = n;
    return MB_OK;
}
