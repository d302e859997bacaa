/* SPDX-License-Identifier: Apache-2.0 */
/* The text output of `migbench plan`: the plan, the --pareto front, the power-limit table and the
 * --verify comparison. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>

#include "migbench/layout.h"
#include "migbench/report_verbs.h"

static const char *fmt_time(double s, char *buf, size_t cap)
{
    if (!isfinite(s)) {
        snprintf(buf, cap, "n/a");
    } else if (s < 120) {
        snprintf(buf, cap, "%.1f s", s);
    } else if (s >= 1e12) {
        snprintf(buf, cap, "%.3g s", s); /* past what the h/m/s integers below can hold */
    } else {
        double r = floor(s + 0.5);
        unsigned long h = (unsigned long)(r / 3600);
        unsigned long m = (unsigned long)((r - (double)h * 3600) / 60);
        unsigned long sec = (unsigned long)(r - (double)h * 3600 - (double)m * 60);
        if (h)
            snprintf(buf, cap, "%luh %02lum %02lus", h, m, sec);
        else
            snprintf(buf, cap, "%lum %02lus", m, sec);
    }
    return buf;
}

static const char *fmt_energy(double j, char *buf, size_t cap)
{
    if (!isfinite(j))
        snprintf(buf, cap, "n/a");
    else if (fabs(j) >= 1e9)
        snprintf(buf, cap, "%.3f GJ", j / 1e9);
    else if (fabs(j) >= 1e6)
        snprintf(buf, cap, "%.3f MJ", j / 1e6);
    else if (fabs(j) >= 1e3)
        snprintf(buf, cap, "%.3f kJ", j / 1e3);
    else
        snprintf(buf, cap, "%.1f J", j);
    return buf;
}

/* A number with `digits` significant digits (precision < 0: "%+.1f%%"), or "n/a". */
static const char *fmt_num(double v, int digits, char *buf, size_t cap)
{
    if (!isfinite(v))
        snprintf(buf, cap, "n/a");
    else if (digits < 0)
        snprintf(buf, cap, "%+.1f%%", v);
    else
        snprintf(buf, cap, "%.*g", digits, v);
    return buf;
}

static void layout_names(const struct mb_plan_context *c, const struct mb_plan_gpu *g, char *buf,
                         size_t cap)
{
    size_t n = 0;
    buf[0] = '\0';
    if (!g->mig) {
        snprintf(buf, cap, "MIG off (whole GPU)");
        return;
    }
    if (g->layout.n == 0) {
        snprintf(buf, cap, "idle (no job)");
        return;
    }
    for (size_t i = 0; i < g->layout.n && n + 1 < cap; i++) {
        int w = snprintf(buf + n, cap - n, "%s%s", i ? " + " : "",
                         c->model->profiles[g->layout.items[i].profile].name);
        if (w < 0)
            break;
        n += (size_t)w;
    }
}

/* ---------------------------------------------------------------------------------------------
 * Text output
 */

static void print_queues(FILE *out, const struct mb_plan_context *c, const struct mb_plan *p,
                         unsigned g, size_t ninst)
{
    char tb[32];
    for (size_t i = 0; i < ninst; i++) {
        char slices[16] = "all";
        const char *prof = MB_PLAN_FULL;
        if (p->gpus[g].mig) {
            const struct mb_layout_item *it = &p->gpus[g].layout.items[i];
            mb_layout_slices_str(it->placement, slices, sizeof(slices));
            prof = c->model->profiles[it->profile].name;
        }
        fprintf(out, "  %-3zu %-11s mem %-5s ", i, prof, slices);
        unsigned k = 0;
        for (;; k++) {
            const struct mb_plan_slot *hit = NULL;
            for (size_t j = 0; j < p->n_slots && !hit; j++) {
                const struct mb_plan_slot *s = &p->slots[j];
                if (s->gpu == g && s->instance == i && s->order == k)
                    hit = s;
            }
            if (!hit)
                break;
            if (p->objective == MB_PLAN_THROUGHPUT)
                fprintf(out, "%s%s (%.3g x full)", k ? " -> " : "", c->js->jobs[hit->job].name,
                        hit->normalised);
            else
                fprintf(out, "%s%s (%s)", k ? " -> " : "", c->js->jobs[hit->job].name,
                        fmt_time(hit->time_s, tb, sizeof(tb)));
        }
        fprintf(out, "\n");
    }
}

