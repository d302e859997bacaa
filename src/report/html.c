/* SPDX-License-Identifier: Apache-2.0 */
/*
 * migbench report --format html: one self-contained page (inline CSS and SVG, no scripts, no
 * network). Colours are the Okabe–Ito palette; every bar also carries a pattern and a direct
 * label so that the charts survive grey-scale printing and colour-blind readers.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "power/poweraxis.h"
#include "report_internal.h"

static const char *const palette[] = {"#0072B2", "#E69F00", "#009E73", "#CC79A7",
                                      "#56B4E9", "#D55E00", "#F0E442"};
#define NPAL 7
#define NPAT 4

static void esc(FILE *out, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&':
            fputs("&amp;", out);
            break;
        case '<':
            fputs("&lt;", out);
            break;
        case '>':
            fputs("&gt;", out);
            break;
        case '"':
            fputs("&quot;", out);
            break;
        default:
            fputc(*s, out);
        }
    }
}

/* An unrecorded text field shows as "n/a", never as nothing. */
static void esc_na(FILE *out, const char *s)
{
    esc(out, s[0] ? s : "n/a");
}

static const char *colour(size_t i)
{
    return palette[i % NPAL];
}

/*
 * A workload keeps one colour and pattern on every chart of an experiment: its index among the
 * experiment's workloads in order of first appearance.
 */
static size_t wl_index(const struct mb_an_experiment *e, const char *workload)
{
    size_t n = 0;
    for (size_t i = 0; i < e->nruns; i++)
        for (size_t j = 0; j < e->runs[i].njobs; j++) {
            const char *w = e->runs[i].jobs[j].workload;
            if (strcmp(w, workload) == 0)
                return n;
            int seen = 0;
            for (size_t a = 0; a <= i && !seen; a++)
                for (size_t b = 0; b < (a == i ? j : e->runs[a].njobs) && !seen; b++)
                    seen = strcmp(e->runs[a].jobs[b].workload, w) == 0;
            n += !seen;
        }
    return n;
}

/* A bar: its colour, then its pattern on top, so that print tells the jobs apart too. */
static void bar(FILE *out, double x, double y, double w, double h, size_t idx)
{
    if (w < 0.5)
        w = 0.5;
    fprintf(out,
            "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"/>"
            "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"url(#p%zu)\" "
            "stroke=\"#222\" stroke-width=\"0.6\"/>\n",
            x, y, w, h, colour(idx), x, y, w, h, idx % NPAT);
}

static void whisker(FILE *out, double x0, double x1, double y)
{
    fprintf(out,
            "<path d=\"M%.1f %.1fH%.1fM%.1f %.1fv8M%.1f %.1fv8\" stroke=\"#000\" "
            "stroke-width=\"1.4\" fill=\"none\"/>\n",
            x0, y, x1, x0, y - 4, x1, y - 4);
}

static void text(FILE *out, double x, double y, const char *anchor, const char *cls, const char *s)
{
    fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\" class=\"%s\">", x, y, anchor, cls);
    esc(out, s);
    fputs("</text>\n", out);
}

static void pattern_defs(FILE *out)
{
    fputs("<svg width=\"0\" height=\"0\" style=\"position:absolute\" aria-hidden=\"true\"><defs>\n"
          "<pattern id=\"p0\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\">"
          "<rect width=\"6\" height=\"6\" fill=\"none\"/></pattern>\n"
          "<pattern id=\"p1\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
          "patternTransform=\"rotate(45)\"><path d=\"M0 0V6\" stroke=\"#fff\" "
          "stroke-width=\"2\" opacity=\"0.7\"/></pattern>\n"
          "<pattern id=\"p2\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\">"
          "<circle cx=\"3\" cy=\"3\" r=\"1.3\" fill=\"#fff\" opacity=\"0.8\"/></pattern>\n"
          "<pattern id=\"p3\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\">"
          "<path d=\"M0 3H6M3 0V6\" stroke=\"#fff\" stroke-width=\"1.2\" opacity=\"0.7\"/>"
          "</pattern>\n</defs></svg>\n",
          out);
}

/* Jobs of the same workload before job i in run r (m, m-2, ...). */
static size_t same_before(const struct mb_an_run *r, size_t i)
{
    size_t n = 0;
    for (size_t k = 0; k < i; k++)
        n += strcmp(r->jobs[k].workload, r->jobs[i].workload) == 0;
    return n;
}

/* Job i's colour: its workload's, shifted for a second job of the same workload (m-2), so that
 * no two jobs of one run share a colour. */
static size_t job_colour(const struct mb_an_experiment *e, const struct mb_an_run *r, size_t i)
{
    return wl_index(e, r->jobs[i].workload) + same_before(r, i);
}

static void legend(FILE *out, const struct mb_an_experiment *e, const struct mb_an_run *r)
{
    fputs("<p class=\"legend\">", out);
    for (size_t i = 0; i < r->njobs; i++) {
        fprintf(out, "<svg width=\"18\" height=\"12\" aria-hidden=\"true\">");
        bar(out, 0.5, 0.5, 17, 11, job_colour(e, r, i));
        fputs("</svg> ", out);
        esc(out, r->jobs[i].name);
        fputs(" &nbsp; ", out);
    }
    fputs("</p>\n", out);
}

static double nice_max(double v)
{
    static const double steps[] = {1, 1.2, 1.6, 2, 2.4, 3.2, 4, 6, 8, 10};
    if (!(v > 0))
        return 1;
    double p = pow(10, floor(log10(v)));
    for (size_t k = 0; k < sizeof(steps) / sizeof(steps[0]); k++)
        if (steps[k] * p >= v * 0.9999)
            return steps[k] * p;
    return 10 * p;
}

