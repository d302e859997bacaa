/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Slurm: a node's GRES from a device, the experiment matrix as a job array, and a fleet plan as
 * per-node layouts with a rollout script. Facts this follows (docs/slurm.md): MIG instances are
 * GRES gpu whose type a job may name by any substring of the autodetected name ("3g.40gb" of
 * "nvidia_h100_80gb_hbm3_3g.40gb"); inside a job they arrive as CUDA_VISIBLE_DEVICES=MIG-<uuid>;
 * on 22.05 a changed GRES count needs slurmctld and slurmd restarted before the node resumes.
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fleet/fleet_internal.h"
#include "base/text_internal.h"

int mb_slurm_device_gres(struct mb_device *dev, struct mb_slurm_gres_dev *out, size_t cap,
                         size_t *n, struct mb_error *err)
{
    *n = 0;
    if (!(mb_device_caps(dev) & MB_CAP_GPU))
        return mb_error_set(err, MB_EUNSUPPORTED, "the %s backend has no GPU for Slurm's GRES",
                            mb_device_backend(dev));
    struct mb_device_info info;
    int rc = mb_device_info(dev, &info, err);
    if (rc != MB_OK)
        return rc;
    struct mb_mig_mode mode = {0, 0};
    if ((mb_device_caps(dev) & MB_CAP_MIG) && mb_device_mig_mode(dev, &mode, NULL) != MB_OK)
        mode.current = 0;
    if (!mode.current) {
        if (cap < 1)
            return mb_error_set(err, MB_ERANGE, "no room for the GPU");
        mb_slurm_gres_type(info.name, NULL, out[0].type, sizeof(out[0].type));
        mb__copy_str(out[0].short_type, sizeof(out[0].short_type), out[0].type);
        mb__copy_str(out[0].uuid, sizeof(out[0].uuid), info.uuid);
        *n = 1;
        return MB_OK;
    }
    struct mb_mig_instance inst[MB_MAX_MIG_INSTANCES * 2];
    size_t ni = 0;
    rc = mb_device_mig_instances(dev, inst, sizeof(inst) / sizeof(inst[0]), &ni, err);
    if (rc != MB_OK)
        return rc;
    for (size_t i = 0; i < ni; i++) {
        if (!inst[i].has_ci || !inst[i].uuid[0])
            continue; /* a GPU instance without a compute instance is no device to CUDA */
        if (*n >= cap)
            return mb_error_set(err, MB_ERANGE, "more MIG devices than room for %zu", cap);
        struct mb_slurm_gres_dev *d = &out[(*n)++];
        mb_slurm_gres_type(info.name, inst[i].profile_name, d->type, sizeof(d->type));
        mb__copy_str(d->short_type, sizeof(d->short_type), inst[i].profile_name);
        mb__copy_str(d->uuid, sizeof(d->uuid), inst[i].uuid);
    }
    return MB_OK;
}

/* "gpu:3g.40gb:1,gpu:1g.10gb:2": each type once, in first-seen order. */
static void gres_value(FILE *f, const char *const *types, size_t n)
{
    bool first = true;
    for (size_t i = 0; i < n; i++) {
        bool seen = false;
        for (size_t k = 0; k < i && !seen; k++)
            seen = strcmp(types[k], types[i]) == 0;
        if (seen)
            continue;
        unsigned count = 0;
        for (size_t k = i; k < n; k++)
            count += strcmp(types[k], types[i]) == 0;
        fprintf(f, "%sgpu:%s:%u", first ? "" : ",", types[i], count);
        first = false;
    }
}

static int write_gres_conf(const char *dir, struct mb_error *err)
{
    struct mb__ftext t;
    int rc = mb__ftext_open(&t, err);
    if (rc != MB_OK)
        return rc;
    fprintf(t.f, "# Written by migbench. Slurm finds the GPUs and MIG instances through NVML\n"
                 "# (an NVML-enabled Slurm build); the types slurm.conf names are substrings of\n"
                 "# the profile names it reports.\n"
                 "AutoDetect=nvml\n");
    return mb__ftext_commit(&t, dir, "gres.conf", 0644, err);
}

static int write_node_line(const char *dir, const char *node, const char *const *types, size_t n,
                           struct mb_error *err)
{
    struct mb__ftext t;
    int rc = mb__ftext_open(&t, err);
    if (rc != MB_OK)
        return rc;
    fprintf(t.f, "NodeName=%s Gres=", node);
    gres_value(t.f, types, n);
    fputc('\n', t.f);
    return mb__ftext_commit(&t, dir, "slurm-node.conf", 0644, err);
}

