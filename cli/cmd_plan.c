/* SPDX-License-Identifier: Apache-2.0 */
/* migbench plan: parses options, calls the planner (plan.h, plan_io.h), prints the plan. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "migbench/fleet.h"
#include "migbench/analysis.h"
#include "migbench/catalog.h"
#include "migbench/layout.h"
#include "migbench/num.h"
#include "migbench/plan.h"
#include "migbench/powercap.h"
#include "migbench/plan_io.h"
#include "migbench/report_verbs.h"

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
    const char *emit_slurm;
    const char *emit_k8s;
    const char *nodes; /* --nodes a,b,c */
    long gpus_per_node;
    const char *image;
    const char *k8s_namespace;
    const char *migbench; /* --migbench: the binary on the nodes / in the image */
    const char *verify;
    const char *plan;
    const char *power_limits;
    double time_limit;
    long threads;
    unsigned long long seed;
};

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
        mb_plan_check_text_write(stdout, &ck, o->plan, o->verify);
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
    {"emit-slurm", required_argument, NULL, 'S'},
    {"emit-k8s", required_argument, NULL, 'K'},
    {"nodes", required_argument, NULL, 'N'},
    {"gpus-per-node", required_argument, NULL, 'G'},
    {"image", required_argument, NULL, 'I'},
    {"namespace", required_argument, NULL, 'A'},
    {"migbench", required_argument, NULL, 'B'},
    {"verify", required_argument, NULL, 'V'},
    {"plan", required_argument, NULL, 'L'},
    {"power-limits", required_argument, NULL, 'W'},
    {"time-limit", required_argument, NULL, 'T'},
    {"threads", required_argument, NULL, 'j' + 256},
    {"seed", required_argument, NULL, 's'},
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

/* The combinations of options that parse_args accepts; -1 or the exit status. */
static int check_args(int argc, char **argv, struct opts *o)
{
    if (optind < argc)
        return mb_cli_usage_error(&mb_cmd_plan, "unexpected argument '%s'", argv[optind]);
    if (o->verify || o->plan) {
        if (!o->verify || !o->plan)
            return mb_cli_usage_error(&mb_cmd_plan, "--verify RESULTS_DIR needs --plan PLAN.json");
        if (o->jobs || o->n_profiles || o->n_results || o->pareto || o->emit_experiment ||
            o->emit_mig_parted || o->emit_slurm || o->emit_k8s)
            return mb_cli_usage_error(&mb_cmd_plan, "--verify takes only --plan, --json and "
                                                    "--catalog");
    } else {
        if (!o->jobs)
            return mb_cli_usage_error(&mb_cmd_plan, "--jobs JOBS.yaml is required");
        if (!o->n_profiles && !o->n_results)
            return mb_cli_usage_error(&mb_cmd_plan,
                                      "give --profiles FILE.csv or --results DIR (or both)");
        if (o->pareto && o->power_limits)
            return mb_cli_usage_error(&mb_cmd_plan, "--power-limits and --pareto do not go "
                                                    "together");
        if (o->pareto && (o->emit_experiment || o->emit_mig_parted || o->emit_slurm || o->emit_k8s))
            return mb_cli_usage_error(&mb_cmd_plan,
                                      "--pareto shows a front; emit files from one plan");
    }

    return -1;
}

/* The emitters' and --verify's options; -1: not one of them, else the exit status or -2. */
static int parse_emit(int ch, struct opts *o)
{
    double v;
    switch (ch) {
    case 'M':
        o->emit_mig_parted = optarg;
        break;
    case 'E':
        o->emit_experiment = optarg;
        break;
    case 'S':
        o->emit_slurm = optarg;
        break;
    case 'K':
        o->emit_k8s = optarg;
        break;
    case 'N':
        o->nodes = optarg;
        break;
    case 'G':
        if (!parse_pos(optarg, &v) || v != floor(v) || v > MB_PLAN_MAX_GPUS)
            return mb_cli_usage_error(&mb_cmd_plan, "--gpus-per-node: '%s' is not 1 to %d", optarg,
                                      MB_PLAN_MAX_GPUS);
        o->gpus_per_node = (long)v;
        break;
    case 'I':
        o->image = optarg;
        break;
    case 'A':
        o->k8s_namespace = optarg;
        break;
    case 'B':
        o->migbench = optarg;
        break;
    case 'V':
        o->verify = optarg;
        break;
    case 'L':
        o->plan = optarg;
        break;
    default:
        return -1;
    }
    return -2;
}

