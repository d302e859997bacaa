/* SPDX-License-Identifier: Apache-2.0 */
/* Cells on one or many GPUs in MIG-mode phases: assignment, per-GPU phases, switch, restore. */
#include "run/phased.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "migbench/gpuqueue.h"
#include "mig/migmode.h"

/* One GPU's MIG-mode state, touched only by its worker (and by the caller after the join). */
struct gpu_state {
    int current; /* -1: the device has no MIG mode */
    bool journaled;
    struct mb_migmode_record original;
};

struct phased;

/* The migmode hooks' context: which GPU they are about. */
struct gpu_hooks {
    struct phased *p;
    size_t gpu;
};

struct phased {
    const struct mb_phased_opts *o;
    const struct mb_phased_hooks *h;
    int *need; /* per cell */
    struct gpu_state gpu[MB_MAX_DEVICES];
    struct gpu_hooks gh[MB_MAX_DEVICES];
    pthread_mutex_t lock; /* result counters */
    struct mb_phased_result *res;
};

static bool mm_owns(void *ctx, const struct mb_mig_instance *inst)
{
    struct gpu_hooks *g = ctx;
    return g->p->h->owns && g->p->h->owns(g->p->h->ctx, g->gpu, inst);
}

static int mm_journal(void *ctx, const cJSON *ev, struct mb_error *err)
{
    struct gpu_hooks *g = ctx;
    return g->p->h->journal ? g->p->h->journal(g->p->h->ctx, ev, err) : MB_OK;
}

static struct mb_migmode_hooks mm_hooks(struct phased *p, size_t gpu)
{
    return (struct mb_migmode_hooks){mm_owns, NULL, mm_journal, &p->gh[gpu]};
}

static void note(struct phased *p, size_t gpu, const char *line)
{
    if (p->h->note)
        p->h->note(p->h->ctx, gpu, line);
}

/* Puts the worker's GPU in the mode cell needs, when the experiment lets migbench do it. */
static int ensure_mode(struct phased *p, size_t gpu, int need, struct mb_error *err)
{
    struct gpu_state *st = &p->gpu[gpu];
    if (!p->o->manage_mig_mode || need < 0 || st->current < 0 || st->current == need)
        return MB_OK;
    struct mb_migmode_hooks mh = mm_hooks(p, gpu);
    struct mb_migmode_plan plan;
    int rc = mb_migmode_plan(p->o->gpus[gpu], need, &mh, &plan, err);
    if (rc != MB_OK)
        return rc;
    char line[768];
    mb_migmode_describe(&plan, line, sizeof(line));
    note(p, gpu, line);
    if ((rc = mb_migmode_switch(p->o->gpus[gpu], &plan, !st->journaled, &mh, err)) != MB_OK)
        return rc;
    if (!st->journaled) {
        st->journaled = true;
        st->original = plan.rec;
    }
    st->current = need;
    pthread_mutex_lock(&p->lock);
    p->res->switches++;
    pthread_mutex_unlock(&p->lock);
    return MB_OK;
}

static int on_item(void *ctx, size_t gpu, size_t cell, struct mb_error *err)
{
    struct phased *p = ctx;
    int rc = ensure_mode(p, gpu, p->need[cell], err);
    if (rc != MB_OK)
        return rc;
    if ((rc = p->h->run_cell(p->h->ctx, gpu, cell, err)) != MB_OK)
        return rc;
    pthread_mutex_lock(&p->lock);
    p->res->cells_run++;
    pthread_mutex_unlock(&p->lock);
    return MB_OK;
}

/* Each GPU's MIG mode now, and the original a crashed run journaled for it. */
static int read_gpus(struct phased *p, struct mb_error *err)
{
    struct mb_migmode_record old[MB_MAX_DEVICES];
    size_t n_old = 0;
    if (p->o->old_journal) {
        int rc = mb_migmode_outstanding(p->o->old_journal, old, MB_MAX_DEVICES, &n_old, err);
        if (rc != MB_OK)
            return rc;
    }
    for (size_t g = 0; g < p->o->n_gpus; g++) {
        struct gpu_state *st = &p->gpu[g];
        p->gh[g] = (struct gpu_hooks){p, g};
        st->current = -1;
        struct mb_mig_mode mode;
        /* The mode now matters only to phases (ensure_mode, build_order). */
        if (p->o->manage_mig_mode && (mb_device_caps(p->o->gpus[g]) & MB_CAP_MIG)) {
            int rc = mb_device_mig_mode(p->o->gpus[g], &mode, err);
            if (rc != MB_OK)
                return rc;
            st->current = mode.current ? 1 : 0;
        }
        struct mb_device_info info;
        if (n_old == 0 || mb_device_info(p->o->gpus[g], &info, NULL) != MB_OK)
            continue;
        for (size_t k = 0; k < n_old; k++)
            if (strcmp(old[k].gpu_uuid, info.uuid) == 0) {
                st->journaled = true;
                st->original = old[k];
            }
    }
    return MB_OK;
}

