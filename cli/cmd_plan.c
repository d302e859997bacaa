/* SPDX-License-Identifier: Apache-2.0 */
/* migbench plan: parses options, calls the planner (plan.h, plan_io.h), prints the plan. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "migbench/analysis.h"
#include "migbench/catalog.h"
#include "migbench/layout.h"
#include "migbench/num.h"
#include "migbench/plan.h"
#include "migbench/plan_io.h"

#define NAME "plan"
#define SOURCES_MAX 16
#define PARETO_MAX 32

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

static void layout_names(const struct mb_plan_context *c, const struct mb_plan_gpu *g, char *buf,
                         size_t cap)
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

static void print_queues(const struct mb_plan_context *c, const struct mb_plan *p, unsigned g,
                         size_t ninst)
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

static void print_text(const struct mb_plan_context *c, const struct mb_plan *p)
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
        const struct mb_plan_profile *r = mb_plan_slot_row(c, s);
        const struct mb_plan_job *job = &c->js->jobs[s->job];
        if (cont) {
            printf("  %-16s %-14s %3u %4u %-10s %12.4g %8s %6s  %s\n", job->name, job->workload,
                   s->gpu, s->instance, r->partition, s->throughput,
                   fmt_num(s->normalised, 3, a, sizeof(a)), r->proxy ? "PROXY" : "-", r->source);
        } else {
            double e = mb_plan_slot_energy(c, p, s);
            printf("  %-16s %-14s %3u %4u %-10s %10s %10s %12s %10.4g %6s  %s\n", job->name,
                   job->workload, s->gpu, s->instance, r->partition,
                   fmt_time(s->start_s, a, sizeof(a)), fmt_time(s->time_s, b, sizeof(b)),
                   fmt_energy(e, d, sizeof(d)), e / job->work, r->proxy ? "PROXY" : "-", r->source);
        }
    }
    size_t proxies = 0, emulated = 0;
    for (size_t j = 0; j < p->n_slots; j++) {
        proxies += mb_plan_slot_row(c, &p->slots[j])->proxy;
        emulated += mb_plan_slot_row(c, &p->slots[j])->emulated;
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
        const char *u = mb_plan_common_unit(c, p);
        if (u)
            printf("energy per unit: %.4g J/%s over %.4g %s\n",
                   p->energy_j / mb_plan_total_work(c->js), u, mb_plan_total_work(c->js), u);
        else
            printf("energy per unit: per job only (the jobs count different units)\n");
        printf("baseline (each job alone on the whole GPU, one after another): makespan %s, "
               "energy %s\n",
               fmt_time(p->base_makespan_s, a, sizeof(a)),
               fmt_energy(p->base_energy_j, b, sizeof(b)));
        double es = mb_plan_pct_less(p->base_energy_j, p->energy_j);
        double ms = mb_plan_pct_less(p->base_makespan_s, p->makespan_s);
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
 * Emitted files: written whole (mb_cli_outfile), so a failure leaves nothing half-done
 */

static int emit_mig_parted(const struct mb_plan_context *c, const struct mb_plan *p,
                           const char *path)
{
    struct mb_cli_outfile out;
    if (mb_cli_outfile_open(&out, NAME, path) != MB_EXIT_OK)
        return MB_EXIT_FAIL;
    if (mb_plan_write_mig_parted(out.f, c, p) == MB_ENOMEM) {
        mb_cli_outfile_abort(&out);
        mb_cli_error(NAME, "out of memory");
        return MB_EXIT_FAIL;
    }
    return mb_cli_outfile_commit(&out, NAME);
}

static int emit_experiment(const struct mb_plan_context *c, const struct mb_plan *p,
                           const struct opts *o, const char *path)
{
    if (p->objective == MB_PLAN_THROUGHPUT) {
        mb_cli_error(NAME, "--emit-experiment: continuous jobs have no finite plan to run");
        return MB_EXIT_USAGE;
    }
    struct mb_analysis *an = NULL;
    struct mb_error err;
    int st = o->n_results ? mb_analysis_load(&an, o->results, o->n_results, &err) : MB_OK;
    if (st != MB_OK) {
        mb_cli_error(NAME, "--emit-experiment: %s", err.msg);
        return st == MB_ENOMEM ? MB_EXIT_FAIL : MB_EXIT_USAGE;
    }
    /* Every workload needs a command before anything is written. */
    const char *w = mb_plan_uncommanded_workload(c, an);
    struct mb_cli_outfile out;
    int rc = MB_EXIT_FAIL;
    if (w) {
        mb_cli_error(NAME,
                     "--emit-experiment: no command for workload '%s': add it under "
                     "'workloads:' in %s%s",
                     w, o->jobs, o->n_results ? " (the results directories do not record it)" : "");
        rc = MB_EXIT_USAGE;
    } else if (mb_cli_outfile_open(&out, NAME, path) == MB_EXIT_OK) {
        (void)mb_plan_write_experiment(out.f, c, p, an); /* a write error: the commit says */
        rc = mb_cli_outfile_commit(&out, NAME);
    }
    mb_analysis_destroy(an);
    return rc;
}

