/* SPDX-License-Identifier: Apache-2.0 */
/* Results analysis: loads cell.json and telemetry.csv files and derives the study's figures. */
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
#define CELL_JSON_MAX (16u << 20)
#define TELEMETRY_LINE_MAX 4096
#define TELEMETRY_ROWS_MAX 500000 /* 14 h at 10 Hz; rows beyond are not read, and said */
#define TELEMETRY_COLS_MAX 64
#define RUNS_MAX 256
#define CELLS_MAX 1024
#define MB_MAX_GPUS_NOTED 64

/* The two-sided 95% Student t quantile (stats.h); df >= 1 wherever a CI is computed. */
static double t95(size_t df)
{
    return df == 0 ? NAN : mb_stats_t95(df > UINT_MAX ? UINT_MAX : (unsigned)df);
}

static const char *const method_names[MB_ATTR_COUNT] = {
    "equal", "compute-share", "activity", "static-dynamic", "interval",
};

const char *mb_analysis_method_name(int m)
{
    if (m < 0 || m >= MB_ATTR_COUNT)
        return "unknown";
    return method_names[m];
}

int mb_analysis_split(int64_t total_mj, const int64_t *weights, size_t n, int64_t *parts)
{
    if (n == 0 || n > MB_AN_JOBS_MAX)
        return MB_EINVAL;
    int64_t wsum = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t w = weights ? weights[i] : 1;
        if (w < 0)
            return MB_EINVAL;
        wsum += w;
    }
    if (wsum <= 0)
        return MB_EINVAL;
    int64_t given = 0;
    for (size_t i = 0; i + 1 < n; i++) {
        int64_t w = weights ? weights[i] : 1;
        /* long double keeps the product exact for totals and weights far beyond real ones. */
        long double share = (long double)total_mj * (long double)w / (long double)wsum;
        parts[i] = (int64_t)floorl(share);
        given += parts[i];
    }
    parts[n - 1] = total_mj - given;
    return MB_OK;
}

/* ---------------------------------------------------------------------------------------- */
/* Small helpers                                                                              */

