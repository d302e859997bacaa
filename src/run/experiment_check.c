/* SPDX-License-Identifier: Apache-2.0 */
/* An experiment's runs checked against a GPU model: the sizes its layouts name, their memory. */
#include "migbench/experiment.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/experiment_internal.h"
#include "base/yaml_read.h"
#include "migbench/catalog.h"

/* Whether run index i is in cells. */
static bool run_in_cells(const struct mb_cell *cells, size_t n_cells, size_t i)
{
    for (size_t k = 0; k < n_cells; k++)
        if (cells[k].run == i)
            return true;
    return false;
}

/*
 * Resolves one list of a run's profile names (`layout` or `match_layout`) on model. A name the
 * model lacks sets *missing (the first reason goes to why); anything else wrong is MB_EPARSE. With
 * check_memory, entry j must also hold job j's memory_mib.
 */
static int check_names(struct mb__yread *c, const struct mb_experiment *exp, size_t i,
                       const char *key, const char (*names)[MB_PROFILE_NAME_MAX], size_t n,
                       bool check_memory, const struct mb_gpu_model *model, bool *missing,
                       char *why, size_t cap)
{
    const struct mb_exp_run *r = &exp->runs[i];
    char f[MB__EXP_FIELD_MAX];
    struct mb_error e;
    for (size_t j = 0; j < n; j++) {
        snprintf(f, sizeof(f), "runs[%zu].%s[%zu]", i, key, j);
        const struct mb_gi_profile *p;
        int rc = mb_model_profile_resolve(model, names[j], &p, &e);
        if (rc == MB_ENOTFOUND) {
            if (!*missing)
                snprintf(why, cap, "%s", e.msg);
            *missing = true;
            continue;
        }
        if (rc != MB_OK)
            return mb__yread_fail(c, r->line, NULL, f, "%s", e.msg);
        const struct mb_exp_workload *w = &exp->workloads[r->job_workload[j]];
        if (check_memory && w->memory_mib > 0 && p->memory_mib > 0 && w->memory_mib > p->memory_mib)
            return mb__yread_fail(
                c, r->line, NULL, f,
                "job '%s' needs %lld MiB (workloads.%s.memory_mib) but %s (%s) on %s has "
                "%lld MiB",
                r->job_name[j], (long long)w->memory_mib, w->name, names[j], p->name, model->name,
                (long long)p->memory_mib);
    }
    return MB_OK;
}

/*
 * Checks one run against model: MB_OK, MB_ENOTFOUND with the reason in why when it names a size
 * the model does not have, or MB_EPARSE (file, line, field) for anything else.
 */
static int check_run(struct mb__yread *c, const struct mb_experiment *exp, size_t i,
                     const struct mb_gpu_model *model, char *why, size_t cap)
{
    const struct mb_exp_run *r = &exp->runs[i];
    bool missing = false;
    int rc =
        check_names(c, exp, i, "layout", r->layout, r->n_layout, true, model, &missing, why, cap);
    if (rc == MB_OK)
        rc = check_names(c, exp, i, "match_layout", r->match_layout, r->n_match_layout, false,
                         model, &missing, why, cap);
    if (rc != MB_OK)
        return rc;
    return missing ? MB_ENOTFOUND : MB_OK;
}

int mb_experiment_check_cells(const struct mb_experiment *exp, const struct mb_gpu_model *model,
                              struct mb_cell *cells, size_t *n_cells, char ***notes,
                              size_t *n_notes, struct mb_error *err)
{
    struct mb__yread c = {.path = exp->path,
                          .err = err,
                          .max_depth = MB__EXP_YAML_MAX_DEPTH,
                          .max_nodes = MB__EXP_YAML_MAX_NODES};
    bool skip[MB_EXP_MAX_RUNS] = {false};
    char *why[MB_EXP_MAX_RUNS] = {NULL};
    size_t n_skip = 0;
    int rc = MB_OK;
    for (size_t i = 0; i < exp->n_runs; i++) {
        if (!run_in_cells(cells, *n_cells, i))
            continue;
        char reason[MB_ERROR_MSG_MAX];
        int st = check_run(&c, exp, i, model, reason, sizeof(reason));
        if (st == MB_ENOTFOUND) {
            size_t len = strlen(exp->runs[i].name) + strlen(reason) + 32;
            why[i] = malloc(len);
            if (!why[i]) {
                rc = mb_error_set(err, MB_ENOMEM, "out of memory");
                goto fail;
            }
            snprintf(why[i], len, "run '%s' skipped: %s", exp->runs[i].name, reason);
            skip[i] = true;
            n_skip++;
        } else if (st != MB_OK) {
            rc = st;
            goto fail;
        }
    }
    if (n_skip) {
        char **ns = realloc(*notes, (*n_notes + n_skip + 1) * sizeof(*ns));
        if (!ns) {
            rc = mb_error_set(err, MB_ENOMEM, "out of memory");
            goto fail;
        }
        *notes = ns;
        for (size_t i = 0; i < exp->n_runs; i++)
            if (skip[i]) {
                ns[(*n_notes)++] = why[i];
                why[i] = NULL;
            }
        ns[*n_notes] = NULL;
        size_t k = 0;
        for (size_t i = 0; i < *n_cells; i++)
            if (!skip[cells[i].run])
                cells[k++] = cells[i];
        *n_cells = k;
    }
fail:
    for (size_t i = 0; i < exp->n_runs; i++)
        free(why[i]);
    return rc;
}
