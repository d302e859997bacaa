/* SPDX-License-Identifier: Apache-2.0 */
/* cells.tsv, the map `slurm status` reads from a shared results directory. */
#include "fleet/fleet_internal.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_str(data, size);
    struct mb_slurm_cell *cells = NULL;
    size_t n = 0;
    struct mb_error err;
    if (mb__cells_tsv_parse(text, "cells.tsv", &cells, &n, &err) == MB_OK)
        for (size_t i = 0; i < n; i++)
            /* rows in order, a repetition the experiment allows, a run that is a directory name */
            if (cells[i].index != i || cells[i].rep > 999 || !cells[i].run[0] ||
                strchr(cells[i].run, '/') || cells[i].run[0] == '.')
                abort();
    free(cells);
    free(text);
    return 0;
}
