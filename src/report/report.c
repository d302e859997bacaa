/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The public entry points of report.h: format names and the dispatch to the renderers (table,
 * csv, json, html). Calls flow one way: report.c -> renderers -> common.c (shared formatting).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "migbench/report.h"
#include "migbench/status.h"
#include "power/poweraxis.h"
#include "report_internal.h"

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
