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
#include "migbench/experiment.h"
#include "migbench/exporter.h"
#include "migbench/measure.h"
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
    const struct opts *o;
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

/* The command after the options ("--" before it or not), and the options that need one. */
static int parse_command(int argc, char **argv, struct opts *o)
{
    if (optind < argc)
        o->argv = argv + optind; /* a command without "--" before it is accepted too */
    if (!o->argv || !o->argv[0])
        return mb_cli_usage_error(&mb_cmd_measure, "no command given (put it after --)");
    if (o->samples_per_step > 0 && !o->regex)
        return mb_cli_usage_error(&mb_cmd_measure,
                                  "--samples-per-step goes with --progress-regex (jobs using "
                                  "MIGBENCH_PROGRESS_FD report samples= themselves)");
    return MB_EXIT_OK;
}

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
    return parse_command(argc, argv, o);
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

/* The caller's side of mb_measure_run: --prometheus opened once the meter exists, refreshed
 * while the command runs. */
static int on_ready(void *ctx, const struct mb_measure_report *r, struct mb_error *err)
{
    (void)r;
    struct measure_prom *prom = ctx;
    int rc = prom->o->prometheus ? measure_prom_open(prom->o, &prom->x, err) : MB_OK;
    if (rc == MB_OK)
        install_signals(); /* from here on SIGINT/SIGTERM go to the command */
    return rc;
}

static void on_tick(void *ctx)
{
    measure_prom_tick(ctx, false);
}

/* The exit status for a call that failed at stage (timeout(1)'s codes). */
static int failure_exit(enum mb_measure_stage stage, int rc, const struct mb_error *err)
{
    switch (stage) {
    case MB_MEASURE_USAGE:
        return mb_cli_usage_error(&mb_cmd_measure, "%s", err->msg);
    case MB_MEASURE_SPAWN:
        mb_cli_error(NAME, "%s", err->msg);
        return mb_proc_spawn_exit_code(rc);
    case MB_MEASURE_INTERRUPTED:
        mb_cli_error(NAME, "%s", err->msg);
        return 128 + pending_signal;
    default:
        mb_cli_error(NAME, "%s", err->msg[0] ? err->msg : "failed");
        return EXIT_OWN_FAILURE;
    }
}

static int measure_run(int argc, char **argv)
{
    struct opts o;
    int rc = parse(argc, argv, &o);
    if (rc < 0)
        return MB_EXIT_OK;
    if (rc != MB_EXIT_OK)
        return rc;
    struct measure_prom prom = {.o = &o};
    struct mb_measure_opts mo = {.device = o.device,
                                 .argv = o.argv,
                                 .interval_ns = o.interval_ns,
                                 .idle_ns = o.idle_ns,
                                 .warmup_ns = o.warmup_ns,
                                 .warmup_steps = o.warmup_steps,
                                 .regex = o.regex,
                                 .samples_per_step = o.samples_per_step,
                                 .unit = o.unit,
                                 .csv = o.csv,
                                 .min_window_ns = o.min_window_ns,
                                 .stdout_to_stderr = o.json, /* stdout is the JSON's */
                                 .pty = o.pty,
                                 .python_buffered = o.python_buffered,
                                 .signal = &pending_signal,
                                 .ready = on_ready,
                                 .tick = on_tick,
                                 .ctx = &prom};
    struct mb_measure_report r;
    enum mb_measure_stage stage;
    struct mb_error err;
    mb_error_clear(&err);
    rc = mb_measure_run(&mo, &r, &stage, &err);
    int exit_code;
    if (rc != MB_OK) {
        exit_code = failure_exit(stage, rc, &err);
    } else {
        double job_j;
        if (prom.x && mb_energy_best(&r.job, &job_j))
            mb_exporter_job(prom.x, o.argv[0], job_j,
                            r.job.counter_valid ? "counter" : "integrated");
        measure_prom_tick(&prom, true);
        if (mb_cli_verbosity() > 0)
            mb_measure_text_write(stderr, &r);
        exit_code = r.exit_code;
        if (o.json && !print_json(&r)) {
            mb_cli_error(NAME, "out of memory");
            exit_code = EXIT_OWN_FAILURE;
        }
    }
    mb_exporter_destroy(prom.x);
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