int mb_slurm_write_node_gres(const struct mb_slurm_gres_dev *devs, size_t n,
                             const struct mb_slurm_node_opts *o, const char *dir,
                             struct mb_error *err)
{
    const char *node = o && o->node ? o->node : "localhost";
    int rc = mb__fleet_check_plain("node name", node, err);
    if (rc != MB_OK)
        return rc;
    if (n == 0)
        return mb_error_set(err, MB_EINVAL, "no GPU or MIG device to describe");
    const char **types = calloc(n, sizeof(*types));
    if (!types)
        return mb_error_set(err, MB_ENOMEM, "out of memory");
    for (size_t i = 0; i < n && rc == MB_OK; i++) {
        types[i] = devs[i].short_type;
        rc = mb__fleet_check_plain("GRES type", devs[i].type, err);
        if (rc == MB_OK)
            rc = mb__fleet_check_plain("device UUID", devs[i].uuid, err);
    }
    if (rc == MB_OK)
        rc = write_gres_conf(dir, err);
    if (rc == MB_OK)
        rc = write_node_line(dir, node, types, n, err);
    free(types);
    if (rc != MB_OK || !o || !o->fake)
        return rc;
    struct mb__ftext t;
    if ((rc = mb__ftext_open(&t, err)) != MB_OK)
        return rc;
    unsigned cpus = o->cpus ? o->cpus : 1;
    if (o->dev_prefix && (rc = mb__fleet_check_plain("device file", o->dev_prefix, err)) != MB_OK) {
        mb__ftext_abort(&t);
        return rc;
    }
    /* <type>|<cpu count>|<cpu range>|<links>|<device file>|<unique id>|<flags> */
    for (size_t i = 0; i < n; i++) {
        fprintf(t.f, "%s|%u|0-%u|-1|", devs[i].type, cpus, cpus - 1);
        fprintf(t.f, "%s%zu|%s|nvidia_gpu_env\n", o->dev_prefix ? o->dev_prefix : "/dev/nvidia", i,
                devs[i].uuid);
    }
    return mb__ftext_commit(&t, dir, "fake_gpus.conf", 0644, err);
}

/* ---- the experiment matrix as a job array ------------------------------------------------- */

/* "0-3,5,7-9" from ascending indices. */
static void index_ranges(FILE *f, const size_t *idx, size_t n)
{
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j + 1 < n && idx[j + 1] == idx[j] + 1)
            j++;
        fprintf(f, "%s%zu", i ? "," : "", idx[i]);
        if (j > i)
            fprintf(f, "-%zu", idx[j]);
        i = j + 1;
    }
}

static int check_array_opts(const struct mb_slurm_array_opts *o, struct mb_error *err)
{
    if (!o->migbench || !o->experiment || !o->results)
        return mb_error_set(err, MB_EINVAL,
                            "slurm: the migbench, experiment and results paths "
                            "are needed");
    const char *paths[] = {o->migbench, o->experiment, o->results};
    for (size_t i = 0; i < 3; i++)
        if (paths[i][0] != '/')
            return mb_error_set(err, MB_EINVAL,
                                "slurm: '%s' is not an absolute path (the "
                                "nodes run it from another directory)",
                                paths[i]);
    int rc = MB_OK;
    /* These go onto #SBATCH lines, which sbatch reads without a shell. */
    if (rc == MB_OK)
        rc = mb__fleet_check_plain("results directory (it names the tasks' output files)",
                                   o->results, err);
    if (rc == MB_OK && o->job_name)
        rc = mb__fleet_check_plain("--job-name", o->job_name, err);
    if (rc == MB_OK && o->partition)
        rc = mb__fleet_check_plain("--partition", o->partition, err);
    if (rc == MB_OK && o->account)
        rc = mb__fleet_check_plain("--account", o->account, err);
    if (rc == MB_OK && o->time_limit)
        rc = mb__fleet_check_plain("--time", o->time_limit, err);
    for (size_t i = 0; rc == MB_OK && i < o->n_extra; i++) {
        rc = mb__fleet_check_plain("--sbatch-line", o->extra[i], err);
        if (rc == MB_OK && o->extra[i][0] != '-')
            rc = mb_error_set(err, MB_EINVAL,
                              "--sbatch-line '%s': an sbatch option such as "
                              "--qos=high was expected",
                              o->extra[i]);
    }
    return rc;
}

static void sbatch_common(FILE *f, const struct mb_slurm_array_opts *o)
{
    if (o->partition)
        fprintf(f, "#SBATCH --partition=%s\n", o->partition);
    if (o->account)
        fprintf(f, "#SBATCH --account=%s\n", o->account);
}

