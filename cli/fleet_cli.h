/* SPDX-License-Identifier: Apache-2.0 */
/* What `slurm submit` and `k8s submit` share: the experiment loaded and its cells numbered. */
#ifndef MIGBENCH_FLEET_CLI_H
#define MIGBENCH_FLEET_CLI_H

#include <stdbool.h>
#include <stddef.h>

#include "migbench/experiment.h"
#include "migbench/session.h"

#define MB_CLI_FLEET_MAX_SETS 64

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
