/* SPDX-License-Identifier: Apache-2.0 */
/* Live status files of running experiments (see migbench/live.h). */
#include "migbench/live.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "migbench/fileio.h"
#include "base/json_io.h"
#include "monitor/live_internal.h"

int mb__live_dir_check(const char *dir, struct mb_error *err)
{
    struct stat st;
    if (lstat(dir, &st) != 0) {
        if (errno == ENOENT)
            return MB_OK; /* made by the first writer, mode 0700 */
        return mb_error_set(err, MB_EIO, "runtime directory %s: %s", dir, strerror(errno));
    }
    if (!S_ISDIR(st.st_mode))
        return mb_error_set(err, MB_EPERM, "runtime directory %s: not a directory%s", dir,
                            S_ISLNK(st.st_mode) ? " (a symbolic link)" : "");
    if (st.st_uid != geteuid())
        return mb_error_set(err, MB_EPERM,
                            "runtime directory %s: owned by uid %lu, not by you (uid %lu); "
                            "another user's live files are not read or written; remove it or "
                            "set MIGBENCH_RUNTIME_DIR",
                            dir, (unsigned long)st.st_uid, (unsigned long)geteuid());
    if (st.st_mode & (S_IWGRP | S_IWOTH))
        return mb_error_set(err, MB_EPERM,
                            "runtime directory %s: mode %04o lets others write to it; "
                            "chmod 700 it or set MIGBENCH_RUNTIME_DIR",
                            dir, (unsigned)(st.st_mode & 07777));
    return MB_OK;
}

int mb_live_dir(char *out, size_t cap, struct mb_error *err)
{
    const char *env = getenv("MIGBENCH_RUNTIME_DIR");
    const char *xdg = getenv("XDG_RUNTIME_DIR");
    int n;
    if (env && env[0])
        n = snprintf(out, cap, "%s", env);
    else if (xdg && xdg[0])
        n = snprintf(out, cap, "%s/migbench", xdg);
    else
        n = snprintf(out, cap, "/tmp/migbench-%lu", (unsigned long)getuid());
    if (n < 0 || (size_t)n >= cap)
        return mb_error_set(err, MB_ERANGE, "runtime directory path too long");
    return mb__live_dir_check(out, err);
}

static int file_path(char *out, size_t cap, const char *dir, long pid)
{
    int n = snprintf(out, cap, "%s/run-%ld.json", dir, pid);
    return n < 0 || (size_t)n >= cap ? MB_ERANGE : MB_OK;
}

static void put_str(cJSON *o, const char *k, const char *v)
{
    cJSON_AddStringToObject(o, k, v);
}

int mb_live_write(const char *dir, const struct mb_live_cell *c, struct mb_error *err)
{
    char path[MB_LIVE_PATH_MAX + 64];
    if (file_path(path, sizeof(path), dir, c->pid))
        return mb_error_set(err, MB_ERANGE, "%s: runtime directory path too long", dir);
    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
        return mb_error_set(err, MB_EIO, "%s: cannot create: %s", dir, strerror(errno));
    int dirc = mb__live_dir_check(dir, err);
    if (dirc != MB_OK)
        return dirc;
    cJSON *o = cJSON_CreateObject();
    cJSON *jobs = o ? cJSON_AddArrayToObject(o, "jobs") : NULL;
    if (!jobs) {
        cJSON_Delete(o);
        return mb_error_set(err, MB_ENOMEM, "out of memory");
    }
    cJSON_AddNumberToObject(o, "pid", (double)c->pid);
    put_str(o, "experiment", c->experiment);
    put_str(o, "results_dir", c->results_dir);
    put_str(o, "device", c->device_spec);
    put_str(o, "device_uuid", c->device_uuid);
    put_str(o, "run", c->run);
    put_str(o, "mode", c->mode);
    cJSON_AddNumberToObject(o, "rep", c->rep);
    cJSON_AddNumberToObject(o, "cell_index", (double)c->cell_index);
    cJSON_AddNumberToObject(o, "cells", (double)c->n_cells);
    put_str(o, "phase", c->phase);
    cJSON_AddNumberToObject(o, "elapsed_s", c->elapsed_s);
    cJSON_AddNumberToObject(o, "window_s", c->window_s);
    cJSON_AddNumberToObject(o, "window_target_s", c->window_target_s);
    if (c->power_valid)
        cJSON_AddNumberToObject(o, "power_w", c->power_w);
    else
        cJSON_AddNullToObject(o, "power_w");
    for (size_t i = 0; i < c->n_jobs && i < MB_LIVE_JOBS_MAX; i++) {
        cJSON *j = cJSON_CreateObject();
        if (!j)
            break;
        put_str(j, "name", c->jobs[i].name);
        put_str(j, "unit", c->jobs[i].unit);
        if (c->jobs[i].rate_valid)
            cJSON_AddNumberToObject(j, "rate", c->jobs[i].rate);
        else
            cJSON_AddNullToObject(j, "rate");
        cJSON_AddItemToArray(jobs, j);
    }
    int rc = mb_file_write_json_atomic(path, o, 0600, err);
    cJSON_Delete(o);
    return rc;
}