static const char *json_str(const cJSON *obj, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static struct mb_opt json_num(const cJSON *obj, const char *key)
{
    struct mb_opt o = {0, 0.0};
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (cJSON_IsNumber(v) && isfinite(v->valuedouble)) {
        o.valid = 1;
        o.v = v->valuedouble;
    }
    return o;
}

static int64_t json_i64(const cJSON *obj, const char *key)
{
    struct mb_opt o = json_num(obj, key);
    return o.valid && mb_num_fits_i64(o.v) ? (int64_t)llround(o.v) : 0;
}

/* An int field of cell.json: whole and in range, else dflt (a hostile file cannot overflow it). */
static int opt_int(struct mb_opt o, int dflt)
{
    int64_t v;
    if (!o.valid || mb_num_to_i64(o.v, INT_MIN, INT_MAX, &v) != MB_OK)
        return dflt;
    return (int)v;
}

static void add_note(struct mb_an_experiment *e, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void add_note(struct mb_an_experiment *e, const char *fmt, ...)
{
    if (e->nnotes >= MB_AN_NOTES_MAX)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->notes[e->nnotes], MB_AN_TEXT_MAX, fmt, ap);
    va_end(ap);
    e->nnotes++;
}

static void set_note(struct mb_attribution *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void set_note(struct mb_attribution *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(a->note, sizeof(a->note), fmt, ap);
    va_end(ap);
}

static int is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static int is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static int join(char *out, size_t cap, const char *a, const char *b)
{
    int n = snprintf(out, cap, "%s/%s", a, b);
    return n >= 0 && (size_t)n < cap;
}

static int read_file(const char *path, char **out, struct mb_error *err)
{
    int rc = mb_file_read(path, CELL_JSON_MAX, out, NULL, err);
    if (rc == MB_ERANGE) /* a cell that large is not one migbench wrote */
        rc = mb_error_restatus(err, MB_EPARSE);
    return rc;
}

/* ---------------------------------------------------------------------------------------- */
/* Estimates                                                                                  */

static void estimate_from(struct mb_estimate *e, const double *x, size_t n)
{
    memset(e, 0, sizeof(*e));
    if (n == 0)
        return;
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += x[i];
    e->valid = 1;
    e->n = n;
    e->mean = sum / (double)n;
    if (n < 2)
        return;
    double ss = 0;
    for (size_t i = 0; i < n; i++)
        ss += (x[i] - e->mean) * (x[i] - e->mean);
    double se = sqrt(ss / (double)(n - 1) / (double)n);
    e->df = n - 1;
    e->ci_valid = 1;
    e->ci95 = t95(e->df) * se;
}

static double est_se(const struct mb_estimate *e)
{
    if (!e->ci_valid)
        return NAN;
    return e->ci95 / t95(e->df);
}

/*
 * Per-repetition values computed with the baseline means held fixed, plus the variance the
 * baseline means contribute (delta method). The degrees of freedom are the smaller of the two
 * samples' minus one, which is conservative.
 */
static void estimate_combined(struct mb_estimate *e, const double *x, size_t n, double extra_var,
                              int extra_ok, size_t base_n)
{
    estimate_from(e, x, n);
    if (!e->valid)
        return;
    if (!e->ci_valid || !extra_ok || base_n < 2) {
        e->ci_valid = 0;
        e->ci95 = 0;
        e->df = 0;
        return;
    }
    double se = est_se(e);
    size_t df = (n < base_n ? n : base_n) - 1;
    e->df = df;
    e->ci95 = t95(df) * sqrt(se * se + extra_var);
}

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

/* Kept small: a long cell has hundreds of thousands of rows. */
_Static_assert(MB_AN_JOBS_MAX <= 32, "has_act is a 32-bit mask");
struct tel_row {
    double t_ns; /* absolute, monotonic */
    float power_w;
    float act[MB_AN_JOBS_MAX];
    uint32_t has_power;
    uint32_t has_act; /* bit j: act[j] is valid */
};

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

static double power_integral_j(const struct tel_row *rows, size_t n, double a_ns, double b_ns)
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
static int load_telemetry(struct mb_an_cell *c, const char *path, struct tel_row **rows_out,
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
    int t_col = -1, t_is_ns = 1, p_col = -1, act_col[MB_AN_JOBS_MAX];
    double p_scale = 1.0;
    for (size_t j = 0; j < MB_AN_JOBS_MAX; j++)
        act_col[j] = -1;
    struct tel_row *rows = NULL;
    size_t n = 0, cap = 0;
    int st = MB_OK;
    if (!fgets(line, sizeof(line), f)) {
        mb__copy_str(c->timeline_note, sizeof(c->timeline_note), "telemetry.csv is empty");
        goto done;
    }
    int nf = split_csv(line, fields, TELEMETRY_COLS_MAX);
    for (int i = 0; i < nf; i++) {
        const char *h = fields[i];
        if (strcmp(h, "t_ns") == 0) {
            t_col = i;
            t_is_ns = 1;
        } else if (strcmp(h, "t_s") == 0 && t_col < 0) {
            t_col = i;
            t_is_ns = 0;
        } else if (strcmp(h, "power_mw") == 0) {
            p_col = i;
            p_scale = 1e-3;
        } else if (strcmp(h, "power_w") == 0 && p_col < 0) {
            p_col = i;
            p_scale = 1.0;
        } else if (h[0] == 'g' && h[1] == 'i' && strstr(h, "_sm_util_pct") != NULL) {
            /* The meter's per-GPU-instance SM utilisation: gi<id>_sm_util_pct. */
            char *end;
            long gi = strtol(h + 2, &end, 10);
            if (end != h + 2 && strcmp(end, "_sm_util_pct") == 0)
                for (size_t j = 0; j < c->njobs; j++)
                    if (c->jobs[j].gi_id == gi) {
                        act_col[j] = i;
                        c->activity_gi = 1;
                    }
        } else if (strncmp(h, "activity_", 9) == 0 || strncmp(h, "gract_", 6) == 0) {
            const char *num = h + (h[0] == 'a' ? 9 : 6);
            char *end;
            long k = strtol(num, &end, 10);
            if (end != num && *end == '\0' && k >= 0 && k < MB_AN_JOBS_MAX)
                act_col[k] = i;
        }
    }
    if (t_col < 0) {
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
        if (t_col >= nf || !field_num(fields[t_col], &t))
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
        r->t_ns = abs_time_ns(c, t_is_ns, t);
        double p;
        if (p_col >= 0 && p_col < nf && field_num(fields[p_col], &p)) {
            r->has_power = 1;
            r->power_w = (float)(p * p_scale);
        }
        for (size_t j = 0; j < MB_AN_JOBS_MAX; j++) {
            double a;
            if (act_col[j] >= 0 && act_col[j] < nf && field_num(fields[act_col[j]], &a)) {
                r->has_act |= (uint32_t)1 << j;
                r->act[j] = (float)a;
            }
        }
        n++;
    }
    if (p_col < 0)
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
static int build_timeline(struct mb_an_cell *c, const struct tel_row *rows, size_t n)
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

/* ---------------------------------------------------------------------------------------- */
/* Cells                                                                                      */

/* Per-run facts read from a cell; the first ok cell's version is kept. */
struct run_meta {
    char run[MB_AN_NAME_MAX];
    char mode[MB_AN_NAME_MAX];
    char on[MB_AN_NAME_MAX]; /* exclusive on a MIG instance: its profile; else "" */
    size_t njobs;
    char job[MB_AN_JOBS_MAX][MB_AN_NAME_MAX];
    char workload[MB_AN_JOBS_MAX][MB_AN_NAME_MAX];
    char unit[MB_AN_JOBS_MAX][MB_AN_NAME_MAX];
    char instance[MB_AN_JOBS_MAX][MB_AN_NAME_MAX];
    struct mb_opt pct[MB_AN_JOBS_MAX];
    int cpus[MB_AN_JOBS_MAX];
    struct mb_opt cores[MB_AN_JOBS_MAX];
    size_t argc[MB_AN_JOBS_MAX];
    char **argv[MB_AN_JOBS_MAX]; /* owned until a run takes it */
};

static void free_argv(char **argv, size_t argc)
{
    for (size_t i = 0; argv && i < argc; i++)
        free(argv[i]);
    free(argv);
}

static void free_meta(struct run_meta *m)
{
    for (size_t i = 0; i < MB_AN_JOBS_MAX; i++)
        free_argv(m->argv[i], m->argc[i]);
    free(m);
}

/* A job's jobs[].argv: its strings copied (anything else as ""); MB_ENOMEM or MB_OK. */
static int read_argv(struct run_meta *m, size_t i, const cJSON *argv)
{
    size_t n = cJSON_IsArray(argv) ? (size_t)cJSON_GetArraySize(argv) : 0;
    if (n == 0)
        return MB_OK;
    m->argv[i] = calloc(n, sizeof(char *));
    if (!m->argv[i])
        return MB_ENOMEM;
    m->argc[i] = n;
    size_t k = 0;
    const cJSON *a;
    cJSON_ArrayForEach(a, argv)
    {
        m->argv[i][k] = strdup(cJSON_IsString(a) ? a->valuestring : "");
        if (!m->argv[i][k++])
            return MB_ENOMEM;
    }
    return MB_OK;
}

static int profile_slices(const char *profile)
{
    /* "4g.40gb" -> 4 compute slices; "1c.4g.40gb" (a compute instance) -> 1. */
    if (!profile || !*profile)
        return 0;
    char *end;
    long v = strtol(profile, &end, 10);
    if (end == profile || v <= 0 || v > 64 || (*end != 'g' && *end != 'c'))
        return 0;
    return (int)v;
}

static void read_device(struct mb_an_experiment *e, const cJSON *dev)
{
    if (!cJSON_IsObject(dev) || e->backend[0])
        return;
    mb__copy_str(e->backend, sizeof(e->backend), json_str(dev, "backend"));
    mb__copy_str(e->device_name, sizeof(e->device_name), json_str(dev, "name"));
    mb__copy_str(e->model, sizeof(e->model), json_str(dev, "model"));
    mb__copy_str(e->uuid, sizeof(e->uuid), json_str(dev, "uuid"));
    mb__copy_str(e->driver_version, sizeof(e->driver_version), json_str(dev, "driver_version"));
    /* Every cell.json since the first runner records "emulated". */
    e->emulated = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(dev, "emulated"));
    /* "gpu": the device's MB_CAP_GPU bit as recorded; cells written before the flag existed
     * record only the backend, and there the host backend was the one CPU device. */
    const cJSON *gpu = cJSON_GetObjectItemCaseSensitive(dev, "gpu");
    e->cpu_device = cJSON_IsBool(gpu) ? cJSON_IsFalse(gpu) : strcmp(e->backend, "host") == 0;
    struct mb_opt pl = json_num(dev, "power_limit_mw");
    if (pl.valid) {
        e->power_limit_w.valid = 1;
        e->power_limit_w.v = pl.v / 1000.0;
    }
    const cJSON *sensor = cJSON_GetObjectItemCaseSensitive(dev, "sensor");
    const cJSON *it;
    size_t used = 0;
    cJSON_ArrayForEach(it, sensor)
    {
        char val[64];
        if (cJSON_IsString(it))
            snprintf(val, sizeof(val), "%s", it->valuestring);
        else if (cJSON_IsNumber(it))
            snprintf(val, sizeof(val), "%g", it->valuedouble);
        else if (cJSON_IsBool(it))
            snprintf(val, sizeof(val), "%s", cJSON_IsTrue(it) ? "true" : "false");
        else
            continue;
        int w = snprintf(e->sensor + used, sizeof(e->sensor) - used, "%s%s=%s", used ? ", " : "",
                         it->string ? it->string : "?", val);
        if (w < 0 || (size_t)w >= sizeof(e->sensor) - used)
            break;
        used += (size_t)w;
    }
}

/* cell.json's "power_limit" (the power-limit axis): null or absent without it. */
static void read_power_limit(struct mb_an_cell *c, const cJSON *pl)
{
    if (!cJSON_IsObject(pl))
        return;
    mb__copy_str(c->power_limit, sizeof(c->power_limit), json_str(pl, "requested"));
    mb__copy_str(c->base_run, sizeof(c->base_run), json_str(pl, "base_run"));
    struct mb_opt mw = json_num(pl, "enforced_mw");
    if (mw.valid && mw.v > 0) {
        c->enforced_w.valid = 1;
        c->enforced_w.v = mw.v / 1000.0;
    }
    struct mb_opt bits = json_num(pl, "throttle_reasons");
    if (bits.valid && bits.v >= 0 && bits.v < 0x1p63) {
        c->throttle_valid = 1;
        c->throttle_reasons = (uint64_t)bits.v;
    }
}

/*
 * Remembers a workload's definition: a hash of its argv with directories left out, so that the
 * same job on another machine (another interpreter path) still compares equal.
 */
static void record_workload(struct mb_an_experiment *e, const char *workload, const cJSON *argv)
{
    for (size_t i = 0; i < e->nworkloads; i++)
        if (strcmp(e->workload_names[i], workload) == 0)
            return;
    if (e->nworkloads == MB_AN_WORKLOADS_MAX)
        return;
    uint64_t h = 0;
    const cJSON *a;
    cJSON_ArrayForEach(a, argv)
    {
        if (!cJSON_IsString(a))
            continue;
        const char *base = strrchr(a->valuestring, '/');
        base = base ? base + 1 : a->valuestring;
        h = mb_fnv1a64(h ? h : MB_FNV1A_INIT, base, strlen(base) + 1);
    }
    mb__copy_str(e->workload_names[e->nworkloads], MB_AN_NAME_MAX, workload);
    e->workload_sig[e->nworkloads++] = h;
}

/* The cell's window and energy; the energy used is the counter's, else the integrated one. */
static void parse_cell_energy(struct mb_an_cell *c, const cJSON *root)
{
    c->t0_ns = json_i64(root, "t0_ns");
    const cJSON *win = cJSON_GetObjectItemCaseSensitive(root, "window");
    c->window_s = json_num(win, "seconds");
    c->window_start_ns = json_i64(win, "start_ns");
    c->window_end_ns = json_i64(win, "end_ns");
    if (!c->window_s.valid && c->window_end_ns > c->window_start_ns && c->window_start_ns > 0) {
        c->window_s.valid = 1;
        c->window_s.v = (double)(c->window_end_ns - c->window_start_ns) * 1e-9;
    }
    c->reconfigure_s = json_num(root, "reconfigure_seconds");
    const cJSON *en = cJSON_GetObjectItemCaseSensitive(root, "energy");
    c->counter_j = json_num(en, "counter_j");
    c->integrated_j = json_num(en, "integrated_j");
    c->gap_pct = json_num(en, "gap_pct");
    c->idle_power_w = json_num(en, "idle_power_w");
    c->mean_power_w = json_num(en, "mean_power_w");
    c->peak_power_w = json_num(en, "peak_power_w");
    c->samples = json_num(en, "samples");
    c->missed_updates = json_num(en, "missed_updates");
    mb__copy_str(c->energy_flag, sizeof(c->energy_flag), json_str(en, "flag"));
    mb__copy_str(c->refused_reason, sizeof(c->refused_reason), json_str(en, "refused_reason"));
    if (!c->gap_pct.valid && c->counter_j.valid && c->integrated_j.valid && c->counter_j.v > 0) {
        c->gap_pct.valid = 1;
        c->gap_pct.v = 100.0 * (c->integrated_j.v - c->counter_j.v) / c->counter_j.v;
    }
    if (!c->refused_reason[0] && c->counter_j.valid && c->counter_j.v >= 0) {
        c->has_energy = 1;
        c->energy_mj = llround(c->counter_j.v * 1000.0);
        c->energy_source = "counter";
    } else if (!c->refused_reason[0] && c->integrated_j.valid && c->integrated_j.v >= 0) {
        c->has_energy = 1;
        c->energy_mj = llround(c->integrated_j.v * 1000.0);
        c->energy_source = "integrated";
    }
}

/* Job i of a cell (j: its jobs[i]); the run-level facts go to m. */
static int parse_cell_job(struct mb_an_cell *c, struct run_meta *m, size_t i, const cJSON *j,
                          const cJSON *mig_inst, const cJSON *mps_pct, const char *path,
                          struct mb_error *err)
{
    struct mb_an_cell_job *cj = &c->jobs[i];
    const char *name = json_str(j, "name");
    if (!name) {
        return mb_error_set(err, MB_EPARSE, "%s: field 'jobs[%zu].name': missing", path, i);
    }
    mb__copy_str(cj->name, sizeof(cj->name), name);
    mb__copy_str(m->job[i], sizeof(m->job[i]), name);
    mb__copy_str(m->workload[i], sizeof(m->workload[i]),
                 json_str(j, "workload") ? json_str(j, "workload") : name);
    const cJSON *tp = cJSON_GetObjectItemCaseSensitive(j, "throughput");
    cj->throughput = json_num(tp, "mean");
    cj->throughput_ci95 = json_num(tp, "ci95");
    const char *ups = json_str(tp, "unit_per_s");
    if (ups)
        mb__copy_str(m->unit[i], sizeof(m->unit[i]), ups);
    else if (json_str(j, "unit"))
        snprintf(m->unit[i], sizeof(m->unit[i]), "%.100s/s", json_str(j, "unit"));
    cj->steps = json_num(j, "steps");
    cj->units = json_num(j, "units");
    /* Rates and counts are never negative: such a file is damaged, not a measurement. */
    const char *neg = cj->throughput.valid && cj->throughput.v < 0 ? "throughput.mean"
                      : cj->steps.valid && cj->steps.v < 0         ? "steps"
                      : cj->units.valid && cj->units.v < 0         ? "units"
                                                                   : NULL;
    if (neg) {
        return mb_error_set(err, MB_EPARSE, "%s: field 'jobs[%zu].%s': negative", path, i, neg);
    }
    cj->steps_unit = ups && strcmp(ups, "steps/s") == 0;
    const cJSON *jw = cJSON_GetObjectItemCaseSensitive(j, "window");
    if (!cJSON_IsObject(jw))
        jw = cJSON_GetObjectItemCaseSensitive(tp, "window");
    cj->window_s = json_num(jw, "seconds");
    if (cj->window_s.valid && cj->window_s.v < 0) {
        return mb_error_set(err, MB_EPARSE, "%s: field 'jobs[%zu].window.seconds': negative", path,
                            i);
    }
    cj->window_start_ns = json_i64(jw, "start_ns");
    cj->window_end_ns = json_i64(jw, "end_ns");
    cj->has_window = cj->window_start_ns > 0 && cj->window_end_ns > cj->window_start_ns;
    if (!cj->window_s.valid && cj->has_window) {
        cj->window_s.valid = 1;
        cj->window_s.v = (double)(cj->window_end_ns - cj->window_start_ns) * 1e-9;
    }
    /* Work in the window: rate x the job's own window, else x the cell's window (shared
     * modes, where all jobs share it), else the reported units (which may include the
     * warm-up: said in work_basis). */
    int excl = strcmp(m->mode, "exclusive") == 0;
    if (cj->throughput.valid && cj->window_s.valid) {
        cj->work.valid = 1;
        cj->work.v = cj->throughput.v * cj->window_s.v;
        cj->work_basis = "rate x job window";
    } else if (cj->throughput.valid && !excl && c->window_s.valid) {
        cj->work.valid = 1;
        cj->work.v = cj->throughput.v * c->window_s.v;
        cj->work_basis = "rate x cell window";
    } else if (cj->units.valid && !cj->steps_unit) {
        cj->work = cj->units;
        cj->work_basis = "reported units";
    }
    int64_t s = json_i64(j, "started_ns"), en_ns = json_i64(j, "ended_ns");
    if (s > 0 && en_ns > s) {
        cj->has_times = 1;
        cj->started_ns = s;
        cj->ended_ns = en_ns;
    }
    const cJSON *inst = cJSON_GetObjectItemCaseSensitive(j, "instance");
    const char *prof = json_str(inst, "profile");
    /* The job's GPU instance id, to find its gi<id>_* telemetry columns. */
    cj->gi_id = -1;
    const char *iuuid = json_str(inst, "uuid");
    const cJSON *mi;
    cJSON_ArrayForEach(mi, mig_inst)
    {
        const char *u = json_str(mi, "uuid");
        struct mb_opt g = json_num(mi, "gi_id");
        if (iuuid && u && strcmp(iuuid, u) == 0 && g.valid)
            cj->gi_id = opt_int(g, -1);
    }
    if (cj->gi_id < 0 && !iuuid) {
        struct mb_opt g = json_num(cJSON_GetArrayItem(mig_inst, (int)i), "gi_id");
        if (g.valid)
            cj->gi_id = opt_int(g, -1);
    }
    if (!prof)
        prof = json_str(cJSON_GetArrayItem(mig_inst, (int)i), "profile");
    if (prof)
        mb__copy_str(m->instance[i], sizeof(m->instance[i]), prof);
    struct mb_opt pct = json_num(j, "thread_percentage");
    if (!pct.valid) {
        const cJSON *p = cJSON_GetArrayItem(mps_pct, (int)i);
        if (cJSON_IsNumber(p)) {
            pct.valid = 1;
            pct.v = p->valuedouble;
        }
    }
    m->pct[i] = pct;
    const cJSON *cpus = cJSON_GetObjectItemCaseSensitive(j, "cpus");
    m->cpus[i] = cJSON_IsArray(cpus) ? cJSON_GetArraySize(cpus) : 0;
    m->cores[i] = json_num(j, "cores");
    if (read_argv(m, i, cJSON_GetObjectItemCaseSensitive(j, "argv")) != MB_OK)
        return mb_error_set(err, MB_ENOMEM, "%s: out of memory", path);
    return MB_OK;
}

static int parse_cell(struct mb_an_experiment *e, struct mb_an_cell *c, struct run_meta *m,
                      const char *path, const char *dirname_run, int dir_rep, struct mb_error *err)
{
    char *text = NULL;
    int st = read_file(path, &text, err);
    if (st != MB_OK)
        return st;
    cJSON *root;
    st = mb_json_parse(text, strlen(text), path, &root, err);
    free(text);
    if (st != MB_OK)
        return st;
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return mb_error_set(err, MB_EPARSE, "%s: field '(root)': expected a JSON object", path);
    }
    struct mb_opt schema = json_num(root, "schema");
    if (schema.valid && schema.v != 1) {
        cJSON_Delete(root);
        return mb_error_set(err, MB_EPARSE,
                            "%s: field 'schema': version %g is not supported (this migbench "
                            "reads 1)",
                            path, schema.v);
    }
    mb__copy_str(c->path, sizeof(c->path), path);
    mb__copy_str(m->run, sizeof(m->run),
                 json_str(root, "run") ? json_str(root, "run") : dirname_run);
    mb__copy_str(m->mode, sizeof(m->mode), json_str(root, "mode"));
    mb__copy_str(m->on, sizeof(m->on), json_str(root, "on"));
    if (!m->mode[0]) {
        cJSON_Delete(root);
        return mb_error_set(err, MB_EPARSE, "%s: field 'mode': missing", path);
    }
    static const char *const modes[] = {"exclusive", "timeslice", "partition", "mig", "mps"};
    bool known = false;
    for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
        known = known || strcmp(m->mode, modes[i]) == 0;
    if (!known) {
        cJSON_Delete(root);
        return mb_error_set(err, MB_EPARSE,
                            "%s: field 'mode': '%s' is not a sharing mode (exclusive, timeslice, "
                            "partition, mig, mps)",
                            path, m->mode);
    }
    struct mb_opt rep = json_num(root, "rep");
    c->rep = opt_int(rep, dir_rep);
    const char *status = json_str(root, "status");
    c->ok = status && strcmp(status, "ok") == 0;
    if (!c->ok) {
        const cJSON *fl = cJSON_GetObjectItemCaseSensitive(root, "failure");
        const char *job = json_str(fl, "job"), *reason = json_str(fl, "reason");
        snprintf(c->failure, sizeof(c->failure), "%s%s%s", job ? job : "", job ? ": " : "",
                 reason ? reason : (status ? status : "no status"));
    }
    if (!e->name[0]) {
        mb__copy_str(e->name, sizeof(e->name), json_str(root, "experiment"));
        mb__copy_str(e->sha, sizeof(e->sha), json_str(root, "experiment_sha"));
        mb__copy_str(e->migbench_version, sizeof(e->migbench_version),
                     json_str(root, "migbench_version"));
    }
    read_device(e, cJSON_GetObjectItemCaseSensitive(root, "device"));
    read_power_limit(c, cJSON_GetObjectItemCaseSensitive(root, "power_limit"));
    mb__copy_str(c->gpu_uuid, sizeof(c->gpu_uuid),
                 json_str(cJSON_GetObjectItemCaseSensitive(root, "device"), "uuid"));
    parse_cell_energy(c, root);
    const cJSON *mig_inst = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, "device"), "mig"),
        "instances");
    const cJSON *mps_pct = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(root, "mps"), "thread_percentage");
    const cJSON *jobs = cJSON_GetObjectItemCaseSensitive(root, "jobs");
    size_t nj = (size_t)cJSON_GetArraySize(jobs);
    if (!cJSON_IsArray(jobs) || nj == 0) {
        cJSON_Delete(root);
        return mb_error_set(err, MB_EPARSE, "%s: field 'jobs': missing or empty", path);
    }
    if (nj > MB_AN_JOBS_MAX) {
        cJSON_Delete(root);
        return mb_error_set(err, MB_EPARSE, "%s: field 'jobs': more than %d jobs", path,
                            MB_AN_JOBS_MAX);
    }
    c->njobs = nj;
    m->njobs = nj;
    for (size_t i = 0; i < nj; i++) {
        st =
            parse_cell_job(c, m, i, cJSON_GetArrayItem(jobs, (int)i), mig_inst, mps_pct, path, err);
        if (st != MB_OK) {
            cJSON_Delete(root);
            return st;
        }
        record_workload(e, m->workload[i],
                        cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(jobs, (int)i), "argv"));
    }
    cJSON_Delete(root);
    return MB_OK;
}