/* The search's options (--power-limits, --time-limit, --threads, --seed); as parse_emit. */
static int parse_search(int ch, struct opts *o)
{
    double v;
    switch (ch) {
    case 'W':
        o->power_limits = optarg;
        break;
    case 'T':
        if (!parse_pos(optarg, &o->time_limit) || o->time_limit > 86400)
            return mb_cli_usage_error(
                &mb_cmd_plan, "--time-limit: '%s' is not seconds > 0 (at most a day)", optarg);
        break;
    case 'j' + 256:
        if (!parse_pos(optarg, &v) || v != floor(v) || v > 64)
            return mb_cli_usage_error(&mb_cmd_plan, "--threads: '%s' is not 1 to 64", optarg);
        o->threads = (long)v;
        break;
    case 's': {
        char *end = NULL;
        errno = 0;
        o->seed = strtoull(optarg, &end, 10);
        if (errno || !end || *end || optarg[0] == '-' || optarg[0] == '\0')
            return mb_cli_usage_error(&mb_cmd_plan, "--seed: '%s' is not a whole number >= 0",
                                      optarg);
        break;
    }
    default:
        return -1;
    }
    return -2;
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
        if ((rc = parse_emit(ch, o)) != -1 || (rc = parse_search(ch, o)) != -1) {
            if (rc != -2)
                return rc;
            continue;
        }
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
            if (!parse_pos(optarg, &v) || v != floor(v) || v > 32)
                return mb_cli_usage_error(&mb_cmd_plan, "--exact-max: '%s' is not 1 to 32", optarg);
            o->exact_max = (long)v;
            break;
        case 'F':
            o->no_full = true;
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
    return check_args(argc, argv, o);
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
    po->time_limit_s = o->time_limit;
    po->threads = (unsigned)o->threads;
    po->seed = o->seed;
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

/*
 * --power-limits: "all" (every limit the profiles carry, however many) or a comma-separated list
 * of "default" and watts ("420W" or "420"). Percentages need the GPU's default limit, which
 * profiles do not carry: they are refused with a hint. *caps is allocated (free it).
 */
static int parse_power_limits(const char *arg, const struct mb_plan_profiles *profiles,
                              double **caps, size_t *n)
{
    *n = 0;
    size_t nr = mb_plan_profiles_count(profiles);
    *caps = malloc((nr > MB_PLAN_MAX_CAPS ? nr : MB_PLAN_MAX_CAPS) * sizeof(double) + 1);
    if (!*caps) {
        mb_cli_error(NAME, "out of memory");
        return MB_EXIT_FAIL;
    }
    double *c = *caps;
    if (strcmp(arg, "all") == 0) {
        for (size_t i = 0; i < nr; i++) {
            double w = mb_plan_profiles_get(profiles, i)->power_limit_w;
            w = w > 0 ? w : 0;
            bool seen = false;
            for (size_t k = 0; k < *n; k++)
                seen = seen || fabs(c[k] - w) < 0.5;
            if (!seen)
                c[(*n)++] = w;
        }
        return MB_EXIT_OK;
    }
    char buf[512];
    snprintf(buf, sizeof(buf), "%s", arg);
    char *save = NULL;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        struct mb_power_setting ps;
        struct mb_error e;
        if (*n == MB_PLAN_MAX_CAPS)
            return mb_cli_usage_error(&mb_cmd_plan,
                                      "--power-limits: at most %d limits in a list ('all' takes "
                                      "every limit the profiles carry)",
                                      MB_PLAN_MAX_CAPS);
        if (mb_power_setting_parse(t, &ps, &e) != MB_OK)
            return mb_cli_usage_error(&mb_cmd_plan, "--power-limits: %s", e.msg);
        if (ps.kind == MB_PSET_PERCENT)
            return mb_cli_usage_error(&mb_cmd_plan,
                                      "--power-limits: '%s': give watts (profiles record the "
                                      "limit in force, in W) or 'all'",
                                      t);
        c[(*n)++] = ps.kind == MB_PSET_DEFAULT ? 0 : ps.value;
    }
    if (*n == 0)
        return mb_cli_usage_error(&mb_cmd_plan, "--power-limits: empty");
    return MB_EXIT_OK;
}

