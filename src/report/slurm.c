/* SPDX-License-Identifier: Apache-2.0 */
/* The text of `migbench slurm status`: one tab-separated line per cell. */
#include <stdio.h>
#include <string.h>

#include "migbench/report_verbs.h"

void mb_slurm_status_text_write(FILE *f, const struct mb_slurm_cell *cells, size_t n,
                                size_t count[MB_SLURM_CELL_STATES])
{
    memset(count, 0, MB_SLURM_CELL_STATES * sizeof(count[0]));
    fprintf(f, "cell\trun\trep\tstate\tjob\twhy\n");
    for (size_t i = 0; i < n; i++) {
        const struct mb_slurm_cell *c = &cells[i];
        fprintf(f, "%zu\t%s\t%u\t%s\t%s\t%s\n", c->index, c->run, c->rep,
                mb_slurm_cell_state_str(c->state), c->job[0] ? c->job : "-", c->why);
        count[c->state]++;
    }
}
