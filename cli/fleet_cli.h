/* SPDX-License-Identifier: Apache-2.0 */
/* What `slurm submit` and `k8s submit` share (fleet_cli.c): their common options, the experiment
 * loaded and its cells numbered, the status table. */
#ifndef MIGBENCH_FLEET_CLI_H
#define MIGBENCH_FLEET_CLI_H

#include <stdbool.h>
#include <stddef.h>

#include "migbench/experiment.h"
#include "migbench/session.h"

#define MB_CLI_FLEET_MAX_SETS 64
/* What a command's own option parser returns for an option it does not know. */
#define MB_CLI_FLEET_UNKNOWN (-2)

struct mb_cmd;
struct option;

/* The options that decide an experiment's cells. Zero-initialise, then set device "auto". */
struct mb_cli_fleet_exp {
    const char *cmd;    /* the subcommand that names the session's notes ("slurm", "k8s") */
    const char *device; /* --device SPEC */
    bool device_given;
    const char *gpu; /* --gpu MODEL: number the cells as on that GPU (emulated here) */
    size_t n_sets;
    const char *sets[MB_CLI_FLEET_MAX_SETS];
    char gpu_buf[MB_EXP_SLURM_VALUE_MAX];
    char reps_buf[64];
};

/*
 * argv[1], the subcommand, one of subs[0..n_subs-1]: returns -1 with *sub set to go on, else the
 * exit status (--help printed; a missing or unknown subcommand is a usage error).
 */
int mb_cli_fleet_sub(const struct mb_cmd *cmd, int argc, char **argv, const char *const *subs,
                     size_t n_subs, const char **sub);

/*
 * getopt_long over av[0..argc-1] (the subcommand and its arguments). The options both commands
 * share go to fe ('D' --device, 'G' --gpu, 'S' --set), 'h' prints cmd's help, a missing value or
 * an option own() answers MB_CLI_FLEET_UNKNOWN is a usage error; every other option goes to
 * own(ctx, ch), whose non-zero exit status ends parsing. Returns -1 to go on (optind at the first
 * operand), else the exit status.
 */
int mb_cli_fleet_getopt(const struct mb_cmd *cmd, int argc, char **av, const char *shortopts,
                        const struct option *longopts, struct mb_cli_fleet_exp *fe,
                        int (*own)(void *ctx, int ch), void *ctx);

/*
 * Loads the experiment with the --set overrides; without --gpu or --device, the file's
 * slurm.gpu numbers the cells. With a GPU to number on and no repetitions in the file, the
 * real-GPU default is pinned (as one more --set, for the tasks too).
 */
int mb_cli_fleet_load(struct mb_cli_fleet_exp *fe, const char *path, struct mb_experiment **exp,
                      struct mb_error *err);

/* The experiment's cells numbered as `run --cells` numbers them on the nodes' device. */
int mb_cli_fleet_numbered(struct mb_cli_fleet_exp *fe, const struct mb_experiment *exp,
                          struct mb_cell **cells, size_t *n, struct mb_error *err);

/* The cells for device spec (refusing "auto" when that is this machine's CPU); notes as cmd's. */
int mb_cli_fleet_cells(const char *cmd, const struct mb_experiment *exp, const char *device,
                       struct mb_cell **cells, size_t *n, struct mb_error *err);

/*
 * The status table on stdout and the counts per state on stderr ("migbench: NAME: ..."); the exit
 * status: 0 when every cell is done, else 1.
 */
struct mb_slurm_cell;
int mb_cli_fleet_status_print(const char *name, const struct mb_slurm_cell *cells, size_t n);

/* Prints the session's notes and warnings as the subcommand ctx's (a const char *). */
void mb_cli_fleet_on_event(void *ctx, const struct mb_session_event *ev);

#endif
