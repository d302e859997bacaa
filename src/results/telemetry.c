/* SPDX-License-Identifier: Apache-2.0 */
/* A cell's telemetry.csv: the samples, power integrals over windows, the timeline. */
#include "base/json_io.h"
#include "migbench/analysis.h"
#include "migbench/stats.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "migbench/catalog.h"
#include "migbench/experiment.h"
#include "migbench/fileio.h"
#include "migbench/num.h"
#include "base/text_internal.h"

/* Bounds on outside input: a cell.json is small; telemetry is read line by line. */
#define TELEMETRY_LINE_MAX 4096
#define TELEMETRY_ROWS_MAX 500000 /* 14 h at 10 Hz; rows beyond are not read, and said */
#define TELEMETRY_COLS_MAX 64

/* The two-sided 95% Student t quantile (stats.h); df >= 1 wherever a CI is computed. */
#include "results/analysis_internal.h"

/* ---------------------------------------------------------------------------------------- */
/* Telemetry                                                                                  */

static int split_csv(char *line, char **fields, int max)
{
    int n = 0;
    char *p = line;
    for (;;) {
        if (n == max)
            return n;
        fields[n++] = p;
        char *c = strchr(p, ',');
        if (!c)
            break;
        *c = '\0';
        p = c + 1;
    }
    char *end = fields[n - 1] + strlen(fields[n - 1]);
    while (end > fields[n - 1] && (end[-1] == '\n' || end[-1] == '\r'))
        *--end = '\0';
    return n;
}

static int field_num(const char *s, double *out)
{
    if (!s || !*s)
        return 0;
    double v;
    if (mb_num_parse(s, &v, NULL) != MB_OK)
        return 0;
    *out = v;
    return 1;
}

/* Absolute times let job intervals and the window (both monotonic ns) line up with samples. */
static double abs_time_ns(const struct mb_an_cell *c, int is_ns, double t)
{
    if (is_ns) {
        if (c->t0_ns > 0 && t < (double)c->t0_ns / 2)
            return t + (double)c->t0_ns;
        return t;
    }
    return (double)c->t0_ns + t * 1e9;
}

double mb__an_power_integral_j(const struct tel_row *rows, size_t n, double a_ns, double b_ns)
{
    double j = 0;
    for (size_t i = 1; i < n; i++) {
        if (!rows[i - 1].has_power || !rows[i].has_power)
            continue;
        double lo = rows[i - 1].t_ns > a_ns ? rows[i - 1].t_ns : a_ns;
        double hi = rows[i].t_ns < b_ns ? rows[i].t_ns : b_ns;
        if (hi <= lo)
            continue;
        j += 0.5 * (rows[i - 1].power_w + rows[i].power_w) * (hi - lo) * 1e-9;
    }
    return j;
}

/*
 * Reads telemetry.csv by column name. Missing file or columns are not errors: the cell simply
 * has no timeline / activity / interval energy, and says why. Returns rows through *rows_out.
 */
/* The columns of telemetry.csv's header: time, power, and each job's activity. */
struct tel_cols {
    int t, t_is_ns, p;
    double p_scale;
    int act[MB_AN_JOBS_MAX];
};

static void read_header(struct mb_an_cell *c, char **fields, int nf, struct tel_cols *k)
{
    k->t = -1;
    k->t_is_ns = 1;
    k->p = -1;
    k->p_scale = 1.0;
    for (size_t j = 0; j < MB_AN_JOBS_MAX; j++)
        k->act[j] = -1;
    for (int i = 0; i < nf; i++) {
        const char *h = fields[i];
        if (strcmp(h, "t_ns") == 0) {
            k->t = i;
            k->t_is_ns = 1;
        } else if (strcmp(h, "t_s") == 0 && k->t < 0) {
            k->t = i;
            k->t_is_ns = 0;
        } else if (strcmp(h, "power_mw") == 0) {
            k->p = i;
            k->p_scale = 1e-3;
        } else if (strcmp(h, "power_w") == 0 && k->p < 0) {
            k->p = i;
            k->p_scale = 1.0;
        } else if (h[0] == 'g' && h[1] == 'i' && strstr(h, "_sm_util_pct") != NULL) {
            /* The meter's per-GPU-instance SM utilisation: gi<id>_sm_util_pct. */
            char *end;
            long gi = strtol(h + 2, &end, 10);
            if (end != h + 2 && strcmp(end, "_sm_util_pct") == 0)
                for (size_t j = 0; j < c->njobs; j++)
                    if (c->jobs[j].gi_id == gi) {
                        k->act[j] = i;
                        c->activity_gi = 1;
                    }
        } else if (strncmp(h, "activity_", 9) == 0 || strncmp(h, "gract_", 6) == 0) {
            const char *num = h + (h[0] == 'a' ? 9 : 6);
            char *end;
            long idx = strtol(num, &end, 10);
            if (end != num && *end == '\0' && idx >= 0 && idx < MB_AN_JOBS_MAX)
                k->act[idx] = i;
        }
    }
}

