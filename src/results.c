/* The results directory: atomic JSON files and cell paths. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

static void fsync_dir_of(const char *path)
{
    char dir[1024];
    snprintf(dir, sizeof(dir), "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash == dir)
        dir[1] = '\0';
    else if (slash)
        *slash = '\0';
    else
        snprintf(dir, sizeof(dir), ".");
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
}

int mb_results_write_json(const char *path, const cJSON *obj, struct mb_error *err)
{
    char tmp[1100];
    if (strlen(path) > 1024)
        return mb_error_set(err, MB_ERANGE, "path too long: %s", path);
    snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid());
    char *text = cJSON_Print(obj);
    if (!text)
        return mb_error_set(err, MB_ENOMEM, "out of memory");
    int rc = MB_OK;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        rc = mb_error_set(err, MB_EIO, "cannot create %s: %s", tmp, strerror(errno));
        goto out;
    }
    size_t len = strlen(text);
    text[len] = '\n'; /* cJSON_Print's buffer has room for the terminator we overwrite */
    const char *p = text;
    size_t left = len + 1;
    while (left > 0) {
        ssize_t w = write(fd, p, left);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0) {
            rc = mb_error_set(err, MB_EIO, "cannot write %s: %s", tmp, strerror(errno));
            break;
        }
        p += w;
        left -= (size_t)w;
    }
    if (rc == MB_OK && fsync(fd) != 0)
        rc = mb_error_set(err, MB_EIO, "cannot sync %s: %s", tmp, strerror(errno));
    if (close(fd) != 0 && rc == MB_OK)
        rc = mb_error_set(err, MB_EIO, "cannot close %s: %s", tmp, strerror(errno));
    if (rc == MB_OK && rename(tmp, path) != 0)
        rc = mb_error_set(err, MB_EIO, "cannot rename %s to %s: %s", tmp, path, strerror(errno));
    if (rc != MB_OK)
        unlink(tmp);
    else
        fsync_dir_of(path);
out:
    cJSON_free(text);
    return rc;
}

int mb_results_read_json(const char *path, size_t max_bytes, cJSON **out, struct mb_error *err)
{
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) {
        if (errno == ENOENT)
            return mb_error_set(err, MB_ENOTFOUND, "%s: not found", path);
        return mb_error_set(err, MB_EIO, "%s: cannot open: %s", path, strerror(errno));
    }
    char *buf = malloc(max_bytes + 1);
    if (!buf) {
        fclose(f);
        return mb_error_set(err, MB_ENOMEM, "out of memory");
    }
    size_t len = fread(buf, 1, max_bytes + 1, f);
    int bad = ferror(f);
    fclose(f);
    int rc = MB_OK;
    if (bad)
        rc = mb_error_set(err, MB_EIO, "%s: cannot read", path);
    else if (len > max_bytes)
        rc = mb_error_set(err, MB_EIO, "%s: larger than %zu bytes", path, max_bytes);
    else {
        buf[len] = '\0';
        *out = cJSON_Parse(buf);
        if (!*out)
            rc = mb_error_set(err, MB_EPARSE, "%s: not valid JSON", path);
    }
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
