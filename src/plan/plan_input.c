/* SPDX-License-Identifier: Apache-2.0 */
/* Planner inputs: profile rows (CSV) and job sets (YAML). */
#include "migbench/plan.h"
#include "plan/plan_internal.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

#include "migbench/fileio.h"
#include "migbench/num.h"
#include "base/text_internal.h"
#include "base/yaml_internal.h"
#include "base/yaml_read.h"

#define PEAK_MEM_MAX_MIB 16777216.0 /* 16 TiB */

/* Input files are small; anything larger is refused rather than read without bound. */
#define MAX_FILE_BYTES (64u << 20)
#define CSV_MAX_FIELDS 32
/* workload, gpu, partition and a limit in mW, with separators. */
#define PROFILE_KEY_MAX (MB_PLAN_NAME_MAX + MB_MODEL_NAME_MAX + MB_PROFILE_NAME_MAX + 32)
/* A jobs file nests four levels; the limits bound what a hostile file costs while parsing. */
#define JOBS_MAX_DEPTH 32
#define JOBS_MAX_NODES 1000000
/* Units of work a job may name: far past any training run, far below where sums overflow. */
#define MAX_WORK 1e18

struct mb_plan_profiles {
    size_t n, cap;
    struct mb_plan_profile *rows;
    /* Indexes of rows[0..indexed) by workload/gpu/partition and by workload (its first row). */
    struct mb__strmap by_key, by_workload;
    size_t indexed;
};

int mb_plan_profiles_create(struct mb_plan_profiles **out, struct mb_error *err)
{
    *out = calloc(1, sizeof(**out));
    if (!*out)
        return mb_error_set(err, MB_ENOMEM, "out of memory");
    return MB_OK;
}

bool mb__plan_cap_match(const struct mb_plan_profile *row, double cap_w)
{
    bool row_default = !(row->power_limit_w > 0), want_default = !(cap_w > 0);
    if (row_default || want_default)
        return row_default == want_default;
    return fabs(row->power_limit_w - cap_w) < 0.5;
}

void mb_plan_profiles_destroy(struct mb_plan_profiles *p)
{
    if (!p)
        return;
    free(p->rows);
    mb__strmap_clear(&p->by_key);
    mb__strmap_clear(&p->by_workload);
    free(p);
}

static void profile_key(const struct mb_plan_profile *r, char *out, size_t cap)
{
    /* The default limit keys as 0 W, so that rows without a limit keep one key each. */
    long long mw =
        r->power_limit_w > 0 && r->power_limit_w < 1e9 ? llround(r->power_limit_w * 1e3) : 0;
    snprintf(out, cap, "%s\x1f%s\x1f%s\x1f%lld", r->workload, r->gpu, r->partition, mw);
}

/* Rebuilds the indexes after rows were dropped (a refused CSV, mb__plan_profiles_pop). */
static int reindex(struct mb_plan_profiles *p)
{
    mb__strmap_clear(&p->by_key);
    mb__strmap_clear(&p->by_workload);
    p->indexed = 0;
    for (size_t i = 0; i < p->n; i++) {
        char key[PROFILE_KEY_MAX];
        profile_key(&p->rows[i], key, sizeof(key));
        size_t v = i, w = i;
        if (mb__strmap_put(&p->by_key, key, &v) < 0 ||
            mb__strmap_put(&p->by_workload, p->rows[i].workload, &w) < 0)
            return MB_ENOMEM;
    }
    p->indexed = p->n;
    return MB_OK;
}

void mb__plan_profiles_pop(struct mb_plan_profiles *p)
{
    if (p->n)
        p->n--;
}

size_t mb_plan_profiles_count(const struct mb_plan_profiles *p)
{
    return p->n;
}

const struct mb_plan_profile *mb_plan_profiles_get(const struct mb_plan_profiles *p, size_t i)
{
    return i < p->n ? &p->rows[i] : NULL;
}