/* A run's label in a chart: its name, and its layout in smaller type underneath. */
static void run_label_svg_p(FILE *out, double x, double y, const struct mb_an_run *r,
                            const char *prefix)
{
    fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" class=\"lab\">", x,
            r->layout[0] ? y - 4 : y);
    if (prefix) {
        esc(out, prefix);
        fputs(" · ", out);
    }
    esc(out, r->name);
    if (strcmp(r->name, r->mode) != 0) {
        fputs(" (", out);
        esc(out, r->mode);
        fputs(")", out);
    }
    if (r->layout[0]) {
        fprintf(out, "<tspan x=\"%.1f\" dy=\"12\" class=\"tick\">", x);
        esc(out, r->layout);
        fputs("</tspan>", out);
    }
    fputs("</text>\n", out);
}

/* A run's label in a chart: its name, and its layout in smaller type underneath. */
static void run_label_svg(FILE *out, double x, double y, const struct mb_an_run *r)
{
    run_label_svg_p(out, x, y, r, NULL);
}

static void axis_x(FILE *out, double x0, double x1, double y0, double y1, double vmax, int pct)
{
    for (int k = 0; k <= 4; k++) {
        double v = vmax * k / 4, x = x0 + (x1 - x0) * k / 4;
        char b[32];
        if (pct)
            snprintf(b, sizeof(b), "%.0f%%", v * 100);
        else
            mb__fmt_sig(b, sizeof(b), v, 3);
        fprintf(out, "<path d=\"M%.1f %.1fV%.1f\" class=\"grid\"/>\n", x, y0, y1);
        text(out, x, y1 + 14, "middle", "tick", b);
    }
}

/* Whether any sharing run has a system throughput (an exclusive baseline to normalise to). */
static bool any_stp(const struct mb_an_experiment *e)
{
    for (size_t i = 0; i < e->nruns; i++)
        if (strcmp(e->runs[i].mode, "exclusive") != 0 && e->runs[i].stp.valid)
            return true;
    return false;
}

/* Stacked normalised throughput per run: the stack's length is the system throughput. */
static void chart_stp(FILE *out, const struct mb_an_experiment *e)
{
    size_t n = 0;
    double vmax = 1.2;
    for (size_t i = 0; i < e->nruns; i++) {
        const struct mb_an_run *r = &e->runs[i];
        if (strcmp(r->mode, "exclusive") == 0 || !r->stp.valid)
            continue;
        n++;
        double top = r->stp.mean + (r->stp.ci_valid ? r->stp.ci95 : 0);
        vmax = top > vmax ? top : vmax;
    }
    if (n == 0) {
        fputs("<p class=\"na\">No run could be normalised: the experiment has no exclusive run of "
              "the same jobs to divide by, so no chart is drawn.</p>\n",
              out);
        return;
    }
    vmax = nice_max(vmax * 1.05);
    double left = 200, right = 700, rowh = 38, top = 18;
    double h = top + (double)n * rowh + 34;
    fprintf(out,
            "<svg class=\"chart\" viewBox=\"0 0 820 %.0f\" role=\"img\" aria-label=\"normalised "
            "throughput per run\">\n",
            h);
    double y1 = top + (double)n * rowh;
    axis_x(out, left, right, top - 6, y1, vmax, 0);
    double xone = left + (right - left) / vmax;
    fprintf(out, "<path d=\"M%.1f %.1fV%.1f\" class=\"ref\"/>\n", xone, top - 10, y1);
    text(out, xone + 4, top - 2, "start", "note", "1.0 = one job after another");
    size_t row = 0;
    for (size_t i = 0; i < e->nruns; i++) {
        const struct mb_an_run *r = &e->runs[i];
        if (strcmp(r->mode, "exclusive") == 0 || !r->stp.valid)
            continue;
        double y = top + (double)row * rowh + 6;
        run_label_svg(out, left - 8, y + 14, r);
        double x = left;
        for (size_t j = 0; j < r->njobs; j++) {
            const struct mb_estimate *nj = &r->jobs[j].normalised;
            if (!nj->valid)
                continue;
            double w = (right - left) * nj->mean / vmax;
            bar(out, x, y, w, 20, job_colour(e, r, (size_t)j));
            if (w > 34) {
                char b[32];
                snprintf(b, sizeof(b), "%.2f", nj->mean);
                text(out, x + w / 2, y + 14, "middle", "inbar", b);
            }
            x += w;
        }
        char b[64];
        if (r->stp.ci_valid) {
            double lo = left + (right - left) * (r->stp.mean - r->stp.ci95) / vmax;
            double hi = left + (right - left) * (r->stp.mean + r->stp.ci95) / vmax;
            whisker(out, lo, hi, y + 25);
            snprintf(b, sizeof(b), "%.2f ± %.2f", r->stp.mean, r->stp.ci95);
        } else {
            snprintf(b, sizeof(b), "%.2f", r->stp.mean);
        }
        double lx = left + (right - left) * r->stp.mean / vmax;
        text(out, lx + 6, y + 15, "start", "val", b);
        row++;
    }
    fputs("</svg>\n", out);
}

