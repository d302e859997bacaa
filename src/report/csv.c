/* SPDX-License-Identifier: Apache-2.0 */
/* migbench report --format csv. */
#include <stdio.h>
#include <string.h>

#include "report_internal.h"

/* ---------------------------------------------------------------------------------------- */
/* CSV: one row per job and run, run-level figures repeated on each of the run's rows          */

static void csv_str(FILE *out, const char *s)
{
    if (strpbrk(s, ",\"\n\r")) {
        fputc('"', out);
        for (; *s; s++) {
            if (*s == '"')
                fputc('"', out);
            fputc(*s, out);
        }
        fputc('"', out);
    } else {
        fputs(s, out);
    }
}

static void csv_num(FILE *out, int valid, double v)
{
    fputc(',', out);
    if (valid)
        fprintf(out, "%.6g", v);
}

static void csv_est(FILE *out, const struct mb_estimate *e)
{
    csv_num(out, e->valid, e->mean);
    csv_num(out, e->ci_valid, e->ci95);
}

void mb__report_csv(FILE *out, const struct mb_analysis *a)
{
    fputs("results_dir,experiment,device_model,emulated,run,mode,layout,cells_ok,cells_failed,"
          "job,workload,unit,throughput,throughput_ci95,normalised,normalised_ci95,s_per_step,"
          "s_per_step_ci95,j_per_unit,j_per_unit_ci95,j_per_unit_method,energy_equal_j,"
          "energy_compute_share_j,energy_activity_j,energy_static_dynamic_j,energy_interval_j,"
          "run_energy_j,run_energy_j_ci95,run_stp,run_stp_ci95,run_antt,run_antt_ci95,"
          "run_energy_saving,run_energy_saving_ci95,run_throughput_gain,"
          "run_throughput_gain_ci95\n",
          out);
    for (size_t i = 0; i < a->nexp; i++) {
        const struct mb_an_experiment *e = &a->exps[i];
        for (size_t k = 0; k < e->nruns; k++) {
            const struct mb_an_run *r = &e->runs[k];
            for (size_t j = 0; j < r->njobs; j++) {
                const struct mb_an_job *jb = &r->jobs[j];
                csv_str(out, e->dir);
                fputc(',', out);
                csv_str(out, e->name);
                fputc(',', out);
                csv_str(out, e->model);
                fprintf(out, ",%s,", e->emulated ? "true" : "false");
                csv_str(out, r->name);
                fputc(',', out);
                csv_str(out, r->mode);
                fputc(',', out);
                csv_str(out, r->layout);
                fprintf(out, ",%zu,%zu,", r->nok, r->nfailed);
                csv_str(out, jb->name);
                fputc(',', out);
                csv_str(out, jb->workload);
                fputc(',', out);
                csv_str(out, jb->unit);
                csv_est(out, &jb->throughput);
                csv_est(out, &jb->normalised);
                csv_est(out, &jb->s_per_step);
                csv_est(out, &jb->j_per_unit);
                fprintf(out, ",%s", mb_analysis_method_name(r->default_method));
                for (int m = 0; m < MB_ATTR_COUNT; m++) {
                    fputc(',', out);
                    if (r->attr[m].available) {
                        char b[32];
                        mb__fmt_j(b, sizeof(b), r->attr[m].job_mj[j]);
                        fputs(b, out);
                    }
                }
                csv_est(out, &r->energy_j);
                csv_est(out, &r->stp);
                csv_est(out, &r->antt);
                csv_est(out, &r->energy_saving);
                csv_est(out, &r->throughput_gain);
                fputc('\n', out);
            }
        }
    }
}