int mb_plan_profiles_add(struct mb_plan_profiles *p, const struct mb_catalog *cat,
                         const struct mb_plan_profile *row, struct mb_error *err)
{
    struct mb_plan_profile r = *row;
    if (!r.workload[0])
        return mb_error_set(err, MB_EINVAL, "field 'workload': empty");
    const struct mb_gpu_model *model = NULL;
    int st = mb_catalog_find(cat, r.gpu, &model, err);
    if (st != MB_OK)
        return mb_error_prefix(err, "field 'gpu': ");
    mb__copy_str(r.gpu, sizeof(r.gpu), model->name);
    if (strcasecmp(r.partition, MB_PLAN_FULL) == 0) {
        mb__copy_str(r.partition, sizeof(r.partition), MB_PLAN_FULL);
    } else {
        /* The model's profile name or a size (3g, 1g.2m), stored as the exact name. */
        const struct mb_gi_profile *gp = NULL;
        struct mb_error e;
        if (mb_model_profile_resolve(model, r.partition, &gp, &e) != MB_OK)
            return mb_error_set(err, MB_EINVAL, "field 'partition': %s, nor 'full'", e.msg);
        mb__copy_str(r.partition, sizeof(r.partition), gp->name);
    }
    if (!isfinite(r.throughput) || r.throughput <= 0)
        return mb_error_set(err, MB_EINVAL, "field 'throughput': must be a number > 0");
    if (!isfinite(r.power_w) || r.power_w <= 0)
        return mb_error_set(err, MB_EINVAL, "field 'power_w': must be a number > 0");
    if (!isnan(r.idle_power_w) && (!isfinite(r.idle_power_w) || r.idle_power_w < 0))
        return mb_error_set(err, MB_EINVAL, "field 'idle_power_w': must be a number >= 0");
    /* A job's peak memory fits a GPU: 16 TiB is past any (1e30 would pass every "fits" test). */
    if (!isnan(r.peak_mem_mib) &&
        (!isfinite(r.peak_mem_mib) || r.peak_mem_mib < 0 || r.peak_mem_mib > PEAK_MEM_MAX_MIB))
        return mb_error_set(err, MB_EINVAL, "field 'peak_mem_mib': must be a number in 0..%.0f",
                            PEAK_MEM_MAX_MIB);
    if (!r.unit[0])
        mb__copy_str(r.unit, sizeof(r.unit), "units");
    if (p->indexed != p->n && reindex(p) != MB_OK)
        return mb_error_set(err, MB_ENOMEM, "out of memory");
    if (!isnan(r.power_limit_w) && (!isfinite(r.power_limit_w) || r.power_limit_w < 0))
        return mb_error_set(err, MB_EINVAL, "field 'power_limit_w': must be a number >= 0");
    char key[PROFILE_KEY_MAX];
    profile_key(&r, key, sizeof(key));
    size_t at = p->n;
    int put = mb__strmap_put(&p->by_key, key, &at);
    if (put < 0)
        return mb_error_set(err, MB_ENOMEM, "out of memory");
    if (put > 0 && r.power_limit_w > 0)
        return mb_error_set(err, MB_EINVAL,
                            "workload '%s' on %s %s at a %g W power limit is profiled twice (also "
                            "at %s)",
                            r.workload, r.gpu, r.partition, r.power_limit_w, p->rows[at].source);
    if (put > 0)
        return mb_error_set(err, MB_EINVAL, "workload '%s' on %s %s is profiled twice (also at %s)",
                            r.workload, r.gpu, r.partition, p->rows[at].source);
    p->indexed = SIZE_MAX; /* by_key holds a row not added yet: rebuilt unless all goes well */
    at = p->n;
    put = mb__strmap_put(&p->by_workload, r.workload, &at);
    if (put < 0)
        return mb_error_set(err, MB_ENOMEM, "out of memory");
    if (put > 0 && strcmp(p->rows[at].unit, r.unit) != 0)
        return mb_error_set(err, MB_EINVAL,
                            "field 'unit': workload '%s' counts '%s' here but '%s' at %s",
                            r.workload, r.unit, p->rows[at].unit, p->rows[at].source);
    if (p->n == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 16;
        struct mb_plan_profile *v = realloc(p->rows, cap * sizeof(*v));
        if (!v)
            return mb_error_set(err, MB_ENOMEM, "out of memory");
        p->rows = v;
        p->cap = cap;
    }
    p->rows[p->n++] = r;
    p->indexed = p->n;
    return MB_OK;
}