/* Energy saving and throughput gain against running the jobs one after another, with CIs. */
static void chart_gains_runs(FILE *out, const struct mb_an_run *const *runs,
                             const char *const *prefix, size_t nruns)
{
    size_t n = 0;
    double vmax = 0.1;
    for (size_t i = 0; i < nruns; i++) {
        const struct mb_an_run *r = runs[i];
        n++;
        const struct mb_estimate *g[2] = {&r->energy_saving, &r->throughput_gain};
        for (int k = 0; k < 2; k++)
            if (g[k]->valid) {
                double m = fabs(g[k]->mean) + (g[k]->ci_valid ? g[k]->ci95 : 0);
                vmax = m > vmax ? m : vmax;
            }
    }
    if (n == 0)
        return;
    /* No run with an energy figure (a device without a sensor): the energy panel would be a
     * column of n/a, so only the throughput panel is drawn, full width. */
    int any_energy = 0;
    for (size_t i = 0; i < nruns; i++)
        any_energy |= runs[i]->energy_saving.valid;
    vmax = nice_max(vmax * 1.1);
    double rowh = 34, top = 26, h = top + (double)n * rowh + 30;
    fprintf(out,
            "<svg class=\"chart\" viewBox=\"0 0 820 %.0f\" role=\"img\" aria-label=\"energy "
            "saving and throughput gain per run\">\n",
            h);
    static const char *const titles[2] = {"energy saving (right: less energy)",
                                          "throughput gain (right: more work per second)"};
    for (int panel = any_energy ? 0 : 1; panel < 2; panel++) {
        double x0 = panel == 0 || !any_energy ? 200 : 520;
        double x1 = x0 + (any_energy ? 270 : 560), mid = (x0 + x1) / 2;
        double y1 = top + (double)n * rowh;
        text(out, mid, 12, "middle", "lab", titles[panel]);
        for (int k = -2; k <= 2; k++) {
            double x = mid + (x1 - x0) / 2 * k / 2;
            char b[32];
            snprintf(b, sizeof(b), "%+.0f%%", vmax * 100 * k / 2);
            fprintf(out, "<path d=\"M%.1f %.1fV%.1f\" class=\"%s\"/>\n", x, top - 6, y1,
                    k == 0 ? "ref" : "grid");
            text(out, x, y1 + 14, "middle", "tick", k == 0 ? "0" : b);
        }
        size_t row = 0;
        for (size_t i = 0; i < nruns; i++) {
            const struct mb_an_run *r = runs[i];
            double y = top + (double)row * rowh + 12;
            if (panel == 0 || !any_energy)
                run_label_svg_p(out, x0 - 12, y + 4, r, prefix ? prefix[i] : NULL);
            const struct mb_estimate *g = panel == 0 ? &r->energy_saving : &r->throughput_gain;
            if (!g->valid) {
                text(out, mid, y + 4, "middle", "na", "n/a");
            } else {
                double sc = (x1 - x0) / 2 / vmax;
                if (g->ci_valid)
                    whisker(out, mid + (g->mean - g->ci95) * sc, mid + (g->mean + g->ci95) * sc, y);
                fprintf(out,
                        "<rect x=\"%.1f\" y=\"%.1f\" width=\"9\" height=\"9\" fill=\"%s\" "
                        "stroke=\"#000\"/>\n",
                        mid + g->mean * sc - 4.5, y - 4.5, panel == 0 ? "#009E73" : "#0072B2");
            }
            row++;
        }
    }
    fputs("</svg>\n", out);
}

#define GAIN_RUNS_MAX 64

static void chart_gains(FILE *out, const struct mb_an_experiment *e)
{
    const struct mb_an_run *runs[GAIN_RUNS_MAX];
    size_t n = 0;
    for (size_t i = 0; i < e->nruns && n < GAIN_RUNS_MAX; i++)
        if (strcmp(e->runs[i].mode, "exclusive") != 0 && e->runs[i].stp.valid)
            runs[n++] = &e->runs[i];
    chart_gains_runs(out, runs, NULL, n);
}

/* The same chart over every results directory, each run labelled with its device. */
static void chart_gains_all(FILE *out, const struct mb_analysis *a)
{
    const struct mb_an_run *runs[GAIN_RUNS_MAX];
    const char *prefix[GAIN_RUNS_MAX];
    size_t n = 0;
    for (size_t x = 0; x < a->nexp; x++)
        for (size_t i = 0; i < a->exps[x].nruns && n < GAIN_RUNS_MAX; i++)
            if (strcmp(a->exps[x].runs[i].mode, "exclusive") != 0 && a->exps[x].runs[i].stp.valid) {
                runs[n] = &a->exps[x].runs[i];
                prefix[n++] = a->exps[x].model[0] ? a->exps[x].model : a->exps[x].name;
            }
    chart_gains_runs(out, runs, prefix, n);
}

