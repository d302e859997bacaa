/* SPDX-License-Identifier: Apache-2.0 */
/* migbench measure: run one command with the meter around it (perf stat for GPU energy). */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "migbench/clock.h"
#include "migbench/experiment.h"
#include "migbench/exporter.h"
#include "migbench/meter.h"
#include "migbench/num.h"
#include "migbench/proc.h"
#include "migbench/progress.h"
#include "migbench/report_verbs.h"

#define NAME "measure"
#define EXIT_OWN_FAILURE 125 /* timeout(1)'s code for its own failure */

/* Set by the signal handler, read by the poll loop: the one piece of state a handler may touch. */
static volatile sig_atomic_t pending_signal;

static void on_signal(int sig)
{
    pending_signal = sig;
}

struct opts {
    const char *device;
    int64_t interval_ns;
    int64_t idle_ns;
    int64_t warmup_ns;
    uint64_t warmup_steps;
    const char *regex;
    double samples_per_step;
    const char *unit;
    bool json;
    const char *csv;
    int64_t min_window_ns;
    const char *prometheus; /* --prometheus FILE, or NULL */
    bool pty;
    bool python_buffered;
    char **argv;
};

struct job {
    struct mb_progress *pipe_prog;
    struct mb_progress *regex_prog;
    struct mb_meter *meter;
    int64_t origin_ns;
    int64_t warmup_ns;
    uint64_t warmup_steps;
    int steady_id; /* -1 until the warm-up is over */
    struct mb_error err;
};

/*
 * A duration as experiment files write it (mb_amount_parse: "100ms", "1.5m"), plus the bare
 * number of seconds that measure documents; at most a day. With steps, also "20steps".
 */
static bool parse_amount(const char *s, bool steps, int64_t *ns, uint64_t *n_steps)
{
    char secs[64];
    double bare;
    if (mb_num_parse(s, &bare, NULL) == MB_OK) {
        int n = snprintf(secs, sizeof(secs), "%ss", s);
        if (n < 0 || (size_t)n >= sizeof(secs))
            return false;
        s = secs;
    }
    struct mb_amount a;
    if (mb_amount_parse(s, steps, false, &a, NULL) != MB_OK)
        return false;
    if (a.kind == MB_AMOUNT_STEPS) { /* only when steps */
        *ns = 0;
        *n_steps = a.steps;
        return true;
    }
    if (a.ns > 86400LL * 1000000000LL)
        return false;
    *ns = a.ns;
    if (n_steps)
        *n_steps = 0;
    return true;
}

static bool parse_duration(const char *s, int64_t *out)
{
    return parse_amount(s, false, out, NULL);
}

static void on_data(void *ctx, enum mb_proc_stream s, const char *buf, size_t n, int64_t t_ns)
{
    struct job *j = ctx;
    struct mb_progress *p = s == MB_PROC_PROGRESS ? j->pipe_prog
                            : s == MB_PROC_STDOUT ? j->regex_prog
                                                  : NULL;
    if (!p)
        return;
    mb_progress_feed(p, buf, n, t_ns);
    /* The steady window opens with the first record past the warm-up, as the throughput does. */
    struct mb_progress_point last;
    struct mb_progress *use = j->regex_prog ? j->regex_prog : j->pipe_prog;
    if (j->steady_id == -1 && p == use && mb_progress_last(p, &last) &&
        last.t_ns >= j->origin_ns + j->warmup_ns && last.step >= j->warmup_steps) {
        if (mb_meter_window_begin(j->meter, last.t_ns, &j->steady_id, &j->err) != MB_OK)
            j->steady_id = -2; /* no slot: leave it out */
    }
}

/* Sleeps ns or until a signal arrives; returns false when interrupted. */
static bool sleep_interruptible(int64_t ns)
{
    int64_t end = mb_meter_now_ns() + ns;
    while (!pending_signal) {
        int64_t left = end - mb_meter_now_ns();
        if (left <= 0)
            return true;
        if (left > 100000000)
            left = 100000000;
        struct timespec ts = {(time_t)(left / 1000000000), (long)(left % 1000000000)};
        nanosleep(&ts, NULL);
    }
    return false;
}

/* How long a window's result may take: a few sample periods beyond the averaging shift. */
static int window_wait_ms(const struct mb_meter *m)
{
    struct mb_sensor_info si;
    mb_meter_device(m, NULL, &si);
    int64_t ms = 3 * mb_meter_interval_ns(m) / 1000000 + si.power_avg_window_ms + 2000;
    return ms > 60000 ? 60000 : (int)ms;
}

