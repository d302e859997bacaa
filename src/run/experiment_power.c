/* SPDX-License-Identifier: Apache-2.0 */
/* The experiment's power-limit axis: runs expanded per limit, and skipped where none can be set. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "migbench/experiment.h"
#include "migbench/device.h"
#include "migbench/powercap.h"

/*
 * Two limits of one list that would name the same run ("212.5W" and "212.50001W" both give
 * "cap-212.5W"). The YAML reader parsed each limit and refused exact repeats.
 */
static int check_list(const struct mb_experiment *exp, const struct mb_power_setting *list,
                      size_t n, unsigned line, const char *field, struct mb_error *err)
{
    for (size_t i = 0; i < n; i++) {
        char a[32], b[32];
        mb_power_setting_format(&list[i], MB_PSET_SLUG, a, sizeof(a));
        for (size_t k = 0; k < i; k++) {
            mb_power_setting_format(&list[k], MB_PSET_SLUG, b, sizeof(b));
            if (strcmp(a, b) == 0)
                return mb_error_set(err, MB_EPARSE,
                                    "%s:%u: field '%s[%zu]': '%s' is listed twice (also [%zu])",
                                    exp->path, line, field, i, list[i].text, k);
        }
    }
    return MB_OK;
}

static bool name_taken(const struct mb_exp_run *runs, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(runs[i].name, name) == 0)
            return true;
    return false;
}

/* Appends run r expanded over its limits (or r itself) to out[*n]. */
static int expand_run(const struct mb_experiment *exp, size_t idx, struct mb_exp_run *out,
                      size_t *n, struct mb_error *err)
{
    const struct mb_exp_run *r = &exp->runs[idx];
    bool own = r->n_power_limits > 0;
    size_t nl = own ? r->n_power_limits : exp->n_power_limits;
    const struct mb_power_setting *list = own ? r->power_limits : exp->power_limits;
    unsigned line = own ? r->power_limits_line : exp->power_limits_line;
    char field[MB_EXP_NAME_MAX + 32];
    if (own)
        snprintf(field, sizeof(field), "runs[%zu].power_limits", idx);
    else
        snprintf(field, sizeof(field), "power_limits");
    if (r->power_limit.kind != MB_PSET_NONE || nl == 0) {
        if (*n == MB_EXP_MAX_RUNS)
            return mb_error_set(err, MB_EPARSE, "%s: more than %d runs", exp->path,
                                MB_EXP_MAX_RUNS);
        out[(*n)++] = *r;
        return MB_OK;
    }
    int rc = check_list(exp, list, nl, line, field, err);
    if (rc != MB_OK)
        return rc;
    for (size_t i = 0; i < nl; i++) {
        if (*n == MB_EXP_MAX_RUNS)
            return mb_error_set(err, MB_EPARSE,
                                "%s:%u: field '%s': the power limits make more than %d runs",
                                exp->path, line, field, MB_EXP_MAX_RUNS);
        struct mb_exp_run *x = &out[(*n)++];
        *x = *r;
        char slug[32];
        mb_power_setting_format(&list[i], MB_PSET_SLUG, slug, sizeof(slug));
        int w = snprintf(x->name, sizeof(x->name), "%s.cap-%s", r->name, slug);
        if (w < 0 || (size_t)w >= sizeof(x->name))
            return mb_error_set(err, MB_EPARSE,
                                "%s:%u: field '%s': run name '%s.cap-%s' is longer than %d",
                                exp->path, r->line, field, r->name, slug, MB_EXP_NAME_MAX - 1);
        x->power_limit = list[i];
        snprintf(x->base_run, sizeof(x->base_run), "%s", r->name);
        x->n_power_limits = 0;
    }
    return MB_OK;
}