static int emit_fleet(const struct mb_plan_context *c, const struct mb_plan *p,
                      const struct opts *o)
{
    if (mb_plan_limits_differ(p)) {
        /* The node hook sets one limit for every GPU of a node, and a node holds several. */
        mb_cli_error(NAME,
                     "%s: the plan gives its GPUs different power limits, which a fleet "
                     "script (one limit per node) cannot set; plan with one --power-limits value, "
                     "or run the plan through --emit-experiment",
                     o->emit_slurm ? "--emit-slurm" : "--emit-k8s");
        return MB_EXIT_USAGE;
    }
    char list[4096];
    const char *nodes[MB_FLEET_MAX_NODES];
    size_t n = 0;
    snprintf(list, sizeof(list), "%s", o->nodes ? o->nodes : "");
    for (char *save = NULL, *t = strtok_r(list, ",", &save); t && n < MB_FLEET_MAX_NODES;
         t = strtok_r(NULL, ",", &save))
        nodes[n++] = t;
    /* The nodes' and images' migbench: never this machine's path (a build directory). */
    struct mb_fleet_plan_opts fo = {.n_nodes = n,
                                    .nodes = n ? nodes : NULL,
                                    .gpus_per_node = (unsigned)o->gpus_per_node,
                                    .migbench = o->migbench,
                                    .jobset = c->js,
                                    .image = o->image,
                                    .k8s_namespace = o->k8s_namespace,
                                    .power_limit_w = p->power_limit_w};
    struct mb_error err;
    int rc = MB_OK;
    if (o->emit_slurm)
        rc = mb_slurm_write_plan(c->model, p, c->js->jobs, c->js->n_jobs, &fo, o->emit_slurm, &err);
    if (rc == MB_OK && o->emit_k8s)
        rc = mb_k8s_write_plan(c->model, p, c->js->jobs, c->js->n_jobs, &fo, o->emit_k8s, &err);
    if (rc != MB_OK) {
        mb_cli_error(NAME, "%s: %s", o->emit_slurm && !o->emit_k8s ? "--emit-slurm" : "--emit-k8s",
                     err.msg);
        return rc == MB_EINVAL ? MB_EXIT_USAGE : MB_EXIT_FAIL;
    }
    return MB_EXIT_OK;
}

/* Solves: the front with --pareto, else one plan (over the power limits when given). */
static int solve(const struct opts *o, const struct mb_plan_context *c,
                 const struct mb_plan_options *po, struct mb_plan **plan, struct mb_plan **front,
                 size_t *n_front, const double *caps, size_t n_caps,
                 struct mb_plan_cap_result *cap_res)
{
    const struct mb_plan_jobset *js = c->js;
    struct mb_error err;
    int rc;
    if (o->pareto)
        rc = mb_plan_pareto(c->model, c->profiles, js->jobs, js->n_jobs, po, front, PARETO_MAX,
                            n_front, &err);
    else if (n_caps)
        rc = mb_plan_solve_caps(c->model, c->profiles, js->jobs, js->n_jobs, po, caps, n_caps,
                                cap_res, plan, &err);
    else
        rc = mb_plan_solve(c->model, c->profiles, js->jobs, js->n_jobs, po, plan, &err);
    if (rc == MB_OK)
        return MB_EXIT_OK;
    /* Job-level problems name the jobs file ("line N: job 'x' ..."). */
    if (strncmp(err.msg, "line ", 5) == 0)
        mb_cli_error(NAME, "%s:%s", o->jobs, err.msg + 5);
    else
        mb_cli_error(NAME, "%s", err.msg);
    return rc == MB_EINFEASIBLE ? MB_EXIT_FAIL : mb_cli_exit_for(rc);
}

