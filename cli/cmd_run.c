/* SPDX-License-Identifier: Apache-2.0 */
/* migbench run: run an experiment file (or check it with --dry-run). */
#include <errno.h>
#include <math.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "migbench/catalog.h"
#include "migbench/experiment.h"
#include "migbench/device.h"
#include "migbench/gpuqueue.h"
#include "migbench/layout.h"
#include "migbench/migmode.h"
#include "migbench/multirun.h"
#include "migbench/results.h"
#include "migbench/runner.h"
#include "run_export.h"
#include "run_phases.h"

#define CMD "run"

/* The signal that asked us to stop (0: none). A signal handler can only talk through a global. */
static volatile sig_atomic_t stop_signal;

struct run_args {
    const char *file;
    const char *device; /* --device, or NULL */
    const char *results;
    const char *only;
    const char *sets[MB_EXP_MAX_OVERRIDES];
    size_t n_sets;
    bool dry_run;
    bool resume;
    const char *prometheus; /* --prometheus FILE, or NULL */
    bool manage_mig_mode;   /* --manage-mig-mode (or the file's manage_mig_mode: true) */
    bool pin_reps;          /* --pin-repetitions */
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
        {"device", required_argument, NULL, 'd'},
        {"results", required_argument, NULL, 'r'},
        {"set", required_argument, NULL, 's'},
        {"dry-run", no_argument, NULL, 'n'},
        {"resume", no_argument, NULL, 'R'},
        {"only", required_argument, NULL, 'o'},
        {"help", no_argument, NULL, 'h'},
        {"prometheus", required_argument, NULL, 'P'},
        {"manage-mig-mode", no_argument, NULL, 'M'},
        {"pin-repetitions", no_argument, NULL, 'p'},
        {NULL, 0, NULL, 0},
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
        case 'P':
            a->prometheus = optarg;
            break;
        case 'M':
            a->manage_mig_mode = true;
            break;
        case 'p':
            a->pin_reps = true;
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

/*
 * Finds {workloads}: $MIGBENCH_WORKLOADS, else <dir of this executable>/../workloads (a build
 * tree), else ../share/migbench/workloads (an installed prefix).
 */
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
    char installed[PATH_MAX + 40];
    int m = snprintf(installed, sizeof(installed), "%s/../share/migbench/workloads", exe);
    if (m > 0 && (size_t)m < cap && access(out, F_OK) != 0 && access(installed, F_OK) == 0)
        memcpy(out, installed, (size_t)m + 1);
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

/*
 * What the cells' commands refer to: {python} when one uses it (else python is ""), and
 * {workloads}. Returns MB_EXIT_OK, or MB_EXIT_USAGE after saying why python cannot be found.
 */
static int resolve_tools(const struct mb_experiment *exp, const struct mb_cell *cells, size_t n,
                         char python[MB_EXP_PATH_MAX], char wdir[PATH_MAX])
{
    struct mb_error err;
    mb_error_clear(&err);
    python[0] = '\0';
    if (needs_python(exp, cells, n) &&
        mb_experiment_resolve_python(exp, NULL, python, MB_EXP_PATH_MAX, &err) != MB_OK) {
        mb_cli_error(CMD, "%s", err.msg);
        return MB_EXIT_USAGE;
    }
    workloads_dir(wdir, PATH_MAX);
    return MB_EXIT_OK;
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
    else if (m->duration.kind == MB_AMOUNT_COMPLETION)
        *unknown = true;
    else
        *unknown = true;
    double phases = r->mode == MB_MODE_EXCLUSIVE ? (double)r->n_jobs : 1.0;
    double s = (double)m->idle_ns / 1e9 + phases * per_job + (double)m->cooldown_ns / 1e9;
    if (r->mode == MB_MODE_EXCLUSIVE && r->n_jobs > 1)
        s += (double)(r->n_jobs - 1) * (double)m->cooldown_ns / 1e9;
    return s + 0.5; /* the random start offset averages half a second */
}

/* Width of the run-name column: the longest name, at least 20. */
static int name_width(const struct mb_experiment *exp)
{
    size_t w = 20;
    for (size_t i = 0; i < exp->n_runs; i++)
        if (strlen(exp->runs[i].name) > w)
            w = strlen(exp->runs[i].name);
    return (int)w;
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
        snprintf(t->label, sizeof(t->label), "%.120s -> %s (emulated)", spec, t->model->name);
        return MB_EXIT_OK;
    }
    if (strcmp(spec, "host") == 0) {
        t->kind = MB_KIND_HOST;
        snprintf(t->label, sizeof(t->label), "host (the CPU)");
        return MB_EXIT_OK;
    }
    struct mb_device *dev = NULL;
    if (mb_device_open(spec, &dev, &err) != MB_OK) {
        mb_cli_error(CMD, "%s", err.msg);
        return err.status == MB_EINVAL ? MB_EXIT_USAGE : MB_EXIT_FAIL;
    }
    struct mb_device_info info;
    int rc = mb_device_info(dev, &info, &err);
    mb_device_close(dev);
    if (rc != MB_OK) {
        mb_cli_error(CMD, "device %s: %s", spec, err.msg);
        return MB_EXIT_FAIL;
    }
    int kind = mb_device_kind_from_backend(info.backend);
    t->kind = kind < 0 ? MB_KIND_HOST : (enum mb_device_kind)kind;
    if (t->kind != MB_KIND_HOST && info.model[0] &&
        mb_catalog_find(cat, info.model, &t->model, NULL) != MB_OK)
        t->model = NULL;
    snprintf(t->label, sizeof(t->label), "%.60s -> %.60s%s%.96s%s", spec, info.name,
             info.uuid[0] ? " (" : "", info.uuid, info.uuid[0] ? ")" : "");
    return MB_EXIT_OK;
}

/* Profile indices of a mig run's layout on model; the run has passed mb_experiment_check_cells. */
static void layout_indices(const struct mb_gpu_model *model, const struct mb_exp_run *r,
                           unsigned add[MB_EXP_MAX_JOBS])
{
    for (size_t k = 0; k < r->n_layout; k++) {
        const struct mb_gi_profile *p = NULL;
        mb_model_profile_resolve(model, r->layout[k], &p, NULL);
        add[k] = p ? (unsigned)(p - model->profiles) : 0;
    }
}

/*
 * The wall-clock estimate on the given GPUs: cells assigned as the run would assign them (one
 * GPU each at a time, repetitions spread or pinned), the longest GPU's total.
 */
