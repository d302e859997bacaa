/* SPDX-License-Identifier: Apache-2.0 */
/* Merged reports: several results directories of one experiment analysed as one. */
#include "base/json_io.h"
#include "migbench/analysis.h"
#include "migbench/stats.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "migbench/catalog.h"
#include "migbench/experiment.h"
#include "migbench/fileio.h"
#include "migbench/num.h"
#include "base/text_internal.h"

/* Bounds on outside input: a cell.json is small; telemetry is read line by line. */

/* The two-sided 95% Student t quantile (stats.h); df >= 1 wherever a CI is computed. */
#include "results/analysis_internal.h"

/* ---------------------------------------------------------------------------------------- */
/* Merged reports                                                                            */

/* Appends "; what" style differences between a and b to diff (cap bytes). */
static void add_diff(char *diff, size_t cap, const char *what, const char *a, const char *b)
{
    size_t used = strlen(diff);
    snprintf(diff + used, cap - used, "%s%s (%s vs %s)", used ? "; " : "", what,
             a[0] ? a : "unknown", b[0] ? b : "unknown");
}

/* What keeps b from being the same experiment setting as a: GPU model, driver, workloads. */
static void compare_experiments(const struct mb_an_experiment *a, const struct mb_an_experiment *b,
                                char *diff, size_t cap)
{
    diff[0] = '\0';
    if (strcmp(a->name, b->name) != 0)
        add_diff(diff, cap, "experiments", a->name, b->name);
    if (strcmp(a->model, b->model) != 0 || strcmp(a->backend, b->backend) != 0)
        add_diff(diff, cap, "GPU models", a->model[0] ? a->model : a->device_name,
                 b->model[0] ? b->model : b->device_name);
    if (strcmp(a->driver_version, b->driver_version) != 0)
        add_diff(diff, cap, "drivers", a->driver_version, b->driver_version);
    for (size_t i = 0; i < a->nworkloads; i++)
        for (size_t k = 0; k < b->nworkloads; k++)
            if (strcmp(a->workload_names[i], b->workload_names[k]) == 0 && a->workload_sig[i] &&
                b->workload_sig[k] && a->workload_sig[i] != b->workload_sig[k])
                add_diff(diff, cap, "workload definitions", a->workload_names[i],
                         "another command of the same name");
}

/* "DIR:RUN" -> the run, which must be an exclusive run of one of the directories. */
static int pick_baseline(const struct mb_analysis *sep, const char *const *dirs, size_t ndirs,
                         const char *spec, char *run, struct mb_error *err)
{
    const char *colon = strrchr(spec, ':');
    if (!colon || colon == spec || !colon[1])
        return mb_error_set(err, MB_EINVAL, "--baseline %s: expected DIR:RUN", spec);
    size_t dlen = (size_t)(colon - spec);
    for (size_t d = 0; d < ndirs; d++) {
        if (strlen(dirs[d]) != dlen || strncmp(dirs[d], spec, dlen) != 0)
            continue;
        const struct mb_an_experiment *e = &sep->exps[d];
        for (size_t i = 0; i < e->nruns; i++)
            if (strcmp(e->runs[i].name, colon + 1) == 0) {
                if (!mb__an_is_exclusive(e->runs[i].mode))
                    return mb_error_set(err, MB_EINVAL,
                                        "--baseline %s: run '%s' is %s, not exclusive", spec,
                                        colon + 1, e->runs[i].mode);
                mb__copy_str(run, MB_AN_NAME_MAX, colon + 1);
                return MB_OK;
            }
        return mb_error_set(err, MB_EINVAL, "--baseline %s: %.*s has no run '%s'", spec, (int)dlen,
                            spec, colon + 1);
    }
    return mb_error_set(err, MB_EINVAL, "--baseline %s: %.*s is not one of the merged directories",
                        spec, (int)dlen, spec);
}

/* Notes on where cells came from: per directory, and each run that pools several. */
static void origin_notes(struct mb_an_experiment *e)
{
    for (size_t d = 0; d < e->norigins; d++) {
        size_t cells = 0, runs = 0;
        for (size_t i = 0; i < e->nruns; i++) {
            size_t here = 0;
            for (size_t k = 0; k < e->runs[i].ncells; k++)
                here += e->runs[i].cells[k].origin == (int)d;
            cells += here;
            runs += here > 0;
        }
        mb__an_add_note(e, "merged: %zu cells of %zu runs from %s", cells, runs, e->origins[d]);
    }
    for (size_t i = 0; i < e->nruns; i++) {
        const struct mb_an_run *r = &e->runs[i];
        for (size_t k = 1; k < r->ncells; k++)
            if (r->cells[k].origin != r->cells[0].origin) {
                mb__an_add_note(e, "merged: run %s pools cells from several directories", r->name);
                break;
            }
    }
}

