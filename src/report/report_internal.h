/* SPDX-License-Identifier: Apache-2.0 */
/* What the report renderers under src/report/ share. Library-private. */
#ifndef MIGBENCH_REPORT_INTERNAL_H
#define MIGBENCH_REPORT_INTERNAL_H

#include <stdint.h>
#include <stdio.h>

#include "migbench/analysis.h"
#include "migbench/powersel.h"

/* Terminal table (markdown == 0) or Markdown (markdown != 0). */
void mb__report_table(FILE *out, const struct mb_analysis *a, int markdown);
void mb__report_csv(FILE *out, const struct mb_analysis *a);
/* Returns MB_OK or MB_ENOMEM. rule: the power-limit selection rule (NULL: energy). */
int mb__report_json(FILE *out, const struct mb_analysis *a, const struct mb_power_rule_opts *rule);
void mb__report_html(FILE *out, const struct mb_analysis *a);

/* "1234.5 ± 6.7", "1234.5" (no CI) or "n/a"; values are multiplied by scale first. */
void mb__fmt_est(char *buf, size_t cap, const struct mb_estimate *e, int decimals, double scale);

/* Millijoules as joules with three decimals: "-12.345". */
void mb__fmt_j(char *buf, size_t cap, int64_t mj);

/* v with sig significant digits, trailing zeros dropped ("0.4", "150"); returns buf. */
char *mb__fmt_sig(char *buf, size_t cap, double v, int sig);

/*
 * The study's headline for a non-exclusive run with a baseline, e.g. "31% less energy (95% CI
 * 27–35%) and 8% more throughput (95% CI 5–11%) than running the jobs one after another".
 * Writes "" when the run has no comparison.
 */
void mb__fmt_headline(char *buf, size_t cap, const struct mb_an_run *r);

/*
 * What an experiment ran on, for titles: the catalog model ("H100-SXM5-80GB"), else the device's
 * own name with its backend ("Intel(R) Xeon(R) Processor (host)"), else "an unnamed device".
 */
const char *mb__device_label(char *buf, size_t cap, const struct mb_an_experiment *e);

/*
 * True when the experiment's device has no energy sensor at all (every cell says "no_sensor":
 * neither a power reading nor an energy counter, as on a host without RAPL), as opposed to
 * windows that were refused for being short.
 */
int mb__no_energy_sensor(const struct mb_an_experiment *e);
/* The sentence an emulated experiment's findings start with (emulated.c): the model they come
 * from and its calibration. */
void mb__emulated_findings(char *buf, size_t cap, const struct mb_an_experiment *e);

/* A run's display label: "mig 4g.40gb+2g.20gb+1g.10gb", "mps 57/29/14%", "timeslice". */
void mb__run_label(char *buf, size_t cap, const struct mb_an_run *r);

/* The questions a report answers first (src/report/answers.c). */
enum { MB__Q_ENERGY, MB__Q_THROUGHPUT, MB__Q_MIG, MB__Q_POWER, MB__Q_COUNT };

/* One answer: the winning run and its figure against one-after-another, its lead over the next
 * best (difference of two independent estimates, 95% half-widths combined in quadrature). */
struct mb__answer {
    int question;                /* MB__Q_* */
    int answered;                /* a winner was found */
    char winner[MB_AN_NAME_MAX]; /* the run's name (the limit, for MB__Q_POWER) */
    char label[MB_AN_TEXT_MAX];
    int winner_exclusive;
    struct mb_estimate value; /* energy saving or throughput gain, as a fraction */
    int has_runner_up;
    int runner_exclusive;
    char runner_up[MB_AN_NAME_MAX];
    char runner_label[MB_AN_TEXT_MAX];
    struct mb_estimate margin; /* winner minus runner-up */
    int clear;                 /* 1 clear of the noise, 0 not, -1 unknown (no intervals) */
    char sentence[2048];
};

/* Fills out[0..cap-1] with experiment e's answers in question order; returns how many. */
size_t mb__answers(const struct mb_an_experiment *e, struct mb__answer *out, size_t cap);

/* "energy", "throughput", "mig_mix" or "power_limit". */
const char *mb__answer_question(int q);

#endif