/* Reads a whole file, NUL-terminated, refusing anything over MAX_FILE_BYTES. */
static int read_file(const char *path, char **out, size_t *len, struct mb_error *err)
{
    int rc = mb_file_read(path, MAX_FILE_BYTES, out, len, err);
    if (rc == MB_ENOTFOUND || rc == MB_ERANGE)
        rc = mb_error_restatus(err, MB_EIO); /* the contract: every unreadable file is MB_EIO */
    return rc;
}

/* Splits one CSV line in place (RFC 4180 quotes, no embedded newlines). */
static int csv_split(char *line, char **fields, size_t cap, size_t *n)
{
    size_t k = 0;
    char *p = line;
    for (;;) {
        if (k == cap)
            return -1;
        char *w = p;
        fields[k++] = w;
        if (*p == '"') {
            p++;
            for (;;) {
                if (*p == '\0')
                    return -2;
                if (*p == '"') {
                    if (p[1] == '"') {
                        *w++ = '"';
                        p += 2;
                        continue;
                    }
                    p++;
                    break;
                }
                *w++ = *p++;
            }
            if (*p != ',' && *p != '\0')
                return -2;
        } else {
            while (*p && *p != ',')
                *w++ = *p++;
        }
        char end = *p;
        *w = '\0';
        if (end == '\0')
            break;
        p++;
    }
    *n = k;
    return 0;
}

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
    return s;
}

/* A number, or NaN for an empty field when allowed; *range tells "1e400" from "abc". */
static bool parse_num(const char *s, bool optional, double *out, bool *range)
{
    *range = false;
    if (!*s) {
        *out = NAN;
        return optional;
    }
    double v;
    int rc = mb_num_parse(s, &v, NULL);
    *range = rc == MB_ERANGE;
    if (rc != MB_OK)
        return false;
    *out = v;
    return true;
}

static bool parse_bool(const char *s, bool *out)
{
    static const char *const yes[] = {"true", "yes", "1", "y"};
    static const char *const no[] = {"false", "no", "0", "n", ""};
    for (size_t i = 0; i < 4; i++)
        if (strcasecmp(s, yes[i]) == 0)
            return (*out = true);
    for (size_t i = 0; i < 5; i++)
        if (strcasecmp(s, no[i]) == 0) {
            *out = false;
            return true;
        }
    return false;
}

enum col {
    C_WORKLOAD,
    C_GPU,
    C_PARTITION,
    C_THR,
    C_UNIT,
    C_POWER,
    C_IDLE,
    C_MEM,
    C_SOURCE,
    C_PROXY,
    C_LIMIT
};
static const char *const col_names[] = {"workload", "gpu",     "partition",    "throughput",
                                        "unit",     "power_w", "idle_power_w", "peak_mem_mib",
                                        "source",   "proxy",   "power_limit_w"};
#define N_COLS (sizeof(col_names) / sizeof(col_names[0]))
/* Columns that may be left out of the header entirely. */
static bool col_optional(size_t c)
{
    return c == C_UNIT || c == C_IDLE || c == C_MEM || c == C_SOURCE || c == C_PROXY ||
           c == C_LIMIT;
}

/* Reads the header line's fields into pos[] (column -> field index); MB_OK or MB_EPARSE. */
static int csv_header(char **fields, size_t nf, int *pos, const char *path, unsigned line_no,
                      struct mb_error *err)
{
    for (size_t i = 0; i < nf; i++) {
        char *name = trim(fields[i]);
        size_t c = 0;
        while (c < N_COLS && strcasecmp(name, col_names[c]) != 0)
            c++;
        if (c == N_COLS)
            return mb_error_set(err, MB_EPARSE, "%s:%u: unknown column '%s'", path, line_no, name);
        if (pos[c] >= 0)
            return mb_error_set(err, MB_EPARSE, "%s:%u: column '%s' twice", path, line_no, name);
        pos[c] = (int)i;
    }
    for (size_t c = 0; c < N_COLS; c++)
        if (pos[c] < 0 && !col_optional(c))
            return mb_error_set(err, MB_EPARSE, "%s:%u: header lacks column '%s'", path, line_no,
                                col_names[c]);
    return MB_OK;
}

