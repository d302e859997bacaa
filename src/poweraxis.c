/* SPDX-License-Identifier: Apache-2.0 */
/* The power-limit axis of an analysed experiment (include/migbench/poweraxis.h). */
#include "migbench/poweraxis.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "migbench/device.h"

static struct mb_paxis_item *find_item(struct mb_paxis *a, const char *run, const char *job)
{
    for (size_t i = 0; i < a->n; i++)
        if (strcmp(a->items[i].run, run) == 0 && strcmp(a->items[i].job, job) == 0)
            return &a->items[i];
    return NULL;
}

static void fill_point(struct mb_paxis_point *p, const struct mb_an_experiment *e, size_t r,
                       const struct mb_an_job *j)
{
    const struct mb_an_run *run = &e->runs[r];
    memset(p, 0, sizeof(*p));
    p->run = r;
    snprintf(p->limit, sizeof(p->limit), "%s", run->power_limit);
    p->throughput = j->throughput;
    p->j_per_unit = j->j_per_unit;
    p->power_w = run->power_w;
    for (size_t c = 0; c < run->ncells; c++) {
        const struct mb_an_cell *cell = &run->cells[c];
        if (!cell->ok)
            continue;
        if (!p->enforced_w.valid && cell->enforced_w.valid)
            p->enforced_w = cell->enforced_w;
        if (cell->throttle_valid) {
            p->throttle_valid = 1;
            p->power_capped |= (cell->throttle_reasons & MB_THROTTLE_SW_POWER_CAP) != 0;
        }
    }
}

static int by_limit_desc(const void *a, const void *b)
{
    const struct mb_paxis_point *x = a, *y = b;
    double vx = x->enforced_w.valid ? x->enforced_w.v : -1;
    double vy = y->enforced_w.valid ? y->enforced_w.v : -1;
    return vx < vy ? 1 : vx > vy ? -1 : 0;
}

static void choose(struct mb_paxis_item *it, const struct mb_power_rule_opts *rule)
{
    qsort(it->points, it->npoints, sizeof(it->points[0]), by_limit_desc);
    struct mb_power_point pts[MB_PAXIS_MAX_POINTS];
    double max_w = 0;
    for (size_t k = 0; k < it->npoints; k++) {
        const struct mb_paxis_point *p = &it->points[k];
        pts[k] = (struct mb_power_point){
            .limit_w = p->enforced_w.valid ? p->enforced_w.v : NAN,
            .energy_per_unit = p->j_per_unit.valid ? p->j_per_unit.mean : NAN,
            .energy_ci95 = p->j_per_unit.ci_valid ? p->j_per_unit.ci95 : NAN,
            .throughput = p->throughput.valid ? p->throughput.mean : NAN,
            .throughput_ci95 = p->throughput.ci_valid ? p->throughput.ci95 : NAN,
        };
        if (p->enforced_w.valid && p->enforced_w.v > max_w)
            max_w = p->enforced_w.v;
    }
    struct mb_power_rule_opts energy = {.rule = MB_PSEL_ENERGY};
    struct mb_error e;
    it->optimal_ok = mb_power_select(pts, it->npoints, &energy, &it->optimal, &e) == MB_OK;
    if (!it->optimal_ok)
        snprintf(it->note, sizeof(it->note), "%.200s", e.msg);
    struct mb_power_rule_opts o = *rule;
    if (o.rule == MB_PSEL_COST)
        o.max_power_w = max_w > 0 ? max_w : NAN;
    it->chosen_ok = mb_power_select(pts, it->npoints, &o, &it->chosen, &e) == MB_OK;
    if (!it->chosen_ok && !it->note[0])
        snprintf(it->note, sizeof(it->note), "%.200s", e.msg);
}

int mb_paxis_build(const struct mb_an_experiment *e, const struct mb_power_rule_opts *rule,
                   struct mb_paxis *out, struct mb_error *err)
{
    memset(out, 0, sizeof(*out));
    out->rule.rule = MB_PSEL_ENERGY;
    if (rule)
        out->rule = *rule;
    size_t cap = 0;
    for (size_t r = 0; r < e->nruns; r++)
        if (e->runs[r].power_limit[0])
            cap += e->runs[r].njobs;
    if (cap == 0)
        return MB_OK;
    out->items = calloc(cap, sizeof(*out->items));
    if (!out->items)
        return mb_error_set(err, MB_ENOMEM, "out of memory");
    for (size_t r = 0; r < e->nruns; r++) {
        const struct mb_an_run *run = &e->runs[r];
        if (!run->power_limit[0])
            continue;
        const char *base = run->base_run[0] ? run->base_run : run->name;
        for (size_t j = 0; j < run->njobs; j++) {
            struct mb_paxis_item *it = find_item(out, base, run->jobs[j].name);
            if (!it) {
                it = &out->items[out->n++];
                snprintf(it->run, sizeof(it->run), "%s", base);
                snprintf(it->job, sizeof(it->job), "%s", run->jobs[j].name);
                snprintf(it->unit, sizeof(it->unit), "%s", run->jobs[j].unit);
            }
            if (it->npoints == MB_PAXIS_MAX_POINTS) {
                mb_paxis_free(out);
                return mb_error_set(err, MB_ERANGE, "run '%s': more than %d power limits", base,
                                    MB_PAXIS_MAX_POINTS);
            }
            fill_point(&it->points[it->npoints++], e, r, &run->jobs[j]);
        }
    }
    for (size_t i = 0; i < out->n; i++)
        choose(&out->items[i], &out->rule);
    return MB_OK;
}

void mb_paxis_free(struct mb_paxis *a)
{
    if (!a)
        return;
    free(a->items);
    a->items = NULL;
    a->n = 0;
}
