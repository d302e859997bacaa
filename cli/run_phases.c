/* SPDX-License-Identifier: Apache-2.0 */
/* The two-phase commands `migbench run` prints when it is not to switch MIG modes itself. */
#include "run_phases.h"

#include <string.h>

/* Writes s so that a shell reads it back as one word. */
static void put_word(FILE *out, const char *s)
{
    bool plain = s[0] != '\0';
    for (const char *p = s; *p; p++)
        if (!strchr("/.-_=:,+@%", *p) && !(*p >= '0' && *p <= '9') && !(*p >= 'a' && *p <= 'z') &&
            !(*p >= 'A' && *p <= 'Z'))
            plain = false;
    if (plain) {
        fputs(s, out);
        return;
    }
    fputc('\'', out);
    for (const char *p = s; *p; p++)
        fputs(*p == '\'' ? "'\\''" : (char[]){*p, '\0'}, out);
    fputc('\'', out);
}

/* The runs of cells that need `mode`, comma-separated, each once. */
static size_t put_runs(FILE *out, const struct mb_experiment *exp, const struct mb_cell *cells,
                       size_t n, int mode, bool print)
{
    size_t count = 0;
    for (size_t i = 0; i < n; i++) {
        const struct mb_exp_run *r = &exp->runs[cells[i].run];
        if (mb_migmode_run_needs(r) != mode)
            continue;
        bool seen = false;
        for (size_t k = 0; k < i && !seen; k++)
            seen = cells[k].run == cells[i].run;
        if (seen)
            continue;
        if (print) {
            fputs(count ? "," : "", out);
            fputs(r->name, out);
        }
        count++;
    }
    return count;
}

static void put_run_line(FILE *out, const struct mb_experiment *exp, const struct mb_cell *cells,
                         size_t n, int mode, const struct mb_cli_two_phase *tp, const char *dir)
{
    fputs("  migbench run ", out);
    put_word(out, tp->exp_path);
    fputs(" --device ", out);
    put_word(out, tp->device_spec);
    fputs(" --only ", out);
    put_runs(out, exp, cells, n, mode, true);
    fputs(" --results ", out);
    put_word(out, dir);
    fputc('\n', out);
}

size_t mb_cli_print_two_phase(FILE *out, const struct mb_experiment *exp,
                              const struct mb_cell *cells, size_t n_cells,
                              const struct mb_cli_two_phase *tp)
{
    size_t off = put_runs(out, exp, cells, n_cells, 0, false);
    size_t on = put_runs(out, exp, cells, n_cells, 1, false);
    if (off == 0 || on == 0)
        return 0;
    char dir_off[1100], dir_on[1100];
    snprintf(dir_off, sizeof(dir_off), "%s-mig-off", tp->results_base);
    snprintf(dir_on, sizeof(dir_on), "%s-mig-on", tp->results_base);
    fprintf(
        out,
        "%zu run%s need MIG mode off and %zu run%s need it on; migbench switches it between the "
        "two phases with --manage-mig-mode (root, idle GPU), or run the phases yourself%s:\n",
        off, off == 1 ? "" : "s", on, on == 1 ? "" : "s",
        tp->emulated ? " (an emulated GPU: the nvidia-smi lines show what a real one needs)" : "");
    fprintf(out, "  nvidia-smi -i %u -mig 0   # then nvidia-smi -r -i %u if it stays pending\n",
            tp->gpu_index, tp->gpu_index);
    put_run_line(out, exp, cells, n_cells, 0, tp, dir_off);
    fprintf(out, "  nvidia-smi -i %u -mig 1   # then nvidia-smi -r -i %u if it stays pending\n",
            tp->gpu_index, tp->gpu_index);
    put_run_line(out, exp, cells, n_cells, 1, tp, dir_on);
    fputs("  migbench report ", out);
    put_word(out, dir_off);
    fputc(' ', out);
    put_word(out, dir_on);
    fputs(" --merge\n", out);
    return 7;
}