static void print_gpu_estimate(const struct run_args *a, const struct mb_experiment *exp,
                               const struct mb_cell *cells, size_t n_cells, size_t n_gpus)
{
    struct mb_gpuqueue_item *items = calloc(n_cells ? n_cells : 1, sizeof(*items));
    size_t *gpu_of = calloc(n_cells ? n_cells : 1, sizeof(*gpu_of));
    double load[MB_MAX_DEVICES];
    bool unknown = false;
    for (size_t i = 0; items && i < n_cells; i++)
        items[i] = (struct mb_gpuqueue_item){cells[i].run,
                                             cell_seconds(exp, &exp->runs[cells[i].run], &unknown)};
    if (items && gpu_of &&
        mb_gpuqueue_assign(items, n_cells, n_gpus, a->pin_reps, gpu_of, load, NULL) == MB_OK) {
        double longest = 0;
        for (size_t g = 0; g < n_gpus; g++)
            longest = load[g] > longest ? load[g] : longest;
        char est[32];
        format_seconds(longest, est, sizeof(est));
        printf("estimated duration on %zu GPUs: %s%s (one cell per GPU at a time, repetitions "
               "%s)\n",
               n_gpus, unknown ? "at least " : "", est,
               a->pin_reps ? "pinned to one GPU" : "spread over the GPUs");
    }
    free(items);
    free(gpu_of);
}

/* With MIG-mode phases: what each phase holds and the switches it costs. */
static void print_phases(const struct mb_experiment *exp, const struct mb_cell *cells,
                         size_t n_cells, bool manage)
{
    size_t need[2] = {0, 0};
    for (size_t i = 0; i < n_cells; i++) {
        int m = mb_migmode_run_needs(&exp->runs[cells[i].run]);
        if (m >= 0)
            need[m]++;
    }
    if (!need[0] || !need[1])
        return;
    if (manage)
        printf("MIG-mode phases: %zu cells with MIG off, %zu with MIG on; each GPU switches "
               "once between them and back to its original mode at the end (a GPU reset each, "
               "not in the estimate)\n",
               need[0], need[1]);
    else
        printf("note: %zu cells need MIG off and %zu need MIG on: without --manage-mig-mode "
               "only those of the GPU's current mode run\n",
               need[0], need[1]);
}

