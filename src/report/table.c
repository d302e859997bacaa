/* SPDX-License-Identifier: Apache-2.0 */
/* migbench report --format table and --format md: aligned text tables, or Markdown. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report_internal.h"

#define COLS_MAX 10
#define CELL_MAX 400
#define ROWS_MAX 512

/* ---------------------------------------------------------------------------------------- */
/* A small aligned table, printed for the terminal or as Markdown                             */

struct table {
    size_t ncols, nrows;
    const char *head[COLS_MAX];
    int right[COLS_MAX];
    char (*cells)[COLS_MAX][CELL_MAX];
    unsigned char span[ROWS_MAX]; /* a row whose first cell is printed alone, unaligned */
};

static int table_init(struct table *t, size_t ncols, const char *const *head, const int *right)
{
    memset(t, 0, sizeof(*t));
    t->ncols = ncols;
    for (size_t i = 0; i < ncols; i++) {
        t->head[i] = head[i];
        t->right[i] = right[i];
    }
    t->cells = calloc(ROWS_MAX, sizeof(*t->cells));
    return t->cells ? 0 : -1;
}

static char *table_cell(struct table *t, size_t col)
{
    return t->cells[t->nrows][col];
}

static void table_end_row(struct table *t)
{
    if (t->nrows + 1 < ROWS_MAX)
        t->nrows++;
}

/* Display width of UTF-8 text: continuation bytes take no column. */
static size_t width(const char *s)
{
    size_t w = 0;
    for (; *s; s++)
        w += ((unsigned char)*s & 0xC0) != 0x80;
    return w;
}

static void pad(FILE *out, size_t n)
{
    while (n--)
        fputc(' ', out);
}

static void table_print(FILE *out, struct table *t, int md)
{
    size_t w[COLS_MAX];
    for (size_t c = 0; c < t->ncols; c++) {
        w[c] = width(t->head[c]);
        for (size_t r = 0; r < t->nrows; r++)
            if (!t->span[r] && width(t->cells[r][c]) > w[c])
                w[c] = width(t->cells[r][c]);
    }
    for (size_t r = 0; r <= t->nrows + (md ? 1 : 0); r++) {
        if (r > 0 && !md && t->span[r - 1]) {
            fprintf(out, "%s\n", t->cells[r - 1][0]);
            continue;
        }
        if (md)
            fputs("| ", out);
        for (size_t c = 0; c < t->ncols; c++) {
            const char *s;
            if (r == 0)
                s = t->head[c];
            else if (md && r == 1)
                s = NULL;
            else
                s = t->cells[r - (md ? 2 : 1)][c];
            if (!s) {
                for (size_t k = 0; k < w[c]; k++)
                    fputc(k + 1 == w[c] && t->right[c] ? ':' : '-', out);
            } else if (t->right[c] && r > 0) {
                pad(out, w[c] - width(s));
                fputs(s, out);
            } else {
                fputs(s, out);
                if (c + 1 < t->ncols || md)
                    pad(out, w[c] - width(s));
            }
            if (c + 1 < t->ncols)
                fputs(md ? " | " : "  ", out);
        }
        fputs(md ? " |\n" : "\n", out);
    }
    free(t->cells);
    t->cells = NULL;
}

/* Prints text wrapped at 80 columns (not for Markdown, which reflows), later lines indented. */
static void wrapped(FILE *out, int md, const char *prefix, const char *text)
{
    fputs(prefix, out);
    if (md) {
        fprintf(out, "%s\n", text);
        return;
    }
    size_t col = width(prefix);
    const char *p = text;
    while (*p) {
        const char *sp = strchr(p, ' ');
        size_t len = sp ? (size_t)(sp - p) : strlen(p);
        char word[512];
        snprintf(word, sizeof(word), "%.*s", (int)(len < sizeof(word) ? len : sizeof(word) - 1), p);
        size_t w = width(word);
        /* A word too long for any line (a path) stays where it is: moving it gains nothing. */
        if (col > 4 && col + 1 + w > 80 && w <= 76) {
            fputs("\n    ", out);
            col = 4;
        } else if (p != text) {
            fputc(' ', out);
            col++;
        }
        fputs(word, out);
        col += w;
        p += len;
        while (*p == ' ')
            p++;
    }
    fputc('\n', out);
}

