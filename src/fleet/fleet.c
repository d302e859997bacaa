/* SPDX-License-Identifier: Apache-2.0 */
/* What the Slurm and Kubernetes emitters share: texts written atomically, quoting, node names. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fleet/fleet_internal.h"
#include "migbench/fileio.h"
#include "migbench/results.h"

int mb__ftext_open(struct mb__ftext *t, struct mb_error *err)
{
    memset(t, 0, sizeof(*t));
    t->f = open_memstream(&t->buf, &t->len);
    if (!t->f)
        return mb_error_set(err, MB_ENOMEM, "out of memory");
    return MB_OK;
}

void mb__ftext_abort(struct mb__ftext *t)
{
    if (t->f)
        fclose(t->f);
    free(t->buf);
    memset(t, 0, sizeof(*t));
}

int mb__ftext_commit(struct mb__ftext *t, const char *dir, const char *name, mode_t mode,
                     struct mb_error *err)
{
    bool bad = ferror(t->f) != 0;
    if (fclose(t->f) != 0 || bad || !t->buf) {
        t->f = NULL;
        mb__ftext_abort(t);
        return mb_error_set(err, MB_ENOMEM, "%s: out of memory", name);
    }
    t->f = NULL;
    char path[4096];
    int n = snprintf(path, sizeof(path), "%s/%s", dir, name);
    int rc;
    if (n < 0 || (size_t)n >= sizeof(path))
        rc = mb_error_set(err, MB_ERANGE, "path too long: %s/%s", dir, name);
    else if ((rc = mb_results_mkdirs(dir, 0755, err)) == MB_OK)
        rc = mb_file_write_atomic(path, t->buf, t->len, mode, err);
    mb__ftext_abort(t);
    return rc;
}

void mb__sh_quote(FILE *f, const char *s)
{
    /* Words of only these characters mean the same to the shell bare; they stay readable. */
    if (s[0] &&
        s[strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_@%+=:,./-")] ==
            '\0') {
        fputs(s, f);
        return;
    }
    fputc('\'', f);
    for (; *s; s++) {
        if (*s == '\'')
            fputs("'\\''", f);
        else
            fputc(*s, f);
    }
    fputc('\'', f);
}