/* Parses one data line's fields (columns at pos[]) into a profile row and adds it to p. */
static int csv_row(struct mb_plan_profiles *p, const struct mb_catalog *cat, char **fields,
                   const int *pos, const char *path, unsigned line_no, struct mb_error *err)
{
    const char *v[N_COLS];
    for (size_t c = 0; c < N_COLS; c++)
        v[c] = pos[c] >= 0 ? trim(fields[pos[c]]) : "";
    struct mb_plan_profile row;
    memset(&row, 0, sizeof(row));
    mb__copy_str(row.workload, sizeof(row.workload), v[C_WORKLOAD]);
    mb__copy_str(row.gpu, sizeof(row.gpu), v[C_GPU]);
    mb__copy_str(row.partition, sizeof(row.partition), v[C_PARTITION]);
    mb__copy_str(row.unit, sizeof(row.unit), v[C_UNIT]);
    int badc = -1;
    bool range = false;
    if (!parse_num(v[C_THR], false, &row.throughput, &range))
        badc = C_THR;
    else if (!parse_num(v[C_POWER], false, &row.power_w, &range))
        badc = C_POWER;
    else if (!parse_num(v[C_IDLE], true, &row.idle_power_w, &range))
        badc = C_IDLE;
    else if (!parse_num(v[C_MEM], true, &row.peak_mem_mib, &range))
        badc = C_MEM;
    else if (!parse_bool(v[C_PROXY], &row.proxy))
        badc = C_PROXY;
    else if (!parse_num(v[C_LIMIT], true, &row.power_limit_w, &range))
        badc = C_LIMIT;
    if (badc >= 0)
        return mb_error_set(err, MB_EPARSE, "%s:%u: field '%s': '%s' is not %s", path, line_no,
                            col_names[badc], v[badc],
                            badc == C_PROXY ? "true or false"
                            : range         ? "a number in range"
                                            : "a number");
    if (v[C_SOURCE][0])
        snprintf(row.source, sizeof(row.source), "%s:%u (%s)", path, line_no, v[C_SOURCE]);
    else
        snprintf(row.source, sizeof(row.source), "%s:%u", path, line_no);
    int st = mb_plan_profiles_add(p, cat, &row, err);
    if (st != MB_OK) {
        mb_error_prefix(err, "%s:%u: ", path, line_no);
        st = err ? (err->status = MB_EPARSE) : MB_EPARSE;
    }
    return st;
}

/* Cuts the next line off *rest (NUL-terminating it, without its CR) and returns it trimmed. */
static char *next_line(char **rest)
{
    char *line = *rest;
    char *nl = strchr(line, '\n');
    *rest = nl ? nl + 1 : NULL;
    if (nl)
        *nl = '\0';
    size_t ll = strlen(line);
    if (ll && line[ll - 1] == '\r')
        line[ll - 1] = '\0';
    return trim(line);
}

/* The lines of text: a header, then rows added to p. */
static int csv_parse(struct mb_plan_profiles *p, const struct mb_catalog *cat, char *text,
                     const char *path, struct mb_error *err)
{
    int pos[N_COLS];
    for (size_t c = 0; c < N_COLS; c++)
        pos[c] = -1;
    bool have_header = false;
    unsigned line_no = 0;
    char *fields[CSV_MAX_FIELDS];
    size_t header_n = 0, n_before = p->n;
    for (char *rest = text; rest;) {
        line_no++;
        char *t = next_line(&rest);
        if (!*t || *t == '#')
            continue;
        size_t nf = 0;
        int r = csv_split(t, fields, CSV_MAX_FIELDS, &nf);
        if (r == -1)
            return mb_error_set(err, MB_EPARSE, "%s:%u: more than %d fields", path, line_no,
                                CSV_MAX_FIELDS);
        if (r == -2)
            return mb_error_set(err, MB_EPARSE, "%s:%u: unbalanced quotes", path, line_no);
        int st;
        if (!have_header) {
            st = csv_header(fields, nf, pos, path, line_no, err);
            header_n = nf;
            have_header = true;
        } else if (nf != header_n) {
            st = mb_error_set(err, MB_EPARSE, "%s:%u: %zu fields, the header has %zu", path,
                              line_no, nf, header_n);
        } else {
            st = csv_row(p, cat, fields, pos, path, line_no, err);
        }
        if (st != MB_OK)
            return st;
    }
    if (!have_header)
        return mb_error_set(err, MB_EPARSE, "%s: empty (no header line)", path);
    if (p->n == n_before)
        return mb_error_set(err, MB_EPARSE, "%s: a header but no profile rows", path);
    return MB_OK;
}