static void heading(FILE *out, int md, int level, const char *text)
{
    if (md) {
        fprintf(out, "\n%s %s\n\n", level == 1 ? "##" : "###", text);
        return;
    }
    fprintf(out, "\n%s\n", text);
    for (size_t i = width(text); i > 0; i--)
        fputc(level == 1 ? '=' : '-', out);
    fputc('\n', out);
}

static void fmt_watts(char *buf, size_t cap, struct mb_opt o)
{
    if (o.valid)
        snprintf(buf, cap, "%.0f W", o.v);
    else
        snprintf(buf, cap, "n/a");
}

static void device_line(FILE *out, const struct mb_an_experiment *e, int md)
{
    char pl[32], line[2048];
    fmt_watts(pl, sizeof(pl), e->power_limit_w);
    snprintf(line, sizeof(line), "device: %s (%s, backend %s), uuid %s, driver %s, power limit %s",
             e->device_name[0] ? e->device_name : "n/a", e->model[0] ? e->model : "n/a",
             e->backend[0] ? e->backend : "n/a", e->uuid[0] ? e->uuid : "n/a",
             e->driver_version[0] ? e->driver_version : "n/a", pl);
    wrapped(out, md, md ? "- " : "", line);
    snprintf(line, sizeof(line), "sensor: %s", e->sensor[0] ? e->sensor : "n/a");
    wrapped(out, md, md ? "- " : "", line);
    /* The path on a line of its own, never wrapped: a long clone path stays one line. */
    fprintf(out, "%sresults: %s\n", md ? "- " : "", e->dir);
    snprintf(line, sizeof(line), "experiment: %s, sha %s, migbench %s", e->name,
             e->sha[0] ? e->sha : "n/a", e->migbench_version[0] ? e->migbench_version : "n/a");
    wrapped(out, md, md ? "- " : "", line);
}

/* Energy per unit in mJ with three significant digits: 196 ± 5, 6.14 ± 0.31. */
static void fmt_mj_per_unit(char *buf, size_t cap, const struct mb_estimate *e)
{
    if (!e->valid) {
        snprintf(buf, cap, "n/a");
        return;
    }
    double m = e->mean * 1000;
    int dec = m >= 100 ? 0 : m >= 10 ? 1 : 2;
    if (e->ci_valid)
        snprintf(buf, cap, "%.*f ± %.*f", dec, m, dec, e->ci95 * 1000);
    else
        snprintf(buf, cap, "%.*f", dec, m);
}

/* The run's name on a row of its own keeps the tables within 80 columns. */
static void run_row(struct table *t, const struct mb_an_run *r, int md)
{
    if (md)
        return;
    char label[MB_AN_TEXT_MAX];
    mb__run_label(label, sizeof(label), r);
    snprintf(table_cell(t, 0), CELL_MAX, "%s", label);
    t->span[t->nrows] = 1;
    table_end_row(t);
}

/* The jobs table: throughput, normalised, time per step, energy per unit. */
static void jobs_table(FILE *out, const struct mb_an_experiment *e, int md)
{
    const size_t off = md ? 0 : 1; /* the terminal table drops the run column */
    struct table t;
    heading(out, md, 2, "Jobs (mean ± 95% CI over repetitions)");
    static const char *const jh[] = {"run",  "job",     "throughput/s", "unit",
                                     "norm", "ms/step", "mJ/unit"};
    static const int jr[] = {0, 0, 1, 0, 1, 1, 1};
    if (table_init(&t, 7 - off, jh + off, jr + off) != 0)
        return;
    for (size_t i = 0; i < e->nruns; i++) {
        const struct mb_an_run *r = &e->runs[i];
        run_row(&t, r, md);
        for (size_t k = 0; k < r->njobs; k++) {
            const struct mb_an_job *j = &r->jobs[k];
            if (md)
                snprintf(table_cell(&t, 0), CELL_MAX, "%s", k == 0 ? r->name : "");
            snprintf(table_cell(&t, 1 - off), CELL_MAX, "%s%s", md ? "" : "  ", j->name);
            int dec = j->throughput.valid && j->throughput.mean >= 10000 ? 0 : 1;
            mb__fmt_est(table_cell(&t, 2 - off), CELL_MAX, &j->throughput, dec, 1);
            snprintf(table_cell(&t, 3 - off), CELL_MAX, "%.*s", (int)(strcspn(j->unit, "/")),
                     j->unit);
            mb__fmt_est(table_cell(&t, 4 - off), CELL_MAX, &j->normalised, 2, 1);
            mb__fmt_est(table_cell(&t, 5 - off), CELL_MAX, &j->s_per_step, 1, 1000);
            fmt_mj_per_unit(table_cell(&t, 6 - off), CELL_MAX, &j->j_per_unit);
            table_end_row(&t);
        }
    }
    table_print(out, &t, md);
    wrapped(out, md, md ? "\n" : "",
            "norm: throughput / the same workload's exclusive throughput (delta-method CI). "
            "mJ/unit: energy by the run's default attribution / units of work.");
}

