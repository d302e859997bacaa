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
#include "migbench/meter.h"
#include "migbench/num.h"
#include "base/text_internal.h"

/* Bounds on outside input: a cell.json is small; telemetry is read line by line. */
#define RUNS_MAX 256
#define CELLS_MAX 1024
#define MB_MAX_GPUS_NOTED 64

/* The two-sided 95% Student t quantile (stats.h); df >= 1 wherever a CI is computed. */
#include "results/analysis_internal.h"
#include "results/journal_events.h"
#include "results/results_json.h"

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

const char *mb__an_json_str(const cJSON *obj, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

struct mb_opt mb__an_json_num(const cJSON *obj, const char *key)
{
    struct mb_opt o = {0, 0.0};
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (cJSON_IsNumber(v) && isfinite(v->valuedouble)) {
        o.valid = 1;
        o.v = v->valuedouble;
    }
    return o;
}

int64_t mb__an_json_i64(const cJSON *obj, const char *key)
{
    struct mb_opt o = mb__an_json_num(obj, key);
    return o.valid && mb_num_fits_i64(o.v) ? (int64_t)llround(o.v) : 0;
}

/* An int field of cell.json: whole and in range, else dflt (a hostile file cannot overflow it). */
int mb__an_opt_int(struct mb_opt o, int dflt)
{
    int64_t v;
    if (!o.valid || mb_num_to_i64(o.v, INT_MIN, INT_MAX, &v) != MB_OK)
        return dflt;
    return (int)v;
}

void mb__an_add_note(struct mb_an_experiment *e, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

void mb__an_add_note(struct mb_an_experiment *e, const char *fmt, ...)
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
/* Attribution                                                                                */

int mb__an_is_exclusive(const char *mode)
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
            else if (mb__an_is_exclusive(r->mode))
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

/* Exclusive runs: each job's own interval (its measurement window, else spawn..reap), by the
 * power integral over it when telemetry has power, else by its duration. */
static void attribute_exclusive(const struct mb_an_run *r, struct mb_an_cell *c,
                                const struct tel_row *rows, size_t nrows)
{
    size_t n = r->njobs;
    for (int m = 0; m < MB_ATTR_COUNT; m++)
        if (m != MB_ATTR_INTERVAL)
            set_note(&c->attr[m], "not applicable: jobs ran alone, one after another");
    int have_times = 1;
    int64_t ia[MB_AN_JOBS_MAX], ib[MB_AN_JOBS_MAX], w[MB_AN_JOBS_MAX];
    for (size_t i = 0; i < n; i++) {
        const struct mb_an_cell_job *cj = &c->jobs[i];
        ia[i] = cj->has_window ? cj->window_start_ns : cj->started_ns;
        ib[i] = cj->has_window ? cj->window_end_ns : cj->ended_ns;
        have_times &= cj->has_window || cj->has_times;
    }
    double pj[MB_AN_JOBS_MAX];
    int use_power = have_times && nrows > 1;
    for (size_t i = 0; use_power && i < n; i++) {
        pj[i] = mb__an_power_integral_j(rows, nrows, (double)ia[i], (double)ib[i]);
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
}

/* By per-instance activity in telemetry (per-GI SM utilisation weighted by instance size). */
static void attribute_activity(const struct mb_an_run *r, struct mb_an_cell *c)
{
    size_t n = r->njobs;
    struct mb_attribution *a = &c->attr[MB_ATTR_ACTIVITY];
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
    if (!have_act || mx <= 0) {
        set_note(a, "unavailable: telemetry has no per-instance activity for every job");
        return;
    }
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
}

/* Idle power x window split equally, the rest by the compute share (w) or equally. */
static void attribute_static_dynamic(const struct mb_an_run *r, struct mb_an_cell *c,
                                     const int64_t *w, int have_share)
{
    size_t n = r->njobs;
    struct mb_attribution *a = &c->attr[MB_ATTR_STATIC_DYNAMIC];
    if (!c->idle_power_w.valid || !c->window_s.valid) {
        set_note(a, "unavailable: no idle power baseline");
        return;
    }
    int64_t st = llround(c->idle_power_w.v * c->window_s.v * 1000.0);
    if (st > c->energy_mj)
        st = c->energy_mj;
    if (st < 0)
        st = 0;
    int64_t sp[MB_AN_JOBS_MAX], dp[MB_AN_JOBS_MAX];
    int ok = mb_analysis_split(st, NULL, n, sp) == MB_OK &&
             mb_analysis_split(c->energy_mj - st, have_share ? w : NULL, n, dp) == MB_OK;
    if (!ok)
        return;
    for (size_t i = 0; i < n; i++)
        a->job_mj[i] = sp[i] + dp[i];
    a->available = 1;
    set_note(a, "idle power x window split equally, the rest %s",
             have_share ? (strcmp(r->mode, "mig") == 0   ? "by MIG compute slices"
                           : strcmp(r->mode, "mps") == 0 ? "by MPS thread percentages"
                                                         : "by CPU cores")
                        : "equally");
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
    if (mb__an_is_exclusive(r->mode)) {
        attribute_exclusive(r, c, rows, nrows);
        return;
    }
    set_note(&c->attr[MB_ATTR_INTERVAL], "not applicable: jobs ran at the same time");
    struct mb_attribution *a = &c->attr[MB_ATTR_EQUAL];
    a->available = mb_analysis_split(c->energy_mj, NULL, n, a->job_mj) == MB_OK;
    set_note(a, "1/%zu each", n);

    a = &c->attr[MB_ATTR_COMPUTE_SHARE];
    int64_t w[MB_AN_JOBS_MAX];
    char why[MB_AN_TEXT_MAX] = "";
    int have_share = compute_weights(r, w, why, sizeof(why));
    if (have_share) {
        a->available = mb_analysis_split(c->energy_mj, w, n, a->job_mj) == MB_OK;
        set_note(a, "by %s", share_basis(r));
    } else {
        set_note(a, "%s", why);
    }
    attribute_activity(r, c);
    attribute_static_dynamic(r, c, w, have_share);
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
        mb__an_free_argv(r->jobs[i].argv, r->jobs[i].argc);
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
            j->compute_weight = mb__an_profile_slices(m->instance[i]);
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
    int st = mb__an_parse_cell(e, &cell, meta, cellpath, run_dirname, *end ? 0 : (int)dr, err);
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
    mb__an_free_meta(meta);
    (void)telpath;
    return MB_OK;
fail:
    free(cell.timeline);
    mb__an_free_meta(meta);
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
    int st = mb__an_load_telemetry(c, telpath, &rows, &n, err);
    if (st != MB_OK)
        return st;
    st = mb__an_build_timeline(c, rows, n);
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

int mb__an_load_experiment(struct mb_an_experiment *e, const char *dir, struct mb_error *err)
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
            if (!mb__an_is_exclusive(b->mode) || b->nok == 0 || (pass == 0) != (b == r))
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
        mb__an_is_exclusive(r->mode)
            ? MB_ATTR_INTERVAL
            : (strcmp(r->mode, "timeslice") == 0 ? MB_ATTR_EQUAL : MB_ATTR_COMPUTE_SHARE);
    int pref_ok = 0;
    for (size_t k = 0; k < r->ncells; k++)
        pref_ok |= r->cells[k].attr[preferred].available;
    r->default_method = pref_ok || mb__an_is_exclusive(r->mode) ? preferred : MB_ATTR_EQUAL;

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

/* Each job's throughput over its workload's exclusive baseline bj[i] (with a CI from both). */
static void normalise_jobs(struct mb_an_run *r, const struct mb_an_job *const *bj)
{
    for (size_t i = 0; i < r->njobs; i++) {
        struct mb_an_job *j = &r->jobs[i];
        const struct mb_estimate *a = &j->throughput, *b = &bj[i]->throughput;
        memset(&j->normalised, 0, sizeof(j->normalised));
        if (!a->valid)
            continue;
        j->normalised.valid = 1;
        j->normalised.mean = a->mean / b->mean;
        j->normalised.n = a->n;
        if (mb__an_is_exclusive(r->mode))
            continue; /* exactly 1: the baseline divided by itself */
        if (a->ci_valid && b->ci_valid && a->mean > 0) {
            double ra = est_se(a) / a->mean, rb = est_se(b) / b->mean;
            size_t df = (a->n < b->n ? a->n : b->n) - 1;
            j->normalised.ci_valid = 1;
            j->normalised.df = df;
            j->normalised.ci95 = t95(df) * j->normalised.mean * sqrt(ra * ra + rb * rb);
        }
    }
}

/*
 * Per repetition, with the baseline means fixed: system throughput s[], average normalised
 * turnaround at[] (*ns of them) and energy over the jobs run one after another er[] (*ne).
 */
static void per_rep_ratios(const struct mb_an_run *r, const struct mb_an_job *const *bj,
                           int base_e_ok, double *s, double *at, size_t *ns, double *er, size_t *ne)
{
    *ns = *ne = 0;
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
        s[*ns] = stp;
        at[*ns] = antt / (double)r->njobs;
        (*ns)++;
        if (eok && seq_e > 0)
            er[(*ne)++] = ((double)c->energy_mj / 1000.0) / seq_e;
    }
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

    normalise_jobs(r, bj);
    if (mb__an_is_exclusive(r->mode))
        return; /* the baseline itself: the comparison is 1 by definition, not a measurement */

    /* Per repetition, with the baseline means fixed; the baseline's own spread is added below. */
    double s[CELLS_MAX], at[CELLS_MAX], er[CELLS_MAX];
    size_t ns = 0, ne = 0;
    double xr[MB_AN_JOBS_MAX] = {0}, wr[MB_AN_JOBS_MAX] = {0};
    per_rep_ratios(r, bj, base_e_ok, s, at, &ns, er, &ne);
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
                mb__an_add_note(e, "%s rep %d failed: %s", r->name, c->rep, c->failure);
                continue;
            }
            if (c->refused_reason[0]) {
                e->cells_no_energy++;
                mb__an_add_note(e, "%s rep %d: energy refused%s%s%s: %s", r->name, c->rep,
                                c->energy_flag[0] ? " (" : "", c->energy_flag,
                                c->energy_flag[0] ? ")" : "", c->refused_reason);
            } else if (!c->has_energy) {
                e->cells_no_energy++;
                mb__an_add_note(e, "%s rep %d: no energy measured%s%s%s", r->name, c->rep,
                                c->energy_flag[0] ? " (" : "", c->energy_flag,
                                c->energy_flag[0] ? ")" : "");
            }
            /* Flags other than "gap" (too_short, no_sensor) come with a refused energy and
             * are reported above. The runner's flag allows for the power reading's averaging
             * at the window's edges (meter_gap.c); only a cell without a flag (older results) falls
             * back to the bare MB_METER_GAP_FLAG. */
            int flagged = c->energy_flag[0]
                              ? strcmp(c->energy_flag, "gap") == 0
                              : c->gap_pct.valid && fabs(c->gap_pct.v) > 100.0 * MB_METER_GAP_FLAG;
            if (flagged) {
                e->cells_gap_flagged++;
                if (c->gap_pct.valid)
                    mb__an_add_note(e, "%s rep %d: counter vs integrated energy gap %.1f%%%s%s%s",
                                    r->name, c->rep, c->gap_pct.v,
                                    c->energy_flag[0] ? " (flag: " : "", c->energy_flag,
                                    c->energy_flag[0] ? ")" : "");
                else
                    mb__an_add_note(e, "%s rep %d: energy flag %s", r->name, c->rep,
                                    c->energy_flag);
            }
            if (c->outside_load == 1) {
                e->cells_outside_load++;
                mb__an_add_note(e,
                                "%s rep %d: window taken under outside load (%s): its figures "
                                "may be affected",
                                r->name, c->rep, c->outside_load_why);
            }
            if (c->missed_updates.valid && c->missed_updates.v > 0) {
                e->missed_updates += c->missed_updates.v;
                missed_cells++;
            }
        }
        if (r->nok > 0 && !r->has_baseline && !mb__an_is_exclusive(r->mode))
            mb__an_add_note(e, "%s: no exclusive baseline for every job: not normalised", r->name);
    }
    if (missed_cells)
        mb__an_add_note(e, "%.0f missed sensor updates in %zu cell(s)", e->missed_updates,
                        missed_cells);
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
    size_t bad, interrupted, unfinished;
};

