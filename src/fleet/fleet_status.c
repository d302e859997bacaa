/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What became of each cell of an experiment submitted to Slurm, from what is on disk (cells.tsv,
 * submissions.jsonl, cell.json files, journals) and, for cells not recorded, from Slurm itself.
 */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fleet/fleet_internal.h"
#include "migbench/fileio.h"
#include "migbench/results.h"
#include "results/results_json.h"
#include "base/text_internal.h"

#define CELLS_TSV_MAX (16u << 20)
#define SUBMISSIONS_MAX (16u << 20)
#define CELL_JSON_MAX (4u << 20)
#define MAX_CELLS 1000000

const char *mb_slurm_cell_state_str(enum mb_slurm_cell_state s)
{
    switch (s) {
    case MB_SLURM_CELL_QUEUED:
        return "queued";
    case MB_SLURM_CELL_RUNNING:
        return "running";
    case MB_SLURM_CELL_DONE:
        return "done";
    case MB_SLURM_CELL_FAILED:
        return "failed";
    case MB_SLURM_CELL_NOT_RUN:
        break;
    }
    return "not run";
}

/* Whole decimal digits into *out when the value is at most max; nothing else (no sign). */
static bool tsv_uint(const char *p, size_t len, unsigned long max, unsigned long *out)
{
    unsigned long v = 0;
    if (len == 0 || len > 12)
        return false;
    for (size_t i = 0; i < len; i++) {
        if (p[i] < '0' || p[i] > '9')
            return false;
        v = v * 10 + (unsigned long)(p[i] - '0');
    }
    if (v > max)
        return false;
    *out = v;
    return true;
}

/* A run name as the experiment allows it: it becomes a directory name under the results. */
static bool tsv_run(const char *p, size_t len)
{
    if (len == 0 || len >= MB_EXP_NAME_MAX || p[0] == '.' || p[0] == '-')
        return false;
    for (size_t i = 0; i < len; i++)
        if (!((p[i] >= 'a' && p[i] <= 'z') || (p[i] >= 'A' && p[i] <= 'Z') ||
              (p[i] >= '0' && p[i] <= '9') || p[i] == '-' || p[i] == '_' || p[i] == '.'))
            return false;
    return true;
}

/* One row "index<TAB>run<TAB>repetition[<TAB>...]": the row's index is its position k. */
static int tsv_row(const char *l, size_t k, struct mb_slurm_cell *c, const char *path,
                   unsigned line, struct mb_error *err)
{
    const char *t1 = strchr(l, '\t');
    const char *t2 = t1 ? strchr(t1 + 1, '\t') : NULL;
    size_t rep_len = t2 ? strcspn(t2 + 1, "\t") : 0;
    unsigned long idx, rep;
    if (!t2)
        return mb_error_set(err, MB_EPARSE, "%s:%u: not 'index, run, repetition'", path, line);
    if (!tsv_uint(l, (size_t)(t1 - l), MAX_CELLS - 1, &idx) || idx != k)
        return mb_error_set(err, MB_EPARSE,
                            "%s:%u: field 'index': expected %zu (the rows count "
                            "0, 1, 2, ...)",
                            path, line, k);
    if (!tsv_run(t1 + 1, (size_t)(t2 - t1 - 1)))
        return mb_error_set(err, MB_EPARSE, "%s:%u: field 'run': not a run name", path, line);
    if (!tsv_uint(t2 + 1, rep_len, 999, &rep))
        return mb_error_set(err, MB_EPARSE,
                            "%s:%u: field 'repetition': expected a whole number in 0..999", path,
                            line);
    *c = (struct mb_slurm_cell){.index = idx, .rep = (unsigned)rep};
    memcpy(c->run, t1 + 1, (size_t)(t2 - t1 - 1));
    c->run[t2 - t1 - 1] = '\0';
    return MB_OK;
}