void mb__yaml_quote(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p == '\n')
            fputs("\\n", f);
        else if (*p == '\t')
            fputs("\\t", f);
        else if (*p < 0x20 || *p == 0x7f)
            fprintf(f, "\\x%02x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

int mb__fleet_check_plain(const char *what, const char *v, struct mb_error *err)
{
    if (!v || !v[0])
        return mb_error_set(err, MB_EINVAL, "%s: empty value", what);
    for (const unsigned char *p = (const unsigned char *)v; *p; p++)
        if (isspace(*p) || iscntrl(*p) || strchr("'\"\\#%`$;&|<>", *p))
            return mb_error_set(err, MB_EINVAL,
                                "%s '%s': character '%c' is not allowed here (it would change "
                                "the line Slurm reads)",
                                what, v, isprint(*p) ? *p : '?');
    return MB_OK;
}

unsigned mb__fleet_n_nodes(const struct mb_fleet_plan_opts *o, unsigned count)
{
    unsigned per = o->gpus_per_node ? o->gpus_per_node : count;
    if (per == 0)
        return 0;
    return (count + per - 1) / per;
}

int mb__fleet_node_of(const struct mb_fleet_plan_opts *o, unsigned count, unsigned g, char *out,
                      size_t cap, unsigned *local, struct mb_error *err)
{
    unsigned per = o->gpus_per_node ? o->gpus_per_node : count;
    unsigned node = g / per;
    *local = g % per;
    if (o->n_nodes == 0 || !o->nodes) {
        snprintf(out, cap, "node%u", node);
        return MB_OK;
    }
    if (node >= o->n_nodes)
        return mb_error_set(err, MB_EINVAL,
                            "the plan has %u GPUs, %u per node: %u nodes needed, %zu named", count,
                            per, mb__fleet_n_nodes(o, count), o->n_nodes);
    int rc = mb__fleet_check_plain("node name", o->nodes[node], err);
    if (rc != MB_OK)
        return rc;
    if (strchr(o->nodes[node], '/') || strlen(o->nodes[node]) >= cap)
        return mb_error_set(err, MB_EINVAL, "node name '%s': not a host name", o->nodes[node]);
    snprintf(out, cap, "%s", o->nodes[node]);
    return MB_OK;
}

static const struct mb_plan_workload *find_workload(const struct mb_plan_jobset *js, const char *w)
{
    for (size_t i = 0; js && i < js->n_workloads; i++)
        if (strcmp(js->workloads[i].name, w) == 0)
            return &js->workloads[i];
    return NULL;
}

/* One argv word, {python} and {workloads} replaced, as one quoted shell word. */
static void sh_quote_subst(FILE *f, const char *a, const struct mb_fleet_plan_opts *o)
{
    const char *python = o->python ? o->python : "python3";
    const char *wl = o->workloads ? o->workloads : "/usr/share/migbench/workloads";
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (!m) {
        mb__sh_quote(f, a);
        return;
    }
    while (*a) {
        if (strncmp(a, "{python}", 8) == 0) {
            fputs(python, m);
            a += 8;
        } else if (strncmp(a, "{workloads}", 11) == 0) {
            fputs(wl, m);
            a += 11;
        } else {
            fputc(*a++, m);
        }
    }
    fclose(m);
    mb__sh_quote(f, buf ? buf : "");
    free(buf);
}

bool mb__fleet_job_command(FILE *f, const struct mb_fleet_plan_opts *o,
                           const struct mb_plan_job *job)
{
    const struct mb_plan_workload *w = find_workload(o->jobset, job->workload);
    if (!w || w->argc == 0)
        return false;
    mb__sh_quote(f, o->migbench ? o->migbench : "migbench");
    fputs(" measure --json --", f);
    for (size_t i = 0; i < w->argc + w->n_gpu_args; i++) {
        const char *a = i < w->argc ? w->argv[i] : w->gpu_args[i - w->argc];
        fputc(' ', f);
        sh_quote_subst(f, a, o);
    }
    return true;
}

/* Shared by the Slurm files and the fleet plan's slot names (no call back into fleet_slurm.c). */
void mb_slurm_gres_type(const char *device_name, const char *profile, char *out, size_t cap)
{
    if (cap == 0)
        return;
    size_t n = 0;
    bool sep = false, cut = false;
    for (const unsigned char *p = (const unsigned char *)(device_name ? device_name : "");
         *p && n + 1 < cap; p++) {
        if (isalnum(*p) || *p == '.' || *p == '-') {
            if (sep && n > 0) {
                if (n + 2 >= cap) {
                    cut = true; /* no room for the separator and a character after it */
                    break;
                }
                out[n++] = '_';
            }
            sep = false;
            out[n++] = (char)tolower(*p);
        } else {
            sep = true;
        }
    }
    out[n] = '\0';
    if (profile && profile[0] && !cut)
        snprintf(out + n, cap - n, "%s%s", n ? "_" : "", profile);
}

void mb__fleet_slot_type(const struct mb_gpu_model *model, const struct mb_plan *plan,
                         const struct mb_fleet_plan_opts *o, unsigned g, unsigned i, char *out,
                         size_t cap)
{
    const struct mb_plan_gpu *gpu = &plan->gpus[g];
    if (gpu->mig && i < gpu->layout.n && gpu->layout.items[i].profile < model->n_profiles)
        snprintf(out, cap, "%s", model->profiles[gpu->layout.items[i].profile].name);
    else
        mb_slurm_gres_type(o->device_name ? o->device_name : model->name, NULL, out, cap);
}

/* Instances per profile of GPU g. */
static void profile_counts(const struct mb_plan *plan, unsigned g, unsigned cnt[MB_MAX_PROFILES])
{
    memset(cnt, 0, sizeof(unsigned) * MB_MAX_PROFILES);
    for (size_t i = 0; i < plan->gpus[g].layout.n; i++)
        if (plan->gpus[g].layout.items[i].profile < MB_MAX_PROFILES)
            cnt[plan->gpus[g].layout.items[i].profile]++;
}

int mb__fleet_migparted_entries(FILE *f, const struct mb_gpu_model *model,
                                const struct mb_plan *plan, unsigned first, unsigned n, int indent,
                                struct mb_error *err)
{
    bool *done = calloc(n ? n : 1, sizeof(bool));
    if (!done)
        return mb_error_set(err, MB_ENOMEM, "out of memory");
    for (unsigned a = 0; a < n; a++) {
        if (done[a])
            continue;
        unsigned cnt[MB_MAX_PROFILES], other[MB_MAX_PROFILES];
        profile_counts(plan, first + a, cnt);
        fprintf(f, "%*s- devices: [", indent, "");
        for (unsigned b = a; b < n; b++) {
            profile_counts(plan, first + b, other);
            if (done[b] || plan->gpus[first + b].mig != plan->gpus[first + a].mig ||
                memcmp(cnt, other, sizeof(cnt)) != 0)
                continue;
            fprintf(f, "%s%u", b == a ? "" : ", ", b);
            done[b] = true;
        }
        fprintf(f, "]\n");
        if (!plan->gpus[first + a].mig) {
            fprintf(f, "%*s  mig-enabled: false\n", indent, "");
            continue;
        }
        fprintf(f, "%*s  mig-enabled: true\n%*s  mig-devices:", indent, "", indent, "");
        bool any = false;
        for (size_t k = 0; k < model->n_profiles && k < MB_MAX_PROFILES; k++)
            if (cnt[k]) {
                fprintf(f, "\n%*s    \"%s\": %u", indent, "", model->profiles[k].name, cnt[k]);
                any = true;
            }
        fprintf(f, "%s\n", any ? "" : " {}");
    }
    free(done);
    return MB_OK;
}