/* ---------------------------------------------------------------------------------------- */
/* Attribution                                                                                */

static int is_exclusive(const char *mode)
{
    return strcmp(mode, "exclusive") == 0;
}

/* Integer compute weights for the run, or 0 when the mode has none. */
static int compute_weights(const struct mb_an_run *r, int64_t *w, char *why, size_t whycap)
{
    for (size_t i = 0; i < r->njobs; i++) {
        w[i] = r->jobs[i].compute_weight;
        if (w[i] <= 0) {
            if (strcmp(r->mode, "timeslice") == 0)
                snprintf(why, whycap, "not defined for timeslice: every job uses all SMs in turn");
            else if (is_exclusive(r->mode))
                snprintf(why, whycap, "not applicable: jobs ran alone, one after another");
            else
                snprintf(why, whycap, "no compute share recorded for job '%s'", r->jobs[i].name);
            return 0;
        }
    }
    return 1;
}

static const char *share_basis(const struct mb_an_run *r)
{
    if (strcmp(r->mode, "mig") == 0)
        return "MIG compute slices";
    if (strcmp(r->mode, "mps") == 0)
        return "MPS thread percentages";
    if (strcmp(r->mode, "partition") == 0)
        return "CPU cores";
    return "compute weights";
}

static void attribute_cell(struct mb_an_run *r, struct mb_an_cell *c, const struct tel_row *rows,
                           size_t nrows)
{
    size_t n = r->njobs;
    for (int m = 0; m < MB_ATTR_COUNT; m++) {
        c->attr[m].available = 0;
        c->attr[m].total_mj = c->energy_mj;
    }
    int same_jobs = c->njobs == n;
    for (size_t i = 0; same_jobs && i < n; i++)
        same_jobs = strcmp(c->jobs[i].name, r->jobs[i].name) == 0;
    if (!c->ok || !c->has_energy || !same_jobs) {
        for (int m = 0; m < MB_ATTR_COUNT; m++)
            set_note(&c->attr[m], "%s",
                     !c->ok ? "cell failed"
                            : (!c->has_energy ? "no energy measured" : "job list differs"));
        return;
    }
    int64_t w[MB_AN_JOBS_MAX];
    char why[MB_AN_TEXT_MAX] = "";
    int excl = is_exclusive(r->mode);

    if (excl) {
        for (int m = 0; m < MB_ATTR_COUNT; m++)
            if (m != MB_ATTR_INTERVAL)
                set_note(&c->attr[m], "not applicable: jobs ran alone, one after another");
        /* Each job's own interval (its measurement window, else spawn..reap): power integral
         * when telemetry has power, else duration. */
        int have_times = 1;
        int64_t ia[MB_AN_JOBS_MAX], ib[MB_AN_JOBS_MAX];
        for (size_t i = 0; i < n; i++) {
            const struct mb_an_cell_job *cj = &c->jobs[i];
            ia[i] = cj->has_window ? cj->window_start_ns : cj->started_ns;
            ib[i] = cj->has_window ? cj->window_end_ns : cj->ended_ns;
            have_times &= cj->has_window || cj->has_times;
        }
        double pj[MB_AN_JOBS_MAX];
        int use_power = have_times && nrows > 1;
        for (size_t i = 0; use_power && i < n; i++) {
            pj[i] = power_integral_j(rows, nrows, (double)ia[i], (double)ib[i]);
            use_power &= pj[i] > 0;
        }
        struct mb_attribution *a = &c->attr[MB_ATTR_INTERVAL];
        if (use_power) {
            double mx = 0;
            for (size_t i = 0; i < n; i++)
                mx = pj[i] > mx ? pj[i] : mx;
            for (size_t i = 0; i < n; i++)
                w[i] = llround(pj[i] / mx * 1e6);
            set_note(a, "each job's interval, by integrated power over it");
        } else if (have_times) {
            for (size_t i = 0; i < n; i++)
                w[i] = (ib[i] - ia[i]) / 1000000;
            set_note(a, "each job's interval, by its duration (no power telemetry)");
        } else {
            set_note(a, "unavailable: jobs have no start/end times");
            return;
        }
        a->available = mb_analysis_split(c->energy_mj, w, n, a->job_mj) == MB_OK;
        if (!a->available)
            set_note(a, "unavailable: job intervals are empty");
        return;
    }

    set_note(&c->attr[MB_ATTR_INTERVAL], "not applicable: jobs ran at the same time");
    struct mb_attribution *a = &c->attr[MB_ATTR_EQUAL];
    a->available = mb_analysis_split(c->energy_mj, NULL, n, a->job_mj) == MB_OK;
    set_note(a, "1/%zu each", n);

    a = &c->attr[MB_ATTR_COMPUTE_SHARE];
    int have_share = compute_weights(r, w, why, sizeof(why));
    if (have_share) {
        a->available = mb_analysis_split(c->energy_mj, w, n, a->job_mj) == MB_OK;
        set_note(a, "by %s", share_basis(r));
    } else {
        set_note(a, "%s", why);
    }

    a = &c->attr[MB_ATTR_ACTIVITY];
    int have_act = 1;
    double mx = 0;
    for (size_t i = 0; i < n; i++) {
        have_act &= c->jobs[i].activity.valid;
        if (c->jobs[i].activity.valid && c->jobs[i].activity.v > mx)
            mx = c->jobs[i].activity.v;
    }
    /* Per-GI SM utilisation is relative to the instance: weight it by the instance's size. */
    int by_size = c->activity_gi;
    for (size_t i = 0; by_size && i < n; i++)
        by_size = r->jobs[i].compute_weight > 0;
    if (c->activity_gi && !by_size)
        have_act = 0;
    if (have_act && mx > 0) {
        double v[MB_AN_JOBS_MAX], vmx = 0;
        for (size_t i = 0; i < n; i++) {
            v[i] = c->jobs[i].activity.v * (by_size ? r->jobs[i].compute_weight : 1);
            vmx = v[i] > vmx ? v[i] : vmx;
        }
        int64_t aw[MB_AN_JOBS_MAX];
        for (size_t i = 0; i < n; i++)
            aw[i] = llround(v[i] / vmx * 1e6);
        a->available = mb_analysis_split(c->energy_mj, aw, n, a->job_mj) == MB_OK;
        set_note(a, "%s",
                 by_size ? "by per-instance SM utilisation x instance compute slices"
                         : "by per-instance activity in telemetry");
    } else {
        set_note(a, "unavailable: telemetry has no per-instance activity for every job");
    }

    a = &c->attr[MB_ATTR_STATIC_DYNAMIC];
    if (c->idle_power_w.valid && c->window_s.valid) {
        int64_t st = llround(c->idle_power_w.v * c->window_s.v * 1000.0);
        if (st > c->energy_mj)
            st = c->energy_mj;
        if (st < 0)
            st = 0;
        int64_t sp[MB_AN_JOBS_MAX], dp[MB_AN_JOBS_MAX];
        int ok = mb_analysis_split(st, NULL, n, sp) == MB_OK &&
                 mb_analysis_split(c->energy_mj - st, have_share ? w : NULL, n, dp) == MB_OK;
        if (ok) {
            for (size_t i = 0; i < n; i++)
                a->job_mj[i] = sp[i] + dp[i];
            a->available = 1;
            set_note(a, "idle power x window split equally, the rest %s",
                     have_share ? (strcmp(r->mode, "mig") == 0   ? "by MIG compute slices"
                                   : strcmp(r->mode, "mps") == 0 ? "by MPS thread percentages"
                                                                 : "by CPU cores")
                                : "equally");
        }
    } else {
        set_note(a, "unavailable: no idle power baseline");
    }
}