/*
 * A window's result; when samples stop coming (a failing or lost sensor) the meter is stopped so
 * the window ends with what it has (marked truncated) and the job's exit status still stands.
 */
static int window_result(struct mb_meter *m, int id, struct mb_energy *out, struct mb_error *err)
{
    int rc = mb_meter_window_result(m, id, window_wait_ms(m), out, err);
    if (rc == MB_ETIMEDOUT) {
        mb_meter_stop(m, NULL);
        rc = mb_meter_window_result(m, id, 0, out, err);
    }
    return rc;
}

/* ---- output -------------------------------------------------------------------------------- */

/* The job's energy: the counter when there is one, else the integral. */
/* --prometheus: a textfile with the device's live values, and at the end the job's energy. */
static int measure_prom_open(const struct opts *o, struct mb_exporter **out, struct mb_error *err)
{
    struct mb_exporter_opts eo = {.path = o->prometheus, .device_spec = o->device};
    int rc = mb_exporter_create(&eo, out, err);
    if (rc == MB_OK)
        rc = mb_exporter_write(*out, err);
    if (rc != MB_OK)
        mb_error_prefix(err, "--prometheus %s: ", o->prometheus);
    return rc;
}

struct measure_prom {
    struct mb_exporter *x; /* NULL without --prometheus */
    int64_t last_ns;
    bool warned;
};

/* Rewrites the textfile about once a second (always when final); a failure is said once. */
static void measure_prom_tick(struct measure_prom *p, bool final)
{
    if (!p->x)
        return;
    int64_t now = mb_meter_now_ns();
    if (!final && now - p->last_ns < 1000000000LL)
        return;
    p->last_ns = now;
    struct mb_error err;
    if (mb_exporter_write(p->x, &err) != MB_OK && !p->warned) {
        mb_cli_warn(NAME, "--prometheus: %s", err.msg);
        p->warned = true;
    }
}

static bool print_json(const struct mb_measure_report *r)
{
    char *text = mb_measure_json(r);
    if (!text)
        return false;
    fputs(text, stdout);
    fputc('\n', stdout);
    fflush(stdout);
    free(text);
    return true;
}

/* ---- the command ------------------------------------------------------------------------- */