/* Warnings the plan itself carries: GPUs over their power limit, a search the clock stopped. */
static void plan_notes(const struct mb_plan *p)
{
    for (unsigned g = 0; g < p->count && p->over_limit; g++)
        if (p->gpus[g].over_limit)
            mb_cli_warn(NAME,
                        "GPU %u: the model's peak power %.0f W (idle plus every job running at "
                        "once) exceeds its %.0f W limit; the limit would slow its jobs below the "
                        "profiled rates",
                        g, p->gpus[g].peak_power_w, p->gpus[g].power_limit_w);
    if (!p->exact && p->time_limited)
        mb_cli_info(NAME,
                    "the search stopped at the time limit after %.1f s of search on %u "
                    "thread%s (reading the problem and the bounds count against the limit); "
                    "--time-limit gives it longer",
                    p->search_s, p->threads, p->threads == 1 ? "" : "s");
}

/* Prints one plan and writes the emitted files; returns the exit status. */
static int print_plan(const struct opts *o, const struct mb_plan_context *c,
                      const struct mb_plan *plan, const struct mb_plan_cap_result *cap_res,
                      size_t n_caps)
{
    int rc = MB_OK, exit_code = MB_EXIT_OK;
    if (o->json && n_caps)
        rc = mb_plan_json_write_caps(stdout, c, plan, cap_res, n_caps);
    else if (o->json)
        rc = mb_plan_json_write(stdout, c, plan);
    else
        mb_plan_text_write(stdout, c, plan);
    if (!o->json && n_caps)
        mb_plan_caps_text_write(stdout, plan, cap_res, n_caps);
    plan_notes(plan);
    if (rc == MB_ENOMEM)
        exit_code = MB_EXIT_FAIL;
    if (o->emit_mig_parted && (rc = emit_mig_parted(c, plan, o->emit_mig_parted)))
        exit_code = rc;
    if (o->emit_mig_parted && isfinite(plan->power_limit_w))
        mb_cli_info(NAME,
                    "the plan's %.0f W power limit is not part of a mig-parted "
                    "configuration; --emit-experiment writes an experiment that sets it",
                    plan->power_limit_w);
    else if (o->emit_mig_parted && mb_plan_limits_differ(plan))
        mb_cli_info(NAME, "the plan's power limits (one per GPU) are not part of a mig-parted "
                          "configuration; --emit-experiment writes an experiment that sets them");
    if (exit_code == MB_EXIT_OK && o->emit_experiment &&
        (rc = emit_experiment(c, plan, o, o->emit_experiment)))
        exit_code = rc;
    if (exit_code == MB_EXIT_OK && (o->emit_slurm || o->emit_k8s))
        exit_code = emit_fleet(c, plan, o);
    return exit_code;
}