/* When the host CPU was the shared device: the cores (and threads) each job had. */
static void cpu_cores_line(FILE *out, const struct mb_an_experiment *e, int md)
{
    char line[2048];
    if (e->cpu_device) {
        /* On the host the CPU is the device: say how many cores (and threads) each job had. */
        size_t used = (size_t)snprintf(
            line, sizeof(line), "CPU cores per job (its OMP_NUM_THREADS and torch threads):");
        for (size_t i = 0; i < e->nruns && used < sizeof(line); i++) {
            const struct mb_an_run *r = &e->runs[i];
            used +=
                (size_t)snprintf(line + used, sizeof(line) - used, "%s %s", i ? ";" : "", r->name);
            for (size_t k = 0; k < r->njobs && used < sizeof(line); k++) {
                char n[16] = "n/a";
                if (r->jobs[k].cores.valid)
                    snprintf(n, sizeof(n), "%.0f", r->jobs[k].cores.v);
                used += (size_t)snprintf(line + used, sizeof(line) - used, "%s %s %s", k ? "," : "",
                                         r->jobs[k].name, n);
            }
        }
        if (used < sizeof(line))
            snprintf(line + used, sizeof(line) - used, ".");
        wrapped(out, md, md ? "\n" : "", line);
    }
}

/* Per run: cells, window, energy and power. */
static void runs_table(FILE *out, const struct mb_an_experiment *e, int md)
{
    heading(out, md, 2, "Runs");
    static const char *const rh[] = {"run",      "mode",     "cells ok/failed",
                                     "window s", "energy J", "mean W"};
    static const int rr[] = {0, 0, 1, 1, 1, 1};
    struct table t;
    if (table_init(&t, 6, rh, rr) != 0)
        return;
    for (size_t i = 0; i < e->nruns; i++) {
        const struct mb_an_run *r = &e->runs[i];
        snprintf(table_cell(&t, 0), CELL_MAX, "%s", r->name);
        snprintf(table_cell(&t, 1), CELL_MAX, "%s", r->mode);
        snprintf(table_cell(&t, 2), CELL_MAX, "%zu/%zu", r->nok, r->nfailed);
        mb__fmt_est(table_cell(&t, 3), CELL_MAX, &r->window_s, 1, 1);
        mb__fmt_est(table_cell(&t, 4), CELL_MAX, &r->energy_j, 0, 1);
        mb__fmt_est(table_cell(&t, 5), CELL_MAX, &r->power_w, 0, 1);
        table_end_row(&t);
    }
    table_print(out, &t, md);
}

/* Against the exclusive baseline: STP, ANTT, energy saving, throughput gain. */
static void comparison_table(FILE *out, const struct mb_an_experiment *e, int md)
{
    heading(out, md, 2, "Against running the jobs one after another (exclusive)");
    static const char *const ch[] = {"run", "STP", "ANTT", "energy saving %", "throughput gain %"};
    static const int cr[] = {0, 1, 1, 1, 1};
    struct table t;
    if (table_init(&t, 5, ch, cr) != 0)
        return;
    for (size_t i = 0; i < e->nruns; i++) {
        const struct mb_an_run *r = &e->runs[i];
        snprintf(table_cell(&t, 0), CELL_MAX, "%s", r->name);
        if (strcmp(r->mode, "exclusive") == 0) {
            for (int c = 1; c < 5; c++)
                snprintf(table_cell(&t, (size_t)c), CELL_MAX, "baseline");
        } else {
            mb__fmt_est(table_cell(&t, 1), CELL_MAX, &r->stp, 2, 1);
            mb__fmt_est(table_cell(&t, 2), CELL_MAX, &r->antt, 2, 1);
            mb__fmt_est(table_cell(&t, 3), CELL_MAX, &r->energy_saving, 1, 100);
            mb__fmt_est(table_cell(&t, 4), CELL_MAX, &r->throughput_gain, 1, 100);
        }
        table_end_row(&t);
    }
    table_print(out, &t, md);
    wrapped(out, md, md ? "\n" : "",
            "STP: sum of normalised throughputs. ANTT: mean of 1/norm. Saving and gain: against "
            "doing the same work one job after another on the whole device.");
}