/* ---------------------------------------------------------------------------------------- */
/* Loading                                                                                    */

static int mode_rank(const char *mode)
{
    static const char *const order[] = {"exclusive", "timeslice", "partition", "mps", "mig"};
    for (int i = 0; i < 5; i++)
        if (strcmp(mode, order[i]) == 0)
            return i;
    return 5;
}

static int cmp_run(const void *a, const void *b)
{
    const struct mb_an_run *x = a, *y = b;
    int d = mode_rank(x->mode) - mode_rank(y->mode);
    return d ? d : strcmp(x->name, y->name);
}

static int cmp_cell(const void *a, const void *b)
{
    const struct mb_an_cell *x = a, *y = b;
    return (x->rep > y->rep) - (x->rep < y->rep);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void free_names(char **names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

/* Sorted names of the subdirectories of dir (no dot entries). */
static int list_dirs(const char *dir, char ***out, size_t *nout, size_t max, struct mb_error *err)
{
    *out = NULL;
    *nout = 0;
    DIR *d = opendir(dir);
    if (!d)
        return mb_error_set(err, errno == ENOENT ? MB_ENOTFOUND : MB_EIO, "%s: %s", dir,
                            strerror(errno));
    char **names = NULL;
    size_t n = 0;
    struct dirent *de;
    int st = MB_OK;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        char p[MB_AN_PATH_MAX];
        if (!join(p, sizeof(p), dir, de->d_name) || !is_dir(p))
            continue;
        if (n >= max) {
            st = mb_error_set(err, MB_ERANGE, "%s: more than %zu entries", dir, max);
            break;
        }
        char **nn = realloc(names, (n + 1) * sizeof(*nn));
        char *s = strdup(de->d_name);
        if (!nn || !s) {
            free(s);
            if (nn)
                names = nn;
            st = mb_error_set(err, MB_ENOMEM, "out of memory");
            break;
        }
        names = nn;
        names[n++] = s;
    }
    closedir(d);
    if (st != MB_OK) {
        free_names(names, n);
        return st;
    }
    if (n)
        qsort(names, n, sizeof(*names), cmp_str);
    *out = names;
    *nout = n;
    return MB_OK;
}

static struct mb_an_run *find_run(struct mb_an_experiment *e, const char *name)
{
    for (size_t i = 0; i < e->nruns; i++)
        if (strcmp(e->runs[i].name, name) == 0)
            return &e->runs[i];
    return NULL;
}

static void fill_run_jobs(struct mb_an_run *r, struct run_meta *m)
{
    for (size_t i = 0; i < r->njobs; i++) {
        free_argv(r->jobs[i].argv, r->jobs[i].argc);
        r->jobs[i].argv = NULL;
        r->jobs[i].argc = 0;
    }
    r->njobs = m->njobs;
    for (size_t i = 0; i < m->njobs; i++) {
        struct mb_an_job *j = &r->jobs[i];
        j->argv = m->argv[i];
        j->argc = m->argc[i];
        m->argv[i] = NULL;
        m->argc[i] = 0;
        mb__copy_str(j->name, sizeof(j->name), m->job[i]);
        mb__copy_str(j->workload, sizeof(j->workload), m->workload[i]);
        mb__copy_str(j->unit, sizeof(j->unit), m->unit[i][0] ? m->unit[i] : "units/s");
        mb__copy_str(j->instance, sizeof(j->instance), m->instance[i]);
        j->thread_percentage = m->pct[i];
        j->cores = m->cores[i];
        j->compute_weight = 0;
        if (strcmp(r->mode, "mig") == 0)
            j->compute_weight = profile_slices(m->instance[i]);
        else if (strcmp(r->mode, "mps") == 0 && m->pct[i].valid && m->pct[i].v > 0 &&
                 m->pct[i].v <= 100)
            j->compute_weight = (int)llround(m->pct[i].v);
        else if (strcmp(r->mode, "partition") == 0)
            j->compute_weight = m->cpus[i];
    }
    size_t used = 0;
    r->layout[0] = '\0';
    if (m->on[0]) {
        snprintf(r->layout, sizeof(r->layout), "on %s", m->on);
        return;
    }
    for (size_t i = 0; i < m->njobs; i++) {
        char part[MB_AN_NAME_MAX + 2];
        if (strcmp(r->mode, "mig") == 0 && m->instance[i][0])
            snprintf(part, sizeof(part), "%s%s", i ? "+" : "", m->instance[i]);
        else if (strcmp(r->mode, "mps") == 0 && m->pct[i].valid)
            snprintf(part, sizeof(part), "%s%g%s", i ? "/" : "", m->pct[i].v,
                     i + 1 == m->njobs ? "%" : "");
        else
            continue;
        size_t pl = strlen(part);
        if (used + pl >= sizeof(r->layout))
            break;
        memcpy(r->layout + used, part, pl + 1);
        used += pl;
    }
}

static int load_cell(struct mb_an_experiment *e, const char *rundir, const char *run_dirname,
                     const char *rep_dirname, struct mb_error *err)
{
    char repdir[MB_AN_PATH_MAX], cellpath[MB_AN_PATH_MAX], telpath[MB_AN_PATH_MAX];
    if (!join(repdir, sizeof(repdir), rundir, rep_dirname) ||
        !join(cellpath, sizeof(cellpath), repdir, "cell.json") ||
        !join(telpath, sizeof(telpath), repdir, "telemetry.csv"))
        return mb_error_set(err, MB_ERANGE, "%s/%s: path too long", rundir, rep_dirname);
    if (!is_file(cellpath))
        return MB_OK; /* unfinished cell: counted from the journal, not here */
    struct mb_an_cell cell;
    struct run_meta *meta = calloc(1, sizeof(*meta));
    if (!meta)
        return mb_error_set(err, MB_ENOMEM, "out of memory");
    memset(&cell, 0, sizeof(cell));
    cell.origin = -1; /* claimed by the directory being loaded (claim_origin) */
    char *end;
    long dr = strtol(rep_dirname, &end, 10);
    int st = parse_cell(e, &cell, meta, cellpath, run_dirname, *end ? 0 : (int)dr, err);
    if (st != MB_OK)
        goto fail;
    struct mb_an_run *r = find_run(e, meta->run);
    if (!r) {
        if (e->nruns >= RUNS_MAX) {
            st = mb_error_set(err, MB_ERANGE, "%s: more than %d runs", e->dir, RUNS_MAX);
            goto fail;
        }
        struct mb_an_run *nr = realloc(e->runs, (e->nruns + 1) * sizeof(*nr));
        if (!nr) {
            st = mb_error_set(err, MB_ENOMEM, "out of memory");
            goto fail;
        }
        e->runs = nr;
        r = &e->runs[e->nruns++];
        memset(r, 0, sizeof(*r));
        mb__copy_str(r->name, sizeof(r->name), meta->run);
        mb__copy_str(r->mode, sizeof(r->mode), meta->mode);
        mb__copy_str(r->power_limit, sizeof(r->power_limit), cell.power_limit);
        mb__copy_str(r->base_run, sizeof(r->base_run), cell.base_run);
        fill_run_jobs(r, meta);
    } else if (r->nok == 0 && cell.ok) {
        fill_run_jobs(r, meta); /* prefer a successful cell's job description */
    }
    if (strcmp(r->mode, meta->mode) != 0) {
        st = mb_error_set(err, MB_EPARSE, "%s: field 'mode': '%s' but run '%s' is '%s'", cellpath,
                          meta->mode, r->name, r->mode);
        goto fail;
    }
    if (r->ncells >= CELLS_MAX) {
        st = mb_error_set(err, MB_ERANGE, "%s: more than %d cells", rundir, CELLS_MAX);
        goto fail;
    }
    struct mb_an_cell *nc = realloc(r->cells, (r->ncells + 1) * sizeof(*nc));
    if (!nc) {
        st = mb_error_set(err, MB_ENOMEM, "out of memory");
        goto fail;
    }
    r->cells = nc;
    r->cells[r->ncells++] = cell;
    r->nok += cell.ok != 0;
    r->nfailed += cell.ok == 0;
    free_meta(meta);
    (void)telpath;
    return MB_OK;
fail:
    free(cell.timeline);
    free_meta(meta);
    return st;
}

/* Telemetry-derived facts need the run's job list, so they are read after all cells. */
static int load_cell_telemetry(struct mb_an_run *r, struct mb_an_cell *c, struct mb_error *err)
{
    char telpath[MB_AN_PATH_MAX];
    mb__copy_str(telpath, sizeof(telpath), c->path);
    char *slash = strrchr(telpath, '/');
    if (!slash)
        return MB_OK;
    size_t room = sizeof(telpath) - (size_t)(slash + 1 - telpath);
    snprintf(slash + 1, room, "telemetry.csv");
    struct tel_row *rows = NULL;
    size_t n = 0;
    int st = load_telemetry(c, telpath, &rows, &n, err);
    if (st != MB_OK)
        return st;
    st = build_timeline(c, rows, n);
    if (st != MB_OK) {
        free(rows);
        return mb_error_set(err, st, "%s: out of memory", telpath);
    }
    double a = c->window_start_ns > 0 ? (double)c->window_start_ns : -INFINITY;
    double b = c->window_end_ns > 0 ? (double)c->window_end_ns : INFINITY;
    for (size_t j = 0; j < c->njobs && j < MB_AN_JOBS_MAX; j++) {
        double sum = 0;
        size_t k = 0;
        for (size_t i = 0; i < n; i++)
            if (((rows[i].has_act >> j) & 1u) && rows[i].t_ns >= a && rows[i].t_ns <= b) {
                sum += rows[i].act[j];
                k++;
            }
        if (k > 0) {
            c->jobs[j].activity.valid = 1;
            c->jobs[j].activity.v = sum;
        }
    }
    attribute_cell(r, c, rows, n);
    free(rows);
    return MB_OK;
}

static int load_experiment(struct mb_an_experiment *e, const char *dir, struct mb_error *err)
{
    char **runs = NULL;
    size_t nruns = 0;
    int st = list_dirs(dir, &runs, &nruns, RUNS_MAX, err);
    if (st != MB_OK)
        return st;
    for (size_t i = 0; i < nruns && st == MB_OK; i++) {
        char rundir[MB_AN_PATH_MAX];
        if (!join(rundir, sizeof(rundir), dir, runs[i])) {
            st = mb_error_set(err, MB_ERANGE, "%s/%s: path too long", dir, runs[i]);
            break;
        }
        char **reps = NULL;
        size_t nreps = 0;
        st = list_dirs(rundir, &reps, &nreps, CELLS_MAX, err);
        for (size_t k = 0; k < nreps && st == MB_OK; k++)
            st = load_cell(e, rundir, runs[i], reps[k], err);
        free_names(reps, nreps);
    }
    free_names(runs, nruns);
    return st;
}

static int has_results(const char *dir)
{
    char p[MB_AN_PATH_MAX];
    if (join(p, sizeof(p), dir, "journal.jsonl") && is_file(p))
        return 1;
    char **runs = NULL;
    size_t nruns = 0;
    int found = 0;
    if (list_dirs(dir, &runs, &nruns, RUNS_MAX, NULL) != MB_OK)
        return 0;
    for (size_t i = 0; i < nruns && !found; i++) {
        char rundir[MB_AN_PATH_MAX];
        char **reps = NULL;
        size_t nreps = 0;
        if (!join(rundir, sizeof(rundir), dir, runs[i]) ||
            list_dirs(rundir, &reps, &nreps, CELLS_MAX, NULL) != MB_OK)
            continue;
        for (size_t k = 0; k < nreps && !found; k++) {
            char c[MB_AN_PATH_MAX];
            int n = snprintf(c, sizeof(c), "%s/%s/cell.json", rundir, reps[k]);
            found = n > 0 && (size_t)n < sizeof(c) && is_file(c);
        }
        free_names(reps, nreps);
    }
    free_names(runs, nruns);
    return found;
}

/* ---------------------------------------------------------------------------------------- */
/* Aggregation                                                                                */

/*
 * The exclusive baseline of a workload: the run itself when it is exclusive, else the first
 * exclusive run (in sorted order) with a measured throughput for it. Experiments may measure
 * all workloads in one exclusive run or give each its own ("solo-resnet", "solo-gpt2").
 */
static const struct mb_an_job *baseline_job(const struct mb_an_experiment *e,
                                            const struct mb_an_run *r, const char *workload)
{
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < e->nruns; i++) {
            const struct mb_an_run *b = &e->runs[i];
            if (!is_exclusive(b->mode) || b->nok == 0 || (pass == 0) != (b == r))
                continue;
            /* A chosen baseline (report --baseline) is the only one, except for itself. */
            if (pass == 1 && e->baseline_run[0] && strcmp(b->name, e->baseline_run) != 0)
                continue;
            for (size_t k = 0; k < b->njobs; k++)
                if (strcmp(b->jobs[k].workload, workload) == 0 && b->jobs[k].throughput.valid &&
                    b->jobs[k].throughput.mean > 0)
                    return &b->jobs[k];
        }
    return NULL;
}

