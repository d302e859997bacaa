/* SPDX-License-Identifier: Apache-2.0 */
/* Atomic whole-file replace and bounded whole-file read. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "migbench/fileio.h"
#include "base/json_io.h"

#define PATH_LIMIT 4096
#define TMP_TRIES 100
#define READ_CHUNK (64u * 1024)

static int write_all(int fd, const char *p, size_t left)
{
    while (left > 0) {
        ssize_t w = write(fd, p, left);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -1;
        p += w;
        left -= (size_t)w;
    }
    return 0;
}

/*
 * Best effort: a directory that cannot be opened for reading, or a file system that cannot sync
 * directories, still got the rename; only its durability across a crash is weaker.
 */
static void fsync_dir_of(const char *path)
{
    char dir[PATH_LIMIT];
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
        (void)fsync(fd);
        close(fd);
    }
}

/*
 * A fresh name next to path. The pid keeps processes apart, O_EXCL and the counter keep threads
 * of one process (and a stale file a dead process left) apart, and open's mode honours the umask.
 */
static int open_tmp(const char *path, mode_t mode, char *tmp, size_t cap)
{
    for (unsigned i = 0; i < TMP_TRIES; i++) {
        snprintf(tmp, cap, "%s.tmp.%ld.%u", path, (long)getpid(), i);
        int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
        if (fd >= 0 || errno != EEXIST)
            return fd;
    }
    return -1;
}

int mb_file_write_atomic(const char *path, const void *data, size_t len, mode_t mode,
                         struct mb_error *err)
{
    char tmp[PATH_LIMIT + 32];
    if (strlen(path) >= PATH_LIMIT)
        return mb_error_set(err, MB_ERANGE, "%s: path too long", path);
    int fd = open_tmp(path, mode, tmp, sizeof(tmp));
    if (fd < 0)
        return mb_error_set(err, MB_EIO, "%s: cannot create a temporary file: %s", path,
                            strerror(errno));
    int rc = MB_OK;
    if (write_all(fd, data, len) != 0)
        rc = mb_error_set(err, MB_EIO, "%s: cannot write: %s", tmp, strerror(errno));
    else if (fsync(fd) != 0)
        rc = mb_error_set(err, MB_EIO, "%s: cannot sync: %s", tmp, strerror(errno));
    if (close(fd) != 0 && rc == MB_OK)
        rc = mb_error_set(err, MB_EIO, "%s: cannot close: %s", tmp, strerror(errno));
    if (rc == MB_OK && rename(tmp, path) != 0)
        rc = mb_error_set(err, MB_EIO, "cannot rename %s to %s: %s", tmp, path, strerror(errno));
    if (rc != MB_OK) {
        unlink(tmp);
        return rc;
    }
    fsync_dir_of(path);
    return MB_OK;
}

int mb_file_write_json_atomic(const char *path, const cJSON *obj, mode_t mode, struct mb_error *err)
{
    char *text = cJSON_Print(obj);
    if (!text)
        return mb_error_set(err, MB_ENOMEM, "%s: out of memory", path);
    size_t len = strlen(text);
    text[len] = '\n'; /* cJSON_Print's buffer has room for the terminator we overwrite */
    int rc = mb_file_write_atomic(path, text, len + 1, mode, err);
    cJSON_free(text);
    return rc;
}

const char *mb_file_kind_str(mode_t m)
{
    return S_ISDIR(m)    ? "a directory"
           : S_ISFIFO(m) ? "a FIFO"
           : S_ISCHR(m)  ? "a character device"
           : S_ISBLK(m)  ? "a block device"
           : S_ISSOCK(m) ? "a socket"
                         : "something else";
}

int mb_file_open_input(const char *path, int *fd_out, struct mb_error *err)
{
    *fd_out = -1;
    /*
     * O_NONBLOCK: opening a FIFO with no writer would otherwise wait for one forever; a regular
     * file ignores the flag. The type is then checked on what was opened, not on the name.
     */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return mb_error_set(err, errno == ENOENT ? MB_ENOTFOUND : MB_EIO, "%s: cannot open: %s",
                            path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return mb_error_set(err, MB_EIO, "%s: cannot open: %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return mb_error_set(err, MB_EIO, "%s: cannot read: %s, not a regular file", path,
                            mb_file_kind_str(st.st_mode));
    }
    /* Reads of a regular file never block; clearing the flag keeps later reads plain. */
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0)
        (void)fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    *fd_out = fd;
    return MB_OK;
}

int mb_file_fopen_input(const char *path, FILE **out, struct mb_error *err)
{
    *out = NULL;
    int fd;
    int rc = mb_file_open_input(path, &fd, err);
    if (rc != MB_OK)
        return rc;
    *out = fdopen(fd, "r");
    if (!*out) {
        close(fd);
        return mb_error_set(err, MB_ENOMEM, "%s: out of memory", path);
    }
    return MB_OK;
}