/* Energy attribution per job under every method, and each run's notes. */
static void attribution_tables(FILE *out, const struct mb_an_experiment *e, int md)
{
    char line[2048];
    const size_t off = md ? 0 : 1; /* the terminal table drops the run column */
    struct table t;
    heading(out, md, 2, "Energy attribution (J, summed over cells with energy)");
    static const char *const ah[] = {
        "run", "job", "equal", "compute-share", "activity", "static-dynamic", "interval"};
    static const int ar[] = {0, 0, 1, 1, 1, 1, 1};
    if (table_init(&t, 7 - off, ah + off, ar + off) != 0)
        return;
    for (size_t i = 0; i < e->nruns; i++) {
        const struct mb_an_run *r = &e->runs[i];
        run_row(&t, r, md);
        for (size_t k = 0; k <= r->njobs; k++) {
            if (md)
                snprintf(table_cell(&t, 0), CELL_MAX, "%s", k == 0 ? r->name : "");
            snprintf(table_cell(&t, 1 - off), CELL_MAX, "%s%s", md ? "" : "  ",
                     k < r->njobs ? r->jobs[k].name : "= total");
            for (int m = 0; m < MB_ATTR_COUNT; m++) {
                char *c = table_cell(&t, (size_t)m + 2 - off);
                if (!r->attr[m].available)
                    snprintf(c, CELL_MAX, "n/a");
                else
                    mb__fmt_j(c, CELL_MAX,
                              k < r->njobs ? r->attr[m].job_mj[k] : r->attr[m].total_mj);
            }
            table_end_row(&t);
        }
    }
    table_print(out, &t, md);
    fprintf(out, "%s", md ? "\n" : "");
    for (size_t i = 0; i < e->nruns; i++) {
        const struct mb_an_run *r = &e->runs[i];
        size_t used = (size_t)snprintf(line, sizeof(line), "%s: default %s;", r->name,
                                       mb_analysis_method_name(r->default_method));
        for (int m = 0; m < MB_ATTR_COUNT && used < sizeof(line); m++)
            if (r->attr[m].note[0] && strncmp(r->attr[m].note, "not applicable", 14) != 0)
                used += (size_t)snprintf(line + used, sizeof(line) - used, " %s: %s;",
                                         mb_analysis_method_name(m), r->attr[m].note);
        if (used < sizeof(line)) {
            if (r->static_mj >= 0) {
                char s1[32], d1[32];
                mb__fmt_j(s1, sizeof(s1), r->static_mj);
                mb__fmt_j(d1, sizeof(d1), r->dynamic_mj);
                snprintf(line + used, sizeof(line) - used, " static %s J + dynamic %s J.", s1, d1);
            } else {
                snprintf(line + used, sizeof(line) - used, " static/dynamic n/a.");
            }
        }
        wrapped(out, md, md ? "- " : "", line);
    }
    wrapped(out, md, md ? "- " : "",
            "default METHOD: the attribution behind mJ/unit in the jobs table (interval: by the "
            "power over each job's own window, in exclusive runs; equal: the cell's energy split "
            "evenly; compute-share: by MIG slices, MPS percentage or cores). The other methods "
            "are shown for comparison, each summing to the measured energy.");
}

/* Measurement quality: cell counts and the analysis notes. */
static void quality_notes(FILE *out, const struct mb_an_experiment *e, int md)
{
    char line[2048];
    heading(out, md, 2, "Measurement quality");
    snprintf(line, sizeof(line),
             "cells: %zu, failed: %zu, unfinished: %zu, without energy: %zu, energy gap "
             "flagged: %zu",
             e->cells_total, e->cells_failed, e->cells_unfinished, e->cells_no_energy,
             e->cells_gap_flagged);
    /* Said only when it happened: older results and quiet runs read as before. */
    if (e->cells_outside_load) {
        size_t len = strlen(line);
        snprintf(line + len, sizeof(line) - len, ", under outside load: %zu",
                 e->cells_outside_load);
    }
    wrapped(out, md, md ? "- " : "", line);
    for (size_t i = 0; i < e->nnotes; i++)
        wrapped(out, md, md ? "- " : "", e->notes[i]);
}

