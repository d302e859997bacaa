/* migbench run: run an experiment file (or check it with --dry-run). */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "migbench/catalog.h"
#include "migbench/experiment.h"
#include "migbench/layout.h"

#define CMD "run"

struct run_args {
    const char *file;
    const char *device; /* --device, or NULL */
    const char *results;
    const char *only;
    const char *sets[MB_EXP_MAX_OVERRIDES];
    size_t n_sets;
    bool dry_run;
    bool resume;
};

/* What the experiment will run on, as far as the dry run needs to know. */
struct target {
    enum mb_device_kind kind;
    const struct mb_gpu_model *model; /* GPUs with a catalog model; else NULL */
    char label[256];
};

static int parse_args(int argc, char **argv, struct run_args *a)
{
    static const struct option opts[] = {
        {"device", required_argument, NULL, 'd'}, {"results", required_argument, NULL, 'r'},
        {"set", required_argument, NULL, 's'},    {"dry-run", no_argument, NULL, 'n'},
        {"resume", no_argument, NULL, 'R'},       {"only", required_argument, NULL, 'o'},
        {"help", no_argument, NULL, 'h'},         {NULL, 0, NULL, 0},
    };
    memset(a, 0, sizeof(*a));
    optind = 1;
    opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (ch) {
        case 'd':
            a->device = optarg;
            break;
        case 'r':
            a->results = optarg;
            break;
        case 's':
            if (a->n_sets == MB_EXP_MAX_OVERRIDES)
                return mb_cli_usage_error(&mb_cmd_run, "more than %d --set options",
                                          MB_EXP_MAX_OVERRIDES);
            if (!strchr(optarg, '=') || optarg[0] == '=')
                return mb_cli_usage_error(&mb_cmd_run,
                                          "--set needs KEY=VALUE (e.g. measure.duration=30s), "
                                          "got '%s'",
                                          optarg);
            a->sets[a->n_sets++] = optarg;
            break;
        case 'n':
            a->dry_run = true;
            break;
        case 'R':
            a->resume = true;
            break;
        case 'o':
            a->only = optarg;
            break;
        case 'h':
            mb_cli_print_help(&mb_cmd_run, stdout);
            return -1;
        case ':':
            return mb_cli_usage_error(&mb_cmd_run, "option '%s' needs a value", argv[optind - 1]);
        default:
            return mb_cli_usage_error(&mb_cmd_run, "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind >= argc)
        return mb_cli_usage_error(&mb_cmd_run, "missing the experiment file");
    if (optind + 1 < argc)
        return mb_cli_usage_error(&mb_cmd_run, "unexpected argument '%s'", argv[optind + 1]);
    a->file = argv[optind];
    if (a->dry_run && a->resume)
        return mb_cli_usage_error(&mb_cmd_run, "--dry-run and --resume do not go together");
    return MB_EXIT_OK;
}

/* The model name in "emu:MODEL[:opt=val,...]". */
static void emu_model_name(const char *spec, char *out, size_t cap)
{
    const char *p = spec + 4;
    size_t n = strcspn(p, ":,");
    snprintf(out, cap, "%.*s", (int)n, p);
}

static void format_seconds(double s, char *buf, size_t cap)
{
    long t = (long)(s + 0.5);
    if (t >= 3600)
        snprintf(buf, cap, "%ldh%02ldm%02lds", t / 3600, t / 60 % 60, t % 60);
    else if (t >= 60)
        snprintf(buf, cap, "%ldm%02lds", t / 60, t % 60);
    else
        snprintf(buf, cap, "%lds", t);
}

/* Prints an argv so that a reader can see its element boundaries. */
static void print_argv(FILE *out, char *const *argv)
{
    for (size_t i = 0; argv[i]; i++) {
        const char *a = argv[i];
        bool plain = a[0] != '\0';
        for (const char *p = a; *p; p++)
            if (!(*p == '/' || *p == '.' || *p == '-' || *p == '_' || *p == '=' || *p == ':' ||
                  *p == ',' || *p == '+' || (*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') ||
                  (*p >= 'A' && *p <= 'Z')))
                plain = false;
        fprintf(out, "%s", i ? " " : "");
        if (plain) {
            fputs(a, out);
        } else {
            fputc('\'', out);
            for (const char *p = a; *p; p++) {
                if (*p == '\'')
                    fputs("'\\''", out);
                else
                    fputc(*p, out);
            }
            fputc('\'', out);
        }
    }
    fputc('\n', out);
}

/* Finds {workloads}: $MIGBENCH_WORKLOADS, else <dir of this executable>/../workloads. */
static void workloads_dir(char *out, size_t cap)
{
    const char *env = getenv("MIGBENCH_WORKLOADS");
    if (env && env[0]) {
        snprintf(out, cap, "%s", env);
        return;
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n <= 0) {
        snprintf(out, cap, "workloads");
        return;
    }
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash)
        *slash = '\0';
    snprintf(out, cap, "%.*s/../workloads", (int)(cap > 16 ? cap - 16 : 0), exe);
}

static bool needs_python(const struct mb_experiment *exp, const struct mb_cell *cells, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const struct mb_exp_run *r = &exp->runs[cells[i].run];
        for (size_t j = 0; j < r->n_jobs; j++) {
            const struct mb_exp_workload *w = &exp->workloads[r->job_workload[j]];
            for (size_t k = 0; k < w->n_command; k++)
                if (strstr(w->command[k], "{python}"))
                    return true;
        }
    }
    return false;
}

/* Per-cell time the plan can know in advance; *unknown is set when steps or "stable" decide. */
static double cell_seconds(const struct mb_experiment *exp, const struct mb_exp_run *r,
                           bool *unknown)
{
    const struct mb_exp_measure *m = &exp->measure;
    double per_job = 0;
    if (m->warmup.kind == MB_AMOUNT_TIME)
        per_job += (double)m->warmup.ns / 1e9;
    else
        *unknown = true;
    if (m->duration.kind == MB_AMOUNT_TIME)
        per_job += (double)m->duration.ns / 1e9;
    else if (m->duration.kind == MB_AMOUNT_STABLE)
        per_job += (double)m->max_duration_ns / 1e9; /* the cap: an upper bound */
    else
        *unknown = true;
    double phases = r->mode == MB_MODE_EXCLUSIVE ? (double)r->n_jobs : 1.0;
    double s = (double)m->idle_ns / 1e9 + phases * per_job + (double)m->cooldown_ns / 1e9;
    if (r->mode == MB_MODE_EXCLUSIVE && r->n_jobs > 1)
        s += (double)(r->n_jobs - 1) * (double)m->cooldown_ns / 1e9;
    return s + 0.5; /* the random start offset averages half a second */
}

static int resolve_target(const char *spec, struct mb_catalog *cat, struct target *t)
{
    memset(t, 0, sizeof(*t));
    struct mb_error err;
    if (strncmp(spec, "emu:", 4) == 0) {
        char name[MB_MODEL_NAME_MAX];
        emu_model_name(spec, name, sizeof(name));
        if (mb_catalog_find(cat, name, &t->model, &err) != MB_OK) {
            mb_cli_error(CMD, "device '%s': %s", spec, err.msg);
            return MB_EXIT_USAGE;
        }
        t->kind = MB_KIND_EMU;
        snprintf(t->label, sizeof(t->label), "%s -> %s (emulated)", spec, t->model->name);
        return MB_EXIT_OK;
    }
    if (strcmp(spec, "host") == 0) {
        t->kind = MB_KIND_HOST;
        snprintf(t->label, sizeof(t->label), "host (the CPU)");
        return MB_EXIT_OK;
    }
    mb_cli_error(CMD,
                 "--dry-run checks against a device named host or emu:MODEL (got '%s'); "
                 "add --device emu:MODEL",
                 spec);
    return MB_EXIT_USAGE;
}

static int dry_run(const struct run_args *a, const struct mb_experiment *exp, const char *spec)
{
    struct mb_catalog *cat = NULL;
    struct mb_cell *cells = NULL;
    char **notes = NULL;
    size_t n_cells = 0, n_notes = 0;
    struct mb_error err;
    int code = MB_EXIT_OK;
    if (mb_catalog_create(&cat, &err) != MB_OK) {
        mb_cli_error(CMD, "%s", err.msg);
        return MB_EXIT_FAIL;
    }
    struct target t;
    if ((code = resolve_target(spec, cat, &t)) != MB_EXIT_OK)
        goto out;
    if (t.model && mb_experiment_check_model(exp, t.model, &err) != MB_OK) {
        mb_cli_error(CMD, "%s", err.msg);
        code = MB_EXIT_USAGE;
        goto out;
    }
    if (mb_experiment_cells(exp, t.kind, a->only, &cells, &n_cells, &notes, &n_notes, &err) !=
        MB_OK) {
        mb_cli_error(CMD, "%s", err.msg);
        code = MB_EXIT_USAGE;
        goto out;
    }
    /* Every layout must fit on an empty GPU of this model. */
    for (size_t i = 0; i < exp->n_runs && t.model; i++) {
        const struct mb_exp_run *r = &exp->runs[i];
        if (r->mode != MB_MODE_MIG || !mb_exp_run_applies(r, t.kind, NULL, 0))
            continue;
        unsigned add[MB_EXP_MAX_JOBS];
        for (size_t k = 0; k < r->n_layout; k++) {
            const struct mb_gi_profile *p = mb_model_profile(t.model, r->layout[k]);
            add[k] = (unsigned)(p - t.model->profiles);
        }
        struct mb_layout placed;
        if (mb_layout_place(t.model, NULL, add, r->n_layout, &placed, &err) != MB_OK) {
            mb_cli_error(CMD, "%s:%u: field 'runs[%zu].layout': does not fit on %s: %s", exp->path,
                         r->line, i, t.model->name, err.msg);
            code = MB_EXIT_USAGE;
            goto out;
        }
    }
    char python[MB_EXP_PATH_MAX] = "";
    if (needs_python(exp, cells, n_cells) &&
        mb_experiment_resolve_python(exp, NULL, python, sizeof(python), &err) != MB_OK) {
        mb_cli_error(CMD, "%s", err.msg);
        code = MB_EXIT_USAGE;
        goto out;
    }
    char wdir[PATH_MAX];
    workloads_dir(wdir, sizeof(wdir));

    printf("experiment: %s (%s, sha %s)\n", exp->name, exp->path, exp->sha);
    printf("device: %s\n", t.label);
    if (python[0])
        printf("python: %s\n", python);
    for (size_t i = 0; i < n_notes; i++)
        printf("note: %s\n", notes[i]);
    unsigned reps = mb_experiment_repetitions(exp, t.kind);
    size_t n_runs = reps ? n_cells / reps : 0;
    printf("cells: %zu (%zu run%s x %u repetition%s)\n", n_cells, n_runs, n_runs == 1 ? "" : "s",
           reps, reps == 1 ? "" : "s");
    char wu[32], du[32];
    mb_amount_format(&exp->measure.warmup, wu, sizeof(wu));
    mb_amount_format(&exp->measure.duration, du, sizeof(du));
    printf("measure: warm-up %s, window %s", wu, du);
    if (exp->measure.duration.kind == MB_AMOUNT_STABLE) {
        char cap[32];
        format_seconds((double)exp->measure.max_duration_ns / 1e9, cap, sizeof(cap));
        printf(" (CI half-width < %.3g x mean, at most %s)", exp->measure.ci_target, cap);
    }
    printf(", sample every %lldms\n", (long long)(exp->measure.sample_interval_ns / 1000000));

    printf("\n%-20s %-10s %s\n", "run", "mode", "jobs");
    double total = 0;
    bool unknown = false;
    for (size_t c = 0; c < n_cells; c++) {
        const struct mb_exp_run *r = &exp->runs[cells[c].run];
        total += cell_seconds(exp, r, &unknown);
        if (c > 0 && cells[c - 1].run == cells[c].run)
            continue;
        printf("%-20s %-10s", r->name, mb_exp_mode_str(r->mode));
        for (size_t j = 0; j < r->n_jobs; j++)
            printf("%s%s", j ? ", " : " ", r->job_name[j]);
        printf("\n");
    }
    for (size_t c = 0; c < n_cells; c++) {
        if (c > 0 && cells[c - 1].run == cells[c].run)
            continue;
        const struct mb_exp_run *r = &exp->runs[cells[c].run];
        if (r->mode == MB_MODE_MIG && t.model) {
            unsigned add[MB_EXP_MAX_JOBS];
            for (size_t k = 0; k < r->n_layout; k++)
                add[k] = (unsigned)(mb_model_profile(t.model, r->layout[k]) - t.model->profiles);
            struct mb_layout placed;
            mb_layout_place(t.model, NULL, add, r->n_layout, &placed, &err);
            printf("\nlayout %s on %s (on an empty GPU; placed beside existing instances at run "
                   "time):\n",
                   r->name, t.model->name);
            bool used[MB_LAYOUT_MAX] = {false};
            for (size_t j = 0; j < r->n_jobs; j++) {
                size_t k;
                for (k = 0; k < placed.n; k++)
                    if (!used[k] && placed.items[k].profile == add[j])
                        break;
                if (k == placed.n)
                    continue;
                used[k] = true;
                const struct mb_gi_profile *p = &t.model->profiles[add[j]];
                char sl[32];
                mb_layout_slices_str(placed.items[k].placement, sl, sizeof(sl));
                printf("  %-20s %-10s memory slices %-5s %2u compute slices", r->job_name[j],
                       p->name, sl, p->compute_slices);
                if (p->memory_mib > 0)
                    printf(", %lld MiB", (long long)p->memory_mib);
                const struct mb_exp_workload *w = &exp->workloads[r->job_workload[j]];
                if (w->memory_mib > 0)
                    printf(" (job needs %lld)", (long long)w->memory_mib);
                printf("\n");
            }
            char pic[512];
            mb_layout_picture(t.model, &placed, pic, sizeof(pic));
            printf("  %s\n", pic);
        } else if (r->mode == MB_MODE_MPS) {
            unsigned pct[MB_EXP_MAX_JOBS];
            mb_exp_run_thread_pct(r, t.model ? t.model->compute_slices : 7, pct);
            printf("\nmps %s: CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", r->name);
            for (size_t j = 0; j < r->n_jobs; j++)
                printf("%s %s=%u%%", j ? "," : "", r->job_name[j], pct[j]);
            printf(" (%s)\n", r->n_thread_pct     ? "as given"
                              : r->n_match_layout ? "matched to the compute slices of match_layout"
                                                  : "equal split");
            if (t.kind != MB_KIND_NVML)
                printf("  note: mps runs only on the nvml backend; on this device migbench run "
                       "stops before running anything\n");
        }
    }
    printf("\ncommands (%s):\n", t.kind == MB_KIND_HOST ? "host_args" : "gpu_args");
    for (size_t i = 0; i < exp->n_workloads; i++) {
        char **argv;
        if (mb_experiment_job_argv(&exp->workloads[i], python[0] ? python : NULL, wdir,
                                   t.kind != MB_KIND_HOST, &argv, &err) != MB_OK)
            continue;
        printf("  %-20s ", exp->workloads[i].name);
        print_argv(stdout, argv);
        mb_argv_free(argv);
    }
    char est[32];
    format_seconds(total, est, sizeof(est));
    printf("\nestimated duration: %s%s\n", unknown ? "at least " : "", est);
    if (unknown)
        printf("  (warm-up or window counted in steps: their time depends on the jobs' speed)\n");
out:
    free(cells);
    mb_notes_free(notes, n_notes);
    mb_catalog_destroy(cat);
    return code;
}

static int run_main(int argc, char **argv)
{
    struct run_args a;
    int code = parse_args(argc, argv, &a);
    if (code < 0)
        return MB_EXIT_OK;
    if (code != MB_EXIT_OK)
        return code;
    struct mb_error err;
    struct mb_experiment *exp = NULL;
    int rc = mb_experiment_load(a.file, a.sets, a.n_sets, &exp, &err);
    if (rc != MB_OK) {
        mb_cli_error(CMD, "%s", err.msg);
        return rc == MB_ENOMEM ? MB_EXIT_FAIL : MB_EXIT_USAGE;
    }
    const char *spec = a.device ? a.device : exp->device;
    if (a.dry_run)
        code = dry_run(&a, exp, spec);
    else {
        mb_cli_error(CMD, "running experiments needs the device layer; only --dry-run for now");
        code = MB_EXIT_FAIL;
    }
    mb_experiment_destroy(exp);
    return code;
}

const struct mb_cmd mb_cmd_run = {
    .name = "run",
    .summary = "Run an experiment: jobs under exclusive, time-slicing, MPS and MIG sharing.",
    .usage = "migbench run EXP.yaml [--device SPEC] [--results DIR] [--set KEY=VALUE]...\n"
             "                    [--dry-run] [--resume] [--only RUN[,RUN...]]",
    .help = "options:\n"
            "  --device SPEC      run on this device instead of the file's (host, nvml:0,\n"
            "                     nvml:GPU-uuid, emu:H100-80GB[:mig=on,state=PATH])\n"
            "  --results DIR      results directory (default results/<experiment name>)\n"
            "  --set KEY=VALUE    override a setting, e.g. measure.duration=30s (repeatable)\n"
            "  --dry-run          validate against the device's geometry and print the cells,\n"
            "                     layouts and an estimated duration; runs nothing\n"
            "  --resume           continue an interrupted experiment: remove what the dead run\n"
            "                     left on the GPU, then run only the unfinished cells\n"
            "  --only RUN,...     run only these runs\n"
            "\nexit status: 0 all cells ok, 1 some cell failed or a device error, 2 bad input,\n"
            "130/143 interrupted by SIGINT/SIGTERM. See docs/run.md.\n",
    .run = run_main,
};