int mb__cells_tsv_parse(char *text, const char *path, struct mb_slurm_cell **out, size_t *n,
                        struct mb_error *err)
{
    *out = NULL;
    *n = 0;
    size_t cap = 1;
    for (const char *p = text; *p; p++)
        cap += *p == '\n';
    struct mb_slurm_cell *cells = calloc(cap, sizeof(*cells));
    if (!cells)
        return mb_error_set(err, MB_ENOMEM, "out of memory");
    size_t k = 0;
    unsigned line = 0;
    for (char *save = NULL, *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        if (++line == 1 && strncmp(l, "index\t", 6) == 0)
            continue;
        int rc = k >= MAX_CELLS
                     ? mb_error_set(err, MB_EPARSE, "%s: more than %d cells", path, MAX_CELLS)
                     : tsv_row(l, k, &cells[k], path, line, err);
        if (rc != MB_OK) {
            free(cells);
            return rc;
        }
        k++;
    }
    *out = cells;
    *n = k;
    return MB_OK;
}

/* cells.tsv: a header, then "index<TAB>run<TAB>repetition<TAB>..." per cell. */
static int read_cells_tsv(const char *path, struct mb_slurm_cell **out, size_t *n,
                          struct mb_error *err)
{
    char *text = NULL;
    int rc = mb_file_read(path, CELLS_TSV_MAX, &text, NULL, err);
    if (rc != MB_OK)
        return rc;
    rc = mb__cells_tsv_parse(text, path, out, n, err);
    free(text);
    return rc;
}

/* The job a cell.json or journal event names ("slurm": {"job": "123_4"}); NULL when none. */
static const char *slurm_job_of(const cJSON *o)
{
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(o, "slurm");
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(s, "job");
    return cJSON_IsString(j) && j->valuestring[0] ? j->valuestring : NULL;
}

/* The cell's recorded result, if any: done or failed, with the job that wrote it. */
static bool from_cell_json(const char *results, struct mb_slurm_cell *c)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/%s/%u/cell.json", results, c->run, c->rep);
    cJSON *o = NULL;
    if (mb_results_read_json(path, CELL_JSON_MAX, &o, NULL) != MB_OK)
        return false;
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(o, "status");
    bool ok = cJSON_IsString(st) && strcmp(st->valuestring, "ok") == 0;
    c->state = ok ? MB_SLURM_CELL_DONE : MB_SLURM_CELL_FAILED;
    c->recorded = true;
    if (!ok) {
        const cJSON *f = cJSON_GetObjectItemCaseSensitive(o, "failure");
        const cJSON *r = cJSON_GetObjectItemCaseSensitive(f, "reason");
        mb__copy_str(c->why, sizeof(c->why),
                     cJSON_IsString(r) ? r->valuestring : "the cell recorded a failure");
    }
    const char *job = slurm_job_of(o);
    if (job)
        mb__copy_str(c->job, sizeof(c->job), job);
    cJSON_Delete(o);
    return true;
}

/* Every journal*.jsonl of results, events appended into one array (owned by the caller). */
static cJSON *read_journals(const char *results)
{
    cJSON *all = cJSON_CreateArray();
    DIR *d = opendir(results);
    struct dirent *e;
    while (all && d && (e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (strncmp(e->d_name, "journal", 7) != 0 || len < 6 ||
            strcmp(e->d_name + len - 6, ".jsonl") != 0)
            continue;
        char path[4200];
        snprintf(path, sizeof(path), "%s/%s", results, e->d_name);
        cJSON *ev = NULL;
        size_t skipped = 0;
        if (mb_journal_read(path, &ev, &skipped, NULL) != MB_OK)
            continue;
        cJSON *item;
        while ((item = cJSON_DetachItemFromArray(ev, 0)))
            cJSON_AddItemToArray(all, item);
        cJSON_Delete(ev);
    }
    if (d)
        closedir(d);
    return all;
}

/* Whether the journals show the cell started with no end after it; *job from that event. */
static bool started_unfinished(const cJSON *events, const struct mb_slurm_cell *c, char *job,
                               size_t cap)
{
    bool open = false;
    const cJSON *ev;
    cJSON_ArrayForEach(ev, events)
    {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(ev, "event");
        const cJSON *run = cJSON_GetObjectItemCaseSensitive(ev, "run");
        const cJSON *rep = cJSON_GetObjectItemCaseSensitive(ev, "rep");
        if (!cJSON_IsString(name) || !cJSON_IsString(run) || !cJSON_IsNumber(rep) ||
            strcmp(run->valuestring, c->run) != 0 || rep->valuedouble != (double)c->rep)
            continue;
        if (strcmp(name->valuestring, "cell_started") == 0) {
            open = true;
            const char *j = slurm_job_of(ev);
            mb__copy_str(job, cap, j ? j : "");
        } else if (strcmp(name->valuestring, "cell_finished") == 0 ||
                   strcmp(name->valuestring, "cell_failed") == 0) {
            open = false;
        }
    }
    return open;
}

/* The array task that last had this cell: "<array job>_<index>" from submissions.jsonl. */
static void submitted_job(const cJSON *subs, size_t index, char *job, size_t cap)
{
    const cJSON *s;
    cJSON_ArrayForEach(s, subs)
    {
        const cJSON *aj = cJSON_GetObjectItemCaseSensitive(s, "array_job");
        const cJSON *cells = cJSON_GetObjectItemCaseSensitive(s, "cells");
        const cJSON *i;
        cJSON_ArrayForEach(i, cells)
        {
            if (cJSON_IsString(aj) && cJSON_IsNumber(i) && i->valuedouble == (double)index)
                snprintf(job, cap, "%s_%zu", aj->valuestring, index);
        }
    }
}

static cJSON *read_submissions(const char *results)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/slurm/submissions.jsonl", results);
    cJSON *arr = cJSON_CreateArray();
    char *text = NULL;
    if (!arr || mb_file_read(path, SUBMISSIONS_MAX, &text, NULL, NULL) != MB_OK)
        return arr;
    for (char *save = NULL, *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        cJSON *o = cJSON_Parse(l);
        if (cJSON_IsObject(o))
            cJSON_AddItemToArray(arr, o);
        else
            cJSON_Delete(o);
    }
    free(text);
    return arr;
}