int mb_plan_profiles_load_csv(struct mb_plan_profiles *p, const struct mb_catalog *cat,
                              const char *path, struct mb_error *err)
{
    char *text = NULL;
    size_t len = 0;
    int st = read_file(path, &text, &len, err);
    if (st != MB_OK)
        return st;
    size_t n_before = p->n;
    st = csv_parse(p, cat, text, path, err);
    if (st != MB_OK)
        p->n = n_before;
    free(text);
    return st;
}

/* ---- job sets ---------------------------------------------------------------------------- */

static int parse_workloads_in(struct mb__yread *c, const struct mb__ynode *n,
                              struct mb_plan_jobset *js, struct mb__strmap *names)
{
    if (js->workloads) /* the loader refuses a repeated key; this keeps the array safe anyway */
        return mb__yread_failn(c, n, "workloads", "given twice");
    if (n->kind != MB__Y_MAP)
        return mb__yread_failn(c, n, "workloads",
                               "expected a mapping of workload name to {command, unit}");
    size_t cnt = n->n;
    js->workloads = calloc(cnt ? cnt : 1, sizeof(*js->workloads));
    if (!js->workloads)
        return mb_error_set(c->err, MB_ENOMEM, "out of memory");
    for (size_t i = 0; i < n->n; i++) {
        const struct mb__ynode key_at = {
            .kind = MB__Y_SCALAR, .line = n->key_lines[i], .str = n->keys[i]};
        const struct mb__ynode *k = &key_at, *v = n->items[i];
        struct mb_plan_workload *w = &js->workloads[js->n_workloads++];
        int st = mb__yread_text(c, k, "workloads", w->name, sizeof(w->name));
        if (st)
            return st;
        char field[MB_PLAN_NAME_MAX + 32];
        snprintf(field, sizeof(field), "workloads.%s", w->name);
        if (v->kind != MB__Y_MAP)
            return mb__yread_failn(c, v, field, "expected a mapping {command: [...], unit: ...}");
        for (size_t q = 0; q < v->n; q++) {
            const struct mb__ynode qk_at = {.line = v->key_lines[q]}, *qk = &qk_at;
            const struct mb__ynode *qv = v->items[q];
            const char *key = v->keys[q];
            char sub[MB_PLAN_NAME_MAX + 64];
            snprintf(sub, sizeof(sub), "%s.%s", field, key ? key : "?");
            if (!key)
                return mb__yread_failn(c, qk, field, "keys must be strings");
            if (strcmp(key, "command") == 0)
                st = mb__yread_argv(c, qv, sub, MB_PLAN_MAX_ARGV, w->argv, &w->argc);
            else if (strcmp(key, "gpu_args") == 0)
                st = mb__yread_argv(c, qv, sub, MB_PLAN_MAX_ARGV, w->gpu_args, &w->n_gpu_args);
            else if (strcmp(key, "unit") == 0)
                st = mb__yread_text(c, qv, sub, w->unit, sizeof(w->unit));
            else
                st = mb__yread_failn(c, qk, sub, "unknown key (expected command, unit, gpu_args)");
            if (st)
                return st;
        }
        if (w->argc == 0)
            return mb__yread_failn(c, v, field, "missing 'command'");
        size_t first = js->n_workloads - 1;
        int put = mb__strmap_put(names, w->name, &first);
        if (put < 0)
            return mb_error_set(c->err, MB_ENOMEM, "out of memory");
        if (put > 0)
            return mb__yread_failn(c, k, field, "workload named twice");
    }
    return MB_OK;
}

