/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Talking to Slurm: its commands run from argv vectors (never a shell), the job array and its
 * report job submitted, and what became of each cell: recorded (cell.json), started but not
 * recorded (the journal), or not started, with the job's state from squeue.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fleet/fleet_internal.h"
#include "migbench/fileio.h"
#include "migbench/proc.h"
#include "migbench/results.h"
#include "base/text_internal.h"

#define CMD_OUT_MAX 4096

struct capture {
    char out[CMD_OUT_MAX];
    size_t n_out;
    char errs[512];
    size_t n_err;
};

static void on_data(void *ctx, enum mb_proc_stream stream, const char *buf, size_t n, int64_t t_ns)
{
    (void)t_ns;
    struct capture *c = ctx;
    char *dst = stream == MB_PROC_STDOUT ? c->out : c->errs;
    size_t *len = stream == MB_PROC_STDOUT ? &c->n_out : &c->n_err;
    size_t cap = stream == MB_PROC_STDOUT ? sizeof(c->out) : sizeof(c->errs);
    if (stream == MB_PROC_PROGRESS || *len + 1 >= cap)
        return;
    size_t take = n < cap - 1 - *len ? n : cap - 1 - *len;
    memcpy(dst + *len, buf, take);
    *len += take;
    dst[*len] = '\0';
}

static void chomp(char *s)
{
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' '))
        s[--n] = '\0';
}

int mb_fleet_command(char *const *argv, char *out, size_t cap, int timeout_ms, struct mb_error *err)
{
    struct capture *c = calloc(1, sizeof(*c));
    if (!c)
        return mb_error_set(err, MB_ENOMEM, "out of memory");
    struct mb_proc_spec spec = {.argv = argv,
                                .stdin_null = true,
                                .capture = true,
                                .tee_stdout_fd = -1,
                                .tee_stderr_fd = -1,
                                .on_data = on_data,
                                .ctx = c};
    struct mb_proc *p = NULL;
    int rc = mb_proc_spawn(&spec, &p, err);
    if (rc == MB_OK) {
        rc = mb_proc_wait(p, timeout_ms, err);
        if (rc == MB_ETIMEDOUT)
            rc = mb_error_set(err, MB_ETIMEDOUT, "%s: no answer after %d ms", argv[0], timeout_ms);
    }
    if (rc == MB_OK && mb_proc_exit_code(p) != 0) {
        c->errs[strcspn(c->errs, "\n")] = '\0';
        rc = mb_error_set(err, MB_ECHILD, "%s exited with status %d%s%s", argv[0],
                          mb_proc_exit_code(p), c->errs[0] ? ": " : "", c->errs);
    }
    mb_proc_destroy(p);
    if (cap > 0) {
        mb__copy_str(out, cap, c->out);
        chomp(out);
    }
    free(c);
    return rc;
}

/* "123" or "123;cluster" from sbatch --parsable: the job id, checked to be a number. */
static int parsable_id(const char *text, char *id, size_t cap, struct mb_error *err)
{
    size_t n = strcspn(text, ";\n");
    if (n == 0 || n >= cap || strspn(text, "0123456789") != n)
        return mb_error_set(err, MB_EPARSE, "sbatch answered '%.80s', not a job id", text);
    memcpy(id, text, n);
    id[n] = '\0';
    return MB_OK;
}

static int record_submission(const char *results, const char *array_job, const char *report_job,
                             const size_t *indices, size_t n, unsigned max_attempts,
                             struct mb_error *err)
{
    struct mb__submission sub = {.submitted_unix = (long long)time(NULL),
                                 .max_attempts = max_attempts,
                                 .cells = indices,
                                 .n_cells = n};
    mb__copy_str(sub.array_job, sizeof(sub.array_job), array_job);
    mb__copy_str(sub.report_job, sizeof(sub.report_job), report_job);
    char *line = NULL;
    int rc = mb__submission_encode(&sub, false, &line, err);
    if (rc != MB_OK)
        return rc;
    char path[4200];
    snprintf(path, sizeof(path), "%s/slurm/submissions.jsonl", results);
    FILE *f = fopen(path, "a");
    if (!f || fprintf(f, "%s\n", line) < 0 || fflush(f) != 0)
        rc = mb_error_set(err, MB_EIO, "%s: %s", path, strerror(errno));
    if (f && fclose(f) != 0 && rc == MB_OK)
        rc = mb_error_set(err, MB_EIO, "%s: %s", path, strerror(errno));
    free(line);
    return rc;
}