static struct mb_an_cell_job *cell_job(struct mb_an_cell *c, const char *name)
{
    for (size_t i = 0; i < c->njobs; i++)
        if (strcmp(c->jobs[i].name, name) == 0)
            return &c->jobs[i];
    return NULL;
}

static void aggregate_jobs(struct mb_an_run *r)
{
    double x[CELLS_MAX];
    int preferred =
        is_exclusive(r->mode)
            ? MB_ATTR_INTERVAL
            : (strcmp(r->mode, "timeslice") == 0 ? MB_ATTR_EQUAL : MB_ATTR_COMPUTE_SHARE);
    int pref_ok = 0;
    for (size_t k = 0; k < r->ncells; k++)
        pref_ok |= r->cells[k].attr[preferred].available;
    r->default_method = pref_ok || is_exclusive(r->mode) ? preferred : MB_ATTR_EQUAL;

    for (size_t i = 0; i < r->njobs; i++) {
        struct mb_an_job *j = &r->jobs[i];
        size_t n = 0;
        for (size_t k = 0; k < r->ncells; k++) {
            struct mb_an_cell_job *cj = r->cells[k].ok ? cell_job(&r->cells[k], j->name) : NULL;
            if (cj && cj->throughput.valid)
                x[n++] = cj->throughput.v;
        }
        estimate_from(&j->throughput, x, n);
        n = 0;
        for (size_t k = 0; k < r->ncells; k++) {
            struct mb_an_cell_job *cj = r->cells[k].ok ? cell_job(&r->cells[k], j->name) : NULL;
            if (cj && cj->throughput.valid && cj->throughput.v > 0 && cj->steps_unit)
                x[n++] = 1.0 / cj->throughput.v;
            else if (cj && cj->throughput.valid && cj->throughput.v > 0 && cj->steps.valid &&
                     cj->units.valid && cj->steps.v > 0)
                x[n++] = cj->units.v / cj->steps.v / cj->throughput.v;
        }
        estimate_from(&j->s_per_step, x, n);
        n = 0;
        for (size_t k = 0; k < r->ncells; k++) {
            struct mb_an_cell *c = &r->cells[k];
            struct mb_attribution *a = &c->attr[r->default_method];
            if (!c->ok || !a->available || i >= c->njobs)
                continue;
            c->jobs[i].energy_j.valid = 1;
            c->jobs[i].energy_j.v = (double)a->job_mj[i] / 1000.0;
            if (c->jobs[i].work.valid && c->jobs[i].work.v > 0)
                x[n++] = c->jobs[i].energy_j.v / c->jobs[i].work.v;
        }
        estimate_from(&j->j_per_unit, x, n);
    }
    for (int m = 0; m < MB_ATTR_COUNT; m++) {
        struct mb_attribution *ra = &r->attr[m];
        memset(ra, 0, sizeof(*ra));
        int any = 0, all = 1;
        for (size_t k = 0; k < r->ncells; k++) {
            struct mb_an_cell *c = &r->cells[k];
            if (!c->ok || !c->has_energy)
                continue;
            any = 1;
            if (!c->attr[m].available) {
                all = 0;
                mb__copy_str(ra->note, sizeof(ra->note), c->attr[m].note);
                continue;
            }
            if (!ra->note[0])
                mb__copy_str(ra->note, sizeof(ra->note), c->attr[m].note);
            ra->total_mj += c->attr[m].total_mj;
            for (size_t i = 0; i < r->njobs; i++)
                ra->job_mj[i] += c->attr[m].job_mj[i];
        }
        ra->available = any && all;
        if (!any)
            mb__copy_str(ra->note, sizeof(ra->note), "no cell with measured energy");
        if (!ra->available) {
            ra->total_mj = 0;
            memset(ra->job_mj, 0, sizeof(ra->job_mj));
        }
        for (size_t i = 0; i < r->njobs; i++)
            r->jobs[i].attr_mj[m] = ra->job_mj[i];
    }
}

