/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Kubernetes, output only: an experiment's matrix as one Indexed Job, the analogue of the Slurm
 * job array. Pod i (JOB_COMPLETION_INDEX) runs cell i on one whole GPU (nvidia.com/gpu: 1) into
 * the results directory on a shared volume, with its own journal; the experiment file and
 * cells.tsv travel in a ConfigMap, and cells.tsv is copied to <results>/k8s/ so that `migbench
 * k8s status` reads the cells as `slurm status` does.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fleet/fleet_internal.h"
#include "migbench/fileio.h"

#define EXP_FILE_MAX (4u << 20)
#define EXP_MOUNT "/etc/migbench/experiment"

/* A DNS-1123 label "migbench-<s>" (lowercase letters, digits, '-'; at most 63 characters). */
static void label_name(const char *s, char *out, size_t cap)
{
    size_t n = (size_t)snprintf(out, cap, "migbench-");
    size_t max = cap - 1 < 63 ? cap - 1 : 63;
    for (const char *p = s; *p && n < max; p++) {
        char c = *p >= 'A' && *p <= 'Z' ? (char)(*p - 'A' + 'a') : *p;
        if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))
            out[n++] = c;
        else if (out[n - 1] != '-')
            out[n++] = '-';
    }
    while (out[n - 1] == '-')
        n--;
    out[n] = '\0';
}

/* cells.tsv as mb_slurm_write_array writes it, into memory. */
static int cells_tsv_text(const struct mb_experiment *exp, const struct mb_cell *cells, size_t n,
                          struct mb__ftext *t, struct mb_error *err)
{
    int rc = mb__ftext_open(t, err);
    if (rc != MB_OK)
        return rc;
    fputs("index\trun\trepetition\tmode\tjobs\tpower_limit\n", t->f);
    for (size_t i = 0; i < n; i++) {
        const struct mb_exp_run *r = &exp->runs[cells[i].run];
        fprintf(t->f, "%zu\t%s\t%u\t%s\t", i, r->name, cells[i].rep, mb_exp_mode_str(r->mode));
        for (size_t j = 0; j < r->n_jobs; j++)
            fprintf(t->f, "%s%s", j ? "," : "", r->job_name[j]);
        fprintf(t->f, "\t%s\n", r->power_limit.text);
    }
    fflush(t->f);
    return MB_OK;
}

static int write_configmap(const struct mb_experiment *exp, const char *cm, const char *ns,
                           const char *tsv, const char *dir, struct mb_error *err)
{
    char *text = NULL;
    int rc = mb_file_read(exp->path, EXP_FILE_MAX, &text, NULL, err);
    if (rc != MB_OK)
        return rc;
    struct mb__ftext t;
    if ((rc = mb__ftext_open(&t, err)) != MB_OK) {
        free(text);
        return rc;
    }
    fprintf(t.f,
            "# Written by migbench k8s submit for experiment '%s' (sha %s): the experiment\n"
            "# file and its cells, mounted read-only at " EXP_MOUNT " in every pod.\n"
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: ",
            exp->name, exp->sha, cm);
    mb__yaml_quote(t.f, ns);
    fputs("\ndata:\n  experiment.yaml: ", t.f);
    mb__yaml_quote(t.f, text);
    fputs("\n  cells.tsv: ", t.f);
    mb__yaml_quote(t.f, tsv);
    fputc('\n', t.f);
    free(text);
    return mb__ftext_commit(&t, dir, "experiment.yaml", 0644, err);
}

/* The pod's script: cells.tsv into the results, then its cell. */
static void pod_script(FILE *f, const struct mb_k8s_array_opts *o, const char results[4200])
{
    fputs("set -u\nmkdir -p ", f);
    char k8s_dir[4300];
    snprintf(k8s_dir, sizeof(k8s_dir), "%s/k8s", results);
    mb__sh_quote(f, k8s_dir);
    fputs("\n# Every pod offers cells.tsv; the first one's stays (the same text).\n"
          "[ -e ",
          f);
    mb__sh_quote(f, k8s_dir);
    fputs("/cells.tsv ] || { cp " EXP_MOUNT "/cells.tsv ", f);
    mb__sh_quote(f, k8s_dir);
    fputs("/cells.tsv.$$ && mv -f ", f);
    mb__sh_quote(f, k8s_dir);
    fputs("/cells.tsv.$$ ", f);
    mb__sh_quote(f, k8s_dir);
    fputs("/cells.tsv; }\n", f);
    mb__sh_quote(f, o->migbench ? o->migbench : "migbench");
    fputs(" run " EXP_MOUNT "/experiment.yaml --cells \"$JOB_COMPLETION_INDEX\" --results ", f);
    mb__sh_quote(f, results);
    fputs(" --journal \"journal-k8s-${JOB_COMPLETION_INDEX}.jsonl\"", f);
    if (o->device) {
        fputs(" --device ", f);
        mb__sh_quote(f, o->device);
    }
    for (size_t i = 0; i < o->n_overrides; i++) {
        fputs(" --set ", f);
        mb__sh_quote(f, o->overrides[i]);
    }
    fputs("\nrc=$?\n# 1: the cell ran and recorded a failure (migbench k8s status shows it).\n"
          "[ \"$rc\" -le 1 ] || exit \"$rc\"\n",
          f);
}

