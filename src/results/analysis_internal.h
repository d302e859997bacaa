/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the analysis files share (library-private): analysis.c (loading, attribution, aggregation,
 * notes), cell.c (the one cell.json reader), telemetry.c (telemetry.csv) and analysis_merge.c
 * (merged reports).
 */
#ifndef MIGBENCH_ANALYSIS_INTERNAL_H
#define MIGBENCH_ANALYSIS_INTERNAL_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#include "migbench/analysis.h"

/* Kept small: a long cell has hundreds of thousands of rows. */
_Static_assert(MB_AN_JOBS_MAX <= 32, "has_act is a 32-bit mask");
struct tel_row {
    double t_ns; /* absolute, monotonic */
    float power_w;
    float act[MB_AN_JOBS_MAX];
    uint32_t has_power;
    uint32_t has_act; /* bit j: act[j] is valid */
};

/* Per-run facts read from a cell; the first ok cell's version is kept. */
struct run_meta {
    char run[MB_AN_NAME_MAX];
    char mode[MB_AN_NAME_MAX];
    char on[MB_AN_NAME_MAX]; /* exclusive on a MIG instance: its profile; else "" */
    size_t njobs;
    char job[MB_AN_JOBS_MAX][MB_AN_NAME_MAX];
    char workload[MB_AN_JOBS_MAX][MB_AN_NAME_MAX];
    char unit[MB_AN_JOBS_MAX][MB_AN_NAME_MAX];
    char instance[MB_AN_JOBS_MAX][MB_AN_NAME_MAX];
    struct mb_opt pct[MB_AN_JOBS_MAX];
    int cpus[MB_AN_JOBS_MAX];
    struct mb_opt cores[MB_AN_JOBS_MAX];
    size_t argc[MB_AN_JOBS_MAX];
    char **argv[MB_AN_JOBS_MAX]; /* owned until a run takes it */
};

/* analysis.c */
void mb__an_add_note(struct mb_an_experiment *e, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
int mb__an_analyse_experiment(struct mb_an_experiment *e, struct mb_error *err);
void mb__an_claim_origin(struct mb_an_experiment *e, const char *dir);
int mb__an_is_exclusive(const char *mode);
int64_t mb__an_json_i64(const cJSON *obj, const char *key);
struct mb_opt mb__an_json_num(const cJSON *obj, const char *key);
const char *mb__an_json_str(const cJSON *obj, const char *key);
int mb__an_load_experiment(struct mb_an_experiment *e, const char *dir, struct mb_error *err);
int mb__an_opt_int(struct mb_opt o, int dflt);

/* telemetry.c */
int mb__an_build_timeline(struct mb_an_cell *c, const struct tel_row *rows, size_t n);
int mb__an_load_telemetry(struct mb_an_cell *c, const char *path, struct tel_row **rows_out,
                          size_t *nrows_out, struct mb_error *err);
double mb__an_power_integral_j(const struct tel_row *rows, size_t n, double a_ns, double b_ns);

/* cell.c */
void mb__an_free_argv(char **argv, size_t argc);
void mb__an_free_meta(struct run_meta *m);
int mb__an_parse_cell(struct mb_an_experiment *e, struct mb_an_cell *c, struct run_meta *m,
                      const char *path, const char *dirname_run, int dir_rep, struct mb_error *err);
int mb__an_profile_slices(const char *profile);

#endif