int mb_slurm_submit(const char *dir, const char *results, const size_t *indices, size_t n,
                    unsigned max_attempts, char *array_job, size_t array_cap, char *report_job,
                    size_t report_cap, struct mb_error *err)
{
    char out_dir[4200], array_path[4200], report_path[4200], dep[128], answer[CMD_OUT_MAX];
    snprintf(out_dir, sizeof(out_dir), "%s/slurm", results);
    snprintf(array_path, sizeof(array_path), "%s/array.sbatch", dir);
    snprintf(report_path, sizeof(report_path), "%s/report.sbatch", dir);
    int rc = mb_results_mkdirs(out_dir, 0755, err);
    if (rc != MB_OK)
        return rc;
    char *a1[] = {"sbatch", "--parsable", array_path, NULL};
    rc = mb_fleet_command(a1, answer, sizeof(answer), 60000, err);
    if (rc == MB_OK)
        rc = parsable_id(answer, array_job, array_cap, err);
    if (rc != MB_OK) {
        mb_error_prefix(err, "submitting the job array: ");
        return rc;
    }
    snprintf(dep, sizeof(dep), "--dependency=afterany:%s", array_job);
    char *a2[] = {"sbatch", "--parsable", dep, report_path, NULL};
    rc = mb_fleet_command(a2, answer, sizeof(answer), 60000, err);
    if (rc == MB_OK)
        rc = parsable_id(answer, report_job, report_cap, err);
    if (rc != MB_OK)
        mb_error_prefix(err, "job array %s submitted; its report job: ", array_job);
    else
        rc = record_submission(results, array_job, report_job, indices, n, max_attempts, err);
    return rc;
}

/* The value of " KEY=" in a `scontrol -o` line into out ("" when absent). */
static void scontrol_field(const char *line, const char *key, char *out, size_t cap)
{
    out[0] = '\0';
    size_t kl = strlen(key);
    for (const char *p = line; (p = strstr(p, key)) != NULL; p += kl) {
        if ((p != line && p[-1] != ' ') || p[kl] != '=')
            continue;
        p += kl + 1;
        size_t n = strcspn(p, " \n");
        if (n < cap) {
            memcpy(out, p, n);
            out[n] = '\0';
        }
        return;
    }
}

/* A job slurmctld has forgotten, from accounting (""when there is none). */
static void sacct_state(const char *job, char *state, size_t cap)
{
    char jarg[80], out[CMD_OUT_MAX];
    snprintf(jarg, sizeof(jarg), "%s", job);
    char *argv[] = {"sacct", "-n", "-X", "-P", "-o", "State", "-j", jarg, NULL};
    state[0] = '\0';
    if (mb_fleet_command(argv, out, sizeof(out), 60000, NULL) != MB_OK)
        return;
    out[strcspn(out, "\n ")] = '\0'; /* "CANCELLED by 0" -> "CANCELLED" */
    mb__copy_str(state, cap, out);
}

int mb_slurm_squeue_state(void *ctx, const char *job, char *state, size_t cap, struct mb_error *err)
{
    (void)ctx;
    char jarg[80];
    snprintf(jarg, sizeof(jarg), "%s", job);
    char *argv[] = {"scontrol", "-o", "show", "job", jarg, NULL};
    char out[CMD_OUT_MAX];
    struct mb_error e;
    int rc = mb_fleet_command(argv, out, sizeof(out), 60000, &e);
    if (rc == MB_ECHILD && strstr(e.msg, "Invalid job id")) {
        sacct_state(job, state, cap); /* gone from slurmctld's memory */
        return MB_OK;
    }
    if (rc != MB_OK) {
        if (err)
            *err = e;
        return rc;
    }
    out[strcspn(out, "\n")] = '\0';
    char st[64], restarts[32];
    scontrol_field(out, "JobState", st, sizeof(st));
    scontrol_field(out, "Restarts", restarts, sizeof(restarts));
    /* Pending after a restart: requeued (scontrol requeue, a node failure), waiting again. */
    if (strcmp(st, "PENDING") == 0 && restarts[0] && strcmp(restarts, "0") != 0)
        mb__copy_str(state, cap, "REQUEUED");
    else
        mb__copy_str(state, cap, st);
    return MB_OK;
}