void mb_live_remove(const char *dir, long pid)
{
    char path[MB_LIVE_PATH_MAX + 64];
    if (file_path(path, sizeof(path), dir, pid) == MB_OK)
        (void)unlink(path);
}

/* ---- reading: another user's file in a shared directory is outside input -------------- */

/*
 * True when s is UTF-8 without control characters: no C0 (newline, ESC, ...), no DEL and no C1
 * (U+0080..U+009F, which a terminal takes as CSI and friends). Such a string would reach a
 * terminal (monitor) or a Prometheus textfile verbatim.
 */
static bool printable_utf8(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        unsigned char b = *p;
        if (b < 0x20 || b == 0x7f)
            return false;
        if (b < 0x80) {
            p++;
            continue;
        }
        size_t n = b >= 0xf0 && b <= 0xf4 ? 3 : b >= 0xe0 ? 2 : b >= 0xc2 && b < 0xe0 ? 1 : 0;
        if (n == 0 || (b >= 0xe0 && b > 0xf4))
            return false;
        for (size_t i = 1; i <= n; i++)
            if ((p[i] & 0xc0) != 0x80)
                return false;
        if (b == 0xc2 && p[1] < 0xa0)
            return false; /* C1 controls */
        p += n + 1;
    }
    return true;
}

static int get_str(const cJSON *o, const char *k, char *out, size_t cap, const char *src,
                   struct mb_error *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    out[0] = '\0';
    if (!v || cJSON_IsNull(v))
        return MB_OK;
    if (!cJSON_IsString(v))
        return mb_error_set(err, MB_EPARSE, "%s: field '%s': expected a string", src, k);
    if (strlen(v->valuestring) >= cap)
        return mb_error_set(err, MB_EPARSE, "%s: field '%s': longer than %zu bytes", src, k,
                            cap - 1);
    if (!printable_utf8(v->valuestring))
        return mb_error_set(err, MB_EPARSE,
                            "%s: field '%s': holds control characters or is not UTF-8", src, k);
    snprintf(out, cap, "%s", v->valuestring);
    return MB_OK;
}

/* A number of field k in lo..hi; absent is 0 (null too, when *valid is given: then false). */
static int get_num(const cJSON *o, const char *k, double lo, double hi, bool whole, double *out,
                   bool *valid, const char *src, struct mb_error *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    *out = 0;
    if (valid)
        *valid = false;
    if (!v || (valid && cJSON_IsNull(v)))
        return MB_OK;
    double x = cJSON_IsNumber(v) ? v->valuedouble : NAN;
    if (!(x >= lo && x <= hi) || (whole && x != floor(x)))
        return mb_error_set(err, MB_EPARSE, "%s: field '%s': expected a %snumber in %g..%g", src, k,
                            whole ? "whole " : "", lo, hi);
    *out = x;
    if (valid)
        *valid = true;
    return MB_OK;
}

#define STR(key, member) get_str(o, key, c->member, sizeof(c->member), src, err)

/* The cell's strings and numbers, each checked; the first bad field refuses the file. */
static int parse_fields(const cJSON *o, struct mb_live_cell *c, const char *src,
                        struct mb_error *err)
{
    double pid, rep, ci, nc;
    bool ok;
    int rc;
    if ((rc = get_num(o, "pid", 1, 4194304, true, &pid, &ok, src, err)) != MB_OK)
        return rc;
    if (!ok)
        return mb_error_set(err, MB_EPARSE, "%s: field 'pid': missing", src);
    c->pid = (long)pid;
    if ((rc = STR("experiment", experiment)) || (rc = STR("results_dir", results_dir)) ||
        (rc = STR("device", device_spec)) || (rc = STR("device_uuid", device_uuid)) ||
        (rc = STR("run", run)) || (rc = STR("mode", mode)) || (rc = STR("phase", phase)))
        return rc;
    if ((rc = get_num(o, "rep", 0, 1e6, true, &rep, NULL, src, err)) ||
        (rc = get_num(o, "cells", 0, 1e9, true, &nc, NULL, src, err)) ||
        (rc = get_num(o, "cell_index", 0, nc > 0 ? nc - 1 : 0, true, &ci, NULL, src, err)))
        return rc;
    c->rep = (unsigned)rep;
    c->cell_index = (size_t)ci;
    c->n_cells = (size_t)nc;
    /* Times up to a year; a window is never longer than the cell it is in. */
    if ((rc = get_num(o, "elapsed_s", 0, 3.2e7, false, &c->elapsed_s, NULL, src, err)) ||
        (rc =
             get_num(o, "window_target_s", 0, 3.2e7, false, &c->window_target_s, NULL, src, err)) ||
        (rc = get_num(o, "window_s", 0, 3.2e7, false, &c->window_s, NULL, src, err)) ||
        (rc = get_num(o, "power_w", 0, 1e5, false, &c->power_w, &c->power_valid, src, err)))
        return rc;
    return MB_OK;
}