/* The run's whole-GPU energy, window and power over its successful cells; static vs dynamic. */
static void aggregate_run_energy(struct mb_an_run *r)
{
    double x[CELLS_MAX], y[CELLS_MAX], z[CELLS_MAX];
    size_t n = 0, nw = 0, np = 0;
    int has_idle = 0;
    r->static_mj = r->dynamic_mj = 0;
    for (size_t k = 0; k < r->ncells; k++) {
        struct mb_an_cell *c = &r->cells[k];
        if (!c->ok)
            continue;
        if (c->window_s.valid)
            y[nw++] = c->window_s.v;
        if (!c->has_energy)
            continue;
        x[n++] = (double)c->energy_mj / 1000.0;
        if (c->window_s.valid && c->window_s.v > 0)
            z[np++] = (double)c->energy_mj / 1000.0 / c->window_s.v;
        if (c->idle_power_w.valid && c->window_s.valid) {
            int64_t st = llround(c->idle_power_w.v * c->window_s.v * 1000.0);
            st = st > c->energy_mj ? c->energy_mj : (st < 0 ? 0 : st);
            r->static_mj += st;
            r->dynamic_mj += c->energy_mj - st;
            has_idle++;
        }
    }
    r->nenergy = n;
    if ((size_t)has_idle != n || n == 0)
        r->static_mj = r->dynamic_mj = -1;
    estimate_from(&r->energy_j, x, n);
    estimate_from(&r->window_s, y, nw);
    estimate_from(&r->power_w, z, np);
}

static void aggregate_run(struct mb_an_experiment *e, struct mb_an_run *r)
{
    aggregate_run_energy(r);

    const struct mb_an_job *bj[MB_AN_JOBS_MAX];
    r->has_baseline = r->njobs > 0;
    size_t base_n = SIZE_MAX, base_ne = SIZE_MAX;
    int base_e_ok = r->has_baseline;
    for (size_t i = 0; i < r->njobs && r->has_baseline; i++) {
        bj[i] = baseline_job(e, r, r->jobs[i].workload);
        if (!bj[i] || !bj[i]->throughput.valid || bj[i]->throughput.mean <= 0) {
            r->has_baseline = 0;
            break;
        }
        base_n = bj[i]->throughput.n < base_n ? bj[i]->throughput.n : base_n;
        if (!bj[i]->j_per_unit.valid)
            base_e_ok = 0;
        else
            base_ne = bj[i]->j_per_unit.n < base_ne ? bj[i]->j_per_unit.n : base_ne;
    }
    if (!r->has_baseline)
        return;

    for (size_t i = 0; i < r->njobs; i++) {
        struct mb_an_job *j = &r->jobs[i];
        const struct mb_estimate *a = &j->throughput, *b = &bj[i]->throughput;
        memset(&j->normalised, 0, sizeof(j->normalised));
        if (!a->valid)
            continue;
        j->normalised.valid = 1;
        j->normalised.mean = a->mean / b->mean;
        j->normalised.n = a->n;
        if (is_exclusive(r->mode))
            continue; /* exactly 1: the baseline divided by itself */
        if (a->ci_valid && b->ci_valid && a->mean > 0) {
            double ra = est_se(a) / a->mean, rb = est_se(b) / b->mean;
            size_t df = (a->n < b->n ? a->n : b->n) - 1;
            j->normalised.ci_valid = 1;
            j->normalised.df = df;
            j->normalised.ci95 = t95(df) * j->normalised.mean * sqrt(ra * ra + rb * rb);
        }
    }
    if (is_exclusive(r->mode))
        return; /* the baseline itself: the comparison is 1 by definition, not a measurement */

    /* Per repetition, with the baseline means fixed; the baseline's own spread is added below. */
    double s[CELLS_MAX], at[CELLS_MAX], er[CELLS_MAX];
    size_t ns = 0, ne = 0;
    double xr[MB_AN_JOBS_MAX] = {0}, wr[MB_AN_JOBS_MAX] = {0};
    for (size_t k = 0; k < r->ncells; k++) {
        struct mb_an_cell *c = &r->cells[k];
        if (!c->ok)
            continue;
        double stp = 0, antt = 0, seq_e = 0;
        int ok = 1, eok = c->has_energy && base_e_ok;
        for (size_t i = 0; i < r->njobs; i++) {
            struct mb_an_cell_job *cj = cell_job(c, r->jobs[i].name);
            if (!cj || !cj->throughput.valid || cj->throughput.v <= 0) {
                ok = 0;
                break;
            }
            stp += cj->throughput.v / bj[i]->throughput.mean;
            antt += bj[i]->throughput.mean / cj->throughput.v;
            if (!cj->work.valid)
                eok = 0;
            else if (eok)
                seq_e += cj->work.v * bj[i]->j_per_unit.mean;
        }
        if (!ok)
            continue;
        s[ns] = stp;
        at[ns] = antt / (double)r->njobs;
        ns++;
        if (eok && seq_e > 0)
            er[ne++] = ((double)c->energy_mj / 1000.0) / seq_e;
    }
    for (size_t i = 0; i < r->njobs; i++) {
        xr[i] = r->jobs[i].throughput.valid ? r->jobs[i].throughput.mean : NAN;
        double units = 0;
        size_t nu = 0;
        for (size_t k = 0; k < r->ncells; k++) {
            struct mb_an_cell_job *cj =
                r->cells[k].ok ? cell_job(&r->cells[k], r->jobs[i].name) : NULL;
            if (cj && cj->work.valid) {
                units += cj->work.v;
                nu++;
            }
        }
        wr[i] = nu ? units / (double)nu : NAN;
    }
    double vs = 0, va = 0, ve = 0;
    int vs_ok = 1, ve_ok = base_e_ok;
    double bsum = 0;
    for (size_t i = 0; i < r->njobs; i++) {
        const struct mb_estimate *b = &bj[i]->throughput;
        if (!b->ci_valid) {
            vs_ok = 0;
            continue;
        }
        double se = est_se(b);
        vs += pow(xr[i] / (b->mean * b->mean) * se, 2);
        va += pow(1.0 / ((double)r->njobs * xr[i]) * se, 2);
        if (base_e_ok)
            bsum += wr[i] * bj[i]->j_per_unit.mean;
    }
    estimate_combined(&r->stp, s, ns, vs, vs_ok, base_n);
    estimate_combined(&r->antt, at, ns, va, vs_ok, base_n);
    r->throughput_gain = r->stp;
    r->throughput_gain.mean = r->stp.mean - 1.0;
    if (ne > 0 && base_e_ok && bsum > 0) {
        struct mb_estimate tmp;
        estimate_from(&tmp, er, ne);
        for (size_t i = 0; i < r->njobs; i++) {
            const struct mb_estimate *b = &bj[i]->j_per_unit;
            if (!b->ci_valid || !isfinite(wr[i])) {
                ve_ok = 0;
                continue;
            }
            ve += pow(tmp.mean * wr[i] / bsum * est_se(b), 2);
        }
        estimate_combined(&r->energy_ratio, er, ne, ve, ve_ok, base_ne);
        r->energy_saving = r->energy_ratio;
        r->energy_saving.mean = 1.0 - r->energy_ratio.mean;
    }
}

static void quality_notes(struct mb_an_experiment *e)
{
    size_t missed_cells = 0;
    for (size_t i = 0; i < e->nruns; i++) {
        struct mb_an_run *r = &e->runs[i];
        for (size_t k = 0; k < r->ncells; k++) {
            struct mb_an_cell *c = &r->cells[k];
            e->cells_total++;
            if (!c->ok) {
                e->cells_failed++;
                add_note(e, "%s rep %d failed: %s", r->name, c->rep, c->failure);
                continue;
            }
            if (c->refused_reason[0]) {
                e->cells_no_energy++;
                add_note(e, "%s rep %d: energy refused%s%s%s: %s", r->name, c->rep,
                         c->energy_flag[0] ? " (" : "", c->energy_flag,
                         c->energy_flag[0] ? ")" : "", c->refused_reason);
            } else if (!c->has_energy) {
                e->cells_no_energy++;
                add_note(e, "%s rep %d: no energy measured%s%s%s", r->name, c->rep,
                         c->energy_flag[0] ? " (" : "", c->energy_flag,
                         c->energy_flag[0] ? ")" : "");
            }
            /* Flags other than "gap" (too_short, no_sensor) come with a refused energy and
             * are reported above. */
            int flagged = strcmp(c->energy_flag, "gap") == 0 ||
                          (c->gap_pct.valid && fabs(c->gap_pct.v) > 2.0);
            if (flagged) {
                e->cells_gap_flagged++;
                if (c->gap_pct.valid)
                    add_note(e, "%s rep %d: counter vs integrated energy gap %.1f%%%s%s%s", r->name,
                             c->rep, c->gap_pct.v, c->energy_flag[0] ? " (flag: " : "",
                             c->energy_flag, c->energy_flag[0] ? ")" : "");
                else
                    add_note(e, "%s rep %d: energy flag %s", r->name, c->rep, c->energy_flag);
            }
            if (c->missed_updates.valid && c->missed_updates.v > 0) {
                e->missed_updates += c->missed_updates.v;
                missed_cells++;
            }
        }
        if (r->nok > 0 && !r->has_baseline && !is_exclusive(r->mode))
            add_note(e, "%s: no exclusive baseline for every job: not normalised", r->name);
    }
    if (missed_cells)
        add_note(e, "%.0f missed sensor updates in %zu cell(s)", e->missed_updates, missed_cells);
}

static int have_cell(const struct mb_an_experiment *e, const char *run, int rep)
{
    for (size_t i = 0; i < e->nruns; i++)
        if (strcmp(e->runs[i].name, run) == 0)
            for (size_t k = 0; k < e->runs[i].ncells; k++)
                if (e->runs[i].cells[k].rep == rep)
                    return 1;
    return 0;
}

/*
 * The journal tells what the cell files cannot: cells that started and never wrote a result
 * (a crash or an interrupt) and interrupted runs. A torn or unreadable line is counted, not
 * fatal: the journal of a killed run may end mid-line.
 */
struct journal_tally {
    size_t bad, interrupted, unfinished, lines;
};

