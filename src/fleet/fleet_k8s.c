/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Kubernetes, output only: a fleet plan as the mig-parted ConfigMap that NVIDIA's MIG manager
 * applies when a node's nvidia.com/mig.config label names one of its configs, the label commands
 * with a wait on nvidia.com/mig.config.state=success, and Indexed Jobs (one per MIG profile)
 * requesting the device plugin's mixed-strategy resource ("mig-" and the profile, '+' made '.':
 * nvidia.com/mig-1g.10gb.me for 1g.10gb+me, as k8s-device-plugin's AddDefaultResourcesToConfig
 * names them). The containers run `migbench` from the image's PATH unless told otherwise.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fleet/fleet_internal.h"

#define CONFIGMAP_NAME "migbench-mig-parted"

static bool has_power(double w)
{
    return isfinite(w) && w > 0;
}

static int write_configmap(const struct mb_gpu_model *model, const struct mb_plan *plan,
                           const struct mb_fleet_plan_opts *o, const char *dir,
                           struct mb_error *err)
{
    struct mb__ftext t;
    int rc = mb__ftext_open(&t, err);
    if (rc != MB_OK)
        return rc;
    FILE *f = t.f;
    fprintf(f,
            "# Written by migbench plan --emit-k8s for %u x %s. Point the GPU operator's MIG\n"
            "# manager at it (ClusterPolicy migManager.config.name: " CONFIGMAP_NAME "),\n"
            "# then label each node with its config (label-nodes.sh).%s\n"
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " CONFIGMAP_NAME "\n"
            "  namespace: gpu-operator\ndata:\n  config.yaml: |\n    version: v1\n"
            "    mig-configs:\n",
            plan->count, model->name,
            has_power(o->power_limit_w)
                ? "\n# The plan's GPU power limit is not part of a mig-parted config: see\n"
                  "# label-nodes.sh (label migbench/power-limit-w) and docs/kubernetes.md."
                : "");
    unsigned per = o->gpus_per_node ? o->gpus_per_node : plan->count;
    unsigned n_nodes = mb__fleet_n_nodes(o, plan->count);
    char node[256];
    unsigned local;
    for (unsigned k = 0; k < n_nodes && rc == MB_OK; k++) {
        unsigned first = k * per;
        unsigned n = plan->count - first < per ? plan->count - first : per;
        rc = mb__fleet_node_of(o, plan->count, first, node, sizeof(node), &local, err);
        if (rc != MB_OK)
            break;
        fprintf(f, "      migbench-%s:\n", node);
        rc = mb__fleet_migparted_entries(f, model, plan, first, n, 8, err);
    }
    if (rc != MB_OK) {
        mb__ftext_abort(&t);
        return rc;
    }
    return mb__ftext_commit(&t, dir, "mig-parted-configmap.yaml", 0644, err);
}

static int write_labels(const struct mb_plan *plan, const struct mb_fleet_plan_opts *o,
                        const char *dir, struct mb_error *err)
{
    struct mb__ftext t;
    int rc = mb__ftext_open(&t, err);
    if (rc != MB_OK)
        return rc;
    FILE *f = t.f;
    fputs("#!/bin/bash\n# Written by migbench plan --emit-k8s: asks the MIG manager on each node "
          "for its\n# planned layout and waits until every node reports success.\n"
          "set -euo pipefail\ntimeout=${MB_K8S_WAIT:-1800s}\n",
          f);
    unsigned per = o->gpus_per_node ? o->gpus_per_node : plan->count;
    unsigned n_nodes = mb__fleet_n_nodes(o, plan->count);
    char node[256], label[300];
    unsigned local;
    for (int pass = 0; pass < 2 && rc == MB_OK; pass++)
        for (unsigned k = 0; k < n_nodes && rc == MB_OK; k++) {
            rc = mb__fleet_node_of(o, plan->count, k * per, node, sizeof(node), &local, err);
            if (rc != MB_OK)
                break;
            if (pass == 0) {
                fputs("kubectl label node ", f);
                mb__sh_quote(f, node);
                snprintf(label, sizeof(label), "nvidia.com/mig.config=migbench-%s", node);
                fputc(' ', f);
                mb__sh_quote(f, label);
                fputs(" --overwrite\n", f);
                if (has_power(o->power_limit_w)) {
                    /* For the site's power-limit agent: the GPU operator does not set limits. */
                    fputs("kubectl label node ", f);
                    mb__sh_quote(f, node);
                    fprintf(f, " migbench/power-limit-w=%.0f --overwrite\n", o->power_limit_w);
                }
            } else {
                snprintf(label, sizeof(label), "node/%s", node);
                fputs("kubectl wait ", f);
                mb__sh_quote(f, label);
                fputs(" --for=jsonpath='{.metadata.labels.nvidia\\.com/mig\\.config\\.state}'"
                      "=success --timeout=\"$timeout\"\n",
                      f);
            }
        }
    if (rc != MB_OK) {
        mb__ftext_abort(&t);
        return rc;
    }
    return mb__ftext_commit(&t, dir, "label-nodes.sh", 0755, err);
}

