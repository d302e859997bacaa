/* SPDX-License-Identifier: Apache-2.0 */
/* Private to src/fleet_*.c: text files built in memory, shell and YAML quoting, node names. */
#ifndef MIGBENCH_FLEET_INTERNAL_H
#define MIGBENCH_FLEET_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

#include "migbench/fleet.h"

/* A file's text, built with stdio in memory and written atomically by mb__ftext_commit. */
struct mb__ftext {
    FILE *f;
    char *buf;
    size_t len;
};

/* Starts an empty text; MB_ENOMEM. */
int mb__ftext_open(struct mb__ftext *t, struct mb_error *err);

/* Closes t and writes it to dir/name with mode (mkdir -p dir first); t is released either way. */
int mb__ftext_commit(struct mb__ftext *t, const char *dir, const char *name, mode_t mode,
                     struct mb_error *err);

/* Releases t without writing; a zeroed t is a no-op. */
void mb__ftext_abort(struct mb__ftext *t);

/*
 * Writes s as one shell word: bare when it holds only letters, digits and _@%+=:,./- (and is not
 * empty), else single-quoted ('\'' for each quote), safe for any bytes but NUL.
 */
void mb__sh_quote(FILE *f, const char *s);

/* Writes s as a double-quoted YAML scalar (JSON-style escapes). */
void mb__yaml_quote(FILE *f, const char *s);

/*
 * Refuses (MB_EINVAL naming what) a value that goes onto an #SBATCH line or a config line as it
 * is: empty, or holding a blank, a quote, a backslash, '#', '%' or a control character.
 */
int mb__fleet_check_plain(const char *what, const char *v, struct mb_error *err);

/* The node of plan GPU g under o: its name into out, its index on the node into *local. */
int mb__fleet_node_of(const struct mb_fleet_plan_opts *o, unsigned count, unsigned g, char *out,
                      size_t cap, unsigned *local, struct mb_error *err);

/* Number of nodes o spreads count GPUs over. */
unsigned mb__fleet_n_nodes(const struct mb_fleet_plan_opts *o, unsigned count);

/*
 * The command that runs planned job j (its workload's argv from the job set, and GPU arguments)
 * under `migbench measure --json --`, as one shell-quoted line into f. Returns false (writing
 * nothing) when the job set has no command for the workload.
 */
bool mb__fleet_job_command(FILE *f, const struct mb_fleet_plan_opts *o,
                           const struct mb_plan_job *job);

/* The short GRES type of instance i of plan GPU g (its profile name), or the whole GPU's type. */
void mb__fleet_slot_type(const struct mb_gpu_model *model, const struct mb_plan *plan,
                         const struct mb_fleet_plan_opts *o, unsigned g, unsigned i, char *out,
                         size_t cap);

/*
 * The mig-parted entries ("- devices: [...]" with mig-enabled and mig-devices) for the plan's
 * GPUs first .. first+n-1, numbered from 0 as the node sees them, GPUs with the same layout in
 * one entry; each line starts with indent spaces.
 */
int mb__fleet_migparted_entries(FILE *f, const struct mb_gpu_model *model,
                                const struct mb_plan *plan, unsigned first, unsigned n, int indent,
                                struct mb_error *err);

/*
 * Parses the text of cells.tsv (changed in place; path names it in messages) into a new array
 * at *out (the caller frees it) of *n cells. Each row's index must be its position (0, 1, ...),
 * its run a run name (a directory name under the results) and its repetition 0..999; a header
 * line "index<TAB>..." first is skipped. MB_EPARSE names the line and field; MB_ENOMEM.
 */
int mb__cells_tsv_parse(char *text, const char *path, struct mb_slurm_cell **out, size_t *n,
                        struct mb_error *err);

/*
 * One line of slurm/submissions.jsonl: a job array submitted (by `slurm submit`, or by the
 * generated submit.sh, which says so in `by`) with its report job and the cells it holds.
 * fleet_submissions.c has its one encoder and one decoder.
 */
struct mb__submission {
    char array_job[64], report_job[64];
    long long submitted_unix;
    unsigned max_attempts; /* the attempt cap recorded; 0: none (then not written) */
    char by[32];           /* "submit.sh" for its lines; "" (not written) for `slurm submit` */
    const size_t *cells;   /* the cell indices */
    size_t n_cells;
    size_t *owned; /* what mb__submission_decode allocated for cells */
};

/*
 * The line of s (no newline) into *line (the caller frees it). With shell_template the line is a
 * printf format for a shell script instead: array_job, report_job, submitted_unix and the cells
 * (comma-separated) are "%s" conversions filled in that order, the rest as in s (by must be a
 * plain word). MB_EINVAL, MB_ENOMEM.
 */
int mb__submission_encode(const struct mb__submission *s, bool shell_template, char **line,
                          struct mb_error *err);

/*
 * Reads one line: MB_EPARSE unless it is a JSON object; fields missing or of another type are
 * left empty (max_attempts: 0 unless 1..1e6), cells that are not whole numbers are skipped.
 * mb__submission_free releases the cells, also after an error (MB_ENOMEM).
 */
int mb__submission_decode(const char *line, struct mb__submission *out, struct mb_error *err);
void mb__submission_free(struct mb__submission *s);

#endif
