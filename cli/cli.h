/* SPDX-License-Identifier: Apache-2.0 */
/* Shared pieces of the migbench command-line tool: the subcommand table entry and messages. */
#ifndef MIGBENCH_CLI_H
#define MIGBENCH_CLI_H

#include <stdio.h>

#include "migbench/status.h"

/* Exit statuses shared by every subcommand. */
enum {
    MB_EXIT_OK = 0,
    MB_EXIT_FAIL = 1,  /* the command ran and its answer is "no" or some work failed */
    MB_EXIT_USAGE = 2, /* bad command line or bad input file */
};

/*
 * One subcommand (tmux's cmd-*.c): `run` gets argv with argv[0] == name and returns the process
 * exit status. `usage` is the synopsis line(s) printed by --help and on usage errors; `help` is
 * the longer text shown by `migbench help NAME` and `--help` after the usage.
 */
struct mb_cmd {
    const char *name;
    const char *summary;
    const char *usage;
    const char *help;
    int (*run)(int argc, char **argv);
};

/* Verbosity for mb_cli_info/mb_cli_debug: 0 quiet, 1 normal (default), 2 verbose. */
void mb_cli_set_verbosity(int level);
int mb_cli_verbosity(void);

/* "migbench: CMD: message" to stderr. */
void mb_cli_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void mb_cli_warn(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void mb_cli_info(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void mb_cli_debug(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Prints "migbench: CMD: message" and the command's usage to stderr; returns MB_EXIT_USAGE. */
int mb_cli_usage_error(const struct mb_cmd *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Prints the command's usage and help to out. */
void mb_cli_print_help(const struct mb_cmd *cmd, FILE *out);

/* Finds a subcommand by name; NULL if there is none. */
const struct mb_cmd *mb_cli_find(const char *name);

/* Maps a library status to an exit status: input problems are usage errors (2), the rest 1. */
int mb_cli_exit_for(int status);

/*
 * An output file (-o, --emit-*) composed in memory and written whole by mb_file_write_atomic,
 * so a failure part-way leaves the old file, or none, and never a half-written one.
 * mb_cli_outfile_open starts it (0, or 1 after printing why not); write to o->f; then either
 * mb_cli_outfile_commit (0 when written, 1 after printing why not) or mb_cli_outfile_abort.
 * Both free what open took. cmd names the subcommand in messages.
 */
struct mb_cli_outfile {
    FILE *f;
    char *buf;
    size_t len;
    const char *path;
};
int mb_cli_outfile_open(struct mb_cli_outfile *o, const char *cmd, const char *path);
int mb_cli_outfile_commit(struct mb_cli_outfile *o, const char *cmd);
void mb_cli_outfile_abort(struct mb_cli_outfile *o);

/*
 * Formats v with about `sig` significant digits in plain notation, never as "1.5e+02": 150, 1234,
 * 12.3, 0.0123 (trailing zeros dropped, as %g does). Writes into buf (cap bytes) and returns buf.
 */
char *mb_cli_fmt_sig(char *buf, size_t cap, double v, int sig);

/* The table entries, one per cmd_<name>.c. */
extern const struct mb_cmd mb_cmd_help;
extern const struct mb_cmd mb_cmd_layouts;
extern const struct mb_cmd mb_cmd_devices;
extern const struct mb_cmd mb_cmd_measure;
extern const struct mb_cmd mb_cmd_mig;
extern const struct mb_cmd mb_cmd_report;
extern const struct mb_cmd mb_cmd_run;
extern const struct mb_cmd mb_cmd_plan;
extern const struct mb_cmd mb_cmd_monitor;
extern const struct mb_cmd mb_cmd_slurm;
extern const struct mb_cmd mb_cmd_k8s;

#endif