int mb__an_load_telemetry(struct mb_an_cell *c, const char *path, struct tel_row **rows_out,
                          size_t *nrows_out, struct mb_error *err)
{
    *rows_out = NULL;
    *nrows_out = 0;
    FILE *f;
    struct mb_error oerr = {0};
    int orc = mb_file_fopen_input(path, &f, &oerr);
    if (orc != MB_OK) {
        mb__copy_str(c->timeline_note, sizeof(c->timeline_note),
                     orc == MB_ENOTFOUND ? "no telemetry.csv"
                                         : "telemetry.csv unreadable or not a regular file");
        return orc == MB_ENOMEM ? mb_error_set(err, MB_ENOMEM, "out of memory") : MB_OK;
    }
    char line[TELEMETRY_LINE_MAX];
    char *fields[TELEMETRY_COLS_MAX];
    struct tel_cols k;
    struct tel_row *rows = NULL;
    size_t n = 0, cap = 0;
    int st = MB_OK;
    if (!fgets(line, sizeof(line), f)) {
        mb__copy_str(c->timeline_note, sizeof(c->timeline_note), "telemetry.csv is empty");
        goto done;
    }
    int nf = split_csv(line, fields, TELEMETRY_COLS_MAX);
    read_header(c, fields, nf, &k);
    if (k.t < 0) {
        mb__copy_str(c->timeline_note, sizeof(c->timeline_note),
                     "telemetry.csv has no t_ns or t_s column");
        goto done;
    }
    while (fgets(line, sizeof(line), f)) {
        if (n >= TELEMETRY_ROWS_MAX) {
            snprintf(c->timeline_note, sizeof(c->timeline_note),
                     "telemetry.csv read up to its first %d rows only", TELEMETRY_ROWS_MAX);
            break;
        }
        nf = split_csv(line, fields, TELEMETRY_COLS_MAX);
        double t;
        if (k.t >= nf || !field_num(fields[k.t], &t))
            continue;
        if (n == cap) {
            size_t ncap = cap ? cap * 2 : 256;
            struct tel_row *r = realloc(rows, ncap * sizeof(*r));
            if (!r) {
                st = mb_error_set(err, MB_ENOMEM, "%s: out of memory", path);
                goto done;
            }
            rows = r;
            cap = ncap;
        }
        struct tel_row *r = &rows[n];
        memset(r, 0, sizeof(*r));
        r->t_ns = abs_time_ns(c, k.t_is_ns, t);
        double p;
        if (k.p >= 0 && k.p < nf && field_num(fields[k.p], &p)) {
            r->has_power = 1;
            r->power_w = (float)(p * k.p_scale);
        }
        for (size_t j = 0; j < MB_AN_JOBS_MAX; j++) {
            double a;
            if (k.act[j] >= 0 && k.act[j] < nf && field_num(fields[k.act[j]], &a)) {
                r->has_act |= (uint32_t)1 << j;
                r->act[j] = (float)a;
            }
        }
        n++;
    }
    if (k.p < 0)
        mb__copy_str(c->timeline_note, sizeof(c->timeline_note),
                     "telemetry.csv has no power_mw or power_w column");
done:
    fclose(f);
    if (st != MB_OK) {
        free(rows);
        return st;
    }
    *rows_out = rows;
    *nrows_out = n;
    return MB_OK;
}

/* Averages the power samples into at most MB_AN_TIMELINE_MAX buckets for plotting. */
int mb__an_build_timeline(struct mb_an_cell *c, const struct tel_row *rows, size_t n)
{
    size_t np = 0;
    for (size_t i = 0; i < n; i++)
        np += rows[i].has_power != 0;
    if (np == 0) {
        if (!c->timeline_note[0])
            mb__copy_str(c->timeline_note, sizeof(c->timeline_note), "no power samples");
        return MB_OK;
    }
    size_t per = (np + MB_AN_TIMELINE_MAX - 1) / MB_AN_TIMELINE_MAX;
    size_t cap = (np + per - 1) / per;
    c->timeline = calloc(cap, sizeof(*c->timeline));
    if (!c->timeline)
        return MB_ENOMEM;
    double origin = -1;
    size_t k = 0, in = 0;
    double ts = 0, ps = 0;
    for (size_t i = 0; i < n; i++) {
        if (!rows[i].has_power)
            continue;
        if (origin < 0)
            origin = rows[i].t_ns;
        ts += (rows[i].t_ns - origin) * 1e-9;
        ps += rows[i].power_w;
        if (++in == per) {
            c->timeline[k].t_s = ts / (double)in;
            c->timeline[k].power_w = ps / (double)in;
            k++;
            in = 0;
            ts = ps = 0;
        }
    }
    if (in > 0 && k < cap) {
        c->timeline[k].t_s = ts / (double)in;
        c->timeline[k].power_w = ps / (double)in;
        k++;
    }
    c->ntimeline = k;
    c->timeline_origin_s = origin * 1e-9;
    return MB_OK;
}
