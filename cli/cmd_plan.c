/* SPDX-License-Identifier: Apache-2.0 */
/* migbench plan: the MIG layout and job placement that finish a job set with the least energy. */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "migbench/catalog.h"
#include "migbench/fileio.h"
#include "migbench/layout.h"
#include "migbench/num.h"
#include "migbench/plan.h"
#include "migbench/powercap.h"
#include "migbench/results.h"

#define NAME "plan"
#define SOURCES_MAX 16
#define PARETO_MAX 32
#define PATH_MAX_LEN 4096
/* A plan or cell file larger than this is not one migbench wrote. */
#define JSON_MAX_BYTES (256u << 20)

struct opts {
    const char *jobs;
    const char *profiles[SOURCES_MAX];
    size_t n_profiles;
    const char *results[SOURCES_MAX];
    size_t n_results;
    const char *catalogs[SOURCES_MAX];
    size_t n_catalogs;
    const char *gpu;
    long count;
    const char *objective;
    double makespan_cap, energy_cap;
    bool pareto, json, heuristic, no_full;
    long exact_max;
    const char *emit_mig_parted;
    const char *emit_experiment;
    const char *verify;
    const char *plan;
    const char *power_limits;
};

/* ---------------------------------------------------------------------------------------------
 * Small formatting helpers
 */

static const char *fmt_time(double s, char *buf, size_t cap)
{
    if (!isfinite(s)) {
        snprintf(buf, cap, "n/a");
    } else if (s < 120) {
        snprintf(buf, cap, "%.1f s", s);
    } else if (s >= 1e12) {
        snprintf(buf, cap, "%.3g s", s); /* past what the h/m/s integers below can hold */
    } else {
        double r = floor(s + 0.5);
        unsigned long h = (unsigned long)(r / 3600);
        unsigned long m = (unsigned long)((r - (double)h * 3600) / 60);
        unsigned long sec = (unsigned long)(r - (double)h * 3600 - (double)m * 60);
        if (h)
            snprintf(buf, cap, "%luh %02lum %02lus", h, m, sec);
        else
            snprintf(buf, cap, "%lum %02lus", m, sec);
    }
    return buf;
}

static const char *fmt_energy(double j, char *buf, size_t cap)
{
    if (!isfinite(j))
        snprintf(buf, cap, "n/a");
    else if (fabs(j) >= 1e9)
        snprintf(buf, cap, "%.3f GJ", j / 1e9);
    else if (fabs(j) >= 1e6)
        snprintf(buf, cap, "%.3f MJ", j / 1e6);
    else if (fabs(j) >= 1e3)
        snprintf(buf, cap, "%.3f kJ", j / 1e3);
    else
        snprintf(buf, cap, "%.1f J", j);
    return buf;
}

/* A number with `digits` significant digits (precision < 0: "%+.1f%%"), or "n/a". */
static const char *fmt_num(double v, int digits, char *buf, size_t cap)
{
    if (!isfinite(v))
        snprintf(buf, cap, "n/a");
    else if (digits < 0)
        snprintf(buf, cap, "%+.1f%%", v);
    else
        snprintf(buf, cap, "%.*g", digits, v);
    return buf;
}

static cJSON *num_or_null(double v)
{
    return isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull();
}

/* Saving or gain in percent: (base - x) / base x 100; NaN when either is unknown. */
static double pct_less(double base, double x)
{
    if (!isfinite(base) || !isfinite(x) || base == 0)
        return NAN;
    return (base - x) / base * 100;
}

/* ---------------------------------------------------------------------------------------------
 * What the planner needs about each job beyond the plan itself
 */

struct ctx {
    const struct mb_gpu_model *model;
    const struct mb_plan_profiles *profiles;
    const struct mb_plan_jobset *js;
    const char *sources; /* "profiles.csv, results/x" for the header line */
};

static const struct mb_plan_profile *slot_row(const struct ctx *c, const struct mb_plan_slot *s)
{
    return mb_plan_profiles_get(c->profiles, s->profile);
}

static unsigned slot_slices(const struct ctx *c, const struct mb_plan *p,
                            const struct mb_plan_slot *s)
{
    const struct mb_plan_gpu *g = &p->gpus[s->gpu];
    if (!g->mig)
        return c->model->compute_slices;
    return c->model->profiles[g->layout.items[s->instance].profile].compute_slices;
}

/* Each job's energy: its dynamic energy plus the idle power of its share of the GPU's slices. */
static double slot_energy(const struct ctx *c, const struct mb_plan *p,
                          const struct mb_plan_slot *s)
{
    return s->dynamic_j +
           p->idle_power_w * s->time_s * slot_slices(c, p, s) / c->model->compute_slices;
}

/* The unit all jobs share, or NULL when they differ. */
static const char *common_unit(const struct ctx *c, const struct mb_plan *p)
{
    const char *u = NULL;
    for (size_t j = 0; j < p->n_slots; j++) {
        const char *x = slot_row(c, &p->slots[j])->unit;
        if (u && strcmp(u, x) != 0)
            return NULL;
        u = x;
    }
    return u;
}

static double total_work(const struct ctx *c)
{
    double w = 0;
    for (size_t j = 0; j < c->js->n_jobs; j++)
        w += c->js->jobs[j].work;
    return w;
}

static void layout_names(const struct ctx *c, const struct mb_plan_gpu *g, char *buf, size_t cap)
{
    size_t n = 0;
    buf[0] = '\0';
    if (!g->mig) {
        snprintf(buf, cap, "MIG off (whole GPU)");
        return;
    }
    if (g->layout.n == 0) {
        snprintf(buf, cap, "idle (no job)");
        return;
    }
    for (size_t i = 0; i < g->layout.n && n + 1 < cap; i++) {
        int w = snprintf(buf + n, cap - n, "%s%s", i ? " + " : "",
                         c->model->profiles[g->layout.items[i].profile].name);
        if (w < 0)
            break;
        n += (size_t)w;
    }
}

/* ---------------------------------------------------------------------------------------------
 * Text output
 */

static void print_queues(const struct ctx *c, const struct mb_plan *p, unsigned g, size_t ninst)
{
    char tb[32];
    for (size_t i = 0; i < ninst; i++) {
        char slices[16] = "all";
        const char *prof = MB_PLAN_FULL;
        if (p->gpus[g].mig) {
            const struct mb_layout_item *it = &p->gpus[g].layout.items[i];
            mb_layout_slices_str(it->placement, slices, sizeof(slices));
            prof = c->model->profiles[it->profile].name;
        }
        printf("  %-3zu %-11s mem %-5s ", i, prof, slices);
        unsigned k = 0;
        for (;; k++) {
            const struct mb_plan_slot *hit = NULL;
            for (size_t j = 0; j < p->n_slots && !hit; j++) {
                const struct mb_plan_slot *s = &p->slots[j];
                if (s->gpu == g && s->instance == i && s->order == k)
                    hit = s;
            }
            if (!hit)
                break;
            if (p->objective == MB_PLAN_THROUGHPUT)
                printf("%s%s (%.3g x full)", k ? " -> " : "", c->js->jobs[hit->job].name,
                       hit->normalised);
            else
                printf("%s%s (%s)", k ? " -> " : "", c->js->jobs[hit->job].name,
                       fmt_time(hit->time_s, tb, sizeof(tb)));
        }
        printf("\n");
    }
}