static int parse_workloads(struct mb__yread *c, const struct mb__ynode *n,
                           struct mb_plan_jobset *js)
{
    struct mb__strmap names = {0};
    int st = parse_workloads_in(c, n, js, &names);
    mb__strmap_clear(&names);
    return st;
}

static int parse_job(struct mb__yread *c, const struct mb__ynode *n, size_t idx,
                     struct mb_plan_job *job, unsigned *replicas)
{
    char field[64];
    snprintf(field, sizeof(field), "jobs[%zu]", idx);
    if (n->kind != MB__Y_MAP)
        return mb__yread_failn(c, n, field, "expected a mapping {name, workload, work}");
    memset(job, 0, sizeof(*job));
    job->deadline_s = NAN;
    job->memory_mib = NAN;
    job->line = n->line;
    *replicas = 1;
    bool have_work = false;
    for (size_t i = 0; i < n->n; i++) {
        const struct mb__ynode k_at = {.line = n->key_lines[i]}, *k = &k_at, *v = n->items[i];
        const char *key = n->keys[i];
        char sub[96];
        snprintf(sub, sizeof(sub), "%s.%s", field, key ? key : "?");
        int st;
        if (!key) {
            st = mb__yread_failn(c, k, field, "keys must be strings");
        } else if (strcmp(key, "name") == 0) {
            st = mb__yread_text(c, v, sub, job->name, sizeof(job->name));
        } else if (strcmp(key, "workload") == 0) {
            st = mb__yread_text(c, v, sub, job->workload, sizeof(job->workload));
        } else if (strcmp(key, "work") == 0) {
            const char *s = mb__yread_scalar(v);
            have_work = true;
            if (s && strcmp(s, "continuous") == 0) {
                job->continuous = true;
                st = MB_OK;
            } else {
                st = mb__yread_number_min(c, v, sub, 0, &job->work);
                if (st == MB_OK && (job->work <= 0 || job->work > MAX_WORK))
                    st = mb__yread_failn(
                        c, v, sub, "must be > 0 and at most %g (units of work) or 'continuous'",
                        MAX_WORK);
            }
        } else if (strcmp(key, "priority") == 0) {
            double pr_v;
            st = mb__yread_number_min(c, v, sub, -1e6, &pr_v);
            if (st == MB_OK && (pr_v > 1e6 || pr_v != floor(pr_v)))
                st = mb__yread_failn(c, v, sub, "expected an integer between -1000000 and 1000000");
            if (st == MB_OK)
                job->priority = (int)pr_v;
        } else if (strcmp(key, "deadline") == 0) {
            st = mb__yread_seconds(c, v, sub, &job->deadline_s);
        } else if (strcmp(key, "memory_mib") == 0) {
            st = mb__yread_number_min(c, v, sub, 0, &job->memory_mib);
        } else if (strcmp(key, "replicas") == 0) {
            double r;
            st = mb__yread_number_min(c, v, sub, 1, &r);
            if (st == MB_OK && (r > 10000 || r != floor(r)))
                st = mb__yread_failn(c, v, sub, "expected an integer from 1 to 10000");
            *replicas = (unsigned)r;
        } else {
            st = mb__yread_failn(c, k, sub,
                                 "unknown key (expected name, workload, work, priority, deadline, "
                                 "memory_mib, replicas)");
        }
        if (st)
            return st;
    }
    if (!job->workload[0])
        return mb__yread_failn(c, n, field, "missing 'workload'");
    if (!have_work)
        return mb__yread_failn(c, n, field, "missing 'work' (a number of units, or 'continuous')");
    if (!job->name[0])
        mb__copy_str(job->name, sizeof(job->name), job->workload);
    return MB_OK;
}