static int write_array_sbatch(const struct mb_experiment *exp, const size_t *idx, size_t n,
                              const struct mb_slurm_array_opts *o, const char *job_name,
                              const char *dir, struct mb_error *err)
{
    struct mb__ftext t;
    int rc = mb__ftext_open(&t, err);
    if (rc != MB_OK)
        return rc;
    FILE *f = t.f;
    fprintf(f, "#!/bin/bash\n");
    fprintf(f, "#SBATCH --job-name=%s\n#SBATCH --array=", job_name);
    index_ranges(f, idx, n);
    if (o->max_concurrent)
        fprintf(f, "%%%u", o->max_concurrent);
    fprintf(f, "\n#SBATCH --nodes=1\n#SBATCH --ntasks=1\n#SBATCH --gres=gpu:1\n"
               "#SBATCH --exclusive\n");
    sbatch_common(f, o);
    if (o->time_limit)
        fprintf(f, "#SBATCH --time=%s\n", o->time_limit);
    fprintf(f, "#SBATCH --output=%s/slurm/cell-%%a-job-%%A_%%a.out\n", o->results);
    for (size_t i = 0; i < o->n_extra; i++)
        fprintf(f, "#SBATCH %s\n", o->extra[i]);
    fprintf(f,
            "# Written by migbench for experiment '%s' (sha %s): one array task per cell, each\n"
            "# on one whole GPU; cells.tsv maps the task index to its run and repetition.\n"
            "# migbench run records SLURM_ARRAY_JOB_ID/SLURM_ARRAY_TASK_ID in the cell.\n"
            "set -u\nexec ",
            exp->name, exp->sha);
    mb__sh_quote(f, o->migbench);
    fputs(" run ", f);
    mb__sh_quote(f, o->experiment);
    fputs(" --cells \"$SLURM_ARRAY_TASK_ID\" --results ", f);
    mb__sh_quote(f, o->results);
    /* Tasks run at once on other nodes: each keeps its own journal in the shared directory. */
    fputs(" --journal \"journal-${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}.jsonl\"", f);
    if (o->device) {
        fputs(" --device ", f);
        mb__sh_quote(f, o->device);
    }
    for (size_t i = 0; i < o->n_overrides; i++) {
        fputs(" --set ", f);
        mb__sh_quote(f, o->overrides[i]);
    }
    fputc('\n', f);
    return mb__ftext_commit(&t, dir, "array.sbatch", 0755, err);
}

static int write_report_sbatch(const struct mb_slurm_array_opts *o, const char *job_name,
                               const char *dir, struct mb_error *err)
{
    struct mb__ftext t;
    int rc = mb__ftext_open(&t, err);
    if (rc != MB_OK)
        return rc;
    FILE *f = t.f;
    fprintf(f, "#!/bin/bash\n#SBATCH --job-name=%s-report\n#SBATCH --nodes=1\n#SBATCH --ntasks=1\n",
            job_name);
    sbatch_common(f, o);
    fprintf(f, "#SBATCH --output=%s/slurm/report-job-%%j.out\n", o->results);
    fprintf(f, "# Submitted with --dependency=afterany:<array job>: runs when every task has\n"
               "# ended, however it ended, and reports what the cells recorded. Its exit status\n"
               "# says whether the report was written, not whether every cell is done (that is\n"
               "# in slurm-status.txt).\n"
               "set -u\nstatus=0\n");
    char out[4200];
    mb__sh_quote(f, o->migbench);
    fputs(" slurm status ", f);
    mb__sh_quote(f, o->results);
    fputs(" >", f);
    snprintf(out, sizeof(out), "%s/slurm-status.txt", o->results);
    mb__sh_quote(f, out);
    fputs(
        "\nst=$?\n# 1: some cell is not done (failed, not run); the file is written all the same.\n"
        "[ \"$st\" -le 1 ] || status=$st\n",
        f);
    const char *formats[][2] = {{"md", "report.md"}, {"html", "report.html"}};
    for (size_t i = 0; i < 2; i++) {
        mb__sh_quote(f, o->migbench);
        fputs(" report ", f);
        mb__sh_quote(f, o->results);
        fprintf(f, " --format %s -o ", formats[i][0]);
        snprintf(out, sizeof(out), "%s/%s", o->results, formats[i][1]);
        mb__sh_quote(f, out);
        fputs(" || status=$?\n", f);
    }
    fputs("exit \"$status\"\n", f);
    return mb__ftext_commit(&t, dir, "report.sbatch", 0755, err);
}

static void tsv_field(FILE *f, const char *s)
{
    for (; *s; s++)
        fputc(*s == '\t' || *s == '\n' || *s == '\r' ? ' ' : *s, f);
}

