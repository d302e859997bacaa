/* SPDX-License-Identifier: Apache-2.0 */
/* The results directory: atomic JSON files and cell paths. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "results/results_json.h"
#include "migbench/fileio.h"
#include "migbench/results.h"

int mb_results_mkdirs(const char *path, mode_t mode, struct mb_error *err)
{
    char buf[1024];
    if (strlen(path) >= sizeof(buf))
        return mb_error_set(err, MB_ERANGE, "path too long: %s", path);
    snprintf(buf, sizeof(buf), "%s", path);
    for (char *p = buf + 1;; p++) {
        if (*p == '/' || *p == '\0') {
            char saved = *p;
            *p = '\0';
            if (mkdir(buf, mode) != 0 && errno != EEXIST)
                return mb_error_set(err, MB_EIO, "cannot create directory %s: %s", buf,
                                    strerror(errno));
            struct stat st;
            if (stat(buf, &st) != 0 || !S_ISDIR(st.st_mode))
                return mb_error_set(err, MB_EIO, "%s is not a directory", buf);
            *p = saved;
            if (!saved)
                break;
        }
    }
    return MB_OK;
}

int mb_results_write_json(const char *path, const cJSON *obj, struct mb_error *err)
{
    return mb_file_write_json_atomic(path, obj, 0644, err);
}

int mb_results_read_json(const char *path, size_t max_bytes, cJSON **out, struct mb_error *err)
{
    *out = NULL;
    char *buf = NULL;
    int rc = mb_file_read(path, max_bytes, &buf, NULL, err);
    if (rc == MB_ERANGE) /* this function's contract says MB_EIO for an oversized file */
        rc = mb_error_restatus(err, MB_EIO);
    if (rc != MB_OK)
        return rc;
    rc = mb_json_parse(buf, strlen(buf), path, out, err);
    free(buf);
    return rc;
}

int mb_results_cell_dir(const char *dir, const char *run, unsigned rep, char *out, size_t cap,
                        struct mb_error *err)
{
    int n = snprintf(out, cap, "%s/%s/%u", dir, run, rep);
    if (n < 0 || (size_t)n >= cap)
        return mb_error_set(err, MB_ERANGE, "results path too long: %s/%s", dir, run);
    return MB_OK;
}

bool mb_results_cell_done(const char *dir, const char *run, unsigned rep)
{
    char path[1200];
    int n = snprintf(path, sizeof(path), "%s/%s/%u/cell.json", dir, run, rep);
    if (n < 0 || (size_t)n >= sizeof(path))
        return false;
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

int mb_results_cell_claim(const char *dir, const char *run, unsigned rep, int *fd,
                          struct mb_error *err)
{
    *fd = -1;
    char parent[1100], path[1200];
    int n = snprintf(parent, sizeof(parent), "%s/%s", dir, run);
    int m = snprintf(path, sizeof(path), "%s/%s/%u.claim", dir, run, rep);
    if (n < 0 || (size_t)n >= sizeof(parent) || m < 0 || (size_t)m >= sizeof(path))
        return mb_error_set(err, MB_ERANGE, "results path too long: %s/%s", dir, run);
    int rc = mb_results_mkdirs(parent, 0755, err);
    if (rc != MB_OK)
        return rc;
    int f = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (f < 0)
        return mb_error_set(err, MB_EIO, "%s: cannot open: %s", path, strerror(errno));
    while (flock(f, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        if (e == EINTR)
            continue;
        close(f);
        if (e == EWOULDBLOCK)
            return mb_error_set(err, MB_EBUSY, "%s %u is running in another invocation", run, rep);
        return mb_error_set(err, MB_EIO, "%s: cannot lock: %s", path, strerror(e));
    }
    *fd = f;
    return MB_OK;
}

void mb_results_cell_release(int fd)
{
    if (fd >= 0)
        close(fd); /* closing the only descriptor drops the lock */
}