static int parse_jobs_in(struct mb__yread *c, const struct mb__ynode *n, struct mb_plan_jobset *js,
                         struct mb__strmap *names)
{
    if (js->jobs) /* as for workloads: a second list must not land in the first one's array */
        return mb__yread_failn(c, n, "jobs", "given twice");
    if (n->kind != MB__Y_SEQ)
        return mb__yread_failn(c, n, "jobs", "expected a list of jobs");
    size_t cap = 0;
    for (size_t idx = 0; idx < n->n; idx++) {
        const struct mb__ynode *e = n->items[idx];
        struct mb_plan_job job;
        unsigned replicas = 1;
        int st = parse_job(c, e, idx, &job, &replicas);
        if (st)
            return st;
        if (js->n_jobs + replicas > MB_PLAN_MAX_JOBS)
            return mb__yread_failn(c, e, "jobs", "more than %d jobs", MB_PLAN_MAX_JOBS);
        if (js->n_jobs + replicas > cap) {
            size_t nc = cap ? cap * 2 : 16;
            while (nc < js->n_jobs + replicas)
                nc *= 2;
            struct mb_plan_job *v = realloc(js->jobs, nc * sizeof(*v));
            if (!v)
                return mb_error_set(c->err, MB_ENOMEM, "out of memory");
            js->jobs = v;
            cap = nc;
        }
        for (unsigned r = 0; r < replicas; r++) {
            struct mb_plan_job *j = &js->jobs[js->n_jobs];
            *j = job;
            if (replicas > 1) {
                char nm[MB_PLAN_NAME_MAX + 16];
                snprintf(nm, sizeof(nm), "%s-%u", job.name, r);
                if (strlen(nm) >= sizeof(j->name))
                    return mb__yread_failn(c, e, "jobs",
                                           "name '%s' too long with its replica number", job.name);
                mb__copy_str(j->name, sizeof(j->name), nm);
            }
            size_t first = js->n_jobs;
            int put = mb__strmap_put(names, j->name, &first);
            if (put < 0)
                return mb_error_set(c->err, MB_ENOMEM, "out of memory");
            if (put > 0) {
                char f[64];
                snprintf(f, sizeof(f), "jobs[%zu].name", idx);
                return mb__yread_failn(c, e, f, "'%s' is also the name of the job on line %u",
                                       j->name, js->jobs[first].line);
            }
            js->n_jobs++;
        }
    }
    if (js->n_jobs == 0)
        return mb__yread_failn(c, n, "jobs", "no jobs");
    return MB_OK;
}

static int parse_jobs(struct mb__yread *c, const struct mb__ynode *n, struct mb_plan_jobset *js)
{
    struct mb__strmap names = {0};
    int st = parse_jobs_in(c, n, js, &names);
    mb__strmap_clear(&names);
    return st;
}

void mb_plan_jobset_destroy(struct mb_plan_jobset *js)
{
    if (!js)
        return;
    for (size_t i = 0; i < js->n_workloads; i++) {
        for (size_t k = 0; k < js->workloads[i].argc; k++)
            free(js->workloads[i].argv[k]);
        for (size_t k = 0; k < js->workloads[i].n_gpu_args; k++)
            free(js->workloads[i].gpu_args[k]);
    }
    free(js->workloads);
    free(js->jobs);
    free(js);
}