void mb_k8s_mig_resource(const char *profile, char *out, size_t cap)
{
    int n = snprintf(out, cap, "nvidia.com/mig-%s", profile);
    for (int i = 0; i < n && (size_t)i < cap; i++)
        if (out[i] == '+')
            out[i] = '.';
}

/*
 * A DNS-1123 label from s: lowercase letters, digits and '-' (any other character, and runs of
 * them, one '-'), starting and ending with a letter or digit, at most 63 characters and cap-1.
 */
static void k8s_name(const char *s, char *out, size_t cap)
{
    size_t n = 0, max = cap - 1 < 63 ? cap - 1 : 63;
    for (const char *p = s; *p && n < max; p++) {
        char c = *p >= 'A' && *p <= 'Z' ? (char)(*p - 'A' + 'a') : *p;
        bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
        if (ok)
            out[n++] = c;
        else if (n > 0 && out[n - 1] != '-')
            out[n++] = '-';
    }
    while (n > 0 && out[n - 1] == '-')
        n--;
    if (n == 0)
        out[n++] = 'x';
    out[n] = '\0';
}

/* Whether planned job j runs on profile prof (on a whole GPU when prof is NULL). */
static bool on_profile(const struct mb_gpu_model *model, const struct mb_plan *plan, size_t j,
                       const char *prof)
{
    const struct mb_plan_gpu *g = &plan->gpus[plan->slots[j].gpu];
    if (!prof || !g->mig)
        return !prof && !g->mig;
    unsigned i = plan->slots[j].instance;
    return i < g->layout.n && g->layout.items[i].profile < model->n_profiles &&
           strcmp(model->profiles[g->layout.items[i].profile].name, prof) == 0;
}