/* Every cell of the experiment (not only those submitted): the map that status reads. */
static int write_cells_tsv(const struct mb_experiment *exp, const struct mb_cell *cells, size_t n,
                           const char *dir, struct mb_error *err)
{
    struct mb__ftext t;
    int rc = mb__ftext_open(&t, err);
    if (rc != MB_OK)
        return rc;
    fputs("index\trun\trepetition\tmode\tjobs\tpower_limit\n", t.f);
    for (size_t i = 0; i < n; i++) {
        const struct mb_exp_run *r = &exp->runs[cells[i].run];
        fprintf(t.f, "%zu\t", i);
        tsv_field(t.f, r->name);
        fprintf(t.f, "\t%u\t%s\t", cells[i].rep, mb_exp_mode_str(r->mode));
        for (size_t j = 0; j < r->n_jobs; j++) {
            if (j)
                fputc(',', t.f);
            tsv_field(t.f, r->job_name[j]);
        }
        fputc('\t', t.f);
        tsv_field(t.f, r->power_limit.text); /* "" without the power-limit axis */
        fputc('\n', t.f);
    }
    return mb__ftext_commit(&t, dir, "cells.tsv", 0644, err);
}

/* submit.sh's lines up to its sbatch calls: the lock, and cells.tsv into the results. */
static void submit_sh_prologue(FILE *f, const struct mb_slurm_array_opts *o, const char *dir)
{
    char path[4200];
    fputs(
        "#!/bin/bash\n# Submits the job array, then the report job that waits for all of it, and\n"
        "# records both as `migbench slurm submit` does (cells.tsv and submissions.jsonl in\n"
        "# the results' slurm/), so that `migbench slurm status` and a later `slurm submit`\n"
        "# know them. One submitter per results directory at a time (slurm/submit.lock).\n"
        "set -euo pipefail\nout=",
        f);
    snprintf(path, sizeof(path), "%s/slurm", o->results);
    mb__sh_quote(f, path);
    fputs("\nhere=", f);
    mb__sh_quote(f, dir);
    fputs("\nmkdir -p \"$out\"\nexec 9>>\"$out/submit.lock\"\n"
          "if ! flock -n 9; then\n"
          "    echo \"submit.sh: another submitter (pid $(head -n 1 \"$out/submit.lock\")) is\"\\\n"
          "        \"submitting into $out now; wait until it has finished\" >&2\n"
          "    exit 1\nfi\necho \"$$\" >\"$out/submit.lock\"\n"
          "if [ -e \"$out/cells.tsv\" ] && ! cmp -s \"$here/cells.tsv\" \"$out/cells.tsv\"; then\n"
          "    echo \"submit.sh: $out/cells.tsv numbers other cells: submit a changed\"\\\n"
          "        \"experiment into a new results directory\" >&2\n"
          "    exit 2\nfi\n"
          "if ! [ \"$here/cells.tsv\" -ef \"$out/cells.tsv\" ]; then\n"
          "    cp \"$here/cells.tsv\" \"$out/cells.tsv.$$\" && mv -f \"$out/cells.tsv.$$\" "
          "\"$out/cells.tsv\"\nfi\n",
          f);
}

static int write_submit_sh(const struct mb_slurm_array_opts *o, const size_t *idx, size_t n,
                           const char *dir, struct mb_error *err)
{
    struct mb__ftext t;
    int rc = mb__ftext_open(&t, err);
    if (rc != MB_OK)
        return rc;
    FILE *f = t.f;
    submit_sh_prologue(f, o, dir);
    fputs("array=$(sbatch --parsable \"$here/array.sbatch\")\narray=${array%%;*}\n"
          "echo \"array job $array\"\n"
          "report=$(sbatch --parsable --dependency=afterany:\"$array\" \"$here/report.sbatch\")\n"
          "report=${report%%;*}\necho \"report job $report\"\n",
          f);
    /* The line comes from submissions.jsonl's one encoder, as a printf format that the shell
     * fills with the job ids, the time and the cells. */
    struct mb__submission sub = {.max_attempts = o->max_attempts ? o->max_attempts
                                                                 : MB_SLURM_MAX_ATTEMPTS_DEFAULT};
    snprintf(sub.by, sizeof(sub.by), "submit.sh");
    char *format = NULL;
    rc = mb__submission_encode(&sub, true, &format, err);
    if (rc != MB_OK) {
        mb__ftext_abort(&t);
        return rc;
    }
    fprintf(f, "printf '%s\\n' \\\n    \"$array\" \"$report\" \"$(date +%%s)\" '", format);
    free(format);
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%s%zu", i ? "," : "", idx[i]);
    fputs("' >>\"$out/submissions.jsonl\"\n", f);
    return mb__ftext_commit(&t, dir, "submit.sh", 0755, err);
}