/* Each GPU: its layout (and its power limit when they differ), its picture, its queues. */
static void print_gpus(FILE *out, const struct mb_plan_context *c, const struct mb_plan *p)
{
    bool per_gpu = mb_plan_limits_differ(p);
    for (unsigned g = 0; g < p->count; g++) {
        char names[512], lim[48] = "";
        layout_names(c, &p->gpus[g], names, sizeof(names));
        if (per_gpu && isnan(p->gpus[g].power_limit_w))
            snprintf(lim, sizeof(lim), ", default power limit");
        else if (per_gpu)
            snprintf(lim, sizeof(lim), ", power limit %g W", p->gpus[g].power_limit_w);
        fprintf(out, "\nGPU %u: %s%s\n", g, names, lim);
        if (p->gpus[g].mig && p->gpus[g].layout.n) {
            char pic[256];
            mb_layout_picture(c->model, &p->gpus[g].layout, pic, sizeof(pic));
            fprintf(out, "  %s\n", pic);
        }
        size_t ninst = p->gpus[g].mig ? p->gpus[g].layout.n : 0;
        if (!p->gpus[g].mig)
            for (size_t j = 0; j < p->n_slots; j++)
                if (p->slots[j].gpu == g)
                    ninst = 1;
        print_queues(out, c, p, g, ninst);
    }
}

/* The jobs table. */
static void print_jobs(FILE *out, const struct mb_plan_context *c, const struct mb_plan *p)
{
    char a[48], b[48], d[48];
    bool cont = p->objective == MB_PLAN_THROUGHPUT;
    fprintf(out, "\njobs:\n");
    if (cont)
        fprintf(out, "  %-16s %-14s %3s %4s %-10s %12s %8s %6s  %s\n", "job", "workload", "gpu",
                "inst", "partition", "units/s", "x full", "proxy", "source");
    else
        fprintf(out, "  %-16s %-14s %3s %4s %-10s %10s %10s %12s %10s %6s  %s\n", "job", "workload",
                "gpu", "inst", "partition", "start", "time", "energy", "J/unit", "proxy", "source");
    for (size_t j = 0; j < p->n_slots; j++) {
        const struct mb_plan_slot *s = &p->slots[j];
        const struct mb_plan_profile *r = mb_plan_slot_row(c, s);
        const struct mb_plan_job *job = &c->js->jobs[s->job];
        if (cont) {
            fprintf(out, "  %-16s %-14s %3u %4u %-10s %12.4g %8s %6s  %s\n", job->name,
                    job->workload, s->gpu, s->instance, r->partition, s->throughput,
                    fmt_num(s->normalised, 3, a, sizeof(a)), r->proxy ? "PROXY" : "-", r->source);
        } else {
            double e = mb_plan_slot_energy(c, p, s);
            fprintf(out, "  %-16s %-14s %3u %4u %-10s %10s %10s %12s %10.4g %6s  %s\n", job->name,
                    job->workload, s->gpu, s->instance, r->partition,
                    fmt_time(s->start_s, a, sizeof(a)), fmt_time(s->time_s, b, sizeof(b)),
                    fmt_energy(e, d, sizeof(d)), e / job->work, r->proxy ? "PROXY" : "-",
                    r->source);
        }
    }
}

/* The predicted totals of a continuous (throughput) plan. */
static void print_totals_cont(FILE *out, const struct mb_plan *p)
{
    fprintf(out,
            "predicted: system throughput %.3f (sum of throughput / whole-GPU throughput), "
            "fleet power %.1f W\n",
            p->system_throughput, p->power_w);
    fprintf(out,
            "baseline (each job alone on the whole GPU, one after another): system throughput "
            "%u\n",
            p->count < p->n_slots ? p->count : (unsigned)p->n_slots);
    if (!p->exact)
        fprintf(out, "upper bound: system throughput %.3f (gap %.2f%%)\n", p->bound_throughput,
                p->gap_pct);
}