static int dry_run(const struct run_args *a, const struct mb_experiment *exp, const char *spec_in)
{
    struct mb_catalog *cat = NULL;
    struct mb_cell *cells = NULL;
    char **notes = NULL;
    size_t n_cells = 0, n_notes = 0;
    struct mb_error err;
    int code = MB_EXIT_OK;
    struct mb_device_spec_list gpus = {0};
    if (mb_device_spec_expand(spec_in, &gpus, &err) != MB_OK) {
        mb_cli_error(CMD, "%s", err.msg);
        return mb_cli_exit_for(err.status);
    }
    const char *spec = gpus.specs[0];
    if (mb_catalog_create(&cat, &err) != MB_OK) {
        mb_cli_error(CMD, "%s", err.msg);
        mb_device_spec_list_free(&gpus);
        return MB_EXIT_FAIL;
    }
    struct target t;
    if ((code = resolve_target(spec, cat, &t)) != MB_EXIT_OK)
        goto out;
    if (mb_experiment_cells(exp, t.kind, a->only, &cells, &n_cells, &notes, &n_notes, &err) !=
        MB_OK) {
        mb_cli_error(CMD, "%s", err.msg);
        code = MB_EXIT_USAGE;
        goto out;
    }
    /* Profile names are checked for the runs that would run here, as a real run does. */
    if (t.model &&
        mb_experiment_check_cells(exp, t.model, cells, &n_cells, &notes, &n_notes, &err) != MB_OK) {
        mb_cli_error(CMD, "%s", err.msg);
        code = MB_EXIT_USAGE;
        goto out;
    }
    /* Every layout must fit on an empty GPU of this model. */
    for (size_t c = 0; c < n_cells && t.model; c++) {
        size_t i = cells[c].run;
        const struct mb_exp_run *r = &exp->runs[i];
        if ((r->mode != MB_MODE_MIG && !r->on[0]) || (c > 0 && cells[c - 1].run == i))
            continue;
        unsigned add[MB_EXP_MAX_JOBS];
        layout_indices(t.model, r, add);
        struct mb_layout placed;
        if (mb_layout_place(t.model, NULL, add, r->n_layout, &placed, &err) != MB_OK) {
            mb_cli_error(CMD, "%s:%u: field 'runs[%zu].layout': does not fit on %s: %s", exp->path,
                         r->line, i, t.model->name, err.msg);
            code = MB_EXIT_USAGE;
            goto out;
        }
    }
    char python[MB_EXP_PATH_MAX], wdir[PATH_MAX];
    if (resolve_tools(exp, cells, n_cells, python, wdir) != MB_EXIT_OK) {
        code = MB_EXIT_USAGE;
        goto out;
    }

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

    int nw = name_width(exp);
    printf("\n%-*s %-10s %s\n", nw, "run", "mode", "jobs");
    double total = 0;
    bool unknown = false;
    for (size_t c = 0; c < n_cells; c++) {
        const struct mb_exp_run *r = &exp->runs[cells[c].run];
        total += cell_seconds(exp, r, &unknown);
        if (c > 0 && cells[c - 1].run == cells[c].run)
            continue;
        printf("%-*s %-10s", nw, r->name, mb_exp_mode_str(r->mode));
        for (size_t j = 0; j < r->n_jobs; j++)
            printf("%s%s", j ? ", " : " ", r->job_name[j]);
        printf("\n");
    }
    for (size_t c = 0; c < n_cells; c++) {
        if (c > 0 && cells[c - 1].run == cells[c].run)
            continue;
        const struct mb_exp_run *r = &exp->runs[cells[c].run];
        if ((r->mode == MB_MODE_MIG || r->on[0]) && t.model) {
            unsigned add[MB_EXP_MAX_JOBS];
            layout_indices(t.model, r, add);
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
                char shown[2 * MB_PROFILE_NAME_MAX + 8];
                if (strcasecmp(p->name, r->layout[j]) == 0)
                    snprintf(shown, sizeof(shown), "%s", p->name);
                else
                    snprintf(shown, sizeof(shown), "%s (%s)", p->name, r->layout[j]);
                printf("  %-20s %-16s memory slices %-5s %2u compute slices", r->job_name[j], shown,
                       sl, p->compute_slices);
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
            if (t.kind == MB_KIND_EMU)
                printf("  note: an emulated GPU has no MPS daemon: the jobs get its environment "
                       "and share the GPU\n");
            else if (t.kind != MB_KIND_NVML)
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
        printf("  (warm-up or window counted in steps or run to completion: their time depends "
               "on the jobs)\n");
    if (gpus.n > 1)
        print_gpu_estimate(a, exp, cells, n_cells, gpus.n);
    if (t.kind != MB_KIND_HOST)
        print_phases(exp, cells, n_cells, a->manage_mig_mode || exp->manage_mig_mode);
out:
    mb_device_spec_list_free(&gpus);
    free(cells);
    mb_notes_free(notes, n_notes);
    mb_catalog_destroy(cat);
    return code;
}

static void on_stop_signal(int sig)
{
    if (!stop_signal)
        stop_signal = sig;
}

/* SIGINT/SIGTERM/SIGHUP set the stop flag; no SA_RESTART, so waits return and see it. */
static void install_handlers(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    /* Every write checks for errors; and with several GPUs one worker's SIGPIPE guard (around
     * the MPS control pipe) must not be undone by another's. */
    sa.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &sa, NULL);
}

struct progress_ctx {
    bool tty;
    size_t cell_index, n_cells;
    double remaining_after_s; /* estimated time of the cells after this one */
    double cell_estimate_s;
    bool line_open;
    struct mb_cli_run_export *ex; /* live file and --prometheus */
    const char *mode;
};

static void on_runner_event(void *vctx, const struct mb_runner_event *ev)
{
    struct progress_ctx *p = vctx;
    mb_cli_run_export_event(p->ex, ev, p->mode, p->cell_index, p->n_cells);
    if (mb_cli_verbosity() < 1)
        return;
    if (ev->kind == MB_RUNNER_NOTE) {
        if (p->line_open)
            fputs("\r\033[K", stderr);
        p->line_open = false;
        mb_cli_info(CMD, "%s %u: %s", ev->run, ev->rep, ev->text);
        return;
    }
    if (!p->tty) {
        /* Plain log lines at the moments that matter; no per-second chatter. */
        if (ev->kind == MB_RUNNER_CELL_START)
            mb_cli_info(CMD, "cell %zu/%zu: run %s, repetition %u", p->cell_index + 1, p->n_cells,
                        ev->run, ev->rep);
        else if (ev->kind == MB_RUNNER_WINDOW_START)
            mb_cli_info(CMD, "%s %u: warm-up done, measuring", ev->run, ev->rep);
        else if (ev->kind == MB_RUNNER_STOPPING) {
            char line[512];
            size_t n = 0;
            line[0] = '\0';
            for (size_t i = 0; i < ev->n_jobs && n < sizeof(line); i++) {
                int w = ev->rate[i] >= 0
                            ? snprintf(line + n, sizeof(line) - n, " %s %.4g %s/s",
                                       ev->job_names[i], ev->rate[i], ev->rate_unit[i])
                            : snprintf(line + n, sizeof(line) - n, " %s n/a", ev->job_names[i]);
                if (w > 0)
                    n += (size_t)w;
            }
            mb_cli_info(CMD, "%s %u: stopping jobs;%s", ev->run, ev->rep, line);
        }
        return;
    }
    if (ev->kind != MB_RUNNER_TICK && ev->kind != MB_RUNNER_CELL_START &&
        ev->kind != MB_RUNNER_WINDOW_START)
        return;
    char line[512];
    int n = snprintf(line, sizeof(line), "[%zu/%zu] %s#%u ", p->cell_index + 1, p->n_cells, ev->run,
                     ev->rep);
    if (ev->window_s > 0 && ev->window_target_s > 0)
        n += snprintf(line + n, sizeof(line) - (size_t)n, "window %.0f/%.0fs", ev->window_s,
                      ev->window_target_s);
    else if (ev->window_s > 0)
        n += snprintf(line + n, sizeof(line) - (size_t)n, "window %.0fs", ev->window_s);
    else
        n += snprintf(line + n, sizeof(line) - (size_t)n, "warm-up");
    for (size_t i = 0; i < ev->n_jobs && n < (int)sizeof(line) - 40; i++) {
        if (ev->rate[i] >= 0)
            n += snprintf(line + n, sizeof(line) - (size_t)n, " | %s %.4g %s/s", ev->job_names[i],
                          ev->rate[i], ev->rate_unit[i]);
        else
            n += snprintf(line + n, sizeof(line) - (size_t)n, " | %s n/a", ev->job_names[i]);
    }
    if (n < (int)sizeof(line) - 40) {
        if (ev->power_w >= 0)
            n += snprintf(line + n, sizeof(line) - (size_t)n, " | %.1f W", ev->power_w);
        double left = p->cell_estimate_s - ev->elapsed_s;
        if (left < 0)
            left = 0;
        char eta[32];
        format_seconds(left + p->remaining_after_s, eta, sizeof(eta));
        snprintf(line + n, sizeof(line) - (size_t)n, " | ETA %s", eta);
    }
    fprintf(stderr, "\r\033[K%s", line);
    fflush(stderr);
    p->line_open = true;
}

static const char *jstr(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static bool jnum(const cJSON *o, const char *k, double *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    if (!cJSON_IsNumber(v))
        return false;
    *out = v->valuedouble;
    return true;
}

/* The two-sided 95% Student-t quantile for small df (df >= 30: 2.0). */
static double t95(size_t df)
{
    static const double t[] = {0,     12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365,
                               2.306, 2.262,  2.228, 2.201, 2.179, 2.160, 2.145, 2.131};
    return df < sizeof(t) / sizeof(t[0]) ? t[df] : df < 30 ? 2.09 : 2.0;
}

/* Summary table: per run and job, throughput (mean over repetitions), energy, J/unit. */
static void print_summary(const struct mb_experiment *exp, const char *dir,
                          const struct mb_cell *cells, size_t n_cells)
{
    int nw = name_width(exp);
    printf("%-*s %-10s %-5s %-20s %-32s %-12s %s\n", nw, "run", "mode", "ok", "job",
           "throughput (mean +- 95% CI)", "energy_J", "J/unit");
    for (size_t c = 0; c < n_cells; c++) {
        if (c > 0 && cells[c - 1].run == cells[c].run)
            continue;
        const struct mb_exp_run *r = &exp->runs[cells[c].run];
        double rate[MB_EXP_MAX_JOBS][64];
        size_t n_rate[MB_EXP_MAX_JOBS] = {0};
        double ci_single[MB_EXP_MAX_JOBS] = {0};
        bool ci_single_ok[MB_EXP_MAX_JOBS] = {false};
        char unit[MB_EXP_MAX_JOBS][32];
        memset(unit, 0, sizeof(unit));
        double energy_sum = 0, units_sum = 0;
        size_t n_energy = 0, n_ok = 0, n_cell = 0;
        bool same_unit = true, units_ok = true;
        for (size_t k = c; k < n_cells && cells[k].run == cells[c].run; k++) {
            n_cell++;
            char cdir[1200], path[1300];
            if (mb_results_cell_dir(dir, r->name, cells[k].rep, cdir, sizeof(cdir), NULL) != MB_OK)
                continue;
            snprintf(path, sizeof(path), "%s/cell.json", cdir);
            cJSON *cj = NULL;
            if (mb_results_read_json(path, 16u << 20, &cj, NULL) != MB_OK)
                continue;
            const char *st = jstr(cj, "status");
            if (!st || strcmp(st, "ok") != 0) {
                cJSON_Delete(cj);
                continue;
            }
            n_ok++;
            const cJSON *en = cJSON_GetObjectItemCaseSensitive(cj, "energy");
            double e;
            bool e_ok = jnum(en, "counter_j", &e) || jnum(en, "integrated_j", &e);
            double cell_units = 0;
            const cJSON *jobs = cJSON_GetObjectItemCaseSensitive(cj, "jobs");
            size_t j = 0;
            const cJSON *job;
            cJSON_ArrayForEach(job, jobs)
            {
                if (j >= r->n_jobs)
                    break;
                const cJSON *tp = cJSON_GetObjectItemCaseSensitive(job, "throughput");
                const cJSON *win = cJSON_GetObjectItemCaseSensitive(job, "window");
                double mean, ci, secs;
                const char *u = jstr(tp, "unit_per_s");
                if (u) {
                    if (unit[0][0] && strcmp(unit[0], u) != 0)
                        same_unit = false;
                    snprintf(unit[j], sizeof(unit[j]), "%s", u);
                }
                if (jnum(tp, "mean", &mean) && n_rate[j] < 64) {
                    rate[j][n_rate[j]++] = mean;
                    if (jnum(tp, "ci95", &ci)) {
                        ci_single[j] = ci;
                        ci_single_ok[j] = true;
                    }
                    if (jnum(win, "seconds", &secs))
                        cell_units += mean * secs;
                    else
                        units_ok = false;
                } else {
                    units_ok = false;
                }
                j++;
            }
            if (e_ok) {
                energy_sum += e;
                units_sum += cell_units;
                n_energy++;
            }
            cJSON_Delete(cj);
        }
        for (size_t j = 0; j < r->n_jobs; j++) {
            char tp[96] = "n/a", a[32], b[32];
            if (n_rate[j] > 0) {
                double m = 0, v = 0;
                for (size_t k = 0; k < n_rate[j]; k++)
                    m += rate[j][k];
                m /= (double)n_rate[j];
                for (size_t k = 0; k < n_rate[j]; k++)
                    v += (rate[j][k] - m) * (rate[j][k] - m);
                if (n_rate[j] >= 2) {
                    double half = t95(n_rate[j] - 1) * sqrt(v / (double)(n_rate[j] - 1)) /
                                  sqrt((double)n_rate[j]);
                    snprintf(tp, sizeof(tp), "%s +- %s %s", mb_cli_fmt_sig(a, sizeof(a), m, 4),
                             mb_cli_fmt_sig(b, sizeof(b), half, 2), unit[j]);
                } else if (ci_single_ok[j]) {
                    snprintf(tp, sizeof(tp), "%s +- %s %s", mb_cli_fmt_sig(a, sizeof(a), m, 4),
                             mb_cli_fmt_sig(b, sizeof(b), ci_single[j], 2), unit[j]);
                } else {
                    snprintf(tp, sizeof(tp), "%s %s", mb_cli_fmt_sig(a, sizeof(a), m, 4), unit[j]);
                }
            }
            char ok[48] = "", en[32] = "", jpu[32] = "";
            if (j == 0) {
                snprintf(ok, sizeof(ok), "%zu/%zu", n_ok, n_cell);
                if (n_energy)
                    mb_cli_fmt_sig(en, sizeof(en), energy_sum / (double)n_energy, 4);
                else
                    snprintf(en, sizeof(en), "n/a");
                if (n_energy && same_unit && units_ok && units_sum > 0)
                    mb_cli_fmt_sig(jpu, sizeof(jpu), energy_sum / units_sum, 4);
                else
                    snprintf(jpu, sizeof(jpu), "n/a");
            }
            printf("%-*s %-10s %-5s %-20s %-32s %-12s %s\n", nw, j == 0 ? r->name : "",
                   j == 0 ? mb_exp_mode_str(r->mode) : "", ok, r->job_name[j], tp, en, jpu);
        }
    }
}

static int open_model(struct mb_catalog *cat, const struct mb_device_info *info,
                      const struct mb_gpu_model **model)
{
    *model = NULL;
    if (!info->model[0])
        return MB_OK;
    return mb_catalog_find(cat, info->model, model, NULL) == MB_OK ? MB_OK : MB_ENOTFOUND;
}

static bool dir_has_results(const char *dir)
{
    char path[PATH_MAX + 32];
    snprintf(path, sizeof(path), "%s/journal.jsonl", dir);
    return access(path, F_OK) == 0;
}

/*
 * MIG mode decides what a GPU can run without a reset, and migbench never resets a GPU: mig runs
 * need it on; on a real GPU the whole-GPU modes need it off (with MIG on, CUDA sees no device
 * outside an instance). Runs that cannot run are dropped with a note, so one file serves GPUs in
 * either mode.
 */
static void filter_by_mig_mode(const struct mb_experiment *exp, struct mb_device *dev,
                               enum mb_device_kind kind, struct mb_cell *cells, size_t *n_cells)
{
    struct mb_mig_mode mm;
    if (kind == MB_KIND_HOST || mb_device_mig_mode(dev, &mm, NULL) != MB_OK)
        return;
    size_t k = 0;
    for (size_t i = 0; i < *n_cells; i++) {
        const struct mb_exp_run *r = &exp->runs[cells[i].run];
        const char *why = NULL;
        int need = mb_migmode_run_needs(r);
        if (need == 1 && !mm.current)
            why = mm.pending ? "MIG mode is enabled but pending a GPU reset"
                             : "MIG mode is disabled on the GPU (nvidia-smi -mig 1 and a reset "
                               "enable it)";
        else if (need == 0 && kind == MB_KIND_NVML && mm.current)
            why = "MIG mode is enabled on the GPU; whole-GPU runs need it disabled";
        if (!why) {
            cells[k++] = cells[i];
        } else if (i == 0 || cells[i - 1].run != cells[i].run) {
            mb_cli_info(CMD, "run '%s' skipped: %s", r->name, why);
        }
    }
    *n_cells = k;
}

/* The GPUs of one run: one device, runner options and cool-down state each. */
struct node {
    size_t n;
    struct mb_device_spec_list specs;
    struct mb_device *dev[MB_MAX_DEVICES];
    struct mb_device_info info[MB_MAX_DEVICES];
    struct mb_runner_power power[MB_MAX_DEVICES];
    struct mb_runner_opts ro[MB_MAX_DEVICES];
    struct node_ev {
        size_t gpu, n;
    } ev[MB_MAX_DEVICES]; /* the event hook's context: which GPU of how many */
};

/* The multi-GPU hooks' context. */
struct node_hooks {
    const struct node *nd;
    struct mb_cli_run_export *ex;
};

/* Opens every GPU spec names; they must be one kind of device and one GPU model. */
static int open_node(const char *spec, struct node *nd, struct mb_error *err)
{
    int rc = mb_device_spec_expand(spec, &nd->specs, err);
    if (rc != MB_OK)
        return rc;
    for (size_t g = 0; g < nd->specs.n; g++) {
        const char *sp = nd->specs.specs[g];
        if ((rc = mb_device_open(sp, &nd->dev[g], err)) != MB_OK)
            return rc;
        nd->n = g + 1;
        if ((rc = mb_device_info(nd->dev[g], &nd->info[g], err)) != MB_OK) {
            mb_error_prefix(err, "device %s: ", sp);
            return rc == MB_EINVAL ? MB_EDEVICE : rc;
        }
        const struct mb_device_info *i0 = &nd->info[0], *ig = &nd->info[g];
        if (strcmp(i0->backend, ig->backend) != 0 || strcmp(i0->model, ig->model) != 0)
            return mb_error_set(err, MB_EINVAL,
                                "--device %s: %s is a %s (%s), %s a %s (%s): one run compares "
                                "GPUs of one model; run them separately",
                                spec, sp, ig->model, ig->backend, nd->specs.specs[0], i0->model,
                                i0->backend);
    }
    return MB_OK;
}

static void close_node(struct node *nd)
{
    if (!nd)
        return;
    for (size_t g = 0; g < nd->n; g++)
        mb_device_close(nd->dev[g]);
    mb_device_spec_list_free(&nd->specs);
    free(nd);
}

/* Runner events of a multi-GPU run: its lines, prefixed with the GPU (no live progress line). */
static pthread_mutex_t node_print_lock = PTHREAD_MUTEX_INITIALIZER;

static void on_node_event(void *vctx, const struct mb_runner_event *ev)
{
    const struct node_ev *ne = vctx;
    if (mb_cli_verbosity() < 1 || (ev->kind != MB_RUNNER_NOTE && ev->kind != MB_RUNNER_CELL_START))
        return;
    char gpu[32] = "";
    if (ne->n > 1)
        snprintf(gpu, sizeof(gpu), "[gpu %zu] ", ne->gpu);
    pthread_mutex_lock(&node_print_lock);
    if (ev->kind == MB_RUNNER_NOTE)
        mb_cli_info(CMD, "%s%s %u: %s", gpu, ev->run, ev->rep, ev->text);
    else
        mb_cli_info(CMD, "%srun %s, repetition %u", gpu, ev->run, ev->rep);
    pthread_mutex_unlock(&node_print_lock);
}

static void on_node_note(void *ctx, size_t gpu, const char *line)
{
    const struct node *nd = ((const struct node_hooks *)ctx)->nd;
    pthread_mutex_lock(&node_print_lock);
    if (nd->n > 1)
        mb_cli_info(CMD, "[gpu %zu] %s", gpu, line);
    else
        mb_cli_info(CMD, "%s", line);
    pthread_mutex_unlock(&node_print_lock);
}

static void on_node_cell_done(void *ctx, size_t gpu, size_t cell, int status, bool failed)
{
    const struct node_hooks *h = ctx;
    (void)gpu;
    (void)cell;
    if (status == MB_OK && !failed)
        mb_cli_run_export_cell_done(h->ex);
}

/*
 * Each GPU's runner options: the shared ones from base, its own device, spec and power; on
 * several GPUs or in phases, lines instead of the one-GPU progress line.
 */
static void node_runner_opts(struct node *nd, const struct mb_runner_opts *base, bool lines)
{
    for (size_t g = 0; g < nd->n; g++) {
        nd->ro[g] = *base;
        nd->ro[g].dev = nd->dev[g];
        nd->ro[g].device_spec = nd->specs.specs[g];
        nd->ro[g].power = &nd->power[g];
        nd->ro[g].seed = base->seed + g;
        nd->ev[g] = (struct node_ev){g, nd->n};
        if (lines) {
            nd->ro[g].on_event = on_node_event;
            nd->ro[g].ctx = &nd->ev[g];
        }
    }
}

/*
 * Checks each GPU before anything changes. With MIG-mode phases only the cells of the mode a GPU
 * has now can be checked against it; the others are checked by the runner after the switch.
 */
static int preflight_node(struct node *nd, const struct mb_experiment *exp,
                          const struct mb_cell *cells, size_t n_cells, bool manage,
                          struct mb_error *err)
{
    struct mb_cell *now = malloc((n_cells ? n_cells : 1) * sizeof(*now));
    if (!now)
        return mb_error_set(err, MB_ENOMEM, "out of memory");
    int rc = MB_OK;
    for (size_t g = 0; g < nd->n && rc == MB_OK; g++) {
        struct mb_mig_mode mm = {0, 0};
        bool mig = mb_device_mig_mode(nd->dev[g], &mm, NULL) == MB_OK;
        size_t k = 0;
        for (size_t i = 0; i < n_cells; i++) {
            int need = mb_migmode_run_needs(&exp->runs[cells[i].run]);
            if (!manage || !mig || need < 0 || need == mm.current)
                now[k++] = cells[i];
        }
        rc = mb_runner_preflight(&nd->ro[g], now, k, err);
    }
    free(now);
    return rc;
}

/* --resume: what the dead run left on each GPU, removed from that GPU. */
static int cleanup_node(struct node *nd, const cJSON *events, struct mb_error *err)
{
    struct mb_leftovers *left = malloc(sizeof(*left));
    struct mb_leftovers *mine = malloc(sizeof(*mine));
    int rc = left && mine ? mb_journal_leftovers(events, left, err)
                          : mb_error_set(err, MB_ENOMEM, "out of memory");
    if (rc == MB_OK && (left->n_mig || left->n_mps))
        mb_cli_info(CMD,
                    "resume: removing %zu MIG instance%s and %zu MPS daemon%s left by the "
                    "interrupted run",
                    left->n_mig, left->n_mig == 1 ? "" : "s", left->n_mps,
                    left->n_mps == 1 ? "" : "s");
    for (size_t g = 0; rc == MB_OK && g < nd->n && (left->n_mig || left->n_mps); g++) {
        memset(mine, 0, sizeof(*mine));
        for (size_t i = 0; i < left->n_mig; i++)
            if (strcmp(left->mig[i].gpu_uuid, nd->info[g].uuid) == 0)
                mine->mig[mine->n_mig++] = left->mig[i];
        if (g == 0) { /* MPS daemons are the host's, cleaned once */
            mine->n_mps = left->n_mps;
            memcpy(mine->mps, left->mps, sizeof(left->mps));
        }
        size_t removed = 0;
        if (mine->n_mig || mine->n_mps)
            rc = mb_runner_cleanup(&nd->ro[g], mine, &removed, err);
    }
    free(left);
    free(mine);
    return rc;
}

/*
 * The cells on every GPU of the node, in MIG-mode phases when manage: returns the exit status
 * and the counts. An interruption restores the GPUs and is journaled.
 */
static int run_node(struct node *nd, const struct run_args *a, const struct mb_experiment *exp,
                    struct mb_cell *cells, size_t n_cells, bool manage, struct mb_journal *journal,
                    const cJSON *events, struct mb_cli_run_export *ex, size_t counts[3])
{
    double *est = calloc(n_cells ? n_cells : 1, sizeof(*est));
    size_t *gpu_of = calloc(n_cells ? n_cells : 1, sizeof(*gpu_of));
    if (!est || !gpu_of) {
        free(est);
        free(gpu_of);
        mb_cli_error(CMD, "out of memory");
        return MB_EXIT_FAIL;
    }
    bool unknown = false;
    for (size_t i = 0; i < n_cells; i++)
        est[i] = cell_seconds(exp, &exp->runs[cells[i].run], &unknown);
    struct node_hooks hooks = {nd, ex};
    struct mb_multirun_opts mo = {.exp = exp,
                                  .cells = cells,
                                  .n_cells = n_cells,
                                  .gpus = nd->ro,
                                  .n_gpus = nd->n,
                                  .journal = journal,
                                  .old_journal = events,
                                  .resume = a->resume,
                                  .manage_mig_mode = manage,
                                  .pin_reps = a->pin_reps,
                                  .est_s = est,
                                  .stop = &stop_signal,
                                  .note = on_node_note,
                                  .cell_done = on_node_cell_done,
                                  .ctx = &hooks};
    struct mb_multirun_result res;
    int rc = mb_multirun(&mo, gpu_of, &res);
    counts[0] = res.ok;
    counts[1] = res.failed;
    counts[2] = res.skipped;
    int code = MB_EXIT_OK;
    if (res.interrupted) {
        int sig = stop_signal ? stop_signal : SIGINT;
        const struct mb_cell *c = &cells[res.interrupted_cell];
        cJSON *ev = cJSON_CreateObject();
        cJSON_AddStringToObject(ev, "event", "interrupted");
        cJSON_AddNumberToObject(ev, "signal", sig);
        cJSON_AddStringToObject(ev, "run", exp->runs[c->run].name);
        cJSON_AddNumberToObject(ev, "rep", c->rep);
        mb_journal_append(journal, ev, NULL);
        cJSON_Delete(ev);
        mb_cli_error(CMD,
                     "interrupted by signal %d; jobs stopped, sharing modes torn down%s; "
                     "continue with --resume",
                     sig, res.phased.restores ? ", MIG modes restored" : "");
        code = 128 + sig;
    } else if (rc != MB_OK) {
        mb_cli_error(CMD, "gpu %zu: %s", res.phased.failed_gpu, res.phased.err.msg);
        code = mb_cli_exit_for(rc) == MB_EXIT_USAGE ? MB_EXIT_USAGE : MB_EXIT_FAIL;
    }
    free(est);
    free(gpu_of);
    return code;
}

static int execute(const struct run_args *a, const struct mb_experiment *exp, const char *spec)
{
    struct mb_error err;
    struct mb_catalog *cat = NULL;
    struct mb_device *dev = NULL;
    struct mb_journal *journal = NULL;
    struct mb_cell *cells = NULL;
    char **notes = NULL;
    size_t n_cells = 0, n_notes = 0;
    cJSON *events = NULL;
    int code = MB_EXIT_OK;
    struct mb_cli_run_export ex = {0};
    struct node *nd = calloc(1, sizeof(*nd));
    bool manage = a->manage_mig_mode || exp->manage_mig_mode;
    if (!nd || mb_catalog_create(&cat, &err) != MB_OK) {
        mb_cli_error(CMD, "%s", nd ? err.msg : "out of memory");
        free(nd);
        return MB_EXIT_FAIL;
    }
    int rc = open_node(spec, nd, &err);
    if (rc != MB_OK) {
        mb_cli_error(CMD, "%s", err.msg);
        code = rc == MB_EINVAL ? MB_EXIT_USAGE : MB_EXIT_FAIL;
        goto out;
    }
    dev = nd->dev[0];
    const struct mb_device_info info = nd->info[0];
    int kind = mb_device_kind_from_backend(info.backend);
    if (kind < 0) {
        mb_cli_error(CMD, "device %s: unknown backend '%s'", spec, info.backend);
        code = MB_EXIT_FAIL;
        goto out;
    }
    const struct mb_gpu_model *model = NULL;
    if (kind != MB_KIND_HOST && open_model(cat, &info, &model) != MB_OK)
        mb_cli_warn(CMD, "GPU model '%s' is not in the MIG catalog", info.model);
    if (mb_experiment_cells(exp, (enum mb_device_kind)kind, a->only, &cells, &n_cells, &notes,
                            &n_notes, &err) != MB_OK) {
        mb_cli_error(CMD, "%s", err.msg);
        code = MB_EXIT_USAGE;
        goto out;
    }
    for (size_t i = 0; i < n_notes; i++)
        mb_cli_info(CMD, "%s", notes[i]);
    if (!manage) {
        size_t n_all = n_cells;
        struct mb_cell *all = malloc((n_all ? n_all : 1) * sizeof(*all));
        if (all)
            memcpy(all, cells, n_all * sizeof(*all));
        filter_by_mig_mode(exp, dev, (enum mb_device_kind)kind, cells, &n_cells);
        char base[PATH_MAX];
        snprintf(base, sizeof(base), "%s%s", a->results ? "" : "results/",
                 a->results ? a->results : exp->name);
        struct mb_cli_two_phase tp = {a->file, spec, base, info.index, info.emulated};
        if (all && n_cells < n_all && mb_cli_verbosity() >= 1)
            mb_cli_print_two_phase(stderr, exp, all, n_all, &tp);
        free(all);
    }
    /* Only the runs that will run here are held to this model's profile names. */
    size_t shown_notes = n_notes;
    if (model &&
        mb_experiment_check_cells(exp, model, cells, &n_cells, &notes, &n_notes, &err) != MB_OK) {
        mb_cli_error(CMD, "%s", err.msg);
        code = MB_EXIT_USAGE;
        goto out;
    }
    for (size_t i = shown_notes; i < n_notes; i++)
        mb_cli_info(CMD, "%s", notes[i]);
    if (n_cells == 0) {
        mb_cli_error(CMD, "no run of %s applies to %s", exp->path, spec);
        code = MB_EXIT_USAGE;
        goto out;
    }
    char dir[PATH_MAX];
    if (a->results)
        snprintf(dir, sizeof(dir), "%s", a->results);
    else
        snprintf(dir, sizeof(dir), "results/%s", exp->name);
    char jpath[PATH_MAX + 32];
    snprintf(jpath, sizeof(jpath), "%s/journal.jsonl", dir);
    struct stat dst;
    if (stat(dir, &dst) == 0 && !S_ISDIR(dst.st_mode)) {
        mb_cli_error(CMD, "--results %s: exists and is not a directory", dir);
        code = MB_EXIT_USAGE;
        goto out;
    }
    if (!a->resume && dir_has_results(dir)) {
        mb_cli_error(CMD,
                     "%s already holds results; add --resume to continue that experiment, or "
                     "--results DIR for a new directory",
                     dir);
        code = MB_EXIT_USAGE;
        goto out;
    }
    size_t skipped_lines = 0;
    if (a->resume) {
        rc = mb_journal_read(jpath, &events, &skipped_lines, &err);
        if (rc != MB_OK) {
            mb_cli_error(CMD, "--resume: %s", err.msg);
            code = rc == MB_ENOTFOUND ? MB_EXIT_USAGE : MB_EXIT_FAIL;
            goto out;
        }
        const cJSON *ev;
        cJSON_ArrayForEach(ev, events)
        {
            const char *name = jstr(ev, "event");
            const char *sha = jstr(ev, "experiment_sha");
            if (name && strcmp(name, "experiment_started") == 0 && sha) {
                if (strcmp(sha, exp->sha) != 0) {
                    mb_cli_error(CMD,
                                 "--resume: %s was started from a different experiment file or "
                                 "--set options (sha %s, now %s); resume with the same ones",
                                 dir, sha, exp->sha);
                    code = MB_EXIT_USAGE;
                    goto out;
                }
                break;
            }
        }
        if (skipped_lines)
            mb_cli_info(CMD, "journal: skipped %zu torn line%s", skipped_lines,
                        skipped_lines == 1 ? "" : "s");
    }
    char python[MB_EXP_PATH_MAX], wdir[PATH_MAX];
    if (resolve_tools(exp, cells, n_cells, python, wdir) != MB_EXIT_OK) {
        code = MB_EXIT_USAGE;
        goto out;
    }
    struct progress_ctx pctx = {.tty = isatty(2) == 1, .n_cells = n_cells, .ex = &ex};
    struct mb_runner_power power = {0}; /* shared by the cells' cool-downs */
    struct mb_runner_opts ro = {
        .exp = exp,
        .dev = dev,
        .device_spec = spec,
        .model = model,
        .kind = (enum mb_device_kind)kind,
        .results_dir = dir,
        .python = python[0] ? python : NULL,
        .workloads_dir = wdir,
        .stop = &stop_signal,
        .on_event = on_runner_event,
        .ctx = &pctx,
        .seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32),
        .power = &power,
    };
    node_runner_opts(nd, &ro, nd->n > 1 || manage);
    /* Nothing has changed yet: refuse here what cannot run (mps off nvml, MIG disabled). */
    if (!a->resume && (rc = preflight_node(nd, exp, cells, n_cells, manage, &err)) != MB_OK) {
        mb_cli_error(CMD, "%s", err.msg);
        code = rc == MB_EUNSUPPORTED ? MB_EXIT_USAGE : MB_EXIT_FAIL;
        goto out;
    }
    /* Before the results directory exists: a textfile that cannot be written changes nothing. */
    if (mb_cli_run_export_open(&ex, a->prometheus, spec, info.uuid, exp->name, dir) != 0) {
        code = MB_EXIT_FAIL;
        goto out;
    }
    if (mb_results_mkdirs(dir, 0755, &err) != MB_OK ||
        mb_journal_open(jpath, &journal, &err) != MB_OK) {
        mb_cli_error(CMD, "%s", err.msg);
        code = MB_EXIT_FAIL;
        goto out;
    }
    ro.journal = journal;
    for (size_t g = 0; g < nd->n; g++)
        nd->ro[g].journal = journal;
    install_handlers();
    if (a->resume) {
        if ((rc = cleanup_node(nd, events, &err)) != MB_OK) {
            mb_cli_error(CMD, "resume: %s; nothing else was run", err.msg);
            code = MB_EXIT_FAIL;
            goto out;
        }
        if ((rc = preflight_node(nd, exp, cells, n_cells, manage, &err)) != MB_OK) {
            mb_cli_error(CMD, "%s", err.msg);
            code = rc == MB_EUNSUPPORTED ? MB_EXIT_USAGE : MB_EXIT_FAIL;
            goto out;
        }
    }
    cJSON *ev = cJSON_CreateObject();
    cJSON_AddStringToObject(ev, "event", "experiment_started");
    cJSON_AddStringToObject(ev, "experiment", exp->name);
    cJSON_AddStringToObject(ev, "experiment_sha", exp->sha);
    cJSON_AddStringToObject(ev, "file", exp->path);
    cJSON *ov = cJSON_AddArrayToObject(ev, "overrides");
    for (size_t i = 0; i < exp->n_overrides; i++)
        cJSON_AddItemToArray(ov, cJSON_CreateString(exp->overrides[i]));
    cJSON_AddStringToObject(ev, "device", spec);
    cJSON *gl = cJSON_AddArrayToObject(ev, "gpus");
    for (size_t g = 0; g < nd->n; g++)
        cJSON_AddItemToArray(gl, cJSON_CreateString(nd->specs.specs[g]));
    cJSON_AddBoolToObject(ev, "manage_mig_mode", manage);
    cJSON_AddStringToObject(ev, "backend", info.backend);
    cJSON_AddNumberToObject(ev, "cells", (double)n_cells);
    cJSON_AddBoolToObject(ev, "resume", a->resume);
    cJSON_AddNumberToObject(ev, "pid", (double)getpid());
    cJSON_AddStringToObject(ev, "migbench_version", MB_VERSION_STRING);
    rc = mb_journal_append(journal, ev, &err);
    cJSON_Delete(ev);
    if (rc != MB_OK) {
        mb_cli_error(CMD, "%s", err.msg);
        code = MB_EXIT_FAIL;
        goto out;
    }

    double estimates_total = 0;
    for (size_t i = 0; i < n_cells; i++) {
        bool unknown = false;
        estimates_total += cell_seconds(exp, &exp->runs[cells[i].run], &unknown);
    }
    size_t n_ok = 0, n_failed = 0, n_skipped = 0;
    if (nd->n > 1 || manage) {
        size_t counts[3];
        code = run_node(nd, a, exp, cells, n_cells, manage, journal, events, &ex, counts);
        n_ok = counts[0];
        n_failed = counts[1];
        n_skipped = counts[2];
        if (code != MB_EXIT_OK)
            goto out;
    }
    for (size_t i = 0; i < n_cells && nd->n == 1 && !manage; i++) {
        const struct mb_exp_run *r = &exp->runs[cells[i].run];
        bool unknown = false;
        double est = cell_seconds(exp, r, &unknown);
        estimates_total -= est;
        if (a->resume && mb_results_cell_done(dir, r->name, cells[i].rep)) {
            n_skipped++;
            continue;
        }
        pctx.cell_index = i;
        pctx.cell_estimate_s = est;
        pctx.remaining_after_s = estimates_total;
        pctx.mode = mb_exp_mode_str(r->mode);
        bool failed = false;
        if (!stop_signal)
            rc = mb_runner_run_cell(&ro, &cells[i], &failed, &err);
        else
            rc = MB_EINTR;
        if (pctx.line_open) {
            fputs("\r\033[K", stderr);
            pctx.line_open = false;
        }
        if (rc == MB_EINTR || stop_signal) {
            int sig = stop_signal ? stop_signal : SIGINT;
            ev = cJSON_CreateObject();
            cJSON_AddStringToObject(ev, "event", "interrupted");
            cJSON_AddNumberToObject(ev, "signal", sig);
            cJSON_AddStringToObject(ev, "run", r->name);
            cJSON_AddNumberToObject(ev, "rep", cells[i].rep);
            mb_journal_append(journal, ev, NULL);
            cJSON_Delete(ev);
            mb_cli_error(CMD,
                         "interrupted by signal %d during %s %u; jobs stopped and the "
                         "sharing mode torn down; continue with --resume",
                         sig, r->name, cells[i].rep);
            code = 128 + sig;
            goto out;
        }
        if (rc != MB_OK) {
            mb_cli_error(CMD, "%s %u: %s", r->name, cells[i].rep, err.msg);
            code = MB_EXIT_FAIL;
            goto out;
        }
        if (failed)
            n_failed++;
        else
            n_ok++;
        mb_cli_run_export_cell_done(&ex);
    }
    ev = cJSON_CreateObject();
    cJSON_AddStringToObject(ev, "event", "experiment_finished");
    cJSON_AddNumberToObject(ev, "ok", (double)n_ok);
    cJSON_AddNumberToObject(ev, "failed", (double)n_failed);
    cJSON_AddNumberToObject(ev, "skipped", (double)n_skipped);
    mb_journal_append(journal, ev, NULL);
    cJSON_Delete(ev);
    print_summary(exp, dir, cells, n_cells);
    mb_cli_info(CMD, "%zu cell%s ok, %zu failed%s; results in %s", n_ok, n_ok == 1 ? "" : "s",
                n_failed, n_skipped ? ", some already done before --resume" : "", dir);
    code = n_failed ? MB_EXIT_FAIL : MB_EXIT_OK;
out:
    mb_cli_run_export_close(&ex);
    cJSON_Delete(events);
    mb_journal_close(journal);
    free(cells);
    mb_notes_free(notes, n_notes);
    close_node(nd);
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
    else
        code = execute(&a, exp, spec);
    mb_experiment_destroy(exp);
    return code;
}

const struct mb_cmd mb_cmd_run = {
    .name = "run",
    .summary = "Run an experiment: jobs under exclusive, time-slicing, MPS and MIG sharing.",
    .usage =
        "migbench run EXP.yaml [--device SPEC] [--results DIR] [--set KEY=VALUE]...\n"
        "                    [--dry-run] [--resume] [--only RUN[,RUN...]] [--prometheus FILE]\n"
        "                    [--manage-mig-mode] [--pin-repetitions]",
    .help = "options:\n"
            "  --device SPEC      run on this device instead of the file's (host, nvml:0,\n"
            "                     nvml:GPU-uuid, emu:H100-80GB[:mig=on,state=PATH]); several\n"
            "                     GPUs (nvml:0,1,2,3, nvml:all, emu:H100-80GB:count=8) run\n"
            "                     one cell each at a time, into one results directory\n"
            "  --results DIR      results directory (default results/<experiment name>)\n"
            "  --set KEY=VALUE    override a setting, e.g. measure.duration=30s (repeatable)\n"
            "  --dry-run          validate against the device's geometry and print the cells,\n"
            "                     layouts and an estimated duration; runs nothing\n"
            "  --resume           continue an interrupted experiment: remove what the dead run\n"
            "                     left on the GPU, then run only the unfinished cells\n"
            "  --only RUN,...     run only these runs\n"
            "  --manage-mig-mode  switch each GPU's MIG mode between the runs that need it off\n"
            "                     and those that need it on (phases), restoring the original at\n"
            "                     the end and on --resume; root and an idle GPU (docs/study.md).\n"
            "                     The same as manage_mig_mode: true in the file\n"
            "  --pin-repetitions  keep every repetition of a run on one GPU (default: spread\n"
            "                     over the GPUs, so that board-to-board spread shows in the CI)\n"
            "  --prometheus FILE  keep FILE as a node_exporter textfile while running: the\n"
            "                     device's live values and each run's energy, attributed per job\n"
            "                     (docs/prometheus.md)\n"
            "\nexit status: 0 all cells ok, 1 some cell failed or a device error, 2 bad input,\n"
            "130/143 interrupted by SIGINT/SIGTERM. See docs/run.md.\n",
    .run = run_main,
};