static int write_job(const struct mb_experiment *exp, size_t n_cells,
                     const struct mb_k8s_array_opts *o, const char *name, const char *ns,
                     const char *results, const char *dir, struct mb_error *err)
{
    struct mb__ftext t;
    int rc = mb__ftext_open(&t, err);
    if (rc != MB_OK)
        return rc;
    FILE *f = t.f;
    fprintf(f,
            "# Written by migbench k8s submit for experiment '%s': one pod per cell (its index\n"
            "# is the cell's, as in cells.tsv), each on one whole GPU, into the results volume.\n"
            "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: %s\n  namespace: ",
            exp->name, name);
    mb__yaml_quote(f, ns);
    fprintf(f,
            "\n  labels:\n    app.kubernetes.io/name: migbench\n"
            "spec:\n  completionMode: Indexed\n  completions: %zu\n  parallelism: %u\n"
            "  backoffLimit: %zu\n  template:\n    metadata:\n      labels:\n"
            "        app.kubernetes.io/name: migbench\n    spec:\n      restartPolicy: Never\n"
            "      containers:\n        - name: cell\n          image: ",
            n_cells,
            o->parallelism && o->parallelism < n_cells ? o->parallelism : (unsigned)n_cells,
            n_cells);
    mb__yaml_quote(f, o->image ? o->image : "migbench:latest");
    fputs("\n          command: [\"/bin/sh\", \"-c\"]\n          args:\n            - ", f);
    struct mb__ftext s;
    if ((rc = mb__ftext_open(&s, err)) != MB_OK) {
        mb__ftext_abort(&t);
        return rc;
    }
    pod_script(s.f, o, results);
    fflush(s.f);
    mb__yaml_quote(f, s.buf ? s.buf : "");
    mb__ftext_abort(&s);
    fputs("\n          resources:\n            limits:\n              nvidia.com/gpu: 1\n"
          "          volumeMounts:\n            - name: results\n              mountPath: ",
          f);
    mb__yaml_quote(f, results);
    fprintf(f, "\n            - name: experiment\n              mountPath: " EXP_MOUNT "\n"
               "              readOnly: true\n      volumes:\n        - name: results\n"
               "          persistentVolumeClaim:\n            claimName: ");
    mb__yaml_quote(f, o->pvc ? o->pvc : "migbench-results");
    fprintf(f, "\n        - name: experiment\n          configMap:\n            name: %s\n", name);
    return mb__ftext_commit(&t, dir, "job.yaml", 0644, err);
}

int mb_k8s_write_array(const struct mb_experiment *exp, const struct mb_cell *cells, size_t n_cells,
                       const struct mb_k8s_array_opts *o, const char *dir, struct mb_error *err)
{
    if (n_cells == 0)
        return mb_error_set(err, MB_EINVAL, "k8s: the experiment has no cell for this device");
    char name[64], results[4200];
    label_name(exp->name, name, sizeof(name));
    if (o->results)
        snprintf(results, sizeof(results), "%s", o->results);
    else
        snprintf(results, sizeof(results), "/results/%s", exp->name);
    if (results[0] != '/')
        return mb_error_set(err, MB_EINVAL,
                            "k8s: --results '%s': a path inside the pod, absolute, was expected",
                            results);
    const char *ns = o->k8s_namespace ? o->k8s_namespace : "default";
    struct mb__ftext tsv;
    int rc = cells_tsv_text(exp, cells, n_cells, &tsv, err);
    if (rc != MB_OK)
        return rc;
    rc = write_configmap(exp, name, ns, tsv.buf ? tsv.buf : "", dir, err);
    if (rc == MB_OK)
        rc = write_job(exp, n_cells, o, name, ns, results, dir, err);
    if (rc == MB_OK)
        rc = mb__ftext_commit(&tsv, dir, "cells.tsv", 0644, err);
    else
        mb__ftext_abort(&tsv);
    return rc;
}