/* The predicted totals of a plan of finite jobs, with the baseline and the bound. */
static void print_totals(FILE *out, const struct mb_plan_context *c, const struct mb_plan *p)
{
    char a[48], b[48], d[48];
    fprintf(out, "predicted: makespan %s, energy %s (idle %s + dynamic %s)\n",
            fmt_time(p->makespan_s, a, sizeof(a)), fmt_energy(p->energy_j, b, sizeof(b)),
            fmt_energy(p->idle_energy_j, d, sizeof(d)),
            fmt_energy(p->dynamic_energy_j, a + 24, sizeof(a) - 24));
    const char *u = mb_plan_common_unit(c, p);
    if (u)
        fprintf(out, "energy per unit: %.4g J/%s over %.4g %s\n",
                p->energy_j / mb_plan_total_work(c->js), u, mb_plan_total_work(c->js), u);
    else
        fprintf(out, "energy per unit: per job only (the jobs count different units)\n");
    fprintf(out,
            "baseline (each job alone on the whole GPU, one after another): makespan %s, "
            "energy %s\n",
            fmt_time(p->base_makespan_s, a, sizeof(a)), fmt_energy(p->base_energy_j, b, sizeof(b)));
    double es = mb_plan_pct_less(p->base_energy_j, p->energy_j);
    double ms = mb_plan_pct_less(p->base_makespan_s, p->makespan_s);
    if (isfinite(es))
        fprintf(out, "gain over baseline: %.1f%% %s energy, %.1f%% %s makespan\n", fabs(es),
                es >= 0 ? "less" : "more", fabs(ms), ms >= 0 ? "shorter" : "longer");
    else
        fprintf(out, "gain over baseline: n/a (some workload has no 'full' profile row)\n");
    if (!p->exact)
        fprintf(out, "lower bound: makespan %s, energy %s; gap %.2f%%\n",
                fmt_time(p->bound_makespan_s, a, sizeof(a)),
                fmt_energy(p->bound_energy_j, b, sizeof(b)), p->gap_pct);
}

/* What the model does not cover, and the rows that are not plain measurements. */
static void print_notes(FILE *out, const struct mb_plan_context *c, const struct mb_plan *p)
{
    size_t proxies = 0, emulated = 0;
    for (size_t j = 0; j < p->n_slots; j++) {
        proxies += mb_plan_slot_row(c, &p->slots[j])->proxy;
        emulated += mb_plan_slot_row(c, &p->slots[j])->emulated;
    }
    fprintf(out,
            "time-slicing / MPS sharing: not profiled (profile rows describe one job alone on a "
            "partition; MPS rows only stand in for MIG sizes)\n");
    if (proxies)
        fprintf(out,
                "note: %zu job%s use%s MPS proxy rows (an MPS run standing in for a MIG size); "
                "marked PROXY above\n",
                proxies, proxies == 1 ? "" : "s", proxies == 1 ? "s" : "");
    if (emulated)
        fprintf(out,
                "note: %zu job%s use%s profile rows from an EMULATED device: modelled numbers, not "
                "measurements\n",
                emulated, emulated == 1 ? "" : "s", emulated == 1 ? "s" : "");
}

void mb_plan_text_write(FILE *out, const struct mb_plan_context *c, const struct mb_plan *p)
{
    fprintf(out, "plan: %zu job%s on %u x %s, objective %s", p->n_slots, p->n_slots == 1 ? "" : "s",
            p->count, c->model->name, mb_plan_objective_str(p->objective));
    if (p->exact)
        fprintf(out, " (exact optimum, %zu search nodes)\n", p->nodes);
    else
        fprintf(out, " (heuristic, gap to lower bound %.2f%%)\n", p->gap_pct);
    fprintf(out, "profiles: %s; idle power %.1f W (mean of %zu row%s)\n", c->sources,
            p->idle_power_w, p->idle_rows, p->idle_rows == 1 ? "" : "s");
    print_gpus(out, c, p);
    print_jobs(out, c, p);
    fprintf(out, "\n");
    if (p->objective == MB_PLAN_THROUGHPUT)
        print_totals_cont(out, p);
    else
        print_totals(out, c, p);
    print_notes(out, c, p);
}

