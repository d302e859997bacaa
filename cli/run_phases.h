/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `migbench run`'s advice for an experiment that needs both MIG modes on one GPU when migbench
 * is not to switch the mode itself (no manage_mig_mode / --manage-mig-mode): the exact commands
 * for the two phases and the merged report.
 */
#ifndef MIGBENCH_CLI_RUN_PHASES_H
#define MIGBENCH_CLI_RUN_PHASES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "migbench/experiment.h"

/* Where the two phases run and write. Strings are borrowed. */
struct mb_cli_two_phase {
    const char *exp_path;     /* the experiment file as given */
    const char *device_spec;  /* as given to --device */
    const char *results_base; /* the results directory a one-step run would use */
    unsigned gpu_index;       /* for nvidia-smi -i */
    bool emulated;            /* an emulated GPU: the nvidia-smi lines are only an illustration */
};

/*
 * Prints to out the commands that run cells (what would run on the device if its MIG mode
 * allowed everything) in two phases, MIG off then MIG on, and report them as one experiment.
 * Returns the number of lines printed: 0 when every cell needs one mode (or either).
 */
size_t mb_cli_print_two_phase(FILE *out, const struct mb_experiment *exp,
                              const struct mb_cell *cells, size_t n_cells,
                              const struct mb_cli_two_phase *tp);

#endif