/* One top-level key of a jobs file (k: the key's position, for messages). */
static int parse_top_key(struct mb__yread *c, const char *key, const struct mb__ynode *k,
                         const struct mb__ynode *v, struct mb_plan_jobset *js)
{
    if (!key)
        return mb__yread_failn(c, k, "(top)", "keys must be strings");
    if (strcmp(key, "jobs") == 0)
        return parse_jobs(c, v, js);
    if (strcmp(key, "workloads") == 0)
        return parse_workloads(c, v, js);
    if (strcmp(key, "gpu") == 0)
        return mb__yread_text(c, v, key, js->gpu, sizeof(js->gpu));
    if (strcmp(key, "count") == 0) {
        double d;
        int st = mb__yread_number_min(c, v, key, 1, &d);
        if (st == MB_OK && (d > MB_PLAN_MAX_GPUS || d != floor(d)))
            st = mb__yread_failn(c, v, key, "expected an integer from 1 to %d", MB_PLAN_MAX_GPUS);
        if (st == MB_OK)
            js->count = (unsigned)d;
        return st;
    }
    if (strcmp(key, "objective") == 0) {
        const char *s = mb__yread_scalar(v);
        js->has_objective = true;
        if (s && strcmp(s, "energy") == 0)
            js->objective = MB_PLAN_ENERGY;
        else if (s && strcmp(s, "makespan") == 0)
            js->objective = MB_PLAN_MAKESPAN;
        else if (s && strcmp(s, "throughput") == 0)
            js->objective = MB_PLAN_THROUGHPUT;
        else
            return mb__yread_failn(c, v, key, "expected energy, makespan or throughput");
        return MB_OK;
    }
    if (strcmp(key, "makespan_cap") == 0)
        return mb__yread_seconds(c, v, key, &js->makespan_cap_s);
    if (strcmp(key, "energy_cap") == 0)
        return mb__yread_joules(c, v, key, &js->energy_cap_j);
    return mb__yread_failn(c, k, key,
                           "unknown key (expected jobs, workloads, gpu, count, objective, "
                           "makespan_cap, energy_cap)");
}

int mb_plan_jobset_load(const char *path, struct mb_plan_jobset **out, struct mb_error *err)
{
    *out = NULL;
    char *text = NULL;
    size_t len = 0;
    int st = read_file(path, &text, &len, err);
    if (st)
        return st;
    struct mb_plan_jobset *js = calloc(1, sizeof(*js));
    struct mb__ynode *root = NULL;
    yaml_document_t doc;
    bool have_doc = false;
    if (!js) {
        st = mb_error_set(err, MB_ENOMEM, "out of memory");
        goto fail;
    }
    js->makespan_cap_s = NAN;
    js->energy_cap_j = NAN;
    struct mb__yaml_fail f;
    st = mb__yaml_load(text, len, JOBS_MAX_DEPTH, JOBS_MAX_NODES, &doc, &have_doc, &f);
    if (st == MB_ENOMEM) {
        st = mb_error_set(err, MB_ENOMEM, "out of memory");
        goto fail;
    }
    if (st != MB_OK) {
        st = mb_error_set(err, MB_EPARSE, "%s:%u: %s", path, f.line, f.msg);
        goto fail;
    }
    struct mb__yread c = {
        .path = path, .err = err, .max_depth = JOBS_MAX_DEPTH, .max_nodes = JOBS_MAX_NODES};
    if (have_doc && (st = mb__yread_tree(&c, &doc, &root)) != MB_OK)
        goto fail;
    if (!root || root->kind != MB__Y_MAP) {
        st = mb__yread_failn(&c, root, "(top)", "expected a mapping with 'jobs:'");
        goto fail;
    }
    const struct mb__ynode *jobs_node = NULL;
    for (size_t i = 0; i < root->n; i++) {
        const struct mb__ynode k_at = {.line = root->key_lines[i]};
        if (root->keys[i] && strcmp(root->keys[i], "jobs") == 0)
            jobs_node = root->items[i];
        if ((st = parse_top_key(&c, root->keys[i], &k_at, root->items[i], js)) != MB_OK)
            goto fail;
    }
    if (!jobs_node) {
        st = mb__yread_failn(&c, root, "jobs", "missing");
        goto fail;
    }
    if (!isnan(js->makespan_cap_s) && js->has_objective && js->objective != MB_PLAN_ENERGY) {
        st = mb__yread_failn(&c, root, "makespan_cap", "applies to the energy objective only");
        goto fail;
    }
    if (!isnan(js->energy_cap_j) && (!js->has_objective || js->objective != MB_PLAN_MAKESPAN)) {
        st = mb__yread_failn(&c, root, "energy_cap", "applies to 'objective: makespan' only");
        goto fail;
    }
    mb__ynode_free(root);
    yaml_document_delete(&doc);
    free(text);
    *out = js;
    return MB_OK;
fail:
    mb__ynode_free(root);
    if (have_doc)
        yaml_document_delete(&doc);
    mb_plan_jobset_destroy(js);
    free(text);
    return st;
}