/*
 * The order the workers go through: each GPU's cells, the current mode's phase first (with
 * manage_mig_mode; without it, as given: the caller chose what can run).
 */
static void build_order(struct phased *p, const size_t *gpu_of, size_t *order)
{
    const struct mb_phased_opts *o = p->o;
    size_t k = 0;
    for (size_t g = 0; g < o->n_gpus; g++)
        for (int pass = 0; pass < 2; pass++)
            for (size_t c = 0; c < o->n_cells; c++) {
                if (gpu_of[c] != g)
                    continue;
                int cur = p->gpu[g].current, need = p->need[c];
                bool now = !o->manage_mig_mode || need < 0 || cur < 0 || need == cur;
                if (now == (pass == 0))
                    order[k++] = c;
            }
}

/* Every GPU whose original mode was journaled gets it back; the first failure is kept. */
static void restore_all(struct phased *p)
{
    for (size_t g = 0; g < p->o->n_gpus; g++) {
        struct gpu_state *st = &p->gpu[g];
        if (!st->journaled)
            continue;
        struct mb_migmode_hooks mh = mm_hooks(p, g);
        struct mb_error err;
        mb_error_clear(&err);
        int rc = mb_migmode_restore(p->o->gpus[g], &st->original, &mh, &err);
        if (rc != MB_OK) {
            if (p->res->status == MB_OK) {
                p->res->status = rc;
                p->res->failed_gpu = g;
                p->res->err = err;
            }
            continue;
        }
        char line[256];
        snprintf(line, sizeof(line), "%s: MIG mode restored to %s", st->original.device,
                 st->original.original_current ? "enabled" : "disabled");
        note(p, g, line);
        p->res->restores++;
        st->journaled = false;
    }
}

int mb_phased_run(const struct mb_phased_opts *o, const struct mb_phased_hooks *h, size_t *gpu_of,
                  struct mb_phased_result *res)
{
    memset(res, 0, sizeof(*res));
    if (!o || !h || !h->run_cell || !o->exp || !o->gpus || o->n_gpus == 0 ||
        o->n_gpus > MB_MAX_DEVICES || (o->n_cells && !o->cells))
        return res->status = mb_error_set(&res->err, MB_EINVAL, "mb_phased_run: bad arguments");
    struct phased p = {.o = o, .h = h, .res = res};
    size_t n = o->n_cells ? o->n_cells : 1;
    struct mb_gpuqueue_item *items = calloc(n, sizeof(*items));
    size_t *assigned = calloc(n, sizeof(*assigned));
    size_t *order = calloc(n, sizeof(*order));
    p.need = calloc(n, sizeof(*p.need));
    pthread_mutex_init(&p.lock, NULL);
    int rc;
    if (!items || !assigned || !order || !p.need) {
        rc = mb_error_set(&res->err, MB_ENOMEM, "out of memory");
        goto out;
    }
    for (size_t c = 0; c < o->n_cells; c++) {
        p.need[c] = mb_migmode_run_needs(&o->exp->runs[o->cells[c].run]);
        items[c] = (struct mb_gpuqueue_item){o->cells[c].run, o->est_s ? o->est_s[c] : 1.0};
    }
    if ((rc = mb_gpuqueue_assign(items, o->n_cells, o->n_gpus, o->pin_reps, assigned, NULL,
                                 &res->err)) != MB_OK ||
        (rc = read_gpus(&p, &res->err)) != MB_OK)
        goto out;
    if (gpu_of)
        memcpy(gpu_of, assigned, o->n_cells * sizeof(*assigned));
    build_order(&p, assigned, order);
    struct mb_gpuqueue_result qr;
    rc = mb_gpuqueue_run(o->n_gpus, assigned, o->n_cells, order, o->n_cells, on_item, &p, o->stop,
                         &qr);
    if (rc != MB_OK) {
        res->failed_gpu = qr.failed_gpu;
        res->err = qr.err;
    }
    res->status = rc;
    restore_all(&p);
    rc = res->status;
out:
    if (rc != MB_OK && res->status == MB_OK)
        res->status = rc;
    pthread_mutex_destroy(&p.lock);
    free(items);
    free(assigned);
    free(order);
    free(p.need);
    return res->status;
}
