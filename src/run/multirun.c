/* SPDX-License-Identifier: Apache-2.0 */
/* The cell runner on one or many GPUs, in MIG-mode phases, with one shared journal. */
#include "run/multirun.h"

#include "results/results_json.h"

#include <pthread.h>
#include <string.h>

struct multirun {
    const struct mb_multirun_opts *o;
    pthread_mutex_t lock;
    struct mb_multirun_result *res;
};

/* One cell on one GPU: the caller's cell step (the session's, which claims cells), counted. */
static int run_cell(void *ctx, size_t gpu, size_t cell, struct mb_error *err)
{
    struct multirun *m = ctx;
    const struct mb_multirun_opts *o = m->o;
    bool failed = false, skipped = false;
    int rc = o->run_cell(o->ctx, &o->gpus[gpu], cell, &failed, &skipped, err);
    pthread_mutex_lock(&m->lock);
    if (rc == MB_OK && skipped) {
        m->res->skipped++;
        pthread_mutex_unlock(&m->lock);
        return MB_OK;
    }
    if (rc == MB_OK && failed)
        m->res->failed++;
    else if (rc == MB_OK)
        m->res->ok++;
    if (rc == MB_EINTR && !m->res->interrupted) {
        m->res->interrupted = true;
        m->res->interrupted_cell = cell;
        m->res->interrupted_gpu = gpu;
    }
    if (o->cell_done && (rc == MB_OK || rc == MB_EINTR))
        o->cell_done(o->ctx, gpu, cell, rc, failed);
    pthread_mutex_unlock(&m->lock);
    return rc;
}

static int journal(void *ctx, const cJSON *ev, struct mb_error *err)
{
    struct multirun *m = ctx;
    if (!m->o->journal)
        return MB_OK;
    /* mb_journal_append stamps the event it is given; the hook's event is the caller's. */
    cJSON *copy = cJSON_Duplicate(ev, 1);
    if (!copy)
        return mb_error_set(err, MB_ENOMEM, "out of memory");
    int rc = mb_journal_append(m->o->journal, copy, err);
    cJSON_Delete(copy);
    return rc;
}

static void note(void *ctx, size_t gpu, const char *line)
{
    struct multirun *m = ctx;
    if (!m->o->note)
        return;
    pthread_mutex_lock(&m->lock);
    m->o->note(m->o->ctx, gpu, line);
    pthread_mutex_unlock(&m->lock);
}

int mb_multirun(const struct mb_multirun_opts *o, size_t *gpu_of, struct mb_multirun_result *res)
{
    memset(res, 0, sizeof(*res));
    if (!o || !o->gpus || !o->run_cell || o->n_gpus == 0 || o->n_gpus > MB_MAX_DEVICES)
        return res->phased.status =
                   mb_error_set(&res->phased.err, MB_EINVAL, "mb_multirun: bad arguments");
    struct mb_device *devs[MB_MAX_DEVICES];
    for (size_t g = 0; g < o->n_gpus; g++)
        devs[g] = o->gpus[g].dev;
    struct multirun m = {.o = o, .res = res};
    pthread_mutex_init(&m.lock, NULL);
    struct mb_phased_hooks h = {run_cell, journal, NULL, note, &m};
    struct mb_phased_opts po = {.exp = o->exp,
                                .cells = o->cells,
                                .n_cells = o->n_cells,
                                .est_s = o->est_s,
                                .gpus = devs,
                                .n_gpus = o->n_gpus,
                                .manage_mig_mode = o->manage_mig_mode,
                                .pin_reps = o->pin_reps,
                                .old_journal = o->old_journal,
                                .stop = o->stop};
    int rc = mb_phased_run(&po, &h, gpu_of, &res->phased);
    pthread_mutex_destroy(&m.lock);
    if (o->stop && *o->stop)
        res->interrupted = true; /* also when it came between two cells */
    if (res->interrupted && (rc == MB_OK || rc == MB_EINTR))
        return MB_EINTR;
    return rc;
}