/* Tallies one journal file's interruptions, unfinished cells and unreadable lines. */
static void journal_tally_file(struct mb_an_experiment *e, const char *path,
                               struct journal_tally *t)
{
    FILE *f;
    if (mb_file_fopen_input(path, &f, NULL) != MB_OK)
        return;
    char line[8192];
    while (fgets(line, sizeof(line), f) && t->lines < 1000000) {
        t->lines++;
        if (line[0] == '\n')
            continue;
        cJSON *o = cJSON_Parse(line);
        if (!cJSON_IsObject(o)) {
            t->bad++;
            cJSON_Delete(o);
            continue;
        }
        const char *ev = json_str(o, "event") ? json_str(o, "event") : json_str(o, "type");
        const char *run = json_str(o, "run");
        struct mb_opt rep = json_num(o, "rep");
        if (ev && strcmp(ev, "interrupted") == 0) {
            t->interrupted++;
        } else if (ev && strcmp(ev, "cell_started") == 0 && run && opt_int(rep, -1) >= 0 &&
                   !have_cell(e, run, opt_int(rep, -1))) {
            if (t->unfinished++ < 8)
                add_note(e, "%s rep %d started but wrote no cell.json (journal)", run,
                         opt_int(rep, -1));
        }
        cJSON_Delete(o);
    }
    fclose(f);
}

/* A journal of the directory: journal.jsonl, or journal-NAME.jsonl of one invocation (run
 * --journal, e.g. a Slurm array task). */
static bool is_journal_name(const char *name)
{
    size_t n = strlen(name);
    return n >= 13 && strncmp(name, "journal", 7) == 0 && strcmp(name + n - 6, ".jsonl") == 0 &&
           (name[7] == '.' || name[7] == '-');
}

/*
 * The journals tell what the cell files cannot: cells that started and never wrote a result
 * (a crash or an interrupt) and interrupted runs. A torn or unreadable line is counted, not
 * fatal: the journal of a killed run may end mid-line.
 */
static void journal_notes(struct mb_an_experiment *e)
{
    DIR *d = opendir(e->dir);
    if (!d)
        return;
    char **names = NULL;
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL && n < 4096) {
        if (!is_journal_name(de->d_name))
            continue;
        char **nn = realloc(names, (n + 1) * sizeof(*nn));
        char *copy = strdup(de->d_name);
        if (!nn || !copy) {
            free(copy);
            if (nn)
                names = nn;
            break;
        }
        names = nn;
        names[n++] = copy;
    }
    closedir(d);
    if (n > 1)
        qsort(names, n, sizeof(*names), cmp_str);
    struct journal_tally t = {0};
    for (size_t i = 0; i < n; i++) {
        char path[MB_AN_PATH_MAX];
        if (join(path, sizeof(path), e->dir, names[i]))
            journal_tally_file(e, path, &t);
    }
    free_names(names, n);
    if (t.unfinished > 8)
        add_note(e, "%zu cells in all started but wrote no cell.json (journal)", t.unfinished);
    e->cells_unfinished = t.unfinished;
    if (t.interrupted)
        add_note(e, "the journal records %zu interruption(s)", t.interrupted);
    if (t.bad)
        add_note(e, "%zu unreadable journal line(s) skipped", t.bad);
}

/*
 * Cells that ran on several GPUs (a multi-GPU run): how many GPUs, and for each exclusive run the
 * spread of each job's throughput between GPUs, a check of board-to-board variance.
 */
static void gpu_notes(struct mb_an_experiment *e)
{
    char gpus[MB_MAX_GPUS_NOTED][MB_AN_NAME_MAX];
    size_t ngpus = 0;
    for (size_t i = 0; i < e->nruns; i++)
        for (size_t k = 0; k < e->runs[i].ncells; k++) {
            const char *u = e->runs[i].cells[k].gpu_uuid;
            size_t g = 0;
            while (g < ngpus && strcmp(gpus[g], u) != 0)
                g++;
            if (g == ngpus && u[0] && ngpus < MB_MAX_GPUS_NOTED)
                mb__copy_str(gpus[ngpus++], MB_AN_NAME_MAX, u);
        }
    if (ngpus < 2)
        return;
    add_note(e, "cells ran on %zu GPUs (cell.json device.uuid)", ngpus);
    size_t shown = 0;
    for (size_t i = 0; i < e->nruns && shown < 8; i++) {
        const struct mb_an_run *r = &e->runs[i];
        if (!is_exclusive(r->mode))
            continue;
        for (size_t j = 0; j < r->njobs && shown < 8; j++) {
            double lo = INFINITY, hi = -INFINITY, sum = 0;
            size_t n = 0;
            for (size_t g = 0; g < ngpus; g++) {
                double t = 0;
                size_t m = 0;
                for (size_t k = 0; k < r->ncells; k++) {
                    const struct mb_an_cell *c = &r->cells[k];
                    const struct mb_an_cell_job *cj = j < c->njobs ? &c->jobs[j] : NULL;
                    if (c->ok && cj && cj->throughput.valid && strcmp(c->gpu_uuid, gpus[g]) == 0) {
                        t += cj->throughput.v;
                        m++;
                    }
                }
                if (m == 0)
                    continue;
                t /= (double)m;
                lo = t < lo ? t : lo;
                hi = t > hi ? t : hi;
                sum += t;
                n++;
            }
            if (n < 2 || sum <= 0)
                continue;
            double mean = sum / (double)n;
            add_note(e,
                     "board spread: %s %s per-GPU throughput %.3g..%.3g (%.1f%% of the mean, "
                     "%zu GPUs)",
                     r->name, r->jobs[j].name, lo, hi, 100.0 * (hi - lo) / mean, n);
            shown++;
        }
    }
}

/*
 * Exclusive runs on a MIG instance (`on: mig-7g`) are not the whole GPU: how the instance differs,
 * from the catalog, so that nobody reads its figures as the GPU's.
 */
static void on_notes(struct mb_an_experiment *e)
{
    struct mb_catalog *cat = NULL;
    const struct mb_gpu_model *model = NULL;
    if (mb_catalog_create(&cat, NULL) == MB_OK && e->model[0])
        mb_catalog_find(cat, e->model, &model, NULL);
    for (size_t i = 0; i < e->nruns; i++) {
        const struct mb_an_run *r = &e->runs[i];
        if (strncmp(r->layout, "on ", 3) != 0)
            continue;
        const struct mb_gi_profile *p = NULL;
        if (model)
            mb_model_profile_resolve(model, r->layout + 3, &p, NULL);
        char sm[64] = "SMs unknown", mem[80] = "memory unknown";
        if (p && p->sm_count > 0 && model->sm_full_gpu > 0)
            snprintf(sm, sizeof(sm), "%d of the GPU's %d SMs", p->sm_count, model->sm_full_gpu);
        else if (p && p->sm_count > 0)
            snprintf(sm, sizeof(sm), "%d SMs (the whole GPU's count unknown)", p->sm_count);
        if (p && p->memory_mib > 0 && model->total_memory_mib > 0)
            snprintf(mem, sizeof(mem), "%lld of %lld MiB", (long long)p->memory_mib,
                     (long long)model->total_memory_mib);
        add_note(e,
                 "%s: exclusive on a %s MIG instance, not the whole GPU: %s, %s (catalog); its "
                 "figures are relative to that instance",
                 r->name, r->layout + 3, sm, mem);
    }
    mb_catalog_destroy(cat);
}

static int analyse_experiment(struct mb_an_experiment *e, struct mb_error *err)
{
    if (e->nruns > 1)
        qsort(e->runs, e->nruns, sizeof(*e->runs), cmp_run);
    for (size_t i = 0; i < e->nruns; i++) {
        struct mb_an_run *r = &e->runs[i];
        if (r->ncells > 1)
            qsort(r->cells, r->ncells, sizeof(*r->cells), cmp_cell);
        for (size_t k = 0; k < r->ncells; k++) {
            int st = load_cell_telemetry(r, &r->cells[k], err);
            if (st != MB_OK)
                return st;
        }
        aggregate_jobs(r);
    }
    /* The exclusive baseline first, so that the other runs can be normalised to it. */
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < e->nruns; i++)
            if (is_exclusive(e->runs[i].mode) == (pass == 0))
                aggregate_run(e, &e->runs[i]);
    quality_notes(e);
    journal_notes(e);
    gpu_notes(e);
    on_notes(e);
    return MB_OK;
}

/* The cells loaded last came from dir: they get its origin index. */
static void claim_origin(struct mb_an_experiment *e, const char *dir)
{
    if (e->norigins == MB_AN_ORIGINS_MAX)
        return;
    mb__copy_str(e->origins[e->norigins], MB_AN_PATH_MAX, dir);
    for (size_t i = 0; i < e->nruns; i++)
        for (size_t k = 0; k < e->runs[i].ncells; k++)
            if (e->runs[i].cells[k].origin < 0)
                e->runs[i].cells[k].origin = (int)e->norigins;
    e->norigins++;
}

static int add_experiment(struct mb_analysis *a, const char *dir, struct mb_error *err)
{
    struct mb_an_experiment *ne = realloc(a->exps, (a->nexp + 1) * sizeof(*ne));
    if (!ne)
        return mb_error_set(err, MB_ENOMEM, "out of memory");
    a->exps = ne;
    struct mb_an_experiment *e = &a->exps[a->nexp++];
    memset(e, 0, sizeof(*e));
    mb__copy_str(e->dir, sizeof(e->dir), dir);
    int st = load_experiment(e, dir, err);
    if (st != MB_OK)
        return st;
    claim_origin(e, dir);
    if (e->nruns == 0)
        return mb_error_set(err, MB_ENOTFOUND, "%s: no cell.json found under <run>/<rep>/", dir);
    if (!e->name[0]) {
        const char *base = strrchr(dir, '/');
        mb__copy_str(e->name, sizeof(e->name), base && base[1] ? base + 1 : dir);
    }
    return analyse_experiment(e, err);
}

static void free_experiment(struct mb_an_experiment *e)
{
    for (size_t i = 0; i < e->nruns; i++) {
        for (size_t k = 0; k < e->runs[i].ncells; k++)
            free(e->runs[i].cells[k].timeline);
        free(e->runs[i].cells);
        for (size_t j = 0; j < e->runs[i].njobs; j++)
            free_argv(e->runs[i].jobs[j].argv, e->runs[i].jobs[j].argc);
    }
    free(e->runs);
}

void mb_analysis_destroy(struct mb_analysis *a)
{
    if (!a)
        return;
    for (size_t i = 0; i < a->nexp; i++)
        free_experiment(&a->exps[i]);
    free(a->exps);
    free(a);
}