static int parse(int argc, char **argv, struct opts *o)
{
    static const struct option longopts[] = {
        {"device", required_argument, NULL, 'd'},
        {"interval", required_argument, NULL, 'i'},
        {"idle", required_argument, NULL, 'I'},
        {"warmup", required_argument, NULL, 'w'},
        {"progress-regex", required_argument, NULL, 'r'},
        {"samples-per-step", required_argument, NULL, 'n'},
        {"unit", required_argument, NULL, 'u'},
        {"json", no_argument, NULL, 'j'},
        {"csv", required_argument, NULL, 'c'},
        {"min-window", required_argument, NULL, 'm'},
        {"prometheus", required_argument, NULL, 'P'},
        {"pty", no_argument, NULL, 'T'},
        {"python-buffered", no_argument, NULL, 'B'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    *o = (struct opts){.device = "auto", .interval_ns = MB_METER_INTERVAL_DEFAULT_NS};
    optind = 1;
    opterr = 0;
    int c;
    /* '+': stop at the first non-option so the command's own options are left alone. */
    while ((c = getopt_long(argc, argv, "+:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'd':
            o->device = optarg;
            break;
        case 'i':
            if (!parse_duration(optarg, &o->interval_ns) ||
                o->interval_ns < MB_METER_INTERVAL_MIN_NS ||
                o->interval_ns > MB_METER_INTERVAL_MAX_NS)
                return mb_cli_usage_error(
                    &mb_cmd_measure, "--interval '%s': expected 1ms .. 10s (e.g. 100ms)", optarg);
            break;
        case 'I':
            if (!parse_duration(optarg, &o->idle_ns))
                return mb_cli_usage_error(&mb_cmd_measure,
                                          "--idle '%s': expected a duration (e.g. 5s)", optarg);
            break;
        case 'w':
            if (!parse_amount(optarg, true, &o->warmup_ns, &o->warmup_steps))
                return mb_cli_usage_error(&mb_cmd_measure,
                                          "--warmup '%s': expected a duration (10s) or steps "
                                          "(20steps)",
                                          optarg);
            break;
        case 'r':
            o->regex = optarg;
            break;
        case 'n':
            if (mb_num_parse(optarg, &o->samples_per_step, NULL) != MB_OK ||
                !(o->samples_per_step > 0) || o->samples_per_step > 1e12)
                return mb_cli_usage_error(
                    &mb_cmd_measure, "--samples-per-step '%s': expected a positive number", optarg);
            break;
        case 'u':
            if (!optarg[0] || strlen(optarg) > 32)
                return mb_cli_usage_error(&mb_cmd_measure, "--unit: expected a short name");
            o->unit = optarg;
            break;
        case 'j':
            o->json = true;
            break;
        case 'c':
            o->csv = optarg;
            break;
        case 'm':
            if (!parse_duration(optarg, &o->min_window_ns) || o->min_window_ns == 0)
                return mb_cli_usage_error(
                    &mb_cmd_measure, "--min-window '%s': expected a positive duration", optarg);
            break;
        case 'P':
            o->prometheus = optarg;
            break;
        case 'T':
            o->pty = true;
            break;
        case 'B':
            o->python_buffered = true;
            break;
        case 'h':
            mb_cli_print_help(&mb_cmd_measure, stdout);
            return -1;
        case ':':
            return mb_cli_usage_error(&mb_cmd_measure, "option '%s' needs a value",
                                      argv[optind - 1]);
        default:
            return mb_cli_usage_error(&mb_cmd_measure, "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc && !strcmp(argv[optind - 1], "--"))
        o->argv = argv + optind;
    else if (optind < argc)
        o->argv = argv + optind; /* a command without "--" before it is accepted too */
    if (!o->argv || !o->argv[0])
        return mb_cli_usage_error(&mb_cmd_measure, "no command given (put it after --)");
    if (o->samples_per_step > 0 && !o->regex)
        return mb_cli_usage_error(&mb_cmd_measure,
                                  "--samples-per-step goes with --progress-regex (jobs using "
                                  "MIGBENCH_PROGRESS_FD report samples= themselves)");
    return MB_EXIT_OK;
}

/* Ends the job's window and the steady one (when it began) at t_end and fetches their results
 * and the meter's counts into r. */
static int end_windows(struct job *j, int job_id, int64_t t_end, struct mb_measure_report *r,
                       struct mb_error *err)
{
    /* End both windows at once, before waiting on either: a window cannot end before samples
     * that were already folded into it, and waiting lets the meter take more. */
    int ends[2] = {job_id, j->steady_id};
    int rc = mb_meter_window_end_n(j->meter, ends, j->steady_id >= 0 ? 2 : 1, t_end, err);
    if (rc == MB_OK)
        rc = window_result(j->meter, job_id, &r->job, err);
    if (rc == MB_OK && j->steady_id >= 0) {
        rc = window_result(j->meter, j->steady_id, &r->steady, err);
        if (rc != MB_OK)
            return rc;
        r->have_steady = true;
        j->steady_id = -1;
    }
    if (rc != MB_OK)
        return rc;
    mb_meter_stop(j->meter, NULL);
    mb_meter_get_counts(j->meter, &r->counts);
    return MB_OK;
}

/* Fills r's progress, throughput, unit, energy per unit and static/dynamic split. */
static void derive(const struct opts *o, struct job *j, struct mb_measure_report *r)
{
    struct mb_progress *use = j->regex_prog ? j->regex_prog : j->pipe_prog;
    r->progress_regex = j->regex_prog != NULL;
    mb_progress_get_counts(use, &r->pc);
    r->have_progress = mb_progress_first(use, &r->first) && mb_progress_last(use, &r->last);
    mb_progress_throughput(use, j->origin_ns, o->warmup_ns, o->warmup_steps, 10, &r->tp);
    r->unit = o->unit                            ? o->unit
              : mb_progress_unit_name(use)       ? mb_progress_unit_name(use)
              : mb_progress_unit_is_samples(use) ? "samples"
                                                 : "steps";
    mb_measure_report_derive(r);
}

static void install_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal; /* no SA_RESTART: poll and nanosleep return at once */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
}

/* Starts the command with the progress pipe, its output teed (to stderr with --json). */
static int spawn_job(const struct opts *o, struct job *j, struct mb_proc **proc,
                     struct mb_error *err)
{
    bool capture = o->json || o->regex || o->pty;
    /* An unmodified Python job block-buffers a piped stdout; its progress would come in bursts. */
    char unbuffered[] = "PYTHONUNBUFFERED=1";
    char *env[] = {o->python_buffered ? NULL : unbuffered, NULL};
    struct mb_proc_spec ps = {
        .argv = o->argv,
        .env = env,
        .progress_pipe = true,
        .capture = capture,
        .pty = o->pty,
        /* With --json stdout is ours: the command's output goes to stderr instead. */
        .tee_stdout_fd = o->json ? 2 : 1,
        .tee_stderr_fd = 2,
        .on_data = on_data,
        .ctx = j,
    };
    return mb_proc_spawn(&ps, proc, err);
}

static int measure_run(int argc, char **argv)
{
    struct opts o;
    int rc = parse(argc, argv, &o);
    if (rc < 0)
        return MB_EXIT_OK;
    if (rc != MB_EXIT_OK)
        return rc;

    struct job j = {.steady_id = -1, .warmup_ns = o.warmup_ns, .warmup_steps = o.warmup_steps};
    struct mb_measure_report r = {.argv = o.argv,
                                  .device_spec = o.device,
                                  .interval_ns = o.interval_ns,
                                  .csv = o.csv,
                                  .warmup_ns = o.warmup_ns,
                                  .warmup_steps = o.warmup_steps};
    struct mb_proc *proc = NULL;
    struct mb_error err;
    mb_error_clear(&err);
    int exit_code = EXIT_OWN_FAILURE;
    int job_id = -1, idle_id = -1;
    struct measure_prom prom = {0};

    /* Made before the spawn: the job's own clock cannot run longer than this. */
    struct mb_progress_opts po = {.started_ns = mb_clock_monotonic_ns()};
    if (mb_progress_create(&po, &j.pipe_prog, &err) != MB_OK)
        goto fail;
    if (o.regex) {
        po.regex = o.regex;
        po.samples_per_step = o.samples_per_step;
        if (mb_progress_create(&po, &j.regex_prog, &err) != MB_OK) {
            exit_code = mb_cli_usage_error(&mb_cmd_measure, "%s", err.msg);
            goto out;
        }
    }
    /* Inside a Slurm or Kubernetes job the scheduler names the GPU or MIG instance by UUID. */
    if (mb_device_resolve_visible(o.device, getenv("CUDA_VISIBLE_DEVICES"), &r.vis, &err) !=
        MB_OK) {
        if (err.status == MB_EINVAL || err.status == MB_ENOTFOUND) {
            exit_code = mb_cli_usage_error(&mb_cmd_measure, "%s", err.msg);
            goto out;
        }
        goto fail;
    }
    r.device_spec = r.vis.spec;
    struct mb_meter_opts mo = {.device_spec = r.vis.spec,
                               .interval_ns = o.interval_ns,
                               .csv_path = o.csv,
                               .min_window_ns = o.min_window_ns};
    if (mb_meter_create(&mo, &j.meter, &err) != MB_OK) {
        if (err.status == MB_EINVAL) {
            exit_code = mb_cli_usage_error(&mb_cmd_measure, "%s", err.msg);
            goto out;
        }
        goto fail;
    }
    mb_meter_device(j.meter, &r.info, &r.sensor);
    if (o.prometheus && measure_prom_open(&o, &prom.x, &err) != MB_OK)
        goto fail;

    install_signals();

    if (mb_meter_start(j.meter, &err) != MB_OK)
        goto fail;
    if (o.idle_ns > 0) {
        if (mb_meter_window_begin(j.meter, mb_meter_now_ns(), &idle_id, &err) != MB_OK)
            goto fail;
        if (!sleep_interruptible(o.idle_ns)) {
            mb_cli_error(NAME, "interrupted by signal %d before the command started",
                         (int)pending_signal);
            exit_code = 128 + pending_signal;
            goto out;
        }
        if (mb_meter_window_end(j.meter, idle_id, mb_meter_now_ns(), &err) != MB_OK ||
            mb_meter_window_result(j.meter, idle_id, window_wait_ms(j.meter), &r.idle, &err) !=
                MB_OK)
            goto fail;
        r.have_idle = true;
        idle_id = -1;
    }

    j.origin_ns = mb_meter_now_ns();
    if (mb_meter_window_begin(j.meter, j.origin_ns, &job_id, &err) != MB_OK)
        goto fail;
    rc = spawn_job(&o, &j, &proc, &err);
    if (rc != MB_OK) {
        mb_cli_error(NAME, "%s", err.msg);
        exit_code = mb_proc_spawn_exit_code(rc);
        goto out;
    }
    while (!mb_proc_done(proc)) {
        if (pending_signal) {
            int sig = pending_signal;
            pending_signal = 0;
            mb_proc_signal(proc, sig);
        }
        rc = mb_proc_poll(&proc, 1, 100, &err);
        if (rc != MB_OK && rc != MB_EINTR)
            goto fail;
        measure_prom_tick(&prom, false);
    }
    int64_t t_end = mb_meter_now_ns();
    r.exit_code = mb_proc_exit_code(proc);
    r.wall_s = (double)(t_end - j.origin_ns) * 1e-9;
    mb_progress_end(j.pipe_prog);
    if (j.regex_prog)
        mb_progress_end(j.regex_prog);

    if (end_windows(&j, job_id, t_end, &r, &err) != MB_OK)
        goto fail;
    job_id = -1;
    derive(&o, &j, &r);
    double job_j;
    if (prom.x && mb_energy_best(&r.job, &job_j))
        mb_exporter_job(prom.x, o.argv[0], job_j, r.job.counter_valid ? "counter" : "integrated");
    measure_prom_tick(&prom, true);
    if (mb_cli_verbosity() > 0)
        mb_measure_text_write(stderr, &r);
    if (o.json && !print_json(&r)) {
        mb_cli_error(NAME, "out of memory");
        exit_code = EXIT_OWN_FAILURE;
        goto out;
    }
    exit_code = r.exit_code;
    goto out;

fail:
    mb_cli_error(NAME, "%s", err.msg[0] ? err.msg : "failed");
    exit_code = EXIT_OWN_FAILURE;
out:
    mb_proc_destroy(proc);
    mb_exporter_destroy(prom.x);
    mb_meter_destroy(j.meter);
    mb_progress_destroy(j.pipe_prog);
    mb_progress_destroy(j.regex_prog);
    return exit_code;
}

const struct mb_cmd mb_cmd_measure = {
    .name = NAME,
    .summary = "Run one command and report its time, energy, power and work rate.",
    .usage = "migbench measure [--device SPEC] [--interval 100ms] [--idle 5s] "
             "[--warmup 10s|20steps]\n"
             "                        [--progress-regex RE --samples-per-step N] [--unit NAME] "
             "[--json]\n"
             "                        [--csv FILE] [--min-window S] [--prometheus FILE] [--pty]\n"
             "                        [--python-buffered] -- CMD [ARGS...]",
    .help =
        "Runs CMD (no shell) with the meter sampling the device around it, then prints a summary\n"
        "to stderr: wall time, energy from the hardware counter and from integrated power with\n"
        "their gap, mean and peak power, samples, work done, steady throughput with a 95%\n"
        "confidence interval, and energy per unit of work. Values the device cannot give are\n"
        "n/a (null in JSON), never 0.\n"
        "\n"
        "  --device SPEC        auto (default), nvml:N, host, emu:MODEL[:opts]\n"
        "  --interval D         sampling interval, 1ms .. 10s (default 100ms)\n"
        "  --idle D             measure idle power for D before starting CMD\n"
        "  --warmup D|Nsteps    leave the first D (or N steps) out of the throughput\n"
        "  --progress-regex RE  POSIX ERE over CMD's stdout; its first group is the step, its\n"
        "                       second (optional) CMD's own clock in seconds\n"
        "  --samples-per-step N with --progress-regex: work units per step\n"
        "  --unit NAME          name of the work unit in the output (images, tokens, ...)\n"
        "  --json               the summary as JSON on stdout (CMD's stdout then goes to stderr)\n"
        "  --csv FILE           write every sample to FILE\n"
        "  --min-window D       refuse energy for windows shorter than D (default: the larger\n"
        "                       of 2 x the sensor's update period and 1 s)\n"
        "  --prometheus FILE    keep FILE as a node_exporter textfile: the device's live values\n"
        "                       while CMD runs, then CMD's energy (docs/prometheus.md)\n"
        "  --pty                run CMD with its stdout on a pseudo-terminal, so that programs\n"
        "                       that block-buffer a pipe (C stdio) write it line by line\n"
        "  --python-buffered    do not set PYTHONUNBUFFERED=1 for CMD (set by default)\n"
        "\n"
        "CMD finds its progress pipe in MIGBENCH_PROGRESS_FD and writes lines such as\n"
        "'step=120 samples=7680' (t=SECONDS its own clock, unit=tokens its unit). Progress that\n"
        "arrives in bursts (buffered output) gets no throughput unless it carries its own clock.\n"
        "SIGINT and SIGTERM are forwarded to CMD. The exit status is\n"
        "CMD's, as timeout(1) gives it: 128+N when killed by signal N, 127 when CMD is not found,\n"
        "126 when it cannot be executed, 125 when migbench itself failed, 2 for usage errors.\n",
    .run = measure_run,
};