int mb_file_read(const char *path, size_t max_bytes, char **out, size_t *len_out,
                 struct mb_error *err)
{
    *out = NULL;
    if (len_out)
        *len_out = 0;
    if (max_bytes > SIZE_MAX / 2)
        max_bytes = SIZE_MAX / 2; /* keeps max_bytes + 1 and the doubling from overflowing */
    int fd;
    int rc = mb_file_open_input(path, &fd, err);
    if (rc != MB_OK)
        return rc;
    /* Grows as the file does, so a small file under a large limit costs a small buffer. */
    size_t cap = max_bytes < READ_CHUNK ? max_bytes + 1 : READ_CHUNK;
    size_t n = 0;
    char *buf = malloc(cap + 1);
    while (buf) {
        if (n == cap) {
            if (n > max_bytes)
                break;
            size_t ncap = cap > (max_bytes + 1) / 2 ? max_bytes + 1 : cap * 2;
            char *nb = realloc(buf, ncap + 1);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap = ncap;
        }
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            rc = mb_error_set(err, MB_EIO, "%s: read error: %s", path, strerror(errno));
            break;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    if (!buf)
        return mb_error_set(err, MB_ENOMEM, "%s: out of memory", path);
    if (rc == MB_OK && n > max_bytes)
        rc = mb_error_set(err, MB_ERANGE, "%s: larger than %zu bytes", path, max_bytes);
    if (rc != MB_OK) {
        free(buf);
        return rc;
    }
    buf[n] = '\0';
    *out = buf;
    if (len_out)
        *len_out = n;
    return MB_OK;
}

/*
 * The deepest nesting in text before byte stop, and the offset of the first \u0000 escape
 * inside a string (or -1). Only meaningful as a diagnosis of text that cJSON refused or for the
 * NUL escape, which cJSON accepts.
 */
static void json_scan(const char *text, size_t len, size_t *max_depth, long *nul_at)
{
    size_t depth = 0;
    bool in_str = false;
    *max_depth = 0;
    *nul_at = -1;
    for (size_t i = 0; i < len; i++) {
        char ch = text[i];
        if (in_str) {
            if (ch == '\\' && i + 1 < len) {
                if (text[i + 1] == 'u' && i + 5 < len && memcmp(text + i + 2, "0000", 4) == 0 &&
                    *nul_at < 0)
                    *nul_at = (long)i;
                i++;
            } else if (ch == '"') {
                in_str = false;
            }
        } else if (ch == '"') {
            in_str = true;
        } else if (ch == '[' || ch == '{') {
            if (++depth > *max_depth)
                *max_depth = depth;
        } else if ((ch == ']' || ch == '}') && depth > 0) {
            depth--;
        }
    }
}

int mb_json_parse(const char *text, size_t len, const char *source, cJSON **out,
                  struct mb_error *err)
{
    *out = NULL;
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, false);
    /* A second value after the first is refused, not ignored. */
    while (root && end && end < text + len &&
           (*end == ' ' || *end == '\t' || *end == '\n' || *end == '\r'))
        end++;
    if (root && end && end < text + len && *end) {
        size_t stop = (size_t)(end - text);
        cJSON_Delete(root);
        unsigned line = 1, col = 1;
        for (size_t i = 0; i < stop; i++) {
            col = text[i] == '\n' ? 1 : col + 1;
            line += text[i] == '\n';
        }
        return mb_error_set(err, MB_EPARSE, "%s:%u:%u: not valid JSON (text after the value)",
                            source, line, col);
    }
    size_t depth;
    long nul_at;
    if (!root) {
        const char *where = cJSON_GetErrorPtr();
        size_t stop = where && where >= text && where <= text + len ? (size_t)(where - text) : len;
        json_scan(text, stop, &depth, &nul_at);
        if (depth >= CJSON_NESTING_LIMIT)
            return mb_error_set(err, MB_EPARSE, "%s: JSON nested deeper than %d levels", source,
                                CJSON_NESTING_LIMIT);
        unsigned line = 1, col = 1;
        for (size_t i = 0; i < stop; i++) {
            col = text[i] == '\n' ? 1 : col + 1;
            line += text[i] == '\n';
        }
        return mb_error_set(err, MB_EPARSE, "%s:%u:%u: not valid JSON", source, line, col);
    }
    json_scan(text, len, &depth, &nul_at);
    if (nul_at >= 0) {
        cJSON_Delete(root);
        return mb_error_set(err, MB_EPARSE,
                            "%s: byte %ld: a string holds \\u0000 (a NUL character), which is "
                            "not allowed",
                            source, nul_at);
    }
    *out = root;
    return MB_OK;
}
