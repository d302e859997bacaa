/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Progress lines from inside a job (migbench/api.h): the writer's half of the protocol that
 * power/progress.c reads. One write per line, so lines from several threads never interleave
 * (a pipe write of at most PIPE_BUF bytes is atomic).
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "migbench/api.h"

#define ENV_FD "MIGBENCH_PROGRESS_FD"
#define UNIT_MAX 15

static pthread_once_t fd_once = PTHREAD_ONCE_INIT;
static atomic_int progress_fd = -1;

static void read_fd(void)
{
    const char *raw = getenv(ENV_FD);
    char *end = NULL;
    if (!raw || !raw[0])
        return;
    errno = 0;
    long v = strtol(raw, &end, 10);
    if (errno == 0 && *end == '\0' && v >= 0 && v <= 1 << 20)
        atomic_store(&progress_fd, (int)v);
}

int mb_progress_fd(void)
{
    pthread_once(&fd_once, read_fd);
    return atomic_load(&progress_fd);
}

static int check_unit(const char *unit, struct mb_error *err)
{
    size_t n = strnlen(unit, UNIT_MAX + 1);
    if (n == 0 || n > UNIT_MAX)
        return mb_error_set(err, MB_EINVAL, "progress unit must be 1..%d letters", UNIT_MAX);
    for (size_t i = 0; i < n; i++) {
        char c = unit[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'))
            return mb_error_set(err, MB_EINVAL, "progress unit '%s': letters and '_' only", unit);
    }
    return MB_OK;
}

int mb_progress_report(uint64_t step, double work, const char *unit, struct mb_error *err)
{
    if (!isfinite(work))
        return mb_error_set(err, MB_EINVAL, "progress work must be a finite number");
    if (unit) {
        int st = check_unit(unit, err);
        if (st != MB_OK)
            return st;
    }
    int fd = mb_progress_fd();
    if (fd < 0)
        return MB_OK;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    char line[160], samples[48] = "";
    if (work >= 0)
        snprintf(samples, sizeof(samples), " samples=%.17g", work);
    int n = snprintf(line, sizeof(line), "step=%" PRIu64 "%s t=%lld.%09ld%s%s\n", step, samples,
                     (long long)ts.tv_sec, ts.tv_nsec, unit ? " unit=" : "", unit ? unit : "");
    size_t len = (size_t)n, off = 0;
    while (off < len) {
        ssize_t w = write(fd, line + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            int e = errno;
            atomic_store(&progress_fd, -1); /* the reader is gone: later calls are no-ops */
            return mb_error_set(err, MB_EIO, "cannot write progress to fd %d: %s", fd, strerror(e));
        }
        off += (size_t)w;
    }
    return MB_OK;
}