/* ---------------------------------------------------------------------------------------------
 * --verify: measured against predicted
 */

static void print_check(const struct opts *o, const struct mb_plan_check *ck)
{
    char a[48], b[48], d[48];
    printf("verify: plan %s against %s (%zu successful cells; idle power %.1f W%s)\n", o->plan,
           o->verify, ck->cells, ck->idle_power_w,
           ck->idle_measured ? " measured" : " from the plan: the cells have no idle baseline");
    printf("  %-16s %12s %12s %8s %12s %12s\n", "job", "pred units/s", "meas units/s", "error",
           "pred time", "meas time");
    for (size_t k = 0; k < ck->njobs; k++) {
        const struct mb_plan_check_job *j = &ck->jobs[k];
        double tp = j->predicted_throughput, thr = j->measured_throughput;
        char e[24];
        printf("  %-16s %12.6g %12s %8s %12s %12s\n", j->name[0] ? j->name : "?", tp,
               fmt_num(thr, 6, a, sizeof(a)), fmt_num((tp - thr) / thr * 100, -1, e, sizeof(e)),
               fmt_time(j->predicted_time_s, b, sizeof(b)),
               fmt_time(j->measured_time_s, d, sizeof(d)));
    }
    double pmk = ck->predicted_makespan_s, pe = ck->predicted_energy_j;
    double mk = ck->measured_makespan_s, em = ck->measured_energy_j;
    printf("makespan: predicted %s, measured %s", fmt_time(pmk, a, sizeof(a)),
           fmt_time(mk, b, sizeof(b)));
    if (ck->complete)
        printf(" (prediction error %+.1f%%)", (pmk - mk) / mk * 100);
    printf("\nenergy: predicted %s, measured %s", fmt_energy(pe, a, sizeof(a)),
           fmt_energy(em, b, sizeof(b)));
    if (ck->complete)
        printf(" (prediction error %+.1f%%)", (pe - em) / em * 100);
    printf("\n");
    if (!ck->complete)
        printf("note: some jobs have no measured throughput or power in %s; totals n/a\n",
               o->verify);
    printf("method: measured time = work / measured throughput; each cell's power above idle "
           "is split among its jobs by compute slices; queues replayed as planned\n");
}

