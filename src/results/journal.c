/* SPDX-License-Identifier: Apache-2.0 */
/* The experiment journal: an append-only JSON-lines file, fsync'd after every line. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "results/journal_events.h"
#include "results/results_json.h"
#include "migbench/fileio.h"
#include "migbench/results.h"

struct mb_journal {
    int fd;
    int append_fd; /* shared journals: "<path>.lock", held exclusively around each append */
    char path[1024];
    /* Workers of a multi-GPU run share one journal: each line is written and fsync'd whole. */
    pthread_mutex_t lock;
};

/* Takes (op LOCK_EX or LOCK_UN) the append lock of a shared journal; a no-op for an owned one. */
static int append_lock(const struct mb_journal *j, int op)
{
    if (j->append_fd < 0)
        return 0;
    while (flock(j->append_fd, op) != 0)
        if (errno != EINTR)
            return -1;
    return 0;
}

static int write_all(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t w = write(fd, buf, len);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        buf += w;
        len -= (size_t)w;
    }
    return 0;
}

/* A crash mid-line leaves a torn last line; start the next event on a fresh line. */
static int repair_tail(struct mb_journal *j, struct mb_error *err)
{
    if (append_lock(j, LOCK_EX) != 0)
        return mb_error_set(err, MB_EIO, "%s.lock: cannot lock: %s", j->path, strerror(errno));
    int rc = MB_OK;
    off_t end = lseek(j->fd, 0, SEEK_END);
    if (end > 0) {
        char last = '\n';
        if (pread(j->fd, &last, 1, end - 1) != 1 ||
            (last != '\n' && (write_all(j->fd, "\n", 1) != 0 || fsync(j->fd) != 0)))
            rc = mb_error_set(err, MB_EIO, "%s: cannot repair journal: %s", j->path,
                              strerror(errno));
    }
    append_lock(j, LOCK_UN);
    return rc;
}

static int journal_open(const char *path, bool shared, struct mb_journal **out,
                        struct mb_error *err)
{
    *out = NULL;
    struct mb_journal *j = calloc(1, sizeof(*j));
    if (!j)
        return mb_error_set(err, MB_ENOMEM, "out of memory");
    j->append_fd = -1;
    if (strlen(path) + sizeof(".lock") > sizeof(j->path)) {
        free(j);
        return mb_error_set(err, MB_ERANGE, "journal path too long");
    }
    snprintf(j->path, sizeof(j->path), "%s", path);
    pthread_mutex_init(&j->lock, NULL);
    j->fd = open(path, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (j->fd < 0) {
        int e = errno;
        pthread_mutex_destroy(&j->lock);
        free(j);
        return mb_error_set(err, MB_EIO, "%s: cannot open journal: %s", path, strerror(e));
    }
    /*
     * An owner holds the journal exclusively: a second migbench on the same results (a --resume
     * while the first still runs) would otherwise remove the live run's MIG instances as
     * leftovers. Invocations that each run a selection of cells share it (LOCK_SH) and serialise
     * their appends on "<path>.lock"; an owner and sharers exclude each other.
     */
    if (flock(j->fd, (shared ? LOCK_SH : LOCK_EX) | LOCK_NB) != 0) {
        int e = errno;
        mb_journal_close(j);
        if (e == EWOULDBLOCK)
            return mb_error_set(err, MB_EBUSY,
                                "%s is in use by another migbench run (wait for it or stop it)",
                                path);
        return mb_error_set(err, MB_EIO, "%s: cannot lock journal: %s", path, strerror(e));
    }
    if (shared) {
        char lp[sizeof(j->path) + 8];
        snprintf(lp, sizeof(lp), "%s.lock", path);
        j->append_fd = open(lp, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (j->append_fd < 0) {
            int e = errno;
            mb_journal_close(j);
            return mb_error_set(err, MB_EIO, "%s: cannot open: %s", lp, strerror(e));
        }
    }
    int rc = repair_tail(j, err);
    if (rc != MB_OK) {
        mb_journal_close(j);
        return rc;
    }
    *out = j;
    return MB_OK;
}

int mb_journal_open(const char *path, struct mb_journal **out, struct mb_error *err)
{
    return journal_open(path, false, out, err);
}

int mb_journal_open_shared(const char *path, struct mb_journal **out, struct mb_error *err)
{
    return journal_open(path, true, out, err);
}

void mb_journal_close(struct mb_journal *j)
{
    if (!j)
        return;
    if (j->fd >= 0)
        close(j->fd);
    if (j->append_fd >= 0)
        close(j->append_fd);
    pthread_mutex_destroy(&j->lock);
    free(j);
}

int mb_journal_append(struct mb_journal *j, cJSON *obj, struct mb_error *err)
{
    if (!cJSON_IsObject(obj) || !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(obj, "event")))
        return mb_error_set(err, MB_EINVAL, "journal events are objects with an \"event\" name");
    if (!cJSON_GetObjectItemCaseSensitive(obj, "t_unix")) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        double t = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
        if (!cJSON_AddNumberToObject(obj, "t_unix", t))
            return mb_error_set(err, MB_ENOMEM, "out of memory");
    }
    char *text = cJSON_PrintUnformatted(obj);
    if (!text)
        return mb_error_set(err, MB_ENOMEM, "out of memory");
    size_t len = strlen(text);
    int rc = MB_OK;
    if (len + 1 > MB_JOURNAL_LINE_MAX) {
        rc =
            mb_error_set(err, MB_EINVAL, "journal event longer than %d bytes", MB_JOURNAL_LINE_MAX);
    } else {
        /* One write() of the whole line: with O_APPEND it lands in one piece or not at all,
         * unless the disk fills or the machine dies, which the reader tolerates. */
        text[len] = '\n';
        pthread_mutex_lock(&j->lock);
        if (append_lock(j, LOCK_EX) != 0 || write_all(j->fd, text, len + 1) != 0 ||
            fsync(j->fd) != 0)
            rc =
                mb_error_set(err, MB_EIO, "%s: cannot write journal: %s", j->path, strerror(errno));
        append_lock(j, LOCK_UN);
        pthread_mutex_unlock(&j->lock);
    }
    cJSON_free(text);
    return rc;
}