int mb_slurm_write_array(const struct mb_experiment *exp, const struct mb_cell *cells,
                         size_t n_cells, const size_t *indices, size_t n_indices,
                         const struct mb_slurm_array_opts *o, const char *dir, struct mb_error *err)
{
    int rc = check_array_opts(o, err);
    if (rc != MB_OK)
        return rc;
    size_t n = indices ? n_indices : n_cells;
    if (n == 0)
        return mb_error_set(err, MB_EINVAL, "slurm: no cell to submit");
    size_t *idx = malloc(n * sizeof(*idx));
    if (!idx)
        return mb_error_set(err, MB_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        idx[i] = indices ? indices[i] : i;
        if (idx[i] >= n_cells || (i > 0 && idx[i] <= idx[i - 1])) {
            free(idx);
            return mb_error_set(err, MB_EINVAL, "slurm: cell index %zu out of order or range",
                                indices ? indices[i] : i);
        }
    }
    char job_name[MB_EXP_NAME_MAX + 16];
    if (o->job_name)
        snprintf(job_name, sizeof(job_name), "%s", o->job_name);
    else
        snprintf(job_name, sizeof(job_name), "migbench-%s", exp->name);
    rc = mb__fleet_check_plain("job name (from the experiment's name)", job_name, err);
    if (rc == MB_OK)
        rc = write_cells_tsv(exp, cells, n_cells, dir, err);
    if (rc == MB_OK)
        rc = write_array_sbatch(exp, idx, n, o, job_name, dir, err);
    if (rc == MB_OK)
        rc = write_report_sbatch(o, job_name, dir, err);
    if (rc == MB_OK)
        rc = write_submit_sh(o, idx, n, dir, err);
    free(idx);
    return rc;
}

/* ---- a fleet plan, rolled out node by node ------------------------------------------------ */

/* The part of rollout.sh after its settings: the same for every node. */
static const char rollout_hooks[] =
    "slurm_conf=${SLURM_CONF:-/etc/slurm/slurm.conf}\n"
    "wait_s=${MB_ROLLOUT_WAIT_S:-3600}\n"
    "force=${MB_ROLLOUT_FORCE:-0}\n"
    "[ \"${1:-}\" != --force ] || force=1\n"
    "ours='migbench MIG layout rollout'\n"
    "\n"
    "# Site hooks: MB_ROLLOUT_HOOKS may name a bash file that redefines any of these.\n"
    "apply_layout() {\n"
    "    \"$migbench\" mig apply \"$here/mig-parted.yaml\" -c migbench-plan \\\n"
    "        ${MIGBENCH_DEVICE:+--device \"$MIGBENCH_DEVICE\"}\n"
    "}\n"
    "# The plan's power limit (W) on every GPU of the node; not called without one.\n"
    "set_power_limit() { nvidia-smi -pl \"$1\"; }\n"
    "after_apply() { :; }\n"
    "restart_slurmctld() { systemctl restart slurmctld; }\n"
    "restart_slurmd() { systemctl restart slurmd; }\n"
    "if [ -n \"${MB_ROLLOUT_HOOKS:-}\" ]; then\n"
    "    . \"$MB_ROLLOUT_HOOKS\"\n"
    "fi\n"
    "\n"
    "say() { echo \"rollout $node: $*\" >&2; }\n"
    "node_state() { sinfo -h -N -n \"$node\" -o %T 2>/dev/null | head -n 1; }\n"
    "node_reason() { sinfo -h -N -n \"$node\" -o %E 2>/dev/null | head -n 1; }\n"
    "# until_state REGEX: waits (bounded) until the node's state matches.\n"
    "until_state() {\n"
    "    local deadline=$((SECONDS + wait_s)) st\n"
    "    while :; do\n"
    "        st=$(node_state)\n"
    "        [[ $st =~ ^($1)$ ]] && return 0\n"
    "        [ \"$SECONDS\" -lt \"$deadline\" ] || { say \"state '$st' after ${wait_s}s\"; return "
    "1; }\n"
    "        sleep 2\n"
    "    done\n"
    "}\n"
    "# has_gres: sinfo shows every planned type and count on the node.\n"
    "has_gres() {\n"
    "    have=$(sinfo -h -N -n \"$node\" -o %G | head -n 1)\n"
    "    local g\n"
    "    IFS=, read -r -a want <<<\"$gres\"\n"
    "    for g in \"${want[@]}\"; do\n"
    "        [[ \",$have,\" == *\",$g\"[,\\(]* ]] || return 1\n"
    "    done\n"
    "}\n"
    "# stale_jobs: queued jobs that ask for a GPU type no node offers any more.\n"
    "stale_jobs() {\n"
    "    local types id gres_req t n=0\n"
    "    types=,$(sinfo -h -o %G | tr '\\n' ',' | sed 's/([^)]*)//g'),\n"
    "    while IFS='|' read -r id gres_req; do\n"
    "        for t in $(grep -o 'gpu:[^:,]*:' <<<\"$gres_req\" | sed 's/^gpu://; s/:$//'); do\n"
    "            [[ $t =~ ^[0-9]+$ ]] && continue\n"
    "            [[ $types == *\":$t:\"* || $types == *\"_$t:\"* ]] && continue\n"
    "            say \"job $id waits for gpu:$t, which no node offers now: it cannot start\"\\\n"
    "                \"(scancel it, or resubmit it for a type sinfo shows)\"\n"
    "            n=$((n + 1))\n"
    "        done\n"
    "    done < <(squeue -h -t PENDING -o '%i|%b')\n"
    "    [ \"$n\" = 0 ] || say \"$n queued job(s) ask for a GPU type that is gone\"\n"
    "}\n";

