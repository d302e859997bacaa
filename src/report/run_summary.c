/* SPDX-License-Identifier: Apache-2.0 */
/* The summary `migbench run` prints at its end: per run and job of the cells it ran, from the
 * analysis of the results directory. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "migbench/analysis.h"
#include "migbench/num.h"
#include "migbench/report_verbs.h"
#include "migbench/stats.h"

/* One run's line of the summary, over the cells of this invocation. */
struct summary_row {
    size_t n_ok, n_cell;
    double rate[MB_EXP_MAX_JOBS][64];
    size_t n_rate[MB_EXP_MAX_JOBS];
    double ci_single[MB_EXP_MAX_JOBS]; /* a cell's own CI, shown for a single repetition */
    bool ci_single_ok[MB_EXP_MAX_JOBS];
    double energy_sum, units_sum;
    size_t n_energy;
    bool units_ok;
};

static bool selected_rep(const struct mb_cell *cells, size_t n, size_t c, int rep)
{
    for (size_t k = c; k < n && cells[k].run == cells[c].run; k++)
        if ((int)cells[k].rep == rep)
            return true;
    return false;
}

/* Adds one recorded cell of the run: job throughputs, energy and units of work. */
static void add_cell(struct summary_row *row, const struct mb_an_cell *cell, size_t n_jobs)
{
    if (!cell->ok)
        return;
    row->n_ok++;
    double units = 0;
    for (size_t j = 0; j < n_jobs && j < cell->njobs; j++) {
        const struct mb_an_cell_job *job = &cell->jobs[j];
        if (!job->throughput.valid) {
            row->units_ok = false;
            continue;
        }
        if (row->n_rate[j] < 64)
            row->rate[j][row->n_rate[j]++] = job->throughput.v;
        if (job->throughput_ci95.valid) {
            row->ci_single[j] = job->throughput_ci95.v;
            row->ci_single_ok[j] = true;
        }
        const struct mb_opt *w = job->window_s.valid ? &job->window_s : &cell->window_s;
        if (w->valid)
            units += job->throughput.v * w->v;
        else
            row->units_ok = false;
    }
    const struct mb_opt *e = cell->counter_j.valid ? &cell->counter_j : &cell->integrated_j;
    if (e->valid) {
        row->energy_sum += e->v;
        row->units_sum += units;
        row->n_energy++;
    }
}

/* "mean +- CI unit" over the repetitions; one repetition shows its cell's own CI (ci1 < 0: none).
 */
static void format_rate(const double *rate, size_t n, double ci1, const char *unit, char *out,
                        size_t cap)
{
    char a[32], b[32];
    if (n == 0) {
        snprintf(out, cap, "n/a");
        return;
    }
    struct mb_stats_summary st;
    mb_stats_summarize(rate, n, &st);
    if (n < 2 && ci1 >= 0) {
        snprintf(out, cap, "%s +- %s %s", mb_num_fmt_sig(a, sizeof(a), st.mean, 4),
                 mb_num_fmt_sig(b, sizeof(b), ci1, 2), unit);
        return;
    }
    if (!st.ci_valid) {
        snprintf(out, cap, "%s %s", mb_num_fmt_sig(a, sizeof(a), st.mean, 4), unit);
        return;
    }
    snprintf(out, cap, "%s +- %s %s", mb_num_fmt_sig(a, sizeof(a), st.mean, 4),
             mb_num_fmt_sig(b, sizeof(b), st.ci95_half, 2), unit);
}