static void print_text(const struct ctx *c, const struct mb_plan *p)
{
    char a[48], b[48], d[48];
    printf("plan: %zu job%s on %u x %s, objective %s", p->n_slots, p->n_slots == 1 ? "" : "s",
           p->count, c->model->name, mb_plan_objective_str(p->objective));
    if (p->exact)
        printf(" (exact optimum, %zu search nodes)\n", p->nodes);
    else
        printf(" (heuristic, gap to lower bound %.2f%%)\n", p->gap_pct);
    printf("profiles: %s; idle power %.1f W (mean of %zu row%s)\n", c->sources, p->idle_power_w,
           p->idle_rows, p->idle_rows == 1 ? "" : "s");
    /* Identical GPUs are shown once when there are many. */
    for (unsigned g = 0; g < p->count; g++) {
        char names[512];
        layout_names(c, &p->gpus[g], names, sizeof(names));
        printf("\nGPU %u: %s\n", g, names);
        if (p->gpus[g].mig && p->gpus[g].layout.n) {
            char pic[256];
            mb_layout_picture(c->model, &p->gpus[g].layout, pic, sizeof(pic));
            printf("  %s\n", pic);
        }
        size_t ninst = p->gpus[g].mig ? p->gpus[g].layout.n : 0;
        if (!p->gpus[g].mig)
            for (size_t j = 0; j < p->n_slots; j++)
                if (p->slots[j].gpu == g)
                    ninst = 1;
        print_queues(c, p, g, ninst);
    }
    bool cont = p->objective == MB_PLAN_THROUGHPUT;
    printf("\njobs:\n");
    if (cont)
        printf("  %-16s %-14s %3s %4s %-10s %12s %8s %6s  %s\n", "job", "workload", "gpu", "inst",
               "partition", "units/s", "x full", "proxy", "source");
    else
        printf("  %-16s %-14s %3s %4s %-10s %10s %10s %12s %10s %6s  %s\n", "job", "workload",
               "gpu", "inst", "partition", "start", "time", "energy", "J/unit", "proxy", "source");
    for (size_t j = 0; j < p->n_slots; j++) {
        const struct mb_plan_slot *s = &p->slots[j];
        const struct mb_plan_profile *r = slot_row(c, s);
        const struct mb_plan_job *job = &c->js->jobs[s->job];
        if (cont) {
            printf("  %-16s %-14s %3u %4u %-10s %12.4g %8s %6s  %s\n", job->name, job->workload,
                   s->gpu, s->instance, r->partition, s->throughput,
                   fmt_num(s->normalised, 3, a, sizeof(a)), r->proxy ? "PROXY" : "-", r->source);
        } else {
            double e = slot_energy(c, p, s);
            printf("  %-16s %-14s %3u %4u %-10s %10s %10s %12s %10.4g %6s  %s\n", job->name,
                   job->workload, s->gpu, s->instance, r->partition,
                   fmt_time(s->start_s, a, sizeof(a)), fmt_time(s->time_s, b, sizeof(b)),
                   fmt_energy(e, d, sizeof(d)), e / job->work, r->proxy ? "PROXY" : "-", r->source);
        }
    }
    size_t proxies = 0, emulated = 0;
    for (size_t j = 0; j < p->n_slots; j++) {
        proxies += slot_row(c, &p->slots[j])->proxy;
        emulated += slot_row(c, &p->slots[j])->emulated;
    }
    printf("\n");
    if (cont) {
        printf("predicted: system throughput %.3f (sum of throughput / whole-GPU throughput), "
               "fleet power %.1f W\n",
               p->system_throughput, p->power_w);
        printf("baseline (each job alone on the whole GPU, one after another): system throughput "
               "%u\n",
               p->count < p->n_slots ? p->count : (unsigned)p->n_slots);
        if (!p->exact)
            printf("upper bound: system throughput %.3f (gap %.2f%%)\n", p->bound_throughput,
                   p->gap_pct);
    } else {
        printf("predicted: makespan %s, energy %s (idle %s + dynamic %s)\n",
               fmt_time(p->makespan_s, a, sizeof(a)), fmt_energy(p->energy_j, b, sizeof(b)),
               fmt_energy(p->idle_energy_j, d, sizeof(d)),
               fmt_energy(p->dynamic_energy_j, a + 24, sizeof(a) - 24));
        const char *u = common_unit(c, p);
        if (u)
            printf("energy per unit: %.4g J/%s over %.4g %s\n", p->energy_j / total_work(c), u,
                   total_work(c), u);
        else
            printf("energy per unit: per job only (the jobs count different units)\n");
        printf("baseline (each job alone on the whole GPU, one after another): makespan %s, "
               "energy %s\n",
               fmt_time(p->base_makespan_s, a, sizeof(a)),
               fmt_energy(p->base_energy_j, b, sizeof(b)));
        double es = pct_less(p->base_energy_j, p->energy_j);
        double ms = pct_less(p->base_makespan_s, p->makespan_s);
        if (isfinite(es))
            printf("gain over baseline: %.1f%% %s energy, %.1f%% %s makespan\n", fabs(es),
                   es >= 0 ? "less" : "more", fabs(ms), ms >= 0 ? "shorter" : "longer");
        else
            printf("gain over baseline: n/a (some workload has no 'full' profile row)\n");
        if (!p->exact)
            printf("lower bound: makespan %s, energy %s; gap %.2f%%\n",
                   fmt_time(p->bound_makespan_s, a, sizeof(a)),
                   fmt_energy(p->bound_energy_j, b, sizeof(b)), p->gap_pct);
    }
    printf("time-slicing / MPS sharing: not profiled (profile rows describe one job alone on a "
           "partition; MPS rows only stand in for MIG sizes)\n");
    if (proxies)
        printf("note: %zu job%s use%s MPS proxy rows (an MPS run standing in for a MIG size); "
               "marked PROXY above\n",
               proxies, proxies == 1 ? "" : "s", proxies == 1 ? "s" : "");
    if (emulated)
        printf("note: %zu job%s use%s profile rows from an EMULATED device: modelled numbers, not "
               "measurements\n",
               emulated, emulated == 1 ? "" : "s", emulated == 1 ? "s" : "");
}

/* ---------------------------------------------------------------------------------------------
 * JSON output (also the --plan file of --verify)
 */

