/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What became of each cell of an experiment submitted to Slurm, from what is on disk (cells.tsv,
 * submissions.jsonl, cell.json files, journals) and, for cells not recorded, from Slurm itself.
 */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "fleet/fleet_internal.h"
#include "migbench/fileio.h"
#include "migbench/results.h"
#include "results/cell.h"
#include "results/journal_events.h"
#include "results/results_json.h"
#include "base/text_internal.h"

#define CELLS_TSV_MAX (16u << 20)
#define SUBMISSIONS_MAX (16u << 20)
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
    case MB_SLURM_CELL_REQUEUED:
        return "requeued";
    case MB_SLURM_CELL_NOT_RUN:
        break;
    }
    return "not run";
}

/* The 6th column of a cells.tsv line (after index, run, repetition: mode, jobs, power limit). */
static void tsv_power_limit(const char *rest, char *out, size_t cap)
{
    out[0] = '\0';
    for (int col = 3; col < 5 && rest; col++)
        rest = strchr(rest + (*rest == '\t'), '\t');
    if (!rest || *rest != '\t')
        return;
    rest++;
    size_t n = strcspn(rest, "\t\r");
    if (n > 0 && n < cap) {
        memcpy(out, rest, n);
        out[n] = '\0';
    }
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
    tsv_power_limit(t2 + 1 + rep_len, c->power_limit, sizeof(c->power_limit));
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

/* The cell's recorded result, if any: done or failed, with the job that wrote it (cell.json's
 * one reader). */
static bool from_cell_json(const char *results, struct mb_slurm_cell *c)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/%s/%u/cell.json", results, c->run, c->rep);
    struct mb_cell_status cs;
    if (mb__cell_read_status(path, &cs, NULL) != MB_OK)
        return false;
    c->state = cs.ok ? MB_SLURM_CELL_DONE : MB_SLURM_CELL_FAILED;
    c->recorded = true;
    if (!cs.ok)
        mb__copy_str(c->why, sizeof(c->why),
                     cs.reason[0] ? cs.reason : "the cell recorded a failure");
    if (cs.slurm_job[0])
        mb__copy_str(c->job, sizeof(c->job), cs.slurm_job);
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
        struct mb_jev e;
        if (!mb_jev_decode(ev, &e) || !e.run || e.rep < 0 || strcmp(e.run, c->run) != 0 ||
            (unsigned)e.rep != c->rep)
            continue;
        if (e.kind == MB_JEV_CELL_STARTED) {
            open = true;
            mb__copy_str(job, cap, e.slurm_job ? e.slurm_job : "");
        } else if (e.kind == MB_JEV_CELL_FINISHED || e.kind == MB_JEV_CELL_FAILED) {
            open = false;
        }
    }
    return open;
}

/* Every line of submissions.jsonl, decoded by its one decoder (fleet_submissions.c). */
struct submissions {
    size_t n;
    struct mb__submission *v;
};

/*
 * From submissions.jsonl: the array task that last had this cell ("<array job>_<index>"), how
 * many submissions held it, and the attempt cap the last submission recorded.
 */
static void submitted_job(const struct submissions *subs, struct mb_slurm_cell *c, char *job,
                          size_t cap)
{
    c->attempts = 0;
    for (size_t k = 0; k < subs->n; k++) {
        const struct mb__submission *s = &subs->v[k];
        if (s->max_attempts)
            c->max_attempts = s->max_attempts;
        for (size_t i = 0; i < s->n_cells; i++) {
            if (s->cells[i] != c->index)
                continue;
            c->attempts++;
            if (s->array_job[0] && job)
                snprintf(job, cap, "%s_%zu", s->array_job, c->index);
        }
    }
}

static void free_submissions(struct submissions *subs)
{
    for (size_t k = 0; k < subs->n; k++)
        mb__submission_free(&subs->v[k]);
    free(subs->v);
    subs->v = NULL;
    subs->n = 0;
}

/* MB_OK with what the file holds (nothing when there is none; lines that are no object are
 * skipped), or MB_ENOMEM. */