static void print_run_rows(FILE *out, const struct mb_exp_run *r, const struct mb_an_run *ar,
                           const struct summary_row *row, int nw)
{
    for (size_t j = 0; j < r->n_jobs; j++) {
        char tp[96], ok[48] = "", en[32] = "", jpu[32] = "";
        const char *unit = ar && j < ar->njobs ? ar->jobs[j].unit : "";
        format_rate(row->rate[j], row->n_rate[j], row->ci_single_ok[j] ? row->ci_single[j] : -1,
                    unit, tp, sizeof(tp));
        if (j == 0) {
            snprintf(ok, sizeof(ok), "%zu/%zu", row->n_ok, row->n_cell);
            if (row->n_energy)
                mb_num_fmt_sig(en, sizeof(en), row->energy_sum / (double)row->n_energy, 4);
            else
                snprintf(en, sizeof(en), "n/a");
            bool same_unit = true;
            for (size_t k = 1; ar && k < ar->njobs; k++)
                same_unit = same_unit && strcmp(ar->jobs[k].unit, ar->jobs[0].unit) == 0;
            if (row->n_energy && same_unit && row->units_ok && row->units_sum > 0)
                mb_num_fmt_sig(jpu, sizeof(jpu), row->energy_sum / row->units_sum, 4);
            else
                snprintf(jpu, sizeof(jpu), "n/a");
        }
        fprintf(out, "%-*s %-10s %-5s %-20s %-32s %-12s %s\n", nw, j == 0 ? r->name : "",
                j == 0 ? mb_exp_mode_str(r->mode) : "", ok, r->job_name[j], tp, en, jpu);
    }
}

/* The cells of this invocation taken under outside load, each with why, and what that means. */
static void outside_load_lines(FILE *out, const struct mb_experiment *exp,
                               const struct mb_an_experiment *ae, const struct mb_cell *cells,
                               size_t n_cells)
{
    size_t n = 0;
    for (size_t c = 0; ae && c < n_cells; c++) {
        const char *name = exp->runs[cells[c].run].name;
        for (size_t i = 0; i < ae->nruns; i++) {
            const struct mb_an_run *ar = &ae->runs[i];
            for (size_t k = 0; strcmp(ar->name, name) == 0 && k < ar->ncells; k++) {
                const struct mb_an_cell *cell = &ar->cells[k];
                if (cell->rep != (int)cells[c].rep || cell->outside_load != 1)
                    continue;
                fprintf(out, "outside load: %s rep %d: %s\n", name, cell->rep,
                        cell->outside_load_why);
                n++;
            }
        }
    }
    if (n)
        fprintf(out,
                "outside load: %zu cell(s) measured while other work loaded the host (thresholds "
                "in docs/run.md, \"Outside load\"): their figures may be affected; rerun them on "
                "a quiet machine\n",
                n);
}

/*
 * Summary table: per run and job of this invocation's cells, throughput (mean over
 * repetitions, 95% CI), energy per cell and J/unit, from the analysis of the results directory.
 */
void mb_run_summary_write(FILE *out, const struct mb_experiment *exp, const char *dir,
                          const struct mb_cell *cells, size_t n_cells, int nw)
{
    fprintf(out, "%-*s %-10s %-5s %-20s %-32s %-12s %s\n", nw, "run", "mode", "ok", "job",
            "throughput (mean +- 95% CI)", "energy_J", "J/unit");
    struct mb_analysis *an = NULL;
    struct mb_error err;
    if (mb_analysis_load(&an, &dir, 1, &err) != MB_OK)
        an = NULL;
    const struct mb_an_experiment *ae = an && an->nexp ? &an->exps[0] : NULL;
    for (size_t c = 0; c < n_cells; c++) {
        if (c > 0 && cells[c - 1].run == cells[c].run)
            continue;
        const struct mb_exp_run *r = &exp->runs[cells[c].run];
        struct summary_row row = {.units_ok = true};
        for (size_t k = c; k < n_cells && cells[k].run == cells[c].run; k++)
            row.n_cell++;
        const struct mb_an_run *ar = NULL;
        for (size_t i = 0; ae && i < ae->nruns && !ar; i++)
            if (strcmp(ae->runs[i].name, r->name) == 0)
                ar = &ae->runs[i];
        for (size_t i = 0; ar && i < ar->ncells; i++)
            if (selected_rep(cells, n_cells, c, ar->cells[i].rep))
                add_cell(&row, &ar->cells[i], r->n_jobs);
        print_run_rows(out, r, ar, &row, nw);
    }
    outside_load_lines(out, exp, ae, cells, n_cells);
    mb_analysis_destroy(an);
}