static int parse_jobs(const cJSON *o, struct mb_live_cell *c, const char *src, struct mb_error *err)
{
    const cJSON *jobs = cJSON_GetObjectItemCaseSensitive(o, "jobs");
    if (jobs && !cJSON_IsArray(jobs))
        return mb_error_set(err, MB_EPARSE, "%s: field 'jobs': expected a list", src);
    if (cJSON_GetArraySize(jobs) > MB_LIVE_JOBS_MAX)
        return mb_error_set(err, MB_EPARSE, "%s: field 'jobs': more than %d jobs", src,
                            MB_LIVE_JOBS_MAX);
    const cJSON *j;
    cJSON_ArrayForEach(j, jobs)
    {
        if (!cJSON_IsObject(j))
            return mb_error_set(err, MB_EPARSE, "%s: field 'jobs': expected objects", src);
        struct mb_live_job *lj = &c->jobs[c->n_jobs++];
        int rc;
        if ((rc = get_str(j, "name", lj->name, sizeof(lj->name), src, err)) ||
            (rc = get_str(j, "unit", lj->unit, sizeof(lj->unit), src, err)) ||
            (rc = get_num(j, "rate", 0, 1e15, false, &lj->rate, &lj->rate_valid, src, err)))
            return rc;
    }
    return MB_OK;
}

int mb__live_parse(const char *text, size_t len, const char *src, struct mb_live_cell *c,
                   struct mb_error *err)
{
    memset(c, 0, sizeof(*c));
    cJSON *o = NULL;
    int rc = mb_json_parse(text, len, src, &o, err);
    if (rc == MB_OK && !cJSON_IsObject(o))
        rc = mb_error_set(err, MB_EPARSE, "%s: not a live file (a JSON object)", src);
    if (rc == MB_OK)
        rc = parse_fields(o, c, src, err);
    if (rc == MB_OK)
        rc = parse_jobs(o, c, src, err);
    cJSON_Delete(o);
    if (rc != MB_OK)
        memset(c, 0, sizeof(*c));
    return rc;
}

static int by_pid(const void *a, const void *b)
{
    long x = ((const struct mb_live_cell *)a)->pid, y = ((const struct mb_live_cell *)b)->pid;
    return (x > y) - (x < y);
}

int mb_live_scan(const char *dir, struct mb_live_cell *out, size_t cap, size_t *n,
                 struct mb_error *err)
{
    *n = 0;
    int rc = mb__live_dir_check(dir, err);
    if (rc != MB_OK)
        return rc;
    DIR *d = opendir(dir);
    if (!d) {
        if (errno == ENOENT)
            return MB_OK;
        return mb_error_set(err, MB_EIO, "%s: cannot open: %s", dir, strerror(errno));
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL && *n < cap) {
        long pid;
        char tail[8];
        /* run-PID.json exactly: temporary files of the atomic writer have a longer suffix. */
        if (sscanf(e->d_name, "run-%ld%7s", &pid, tail) != 2 || strcmp(tail, ".json") != 0)
            continue;
        if (pid < 1 || (kill((pid_t)pid, 0) != 0 && errno == ESRCH))
            continue; /* its run is gone (killed without cleaning up) */
        char path[MB_LIVE_PATH_MAX + 300];
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        char *text = NULL;
        size_t len = 0;
        if (mb_file_read(path, MB_LIVE_FILE_MAX, &text, &len, NULL) != MB_OK)
            continue;
        if (mb__live_parse(text, len, path, &out[*n], NULL) == MB_OK && out[*n].pid == pid)
            (*n)++;
        free(text);
    }
    closedir(d);
    qsort(out, *n, sizeof(*out), by_pid);
    return MB_OK;
}
