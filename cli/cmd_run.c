/* SPDX-License-Identifier: Apache-2.0 */
/* migbench run: run an experiment file (or check it with --dry-run). */
#include <errno.h>
#include <math.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "migbench/analysis.h"
#include "migbench/catalog.h"
#include "migbench/experiment.h"
#include "migbench/device.h"
#include "migbench/gpuqueue.h"
#include "migbench/layout.h"

#include "migbench/results.h"
#include "migbench/runner.h"
#include "migbench/report_verbs.h"
#include "migbench/session.h"
#include "migbench/stats.h"
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
    const char *cells;   /* --cells LIST */
    const char *shard;   /* --shard I/N */
    const char *journal; /* --journal NAME: this invocation's own journal */
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
    uint32_t caps;                    /* MB_CAP_* of the device */
    const struct mb_gpu_model *model; /* GPUs with a catalog model; else NULL */
    char label[256];
    bool mig_on; /* MIG mode is enabled now (read when the device says) */
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
        {"cells", required_argument, NULL, 'C'},
        {"shard", required_argument, NULL, 'S'},
        {"manage-mig-mode", no_argument, NULL, 'M'},
        {"pin-repetitions", no_argument, NULL, 'p'},
        {"journal", required_argument, NULL, 'J'},
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
        case 'C':
            a->cells = optarg;
            break;
        case 'S':
            a->shard = optarg;
            break;
        case 'J':
            a->journal = optarg;
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
    if (a->dry_run && (a->cells || a->shard))
        return mb_cli_usage_error(&mb_cmd_run, "--dry-run takes no --cells or --shard");
    return MB_EXIT_OK;
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
    struct mb_device *dev = NULL;
    if (mb_device_open(spec, &dev, &err) != MB_OK) {
        mb_cli_error(CMD, "%s", err.msg);
        return err.status == MB_EINVAL ? MB_EXIT_USAGE : MB_EXIT_FAIL;
    }
    struct mb_device_info info;
    int rc = mb_device_info(dev, &info, &err);
    t->caps = mb_device_caps(dev);
    struct mb_mig_mode mm;
    t->mig_on = (t->caps & MB_CAP_MIG) && mb_device_mig_mode(dev, &mm, NULL) == MB_OK && mm.current;
    mb_device_close(dev);
    if (rc != MB_OK) {
        mb_cli_error(CMD, "device %s: %s", spec, err.msg);
        return MB_EXIT_FAIL;
    }
    if ((t->caps & MB_CAP_GPU) && info.model[0] &&
        mb_catalog_find(cat, info.model, &t->model, NULL) != MB_OK)
        t->model = NULL;
    if (!(t->caps & MB_CAP_GPU))
        snprintf(t->label, sizeof(t->label), "host (the CPU)");
    else if (t->caps & MB_CAP_EMULATED)
        snprintf(t->label, sizeof(t->label), "%.120s -> %s (emulated)", spec,
                 t->model ? t->model->name : info.name);
    else
        snprintf(t->label, sizeof(t->label), "%.60s -> %.60s%s%.96s%s", spec, info.name,
                 info.uuid[0] ? " (" : "", info.uuid, info.uuid[0] ? ")" : "");
    return MB_EXIT_OK;
}

/* The power limits the real run would set, checked by the check it makes (nothing is set). */
static int dry_power_check(const char *spec, const struct mb_experiment *exp,
                           const struct mb_cell *cells, size_t n_cells)
{
    struct mb_error err;
    struct mb_device *dev = NULL;
    int rc = mb_device_open(spec, &dev, &err);
    if (rc == MB_OK)
        rc = mb_experiment_power_check_device(exp, dev, spec, cells, n_cells, &err);
    mb_device_close(dev);
    if (rc != MB_OK)
        mb_cli_error(CMD, "%s", err.msg);
    return rc == MB_OK ? MB_EXIT_OK : mb_cli_exit_for(rc);
}