static const char rollout_body[] =
    "\n"
    "st=$(node_state)\n"
    "reason=$(node_reason)\n"
    "# A node drained or down for another reason is the admin's: left alone unless forced, and\n"
    "# then left drained with the admin's reason.\n"
    "keep=''\n"
    "if [[ $st =~ ^(drain|down|fail|maint|reboot|inval|future) && $reason != \"$ours\" ]]; then\n"
    "    if [ \"$force\" != 1 ]; then\n"
    "        say \"is $st ($reason), not by a rollout: left alone. MB_ROLLOUT_FORCE=1 (or --force)"
    "\"\\\n"
    "            \"rolls out anyway and leaves it $st with that reason\"\n"
    "        exit 3\n"
    "    fi\n"
    "    keep=$reason\n"
    "    say \"is $st ($reason): forced; the node stays drained with that reason\"\n"
    "elif [[ $reason != \"$ours\" ]] && has_gres; then\n"
    "    say \"already has the planned GRES ($have): nothing to do\"\n"
    "    stale_jobs\n"
    "    exit 0\n"
    "fi\n"
    "if [ -z \"$keep\" ]; then\n"
    "    say \"draining\"\n"
    "    scontrol update NodeName=\"$node\" State=DRAIN Reason=\"$ours\"\n"
    "fi\n"
    "until_state 'drained|down|drained\\*|down\\*|fail|maint'\n"
    "say \"applying the layout\"\n"
    "apply_layout\n"
    "if [ -n \"$power_w\" ]; then\n"
    "    say \"setting the power limit to $power_w W\"\n"
    "    set_power_limit \"$power_w\"\n"
    "fi\n"
    "after_apply\n"
    "# The node's Gres= in slurm.conf (the same file on every node and the controller).\n"
    "tmp=$(mktemp \"$slurm_conf.XXXXXX\")\n"
    "awk -v node=\"$node\" -v gres=\"$gres\" '\n"
    "    $1 == \"NodeName=\" node {\n"
    "        done = 0\n"
    "        for (i = 2; i <= NF; i++) if ($i ~ /^Gres=/) { $i = \"Gres=\" gres; done = 1 }\n"
    "        if (!done) $0 = $0 \" Gres=\" gres\n"
    "        found = 1\n"
    "    }\n"
    "    { print }\n"
    "    END { if (!found) exit 3 }' \"$slurm_conf\" >\"$tmp\" ||\n"
    "    { rm -f \"$tmp\"; say \"no NodeName=$node line in $slurm_conf\"; exit 1; }\n"
    "cat \"$tmp\" >\"$slurm_conf\"\n"
    "rm -f \"$tmp\"\n"
    "# Slurm 22.05 takes a changed GRES count only from a restarted slurmctld and slurmd.\n"
    "say \"restarting slurmctld and slurmd\"\n"
    "restart_slurmctld\n"
    "restart_slurmd\n"
    "# A restarted slurmctld knows the node as UNKNOWN until slurmd registers again.\n"
    "deadline=$((SECONDS + wait_s))\n"
    "until st=$(scontrol -o show node \"$node\" | sed -n 's/.* State=\\([^ ]*\\).*/\\1/p') &&\n"
    "    [ -n \"$st\" ] && [[ $st != *UNKNOWN* && $st != *NOT_RESPONDING* ]]; do\n"
    "    [ \"$SECONDS\" -lt \"$deadline\" ] || { say \"slurmd did not register ($st)\"; exit 1; }\n"
    "    sleep 2\n"
    "done\n"
    "if [ -n \"$keep\" ]; then\n"
    "    # The admin's drain, with the admin's reason, as it was.\n"
    "    [ \"$(node_reason)\" = \"$keep\" ] ||\n"
    "        scontrol update NodeName=\"$node\" State=DRAIN Reason=\"$keep\"\n"
    "    has_gres || { say \"sinfo shows '$have', not $gres\"; exit 1; }\n"
    "    say \"left drained ($keep) with $have\"\n"
    "else\n"
    "    scontrol update NodeName=\"$node\" State=RESUME\n"
    "    until_state 'idle|mixed|allocated'\n"
    "    has_gres || { say \"sinfo shows '$have', not $gres\"; exit 1; }\n"
    "    say \"resumed with $have\"\n"
    "fi\n"
    "stale_jobs\n";