static bool live_state(const char *st)
{
    const char *live[] = {"PENDING",  "RUNNING",  "CONFIGURING", "COMPLETING", "SUSPENDED",
                          "REQUEUED", "RESIZING", "SIGNALING",   "STAGE_OUT"};
    for (size_t i = 0; i < sizeof(live) / sizeof(live[0]); i++)
        if (strcmp(st, live[i]) == 0)
            return true;
    return false;
}

/* A cell with no result: started (journal) or not, and what Slurm says of its job. */
static int unrecorded(struct mb_slurm_cell *c, const cJSON *events, const cJSON *subs,
                      mb_slurm_job_state_fn job_state, void *ctx, struct mb_error *err)
{
    char job[64] = "";
    bool started = started_unfinished(events, c, job, sizeof(job));
    if (!job[0])
        submitted_job(subs, c->index, job, sizeof(job));
    mb__copy_str(c->job, sizeof(c->job), job);
    char st[64] = "";
    if (job[0] && job_state) {
        int rc = job_state(ctx, job, st, sizeof(st), err);
        if (rc != MB_OK)
            return rc;
    }
    if (started) {
        c->state = live_state(st) ? MB_SLURM_CELL_RUNNING : MB_SLURM_CELL_FAILED;
        if (c->state == MB_SLURM_CELL_FAILED)
            snprintf(c->why, sizeof(c->why), "started but ended without a result (Slurm: %s)",
                     st[0]       ? st
                     : job_state ? "job no longer known"
                                 : "not asked");
    } else if (strcmp(st, "PENDING") == 0) {
        c->state = MB_SLURM_CELL_QUEUED;
    } else if (live_state(st)) {
        c->state = MB_SLURM_CELL_RUNNING;
    } else if (st[0]) {
        c->state = MB_SLURM_CELL_FAILED;
        snprintf(c->why, sizeof(c->why), "its task ended before the cell started (Slurm: %s)", st);
    } else {
        c->state = MB_SLURM_CELL_NOT_RUN;
    }
    return MB_OK;
}

