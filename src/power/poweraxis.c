/* SPDX-License-Identifier: Apache-2.0 */
/* The power-limit axis of an analysed experiment (include/migbench/poweraxis.h). */
#include "power/poweraxis.h"

#include <math.h>
#include <stdbool.h>
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

static cJSON *num_or_null(bool ok, double v)
{
    return ok && isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull();
}

static cJSON *choice_json(const struct mb_paxis_item *it, bool ok, const struct mb_power_choice *c)
{
    if (!ok)
        return cJSON_CreateNull();
    const struct mb_paxis_point *p = &it->points[c->index];
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cJSON_AddStringToObject(o, "limit", p->limit);
    cJSON_AddItemToObject(o, "enforced_w", num_or_null(p->enforced_w.valid, p->enforced_w.v));
    cJSON_AddItemToObject(o, "value", num_or_null(true, c->value));
    cJSON_AddItemToObject(o, "ci95", num_or_null(true, c->ci95));
    cJSON_AddItemToObject(o, "runner_up",
                          c->has_runner ? cJSON_CreateString(it->points[c->runner_up].limit)
                                        : cJSON_CreateNull());
    cJSON_AddItemToObject(o, "distinct",
                          c->intervals ? cJSON_CreateBool(c->distinct) : cJSON_CreateNull());
    return o;
}

static cJSON *point_json(const struct mb_paxis_point *p)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cJSON_AddStringToObject(o, "limit", p->limit);
    cJSON_AddItemToObject(o, "enforced_w", num_or_null(p->enforced_w.valid, p->enforced_w.v));
    cJSON_AddItemToObject(o, "throughput", num_or_null(p->throughput.valid, p->throughput.mean));
    cJSON_AddItemToObject(o, "throughput_ci95",
                          num_or_null(p->throughput.ci_valid, p->throughput.ci95));
    cJSON_AddItemToObject(o, "j_per_unit", num_or_null(p->j_per_unit.valid, p->j_per_unit.mean));
    cJSON_AddItemToObject(o, "j_per_unit_ci95",
                          num_or_null(p->j_per_unit.ci_valid, p->j_per_unit.ci95));
    cJSON_AddItemToObject(o, "power_w", num_or_null(p->power_w.valid, p->power_w.mean));
    cJSON_AddItemToObject(o, "repetitions", cJSON_CreateNumber((double)p->throughput.n));
    cJSON_AddItemToObject(o, "power_capped",
                          p->throttle_valid ? cJSON_CreateBool(p->power_capped)
                                            : cJSON_CreateNull());
    return o;
}

cJSON *mb_paxis_json(const struct mb_paxis *a)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    char rule[64];
    if (a->rule.rule == MB_PSEL_COST)
        snprintf(rule, sizeof(rule), "cost:%g", a->rule.eta);
    else if (a->rule.rule == MB_PSEL_SLOWDOWN)
        snprintf(rule, sizeof(rule), "slowdown:%g", a->rule.max_slowdown);
    else
        snprintf(rule, sizeof(rule), "%s", mb_power_rule_str(a->rule.rule));
    cJSON_AddStringToObject(o, "rule", rule);
    cJSON *runs = cJSON_AddArrayToObject(o, "runs");
    for (size_t i = 0; runs && i < a->n; i++) {
        const struct mb_paxis_item *it = &a->items[i];
        cJSON *r = cJSON_CreateObject();
        if (!r)
            break;
        cJSON_AddItemToArray(runs, r);
        cJSON_AddStringToObject(r, "run", it->run);
        cJSON_AddStringToObject(r, "job", it->job);
        cJSON_AddStringToObject(r, "unit", it->unit);
        cJSON *pts = cJSON_AddArrayToObject(r, "points");
        for (size_t k = 0; pts && k < it->npoints; k++)
            cJSON_AddItemToArray(pts, point_json(&it->points[k]));
        cJSON_AddItemToObject(r, "energy_optimal", choice_json(it, it->optimal_ok, &it->optimal));
        cJSON_AddItemToObject(r, "chosen", choice_json(it, it->chosen_ok, &it->chosen));
        cJSON_AddItemToObject(r, "note",
                              it->note[0] ? cJSON_CreateString(it->note) : cJSON_CreateNull());
    }
    return o;
}

/* "mean +- ci" with 4 significant digits, "n/a" when unmeasured. */
static void fmt_est(const struct mb_estimate *e, char *out, size_t cap)
{
    if (!e->valid)
        snprintf(out, cap, "n/a");
    else if (e->ci_valid)
        snprintf(out, cap, "%.4g +- %.2g", e->mean, e->ci95);
    else
        snprintf(out, cap, "%.4g", e->mean);
}

/* What the 95% intervals say about a choice against its runner-up. */
static const char *separation(const struct mb_power_choice *c)
{
    if (!c->has_runner)
        return "";
    if (!c->intervals)
        return "; no 95% intervals (fewer than 2 repetitions) to separate it from the runner-up";
    return c->distinct ? "; its 95% interval is clear of the runner-up's"
                       : "; not separated from the runner-up by the 95% intervals";
}

int mb_paxis_write_text(FILE *f, const struct mb_paxis *a)
{
    if (a->n == 0)
        return 0;
    fprintf(f, "\npower limits (per run and job; means +- 95%% CI over repetitions; rule %s)\n",
            mb_power_rule_str(a->rule.rule));
    for (size_t i = 0; i < a->n; i++) {
        const struct mb_paxis_item *it = &a->items[i];
        fprintf(f, "  %s / %s\n", it->run, it->job);
        fprintf(f, "    %-10s %9s %26s %26s %9s %6s\n", "limit", "enforced", "throughput", "J/unit",
                "power_W", "capped");
        for (size_t k = 0; k < it->npoints; k++) {
            const struct mb_paxis_point *p = &it->points[k];
            char enf[24] = "n/a", thr[48], jpu[48], pw[24] = "n/a";
            if (p->enforced_w.valid)
                snprintf(enf, sizeof(enf), "%.0f W", p->enforced_w.v);
            fmt_est(&p->throughput, thr, sizeof(thr));
            fmt_est(&p->j_per_unit, jpu, sizeof(jpu));
            if (p->power_w.valid)
                snprintf(pw, sizeof(pw), "%.1f", p->power_w.mean);
            fprintf(f, "    %-10s %9s %26s %26s %9s %6s\n", p->limit, enf, thr, jpu, pw,
                    !p->throttle_valid ? "n/a"
                    : p->power_capped  ? "yes"
                                       : "no");
        }
        char unit[MB_AN_NAME_MAX];
        snprintf(unit, sizeof(unit), "%s", it->unit);
        size_t ul = strlen(unit);
        if (ul > 2 && strcmp(unit + ul - 2, "/s") == 0)
            unit[ul - 2] = '\0';
        if (it->optimal_ok)
            fprintf(f, "    energy-optimal limit: %s (%.4g J per unit, %s%s)\n",
                    it->points[it->optimal.index].limit, it->optimal.value, unit[0] ? unit : "unit",
                    separation(&it->optimal));
        if (it->chosen_ok && a->rule.rule != MB_PSEL_ENERGY)
            fprintf(f, "    %s rule: %s%s\n", mb_power_rule_str(a->rule.rule),
                    it->points[it->chosen.index].limit, separation(&it->chosen));
        if (it->note[0])
            fprintf(f, "    note: %s\n", it->note);
    }
    return ferror(f) ? -1 : 0;
}