static int read_submissions(const char *results, struct submissions *subs, struct mb_error *err)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/slurm/submissions.jsonl", results);
    subs->n = 0;
    subs->v = NULL;
    char *text = NULL;
    if (mb_file_read(path, SUBMISSIONS_MAX, &text, NULL, NULL) != MB_OK)
        return MB_OK;
    size_t lines = 1;
    for (const char *p = text; *p; p++)
        lines += *p == '\n';
    int rc = MB_OK;
    if (!(subs->v = calloc(lines, sizeof(*subs->v))))
        rc = mb_error_set(err, MB_ENOMEM, "out of memory");
    for (char *save = NULL, *l = rc == MB_OK ? strtok_r(text, "\n", &save) : NULL; l;
         l = strtok_r(NULL, "\n", &save)) {
        struct mb_error e;
        int drc = mb__submission_decode(l, &subs->v[subs->n], &e);
        if (drc == MB_OK) {
            subs->n++;
            continue;
        }
        mb__submission_free(&subs->v[subs->n]);
        if (drc == MB_ENOMEM) {
            rc = mb_error_set(err, MB_ENOMEM, "out of memory");
            break;
        }
    }
    free(text);
    if (rc != MB_OK)
        free_submissions(subs);
    return rc;
}

static bool live_state(const char *st)
{
    const char *live[] = {"PENDING",   "RUNNING",      "CONFIGURING", "COMPLETING",
                          "SUSPENDED", "REQUEUED",     "RESIZING",    "SIGNALING",
                          "STAGE_OUT", "REQUEUE_HOLD", "REQUEUE_FED"};
    for (size_t i = 0; i < sizeof(live) / sizeof(live[0]); i++)
        if (strcmp(st, live[i]) == 0)
            return true;
    return false;
}

static bool requeued_state(const char *st)
{
    return strcmp(st, "REQUEUED") == 0 || strcmp(st, "REQUEUE_HOLD") == 0 ||
           strcmp(st, "REQUEUE_FED") == 0;
}

/* A started cell without a result, from the state of its job. */
static void started_state(struct mb_slurm_cell *c, const char *st, bool asked)
{
    if (requeued_state(st) || strcmp(st, "PENDING") == 0) {
        /* It ran once and waits again: Slurm requeued it (scontrol requeue, a node failure). */
        c->state = MB_SLURM_CELL_REQUEUED;
    } else if (live_state(st)) {
        c->state = MB_SLURM_CELL_RUNNING;
    } else {
        c->state = MB_SLURM_CELL_FAILED;
        snprintf(c->why, sizeof(c->why), "started but ended without a result (Slurm: %s)",
                 st[0]   ? st
                 : asked ? "job no longer known"
                         : "not asked");
    }
}

/* A cell with no result: started (journal) or not, and what Slurm says of its job. */
static int unrecorded(struct mb_slurm_cell *c, const cJSON *events, mb_slurm_job_state_fn job_state,
                      void *ctx, struct mb_error *err)
{
    char job[64] = "";
    bool started = started_unfinished(events, c, job, sizeof(job));
    if (!job[0])
        mb__copy_str(job, sizeof(job), c->job);
    mb__copy_str(c->job, sizeof(c->job), job);
    char st[64] = "";
    if (job[0] && job_state) {
        int rc = job_state(ctx, job, st, sizeof(st), err);
        if (rc != MB_OK)
            return rc;
    }
    if (started)
        started_state(c, st, job_state != NULL);
    else if (requeued_state(st))
        c->state = MB_SLURM_CELL_REQUEUED;
    else if (strcmp(st, "PENDING") == 0)
        c->state = MB_SLURM_CELL_QUEUED;
    else if (live_state(st))
        c->state = MB_SLURM_CELL_RUNNING;
    else if (st[0]) {
        c->state = MB_SLURM_CELL_FAILED;
        snprintf(c->why, sizeof(c->why), "its task ended before the cell started (Slurm: %s)", st);
    } else {
        c->state = MB_SLURM_CELL_NOT_RUN;
    }
    return MB_OK;
}

/*
 * A cell recorded as failed whose resubmitted task (job) has not started it yet: queued,
 * requeued or running while that task lives, else still failed.
 */