static cJSON *plan_json(const struct ctx *c, const struct mb_plan *p)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "schema", 1);
    cJSON_AddStringToObject(o, "gpu_model", c->model->name);
    cJSON_AddNumberToObject(o, "count", p->count);
    cJSON_AddStringToObject(o, "objective", mb_plan_objective_str(p->objective));
    cJSON_AddStringToObject(o, "method", p->exact ? "exact" : "heuristic");
    cJSON_AddNumberToObject(o, "search_nodes", (double)p->nodes);
    cJSON_AddStringToObject(o, "profiles", c->sources);
    cJSON_AddItemToObject(o, "idle_power_w", num_or_null(p->idle_power_w));
    cJSON_AddNumberToObject(o, "idle_power_rows", (double)p->idle_rows);
    cJSON *gpus = cJSON_AddArrayToObject(o, "gpus");
    for (unsigned g = 0; g < p->count; g++) {
        cJSON *go = cJSON_CreateObject();
        cJSON_AddNumberToObject(go, "gpu", g);
        cJSON_AddBoolToObject(go, "mig", p->gpus[g].mig);
        cJSON *insts = cJSON_AddArrayToObject(go, "instances");
        size_t ninst = p->gpus[g].mig ? p->gpus[g].layout.n : 1;
        for (size_t i = 0; i < ninst; i++) {
            cJSON *io = cJSON_CreateObject();
            cJSON_AddNumberToObject(io, "instance", (double)i);
            if (p->gpus[g].mig) {
                const struct mb_layout_item *it = &p->gpus[g].layout.items[i];
                cJSON_AddStringToObject(io, "profile", c->model->profiles[it->profile].name);
                cJSON *pl = cJSON_AddObjectToObject(io, "placement");
                cJSON_AddNumberToObject(pl, "start", it->placement.start);
                cJSON_AddNumberToObject(pl, "size", it->placement.size);
            } else {
                cJSON_AddStringToObject(io, "profile", MB_PLAN_FULL);
                cJSON_AddNullToObject(io, "placement");
            }
            cJSON *q = cJSON_AddArrayToObject(io, "queue");
            for (unsigned k = 0;; k++) {
                size_t hit = SIZE_MAX;
                for (size_t j = 0; j < p->n_slots && hit == SIZE_MAX; j++)
                    if (p->slots[j].gpu == g && p->slots[j].instance == i && p->slots[j].order == k)
                        hit = j;
                if (hit == SIZE_MAX)
                    break;
                cJSON_AddItemToArray(q, cJSON_CreateString(c->js->jobs[hit].name));
            }
            if (cJSON_GetArraySize(q) == 0 && !p->gpus[g].mig) {
                cJSON_Delete(io);
                continue;
            }
            cJSON_AddItemToArray(insts, io);
        }
        cJSON_AddItemToArray(gpus, go);
    }
    cJSON *jobs = cJSON_AddArrayToObject(o, "jobs");
    bool cont = p->objective == MB_PLAN_THROUGHPUT;
    for (size_t j = 0; j < p->n_slots; j++) {
        const struct mb_plan_slot *s = &p->slots[j];
        const struct mb_plan_profile *r = slot_row(c, s);
        const struct mb_plan_job *job = &c->js->jobs[s->job];
        cJSON *jo = cJSON_CreateObject();
        cJSON_AddStringToObject(jo, "name", job->name);
        cJSON_AddStringToObject(jo, "workload", job->workload);
        if (cont)
            cJSON_AddStringToObject(jo, "work", "continuous");
        else
            cJSON_AddNumberToObject(jo, "work", job->work);
        cJSON_AddStringToObject(jo, "unit", r->unit);
        cJSON_AddNumberToObject(jo, "gpu", s->gpu);
        cJSON_AddNumberToObject(jo, "instance", s->instance);
        cJSON_AddStringToObject(jo, "partition", r->partition);
        cJSON_AddNumberToObject(jo, "compute_slices", slot_slices(c, p, s));
        cJSON_AddNumberToObject(jo, "order", s->order);
        cJSON_AddItemToObject(jo, "start_s", num_or_null(s->start_s));
        cJSON_AddItemToObject(jo, "time_s", num_or_null(s->time_s));
        cJSON_AddItemToObject(jo, "end_s", num_or_null(s->start_s + s->time_s));
        cJSON_AddNumberToObject(jo, "throughput", s->throughput);
        cJSON_AddItemToObject(jo, "normalised", num_or_null(s->normalised));
        cJSON_AddNumberToObject(jo, "power_w", r->power_w);
        cJSON_AddItemToObject(jo, "dynamic_j", num_or_null(s->dynamic_j));
        double e = cont ? NAN : slot_energy(c, p, s);
        cJSON_AddItemToObject(jo, "energy_j", num_or_null(e));
        cJSON_AddItemToObject(jo, "energy_per_unit_j", num_or_null(cont ? NAN : e / job->work));
        cJSON_AddItemToObject(jo, "peak_mem_mib", num_or_null(r->peak_mem_mib));
        cJSON_AddStringToObject(jo, "source", r->source);
        cJSON_AddBoolToObject(jo, "proxy", r->proxy);
        cJSON_AddBoolToObject(jo, "emulated", r->emulated);
        cJSON_AddItemToArray(jobs, jo);
    }
    cJSON *pr = cJSON_AddObjectToObject(o, "predicted");
    cJSON *ba = cJSON_AddObjectToObject(o, "baseline");
    if (cont) {
        cJSON_AddNumberToObject(pr, "system_throughput", p->system_throughput);
        cJSON_AddNumberToObject(pr, "power_w", p->power_w);
        cJSON_AddNumberToObject(ba, "system_throughput",
                                p->count < p->n_slots ? p->count : (double)p->n_slots);
    } else {
        cJSON_AddNumberToObject(pr, "makespan_s", p->makespan_s);
        cJSON_AddNumberToObject(pr, "energy_j", p->energy_j);
        cJSON_AddNumberToObject(pr, "idle_energy_j", p->idle_energy_j);
        cJSON_AddNumberToObject(pr, "dynamic_energy_j", p->dynamic_energy_j);
        const char *u = common_unit(c, p);
        cJSON_AddItemToObject(pr, "energy_per_unit_j",
                              num_or_null(u ? p->energy_j / total_work(c) : NAN));
        if (u)
            cJSON_AddStringToObject(pr, "unit", u);
        else
            cJSON_AddNullToObject(pr, "unit");
        cJSON_AddItemToObject(ba, "makespan_s", num_or_null(p->base_makespan_s));
        cJSON_AddItemToObject(ba, "energy_j", num_or_null(p->base_energy_j));
        cJSON *gain = cJSON_AddObjectToObject(o, "gain");
        cJSON_AddItemToObject(gain, "energy_saving_pct",
                              num_or_null(pct_less(p->base_energy_j, p->energy_j)));
        cJSON_AddItemToObject(gain, "makespan_reduction_pct",
                              num_or_null(pct_less(p->base_makespan_s, p->makespan_s)));
    }
    cJSON *bo = cJSON_AddObjectToObject(o, "bound");
    cJSON_AddItemToObject(bo, "makespan_s", num_or_null(p->exact ? NAN : p->bound_makespan_s));
    cJSON_AddItemToObject(bo, "energy_j", num_or_null(p->exact ? NAN : p->bound_energy_j));
    cJSON_AddItemToObject(bo, "system_throughput",
                          num_or_null(p->exact ? NAN : p->bound_throughput));
    cJSON_AddNumberToObject(bo, "gap_pct", p->exact ? 0 : p->gap_pct);
    cJSON_AddStringToObject(o, "timeslice_mps", "not profiled");
    return o;
}

/* ---------------------------------------------------------------------------------------------
 * Emitted files: written whole (mb_cli_outfile), so a failure leaves nothing half-done
 */

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

