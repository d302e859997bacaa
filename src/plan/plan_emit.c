/* SPDX-License-Identifier: Apache-2.0 */
/* Files a plan emits: a mig-parted configuration and an experiment that runs the plan. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "migbench/plan_io.h"

/* A YAML double-quoted scalar (JSON string syntax is a subset of it). */
static void yq(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            fprintf(f, "\\%c", ch);
        else if (ch < 0x20)
            fprintf(f, "\\x%02x", ch);
        else
            fputc(ch, f);
    }
    fputc('"', f);
}

/* The command of workload w: the jobs file's `workloads:` entry; NULL if there is none. */
static const struct mb_plan_workload *find_workload(const struct mb_plan_jobset *js, const char *w)
{
    for (size_t i = 0; i < js->n_workloads; i++)
        if (strcmp(js->workloads[i].name, w) == 0)
            return &js->workloads[i];
    return NULL;
}

/*
 * A workload's argv as the results directories recorded it (cell.json jobs[].argv, read by the
 * analysis): the first run job of that workload with a command; NULL if there is none.
 */
static const struct mb_an_job *results_argv(const struct mb_analysis *an, const char *workload)
{
    for (size_t e = 0; an && e < an->nexp; e++)
        for (size_t r = 0; r < an->exps[e].nruns; r++)
            for (size_t j = 0; j < an->exps[e].runs[r].njobs; j++) {
                const struct mb_an_job *jb = &an->exps[e].runs[r].jobs[j];
                if (jb->argc > 0 && strcmp(jb->workload, workload) == 0)
                    return jb;
            }
    return NULL;
}

/* The experiment's workloads: one entry per job, named after the job, so results map back. */
static void write_workloads(FILE *f, const struct mb_plan_context *c, const struct mb_plan *p,
                            const struct mb_analysis *an)
{
    const struct mb_plan_jobset *js = c->js;
    /* One workload entry per job, named after the job, so results map back to the plan. */
    for (size_t j = 0; j < js->n_jobs; j++) {
        const struct mb_plan_job *job = &js->jobs[j];
        const struct mb_plan_workload *w = find_workload(js, job->workload);
        const struct mb_plan_profile *r = mb_plan_slot_row(c, &p->slots[j]);
        fprintf(f, "  ");
        yq(f, job->name);
        fprintf(f, ":\n    command: [");
        if (w) {
            for (size_t k = 0; k < w->argc; k++) {
                if (k)
                    fputs(", ", f);
                yq(f, w->argv[k]);
            }
        } else {
            const struct mb_an_job *rj = results_argv(an, job->workload);
            for (size_t k = 0; rj && k < rj->argc; k++) {
                if (k)
                    fputs(", ", f);
                yq(f, rj->argv[k]);
            }
        }
        fprintf(f, "]\n    unit: ");
        yq(f, w && w->unit[0] ? w->unit : r->unit);
        fprintf(f, "\n");
        if (w && w->n_gpu_args) {
            fprintf(f, "    gpu_args: [");
            for (size_t k = 0; k < w->n_gpu_args; k++) {
                if (k)
                    fputs(", ", f);
                yq(f, w->gpu_args[k]);
            }
            fprintf(f, "]\n");
        }
        if (isfinite(r->peak_mem_mib))
            fprintf(f, "    memory_mib: %.0f\n", r->peak_mem_mib);
    }
}

/* One run per GPU and queue position (with its GPU's power limit when the limits differ). */
static void write_runs(FILE *f, const struct mb_plan_context *c, const struct mb_plan *p)
{
    const struct mb_plan_jobset *js = c->js;
    bool per_gpu = mb_plan_limits_differ(p);
    fprintf(f, "runs:\n");
    for (unsigned g = 0; g < p->count; g++) {
        for (unsigned k = 0;; k++) {
            size_t n = 0;
            size_t members[MB_LAYOUT_MAX];
            for (size_t i = 0; i < MB_LAYOUT_MAX; i++)
                for (size_t j = 0; j < p->n_slots; j++)
                    if (p->slots[j].gpu == g && p->slots[j].instance == i && p->slots[j].order == k)
                        members[n++] = j;
            if (n == 0)
                break;
            fprintf(f, "  - {name: g%u-r%u, mode: %s", g, k + 1,
                    p->gpus[g].mig ? "mig" : "exclusive");
            if (p->gpus[g].mig) {
                fprintf(f, ", layout: [");
                for (size_t q = 0; q < n; q++) {
                    const struct mb_layout_item *it =
                        &p->gpus[g].layout.items[p->slots[members[q]].instance];
                    fprintf(f, "%s%s", q ? ", " : "", c->model->profiles[it->profile].name);
                }
                fprintf(f, "]");
            }
            fprintf(f, ", jobs: [");
            for (size_t q = 0; q < n; q++) {
                if (q)
                    fputs(", ", f);
                yq(f, js->jobs[members[q]].name);
            }
            fprintf(f, "]");
            /* Limits per GPU: each run carries its GPU's (the runner sets it per cell). */
            if (per_gpu && isfinite(p->gpus[g].power_limit_w))
                fprintf(f, ", power_limits: [%gW]", p->gpus[g].power_limit_w);
            else if (per_gpu)
                fprintf(f, ", power_limits: [default]");
            fprintf(f, "}\n");
        }
    }
}