/* Energy per unit of work: one panel per workload, a bar per run. */
static void chart_energy_per_unit(FILE *out, const struct mb_an_experiment *e)
{
    /* Every workload once, in order of first appearance (exclusive runs come first). */
    const struct mb_an_job *wls[MB_AN_JOBS_MAX * 4];
    size_t nwl = 0;
    for (size_t i = 0; i < e->nruns; i++)
        for (size_t j = 0; j < e->runs[i].njobs; j++) {
            const struct mb_an_job *jb = &e->runs[i].jobs[j];
            size_t k = 0;
            while (k < nwl && strcmp(wls[k]->workload, jb->workload) != 0)
                k++;
            if (k == nwl && nwl < sizeof(wls) / sizeof(wls[0]))
                wls[nwl++] = jb;
        }
    for (size_t w = 0; w < nwl; w++) {
        const char *wl = wls[w]->workload;
        double vmax = 0;
        size_t n = 0;
        for (size_t i = 0; i < e->nruns; i++)
            for (size_t j = 0; j < e->runs[i].njobs; j++)
                if (strcmp(e->runs[i].jobs[j].workload, wl) == 0) {
                    const struct mb_estimate *x = &e->runs[i].jobs[j].j_per_unit;
                    n++;
                    if (x->valid) {
                        double m = x->mean + (x->ci_valid ? x->ci95 : 0);
                        vmax = m > vmax ? m : vmax;
                    }
                }
        if (n == 0)
            continue;
        /* mJ per unit reads better than 0.00x J for token workloads. */
        double scale = vmax < 0.1 ? 1000 : 1;
        const char *u = scale > 1 ? "mJ" : "J";
        vmax = nice_max(vmax * scale * 1.05);
        double left = 200, right = 640, rowh = 30, top = 24;
        double h = top + (double)n * rowh + 26;
        char unit[MB_AN_NAME_MAX];
        /* "images/s" -> "image": the chart reads "J per image". */
        int ulen = (int)strcspn(wls[w]->unit, "/");
        if (ulen > 1 && wls[w]->unit[ulen - 1] == 's')
            ulen--;
        snprintf(unit, sizeof(unit), "%.*s", ulen, wls[w]->unit);
        fprintf(out,
                "<svg class=\"chart small\" viewBox=\"0 0 820 %.0f\" role=\"img\" "
                "aria-label=\"energy per unit for ",
                h);
        esc(out, wl);
        fputs("\">\n", out);
        char title[MB_AN_NAME_MAX * 2 + 64];
        snprintf(title, sizeof(title), "%s — %s per %s (lower is better)", wl, u, unit);
        text(out, left, 14, "start", "lab", title);
        double y1 = top + (double)n * rowh;
        axis_x(out, left, right, top - 4, y1, vmax, 0);
        size_t row = 0;
        for (size_t i = 0; i < e->nruns; i++) {
            const struct mb_an_run *r = &e->runs[i];
            for (size_t j = 0; j < r->njobs; j++) {
                if (strcmp(r->jobs[j].workload, wl) != 0)
                    continue;
                const struct mb_estimate *x = &r->jobs[j].j_per_unit;
                double y = top + (double)row * rowh + 4;
                size_t dup = 0;
                for (size_t k = 0; k < r->njobs; k++)
                    dup += strcmp(r->jobs[k].workload, wl) == 0;
                run_label_svg_p(out, left - 8, y + 12, r, dup > 1 ? r->jobs[j].name : NULL);
                if (!x->valid) {
                    text(out, left + 4, y + 12, "start", "na", "n/a (no energy)");
                } else {
                    double sc = (right - left) / vmax;
                    bar(out, left, y, x->mean * scale * sc, 16, job_colour(e, r, j));
                    double end = x->mean * scale;
                    char b[64];
                    if (x->ci_valid) {
                        whisker(out, left + (x->mean - x->ci95) * scale * sc,
                                left + (x->mean + x->ci95) * scale * sc, y + 8);
                        end += x->ci95 * scale;
                        char m1[32], c1[32];
                        snprintf(b, sizeof(b), "%s ± %s",
                                 mb__fmt_sig(m1, sizeof(m1), x->mean * scale, 3),
                                 mb__fmt_sig(c1, sizeof(c1), x->ci95 * scale, 2));
                    } else {
                        mb__fmt_sig(b, sizeof(b), x->mean * scale, 3);
                    }
                    text(out, left + end * sc + 6, y + 12, "start", "val", b);
                }
                row++;
            }
        }
        fputs("</svg>\n", out);
    }
}

/* The power timeline of one cell with the measurement window and each job's phase. */
static void chart_timeline(FILE *out, const struct mb_an_experiment *e, const struct mb_an_run *r,
                           const struct mb_an_cell *c)
{
    char title[MB_AN_TEXT_MAX * 2];
    char energy[96];
    if (c->has_energy && c->gap_pct.valid)
        snprintf(energy, sizeof(energy), "%.0f J (%s), gap %+.1f%%", (double)c->energy_mj / 1000,
                 c->energy_source, c->gap_pct.v);
    else if (c->has_energy)
        snprintf(energy, sizeof(energy), "%.0f J (%s)", (double)c->energy_mj / 1000,
                 c->energy_source);
    else
        snprintf(energy, sizeof(energy), "energy n/a");
    snprintf(title, sizeof(title), "%s · rep %d · %s%s%s", r->name, c->rep,
             c->ok ? energy : "FAILED: ", c->ok ? "" : c->failure, "");
    fputs("<figure class=\"tl\"><figcaption>", out);
    esc(out, title);
    fputs("</figcaption>\n", out);
    if (c->ntimeline < 2) {
        fputs("<p class=\"na\">No power timeline: ", out);
        esc(out, c->timeline_note[0] ? c->timeline_note : "too few samples");
        fputs(".</p></figure>\n", out);
        return;
    }
    double tmax = c->timeline[c->ntimeline - 1].t_s, pmax = 0;
    for (size_t i = 0; i < c->ntimeline; i++)
        pmax = c->timeline[i].power_w > pmax ? c->timeline[i].power_w : pmax;
    pmax = nice_max(pmax * 1.05);
    if (!(tmax > 0))
        tmax = 1;
    double L = 46, R = 388, T = 8, B = 118;
    double lanes = (double)r->njobs * 11;
    fprintf(out, "<svg viewBox=\"0 0 470 %.0f\" role=\"img\" aria-label=\"power over time\">\n",
            B + 24 + lanes);
    double o = c->timeline_origin_s;
#define TX(t) (L + ((t)-o) / tmax * (R - L))
#define PY(p) (B - (p) / pmax * (B - T))
    if (c->window_start_ns > 0 && c->window_end_ns > c->window_start_ns) {
        double a = TX((double)c->window_start_ns * 1e-9), b = TX((double)c->window_end_ns * 1e-9);
        fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" class=\"win\"/>\n",
                a, T, b - a, B - T);
    }
    for (int k = 0; k <= 2; k++) {
        char b[32];
        snprintf(b, sizeof(b), "%.0f W", pmax * k / 2);
        fprintf(out, "<path d=\"M%.1f %.1fH%.1f\" class=\"grid\"/>\n", L, PY(pmax * k / 2), R);
        text(out, L - 4, PY(pmax * k / 2) + 4, "end", "tick", b);
    }
    for (int k = 0; k <= 4; k++) {
        char b[32];
        snprintf(b, sizeof(b), "%.0f s", tmax * k / 4);
        text(out, L + (R - L) * k / 4, B + 12, "middle", "tick", b);
    }
    if (c->idle_power_w.valid) {
        fprintf(out, "<path d=\"M%.1f %.1fH%.1f\" class=\"idle\"/>\n", L, PY(c->idle_power_w.v), R);
        text(out, R, PY(c->idle_power_w.v) - 3, "end", "tick", "idle");
    }
    fputs("<polyline class=\"pw\" points=\"", out);
    for (size_t i = 0; i < c->ntimeline; i++)
        fprintf(out, "%s%.1f,%.1f", i ? " " : "", L + c->timeline[i].t_s / tmax * (R - L),
                PY(c->timeline[i].power_w));
    fputs("\"/>\n", out);
    for (size_t j = 0; j < c->njobs && j < r->njobs; j++) {
        const struct mb_an_cell_job *cj = &c->jobs[j];
        double y = B + 18 + (double)j * 11;
        if (!cj->has_times && !cj->has_window) {
            text(out, L, y + 8, "start", "tick", "(no phase times)");
            continue;
        }
        double a = R, b = L;
        if (cj->has_times) {
            /* Spawn to reap, warm-up included: a thin line; the measured window: a bar. */
            a = TX((double)cj->started_ns * 1e-9);
            b = TX((double)cj->ended_ns * 1e-9);
            a = a < L ? L : a;
            b = b > R ? R : b;
            fprintf(out, "<path d=\"M%.1f %.1fH%.1f\" stroke=\"%s\" stroke-width=\"2\"/>\n", a,
                    y + 4, b, colour(job_colour(e, r, j)));
        }
        if (cj->has_window) {
            double wa = TX((double)cj->window_start_ns * 1e-9);
            double wb = TX((double)cj->window_end_ns * 1e-9);
            wa = wa < L ? L : wa;
            wb = wb > R ? R : wb;
            bar(out, wa, y, wb - wa, 8, job_colour(e, r, j));
            a = wa < a ? wa : a;
            b = wb > b ? wb : b;
        } else {
            bar(out, a, y, b - a, 8, job_colour(e, r, j));
        }
        /* Names in a column right of the plot, where no bar can cover them. */
        text(out, R + 6, y + 8, "start", "tick", cj->name);
    }