int mb_journal_read(const char *path, cJSON **events, size_t *skipped, struct mb_error *err)
{
    *events = NULL;
    *skipped = 0;
    FILE *f;
    int orc = mb_file_fopen_input(path, &f, err);
    if (orc == MB_ENOTFOUND)
        return mb_error_set(err, MB_ENOTFOUND, "%s: no journal", path);
    if (orc != MB_OK) {
        mb_error_prefix(err, "journal: ");
        return orc;
    }
    cJSON *arr = cJSON_CreateArray();
    char *line = malloc(MB_JOURNAL_LINE_MAX + 2);
    int rc = MB_OK;
    if (!arr || !line) {
        rc = mb_error_set(err, MB_ENOMEM, "out of memory");
        goto fail;
    }
    long total = 0;
    while (fgets(line, MB_JOURNAL_LINE_MAX + 2, f)) {
        size_t len = strlen(line);
        total += (long)len;
        if (total > MB_JOURNAL_MAX_BYTES) {
            rc = mb_error_set(err, MB_EIO, "%s: journal larger than %ld bytes", path,
                              MB_JOURNAL_MAX_BYTES);
            goto fail;
        }
        if (len > 0 && line[len - 1] != '\n' && !feof(f)) {
            /* An over-long line: skip the rest of it. */
            int ch;
            while ((ch = fgetc(f)) != EOF && ch != '\n')
                total++;
            (*skipped)++;
            continue;
        }
        if (len == 0 || (len == 1 && line[0] == '\n'))
            continue;
        cJSON *obj = cJSON_Parse(line);
        if (!cJSON_IsObject(obj) ||
            !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(obj, "event"))) {
            cJSON_Delete(obj);
            (*skipped)++;
            continue;
        }
        cJSON_AddItemToArray(arr, obj);
    }
    if (ferror(f)) {
        rc = mb_error_set(err, MB_EIO, "%s: cannot read journal", path);
        goto fail;
    }
    free(line);
    fclose(f);
    *events = arr;
    return MB_OK;
fail:
    free(line);
    cJSON_Delete(arr);
    fclose(f);
    return rc;
}

