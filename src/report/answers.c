/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The answers a report opens with, one sentence per question: which run (sharing mode, MIG mix,
 * power limit) does the most work per joule and the most work per second, by how much against
 * running the jobs one after another, with the 95% interval, and whether its lead over the next
 * best is clear of the noise. Every renderer prints these sentences first; JSON carries the
 * fields too.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "power/poweraxis.h"
#include "report_internal.h"

static int is_exclusive(const struct mb_an_run *r)
{
    return strcmp(r->mode, "exclusive") == 0;
}

/* The run's figure for question q: a gain over one-after-another (exclusive: 0 by definition). */
static int figure(const struct mb_an_run *r, int q, struct mb_estimate *out)
{
    memset(out, 0, sizeof(*out));
    if (r->nok == 0)
        return 0;
    if (is_exclusive(r)) {
        if (q == MB__Q_ENERGY && !r->energy_j.valid)
            return 0;
        out->valid = 1;
        out->ci_valid = 1; /* the reference itself: its noise is in the others' intervals */
        out->n = r->nok;
        return 1;
    }
    const struct mb_estimate *e = q == MB__Q_ENERGY ? &r->energy_saving : &r->throughput_gain;
    if (!r->has_baseline || !e->valid)
        return 0;
    *out = *e;
    return 1;
}

/* Runs the question q ranks: every run (MB__Q_ENERGY/THROUGHPUT), or the MIG runs only. */
static int considered(const struct mb_an_run *r, int mig_only)
{
    return !mig_only || strcmp(r->mode, "mig") == 0;
}

static void run_name(char *buf, size_t cap, const struct mb_an_run *r)
{
    if (is_exclusive(r)) {
        snprintf(buf, cap, "running the jobs one after another (%s)", r->name);
        return;
    }
    mb__run_label(buf, cap, r);
}

/* "17% less energy than one after another (95% CI -3% to 37%)". */
static void fmt_vs_base(char *buf, size_t cap, const struct mb_estimate *g, int q)
{
    const char *what = q == MB__Q_ENERGY ? "energy" : "throughput";
    const char *more = q == MB__Q_ENERGY ? "less" : "more";
    const char *less = q == MB__Q_ENERGY ? "more" : "less";
    double m = g->mean * 100;
    int n = snprintf(buf, cap, "%.0f%% %s %s than running the jobs one after another", fabs(m),
                     m >= 0 ? more : less, what);
    if (n < 0 || (size_t)n >= cap)
        return;
    if (!g->ci_valid) {
        snprintf(buf + n, cap - (size_t)n, " (95%% CI unavailable: one repetition)");
        return;
    }
    double s = m >= 0 ? 1 : -1;
    double lo = s * (g->mean - g->ci95) * 100, hi = s * (g->mean + g->ci95) * 100;
    if (lo > hi) {
        double t = lo;
        lo = hi;
        hi = t;
    }
    snprintf(buf + n, cap - (size_t)n, " (95%% CI %.0f%% to %.0f%%)", lo, hi);
}

/* Ranks the runs for question q; fills the winner and the runner-up. */
static void rank(const struct mb_an_experiment *e, int q, int mig_only, struct mb__answer *a)
{
    const struct mb_an_run *best = NULL, *second = NULL;
    struct mb_estimate fb = {0}, fs = {0}, f;
    for (size_t i = 0; i < e->nruns; i++) {
        const struct mb_an_run *r = &e->runs[i];
        if (!considered(r, mig_only) || !figure(r, q, &f))
            continue;
        if (!best || f.mean > fb.mean) {
            second = best;
            fs = fb;
            best = r;
            fb = f;
        } else if (!second || f.mean > fs.mean) {
            second = r;
            fs = f;
        }
    }
    if (!best)
        return;
    a->answered = 1;
    a->winner_exclusive = is_exclusive(best);
    snprintf(a->winner, sizeof(a->winner), "%s", best->name);
    run_name(a->label, sizeof(a->label), best);
    a->value = fb;
    if (!second)
        return;
    a->has_runner_up = 1;
    a->runner_exclusive = is_exclusive(second);
    snprintf(a->runner_up, sizeof(a->runner_up), "%s", second->name);
    run_name(a->runner_label, sizeof(a->runner_label), second);
    a->margin.valid = 1;
    a->margin.mean = fb.mean - fs.mean;
    a->margin.n = fb.n < fs.n ? fb.n : fs.n;
    /* Two independent estimates: half-widths combined in quadrature. */
    a->margin.ci_valid = fb.ci_valid && fs.ci_valid && (fb.n > 1 || fs.n > 1);
    if (a->margin.ci_valid)
        a->margin.ci95 = sqrt(fb.ci95 * fb.ci95 + fs.ci95 * fs.ci95);
    a->clear = !a->margin.ci_valid ? -1 : a->margin.mean - a->margin.ci95 > 0 ? 1 : 0;
}

static const char *const qnames[] = {"energy", "throughput", "mig_mix", "power_limit"};

const char *mb__answer_question(int q)
{
    return q >= 0 && q < MB__Q_COUNT ? qnames[q] : "?";
}