#undef TX
#undef PY
    fputs("</svg></figure>\n", out);
}

static void est_cell(FILE *out, const struct mb_estimate *e, int decimals, double scale)
{
    char b[96];
    mb__fmt_est(b, sizeof(b), e, decimals, scale);
    fprintf(out, "<td class=\"%s\">", e->valid ? "num" : "num na");
    esc(out, b);
    fputs("</td>", out);
}

static void mj_cell(FILE *out, const struct mb_attribution *a, int64_t mj)
{
    if (!a->available) {
        fputs("<td class=\"num na\">n/a</td>", out);
        return;
    }
    fprintf(out, "<td class=\"num\">%s%lld.%03lld</td>", mj < 0 ? "-" : "",
            (long long)(llabs(mj) / 1000), (long long)(llabs(mj) % 1000));
}

static void opt_text(FILE *out, struct mb_opt o, const char *unit)
{
    if (o.valid)
        fprintf(out, "%.0f %s", o.v, unit);
    else
        fputs("n/a", out);
}

/* The power-limit axis (docs/power.md): one table per run and job; nothing without the axis. */
static void power_section(FILE *out, const struct mb_an_experiment *e)
{
    struct mb_paxis ax;
    if (mb_paxis_build(e, NULL, &ax, NULL) != MB_OK || ax.n == 0) {
        mb_paxis_free(&ax);
        return;
    }
    fputs("<h3>Power limits</h3>\n<p class=\"note\">Each run at each GPU power limit (the limit "
          "is the whole GPU's: every instance shares it); means &plusmn; 95% CI over "
          "repetitions.</p>\n",
          out);
    for (size_t i = 0; i < ax.n; i++) {
        const struct mb_paxis_item *it = &ax.items[i];
        fputs("<table><thead><tr><th>", out);
        esc(out, it->run);
        fputs(" / ", out);
        esc(out, it->job);
        fputs("</th><th>enforced</th><th>throughput</th><th>J/unit</th><th>power W</th>"
              "<th>power capped</th></tr></thead><tbody>\n",
              out);
        for (size_t k = 0; k < it->npoints; k++) {
            const struct mb_paxis_point *p = &it->points[k];
            bool best = it->optimal_ok && it->optimal.index == k;
            fprintf(out, "<tr%s><td>", best ? " class=\"total\"" : "");
            esc(out, p->limit);
            fputs("</td><td class=\"num\">", out);
            opt_text(out, p->enforced_w, "W");
            fputs("</td>", out);
            est_cell(out, &p->throughput, 1, 1);
            est_cell(out, &p->j_per_unit, 4, 1);
            est_cell(out, &p->power_w, 1, 1);
            fprintf(out, "<td>%s</td></tr>\n",
                    !p->throttle_valid ? "n/a"
                    : p->power_capped  ? "yes"
                                       : "no");
        }
        fputs("</tbody></table>\n<p>", out);
        if (it->optimal_ok) {
            fputs("Energy-optimal limit: <b>", out);
            esc(out, it->points[it->optimal.index].limit);
            fputs("</b>", out);
            if (it->optimal.has_runner)
                fputs(!it->optimal.intervals ? " (no intervals to separate it from the runner-up)"
                      : it->optimal.distinct ? " (clear of the runner-up)"
                                             : " (not separated from the runner-up)",
                      out);
        } else {
            esc(out, it->note);
        }
        fputs("</p>\n", out);
    }
    mb_paxis_free(&ax);
}

