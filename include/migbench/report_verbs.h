/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Output of the devices, layouts, measure, mig, plan and slurm verbs, built in the library so the
 * CLI only parses arguments and prints. Each JSON writer returns a malloc'd, NUL-terminated text
 * (free() it; NULL when out of memory); each *_text_write / *_write function writes text to a
 * stream the caller opened. Both are laid out exactly as the verb has always printed them: the
 * goldens under tests/golden and the CLI tests check the bytes. Unknown or unsupported values are
 * null (JSON) or "n/a" (text), never 0.
 *
 * (Issue 13 keeps these beside include/migbench/report.h, the experiment report renderers, until
 * the two are folded into one header.)
 */
#ifndef MIGBENCH_REPORT_VERBS_H
#define MIGBENCH_REPORT_VERBS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "migbench/hostload.h"
#include "migbench/catalog.h"
#include "migbench/device.h"
#include "migbench/experiment.h"
#include "migbench/fleet.h"
#include "migbench/layout.h"
#include "migbench/meter.h"
#include "migbench/mig.h"
#include "migbench/plan_io.h"
#include "migbench/progress.h"
#include "migbench/status.h"

/* ---- devices ------------------------------------------------------------------------------- */

#define MB_DEVICE_REPORT_MAX_INSTANCES 64

/* Everything `devices` shows of one device; each part keeps its own status (an unsupported part
 * is not fatal: its *_rc says why it is missing). */
struct mb_device_report {
    char spec[128];
    uint32_t caps; /* MB_CAP_* */
    struct mb_device_info info;
    int sensor_rc;
    struct mb_sensor_info sensor;
    int tel_rc;
    struct mb_telemetry tel;
    int pl_rc; /* the power limit (docs/power.md); settable: MB_CAP_SET_POWER_LIMIT in caps */
    struct mb_power_limit pl;
    int mode_rc;
    struct mb_mig_mode mode;
    int prof_rc;
    char prof_msg[MB_ERROR_MSG_MAX];
    size_t n_prof;
    struct mb_device_profile prof[MB_MAX_PROFILES];
    int inst_rc;
    size_t n_inst;
    struct mb_mig_instance inst[MB_DEVICE_REPORT_MAX_INSTANCES];
    int proc_rc;
    size_t n_proc;
    struct mb_process proc[MB_MAX_PROCESSES];
};

/* Collects dev's report under the name spec. Fails only when the device cannot say what it is
 * (info); a device with MB_CAP_DELTA_TELEMETRY is read twice, 200 ms apart. */
int mb_device_report_collect(struct mb_device *dev, const char *spec, struct mb_device_report *r,
                             struct mb_error *err);

/* The `devices --json` document: {"devices": [...]}, one object per report added. */
struct mb_devices_json;
int mb_devices_json_create(struct mb_devices_json **out, struct mb_error *err);
int mb_devices_json_add(struct mb_devices_json *j, const struct mb_device_report *r,
                        struct mb_error *err);
char *mb_devices_json_text(const struct mb_devices_json *j);
void mb_devices_json_destroy(struct mb_devices_json *j);

/* The `devices` text for report r, the i-th shown (a blank line before all but the first):
 * identity, sensor, telemetry, power limit, MIG mode, profiles and instances, processes. */
void mb_device_report_text_write(FILE *out, size_t i, const struct mb_device_report *r);

/* ---- layouts ------------------------------------------------------------------------------- */

/* One layout on one line: {"profiles": [...], "placements": [...]}, plus "count" when count >= 0
 * (--distinct: how many placements share the profile set). */
char *mb_layout_json(const struct mb_gpu_model *m, const struct mb_layout *l, long long count);

/* A --check verdict: valid with the placed layout, or invalid with reasons and the nearest valid
 * layouts, each with the change that reaches it ("drop 1g.10gb; add 2g.20gb"). */
struct mb_layout_check {
    bool valid;
    const struct mb_layout *placed; /* when valid */
    const unsigned *want;           /* the asked-for profile indexes into m->profiles */
    size_t n_want;
    const char (*reasons)[MB_LAYOUT_REASON_MAX];
    size_t n_reasons;
    const struct mb_layout *nearest;
    const char *const *changes; /* one per nearest layout */
    size_t n_nearest;
};
char *mb_layout_check_json(const struct mb_gpu_model *m, const struct mb_layout_check *c);

/* `layouts --list-gpus --json`: every model of cat, or only `only` when it is not NULL. */
char *mb_catalog_json(const struct mb_catalog *cat, const struct mb_gpu_model *only);

/* The text of `layouts`. The listing's header ("# model: ... slices", "# profiles: ...", notes on
 * values that are not verified) for the profiles in mask (bit i: m->profiles[i]). */
void mb_layouts_header_write(FILE *f, const struct mb_gpu_model *m, uint32_t mask);
/* One listed layout, numbered n: the memory-slice picture and profile@start:size placements. */
void mb_layout_line_write(FILE *f, const struct mb_gpu_model *m, const struct mb_layout *l,
                          size_t n);
/* The layout's profile names, comma-separated ("3g.40gb,2g.20gb"), no newline. */
void mb_layout_profiles_csv_write(FILE *f, const struct mb_gpu_model *m, const struct mb_layout *l);
/* "# placements of ...: inferred ..." notes for the profiles in mask that are not verified. */
void mb_layout_status_notes_write(FILE *f, const struct mb_gpu_model *m, uint32_t mask);
/* The change from the request want to layout l: "drop 1g.10gb; add 2 x 2g.20gb" ("" when none). */
void mb_layout_diff_str(const struct mb_gpu_model *m, const unsigned *want, size_t n_want,
                        const struct mb_layout *l, char *buf, size_t cap);