static int emit_mig_parted(const struct ctx *c, const struct mb_plan *p, const char *path)
{
    struct mb_cli_outfile out;
    if (mb_cli_outfile_open(&out, NAME, path) != MB_EXIT_OK)
        return MB_EXIT_FAIL;
    FILE *f = out.f;
    fprintf(f,
            "# Written by migbench plan for %u x %s; apply with `migbench mig apply` or\n"
            "# nvidia-mig-parted apply -f FILE -c migbench-plan\n",
            p->count, c->model->name);
    fprintf(f, "version: v1\nmig-configs:\n  migbench-plan:\n");
    bool *done = calloc(p->count, sizeof(bool));
    if (!done) {
        mb_cli_outfile_abort(&out);
        mb_cli_error(NAME, "out of memory");
        return MB_EXIT_FAIL;
    }
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
    return mb_cli_outfile_commit(&out, NAME);
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
 * Calls fn(cpath, root, arg) for every DIR/<run>/<rep>/cell.json, root being its JSON or NULL when
 * it is not valid JSON (unreadable cells are passed over); fn keeps nothing of root. Stops at the
 * first fn that returns non-zero and returns that; -1 when dir cannot be opened (errno says why).
 */
static int each_cell(const char *dir, int (*fn)(const char *cpath, cJSON *root, void *arg),
                     void *arg)
{
    DIR *top = opendir(dir);
    if (!top)
        return -1;
    int rc = 0;
    struct dirent *run;
    while (rc == 0 && (run = readdir(top))) {
        if (run->d_name[0] == '.')
            continue;
        char rpath[PATH_MAX_LEN];
        snprintf(rpath, sizeof(rpath), "%s/%s", dir, run->d_name);
        DIR *rd = opendir(rpath);
        if (!rd)
            continue;
        struct dirent *rep;
        while (rc == 0 && (rep = readdir(rd))) {
            if (rep->d_name[0] == '.')
                continue;
            char cpath[PATH_MAX_LEN];
            int w = snprintf(cpath, sizeof(cpath), "%s/%s/cell.json", rpath, rep->d_name);
            if (w < 0 || (size_t)w >= sizeof(cpath))
                continue;
            cJSON *root = NULL;
            int st = mb_results_read_json(cpath, JSON_MAX_BYTES, &root, NULL);
            if (st != MB_OK && st != MB_EPARSE)
                continue;
            rc = fn(cpath, root, arg);
            cJSON_Delete(root);
        }
        closedir(rd);
    }
    closedir(top);
    return rc;
}

struct argv_search {
    const char *workload;
    cJSON *argv;
};

static int find_argv(const char *cpath, cJSON *root, void *arg)
{
    (void)cpath;
    struct argv_search *q = arg;
    cJSON *jobs = cJSON_GetObjectItemCaseSensitive(root, "jobs");
    cJSON *job;
    cJSON_ArrayForEach(job, jobs)
    {
        cJSON *wl = cJSON_GetObjectItemCaseSensitive(job, "workload");
        cJSON *argv = cJSON_GetObjectItemCaseSensitive(job, "argv");
        if (cJSON_IsString(wl) && strcmp(wl->valuestring, q->workload) == 0 &&
            cJSON_IsArray(argv) && cJSON_GetArraySize(argv) > 0) {
            q->argv = cJSON_DetachItemViaPointer(job, argv);
            return 1;
        }
    }
    return 0;
}

/*
 * A workload's argv as a results directory recorded it (cell.json jobs[].argv of a cell that ran
 * the workload). Returns a cJSON array owned by the caller (cJSON_Delete), or NULL.
 */
static cJSON *results_argv(const char *const *dirs, size_t n_dirs, const char *workload)
{
    struct argv_search q = {workload, NULL};
    for (size_t d = 0; d < n_dirs && !q.argv; d++)
        each_cell(dirs[d], find_argv, &q);
    return q.argv;
}

static int emit_experiment(const struct ctx *c, const struct mb_plan *p, const struct opts *o,
                           const char *path)
{
    const struct mb_plan_jobset *js = c->js;
    if (p->objective == MB_PLAN_THROUGHPUT) {
        mb_cli_error(NAME, "--emit-experiment: continuous jobs have no finite plan to run");
        return MB_EXIT_USAGE;
    }
    /* Every workload needs a command before anything is written. */
    for (size_t j = 0; j < js->n_jobs; j++) {
        const char *w = js->jobs[j].workload;
        if (find_workload(js, w))
            continue;
        cJSON *argv = results_argv(o->results, o->n_results, w);
        if (argv) {
            cJSON_Delete(argv);
            continue;
        }
        mb_cli_error(NAME,
                     "--emit-experiment: no command for workload '%s': add it under "
                     "'workloads:' in %s%s",
                     w, o->jobs, o->n_results ? " (the results directories do not record it)" : "");
        return MB_EXIT_USAGE;
    }
    struct mb_cli_outfile out;
    if (mb_cli_outfile_open(&out, NAME, path) != MB_EXIT_OK)
        return MB_EXIT_FAIL;
    FILE *f = out.f;
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
    fprintf(f, "workloads:\n");
    /* One workload entry per job, named after the job, so results map back to the plan. */
    for (size_t j = 0; j < js->n_jobs; j++) {
        const struct mb_plan_job *job = &js->jobs[j];
        const struct mb_plan_workload *w = find_workload(js, job->workload);
        const struct mb_plan_profile *r = slot_row(c, &p->slots[j]);
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
            cJSON *argv = results_argv(o->results, o->n_results, job->workload);
            cJSON *a;
            bool first = true;
            cJSON_ArrayForEach(a, argv)
            {
                if (!first)
                    fputs(", ", f);
                first = false;
                yq(f, cJSON_IsString(a) ? a->valuestring : "");
            }
            cJSON_Delete(argv);
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
            fprintf(f, "]}\n");
        }
    }
    fprintf(f, "measure: {warmup: 20s, duration: 120s, repetitions: 3, sample_interval: 100ms, "
               "idle: 5s}\n");
    return mb_cli_outfile_commit(&out, NAME);
}

/* ---------------------------------------------------------------------------------------------
 * --verify: measured against predicted
 */

struct measured {
    double thr_sum, dyn_w_sum, idle_sum;
    size_t n, n_idle, n_power;
};