void mb_plan_check_text_write(FILE *out, const struct mb_plan_check *ck, const char *plan,
                              const char *verify)
{
    char a[48], b[48], d[48];
    fprintf(out, "verify: plan %s against %s (%zu successful cells; idle power %.1f W%s)\n", plan,
            verify, ck->cells, ck->idle_power_w,
            ck->idle_measured ? " measured" : " from the plan: the cells have no idle baseline");
    fprintf(out, "  %-16s %12s %12s %8s %12s %12s\n", "job", "pred units/s", "meas units/s",
            "error", "pred time", "meas time");
    for (size_t k = 0; k < ck->njobs; k++) {
        const struct mb_plan_check_job *j = &ck->jobs[k];
        double tp = j->predicted_throughput, thr = j->measured_throughput;
        char e[24];
        fprintf(out, "  %-16s %12.6g %12s %8s %12s %12s\n", j->name[0] ? j->name : "?", tp,
                fmt_num(thr, 6, a, sizeof(a)), fmt_num((tp - thr) / thr * 100, -1, e, sizeof(e)),
                fmt_time(j->predicted_time_s, b, sizeof(b)),
                fmt_time(j->measured_time_s, d, sizeof(d)));
    }
    double pmk = ck->predicted_makespan_s, pe = ck->predicted_energy_j;
    double mk = ck->measured_makespan_s, em = ck->measured_energy_j;
    fprintf(out, "makespan: predicted %s, measured %s", fmt_time(pmk, a, sizeof(a)),
            fmt_time(mk, b, sizeof(b)));
    if (ck->complete)
        fprintf(out, " (prediction error %+.1f%%)", (pmk - mk) / mk * 100);
    fprintf(out, "\nenergy: predicted %s, measured %s", fmt_energy(pe, a, sizeof(a)),
            fmt_energy(em, b, sizeof(b)));
    if (ck->complete)
        fprintf(out, " (prediction error %+.1f%%)", (pe - em) / em * 100);
    fprintf(out, "\n");
    if (!ck->complete)
        fprintf(out, "note: some jobs have no measured throughput or power in %s; totals n/a\n",
                verify);
    fprintf(out, "method: measured time = work / measured throughput; each cell's power above idle "
                 "is split among its jobs by compute slices; queues replayed as planned\n");
}

void mb_plan_pareto_text_write(FILE *out, const struct mb_plan_context *c,
                               struct mb_plan *const *front, size_t n_front, unsigned count)
{
    char a[48], b[48];
    fprintf(out, "energy vs makespan front: %zu plan%s on %u x %s (%s)\n", n_front,
            n_front == 1 ? "" : "s", count, c->model->name,
            n_front && front[0]->exact ? "exact" : "heuristic");
    fprintf(out, "  %-3s %14s %14s %10s  %s\n", "#", "makespan", "energy", "vs base",
            "layout "
            "(GPU 0)");
    for (size_t i = 0; i < n_front; i++) {
        char names[512];
        layout_names(c, &front[i]->gpus[0], names, sizeof(names));
        double es = mb_plan_pct_less(front[i]->base_energy_j, front[i]->energy_j);
        char e[24];
        fprintf(out, "  %-3zu %14s %14s %10s  %s\n", i, fmt_time(front[i]->makespan_s, a, 48),
                fmt_energy(front[i]->energy_j, b, 48), fmt_num(-es, -1, e, sizeof(e)), names);
    }
}

void mb_plan_caps_text_write(FILE *out, const struct mb_plan *p,
                             const struct mb_plan_cap_result *res, size_t n)
{
    char a[48], b[48], l[32];
    bool per_gpu = mb_plan_limits_differ(p);
    fprintf(out, "\npower limit (one per GPU, chosen with the layout):\n");
    fprintf(out, "  %-10s %14s %14s\n", "limit", "energy", "makespan");
    for (size_t i = 0; i < n; i++) {
        const struct mb_plan_cap_result *r = &res[i];
        if (isnan(r->power_limit_w))
            snprintf(l, sizeof(l), "default");
        else
            snprintf(l, sizeof(l), "%g W", r->power_limit_w);
        bool chosen = !per_gpu && ((isnan(r->power_limit_w) && isnan(p->power_limit_w)) ||
                                   r->power_limit_w == p->power_limit_w);
        if (r->status != MB_OK)
            fprintf(out, "  %-10s %14s %14s  (%s)\n", l, "-", "-", mb_status_str(r->status));
        else
            fprintf(out, "  %-10s %14s %14s%s\n", l, fmt_energy(r->energy_j, a, sizeof(a)),
                    fmt_time(r->makespan_s, b, sizeof(b)), chosen ? "  <- chosen" : "");
    }
    if (per_gpu)
        fprintf(out, "  %-10s %14s %14s  <- chosen (each GPU's limit above)\n", "per GPU",
                fmt_energy(p->energy_j, a, sizeof(a)), fmt_time(p->makespan_s, b, sizeof(b)));
}