/* Per job: instance, throughput, normalised, time per step, J/unit. */
static void jobs_table(FILE *out, const struct mb_an_experiment *e)
{
    fputs("<h3>Jobs</h3>\n<table><thead><tr><th>run</th><th>job</th><th>instance</th>"
          "<th>throughput /s</th><th>unit</th><th>normalised</th><th>ms/step</th>"
          "<th>J/unit</th></tr></thead><tbody>\n",
          out);
    for (size_t i = 0; i < e->nruns; i++) {
        const struct mb_an_run *r = &e->runs[i];
        for (size_t j = 0; j < r->njobs; j++) {
            const struct mb_an_job *jb = &r->jobs[j];
            fputs("<tr><td>", out);
            esc(out, j == 0 ? r->name : "");
            fputs("</td><td>", out);
            esc(out, jb->name);
            fputs("</td><td>", out);
            if (jb->instance[0])
                esc(out, jb->instance);
            else if (jb->thread_percentage.valid)
                fprintf(out, "%.0f%% threads", jb->thread_percentage.v);
            else if (strcmp(r->mode, "partition") == 0 && jb->cores.valid)
                fprintf(out, "%.0f core%s of its own", jb->cores.v, jb->cores.v == 1 ? "" : "s");
            else if (strcmp(r->mode, "partition") == 0)
                fputs("cores of its own", out);
            else
                fputs("whole device", out);
            fputs("</td>", out);
            est_cell(out, &jb->throughput, jb->throughput.mean >= 10000 ? 0 : 1, 1);
            fputs("<td>", out);
            fprintf(out, "%.*s", (int)strcspn(jb->unit, "/"), jb->unit);
            fputs("</td>", out);
            est_cell(out, &jb->normalised, 2, 1);
            est_cell(out, &jb->s_per_step, 1, 1000);
            est_cell(out, &jb->j_per_unit, jb->j_per_unit.mean < 0.01 ? 5 : 3, 1);
            fputs("</tr>\n", out);
        }
    }
    fputs("</tbody></table>\n", out);
}

/* Per run: cells, window, energy, power and the comparison with the baseline. */
static void runs_table(FILE *out, const struct mb_an_experiment *e)
{
    fputs("<h3>Runs</h3>\n<table><thead><tr><th>run</th><th>mode</th><th>cells ok/failed</th>"
          "<th>window s</th><th>energy J</th><th>mean W</th><th>STP</th><th>ANTT</th>"
          "<th>energy saving %</th><th>throughput gain %</th></tr></thead><tbody>\n",
          out);
    for (size_t i = 0; i < e->nruns; i++) {
        const struct mb_an_run *r = &e->runs[i];
        fputs("<tr><td>", out);
        esc(out, r->name);
        fputs("</td><td>", out);
        esc(out, r->mode);
        if (r->layout[0]) {
            fputs(" ", out);
            esc(out, r->layout);
        }
        fprintf(out, "</td><td class=\"num\">%zu/%zu</td>", r->nok, r->nfailed);
        est_cell(out, &r->window_s, 1, 1);
        est_cell(out, &r->energy_j, 0, 1);
        est_cell(out, &r->power_w, 0, 1);
        if (strcmp(r->mode, "exclusive") == 0) {
            fputs("<td colspan=\"4\" class=\"base\">baseline</td>", out);
        } else {
            est_cell(out, &r->stp, 2, 1);
            est_cell(out, &r->antt, 2, 1);
            est_cell(out, &r->energy_saving, 1, 100);
            est_cell(out, &r->throughput_gain, 1, 100);
        }
        fputs("</tr>\n", out);
    }
    fputs("</tbody></table>\n", out);
}

/* Energy attribution per job under every method, with each run's notes. */
static void attribution_table(FILE *out, const struct mb_an_experiment *e)
{
    fputs("<h3>Energy attribution</h3>\n<p class=\"note\">Joules per job, summed over the cells "
          "with measured energy; every available method adds up exactly (to the millijoule) to "
          "the measured whole-GPU energy.</p>\n<table><thead><tr><th>run</th><th>job</th>",
          out);
    for (int m = 0; m < MB_ATTR_COUNT; m++)
        fprintf(out, "<th>%s</th>", mb_analysis_method_name(m));
    fputs("</tr></thead><tbody>\n", out);
    for (size_t i = 0; i < e->nruns; i++) {
        const struct mb_an_run *r = &e->runs[i];
        for (size_t j = 0; j <= r->njobs; j++) {
            fprintf(out, "<tr%s><td>", j == r->njobs ? " class=\"total\"" : "");
            esc(out, j == 0 ? r->name : "");
            fputs("</td><td>", out);
            esc(out, j < r->njobs ? r->jobs[j].name : "total");
            fputs("</td>", out);
            for (int m = 0; m < MB_ATTR_COUNT; m++)
                mj_cell(out, &r->attr[m],
                        j < r->njobs ? r->attr[m].job_mj[j] : r->attr[m].total_mj);
            fputs("</tr>\n", out);
        }
    }
    fputs("</tbody></table>\n<ul class=\"methods\">\n", out);
    for (size_t i = 0; i < e->nruns; i++) {
        const struct mb_an_run *r = &e->runs[i];
        fputs("<li><b>", out);
        esc(out, r->name);
        fprintf(out, "</b> (default <i>%s</i>):", mb_analysis_method_name(r->default_method));
        for (int m = 0; m < MB_ATTR_COUNT; m++)
            if (r->attr[m].note[0] && strncmp(r->attr[m].note, "not applicable", 14) != 0) {
                fprintf(out, " <i>%s</i>: ", mb_analysis_method_name(m));
                esc(out, r->attr[m].note);
                fputs(";", out);
            }
        if (r->static_mj >= 0)
            fprintf(out, " static %.1f J + dynamic %.1f J.", (double)r->static_mj / 1000,
                    (double)r->dynamic_mj / 1000);
        else
            fputs(" static/dynamic n/a (no idle baseline).", out);
        fputs("</li>\n", out);
    }
    fputs("</ul>\n", out);
}