/* A MIG instance's record, from its mig_created event (a CI's adds its CI to the GI's). */
static int leftover_created(struct mb_leftovers *out, const struct mb_jev *e, struct mb_error *err)
{
    size_t k;
    for (k = 0; k < out->n_mig; k++)
        if (out->mig[k].gi_id == e->gi_id && strcmp(out->mig[k].gpu_uuid, e->gpu_uuid) == 0)
            break;
    if (k == out->n_mig) {
        if (out->n_mig == MB_MAX_LEFTOVERS)
            return mb_error_set(err, MB_ERANGE, "more than %d MIG instances outstanding",
                                MB_MAX_LEFTOVERS);
        struct mb_leftover_mig *m = &out->mig[out->n_mig++];
        memset(m, 0, sizeof(*m));
        snprintf(m->gpu_uuid, sizeof(m->gpu_uuid), "%s", e->gpu_uuid);
        m->gi_id = e->gi_id;
        snprintf(m->profile, sizeof(m->profile), "%s", e->profile ? e->profile : "");
        m->placement = e->placement;
    }
    if (e->has_ci) {
        out->mig[k].has_ci = true;
        out->mig[k].ci_id = e->ci_id;
    }
    return MB_OK;
}

static void leftover_destroyed(struct mb_leftovers *out, const struct mb_jev *e)
{
    for (size_t k = 0; k < out->n_mig; k++) {
        struct mb_leftover_mig *m = &out->mig[k];
        if (m->gi_id != e->gi_id || strcmp(m->gpu_uuid, e->gpu_uuid) != 0)
            continue;
        if (e->has_ci && m->has_ci && m->ci_id == e->ci_id) {
            m->has_ci = false; /* only the CI went */
        } else if (!e->has_ci) {
            memmove(m, m + 1, (out->n_mig - k - 1) * sizeof(*m));
            out->n_mig--;
        }
        return;
    }
}

static int leftover_mps(struct mb_leftovers *out, const struct mb_jev *e, struct mb_error *err)
{
    if (e->kind == MB_JEV_MPS_STARTED) {
        if (out->n_mps == MB_MAX_LEFTOVERS)
            return mb_error_set(err, MB_ERANGE, "more than %d MPS daemons outstanding",
                                MB_MAX_LEFTOVERS);
        struct mb_leftover_mps *p = &out->mps[out->n_mps++];
        p->pid = e->pid;
        snprintf(p->pipe_dir, sizeof(p->pipe_dir), "%s", e->pipe_dir ? e->pipe_dir : "");
        snprintf(p->log_dir, sizeof(p->log_dir), "%s", e->log_dir ? e->log_dir : "");
        return MB_OK;
    }
    for (size_t k = 0; k < out->n_mps; k++)
        if (strcmp(out->mps[k].pipe_dir, e->pipe_dir ? e->pipe_dir : "") == 0) {
            memmove(&out->mps[k], &out->mps[k + 1], (out->n_mps - k - 1) * sizeof(out->mps[0]));
            out->n_mps--;
            break;
        }
    return MB_OK;
}

int mb_journal_leftovers(const cJSON *events, struct mb_leftovers *out, struct mb_error *err)
{
    memset(out, 0, sizeof(*out));
    const cJSON *ev;
    cJSON_ArrayForEach(ev, events)
    {
        struct mb_jev e;
        if (!mb_jev_decode(ev, &e))
            continue;
        int rc = MB_OK;
        if (!e.gpu_uuid)
            e.gpu_uuid = "";
        /* An instance whose event names its ledger is the ledger's to clean (mig.h); only an
         * older migbench's journal, without that reference, lists it here. */
        if (e.kind == MB_JEV_MIG_CREATED && e.has_gi && !e.ledger)
            rc = leftover_created(out, &e, err);
        else if (e.kind == MB_JEV_MIG_DESTROYED && e.has_gi)
            leftover_destroyed(out, &e);
        else if (e.kind == MB_JEV_MPS_STARTED || e.kind == MB_JEV_MPS_STOPPED)
            rc = leftover_mps(out, &e, err);
        if (rc != MB_OK)
            return rc;
    }
    return MB_OK;
}