int mb_analysis_load(struct mb_analysis **out, const char *const *dirs, size_t ndirs,
                     struct mb_error *err)
{
    *out = NULL;
    if (ndirs == 0)
        return mb_error_set(err, MB_EINVAL, "no results directory given");
    struct mb_analysis *a = calloc(1, sizeof(*a));
    if (!a)
        return mb_error_set(err, MB_ENOMEM, "out of memory");
    int st = MB_OK;
    for (size_t d = 0; d < ndirs && st == MB_OK; d++) {
        const char *dir = dirs[d];
        if (!is_dir(dir)) {
            struct stat sb;
            int gone = stat(dir, &sb) != 0;
            st = mb_error_set(err, MB_ENOTFOUND, "%s: %s", dir,
                              gone ? strerror(errno) : "not a directory");
            break;
        }
        if (has_results(dir)) {
            st = add_experiment(a, dir, err);
            continue;
        }
        /* A folder of experiments, such as results/. */
        char **subs = NULL;
        size_t nsubs = 0, found = 0;
        st = list_dirs(dir, &subs, &nsubs, RUNS_MAX, err);
        for (size_t i = 0; i < nsubs && st == MB_OK; i++) {
            char p[MB_AN_PATH_MAX];
            if (join(p, sizeof(p), dir, subs[i]) && has_results(p)) {
                st = add_experiment(a, p, err);
                found++;
            }
        }
        free_names(subs, nsubs);
        if (st == MB_OK && found == 0)
            st = mb_error_set(err, MB_ENOTFOUND,
                              "%s: not a results directory (no journal.jsonl and no "
                              "<run>/<rep>/cell.json)",
                              dir);
    }
    if (st != MB_OK) {
        mb_analysis_destroy(a);
        return st;
    }
    *out = a;
    return MB_OK;
}

/* ---------------------------------------------------------------------------------------- */
/* Merged reports                                                                            */

/* Appends "; what" style differences between a and b to diff (cap bytes). */
static void add_diff(char *diff, size_t cap, const char *what, const char *a, const char *b)
{
    size_t used = strlen(diff);
    snprintf(diff + used, cap - used, "%s%s (%s vs %s)", used ? "; " : "", what,
             a[0] ? a : "unknown", b[0] ? b : "unknown");
}

/* What keeps b from being the same experiment setting as a: GPU model, driver, workloads. */
static void compare_experiments(const struct mb_an_experiment *a, const struct mb_an_experiment *b,
                                char *diff, size_t cap)
{
    diff[0] = '\0';
    if (strcmp(a->name, b->name) != 0)
        add_diff(diff, cap, "experiments", a->name, b->name);
    if (strcmp(a->model, b->model) != 0 || strcmp(a->backend, b->backend) != 0)
        add_diff(diff, cap, "GPU models", a->model[0] ? a->model : a->device_name,
                 b->model[0] ? b->model : b->device_name);
    if (strcmp(a->driver_version, b->driver_version) != 0)
        add_diff(diff, cap, "drivers", a->driver_version, b->driver_version);
    for (size_t i = 0; i < a->nworkloads; i++)
        for (size_t k = 0; k < b->nworkloads; k++)
            if (strcmp(a->workload_names[i], b->workload_names[k]) == 0 && a->workload_sig[i] &&
                b->workload_sig[k] && a->workload_sig[i] != b->workload_sig[k])
                add_diff(diff, cap, "workload definitions", a->workload_names[i],
                         "another command of the same name");
}

/* "DIR:RUN" -> the run, which must be an exclusive run of one of the directories. */
static int pick_baseline(const struct mb_analysis *sep, const char *const *dirs, size_t ndirs,
                         const char *spec, char *run, struct mb_error *err)
{
    const char *colon = strrchr(spec, ':');
    if (!colon || colon == spec || !colon[1])
        return mb_error_set(err, MB_EINVAL, "--baseline %s: expected DIR:RUN", spec);
    size_t dlen = (size_t)(colon - spec);
    for (size_t d = 0; d < ndirs; d++) {
        if (strlen(dirs[d]) != dlen || strncmp(dirs[d], spec, dlen) != 0)
            continue;
        const struct mb_an_experiment *e = &sep->exps[d];
        for (size_t i = 0; i < e->nruns; i++)
            if (strcmp(e->runs[i].name, colon + 1) == 0) {
                if (!is_exclusive(e->runs[i].mode))
                    return mb_error_set(err, MB_EINVAL,
                                        "--baseline %s: run '%s' is %s, not exclusive", spec,
                                        colon + 1, e->runs[i].mode);
                mb__copy_str(run, MB_AN_NAME_MAX, colon + 1);
                return MB_OK;
            }
        return mb_error_set(err, MB_EINVAL, "--baseline %s: %.*s has no run '%s'", spec, (int)dlen,
                            spec, colon + 1);
    }
    return mb_error_set(err, MB_EINVAL, "--baseline %s: %.*s is not one of the merged directories",
                        spec, (int)dlen, spec);
}

/* Notes on where cells came from: per directory, and each run that pools several. */
static void origin_notes(struct mb_an_experiment *e)
{
    for (size_t d = 0; d < e->norigins; d++) {
        size_t cells = 0, runs = 0;
        for (size_t i = 0; i < e->nruns; i++) {
            size_t here = 0;
            for (size_t k = 0; k < e->runs[i].ncells; k++)
                here += e->runs[i].cells[k].origin == (int)d;
            cells += here;
            runs += here > 0;
        }
        add_note(e, "merged: %zu cells of %zu runs from %s", cells, runs, e->origins[d]);
    }
    for (size_t i = 0; i < e->nruns; i++) {
        const struct mb_an_run *r = &e->runs[i];
        for (size_t k = 1; k < r->ncells; k++)
            if (r->cells[k].origin != r->cells[0].origin) {
                add_note(e, "merged: run %s pools cells from several directories", r->name);
                break;
            }
    }
}

/*
 * The same cell twice: one directory given twice, or a copy of one. A cell is its run, its
 * repetition, its GPU and the monotonic times of its start and window, which no other
 * measurement shares.
 */
static int check_same_cell(const struct mb_an_experiment *e, struct mb_error *err)
{
    for (size_t i = 0; i < e->nruns; i++) {
        const struct mb_an_run *r = &e->runs[i];
        for (size_t k = 0; k < r->ncells; k++)
            for (size_t j = 0; j < k; j++) {
                const struct mb_an_cell *a = &r->cells[j], *b = &r->cells[k];
                if (a->origin == b->origin || a->rep != b->rep || !a->t0_ns ||
                    a->t0_ns != b->t0_ns || a->window_start_ns != b->window_start_ns ||
                    a->window_end_ns != b->window_end_ns || strcmp(a->gpu_uuid, b->gpu_uuid) != 0)
                    continue;
                return mb_error_set(err, MB_EINVAL,
                                    "cannot merge: cell %s#%d of %s is also in %s (the same "
                                    "measurement twice: a directory given twice, or a copy)",
                                    r->name, a->rep, e->origins[b->origin], e->origins[a->origin]);
            }
    }
    return MB_OK;
}

/* Loads every directory into e, one after another; runs of the same name pool their cells. */
static int load_merged(struct mb_an_experiment *e, const struct mb_analysis *sep,
                       const char *const *dirs, size_t ndirs, struct mb_error *err)
{
    for (size_t d = 0; d < ndirs; d++) {
        int st = load_experiment(e, dirs[d], err);
        if (st != MB_OK)
            return st;
        claim_origin(e, dirs[d]);
        e->emulated = e->emulated || sep->exps[d].emulated;
    }
    if (!e->name[0])
        mb__copy_str(e->name, sizeof(e->name), sep->exps[0].name);
    return MB_OK;
}

int mb_analysis_load_merged(struct mb_analysis **out, const char *const *dirs, size_t ndirs,
                            const struct mb_analysis_merge *opts, struct mb_error *err)
{
    *out = NULL;
    if (ndirs < 2 || ndirs > MB_AN_ORIGINS_MAX)
        return mb_error_set(err, MB_EINVAL, "--merge takes 2 to %d results directories, not %zu",
                            MB_AN_ORIGINS_MAX, ndirs);
    struct mb_analysis *sep = NULL, *a = NULL;
    int st = mb_analysis_load(&sep, dirs, ndirs, err);
    if (st != MB_OK)
        return st;
    if (sep->nexp != ndirs) {
        st = mb_error_set(err, MB_EINVAL,
                          "--merge: give each experiment's results directory (%zu directories "
                          "hold %zu experiments)",
                          ndirs, sep->nexp);
        goto out;
    }
    char diffs[MB_AN_ORIGINS_MAX][MB_AN_TEXT_MAX];
    for (size_t d = 1; d < ndirs; d++) {
        compare_experiments(&sep->exps[0], &sep->exps[d], diffs[d], sizeof(diffs[d]));
        if (diffs[d][0] && !(opts && opts->force)) {
            st = mb_error_set(err, MB_EINVAL,
                              "cannot merge %s with %s: different %s; --force merges anyway "
                              "(the report then says so)",
                              dirs[d], dirs[0], diffs[d]);
            goto out;
        }
    }
    char baseline[MB_AN_NAME_MAX] = "";
    if (opts && opts->baseline &&
        (st = pick_baseline(sep, dirs, ndirs, opts->baseline, baseline, err)) != MB_OK)
        goto out;
    a = calloc(1, sizeof(*a));
    struct mb_an_experiment *e = a ? calloc(1, sizeof(*e)) : NULL;
    if (!e) {
        st = mb_error_set(err, MB_ENOMEM, "out of memory");
        goto out;
    }
    a->exps = e;
    a->nexp = 1;
    mb__copy_str(e->dir, sizeof(e->dir), dirs[0]);
    mb__copy_str(e->baseline_run, sizeof(e->baseline_run), baseline);
    if ((st = load_merged(e, sep, dirs, ndirs, err)) != MB_OK ||
        (st = check_same_cell(e, err)) != MB_OK || (st = analyse_experiment(e, err)) != MB_OK)
        goto out;
    origin_notes(e);
    for (size_t d = 1; d < ndirs; d++)
        if (diffs[d][0])
            add_note(e, "merged with --force despite different %s (%s)", diffs[d], dirs[d]);
    if (baseline[0])
        add_note(e, "baseline: run %s only (--baseline %s)", baseline, opts->baseline);
out:
    mb_analysis_destroy(sep);
    if (st != MB_OK) {
        mb_analysis_destroy(a);
        return st;
    }
    *out = a;
    return MB_OK;
}
