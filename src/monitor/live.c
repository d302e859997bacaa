/* SPDX-License-Identifier: Apache-2.0 */
/* Live status files of running experiments (see migbench/live.h). */
#include "migbench/live.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "migbench/fileio.h"
#include "base/json_io.h"

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
    return MB_OK;
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

static void get_str(const cJSON *o, const char *k, char *out, size_t cap)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    snprintf(out, cap, "%s", cJSON_IsString(v) ? v->valuestring : "");
}

static double get_num(const cJSON *o, const char *k, bool *ok)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    if (ok)
        *ok = cJSON_IsNumber(v);
    return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

static bool parse_cell(const char *text, size_t len, const char *path, struct mb_live_cell *c)
{
    cJSON *o = NULL;
    /* Another user's file in a shared runtime directory is outside input like any other. */
    if (mb_json_parse(text, len, path, &o, NULL) != MB_OK || !cJSON_IsObject(o)) {
        cJSON_Delete(o);
        return false;
    }
    memset(c, 0, sizeof(*c));
    bool ok;
    double pid = get_num(o, "pid", &ok);
    if (!ok || pid < 1 || pid > 1e9) {
        cJSON_Delete(o);
        return false;
    }
    c->pid = (long)pid;
    get_str(o, "experiment", c->experiment, sizeof(c->experiment));
    get_str(o, "results_dir", c->results_dir, sizeof(c->results_dir));
    get_str(o, "device", c->device_spec, sizeof(c->device_spec));
    get_str(o, "device_uuid", c->device_uuid, sizeof(c->device_uuid));
    get_str(o, "run", c->run, sizeof(c->run));
    get_str(o, "mode", c->mode, sizeof(c->mode));
    get_str(o, "phase", c->phase, sizeof(c->phase));
    double rep = get_num(o, "rep", NULL);
    c->rep = rep >= 0 && rep < 1e6 ? (unsigned)rep : 0;
    double ci = get_num(o, "cell_index", NULL), nc = get_num(o, "cells", NULL);
    c->cell_index = ci >= 0 && ci < 1e9 ? (size_t)ci : 0;
    c->n_cells = nc >= 0 && nc < 1e9 ? (size_t)nc : 0;
    c->elapsed_s = get_num(o, "elapsed_s", NULL);
    c->window_s = get_num(o, "window_s", NULL);
    c->window_target_s = get_num(o, "window_target_s", NULL);
    c->power_w = get_num(o, "power_w", &c->power_valid);
    const cJSON *jobs = cJSON_GetObjectItemCaseSensitive(o, "jobs");
    const cJSON *j;
    cJSON_ArrayForEach(j, jobs)
    {
        if (c->n_jobs == MB_LIVE_JOBS_MAX)
            break;
        struct mb_live_job *lj = &c->jobs[c->n_jobs++];
        get_str(j, "name", lj->name, sizeof(lj->name));
        get_str(j, "unit", lj->unit, sizeof(lj->unit));
        lj->rate = get_num(j, "rate", &lj->rate_valid);
    }
    cJSON_Delete(o);
    return true;
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
        if (parse_cell(text, len, path, &out[*n]) && out[*n].pid == pid)
            (*n)++;
        free(text);
    }
    closedir(d);
    qsort(out, *n, sizeof(*out), by_pid);
    return MB_OK;
}