static double jnum(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

static const char *jstr(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

struct verify_walk {
    const cJSON *pjobs;
    struct measured *m;
    const struct mb_gpu_model *model;
    double plan_idle;
    size_t cells;
};

/* One cell: per plan job, its measured throughput and its share of dynamic power. */
static int add_cell(const char *cpath, cJSON *root, void *arg)
{
    struct verify_walk *q = arg;
    if (!root) {
        mb_cli_error(NAME, "--verify %s: not valid JSON", cpath);
        return MB_EXIT_USAGE;
    }
    const char *status = jstr(root, "status");
    cJSON *jobs = cJSON_GetObjectItemCaseSensitive(root, "jobs");
    cJSON *energy = cJSON_GetObjectItemCaseSensitive(root, "energy");
    if (!status || strcmp(status, "ok") != 0 || !cJSON_IsArray(jobs))
        return 0;
    q->cells++;
    double mean_w = jnum(energy, "mean_power_w");
    double idle_w = jnum(energy, "idle_power_w");
    double idle = isfinite(idle_w) ? idle_w : q->plan_idle;
    /* The cell's dynamic power is split by compute slices (MIG) or equally. */
    double total_slices = 0;
    cJSON *job;
    cJSON_ArrayForEach(job, jobs)
    {
        const cJSON *inst = cJSON_GetObjectItemCaseSensitive(job, "instance");
        const char *prof = jstr(inst, "profile");
        const struct mb_gi_profile *gp = prof ? mb_model_profile(q->model, prof) : NULL;
        total_slices += gp ? gp->compute_slices : 1;
    }
    cJSON_ArrayForEach(job, jobs)
    {
        const char *name = jstr(job, "name");
        const char *wl = jstr(job, "workload");
        cJSON *thr = cJSON_GetObjectItemCaseSensitive(job, "throughput");
        double mean = jnum(thr, "mean");
        int k = 0;
        const cJSON *pj;
        int hit = -1;
        cJSON_ArrayForEach(pj, q->pjobs)
        {
            const char *pn = jstr(pj, "name");
            if (pn && ((wl && strcmp(pn, wl) == 0) || (name && strcmp(pn, name) == 0)))
                hit = k;
            k++;
        }
        if (hit < 0 || !isfinite(mean))
            continue;
        const cJSON *inst = cJSON_GetObjectItemCaseSensitive(job, "instance");
        const char *prof = jstr(inst, "profile");
        const struct mb_gi_profile *gp = prof ? mb_model_profile(q->model, prof) : NULL;
        double share = (gp ? gp->compute_slices : 1) / total_slices;
        const char *mode = jstr(root, "mode");
        if (mode && strcmp(mode, "exclusive") == 0)
            share = 1; /* one job at a time: the cell power is that job's */
        struct measured *x = &q->m[hit];
        x->thr_sum += mean;
        x->n++;
        if (isfinite(mean_w)) {
            x->dyn_w_sum += (mean_w - idle) * share;
            x->n_power++;
        }
        if (isfinite(idle_w)) {
            x->idle_sum += idle_w;
            x->n_idle++;
        }
    }
    return 0;
}

/* Reads every ok cell of dir into m (one entry per plan job); *cells counts them. */
static int read_measurements(const char *dir, const cJSON *pjobs, struct measured *m,
                             const struct mb_gpu_model *model, double plan_idle, size_t *cells)
{
    struct verify_walk q = {pjobs, m, model, plan_idle, 0};
    int rc = each_cell(dir, add_cell, &q);
    if (rc < 0) {
        mb_cli_error(NAME, "--verify %s: %s", dir, strerror(errno));
        return MB_EXIT_USAGE;
    }
    *cells = q.cells;
    return rc;
}

static int run_verify(const struct opts *o, const struct mb_catalog *cat)
{
    struct mb_error rerr;
    mb_error_clear(&rerr);
    char *text = NULL;
    if (mb_file_read(o->plan, JSON_MAX_BYTES, &text, NULL, &rerr) != MB_OK) {
        mb_cli_error(NAME, "--plan %s", rerr.msg);
        return MB_EXIT_USAGE;
    }
    cJSON *plan = NULL;
    if (mb_json_parse(text, strlen(text), o->plan, &plan, &rerr) != MB_OK) {
        free(text);
        mb_cli_error(NAME, "--plan %s", rerr.msg);
        return MB_EXIT_USAGE;
    }
    free(text);
    int rc = MB_EXIT_USAGE;
    struct measured *m = NULL;
    const cJSON *pjobs = cJSON_GetObjectItemCaseSensitive(plan, "jobs");
    const char *model_name = jstr(plan, "gpu_model");
    const cJSON *pred = cJSON_GetObjectItemCaseSensitive(plan, "predicted");
    const struct mb_gpu_model *model = NULL;
    struct mb_error err;
    if (!plan || !cJSON_IsArray(pjobs) || !model_name || !cJSON_IsObject(pred)) {
        mb_cli_error(NAME, "--plan %s: not a plan written by 'migbench plan --json'", o->plan);
        goto done;
    }
    if (mb_catalog_find(cat, model_name, &model, &err) != MB_OK) {
        mb_cli_error(NAME, "--plan %s: field 'gpu_model': %s", o->plan, err.msg);
        goto done;
    }
    if (!isfinite(jnum(pred, "makespan_s"))) {
        mb_cli_error(NAME, "--plan %s: --verify checks finite job sets only", o->plan);
        goto done;
    }
    size_t nj = (size_t)cJSON_GetArraySize(pjobs);
    m = calloc(nj ? nj : 1, sizeof(*m));
    if (!m) {
        rc = MB_EXIT_FAIL;
        goto done;
    }
    double idle = jnum(plan, "idle_power_w");
    double count = jnum(plan, "count");
    size_t cells = 0;
    rc = read_measurements(o->verify, pjobs, m, model, idle, &cells);
    if (rc != MB_EXIT_OK)
        goto done;
    if (cells == 0) {
        mb_cli_error(NAME, "--verify %s: no successful cell.json found", o->verify);
        rc = MB_EXIT_USAGE;
        goto done;
    }
    /* Measured idle power: the cells' baselines where they have one, else the plan's. */
    double isum = 0;
    size_t in = 0;
    for (size_t j = 0; j < nj; j++) {
        isum += m[j].idle_sum;
        in += m[j].n_idle;
    }
    double idle_m = in ? isum / (double)in : idle;
    /* Replay each instance queue with measured times. */
    double *end = calloc(nj ? nj : 1, sizeof(double));
    double *tm = calloc(nj ? nj : 1, sizeof(double));
    double *dm = calloc(nj ? nj : 1, sizeof(double));
    if (!end || !tm || !dm) {
        free(end);
        free(tm);
        free(dm);
        rc = MB_EXIT_FAIL;
        goto done;
    }
    bool complete = true;
    size_t k = 0;
    const cJSON *pj;
    cJSON_ArrayForEach(pj, pjobs)
    {
        double thr = m[k].n ? m[k].thr_sum / (double)m[k].n : NAN;
        double dyn_w = m[k].n_power ? m[k].dyn_w_sum / (double)m[k].n_power : NAN;
        tm[k] = jnum(pj, "work") / thr;
        dm[k] = dyn_w * tm[k];
        if (!isfinite(tm[k]) || !isfinite(dm[k]))
            complete = false;
        k++;
    }
    double mk = 0;
    k = 0;
    cJSON_ArrayForEach(pj, pjobs)
    {
        /* The end of job k is the sum of measured times of its queue up to and including it. */
        double t = 0;
        size_t q = 0;
        const cJSON *other;
        cJSON_ArrayForEach(other, pjobs)
        {
            if (jnum(other, "gpu") == jnum(pj, "gpu") &&
                jnum(other, "instance") == jnum(pj, "instance") &&
                jnum(other, "order") <= jnum(pj, "order"))
                t += tm[q];
            q++;
        }
        end[k] = t;
        mk = fmax(mk, t);
        k++;
    }
    double dsum = 0;
    for (size_t j = 0; j < nj; j++)
        dsum += dm[j];
    double em = count * idle_m * mk + dsum;
    if (o->json) {
        cJSON *out = cJSON_CreateObject();
        cJSON_AddStringToObject(out, "plan", o->plan);
        cJSON_AddStringToObject(out, "results", o->verify);
        cJSON_AddNumberToObject(out, "cells", (double)cells);
        cJSON_AddItemToObject(out, "idle_power_w", num_or_null(idle_m));
        cJSON *ja = cJSON_AddArrayToObject(out, "jobs");
        k = 0;
        cJSON_ArrayForEach(pj, pjobs)
        {
            cJSON *jo = cJSON_CreateObject();
            double tp = jnum(pj, "throughput");
            double thr = m[k].n ? m[k].thr_sum / (double)m[k].n : NAN;
            cJSON_AddStringToObject(jo, "name", jstr(pj, "name") ? jstr(pj, "name") : "");
            cJSON_AddNumberToObject(jo, "predicted_throughput", tp);
            cJSON_AddItemToObject(jo, "measured_throughput", num_or_null(thr));
            cJSON_AddItemToObject(jo, "throughput_error_pct", num_or_null((tp - thr) / thr * 100));
            cJSON_AddItemToObject(jo, "predicted_time_s", num_or_null(jnum(pj, "time_s")));
            cJSON_AddItemToObject(jo, "measured_time_s", num_or_null(tm[k]));
            cJSON_AddItemToObject(jo, "predicted_dynamic_j", num_or_null(jnum(pj, "dynamic_j")));
            cJSON_AddItemToObject(jo, "measured_dynamic_j", num_or_null(dm[k]));
            cJSON_AddNumberToObject(jo, "cells", (double)m[k].n);
            cJSON_AddItemToArray(ja, jo);
            k++;
        }
        cJSON *tot = cJSON_AddObjectToObject(out, "total");
        double pmk = jnum(pred, "makespan_s"), pe = jnum(pred, "energy_j");
        cJSON_AddNumberToObject(tot, "predicted_makespan_s", pmk);
        cJSON_AddItemToObject(tot, "measured_makespan_s", num_or_null(complete ? mk : NAN));
        cJSON_AddItemToObject(tot, "makespan_error_pct",
                              num_or_null(complete ? (pmk - mk) / mk * 100 : NAN));
        cJSON_AddNumberToObject(tot, "predicted_energy_j", pe);
        cJSON_AddItemToObject(tot, "measured_energy_j", num_or_null(complete ? em : NAN));
        cJSON_AddItemToObject(tot, "energy_error_pct",
                              num_or_null(complete ? (pe - em) / em * 100 : NAN));
        char *s = cJSON_Print(out);
        if (s)
            printf("%s\n", s);
        free(s);
        cJSON_Delete(out);
    } else {
        char a[48], b[48], d[48];
        printf("verify: plan %s against %s (%zu successful cells; idle power %.1f W%s)\n", o->plan,
               o->verify, cells, idle_m,
               in ? " measured" : " from the plan: the cells have no idle baseline");
        printf("  %-16s %12s %12s %8s %12s %12s\n", "job", "pred units/s", "meas units/s", "error",
               "pred time", "meas time");
        k = 0;
        cJSON_ArrayForEach(pj, pjobs)
        {
            double tp = jnum(pj, "throughput");
            double thr = m[k].n ? m[k].thr_sum / (double)m[k].n : NAN;
            char e[24];
            printf("  %-16s %12.6g %12s %8s %12s %12s\n", jstr(pj, "name") ? jstr(pj, "name") : "?",
                   tp, fmt_num(thr, 6, a, sizeof(a)),
                   fmt_num((tp - thr) / thr * 100, -1, e, sizeof(e)),
                   fmt_time(jnum(pj, "time_s"), b, sizeof(b)), fmt_time(tm[k], d, sizeof(d)));
            k++;
        }
        double pmk = jnum(pred, "makespan_s"), pe = jnum(pred, "energy_j");
        printf("makespan: predicted %s, measured %s", fmt_time(pmk, a, sizeof(a)),
               fmt_time(complete ? mk : NAN, b, sizeof(b)));
        if (complete)
            printf(" (prediction error %+.1f%%)", (pmk - mk) / mk * 100);
        printf("\nenergy: predicted %s, measured %s", fmt_energy(pe, a, sizeof(a)),
               fmt_energy(complete ? em : NAN, b, sizeof(b)));
        if (complete)
            printf(" (prediction error %+.1f%%)", (pe - em) / em * 100);
        printf("\n");
        if (!complete)
            printf("note: some jobs have no measured throughput or power in %s; totals n/a\n",
                   o->verify);
        printf("method: measured time = work / measured throughput; each cell's power above idle "
               "is split among its jobs by compute slices; queues replayed as planned\n");
    }
    free(end);
    free(tm);
    free(dm);
    rc = MB_EXIT_OK;
done:
    free(m);
    cJSON_Delete(plan);
    return rc;
}

/* ---------------------------------------------------------------------------------------------
 * Command
 */

static const struct option long_opts[] = {
    {"jobs", required_argument, NULL, 'J'},
    {"profiles", required_argument, NULL, 'P'},
    {"results", required_argument, NULL, 'R'},
    {"catalog", required_argument, NULL, 'C'},
    {"gpu", required_argument, NULL, 'g'},
    {"count", required_argument, NULL, 'n'},
    {"objective", required_argument, NULL, 'o'},
    {"makespan-cap", required_argument, NULL, 'm'},
    {"energy-cap", required_argument, NULL, 'e'},
    {"pareto", no_argument, NULL, 'p'},
    {"json", no_argument, NULL, 'j'},
    {"heuristic", no_argument, NULL, 'H'},
    {"exact-max", required_argument, NULL, 'x'},
    {"no-full", no_argument, NULL, 'F'},
    {"emit-mig-parted", required_argument, NULL, 'M'},
    {"emit-experiment", required_argument, NULL, 'E'},
    {"verify", required_argument, NULL, 'V'},
    {"plan", required_argument, NULL, 'L'},
    {"power-limits", required_argument, NULL, 'W'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/*
 * --power-limits: "all" (every limit the profiles carry) or a comma-separated list of "default"
 * and watts ("420W" or "420"). Percentages need the GPU's default limit, which profiles do not
 * carry: they are refused with a hint.
 */
static int parse_power_limits(const char *arg, const struct mb_plan_profiles *profiles,
                              double *caps, size_t *n)
{
    *n = 0;
    if (strcmp(arg, "all") == 0) {
        for (size_t i = 0; i < mb_plan_profiles_count(profiles); i++) {
            double w = mb_plan_profiles_get(profiles, i)->power_limit_w;
            w = w > 0 ? w : 0;
            bool seen = false;
            for (size_t k = 0; k < *n; k++)
                seen = seen || fabs(caps[k] - w) < 0.5;
            if (!seen && *n < MB_PLAN_MAX_CAPS)
                caps[(*n)++] = w;
        }
        return MB_EXIT_OK;
    }
    char buf[512];
    snprintf(buf, sizeof(buf), "%s", arg);
    char *save = NULL;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        int def;
        double pct, w;
        struct mb_error e;
        if (*n == MB_PLAN_MAX_CAPS) {
            mb_cli_usage_error(&mb_cmd_plan, "--power-limits: at most %d limits", MB_PLAN_MAX_CAPS);
            return MB_EXIT_USAGE;
        }
        if (mb_powercap_parse(t, &def, &pct, &w, &e) != MB_OK) {
            mb_cli_usage_error(&mb_cmd_plan, "--power-limits: %s", e.msg);
            return MB_EXIT_USAGE;
        }
        if (pct > 0) {
            mb_cli_usage_error(&mb_cmd_plan,
                               "--power-limits: '%s': give watts (profiles record the limit in "
                               "force, in W) or 'all'",
                               t);
            return MB_EXIT_USAGE;
        }
        caps[(*n)++] = def ? 0 : w;
    }
    if (*n == 0) {
        mb_cli_usage_error(&mb_cmd_plan, "--power-limits: empty");
        return MB_EXIT_USAGE;
    }
    return MB_EXIT_OK;
}

static void print_caps(const struct mb_plan *p, const struct mb_plan_cap_result *res, size_t n)
{
    char a[48], b[48], l[32];
    printf("\npower limit (one per GPU, chosen with the layout):\n");
    printf("  %-10s %14s %14s %s\n", "limit", "energy", "makespan", "");
    for (size_t i = 0; i < n; i++) {
        const struct mb_plan_cap_result *r = &res[i];
        if (isnan(r->power_limit_w))
            snprintf(l, sizeof(l), "default");
        else
            snprintf(l, sizeof(l), "%g W", r->power_limit_w);
        bool chosen = (isnan(r->power_limit_w) && isnan(p->power_limit_w)) ||
                      r->power_limit_w == p->power_limit_w;
        if (r->status != MB_OK)
            printf("  %-10s %14s %14s  (%s)\n", l, "-", "-", mb_status_str(r->status));
        else
            printf("  %-10s %14s %14s%s\n", l, fmt_energy(r->energy_j, a, sizeof(a)),
                   fmt_time(r->makespan_s, b, sizeof(b)), chosen ? "  <- chosen" : "");
    }
}

static void add_caps_json(cJSON *j, const struct mb_plan *p, const struct mb_plan_cap_result *res,
                          size_t n)
{
    cJSON_AddItemToObject(j, "power_limit_w", num_or_null(p->power_limit_w));
    cJSON *arr = cJSON_AddArrayToObject(j, "power_limits");
    for (size_t i = 0; i < n; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemToObject(o, "power_limit_w", num_or_null(res[i].power_limit_w));
        cJSON_AddStringToObject(o, "status", res[i].status == MB_OK ? "ok" : "no plan");
        cJSON_AddItemToObject(o, "energy_j", num_or_null(res[i].energy_j));
        cJSON_AddItemToObject(o, "makespan_s", num_or_null(res[i].makespan_s));
        cJSON_AddItemToObject(o, "system_throughput", num_or_null(res[i].system_throughput));
        cJSON_AddItemToArray(arr, o);
    }
}

static bool parse_pos(const char *s, double *out)
{
    double v;
    if (mb_num_parse(s, &v, NULL) != MB_OK || v <= 0)
        return false;
    *out = v;
    return true;
}

static int add_source(const char **v, size_t *n, const char *what, const char *arg)
{
    if (*n == SOURCES_MAX)
        return mb_cli_usage_error(&mb_cmd_plan, "at most %d %s", SOURCES_MAX, what);
    v[(*n)++] = arg;
    return MB_EXIT_OK;
}

static int plan_run(int argc, char **argv)
{
    struct opts o;
    memset(&o, 0, sizeof(o));
    o.makespan_cap = o.energy_cap = NAN;
    optind = 0;
    opterr = 0;
    int ch, rc;
    double v;
    while ((ch = getopt_long(argc, argv, ":h", long_opts, NULL)) != -1) {
        switch (ch) {
        case 'J':
            o.jobs = optarg;
            break;
        case 'P':
            if ((rc = add_source(o.profiles, &o.n_profiles, "--profiles files", optarg)))
                return rc;
            break;
        case 'R':
            if ((rc = add_source(o.results, &o.n_results, "--results directories", optarg)))
                return rc;
            break;
        case 'C':
            if ((rc = add_source(o.catalogs, &o.n_catalogs, "--catalog files", optarg)))
                return rc;
            break;
        case 'g':
            o.gpu = optarg;
            break;
        case 'n':
            if (!parse_pos(optarg, &v) || v != floor(v) || v > MB_PLAN_MAX_GPUS)
                return mb_cli_usage_error(&mb_cmd_plan, "--count: '%s' is not 1 to %d", optarg,
                                          MB_PLAN_MAX_GPUS);
            o.count = (long)v;
            break;
        case 'o':
            o.objective = optarg;
            break;
        case 'm':
            if (!parse_pos(optarg, &o.makespan_cap))
                return mb_cli_usage_error(&mb_cmd_plan, "--makespan-cap: '%s' is not seconds > 0",
                                          optarg);
            break;
        case 'e':
            if (!parse_pos(optarg, &o.energy_cap))
                return mb_cli_usage_error(&mb_cmd_plan, "--energy-cap: '%s' is not joules > 0",
                                          optarg);
            break;
        case 'p':
            o.pareto = true;
            break;
        case 'j':
            o.json = true;
            break;
        case 'H':
            o.heuristic = true;
            break;
        case 'x':
            if (!parse_pos(optarg, &v) || v != floor(v) || v > 16)
                return mb_cli_usage_error(&mb_cmd_plan, "--exact-max: '%s' is not 1 to 16", optarg);
            o.exact_max = (long)v;
            break;
        case 'F':
            o.no_full = true;
            break;
        case 'M':
            o.emit_mig_parted = optarg;
            break;
        case 'E':
            o.emit_experiment = optarg;
            break;
        case 'V':
            o.verify = optarg;
            break;
        case 'W':
            o.power_limits = optarg;
            break;
        case 'L':
            o.plan = optarg;
            break;
        case 'h':
            mb_cli_print_help(&mb_cmd_plan, stdout);
            return MB_EXIT_OK;
        case ':':
            return mb_cli_usage_error(&mb_cmd_plan, "option '%s' needs a value", argv[optind - 1]);
        default:
            return mb_cli_usage_error(&mb_cmd_plan, "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return mb_cli_usage_error(&mb_cmd_plan, "unexpected argument '%s'", argv[optind]);
    if (o.verify || o.plan) {
        if (!o.verify || !o.plan)
            return mb_cli_usage_error(&mb_cmd_plan, "--verify RESULTS_DIR needs --plan PLAN.json");
        if (o.jobs || o.n_profiles || o.n_results || o.pareto || o.emit_experiment ||
            o.emit_mig_parted)
            return mb_cli_usage_error(&mb_cmd_plan, "--verify takes only --plan, --json and "
                                                    "--catalog");
    } else {
        if (!o.jobs)
            return mb_cli_usage_error(&mb_cmd_plan, "--jobs JOBS.yaml is required");
        if (!o.n_profiles && !o.n_results)
            return mb_cli_usage_error(&mb_cmd_plan,
                                      "give --profiles FILE.csv or --results DIR (or both)");
        if (o.pareto && (o.emit_experiment || o.emit_mig_parted))
            return mb_cli_usage_error(&mb_cmd_plan,
                                      "--pareto shows a front; emit files from one plan");
    }

    struct mb_catalog *cat = NULL;
    struct mb_plan_profiles *profiles = NULL;
    struct mb_plan_jobset *js = NULL;
    struct mb_plan *plan = NULL;
    struct mb_plan *front[PARETO_MAX];
    size_t n_front = 0;
    struct mb_error err;
    int exit_code = MB_EXIT_OK;
    char sources[1024] = "";
    if (mb_catalog_create(&cat, &err) != MB_OK) {
        mb_cli_error(NAME, "%s", err.msg);
        return MB_EXIT_FAIL;
    }
    for (size_t i = 0; i < o.n_catalogs; i++) {
        rc = mb_catalog_load_file(cat, o.catalogs[i], &err);
        if (rc) {
            mb_cli_error(NAME, "--catalog %s", err.msg);
            exit_code = mb_cli_exit_for(rc == MB_EIO ? MB_EINVAL : rc);
            goto done;
        }
    }
    if (o.verify) {
        exit_code = run_verify(&o, cat);
        goto done;
    }
    rc = mb_plan_jobset_load(o.jobs, &js, &err);
    if (rc) {
        mb_cli_error(NAME, "%s", err.msg);
        exit_code = rc == MB_ENOMEM ? MB_EXIT_FAIL : MB_EXIT_USAGE;
        goto done;
    }
    const char *gpu = o.gpu ? o.gpu : js->gpu[0] ? js->gpu : NULL;
    if (!gpu) {
        exit_code = mb_cli_usage_error(&mb_cmd_plan, "no GPU model: give --gpu MODEL or 'gpu:' "
                                                     "in the jobs file");
        goto done;
    }
    const struct mb_gpu_model *model = NULL;
    if ((rc = mb_catalog_find(cat, gpu, &model, &err))) {
        mb_cli_error(NAME, "%s: %s", o.gpu ? "--gpu" : o.jobs, err.msg);
        exit_code = MB_EXIT_USAGE;
        goto done;
    }
    if ((rc = mb_plan_profiles_create(&profiles, &err))) {
        mb_cli_error(NAME, "%s", err.msg);
        exit_code = MB_EXIT_FAIL;
        goto done;
    }
    size_t sl = 0;
    for (size_t i = 0; i < o.n_profiles; i++) {
        if ((rc = mb_plan_profiles_load_csv(profiles, cat, o.profiles[i], &err))) {
            mb_cli_error(NAME, "%s", err.msg);
            exit_code = rc == MB_ENOMEM ? MB_EXIT_FAIL : MB_EXIT_USAGE;
            goto done;
        }
        sl += (size_t)snprintf(sources + sl, sizeof(sources) - sl, "%s%s", sl ? ", " : "",
                               o.profiles[i]);
        if (sl >= sizeof(sources))
            sl = sizeof(sources) - 1;
    }
    for (size_t i = 0; i < o.n_results; i++) {
        if ((rc = mb_plan_profiles_load_results(profiles, cat, o.results[i], &err))) {
            mb_cli_error(NAME, "%s", err.msg);
            exit_code = rc == MB_ENOMEM ? MB_EXIT_FAIL : MB_EXIT_USAGE;
            goto done;
        }
        sl += (size_t)snprintf(sources + sl, sizeof(sources) - sl, "%s%s", sl ? ", " : "",
                               o.results[i]);
        if (sl >= sizeof(sources))
            sl = sizeof(sources) - 1;
    }
    struct mb_plan_options po;
    memset(&po, 0, sizeof(po));
    po.objective = js->has_objective ? js->objective : MB_PLAN_ENERGY;
    if (o.objective) {
        if (strcmp(o.objective, "energy") == 0)
            po.objective = MB_PLAN_ENERGY;
        else if (strcmp(o.objective, "makespan") == 0)
            po.objective = MB_PLAN_MAKESPAN;
        else if (strcmp(o.objective, "throughput") == 0)
            po.objective = MB_PLAN_THROUGHPUT;
        else {
            exit_code = mb_cli_usage_error(&mb_cmd_plan,
                                           "--objective: '%s' is not energy, makespan or "
                                           "throughput",
                                           o.objective);
            goto done;
        }
    } else if (!js->has_objective) {
        /* Continuous jobs only make sense with the throughput objective. */
        if (js->n_jobs && js->jobs[0].continuous)
            po.objective = MB_PLAN_THROUGHPUT;
    }
    po.makespan_cap_s = isfinite(o.makespan_cap) ? o.makespan_cap : js->makespan_cap_s;
    po.energy_cap_j = isfinite(o.energy_cap) ? o.energy_cap : js->energy_cap_j;
    po.count = o.count ? (unsigned)o.count : js->count ? js->count : 1;
    po.exact_max_jobs = (size_t)o.exact_max;
    po.heuristic = o.heuristic;
    po.no_full = o.no_full;
    struct ctx c = {model, profiles, js, sources};
    double caps[MB_PLAN_MAX_CAPS];
    size_t n_caps = 0;
    struct mb_plan_cap_result cap_res[MB_PLAN_MAX_CAPS];
    if (o.power_limits) {
        if (o.pareto) {
            exit_code = mb_cli_usage_error(&mb_cmd_plan, "--power-limits and --pareto do not go "
                                                         "together");
            goto done;
        }
        if (parse_power_limits(o.power_limits, profiles, caps, &n_caps) != MB_EXIT_OK) {
            exit_code = MB_EXIT_USAGE;
            goto done;
        }
    }
    if (o.pareto) {
        rc = mb_plan_pareto(model, profiles, js->jobs, js->n_jobs, &po, front, PARETO_MAX, &n_front,
                            &err);
    } else if (n_caps) {
        rc = mb_plan_solve_caps(model, profiles, js->jobs, js->n_jobs, &po, caps, n_caps, cap_res,
                                &plan, &err);
    } else {
        rc = mb_plan_solve(model, profiles, js->jobs, js->n_jobs, &po, &plan, &err);
    }
    if (rc) {
        /* Job-level problems name the jobs file ("line N: job 'x' ..."). */
        if (strncmp(err.msg, "line ", 5) == 0)
            mb_cli_error(NAME, "%s:%s", o.jobs, err.msg + 5);
        else
            mb_cli_error(NAME, "%s", err.msg);
        exit_code = rc == MB_EINFEASIBLE ? MB_EXIT_FAIL : mb_cli_exit_for(rc);
        goto done;
    }
    if (o.pareto) {
        if (o.json) {
            cJSON *arr = cJSON_CreateArray();
            for (size_t i = 0; i < n_front; i++)
                cJSON_AddItemToArray(arr, plan_json(&c, front[i]));
            cJSON *root = cJSON_CreateObject();
            cJSON_AddItemToObject(root, "pareto", arr);
            char *s = cJSON_Print(root);
            if (s)
                printf("%s\n", s);
            free(s);
            cJSON_Delete(root);
        } else {
            char a[48], b[48];
            printf("energy vs makespan front: %zu plan%s on %u x %s (%s)\n", n_front,
                   n_front == 1 ? "" : "s", po.count, model->name,
                   n_front && front[0]->exact ? "exact" : "heuristic");
            printf("  %-3s %14s %14s %10s  %s\n", "#", "makespan", "energy", "vs base",
                   "layout "
                   "(GPU 0)");
            for (size_t i = 0; i < n_front; i++) {
                char names[512];
                layout_names(&c, &front[i]->gpus[0], names, sizeof(names));
                double es = pct_less(front[i]->base_energy_j, front[i]->energy_j);
                char e[24];
                printf("  %-3zu %14s %14s %10s  %s\n", i, fmt_time(front[i]->makespan_s, a, 48),
                       fmt_energy(front[i]->energy_j, b, 48), fmt_num(-es, -1, e, sizeof(e)),
                       names);
            }
        }
        goto done;
    }
    if (o.json) {
        cJSON *j = plan_json(&c, plan);
        if (n_caps)
            add_caps_json(j, plan, cap_res, n_caps);
        char *s = cJSON_Print(j);
        if (s)
            printf("%s\n", s);
        free(s);
        cJSON_Delete(j);
    } else {
        print_text(&c, plan);
        if (n_caps)
            print_caps(plan, cap_res, n_caps);
    }
    if (o.emit_mig_parted && (rc = emit_mig_parted(&c, plan, o.emit_mig_parted)))
        exit_code = rc;
    if (o.emit_mig_parted && isfinite(plan->power_limit_w))
        mb_cli_info(NAME,
                    "the plan's %.0f W power limit is not part of a mig-parted configuration; "
                    "--emit-experiment writes an experiment that sets it",
                    plan->power_limit_w);
    if (exit_code == MB_EXIT_OK && o.emit_experiment &&
        (rc = emit_experiment(&c, plan, &o, o.emit_experiment)))
        exit_code = rc;
done:
    for (size_t i = 0; i < n_front; i++)
        mb_plan_destroy(front[i]);
    mb_plan_destroy(plan);
    mb_plan_jobset_destroy(js);
    mb_plan_profiles_destroy(profiles);
    mb_catalog_destroy(cat);
    if (fflush(stdout) != 0 && exit_code == MB_EXIT_OK) {
        mb_cli_error(NAME, "cannot write output: %s", strerror(errno));
        exit_code = MB_EXIT_FAIL;
    }
    return exit_code;
}

const struct mb_cmd mb_cmd_plan = {
    .name = "plan",
    .summary = "Plan MIG layouts and job placement for a job set from measured profiles.",
    .usage = "migbench plan --jobs JOBS.yaml (--profiles FILE.csv | --results DIR)... "
             "[--gpu MODEL] [--count N]\n"
             "                     [--objective energy|makespan|throughput] [--makespan-cap S] "
             "[--energy-cap J]\n"
             "                     [--pareto] [--json] [--heuristic] [--exact-max N] [--no-full]\n"
             "                     [--emit-mig-parted FILE] [--emit-experiment FILE] "
             "[--catalog FILE]\n"
             "                     [--power-limits all|default,W,...]\n"
             "       migbench plan --verify RESULTS_DIR --plan PLAN.json [--json]",
    .help = "Finds the MIG layout of each GPU and the queue of jobs on each instance that finish\n"
            "the job set with the least energy (default), the shortest makespan, or, for\n"
            "continuous jobs, the most throughput. The model and every output field are in\n"
            "docs/plan.md.\n\n"
            "  --jobs FILE           job set: jobs [{name, workload, work|continuous, priority,\n"
            "                        deadline, memory_mib, replicas}], gpu, count, objective,\n"
            "                        makespan_cap, energy_cap, workloads (commands)\n"
            "  --profiles FILE.csv   measured profiles (columns in docs/plan.md); repeatable\n"
            "  --results DIR         profiles from a `migbench run` results directory; repeatable\n"
            "  --gpu MODEL           catalog model or alias (else the jobs file's gpu:)\n"
            "  --count N             GPUs in the fleet (else the jobs file's count:, else 1)\n"
            "  --objective O         energy | makespan | throughput (else the jobs file's)\n"
            "  --makespan-cap S      energy objective: finish within S seconds\n"
            "  --energy-cap J        makespan objective: use at most J joules\n"
            "  --pareto              the energy vs makespan front instead of one plan\n"
            "  --json                machine-readable plan (the --plan file of --verify)\n"
            "  --heuristic           skip the exact search; --exact-max N: jobs it takes (10)\n"
            "  --no-full             do not consider running a GPU with MIG off\n"
            "  --power-limits L      choose the GPUs' power limit with the layout among L:\n"
            "                        'all' the profiles carry, or default and watts (250W)\n"
            "  --emit-mig-parted F   write a mig-parted config (migbench mig apply accepts it)\n"
            "  --emit-experiment F   write an experiment that runs the plan (migbench run)\n"
            "  --verify DIR --plan P measured (DIR: results of the emitted experiment) against\n"
            "                        predicted, per job and in total, with the error\n\n"
            "Exit status: 0 plan found, 1 no feasible plan or a write failed, 2 bad input.\n",
    .run = plan_run,
};