/*
 * Tallies one journal file's interruptions, unfinished cells and unreadable lines, through the
 * journal's one reader (mb_journal_read: lines up to the writer's limit) and its typed events.
 */
static void journal_tally_file(struct mb_an_experiment *e, const char *path,
                               struct journal_tally *t)
{
    cJSON *events = NULL;
    size_t skipped = 0;
    struct mb_error err;
    int rc = mb_journal_read(path, &events, &skipped, &err);
    if (rc != MB_OK) {
        if (rc != MB_ENOTFOUND)
            mb__an_add_note(e, "journal not read: %s", err.msg);
        return;
    }
    t->bad += skipped;
    const cJSON *ev;
    cJSON_ArrayForEach(ev, events)
    {
        struct mb_jev je;
        if (!mb_jev_decode(ev, &je))
            continue;
        if (je.kind == MB_JEV_INTERRUPTED) {
            t->interrupted++;
        } else if (je.kind == MB_JEV_CELL_STARTED && je.run && je.rep >= 0 &&
                   !have_cell(e, je.run, je.rep)) {
            if (t->unfinished++ < 8)
                mb__an_add_note(e, "%s rep %d started but wrote no cell.json (journal)", je.run,
                                je.rep);
        }
    }
    cJSON_Delete(events);
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
        mb__an_add_note(e, "%zu cells in all started but wrote no cell.json (journal)",
                        t.unfinished);
    e->cells_unfinished = t.unfinished;
    if (t.interrupted)
        mb__an_add_note(e, "the journal records %zu interruption(s)", t.interrupted);
    if (t.bad)
        mb__an_add_note(e, "%zu unreadable journal line(s) skipped", t.bad);
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
    mb__an_add_note(e, "cells ran on %zu GPUs (cell.json device.uuid)", ngpus);
    size_t shown = 0;
    for (size_t i = 0; i < e->nruns && shown < 8; i++) {
        const struct mb_an_run *r = &e->runs[i];
        if (!mb__an_is_exclusive(r->mode))
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
            mb__an_add_note(
                e,
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
        mb__an_add_note(
            e,
            "%s: exclusive on a %s MIG instance, not the whole GPU: %s, %s (catalog); its "
            "figures are relative to that instance",
            r->name, r->layout + 3, sm, mem);
    }
    mb_catalog_destroy(cat);
}

int mb__an_analyse_experiment(struct mb_an_experiment *e, struct mb_error *err)
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
            if (mb__an_is_exclusive(e->runs[i].mode) == (pass == 0))
                aggregate_run(e, &e->runs[i]);
    quality_notes(e);
    journal_notes(e);
    gpu_notes(e);
    on_notes(e);
    return MB_OK;
}

/* The cells loaded last came from dir: they get its origin index. */
void mb__an_claim_origin(struct mb_an_experiment *e, const char *dir)
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
    int st = mb__an_load_experiment(e, dir, err);
    if (st != MB_OK)
        return st;
    mb__an_claim_origin(e, dir);
    if (e->nruns == 0)
        return mb_error_set(err, MB_ENOTFOUND, "%s: no cell.json found under <run>/<rep>/", dir);
    if (!e->name[0]) {
        const char *base = strrchr(dir, '/');
        mb__copy_str(e->name, sizeof(e->name), base && base[1] ? base + 1 : dir);
    }
    return mb__an_analyse_experiment(e, err);
}

static void free_experiment(struct mb_an_experiment *e)
{
    for (size_t i = 0; i < e->nruns; i++) {
        for (size_t k = 0; k < e->runs[i].ncells; k++)
            free(e->runs[i].cells[k].timeline);
        free(e->runs[i].cells);
        for (size_t j = 0; j < e->runs[i].njobs; j++)
            mb__an_free_argv(e->runs[i].jobs[j].argv, e->runs[i].jobs[j].argc);
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