static int resubmitted(struct mb_slurm_cell *c, const char *job, mb_slurm_job_state_fn job_state,
                       void *ctx, struct mb_error *err)
{
    char st[64] = "";
    if (!job_state)
        return MB_OK;
    int rc = job_state(ctx, job, st, sizeof(st), err);
    if (rc != MB_OK || !live_state(st))
        return rc;
    c->state = requeued_state(st)           ? MB_SLURM_CELL_REQUEUED
               : strcmp(st, "PENDING") == 0 ? MB_SLURM_CELL_QUEUED
                                            : MB_SLURM_CELL_RUNNING;
    c->recorded = false;
    c->why[0] = '\0';
    mb__copy_str(c->job, sizeof(c->job), job);
    return MB_OK;
}

/* A failed cell that has had its attempts says so, and that submit leaves it. */
static void note_attempts(struct mb_slurm_cell *c)
{
    if (c->state != MB_SLURM_CELL_FAILED || !c->max_attempts || c->attempts < c->max_attempts)
        return;
    size_t n = strlen(c->why);
    snprintf(c->why + n, sizeof(c->why) - n, "%s%u of %u attempts: not resubmitted", n ? "; " : "",
             c->attempts, c->max_attempts);
}

/* Status from <results>/<sub>/cells.tsv (sub "slurm" or "k8s"). */
static int fleet_status(const char *results, const char *sub, mb_slurm_job_state_fn job_state,
                        void *ctx, struct mb_slurm_cell **out, size_t *n, struct mb_error *err)
{
    *out = NULL;
    *n = 0;
    char path[4200];
    snprintf(path, sizeof(path), "%s/%s/cells.tsv", results, sub);
    struct mb_slurm_cell *cells = NULL;
    size_t nc = 0;
    int rc = read_cells_tsv(path, &cells, &nc, err);
    if (rc == MB_ENOTFOUND)
        mb_error_set(err, MB_ENOTFOUND,
                     "%s: no cells.tsv (was this submitted with migbench %s submit?)", path,
                     strcmp(sub, "k8s") == 0 ? "k8s" : "slurm");
    if (rc != MB_OK)
        return rc;
    cJSON *events = read_journals(results);
    struct submissions subs;
    rc = read_submissions(results, &subs, err);
    if (rc == MB_OK && !events)
        rc = mb_error_set(err, MB_ENOMEM, "out of memory");
    for (size_t i = 0; rc == MB_OK && i < nc; i++) {
        char sub_job[64] = "";
        submitted_job(&subs, &cells[i], sub_job, sizeof(sub_job));
        cells[i].job[0] = '\0';
        if (!from_cell_json(results, &cells[i])) {
            mb__copy_str(cells[i].job, sizeof(cells[i].job), sub_job);
            rc = unrecorded(&cells[i], events, job_state, ctx, err);
        } else if (cells[i].state == MB_SLURM_CELL_FAILED && sub_job[0] &&
                   strcmp(sub_job, cells[i].job) != 0) {
            rc = resubmitted(&cells[i], sub_job, job_state, ctx, err);
        }
        if (!cells[i].job[0]) /* a result that names no job: the task given it */
            mb__copy_str(cells[i].job, sizeof(cells[i].job), sub_job);
        note_attempts(&cells[i]);
    }
    cJSON_Delete(events);
    free_submissions(&subs);
    if (rc != MB_OK) {
        free(cells);
        return rc;
    }
    *out = cells;
    *n = nc;
    return MB_OK;
}

int mb_k8s_status(const char *results, struct mb_slurm_cell **out, size_t *n, struct mb_error *err)
{
    return fleet_status(results, "k8s", NULL, NULL, out, n, err);
}

int mb_slurm_status(const char *results, mb_slurm_job_state_fn job_state, void *ctx,
                    struct mb_slurm_cell **out, size_t *n, struct mb_error *err)
{
    return fleet_status(results, "slurm", job_state, ctx, out, n, err);
}