static int write_rollout(const char *node, const char *gres, const char *migbench, double power_w,
                         const char *node_dir, struct mb_error *err)
{
    struct mb__ftext t;
    int rc = mb__ftext_open(&t, err);
    if (rc != MB_OK)
        return rc;
    FILE *f = t.f;
    fprintf(f,
            "#!/bin/bash\n"
            "# Written by migbench plan --emit-slurm: moves node %s to its planned MIG layout.\n"
            "# Run it on the node as root: it drains the node, waits until no job runs, applies\n"
            "# mig-parted.yaml (and the plan's power limit), sets the node's Gres= in\n"
            "# slurm.conf, restarts slurmctld and slurmd, resumes the node, checks what sinfo\n"
            "# shows, and names queued jobs that ask for a GPU type no node has any more. A\n"
            "# node drained or down for another reason is left alone (exit 3) unless forced\n"
            "# (MB_ROLLOUT_FORCE=1 or --force), and then stays drained with that reason. Safe\n"
            "# to run again: a node that has the planned GRES is left as it is.\n"
            "set -euo pipefail\nhere=$(cd \"$(dirname \"$0\")\" && pwd)\nnode=",
            node);
    mb__sh_quote(f, node);
    fputs("\ngres=", f);
    mb__sh_quote(f, gres);
    fputs("\nmigbench=${MIGBENCH:-", f);
    mb__sh_quote(f, migbench);
    fputs("}\n# The plan's GPU power limit in W (empty: the default limit).\npower_w=", f);
    if (isfinite(power_w) && power_w > 0)
        fprintf(f, "%.0f", power_w);
    fputs("\n", f);
    fputs(rollout_hooks, f);
    fputs(rollout_body, f);
    return mb__ftext_commit(&t, node_dir, "rollout.sh", 0755, err);
}

static int write_plan_node(const struct mb_gpu_model *model, const struct mb_plan *plan,
                           const struct mb_fleet_plan_opts *o, unsigned first, unsigned n,
                           const char *node, const char *dir, struct mb_error *err)
{
    char node_dir[4200];
    snprintf(node_dir, sizeof(node_dir), "%s/%s", dir, node);
    struct mb__ftext t;
    int rc = mb__ftext_open(&t, err);
    if (rc != MB_OK)
        return rc;
    fprintf(t.f,
            "# Written by migbench plan for node %s (plan GPUs %u-%u of %u x %s).\n"
            "version: v1\nmig-configs:\n  migbench-plan:\n",
            node, first, first + n - 1, plan->count, model->name);
    rc = mb__fleet_migparted_entries(t.f, model, plan, first, n, 4, err);
    if (rc != MB_OK) {
        mb__ftext_abort(&t);
        return rc;
    }
    if ((rc = mb__ftext_commit(&t, node_dir, "mig-parted.yaml", 0644, err)) != MB_OK)
        return rc;
    size_t n_types = 0;
    for (unsigned g = first; g < first + n; g++)
        n_types += plan->gpus[g].mig ? plan->gpus[g].layout.n : 1;
    char(*types)[MB_SLURM_TYPE_MAX] = calloc(n_types ? n_types : 1, sizeof(*types));
    const char **ptrs = calloc(n_types ? n_types : 1, sizeof(*ptrs));
    if (!types || !ptrs) {
        free(types);
        free(ptrs);
        return mb_error_set(err, MB_ENOMEM, "out of memory");
    }
    size_t k = 0;
    for (unsigned g = first; g < first + n; g++)
        for (unsigned i = 0; i < (plan->gpus[g].mig ? plan->gpus[g].layout.n : 1); i++) {
            mb__fleet_slot_type(model, plan, o, g, i, types[k], sizeof(types[k]));
            ptrs[k] = types[k];
            k++;
        }
    rc = write_gres_conf(node_dir, err);
    if (rc == MB_OK)
        rc = write_node_line(node_dir, node, ptrs, n_types, err);
    if (rc == MB_OK && (rc = mb__ftext_open(&t, err)) == MB_OK) {
        gres_value(t.f, ptrs, n_types);
        fflush(t.f);
        rc = write_rollout(node, t.buf ? t.buf : "", o->migbench ? o->migbench : "migbench",
                           o->power_limit_w, node_dir, err);
        mb__ftext_abort(&t);
    }
    free(types);
    free(ptrs);
    return rc;
}