/* A --check verdict as text: the placement and creation order, or the reasons and the nearest
 * valid layouts with their changes. */
void mb_layout_check_text_write(FILE *f, const struct mb_gpu_model *m,
                                const struct mb_layout_check *c);
/* `layouts --list-gpus`: one line per model of cat, or only's profile table. */
void mb_catalog_text_write(FILE *f, const struct mb_catalog *cat, const struct mb_gpu_model *only);

/* ---- measure ------------------------------------------------------------------------------- */

/* What `measure` found for one command: the caller fills it from the meter and the progress
 * parsers; each *_valid / have_* flag says whether the figure beside it exists. */
struct mb_measure_report {
    /* the invocation */
    char **argv;             /* the command, NULL-terminated */
    const char *device_spec; /* as given */
    int64_t interval_ns;     /* sampling interval */
    const char *csv;         /* the samples file, or NULL */
    int64_t warmup_ns;       /* warm-up by time (when warmup_steps is 0) */
    uint64_t warmup_steps;   /* warm-up by steps, or 0 */
    /* what CUDA_VISIBLE_DEVICES named (a scheduler's GPU or MIG instance), when it named one */
    struct mb_visible vis;
    /* what was measured */
    struct mb_device_info info;
    struct mb_sensor_info sensor;
    bool have_idle;
    struct mb_energy idle;
    struct mb_energy job;
    bool have_steady;
    struct mb_energy steady;
    struct mb_meter_counts counts;
    struct mb_progress_counts pc;
    bool progress_regex;
    bool have_progress;
    struct mb_progress_point first, last;
    struct mb_throughput tp;
    const char *unit;
    double wall_s;
    int exit_code;
    bool epu_valid;
    double epu_j;
    bool split_valid;
    double static_j, dynamic_j;
    /* the host's outside load over the job's window (base/hostload.h; the cores the command uses
     * are unknown, so only steal and other processes' CPU time give a verdict) */
    bool have_load;
    struct mb_hostload load;
};

/* The `measure --json` document. */
char *mb_measure_json(const struct mb_measure_report *r);

/* The human summary `measure` prints (on stderr): device, sensor, energy, power, work,
 * throughput, energy per unit; unknown figures as "n/a". */
void mb_measure_text_write(FILE *f, const struct mb_measure_report *r);

/* ---- mig ----------------------------------------------------------------------------------- */

/* `mig show` for one GPU: its MIG mode, the layout picture and one line per GPU instance, with
 * "migbench" as owner for those the ledger holds. label names the GPU ("nvml 0 (H100...)"). */
void mb_mig_show_text_write(FILE *f, const char *label, const struct mb_device_info *info,
                            const struct mb_gpu_model *model, const struct mb_mig_mode *mode,
                            const struct mb_mig_gi *gis, size_t n,
                            const struct mb_mig_ledger *ledger);

/* `mig show --yaml` for one GPU: its mig-parted entry (gis sorted largest first). */
void mb_mig_show_yaml_write(FILE *f, unsigned index, const struct mb_mig_mode *mode,
                            const struct mb_mig_gi *gis, size_t n);

/* `mig apply --dry-run`: what would be removed, created (placed) and kept. */
void mb_mig_apply_dry_run_write(FILE *f, const struct mb_gpu_model *model,
                                const struct mb_mig_gi *const *rm, size_t nrm,
                                const struct mb_layout *placed, size_t kept);

/* ---- plan ---------------------------------------------------------------------------------- */

/* The text of `migbench plan`: the plan (layouts, queues, jobs, predicted totals, notes). */
void mb_plan_text_write(FILE *out, const struct mb_plan_context *c, const struct mb_plan *p);

/* The --power-limits table that follows the plan: each limit's energy and makespan. */
void mb_plan_caps_text_write(FILE *out, const struct mb_plan *p,
                             const struct mb_plan_cap_result *res, size_t n);

/* The --pareto front: one line per plan, with GPU 0's layout. */
void mb_plan_pareto_text_write(FILE *out, const struct mb_plan_context *c,
                               struct mb_plan *const *front, size_t n_front, unsigned count);

/* The --verify comparison of the plan file plan against the results directory verify. */
void mb_plan_check_text_write(FILE *out, const struct mb_plan_check *ck, const char *plan,
                              const char *verify);

/* ---- slurm --------------------------------------------------------------------------------- */

/* `slurm status`: a header and one tab-separated line per cell (cell, run, rep, state, job or
 * "-", why); count[state] gets how many cells are in each state. */
void mb_slurm_status_text_write(FILE *f, const struct mb_slurm_cell *cells, size_t n,
                                size_t count[MB_SLURM_CELL_STATES]);

/* ---- run ------------------------------------------------------------------------------------ */

/*
 * The summary table of `migbench run`: per run and job of cells (the cells this invocation ran),
 * throughput as mean +- 95% CI over the repetitions (a single repetition shows its cell's own
 * CI), mean energy per cell and J/unit, read through mb_analysis_load from dir; nw is the width of
 * the run-name column. A run without results shows n/a.
 */
void mb_run_summary_write(FILE *out, const struct mb_experiment *exp, const char *dir,
                          const struct mb_cell *cells, size_t n_cells, int nw);

#endif