const char *mb_plan_uncommanded_workload(const struct mb_plan_context *c,
                                         const struct mb_analysis *an)
{
    for (size_t j = 0; j < c->js->n_jobs; j++) {
        const char *w = c->js->jobs[j].workload;
        if (!find_workload(c->js, w) && !results_argv(an, w))
            return w;
    }
    return NULL;
}

int mb_plan_write_experiment(FILE *f, const struct mb_plan_context *c, const struct mb_plan *p,
                             const struct mb_analysis *an)
{
    if (p->objective == MB_PLAN_THROUGHPUT)
        return MB_EINVAL;
    fprintf(f,
            "# Written by migbench plan: runs the plan for %u x %s so that\n"
            "# `migbench plan --verify RESULTS --plan PLAN.json` can check its predictions.\n"
            "# One run per GPU and queue position: run gG-rK holds the K-th job of every\n"
            "# instance queue of GPU G, each job on its planned partition size.\n",
            p->count, c->model->name);
    fprintf(f, "version: 1\nname: migbench-plan\ndevice: auto\n");
    if (isfinite(p->power_limit_w))
        fprintf(f,
                "# The planned power limit of every GPU (set before each cell, restored after).\n"
                "power_limits: [%gW]\n",
                p->power_limit_w);
    else if (mb_plan_limits_differ(p))
        fprintf(f, "# The planned power limits differ per GPU: each run sets its GPU's.\n");
    fprintf(f, "workloads:\n");
    write_workloads(f, c, p, an);
    write_runs(f, c, p);
    fprintf(f, "measure: {warmup: 20s, duration: 120s, repetitions: 3, sample_interval: 100ms, "
               "idle: 5s}\n");
    return ferror(f) ? MB_EIO : MB_OK;
}

int mb_plan_write_mig_parted(FILE *f, const struct mb_plan_context *c, const struct mb_plan *p)
{
    fprintf(f,
            "# Written by migbench plan for %u x %s; apply with `migbench mig apply` or\n"
            "# nvidia-mig-parted apply -f FILE -c migbench-plan\n",
            p->count, c->model->name);
    fprintf(f, "version: v1\nmig-configs:\n  migbench-plan:\n");
    bool *done = calloc(p->count, sizeof(bool));
    if (!done)
        return MB_ENOMEM;
    for (unsigned g = 0; g < p->count; g++) {
        if (done[g])
            continue;
        /* GPUs with the same multiset of profiles share one entry. */
        unsigned cnt[MB_MAX_PROFILES];
        memset(cnt, 0, sizeof(cnt));
        for (size_t i = 0; i < p->gpus[g].layout.n; i++)
            cnt[p->gpus[g].layout.items[i].profile]++;
        fprintf(f, "    - devices: [");
        for (unsigned h = g; h < p->count; h++) {
            if (done[h] || p->gpus[h].mig != p->gpus[g].mig)
                continue;
            unsigned ch[MB_MAX_PROFILES];
            memset(ch, 0, sizeof(ch));
            for (size_t i = 0; i < p->gpus[h].layout.n; i++)
                ch[p->gpus[h].layout.items[i].profile]++;
            if (memcmp(ch, cnt, sizeof(ch)) != 0)
                continue;
            fprintf(f, "%s%u", h == g ? "" : ", ", h);
            done[h] = true;
        }
        fprintf(f, "]\n");
        if (!p->gpus[g].mig) {
            fprintf(f, "      mig-enabled: false\n");
            continue;
        }
        fprintf(f, "      mig-enabled: true\n      mig-devices:");
        bool any = false;
        for (size_t k = 0; k < c->model->n_profiles; k++)
            if (cnt[k]) {
                fprintf(f, "\n        \"%s\": %u", c->model->profiles[k].name, cnt[k]);
                any = true;
            }
        fprintf(f, "%s\n", any ? "" : " {}");
    }
    free(done);
    return ferror(f) ? MB_EIO : MB_OK;
}