/* Board power of every cell over time, with the jobs' windows. */
static void power_timelines(FILE *out, const struct mb_an_experiment *e)
{
    fputs("<h3>Power timelines</h3>\n<p class=\"note\">Board power per cell; the shaded band "
          "is the measurement window; below, each job's measured window (bar) within its whole run "
          "from start to exit (line).</p>\n"
          "<div class=\"tls\">\n",
          out);
    for (size_t i = 0; i < e->nruns; i++)
        for (size_t k = 0; k < e->runs[i].ncells; k++)
            chart_timeline(out, e, &e->runs[i], &e->runs[i].cells[k]);
    fputs("</div>\n", out);
}

/* Device facts and measurement quality; closes the section. */
static void quality_list(FILE *out, const struct mb_an_experiment *e)
{
    fputs("<h3>Device and measurement quality</h3>\n<ul class=\"quality\">\n<li>Sensor: ", out);
    esc_na(out, e->sensor);
    fputs("</li>\n<li>UUID ", out);
    esc_na(out, e->uuid);
    fputs(", experiment sha ", out);
    esc_na(out, e->sha);
    fputs(", migbench ", out);
    esc_na(out, e->migbench_version);
    fprintf(out,
            "</li>\n<li>%zu cells: %zu failed, %zu started but unfinished, %zu without energy, "
            "%zu with the counter vs integrated energy gap flagged; %.0f missed sensor "
            "updates.</li>\n",
            e->cells_total, e->cells_failed, e->cells_unfinished, e->cells_no_energy,
            e->cells_gap_flagged, e->missed_updates);
    if (e->cells_outside_load)
        fprintf(out,
                "<li class=\"warn\">%zu cell(s) measured under outside load: their figures "
                "may be affected.</li>\n",
                e->cells_outside_load);
    for (size_t i = 0; i < e->nnotes; i++) {
        fputs("<li class=\"warn\">", out);
        esc(out, e->notes[i]);
        fputs("</li>\n", out);
    }
    fputs("</ul>\n</section>\n", out);
}

/* The answers first, one sentence per question (src/report/answers.c). */
static void answers_html(FILE *out, const struct mb_an_experiment *e)
{
    struct mb__answer a[MB__Q_COUNT];
    size_t n = mb__answers(e, a, MB__Q_COUNT);
    if (n == 0)
        return;
    fputs("<div class=\"answers\"><h3>Answers</h3>\n<ul>\n", out);
    for (size_t i = 0; i < n; i++) {
        fprintf(out, "<li class=\"%s\">", a[i].clear > 0 ? "clear" : "unclear");
        esc(out, a[i].sentence);
        fputs("</li>\n", out);
    }
    fputs("</ul></div>\n", out);
}

static void experiment(FILE *out, const struct mb_an_experiment *e, size_t idx)
{
    fprintf(out, "<section id=\"exp%zu\">\n", idx);
    if (e->emulated)
        fputs("<div class=\"banner\">EMULATED DEVICE — these figures do not come from real "
              "hardware.</div>\n",
              out);
    fputs("<h2>", out);
    esc(out, e->name);
    fputs(" on ", out);
    char dev[MB_AN_NAME_MAX * 2 + 8];
    esc(out, mb__device_label(dev, sizeof(dev), e));
    fputs("</h2>\n", out);
    answers_html(out, e);
    fputs("<p class=\"ctx\">", out);
    esc_na(out, e->device_name);
    fputs(" · backend ", out);
    esc_na(out, e->backend);
    fputs(" · driver ", out);
    esc_na(out, e->driver_version);
    fputs(" · power limit ", out);
    opt_text(out, e->power_limit_w, "W");
    fputs(" · results <code>", out);
    esc(out, e->dir);
    fputs("</code></p>\n", out);
    /* A device without an energy sensor (the host without RAPL): said once; the energy charts,
     * the attribution table and the power timelines would be empty axes and rows of n/a. */
    int no_energy = mb__no_energy_sensor(e);
    if (no_energy)
        fputs("<p class=\"note\"><b>No energy sensor:</b> this device has no readable power "
              "reading or energy counter, so energy, J/unit, the energy charts, the attribution "
              "table and the power timelines are left out.</p>\n",
              out);

    fputs("<h3>Findings</h3>\n<ul class=\"findings\">\n", out);
    if (e->emulated) {
        char note[512];
        mb__emulated_findings(note, sizeof(note), e);
        fputs("<li class=\"warn\">", out);
        esc(out, note);
        fputs("</li>\n", out);
    }
    int any = 0;
    for (size_t i = 0; i < e->nruns; i++) {
        char h[512], label[MB_AN_TEXT_MAX];
        mb__fmt_headline(h, sizeof(h), &e->runs[i]);
        if (!h[0])
            continue;
        mb__run_label(label, sizeof(label), &e->runs[i]);
        fputs("<li><b>", out);
        esc(out, label);
        fputs("</b>: ", out);
        esc(out, h);
        fputs(".</li>\n", out);
        any = 1;
    }
    if (!any)
        fputs("<li>No run could be compared with an exclusive baseline.</li>\n", out);
    fprintf(out,
            "</ul>\n<p class=\"note\">Means over %s repetitions with 95%% confidence "
            "intervals (Student t; ratios by the delta method). Failed cells are left out "
            "and listed under measurement quality.</p>\n",
            "successful");
    chart_gains(out, e);

    fputs("<h3>Normalised throughput</h3>\n", out);
    if (any_stp(e)) {
        fputs("<p class=\"note\">Each job's throughput divided by its throughput alone on the "
              "whole device; the stacked length is the system throughput (STP).</p>\n",
              out);
        for (size_t i = 0; i < e->nruns; i++)
            if (strcmp(e->runs[i].mode, "exclusive") != 0) {
                legend(out, e, &e->runs[i]);
                break;
            }
    }
    chart_stp(out, e);

    if (!no_energy) {
        fputs(
            "<h3>Energy per unit of work</h3>\n<p class=\"note\">Attributed energy divided by the "
            "work done in the window; shared runs use their default attribution method (table "
            "below).</p>\n",
            out);
        chart_energy_per_unit(out, e);
    }

    jobs_table(out, e);
    runs_table(out, e);
    power_section(out, e);
    /* Without an energy sensor the attribution and timelines would be rows of n/a. */
    if (!no_energy) {
        attribution_table(out, e);
        power_timelines(out, e);
    }
    quality_list(out, e);
}