/* The sentence of a ranked question. */
static void sentence(struct mb__answer *a, const char *head, int q)
{
    char vs[256], lead[512] = "";
    if (!a->winner_exclusive)
        fmt_vs_base(vs, sizeof(vs), &a->value, q);
    else
        snprintf(vs, sizeof(vs), "the baseline itself");
    if (a->has_runner_up) {
        const char *verdict = a->clear > 0    ? "clear of the noise"
                              : a->clear == 0 ? "not clear of the noise"
                                              : "whether that is clear of the noise is unknown "
                                                "(95% intervals need two repetitions)";
        const char *pts = lround(fabs(a->margin.mean * 100)) == 1 ? "point" : "points";
        if (a->runner_exclusive)
            snprintf(lead, sizeof(lead), "; the next best is the baseline itself: %s", verdict);
        else if (a->margin.ci_valid)
            snprintf(
                lead, sizeof(lead), "; %.0f percentage %s ahead of %s (95%% CI %.0f to %.0f): %s",
                a->margin.mean * 100, pts, a->runner_label, (a->margin.mean - a->margin.ci95) * 100,
                (a->margin.mean + a->margin.ci95) * 100, verdict);
        else
            snprintf(lead, sizeof(lead), "; %.0f percentage %s ahead of %s: %s",
                     a->margin.mean * 100, pts, a->runner_label, verdict);
    } else {
        snprintf(lead, sizeof(lead), "; no other run to compare with");
    }
    int n = snprintf(a->sentence, sizeof(a->sentence), "%s: %s, %s%s.", head, a->label, vs, lead);
    if (n < 0 || (size_t)n >= sizeof(a->sentence)) /* a run label near its limit: end it visibly */
        memcpy(a->sentence + sizeof(a->sentence) - 4, "...", 4);
}

/* The power-limit question: per run written with power_limits, each job's least-energy limit. */
static void power_answer(const struct mb_an_experiment *e, struct mb__answer *a)
{
    struct mb_paxis ax;
    struct mb_error err;
    if (mb_paxis_build(e, NULL, &ax, &err) != MB_OK || ax.n == 0) {
        mb_paxis_free(&ax);
        return;
    }
    size_t used =
        (size_t)snprintf(a->sentence, sizeof(a->sentence), "Most work per joule by power limit:");
    for (size_t i = 0; i < ax.n && used < sizeof(a->sentence); i++) {
        const struct mb_paxis_item *it = &ax.items[i];
        if (!it->optimal_ok)
            continue;
        const struct mb_power_choice *c = &it->optimal;
        const char *verdict = !c->has_runner  ? "the only limit measured"
                              : !c->intervals ? "95% intervals unavailable: one repetition"
                              : c->distinct   ? "clear of the noise"
                                              : "not clear of the noise";
        char runner[96] = "";
        if (c->has_runner)
            snprintf(runner, sizeof(runner), "; next best %s", it->points[c->runner_up].limit);
        const char *sep = a->answered ? ";" : "";
        used += (size_t)snprintf(a->sentence + used, sizeof(a->sentence) - used,
                                 "%s %s in run %s at %s (%.4g J per unit%s; %s)", sep, it->job,
                                 it->run, it->points[c->index].limit, c->value, runner, verdict);
        if (!a->answered) {
            snprintf(a->winner, sizeof(a->winner), "%s", it->points[c->index].limit);
            a->answered = 1;
        }
    }
    if (a->answered && used < sizeof(a->sentence))
        snprintf(a->sentence + used, sizeof(a->sentence) - used, ".");
    mb_paxis_free(&ax);
}

static size_t mig_runs(const struct mb_an_experiment *e)
{
    size_t n = 0;
    for (size_t i = 0; i < e->nruns; i++)
        n += strcmp(e->runs[i].mode, "mig") == 0 && e->runs[i].nok > 0;
    return n;
}

size_t mb__answers(const struct mb_an_experiment *e, struct mb__answer *out, size_t cap)
{
    size_t n = 0;
    static const char *const heads[] = {"Most work per joule", "Most throughput",
                                        "Best MIG mix for work per joule"};
    for (int q = 0; q < MB__Q_COUNT && n < cap; q++) {
        struct mb__answer *a = &out[n];
        memset(a, 0, sizeof(*a));
        a->question = q;
        if (q == MB__Q_POWER) {
            power_answer(e, a);
            if (a->answered)
                n++;
            continue;
        }
        if (q == MB__Q_MIG && mig_runs(e) < 2)
            continue;
        int metric = q == MB__Q_MIG ? MB__Q_ENERGY : q;
        if (metric == MB__Q_ENERGY && mb__no_energy_sensor(e)) {
            snprintf(a->sentence, sizeof(a->sentence),
                     "%s: not measured (no energy sensor on this device).", heads[q]);
            n++;
            continue;
        }
        rank(e, metric, q == MB__Q_MIG, a);
        if (!a->answered)
            continue;
        sentence(a, heads[q], metric);
        n++;
    }
    /* Windows under outside load (docs/run.md): every answer says it may be affected. */
    for (size_t i = 0; i < n && e->cells_outside_load; i++) {
        if (!out[i].answered)
            continue;
        size_t len = strlen(out[i].sentence);
        int w = snprintf(out[i].sentence + len, sizeof(out[i].sentence) - len,
                         " %zu of %zu cells were measured under outside load: the answer may be "
                         "affected.",
                         e->cells_outside_load, e->cells_total);
        (void)w; /* a sentence at its limit loses the caveat's end, never the answer */
    }
    /* Nothing answered at all: one sentence says why, rather than none. */
    if (n == 0 && cap > 0) {
        memset(&out[0], 0, sizeof(out[0]));
        out[0].question = MB__Q_THROUGHPUT;
        snprintf(out[0].sentence, sizeof(out[0].sentence),
                 "No answer: no run could be compared with running the same jobs one after "
                 "another (an exclusive run with every job is needed).");
        n = 1;
    }
    return n;
}