int mb_slurm_status(const char *results, mb_slurm_job_state_fn job_state, void *ctx,
                    struct mb_slurm_cell **out, size_t *n, struct mb_error *err)
{
    *out = NULL;
    *n = 0;
    char path[4200];
    snprintf(path, sizeof(path), "%s/slurm/cells.tsv", results);
    struct mb_slurm_cell *cells = NULL;
    size_t nc = 0;
    int rc = read_cells_tsv(path, &cells, &nc, err);
    if (rc == MB_ENOTFOUND)
        mb_error_set(err, MB_ENOTFOUND,
                     "%s: no cells.tsv (was this submitted with migbench "
                     "slurm submit?)",
                     path);
    if (rc != MB_OK)
        return rc;
    cJSON *events = read_journals(results);
    cJSON *subs = read_submissions(results);
    if (!events || !subs)
        rc = mb_error_set(err, MB_ENOMEM, "out of memory");
    for (size_t i = 0; rc == MB_OK && i < nc; i++)
        if (!from_cell_json(results, &cells[i]))
            rc = unrecorded(&cells[i], events, subs, job_state, ctx, err);
    cJSON_Delete(events);
    cJSON_Delete(subs);
    if (rc != MB_OK) {
        free(cells);
        return rc;
    }
    *out = cells;
    *n = nc;
    return MB_OK;
}

/* The cells of a resubmission, checking that cells.tsv still describes this experiment. */
static int cells_to_resubmit(const struct mb_experiment *exp, const struct mb_cell *cells,
                             size_t n_cells, const struct mb_slurm_cell *st, size_t n_st,
                             size_t *idx, size_t *n, struct mb_error *err)
{
    *n = 0;
    if (n_st != n_cells)
        return mb_error_set(err, MB_EINVAL,
                            "the earlier submission had %zu cells, the experiment now has %zu: "
                            "submit a changed experiment into a new results directory",
                            n_st, n_cells);
    for (size_t i = 0; i < n_st; i++) {
        const struct mb_exp_run *r = &exp->runs[cells[i].run];
        if (st[i].index != i || strcmp(st[i].run, r->name) != 0 || st[i].rep != cells[i].rep)
            return mb_error_set(err, MB_EINVAL,
                                "cell %zu was %s %u in the earlier submission and is %s %u now: "
                                "submit a changed experiment into a new results directory",
                                i, st[i].run, st[i].rep, r->name, cells[i].rep);
        if (!st[i].recorded && st[i].state != MB_SLURM_CELL_QUEUED &&
            st[i].state != MB_SLURM_CELL_RUNNING)
            idx[(*n)++] = i;
    }
    return MB_OK;
}

int mb_slurm_submit_experiment(const struct mb_experiment *exp, const struct mb_cell *cells,
                               size_t n_cells, const struct mb_slurm_array_opts *o,
                               const char *emit_dir, mb_slurm_job_state_fn job_state, void *ctx,
                               struct mb_slurm_submission *out, struct mb_error *err)
{
    memset(out, 0, sizeof(*out));
    if (n_cells == 0)
        return mb_error_set(err, MB_EINVAL, "the experiment has no cell for this device");
    if (emit_dir) {
        int rc = mb_slurm_write_array(exp, cells, n_cells, NULL, 0, o, emit_dir, err);
        if (rc == MB_OK) {
            out->n = n_cells;
            out->last = n_cells - 1;
        }
        return rc;
    }
    char dir[4200], tsv[4300];
    snprintf(dir, sizeof(dir), "%s/slurm", o->results);
    snprintf(tsv, sizeof(tsv), "%s/cells.tsv", dir);
    size_t *idx = malloc(n_cells * sizeof(*idx));
    if (!idx)
        return mb_error_set(err, MB_ENOMEM, "out of memory");
    size_t n = n_cells;
    for (size_t i = 0; i < n_cells; i++)
        idx[i] = i;
    int rc = MB_OK;
    if (access(tsv, F_OK) == 0) {
        struct mb_slurm_cell *st = NULL;
        size_t n_st = 0;
        rc = mb_slurm_status(o->results, job_state, ctx, &st, &n_st, err);
        if (rc == MB_OK)
            rc = cells_to_resubmit(exp, cells, n_cells, st, n_st, idx, &n, err);
        free(st);
    }
    if (rc == MB_OK && n > 0) {
        out->n = n;
        out->first = idx[0];
        out->last = idx[n - 1];
        rc = mb_slurm_write_array(exp, cells, n_cells, idx, n, o, dir, err);
        if (rc == MB_OK)
            rc = mb_slurm_submit(dir, o->results, idx, n, out->array_job, sizeof(out->array_job),
                                 out->report_job, sizeof(out->report_job), err);
        out->submitted = rc == MB_OK;
    }
    free(idx);
    return rc;
}