/* One Indexed Job for the planned jobs on profile `prof` (or whole GPUs when prof is NULL). */
static void write_indexed_job(FILE *f, const struct mb_gpu_model *model, const struct mb_plan *plan,
                              const struct mb_plan_job *jobs, const struct mb_fleet_plan_opts *o,
                              const char *prof, unsigned parallel)
{
    size_t count = 0;
    for (size_t j = 0; j < plan->n_slots; j++) {
        count += on_profile(model, plan, j, prof);
    }
    if (count == 0)
        return;
    char name[64];
    k8s_name(prof ? prof : "full", name, sizeof(name) - 10);
    fprintf(f,
            "---\napiVersion: batch/v1\nkind: Job\nmetadata:\n  name: migbench-%s\n"
            "  namespace: ",
            name);
    mb__yaml_quote(f, o->k8s_namespace ? o->k8s_namespace : "default");
    if (has_power(o->power_limit_w))
        fprintf(f, "\n  annotations:\n    migbench/power-limit-w: \"%.0f\"", o->power_limit_w);
    fprintf(f,
            "\nspec:\n  completionMode: Indexed\n  completions: %zu\n  parallelism: %u\n"
            "  backoffLimit: 0\n  template:\n    spec:\n      restartPolicy: Never\n"
            "      containers:\n        - name: job\n          image: ",
            count, parallel ? parallel : 1);
    mb__yaml_quote(f, o->image ? o->image : "migbench:latest");
    fputs("\n          command: [\"/bin/sh\", \"-c\"]\n          args:\n            - ", f);
    /* The script: pod i runs the i-th planned job of this profile. */
    struct mb__ftext s;
    if (mb__ftext_open(&s, NULL) != MB_OK)
        return;
    fputs("case \"$JOB_COMPLETION_INDEX\" in\n", s.f);
    size_t idx = 0;
    unsigned max_order = 0;
    for (size_t j = 0; j < plan->n_slots; j++)
        if (plan->slots[j].order > max_order)
            max_order = plan->slots[j].order;
    /* In queue order, so that a small parallelism runs them as the plan does. */
    for (size_t k = 0; k < plan->n_slots * ((size_t)max_order + 1); k++) {
        size_t j = k % plan->n_slots;
        if (plan->slots[j].order != k / plan->n_slots || !on_profile(model, plan, j, prof))
            continue;
        fprintf(s.f, "%zu) # %s\n  exec ", idx++, jobs[plan->slots[j].job].name);
        if (!mb__fleet_job_command(s.f, o, &jobs[plan->slots[j].job]))
            fputs("echo 'no command for this workload in the jobs file' >&2; exit 1", s.f);
        fputs(" ;;\n", s.f);
    }
    fputs("*) echo \"no job for index $JOB_COMPLETION_INDEX\" >&2; exit 1 ;;\nesac\n", s.f);
    fflush(s.f);
    mb__yaml_quote(f, s.buf ? s.buf : "");
    mb__ftext_abort(&s);
    if (has_power(o->power_limit_w))
        fprintf(f,
                "\n          env:\n            - name: MB_PLAN_POWER_LIMIT_W\n"
                "              value: \"%.0f\"",
                o->power_limit_w);
    fputs("\n          resources:\n            limits:\n", f);
    char res[128];
    if (prof)
        mb_k8s_mig_resource(prof, res, sizeof(res));
    else
        snprintf(res, sizeof(res), "nvidia.com/gpu");
    fprintf(f, "              %s: 1\n", res);
}

static int write_jobs(const struct mb_gpu_model *model, const struct mb_plan *plan,
                      const struct mb_plan_job *jobs, const struct mb_fleet_plan_opts *o,
                      const char *dir, struct mb_error *err)
{
    struct mb__ftext t;
    int rc = mb__ftext_open(&t, err);
    if (rc != MB_OK)
        return rc;
    fprintf(t.f, "# Written by migbench plan --emit-k8s: one Indexed Job per MIG profile of the "
                 "plan\n# (device plugin strategy: mixed); parallelism = that profile's "
                 "instances.\n");
    unsigned inst[MB_MAX_PROFILES] = {0}, full = 0;
    for (unsigned g = 0; g < plan->count; g++) {
        if (!plan->gpus[g].mig)
            full++;
        for (size_t i = 0; plan->gpus[g].mig && i < plan->gpus[g].layout.n; i++)
            if (plan->gpus[g].layout.items[i].profile < MB_MAX_PROFILES)
                inst[plan->gpus[g].layout.items[i].profile]++;
    }
    for (size_t k = 0; k < model->n_profiles && k < MB_MAX_PROFILES; k++)
        if (inst[k])
            write_indexed_job(t.f, model, plan, jobs, o, model->profiles[k].name, inst[k]);
    if (full)
        write_indexed_job(t.f, model, plan, jobs, o, NULL, full);
    return mb__ftext_commit(&t, dir, "jobs.yaml", 0644, err);
}

int mb_k8s_write_plan(const struct mb_gpu_model *model, const struct mb_plan *plan,
                      const struct mb_plan_job *jobs, size_t n_jobs,
                      const struct mb_fleet_plan_opts *o, const char *dir, struct mb_error *err)
{
    if (plan->count == 0 || plan->n_slots != n_jobs)
        return mb_error_set(err, MB_EINVAL, "k8s: the plan and its jobs do not match");
    int rc = write_configmap(model, plan, o, dir, err);
    if (rc == MB_OK)
        rc = write_labels(plan, o, dir, err);
    if (rc == MB_OK)
        rc = write_jobs(model, plan, jobs, o, dir, err);
    return rc;
}