/* The answers first: one sentence per question (src/report/answers.c). */
static void answers(FILE *out, const struct mb_an_experiment *e, int md)
{
    struct mb__answer a[MB__Q_COUNT];
    size_t n = mb__answers(e, a, MB__Q_COUNT);
    if (n == 0)
        return;
    if (md)
        fputs("**Answers**\n\n", out);
    else
        fputs("Answers:\n", out);
    for (size_t i = 0; i < n; i++)
        wrapped(out, md, md ? "- " : "* ", a[i].sentence);
    if (!md)
        fputc('\n', out);
}

static void experiment_tables(FILE *out, const struct mb_an_experiment *e, int md)
{
    char title[MB_AN_NAME_MAX * 4 + 16], line[2048];
    char dev[MB_AN_NAME_MAX * 2 + 8];
    snprintf(title, sizeof(title), "%s on %s%s", e->name, mb__device_label(dev, sizeof(dev), e),
             e->emulated ? " (EMULATED)" : "");
    heading(out, md, 1, title);
    if (e->emulated)
        fprintf(out, "%sEMULATED DEVICE: these figures do not come from real hardware.%s\n",
                md ? "> **" : "!! ", md ? "**\n" : "");
    answers(out, e, md);
    device_line(out, e, md);
    /* A device without an energy sensor (the host without RAPL): said once, and the energy
     * tables that would hold nothing but n/a are left out. */
    int no_energy = mb__no_energy_sensor(e);
    if (no_energy)
        wrapped(out, md, md ? "- " : "",
                "energy: this device has no energy sensor (no readable power reading or energy "
                "counter), so energy, J/unit and the energy attribution are left out.");

    heading(out, md, 2, "Findings");
    if (e->emulated) {
        mb__emulated_findings(line, sizeof(line), e);
        wrapped(out, md, md ? "- " : "", line);
    }
    int any = 0;
    for (size_t i = 0; i < e->nruns; i++) {
        char h[512], label[MB_AN_TEXT_MAX];
        mb__fmt_headline(h, sizeof(h), &e->runs[i]);
        if (!h[0])
            continue;
        mb__run_label(label, sizeof(label), &e->runs[i]);
        snprintf(line, sizeof(line), "%s: %s.", label, h);
        wrapped(out, md, md ? "- " : "", line);
        any = 1;
    }
    if (!any)
        fprintf(out, "%sNo run could be compared with an exclusive baseline.\n", md ? "- " : "");

    jobs_table(out, e, md);
    cpu_cores_line(out, e, md);
    runs_table(out, e, md);
    comparison_table(out, e, md);
    /* A device without an energy sensor: the attribution tables would hold only n/a. */
    if (!no_energy)
        attribution_tables(out, e, md);
    quality_notes(out, e, md);
}

void mb__report_table(FILE *out, const struct mb_analysis *a, int md)
{
    if (md)
        fprintf(out, "# migbench report\n");
    else
        fprintf(out, "migbench report\n");
    for (size_t i = 0; i < a->nexp; i++)
        experiment_tables(out, &a->exps[i], md);
    if (a->nexp < 2)
        return;
    heading(out, md, 1, "Comparison across results directories");
    static const char *const h[] = {"device", "run", "STP", "energy saving %", "throughput gain %"};
    static const int rt[] = {0, 0, 1, 1, 1};
    /* Run names rather than full labels keep this table within 80 columns. */
    struct table t;
    if (table_init(&t, 5, h, rt) != 0)
        return;
    for (size_t i = 0; i < a->nexp; i++) {
        const struct mb_an_experiment *e = &a->exps[i];
        for (size_t k = 0; k < e->nruns; k++) {
            const struct mb_an_run *r = &e->runs[k];
            if (strcmp(r->mode, "exclusive") == 0)
                continue;
            snprintf(table_cell(&t, 0), CELL_MAX, "%s%s", e->model, e->emulated ? " (emu)" : "");
            snprintf(table_cell(&t, 1), CELL_MAX, "%s", r->name);
            mb__fmt_est(table_cell(&t, 2), CELL_MAX, &r->stp, 2, 1);
            mb__fmt_est(table_cell(&t, 3), CELL_MAX, &r->energy_saving, 1, 100);
            mb__fmt_est(table_cell(&t, 4), CELL_MAX, &r->throughput_gain, 1, 100);
            table_end_row(&t);
        }
    }
    table_print(out, &t, md);
}