static const char css[] =
    "body{font:15px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;color:#1b1b1b;"
    "max-width:1040px;margin:0 auto;padding:24px;background:#fff}"
    "h1{font-size:26px;margin:0 0 4px}h2{font-size:21px;margin:28px 0 4px;border-bottom:2px solid "
    "#0072B2;padding-bottom:4px}h3{font-size:16px;margin:22px 0 6px;color:#333}"
    ".banner{background:#fff3cd;border:2px solid #D55E00;color:#7a2e00;font-weight:700;"
    "padding:8px 12px;margin:18px 0 0;border-radius:4px}"
    ".ctx,.note{color:#555;font-size:13px;margin:2px 0 8px}"
    ".findings li{margin:4px 0;font-size:16px}"
    ".answers{background:#eef6ee;border-left:5px solid #009E73;padding:6px 14px;margin:10px 0}"
    ".answers h3{margin:4px 0}.answers li{margin:4px 0;font-size:17px}"
    "table{border-collapse:collapse;font-size:13px;margin:6px 0 10px;width:100%}"
    "th{background:#eef3f8;text-align:left;padding:4px 8px;border-bottom:1px solid #9ab}"
    "td{padding:3px 8px;border-bottom:1px solid #e3e3e3}td.num{text-align:right;"
    "font-variant-numeric:tabular-nums;white-space:nowrap}.na{color:#888}td.base{color:#777;"
    "text-align:center;font-style:italic}tr.total td{font-weight:600;border-top:1px solid #999}"
    "svg text{font-family:system-ui,sans-serif}.chart{width:100%;height:auto;display:block}"
    ".lab{font-size:12px;fill:#222}.val{font-size:11px;fill:#111}.tick{font-size:11px;"
    "fill:#555}.inbar{font-size:11px;fill:#fff;font-weight:700;paint-order:stroke;stroke:#000;"
    "stroke-width:2px}.note{font-size:11px;fill:#555}.grid{stroke:#ddd;stroke-width:1}"
    ".ref{stroke:#333;stroke-width:1.2;stroke-dasharray:4 3}.legend{font-size:13px;margin:2px 0}"
    ".tls{display:grid;grid-template-columns:repeat(auto-fill,minmax(470px,1fr));gap:8px 14px}"
    ".tl{margin:0;border:1px solid #e3e3e3;padding:4px 6px;break-inside:avoid}"
    ".tl figcaption{font-size:12px;color:#333}.win{fill:#56B4E9;opacity:0.15}"
    ".pw{fill:none;stroke:#1b1b1b;stroke-width:1.3}.idle{stroke:#D55E00;stroke-dasharray:3 3}"
    ".quality li.warn{color:#7a2e00}.methods{font-size:13px;color:#333}"
    "code{font-size:12px}@media print{body{padding:0}.banner{border-width:3px}}";

void mb__report_html(FILE *out, const struct mb_analysis *a)
{
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
          "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
          "<title>migbench report",
          out);
    for (size_t i = 0; i < a->nexp; i++) {
        fputs(i ? ", " : ": ", out);
        esc(out, a->exps[i].name);
        fputs(" on ", out);
        esc(out, a->exps[i].model);
    }
    fprintf(out, "</title>\n<style>%s</style>\n</head>\n<body>\n", css);
    pattern_defs(out);
    fputs("<header><h1>migbench report</h1><p class=\"ctx\">Sharing a GPU between training "
          "jobs: time-slicing, MPS and MIG against running the jobs one after another.</p>"
          "</header>\n",
          out);
    for (size_t i = 0; i < a->nexp; i++)
        experiment(out, &a->exps[i], i);
    if (a->nexp > 1) {
        fputs("<section><h2>Comparison across results directories</h2>\n<table><thead><tr>"
              "<th>device</th><th>run</th><th>STP</th><th>energy saving %</th>"
              "<th>throughput gain %</th></tr></thead><tbody>\n",
              out);
        for (size_t i = 0; i < a->nexp; i++) {
            const struct mb_an_experiment *e = &a->exps[i];
            for (size_t k = 0; k < e->nruns; k++) {
                const struct mb_an_run *r = &e->runs[k];
                if (strcmp(r->mode, "exclusive") == 0)
                    continue;
                char label[MB_AN_TEXT_MAX];
                mb__run_label(label, sizeof(label), r);
                fputs("<tr><td>", out);
                esc(out, e->model);
                if (e->emulated)
                    fputs(" (emulated)", out);
                fputs("</td><td>", out);
                esc(out, label);
                fputs("</td>", out);
                est_cell(out, &r->stp, 2, 1);
                est_cell(out, &r->energy_saving, 1, 100);
                est_cell(out, &r->throughput_gain, 1, 100);
                fputs("</tr>\n", out);
            }
        }
        fputs("</tbody></table>\n", out);
        chart_gains_all(out, a);
        fputs("</section>\n", out);
    }
    fputs("<footer><p class=\"ctx\">Generated by migbench report. Unmeasured values are shown "
          "as n/a, never as 0.</p></footer>\n</body>\n</html>\n",
          out);
}