static int run_verify(const struct opts *o, const struct mb_catalog *cat)
{
    struct mb_error err;
    mb_error_clear(&err);
    struct mb_plan_record plan;
    int st = mb_plan_record_read(o->plan, &plan, &err);
    if (st != MB_OK) {
        mb_cli_error(NAME, "--plan %s", err.msg);
        return st == MB_ENOMEM ? MB_EXIT_FAIL : MB_EXIT_USAGE;
    }
    const struct mb_gpu_model *model = NULL;
    struct mb_analysis *an = NULL;
    struct mb_plan_check ck = {0};
    int rc = MB_EXIT_USAGE;
    if (mb_catalog_find(cat, plan.gpu_model, &model, &err) != MB_OK) {
        mb_cli_error(NAME, "--plan %s: field 'gpu_model': %s", o->plan, err.msg);
        goto done;
    }
    if (!isfinite(plan.makespan_s)) {
        mb_cli_error(NAME, "--plan %s: --verify checks finite job sets only", o->plan);
        goto done;
    }
    /* The analysis names the file or directory it refuses; the check's messages do not. */
    st = mb_analysis_load(&an, &o->verify, 1, &err);
    if (st != MB_OK)
        mb_cli_error(NAME, "--verify %s", err.msg);
    else if ((st = mb_plan_check(&plan, model, an, &ck, &err)) != MB_OK)
        mb_cli_error(NAME, "--verify %s: %s", o->verify, err.msg);
    if (st != MB_OK) {
        rc = st == MB_ENOMEM ? MB_EXIT_FAIL : MB_EXIT_USAGE;
        goto done;
    }
    rc = MB_EXIT_OK;
    if (o->json)
        rc = mb_plan_check_json_write(stdout, &ck, o->plan, o->verify) == MB_ENOMEM ? MB_EXIT_FAIL
                                                                                    : MB_EXIT_OK;
    else
        print_check(o, &ck);
done:
    mb_plan_check_free(&ck);
    mb_analysis_destroy(an);
    mb_plan_record_free(&plan);
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
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

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

/* Parses argv into *o; returns -1 to go on, else the exit status. */
static int parse_args(int argc, char **argv, struct opts *o)
{
    memset(o, 0, sizeof(*o));
    o->makespan_cap = o->energy_cap = NAN;
    optind = 0;
    opterr = 0;
    int ch, rc;
    double v;
    while ((ch = getopt_long(argc, argv, ":h", long_opts, NULL)) != -1) {
        switch (ch) {
        case 'J':
            o->jobs = optarg;
            break;
        case 'P':
            if ((rc = add_source(o->profiles, &o->n_profiles, "--profiles files", optarg)))
                return rc;
            break;
        case 'R':
            if ((rc = add_source(o->results, &o->n_results, "--results directories", optarg)))
                return rc;
            break;
        case 'C':
            if ((rc = add_source(o->catalogs, &o->n_catalogs, "--catalog files", optarg)))
                return rc;
            break;
        case 'g':
            o->gpu = optarg;
            break;
        case 'n':
            if (!parse_pos(optarg, &v) || v != floor(v) || v > MB_PLAN_MAX_GPUS)
                return mb_cli_usage_error(&mb_cmd_plan, "--count: '%s' is not 1 to %d", optarg,
                                          MB_PLAN_MAX_GPUS);
            o->count = (long)v;
            break;
        case 'o':
            o->objective = optarg;
            break;
        case 'm':
            if (!parse_pos(optarg, &o->makespan_cap))
                return mb_cli_usage_error(&mb_cmd_plan, "--makespan-cap: '%s' is not seconds > 0",
                                          optarg);
            break;
        case 'e':
            if (!parse_pos(optarg, &o->energy_cap))
                return mb_cli_usage_error(&mb_cmd_plan, "--energy-cap: '%s' is not joules > 0",
                                          optarg);
            break;
        case 'p':
            o->pareto = true;
            break;
        case 'j':
            o->json = true;
            break;
        case 'H':
            o->heuristic = true;
            break;
        case 'x':
            if (!parse_pos(optarg, &v) || v != floor(v) || v > 16)
                return mb_cli_usage_error(&mb_cmd_plan, "--exact-max: '%s' is not 1 to 16", optarg);
            o->exact_max = (long)v;
            break;
        case 'F':
            o->no_full = true;
            break;
        case 'M':
            o->emit_mig_parted = optarg;
            break;
        case 'E':
            o->emit_experiment = optarg;
            break;
        case 'V':
            o->verify = optarg;
            break;
        case 'L':
            o->plan = optarg;
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
    if (o->verify || o->plan) {
        if (!o->verify || !o->plan)
            return mb_cli_usage_error(&mb_cmd_plan, "--verify RESULTS_DIR needs --plan PLAN.json");
        if (o->jobs || o->n_profiles || o->n_results || o->pareto || o->emit_experiment ||
            o->emit_mig_parted)
            return mb_cli_usage_error(&mb_cmd_plan, "--verify takes only --plan, --json and "
                                                    "--catalog");
    } else {
        if (!o->jobs)
            return mb_cli_usage_error(&mb_cmd_plan, "--jobs JOBS.yaml is required");
        if (!o->n_profiles && !o->n_results)
            return mb_cli_usage_error(&mb_cmd_plan,
                                      "give --profiles FILE.csv or --results DIR (or both)");
        if (o->pareto && (o->emit_experiment || o->emit_mig_parted))
            return mb_cli_usage_error(&mb_cmd_plan,
                                      "--pareto shows a front; emit files from one plan");
    }

    return -1;
}

/* The planner's options: the command line's, else the jobs file's. Returns -1 or an exit status. */
static int plan_options(const struct opts *o, const struct mb_plan_jobset *js,
                        struct mb_plan_options *po)
{
    memset(po, 0, sizeof(*po));
    po->objective = js->has_objective ? js->objective : MB_PLAN_ENERGY;
    if (o->objective) {
        if (strcmp(o->objective, "energy") == 0)
            po->objective = MB_PLAN_ENERGY;
        else if (strcmp(o->objective, "makespan") == 0)
            po->objective = MB_PLAN_MAKESPAN;
        else if (strcmp(o->objective, "throughput") == 0)
            po->objective = MB_PLAN_THROUGHPUT;
        else {
            return mb_cli_usage_error(&mb_cmd_plan,
                                      "--objective: '%s' is not energy, makespan or throughput",
                                      o->objective);
        }
    } else if (!js->has_objective) {
        /* Continuous jobs only make sense with the throughput objective. */
        if (js->n_jobs && js->jobs[0].continuous)
            po->objective = MB_PLAN_THROUGHPUT;
    }
    po->makespan_cap_s = isfinite(o->makespan_cap) ? o->makespan_cap : js->makespan_cap_s;
    po->energy_cap_j = isfinite(o->energy_cap) ? o->energy_cap : js->energy_cap_j;
    po->count = o->count ? (unsigned)o->count : js->count ? js->count : 1;
    po->exact_max_jobs = (size_t)o->exact_max;
    po->heuristic = o->heuristic;
    po->no_full = o->no_full;
    return -1;
}

/* Loads the profile rows of --profiles and --results into *out; -1 or an exit status. */
static int load_profiles(const struct opts *o, const struct mb_catalog *cat,
                         struct mb_plan_profiles **out, char *sources, size_t cap)
{
    struct mb_error err;
    int rc;
    struct mb_plan_profiles *profiles = NULL;
    if ((rc = mb_plan_profiles_create(&profiles, &err))) {
        mb_cli_error(NAME, "%s", err.msg);
        return MB_EXIT_FAIL;
    }
    size_t sl = 0;
    for (size_t i = 0; i < o->n_profiles; i++) {
        if ((rc = mb_plan_profiles_load_csv(profiles, cat, o->profiles[i], &err))) {
            mb_cli_error(NAME, "%s", err.msg);
            mb_plan_profiles_destroy(profiles);
            return rc == MB_ENOMEM ? MB_EXIT_FAIL : MB_EXIT_USAGE;
        }
        sl += (size_t)snprintf(sources + sl, cap - sl, "%s%s", sl ? ", " : "", o->profiles[i]);
        if (sl >= cap)
            sl = cap - 1;
    }
    for (size_t i = 0; i < o->n_results; i++) {
        if ((rc = mb_plan_profiles_load_results(profiles, cat, o->results[i], &err))) {
            mb_cli_error(NAME, "%s", err.msg);
            mb_plan_profiles_destroy(profiles);
            return rc == MB_ENOMEM ? MB_EXIT_FAIL : MB_EXIT_USAGE;
        }
        sl += (size_t)snprintf(sources + sl, cap - sl, "%s%s", sl ? ", " : "", o->results[i]);
        if (sl >= cap)
            sl = cap - 1;
    }
    *out = profiles;
    return -1;
}

static void print_pareto(const struct mb_plan_context *c, struct mb_plan *const *front,
                         size_t n_front, unsigned count)
{
    char a[48], b[48];
    printf("energy vs makespan front: %zu plan%s on %u x %s (%s)\n", n_front,
           n_front == 1 ? "" : "s", count, c->model->name,
           n_front && front[0]->exact ? "exact" : "heuristic");
    printf("  %-3s %14s %14s %10s  %s\n", "#", "makespan", "energy", "vs base",
           "layout "
           "(GPU 0)");
    for (size_t i = 0; i < n_front; i++) {
        char names[512];
        layout_names(c, &front[i]->gpus[0], names, sizeof(names));
        double es = mb_plan_pct_less(front[i]->base_energy_j, front[i]->energy_j);
        char e[24];
        printf("  %-3zu %14s %14s %10s  %s\n", i, fmt_time(front[i]->makespan_s, a, 48),
               fmt_energy(front[i]->energy_j, b, 48), fmt_num(-es, -1, e, sizeof(e)), names);
    }
}

/* Solves (one plan, or the front with --pareto), prints it and writes the emitted files. */
static int solve_and_print(const struct opts *o, const struct mb_plan_context *c,
                           const struct mb_plan_options *po)
{
    struct mb_plan *plan = NULL;
    struct mb_plan *front[PARETO_MAX];
    size_t n_front = 0;
    struct mb_error err;
    const struct mb_plan_jobset *js = c->js;
    int rc;
    if (o->pareto)
        rc = mb_plan_pareto(c->model, c->profiles, js->jobs, js->n_jobs, po, front, PARETO_MAX,
                            &n_front, &err);
    else
        rc = mb_plan_solve(c->model, c->profiles, js->jobs, js->n_jobs, po, &plan, &err);
    if (rc) {
        /* Job-level problems name the jobs file ("line N: job 'x' ..."). */
        if (strncmp(err.msg, "line ", 5) == 0)
            mb_cli_error(NAME, "%s:%s", o->jobs, err.msg + 5);
        else
            mb_cli_error(NAME, "%s", err.msg);
        return rc == MB_EINFEASIBLE ? MB_EXIT_FAIL : mb_cli_exit_for(rc);
    }
    int exit_code = MB_EXIT_OK;
    if (o->pareto) {
        if (o->json)
            rc = mb_plan_json_write_pareto(stdout, c, front, n_front);
        else
            print_pareto(c, front, n_front, po->count);
    } else {
        if (o->json)
            rc = mb_plan_json_write(stdout, c, plan);
        else
            print_text(c, plan);
        if (o->emit_mig_parted && (rc = emit_mig_parted(c, plan, o->emit_mig_parted)))
            exit_code = rc;
        if (exit_code == MB_EXIT_OK && o->emit_experiment &&
            (rc = emit_experiment(c, plan, o, o->emit_experiment)))
            exit_code = rc;
    }
    for (size_t i = 0; i < n_front; i++)
        mb_plan_destroy(front[i]);
    mb_plan_destroy(plan);
    return exit_code;
}

/* Plans from the jobs file and the profiles; returns the exit status. */
static int plan_jobs(const struct opts *o, const struct mb_catalog *cat)
{
    struct mb_plan_profiles *profiles = NULL;
    struct mb_plan_jobset *js = NULL;
    struct mb_error err;
    int rc, exit_code;
    char sources[1024] = "";
    rc = mb_plan_jobset_load(o->jobs, &js, &err);
    if (rc) {
        mb_cli_error(NAME, "%s", err.msg);
        return rc == MB_ENOMEM ? MB_EXIT_FAIL : MB_EXIT_USAGE;
    }
    const char *gpu = o->gpu ? o->gpu : js->gpu[0] ? js->gpu : NULL;
    const struct mb_gpu_model *model = NULL;
    struct mb_plan_options po;
    if (!gpu) {
        exit_code = mb_cli_usage_error(&mb_cmd_plan, "no GPU model: give --gpu MODEL or 'gpu:' "
                                                     "in the jobs file");
    } else if ((rc = mb_catalog_find(cat, gpu, &model, &err))) {
        mb_cli_error(NAME, "%s: %s", o->gpu ? "--gpu" : o->jobs, err.msg);
        exit_code = MB_EXIT_USAGE;
    } else if ((exit_code = load_profiles(o, cat, &profiles, sources, sizeof(sources))) < 0 &&
               (exit_code = plan_options(o, js, &po)) < 0) {
        struct mb_plan_context c = {model, profiles, js, sources};
        exit_code = solve_and_print(o, &c, &po);
    }
    mb_plan_jobset_destroy(js);
    mb_plan_profiles_destroy(profiles);
    return exit_code;
}

static int plan_run(int argc, char **argv)
{
    struct opts o;
    int exit_code = parse_args(argc, argv, &o);
    if (exit_code >= 0)
        return exit_code;
    struct mb_catalog *cat = NULL;
    struct mb_error err;
    if (mb_catalog_create(&cat, &err) != MB_OK) {
        mb_cli_error(NAME, "%s", err.msg);
        return MB_EXIT_FAIL;
    }
    exit_code = -1;
    for (size_t i = 0; i < o.n_catalogs && exit_code < 0; i++) {
        int rc = mb_catalog_load_file(cat, o.catalogs[i], &err);
        if (rc) {
            mb_cli_error(NAME, "--catalog %s", err.msg);
            exit_code = mb_cli_exit_for(rc == MB_EIO ? MB_EINVAL : rc);
        }
    }
    if (exit_code < 0)
        exit_code = o.verify ? run_verify(&o, cat) : plan_jobs(&o, cat);
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
            "  --emit-mig-parted F   write a mig-parted config (migbench mig apply accepts it)\n"
            "  --emit-experiment F   write an experiment that runs the plan (migbench run)\n"
            "  --verify DIR --plan P measured (DIR: results of the emitted experiment) against\n"
            "                        predicted, per job and in total, with the error\n\n"
            "Exit status: 0 plan found, 1 no feasible plan or a write failed, 2 bad input.\n",
    .run = plan_run,
};