/* The cells of a resubmission, checking that cells.tsv still describes this experiment. */
static int cells_to_resubmit(const struct mb_experiment *exp, const struct mb_cell *cells,
                             size_t n_cells, const struct mb_slurm_cell *st, size_t n_st,
                             size_t *idx, struct mb_slurm_submission *out, struct mb_error *err)
{
    out->n = 0;
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
        if (st[i].state != MB_SLURM_CELL_FAILED && st[i].state != MB_SLURM_CELL_NOT_RUN)
            continue; /* done, or queued, requeued or running now */
        if (st[i].attempts >= out->max_attempts)
            out->n_capped++;
        else
            idx[out->n++] = i;
    }
    return MB_OK;
}

/*
 * Takes <results>/slurm/submit.lock for this process (flock, released when it exits or by
 * unlock_submit), writing its pid into it; MB_EBUSY naming the holder when another has it.
 */
static int lock_submit(const char *dir, int *fd, struct mb_error *err)
{
    char path[4300];
    snprintf(path, sizeof(path), "%s/submit.lock", dir);
    int rc = mb_results_mkdirs(dir, 0755, err);
    if (rc != MB_OK)
        return rc;
    *fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (*fd < 0)
        return mb_error_set(err, MB_EIO, "%s: %s", path, strerror(errno));
    if (flock(*fd, LOCK_EX | LOCK_NB) != 0) {
        char pid[32] = "";
        ssize_t got = pread(*fd, pid, sizeof(pid) - 1, 0);
        pid[got > 0 ? got : 0] = '\0';
        pid[strcspn(pid, "\n")] = '\0';
        close(*fd);
        *fd = -1;
        return mb_error_set(err, MB_EBUSY,
                            "another submitter (pid %s) is submitting into %s now (it holds "
                            "%s): wait until it has finished, then see `migbench slurm status`",
                            pid[0] ? pid : "unknown", dir, path);
    }
    char line[32];
    int len = snprintf(line, sizeof(line), "%ld\n", (long)getpid());
    if (ftruncate(*fd, 0) != 0 || pwrite(*fd, line, (size_t)len, 0) != len) {
        /* The pid is only for the message of a second submitter; the lock holds regardless. */
    }
    return MB_OK;
}

/* The indices to submit into results: all cells, or after an earlier submission those due. */
static int due_cells(const struct mb_experiment *exp, const struct mb_cell *cells, size_t n_cells,
                     const struct mb_slurm_array_opts *o, const char *tsv,
                     mb_slurm_job_state_fn job_state, void *ctx, size_t *idx,
                     struct mb_slurm_submission *out, struct mb_error *err)
{
    out->n = n_cells;
    for (size_t i = 0; i < n_cells; i++)
        idx[i] = i;
    if (access(tsv, F_OK) != 0)
        return MB_OK;
    struct mb_slurm_cell *st = NULL;
    size_t n_st = 0;
    int rc = mb_slurm_status(o->results, job_state, ctx, &st, &n_st, err);
    if (rc == MB_OK)
        rc = cells_to_resubmit(exp, cells, n_cells, st, n_st, idx, out, err);
    free(st);
    return rc;
}

int mb_slurm_submit_experiment(const struct mb_experiment *exp, const struct mb_cell *cells,
                               size_t n_cells, const struct mb_slurm_array_opts *o,
                               const char *emit_dir, mb_slurm_job_state_fn job_state, void *ctx,
                               struct mb_slurm_submission *out, struct mb_error *err)
{
    memset(out, 0, sizeof(*out));
    out->max_attempts = o->max_attempts ? o->max_attempts : MB_SLURM_MAX_ATTEMPTS_DEFAULT;
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
    int lock = -1;
    int rc = lock_submit(dir, &lock, err);
    if (rc == MB_OK)
        rc = due_cells(exp, cells, n_cells, o, tsv, job_state, ctx, idx, out, err);
    if (rc == MB_OK && out->n > 0) {
        out->first = idx[0];
        out->last = idx[out->n - 1];
        rc = mb_slurm_write_array(exp, cells, n_cells, idx, out->n, o, dir, err);
        if (rc == MB_OK)
            rc = mb_slurm_submit(dir, o->results, idx, out->n, out->max_attempts, out->array_job,
                                 sizeof(out->array_job), out->report_job, sizeof(out->report_job),
                                 err);
        out->submitted = rc == MB_OK;
    }
    if (lock >= 0)
        close(lock);
    free(idx);
    return rc;
}