/*
 * The same cell twice: one directory given twice, or a copy of one. A cell is its run, its
 * repetition, its GPU and the monotonic times of its start and window, which no other
 * measurement shares.
 */
static int check_same_cell(const struct mb_an_experiment *e, struct mb_error *err)
{
    for (size_t i = 0; i < e->nruns; i++) {
        const struct mb_an_run *r = &e->runs[i];
        for (size_t k = 0; k < r->ncells; k++)
            for (size_t j = 0; j < k; j++) {
                const struct mb_an_cell *a = &r->cells[j], *b = &r->cells[k];
                if (a->origin == b->origin || a->rep != b->rep || !a->t0_ns ||
                    a->t0_ns != b->t0_ns || a->window_start_ns != b->window_start_ns ||
                    a->window_end_ns != b->window_end_ns || strcmp(a->gpu_uuid, b->gpu_uuid) != 0)
                    continue;
                return mb_error_set(err, MB_EINVAL,
                                    "cannot merge: cell %s#%d of %s is also in %s (the same "
                                    "measurement twice: a directory given twice, or a copy)",
                                    r->name, a->rep, e->origins[b->origin], e->origins[a->origin]);
            }
    }
    return MB_OK;
}

/* Loads every directory into e, one after another; runs of the same name pool their cells. */
static int load_merged(struct mb_an_experiment *e, const struct mb_analysis *sep,
                       const char *const *dirs, size_t ndirs, struct mb_error *err)
{
    for (size_t d = 0; d < ndirs; d++) {
        int st = mb__an_load_experiment(e, dirs[d], err);
        if (st != MB_OK)
            return st;
        mb__an_claim_origin(e, dirs[d]);
        e->emulated = e->emulated || sep->exps[d].emulated;
    }
    if (!e->name[0])
        mb__copy_str(e->name, sizeof(e->name), sep->exps[0].name);
    return MB_OK;
}

int mb_analysis_load_merged(struct mb_analysis **out, const char *const *dirs, size_t ndirs,
                            const struct mb_analysis_merge *opts, struct mb_error *err)
{
    *out = NULL;
    if (ndirs < 2 || ndirs > MB_AN_ORIGINS_MAX)
        return mb_error_set(err, MB_EINVAL, "--merge takes 2 to %d results directories, not %zu",
                            MB_AN_ORIGINS_MAX, ndirs);
    struct mb_analysis *sep = NULL, *a = NULL;
    int st = mb_analysis_load(&sep, dirs, ndirs, err);
    if (st != MB_OK)
        return st;
    if (sep->nexp != ndirs) {
        st = mb_error_set(err, MB_EINVAL,
                          "--merge: give each experiment's results directory (%zu directories "
                          "hold %zu experiments)",
                          ndirs, sep->nexp);
        goto out;
    }
    char diffs[MB_AN_ORIGINS_MAX][MB_AN_TEXT_MAX];
    for (size_t d = 1; d < ndirs; d++) {
        compare_experiments(&sep->exps[0], &sep->exps[d], diffs[d], sizeof(diffs[d]));
        if (diffs[d][0] && !(opts && opts->force)) {
            st = mb_error_set(err, MB_EINVAL,
                              "cannot merge %s with %s: different %s; --force merges anyway "
                              "(the report then says so)",
                              dirs[d], dirs[0], diffs[d]);
            goto out;
        }
    }
    char baseline[MB_AN_NAME_MAX] = "";
    if (opts && opts->baseline &&
        (st = pick_baseline(sep, dirs, ndirs, opts->baseline, baseline, err)) != MB_OK)
        goto out;
    a = calloc(1, sizeof(*a));
    struct mb_an_experiment *e = a ? calloc(1, sizeof(*e)) : NULL;
    if (!e) {
        st = mb_error_set(err, MB_ENOMEM, "out of memory");
        goto out;
    }
    a->exps = e;
    a->nexp = 1;
    mb__copy_str(e->dir, sizeof(e->dir), dirs[0]);
    mb__copy_str(e->baseline_run, sizeof(e->baseline_run), baseline);
    if ((st = load_merged(e, sep, dirs, ndirs, err)) != MB_OK ||
        (st = check_same_cell(e, err)) != MB_OK ||
        (st = mb__an_analyse_experiment(e, err)) != MB_OK)
        goto out;
    origin_notes(e);
    for (size_t d = 1; d < ndirs; d++)
        if (diffs[d][0])
            mb__an_add_note(e, "merged with --force despite different %s (%s)", diffs[d], dirs[d]);
    if (baseline[0])
        mb__an_add_note(e, "baseline: run %s only (--baseline %s)", baseline, opts->baseline);
out:
    mb_analysis_destroy(sep);
    if (st != MB_OK) {
        mb_analysis_destroy(a);
        return st;
    }
    *out = a;
    return MB_OK;
}