/* Each mig run's layout on an empty GPU of the model, and each mps run's thread shares. */
static void print_modes(const struct mb_experiment *exp, const struct target *tp,
                        const struct mb_cell *cells, size_t n_cells)
{
    const struct target t = *tp;
    struct mb_error err;
    for (size_t c = 0; c < n_cells; c++) {
        if (c > 0 && cells[c - 1].run == cells[c].run)
            continue;
        const struct mb_exp_run *r = &exp->runs[cells[c].run];
        if ((r->mode == MB_MODE_MIG || r->on[0]) && t.model) {
            /* The run's own placement rule (mb_exp_run_place), on an empty GPU. */
            struct mb_layout placed = {0};
            struct mb_layout_item job_at[MB_EXP_MAX_JOBS];
            if (mb_exp_run_place(t.model, NULL, r, &placed, job_at, &err) != MB_OK)
                continue;
            printf("\nlayout %s on %s (on an empty GPU; placed beside existing instances at run "
                   "time):\n",
                   r->name, t.model->name);
            for (size_t j = 0; j < r->n_jobs && j < r->n_layout; j++) {
                const struct mb_gi_profile *p = &t.model->profiles[job_at[j].profile];
                char sl[32];
                mb_layout_slices_str(job_at[j].placement, sl, sizeof(sl));
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
            if (t.caps & MB_CAP_EMULATED)
                printf("  note: an emulated GPU has no MPS daemon to serve: without "
                       "nvidia-cuda-mps-control on PATH the jobs get its environment and share "
                       "the GPU\n");
            else if (!(t.caps & MB_CAP_MPS))
                printf("  note: mps runs only on the nvml backend; on this device migbench run "
                       "stops before running anything\n");
        }
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
        items[i] = (struct mb_gpuqueue_item){
            cells[i].run, mb_session_cell_estimate(exp, &exp->runs[cells[i].run], &unknown)};
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

/* The dry run's header: experiment, device, python, notes, cells and the measurement. */
static void dry_header(const struct mb_experiment *exp, const struct target *tp, const char *python,
                       char **notes, size_t n_notes, size_t n_cells)
{
    const struct target t = *tp;
    printf("experiment: %s (%s, sha %s)\n", exp->name, exp->path, exp->sha);
    printf("device: %s\n", t.label);
    if (python[0])
        printf("python: %s\n", python);
    for (size_t i = 0; i < n_notes; i++)
        printf("note: %s\n", notes[i]);
    unsigned reps = mb_experiment_repetitions(exp, t.caps);
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
}

/* Every layout must fit on an empty GPU of the model, by the run's own rule (mb_exp_run_place). */
static int dry_layouts_fit(const struct mb_experiment *exp, const struct mb_gpu_model *model,
                           const struct mb_cell *cells, size_t n_cells)
{
    struct mb_error err;
    for (size_t c = 0; c < n_cells && model; c++) {
        size_t i = cells[c].run;
        const struct mb_exp_run *r = &exp->runs[i];
        if ((r->mode != MB_MODE_MIG && !r->on[0]) || (c > 0 && cells[c - 1].run == i))
            continue;
        struct mb_layout_item placed[MB_EXP_MAX_JOBS];
        if (mb_exp_run_place(model, NULL, r, NULL, placed, &err) != MB_OK) {
            mb_cli_error(CMD, "%s:%u: field 'runs[%zu].layout': does not fit on %s: %s", exp->path,
                         r->line, i, model->name, err.msg);
            return MB_EXIT_USAGE;
        }
    }
    return MB_EXIT_OK;
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
    if (mb_experiment_cells(exp, t.caps, a->only, &cells, &n_cells, &notes, &n_notes, &err) !=
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
    if ((code = dry_power_check(spec, exp, cells, n_cells)) != MB_EXIT_OK)
        goto out;
    if ((code = dry_layouts_fit(exp, t.model, cells, n_cells)) != MB_EXIT_OK)
        goto out;
    char python[MB_EXP_PATH_MAX], wdir[PATH_MAX];
    if (mb_session_resolve_tools(exp, cells, n_cells, python, sizeof(python), wdir, sizeof(wdir),
                                 &err) != MB_OK) {
        mb_cli_error(CMD, "%s", err.msg);
        code = MB_EXIT_USAGE;
        goto out;
    }

    dry_header(exp, &t, python, notes, n_notes, n_cells);
    int nw = name_width(exp);
    printf("\n%-*s %-10s %s\n", nw, "run", "mode", "jobs");
    double total = 0;
    bool unknown = false;
    for (size_t c = 0; c < n_cells; c++) {
        const struct mb_exp_run *r = &exp->runs[cells[c].run];
        total += mb_session_cell_estimate(exp, r, &unknown);
        if (c > 0 && cells[c - 1].run == cells[c].run)
            continue;
        printf("%-*s %-10s", nw, r->name, mb_exp_mode_str(r->mode));
        for (size_t j = 0; j < r->n_jobs; j++)
            printf("%s%s", j ? ", " : " ", r->job_name[j]);
        printf("\n");
    }
    print_modes(exp, &t, cells, n_cells);
    printf("\ncommands (%s):\n", (t.caps & MB_CAP_GPU) ? "gpu_args" : "host_args");
    for (size_t i = 0; i < exp->n_workloads; i++) {
        char **argv;
        if (mb_experiment_job_argv(&exp->workloads[i], python[0] ? python : NULL, wdir,
                                   (t.caps & MB_CAP_GPU) != 0, &argv, &err) != MB_OK)
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
    /* An emulated GPU in MIG mode runs the whole-GPU modes too (session.c, filter_by_mig_mode):
     * there every cell runs, and the note that only one mode's cells run would be wrong. */
    bool manage = a->manage_mig_mode || exp->manage_mig_mode;
    if ((t.caps & MB_CAP_GPU) && (manage || !(t.caps & MB_CAP_EMULATED) || !t.mig_on))
        print_phases(exp, cells, n_cells, manage);
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

/* Notes and warnings of the session, and where the progress line stands. */
static void on_session_event(void *vctx, const struct mb_session_event *ev)
{
    struct progress_ctx *p = vctx;
    switch (ev->kind) {
    case MB_SESSION_NOTE:
        mb_cli_info(CMD, "%s", ev->text);
        break;
    case MB_SESSION_WARN:
        mb_cli_warn(CMD, "%s", ev->text);
        break;
    case MB_SESSION_CELL:
        p->cell_index = ev->cell;
        p->n_cells = ev->n_cells;
        p->cell_estimate_s = ev->cell_estimate_s;
        p->remaining_after_s = ev->remaining_after_s;
        p->mode = ev->mode;
        break;
    case MB_SESSION_CELL_DONE:
        if (p->line_open) {
            fputs("\r\033[K", stderr);
            p->line_open = false;
        }
        mb_cli_run_export_cell_done(p->ex);
        break;
    }
}

static int exit_for(int rc)
{
    return rc == MB_EINVAL ? MB_EXIT_USAGE : MB_EXIT_FAIL;
}

/*
 * Without MIG-mode management, the cells the GPU's current MIG mode cannot run are skipped: the
 * exact commands that run them in two phases instead. Changes nothing.
 */
static void two_phase_hint(const struct run_args *a, const struct mb_session *s, const char *spec)
{
    const struct mb_experiment *exp = mb_session_experiment(s);
    const struct mb_device_info *info = mb_session_device_info(s);
    const struct mb_cell *cells = NULL;
    size_t n_cells = 0;
    if (mb_cli_verbosity() < 1 || mb_session_mig_mode_cells(s, &cells, &n_cells) == 0)
        return;
    char base[PATH_MAX];
    snprintf(base, sizeof(base), "%s%s", a->results ? "" : "results/",
             a->results ? a->results : exp->name);
    struct mb_cli_two_phase tp = {a->file, spec, base, info->index, info->emulated};
    mb_cli_print_two_phase(stderr, exp, cells, n_cells, &tp);
}

/* Opens the session and checks that it can start; nothing has changed yet. */
static int open_session(const struct run_args *a, const struct mb_experiment *exp, const char *spec,
                        struct progress_ctx *pctx, struct mb_session **s)
{
    struct mb_error err;
    struct mb_session_opts so = {
        .device_spec = spec,
        .results_dir = a->results,
        .journal_name = a->journal,
        .only = a->only,
        .resume = a->resume,
        .stop = &stop_signal,
        .on_event = on_session_event,
        .on_runner_event = on_runner_event,
        .ctx = pctx,
        .manage_mig_mode = a->manage_mig_mode || exp->manage_mig_mode,
        .pin_reps = a->pin_reps,
    };
    int rc = mb_session_open(exp, &so, s, &err);
    if (rc == MB_OK)
        two_phase_hint(a, *s, spec);
    if (rc == MB_OK)
        rc = mb_session_select(*s, a->cells, a->shard, &err);
    if (rc == MB_OK)
        rc = mb_session_check(*s, &err);
    if (rc != MB_OK) {
        mb_cli_error(CMD, "%s", err.msg);
        return exit_for(rc);
    }
    pctx->n_cells = mb_session_cells(*s, NULL, NULL);
    return MB_EXIT_OK;
}

static int execute(const struct run_args *a, const struct mb_experiment *exp, const char *spec)
{
    struct mb_error err;
    struct mb_session *s = NULL;
    struct mb_cli_run_export ex = {0};
    struct progress_ctx pctx = {.tty = isatty(2) == 1, .ex = &ex};
    int code = open_session(a, exp, spec, &pctx, &s);
    const char *dir = s ? mb_session_results_dir(s) : "";
    /* Before the results directory exists: a textfile that cannot be written changes nothing. */
    if (code == MB_EXIT_OK &&
        mb_cli_run_export_open(&ex, a->prometheus, spec, mb_session_device_info(s)->uuid, exp->name,
                               dir) != 0)
        code = MB_EXIT_FAIL;
    if (code == MB_EXIT_OK) {
        install_handlers();
        int rc = mb_session_start(s, &err);
        struct mb_session_summary sum = {0};
        if (rc == MB_OK)
            rc = mb_session_run(s, &sum, &err);
        if (pctx.line_open)
            fputs("\r\033[K", stderr);
        if (rc == MB_EINTR) {
            /* A --journal run is one task of a Slurm array or Indexed Job: --resume does not
             * go with --journal; the cell is run again by submitting again. */
            mb_cli_error(CMD, "%s; jobs stopped and the sharing mode torn down; %s", err.msg,
                         a->journal ? "the cell has no result: submit again (migbench slurm "
                                      "submit EXP.yaml) to run it"
                                    : "continue with --resume");
            code = 128 + (sum.signal ? sum.signal : SIGINT);
        } else if (rc != MB_OK) {
            mb_cli_error(CMD, "%s", err.msg);
            code = exit_for(rc);
        } else {
            const struct mb_cell *cells;
            size_t n = mb_session_cells(s, &cells, NULL);
            mb_run_summary_write(stdout, exp, dir, cells, n, name_width(exp));
            char skipped[96] = "";
            if (sum.skipped)
                snprintf(skipped, sizeof(skipped), ", %zu skipped (%s)", sum.skipped,
                         a->resume ? "already done before --resume"
                                   : "already done, or running in another invocation");
            mb_cli_info(CMD, "%zu cell%s ok, %zu failed%s; results in %s", sum.ok,
                        sum.ok == 1 ? "" : "s", sum.failed, skipped, dir);
            code = sum.failed ? MB_EXIT_FAIL : MB_EXIT_OK;
        }
    }
    mb_cli_run_export_close(&ex);
    mb_session_close(s);
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
        "                    [--cells LIST] [--shard I/N] [--journal NAME] [--manage-mig-mode]\n"
        "                    [--pin-repetitions]",
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
            "  --only RUN,...     run only these runs (a selection, as --cells RUN,...)\n"
            "  --cells LIST       run only these cells: indices and ranges of the cell list\n"
            "                     (0-2,5) and run names; into a directory that holds the same\n"
            "                     experiment, cells already done there are skipped\n"
            "  --shard I/N        run every N-th cell from the I-th (0 <= I < N), after --cells\n"
            "  --journal NAME     keep this invocation's own journal-NAME.jsonl in the results\n"
            "                     directory (Slurm array tasks on other nodes; docs/slurm.md)\n"
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