/* Solves (one plan, or the front with --pareto), prints it and writes the emitted files. */
static int solve_and_print(const struct opts *o, const struct mb_plan_context *c,
                           const struct mb_plan_options *po)
{
    struct mb_plan *plan = NULL;
    struct mb_plan *front[PARETO_MAX];
    size_t n_front = 0, n_caps = 0;
    double *caps = NULL;
    struct mb_plan_cap_result *cap_res = NULL;
    int rc;
    if (o->power_limits &&
        (rc = parse_power_limits(o->power_limits, c->profiles, &caps, &n_caps)) != MB_EXIT_OK)
        goto done;
    if (n_caps && !(cap_res = calloc(n_caps, sizeof(*cap_res)))) {
        mb_cli_error(NAME, "out of memory");
        rc = MB_EXIT_FAIL;
        goto done;
    }
    rc = solve(o, c, po, &plan, front, &n_front, caps, n_caps, cap_res);
    if (rc != MB_EXIT_OK)
        goto done;
    if (o->pareto && o->json)
        rc = mb_plan_json_write_pareto(stdout, c, front, n_front) == MB_ENOMEM ? MB_EXIT_FAIL
                                                                               : MB_EXIT_OK;
    else if (o->pareto)
        mb_plan_pareto_text_write(stdout, c, front, n_front, po->count);
    else
        rc = print_plan(o, c, plan, cap_res, n_caps);
done:
    for (size_t i = 0; i < n_front; i++)
        mb_plan_destroy(front[i]);
    mb_plan_destroy(plan);
    free(caps);
    free(cap_res);
    return rc;
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
    .usage =
        "migbench plan --jobs JOBS.yaml (--profiles FILE.csv | --results DIR)... "
        "[--gpu MODEL] [--count N]\n"
        "                     [--objective energy|makespan|throughput] [--makespan-cap S] "
        "[--energy-cap J]\n"
        "                     [--pareto] [--json] [--heuristic] [--exact-max N] [--no-full]\n"
        "                     [--emit-mig-parted FILE] [--emit-experiment FILE] "
        "[--catalog FILE]\n"
        "                     [--power-limits all|default,W,...] [--time-limit S] [--threads N]\n"
        "                     [--seed N]\n"
        "                     [--emit-slurm DIR] [--emit-k8s DIR] [--nodes N1,N2,...] "
        "[--gpus-per-node K]\n"
        "                     [--image IMAGE] [--namespace NS] [--migbench PATH]\n"
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
            "  --heuristic           skip the exact search; --exact-max N: jobs it takes (16)\n"
            "  --no-full             do not consider running a GPU with MIG off\n"
            "  --power-limits L      choose the GPUs' power limit with the layout among L:\n"
            "                        'all' the profiles carry, or default and watts (250W)\n"
            "  --time-limit S        the fleet search's time budget (default 5 s); it stops\n"
            "                        sooner when its iteration budget is spent\n"
            "  --threads N           search threads (default: one per CPU); --seed N: its\n"
            "                        random choices (same seed and threads, same plan unless\n"
            "                        the time limit stops it)\n"
            "  --emit-mig-parted F   write a mig-parted config (migbench mig apply accepts it)\n"
            "  --emit-experiment F   write an experiment that runs the plan (migbench run)\n"
            "  --emit-slurm DIR      per node: mig-parted.yaml, gres.conf, slurm-node.conf\n"
            "                        (Gres=gpu:<profile>:<n>,...) and rollout.sh (drain, apply,\n"
            "                        restart slurmctld and slurmd, resume, check sinfo); jobs.sh:\n"
            "                        one sbatch per planned job on its GRES (docs/slurm.md)\n"
            "  --emit-k8s DIR        the MIG manager's mig-parted ConfigMap, node label commands\n"
            "                        and Indexed Jobs requesting nvidia.com/mig-<profile>\n"
            "                        (docs/kubernetes.md)\n"
            "  --nodes N1,N2,...     node names for the fleet (default node0, node1, ...)\n"
            "  --gpus-per-node K     plan GPU g is on node g / K (default: all on one node)\n"
            "  --image, --namespace  the Kubernetes Jobs' container image and namespace\n"
            "  --migbench PATH       migbench on the nodes and in the image (default: migbench\n"
            "                        on their PATH); the plan's power limit goes with the files\n"
            "  --verify DIR --plan P measured (DIR: results of the emitted experiment) against\n"
            "                        predicted, per job and in total, with the error\n\n"
            "Exit status: 0 plan found, 1 no feasible plan or a write failed, 2 bad input.\n",
    .run = plan_run,
};