int mb_experiment_expand_power(struct mb_experiment *exp, struct mb_error *err)
{
    const struct mb_experiment *cexp = exp;
    int rc = check_list(cexp, cexp->power_limits, cexp->n_power_limits, cexp->power_limits_line,
                        "power_limits", err);
    if (rc != MB_OK)
        return rc;
    struct mb_exp_run *out = calloc(MB_EXP_MAX_RUNS, sizeof(*out));
    if (!out)
        return mb_error_set(err, MB_ENOMEM, "out of memory");
    size_t n = 0;
    for (size_t i = 0; i < exp->n_runs && rc == MB_OK; i++)
        rc = expand_run(exp, i, out, &n, err);
    /* An expanded name must not meet a run written with that name. */
    for (size_t i = 0; i < n && rc == MB_OK; i++)
        if (name_taken(out, i, out[i].name))
            rc = mb_error_set(err, MB_EPARSE,
                              "%s:%u: run '%s' (from power_limits) has the name of another run",
                              exp->path, out[i].line, out[i].name);
    if (rc == MB_OK) {
        memcpy(exp->runs, out, n * sizeof(*out));
        exp->n_runs = n;
    }
    free(out);
    return rc;
}

int mb_experiment_power_filter(const struct mb_experiment *exp, struct mb_cell *cells,
                               size_t *n_cells, char ***notes, size_t *n_notes,
                               struct mb_error *err)
{
    size_t kept = 0;
    for (size_t i = 0; i < *n_cells; i++) {
        const struct mb_exp_run *r = &exp->runs[cells[i].run];
        if (r->power_limit.kind == MB_PSET_NONE || r->power_limit.kind == MB_PSET_DEFAULT) {
            cells[kept++] = cells[i];
            continue;
        }
        if (i > 0 && cells[i - 1].run == cells[i].run)
            continue; /* one note per run */
        char **grown = realloc(*notes, (*n_notes + 2) * sizeof(*grown));
        if (!grown)
            return mb_error_set(err, MB_ENOMEM, "out of memory");
        *notes = grown;
        char buf[256];
        snprintf(buf, sizeof(buf), "run '%s' skipped: its %s power limit cannot be set here",
                 r->name, r->power_limit.text);
        if (!(grown[*n_notes] = strdup(buf)))
            return mb_error_set(err, MB_ENOMEM, "out of memory");
        (*n_notes)++;
        grown[*n_notes] = NULL;
    }
    *n_cells = kept;
    return MB_OK;
}

int mb_experiment_power_check(const struct mb_experiment *exp, const struct mb_cell *cells,
                              size_t n_cells, const struct mb_power_limit *pl, struct mb_error *err)
{
    for (size_t i = 0; i < n_cells; i++) {
        const struct mb_exp_run *r = &exp->runs[cells[i].run];
        if (r->power_limit.kind == MB_PSET_NONE || (i > 0 && cells[i - 1].run == cells[i].run))
            continue;
        uint32_t mw;
        struct mb_error e;
        int rc = mb_powercap_resolve(&r->power_limit, pl, &mw, &e);
        if (rc == MB_EUNSUPPORTED)
            return mb_error_set(err, rc, "run '%s': %s", r->name, e.msg);
        if (rc != MB_OK) {
            /* The line of the list it came from: the run's own, else the global one. */
            unsigned line = r->power_limits_line ? r->power_limits_line : exp->power_limits_line;
            if (line == 0) /* no line: the list came from a --set option */
                return mb_error_set(err, MB_EPARSE, "--set power_limits: %s: %s",
                                    r->power_limit.text, e.msg);
            return mb_error_set(err, MB_EPARSE, "%s:%u: field 'power_limits': %s: %s", exp->path,
                                line, r->power_limit.text, e.msg);
        }
    }
    return MB_OK;
}

int mb_experiment_power_check_device(const struct mb_experiment *exp, struct mb_device *dev,
                                     const char *device_spec, const struct mb_cell *cells,
                                     size_t n_cells, struct mb_error *err)
{
    if (!(mb_device_caps(dev) & MB_CAP_SET_POWER_LIMIT))
        return MB_OK;
    struct mb_device_info info;
    char ledger[4096];
    if (mb_device_info(dev, &info, NULL) != MB_OK ||
        mb_powercap_ledger_path(device_spec, info.uuid, getenv("MIGBENCH_STATE_DIR"), ledger,
                                sizeof(ledger), NULL) != MB_OK)
        return MB_OK; /* no restore record here: the runs with a limit are skipped */
    struct mb_power_limit pl;
    int rc = mb_device_power_limit(dev, &pl, err);
    if (rc == MB_OK)
        rc = mb_experiment_power_check(exp, cells, n_cells, &pl, err);
    return rc == MB_EPARSE ? mb_error_restatus(err, MB_EINVAL) : rc;
}