/* One sbatch line for planned job j, chained after the job before it in its instance's queue. */
static void plan_job_line(FILE *f, const struct mb_gpu_model *model, const struct mb_plan *plan,
                          const struct mb_plan_job *jobs, size_t j,
                          const struct mb_fleet_plan_opts *o, const char *node)
{
    const struct mb_plan_slot *s = &plan->slots[j];
    char type[MB_SLURM_TYPE_MAX];
    mb__fleet_slot_type(model, plan, o, s->gpu, s->instance, type, sizeof(type));
    struct mb__ftext cmd;
    if (mb__ftext_open(&cmd, NULL) != MB_OK)
        return;
    bool have = mb__fleet_job_command(cmd.f, o, &jobs[s->job]);
    fflush(cmd.f);
    fprintf(f, "# %s: workload %s on GPU %u (node %s), instance %u (%s), position %u\n",
            jobs[s->job].name, jobs[s->job].workload, s->gpu, node, s->instance, type, s->order);
    if (!have)
        fputs("# no command for this workload: add it under the jobs file's workloads:\n# ", f);
    fprintf(f, "j%zu=$(sbatch --parsable --nodelist=", j);
    mb__sh_quote(f, node);
    fprintf(f, " --gres=gpu:%s:1 --job-name=", type);
    mb__sh_quote(f, jobs[s->job].name);
    if (isfinite(o->power_limit_w) && o->power_limit_w > 0)
        fprintf(f, " --comment=migbench-power-limit-%.0fW", o->power_limit_w);
    for (size_t p = 0; p < plan->n_slots; p++) {
        const struct mb_plan_slot *q = &plan->slots[p];
        if (q->gpu == s->gpu && q->instance == s->instance && q->order + 1 == s->order)
            fprintf(f, " ${j%zu:+--dependency=afterany:$j%zu}", p, p);
    }
    fputs(" --wrap=", f);
    mb__sh_quote(f, have && cmd.buf ? cmd.buf : "false");
    fputs(")\n", f);
    mb__ftext_abort(&cmd);
}

int mb_slurm_write_plan(const struct mb_gpu_model *model, const struct mb_plan *plan,
                        const struct mb_plan_job *jobs, size_t n_jobs,
                        const struct mb_fleet_plan_opts *o, const char *dir, struct mb_error *err)
{
    if (plan->count == 0 || plan->n_slots != n_jobs)
        return mb_error_set(err, MB_EINVAL, "slurm: the plan and its jobs do not match");
    unsigned per = o->gpus_per_node ? o->gpus_per_node : plan->count;
    unsigned n_nodes = mb__fleet_n_nodes(o, plan->count);
    char node[256];
    unsigned local;
    int rc = MB_OK;
    for (unsigned k = 0; k < n_nodes && rc == MB_OK; k++) {
        unsigned first = k * per;
        unsigned n = plan->count - first < per ? plan->count - first : per;
        rc = mb__fleet_node_of(o, plan->count, first, node, sizeof(node), &local, err);
        if (rc == MB_OK)
            rc = write_plan_node(model, plan, o, first, n, node, dir, err);
    }
    if (rc != MB_OK)
        return rc;
    struct mb__ftext t;
    if ((rc = mb__ftext_open(&t, err)) != MB_OK)
        return rc;
    fprintf(t.f,
            "#!/bin/bash\n# Written by migbench plan --emit-slurm: one sbatch per planned job, "
            "on the node and\n# GRES type it was planned on; jobs that share an instance run "
            "in the plan's order.\nset -euo pipefail\n");
    if (isfinite(o->power_limit_w) && o->power_limit_w > 0)
        fprintf(t.f,
                "# The plan holds for a GPU power limit of %.0f W, which each node's rollout.sh\n"
                "# sets; every job carries it as --comment=migbench-power-limit-%.0fW.\n",
                o->power_limit_w, o->power_limit_w);
    unsigned max_order = 0;
    for (size_t j = 0; j < n_jobs; j++)
        if (plan->slots[j].order > max_order)
            max_order = plan->slots[j].order;
    for (unsigned ord = 0; ord <= max_order && rc == MB_OK; ord++)
        for (size_t j = 0; j < n_jobs && rc == MB_OK; j++) {
            if (plan->slots[j].order != ord)
                continue;
            rc = mb__fleet_node_of(o, plan->count, plan->slots[j].gpu, node, sizeof(node), &local,
                                   err);
            if (rc == MB_OK)
                plan_job_line(t.f, model, plan, jobs, j, o, node);
        }
    if (rc != MB_OK) {
        mb__ftext_abort(&t);
        return rc;
    }
    return mb__ftext_commit(&t, dir, "jobs.sh", 0755, err);
}
