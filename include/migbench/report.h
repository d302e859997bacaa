/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Report renderers: one analysis (analysis.h), several output formats. The renderers write to a
 * stream or a buffer the caller gives; they never print elsewhere, never exit, and never open a
 * file: the caller decides where a report goes (cli/cmd_report.c writes -o FILE atomically).
 */
#ifndef MIGBENCH_REPORT_H
#define MIGBENCH_REPORT_H

#include <stddef.h>
#include <stdio.h>

#include "migbench/analysis.h"

#ifdef __cplusplus
extern "C" {
#endif

enum mb_report_format {
    MB_REPORT_TABLE,    /* aligned text tables for a terminal */
    MB_REPORT_CSV,      /* one row per job and run */
    MB_REPORT_JSON,     /* the analysis as JSON, schema 1 */
    MB_REPORT_HTML,     /* one self-contained page: inline CSS and SVG, no scripts */
    MB_REPORT_MARKDOWN, /* the tables as Markdown */
};

/*
 * The format named name: "table", "csv", "json", "html", "md" or "markdown". Returns MB_OK, or
 * MB_EINVAL (and leaves *out alone) for any other name or NULL.
 */
int mb_report_format_parse(const char *name, enum mb_report_format *out);

/* The format's canonical name ("table", "csv", "json", "html", "md"); "?" when out of range. */
const char *mb_report_format_name(enum mb_report_format fmt);

/*
 * Renders a in format fmt to out. Returns MB_OK, MB_ENOMEM, MB_EINVAL (a NULL argument or an
 * unknown format) or MB_EIO when out reports a write error (ferror). Does not flush or close out.
 */
int mb_report_write(FILE *out, const struct mb_analysis *a, enum mb_report_format fmt);

/*
 * Renders a into a new NUL-terminated buffer: *text (the caller frees it) of *len bytes (the NUL
 * not counted). On failure *text is NULL and *len 0. Returns as mb_report_write.
 */
int mb_report_render(char **text, size_t *len, const struct mb_analysis *a,
                     enum mb_report_format fmt);

#ifdef __cplusplus
}
#endif

#endif
