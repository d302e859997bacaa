/* SPDX-License-Identifier: Apache-2.0 */
/* migbench monitor: a live, read-only view of GPUs and MIG instances. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "migbench/clock.h"
#include "migbench/experiment.h"
#include "migbench/monitor.h"
#include "migbench/num.h"
#include "migbench/prom.h"

#define CMD "monitor"
#define MAX_SPECS MB_MONITOR_MAX_DEVICES
#define INTERVAL_MIN_NS 100000000LL      /* 100 ms: reads stay cheap */
#define INTERVAL_MAX_NS 3600000000000LL  /* 1 h */
#define INTERVAL_DEFAULT_NS 1000000000LL /* 1 s */

/* The signal that asked us to stop (0: none). A signal handler can only talk through a global. */
static volatile sig_atomic_t stop_signal;

static void on_stop(int sig)
{
    stop_signal = sig;
}

struct opts {
    const char *specs[MAX_SPECS];
    size_t n_specs;
    int64_t interval_ns;
    unsigned long long count; /* 0: until interrupted */
    bool plain, json;
    const char *prom;
    const char *runtime_dir;
};

static bool parse_interval(const char *s, int64_t *ns)
{
    char buf[64];
    double v;
    if (mb_num_parse(s, &v, NULL) == MB_OK) { /* a bare number is seconds */
        int n = snprintf(buf, sizeof(buf), "%ss", s);
        if (n < 0 || (size_t)n >= sizeof(buf))
            return false;
        s = buf;
    }
    struct mb_amount a;
    if (mb_amount_parse(s, false, false, &a, NULL) != MB_OK || a.kind == MB_AMOUNT_STEPS)
        return false;
    *ns = a.ns;
    return true;
}

static int parse(int argc, char **argv, struct opts *o)
{
    static const struct option lo[] = {
        {"device", required_argument, NULL, 'd'},
        {"interval", required_argument, NULL, 'i'},
        {"count", required_argument, NULL, 'n'},
        {"plain", no_argument, NULL, 'p'},
        {"json", no_argument, NULL, 'j'},
        {"prometheus", required_argument, NULL, 'P'},
        {"runtime-dir", required_argument, NULL, 'r'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    *o = (struct opts){.interval_ns = INTERVAL_DEFAULT_NS};
    optind = 1;
    opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, ":d:i:n:pjh", lo, NULL)) != -1) {
        switch (ch) {
        case 'd':
            if (o->n_specs == MAX_SPECS)
                return mb_cli_usage_error(&mb_cmd_monitor, "more than %d --device options",
                                          MAX_SPECS);
            o->specs[o->n_specs++] = optarg;
            break;
        case 'i':
            if (!parse_interval(optarg, &o->interval_ns) || o->interval_ns < INTERVAL_MIN_NS ||
                o->interval_ns > INTERVAL_MAX_NS)
                return mb_cli_usage_error(
                    &mb_cmd_monitor, "--interval '%s': expected 100ms .. 1h (e.g. 2s)", optarg);
            break;
        case 'n': {
            double d;
            int64_t v;
            if (mb_num_parse(optarg, &d, NULL) != MB_OK ||
                mb_num_to_i64(d, 1, INT64_MAX, &v) != MB_OK)
                return mb_cli_usage_error(&mb_cmd_monitor,
                                          "--count '%s': expected a whole number >= 1", optarg);
            o->count = (unsigned long long)v;
            break;
        }
        case 'p':
            o->plain = true;
            break;
        case 'j':
            o->json = true;
            break;
        case 'P':
            o->prom = optarg;
            break;
        case 'r':
            o->runtime_dir = optarg;
            break;
        case 'h':
            mb_cli_print_help(&mb_cmd_monitor, stdout);
            return -1;
        case ':':
            return mb_cli_usage_error(&mb_cmd_monitor, "option '%s' needs a value",
                                      argv[optind - 1]);
        default:
            return mb_cli_usage_error(&mb_cmd_monitor, "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return mb_cli_usage_error(&mb_cmd_monitor, "unexpected argument '%s'", argv[optind]);
    if (o->plain && o->json)
        return mb_cli_usage_error(&mb_cmd_monitor, "--plain and --json do not go together");
    return MB_EXIT_OK;
}

/* Sleeps until deadline_ns (CLOCK_MONOTONIC) or a signal. */
static void sleep_until(int64_t deadline_ns)
{
    while (!stop_signal) {
        int64_t left = deadline_ns - mb_clock_monotonic_ns();
        if (left <= 0)
            return;
        struct timespec ts = {.tv_sec = (time_t)(left / 1000000000LL),
                              .tv_nsec = (long)(left % 1000000000LL)};
        if (nanosleep(&ts, NULL) != 0 && errno != EINTR)
            return;
    }
}

/*
 * Draws a frame over the previous one: cursor home, each line cleared to its end as it is
 * written, the rest of the screen cleared after it. No full clear, so the view does not flicker.
 */
static void put_frame(const char *text)
{
    fputs("\033[H", stdout);
    for (const char *p = text; *p;) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        fwrite(p, 1, n, stdout);
        fputs("\033[K\n", stdout);
        p += n + (nl ? 1 : 0);
    }
    fputs("\033[J", stdout);
}

static int monitor_run(int argc, char **argv)
{
    struct opts o;
    int code = parse(argc, argv, &o);
    if (code < 0)
        return MB_EXIT_OK;
    if (code != MB_EXIT_OK)
        return code;
    struct mb_error err;
    mb_error_clear(&err);
    struct mb_monitor *mon = NULL;
    struct mb_prom *prom = NULL;
    struct mb_monitor_snapshot *snap = calloc(1, sizeof(*snap));
    if (!snap) {
        mb_cli_error(CMD, "out of memory");
        return MB_EXIT_FAIL;
    }
    struct mb_monitor_opts mo = {.specs = o.specs, .n_specs = o.n_specs, .live_dir = o.runtime_dir};
    int rc = mb_monitor_create(&mo, &mon, &err);
    if (rc == MB_OK && o.prom)
        rc = mb_prom_create(&prom, &err);
    if (rc != MB_OK) {
        mb_cli_error(CMD, "%s", err.msg);
        code = mb_cli_exit_for(rc);
        goto out;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_stop; /* no SA_RESTART: nanosleep returns at once */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    enum mb_monitor_format fmt = o.json                      ? MB_MONITOR_JSON
                                 : o.plain || isatty(1) != 1 ? MB_MONITOR_PLAIN
                                                             : MB_MONITOR_SCREEN;
    bool screen = fmt == MB_MONITOR_SCREEN;
    if (screen)
        fputs("\033[?25l", stdout); /* hide the cursor while the screen refreshes */
    int64_t next = mb_clock_monotonic_ns();
    for (unsigned long long n = 0; !stop_signal && (o.count == 0 || n < o.count); n++) {
        if (n > 0)
            sleep_until(next);
        if (stop_signal)
            break;
        next += o.interval_ns;
        char *text = NULL;
        if (mb_monitor_sample(mon, snap, &err) != MB_OK ||
            mb_monitor_format(snap, fmt, &text, &err) != MB_OK) {
            mb_cli_error(CMD, "%s", err.msg);
            code = MB_EXIT_FAIL;
            break;
        }
        if (screen)
            put_frame(text);
        else
            fputs(text, stdout);
        free(text);
        if (fflush(stdout) != 0 || ferror(stdout)) {
            code = MB_EXIT_FAIL; /* the reader went away */
            break;
        }
        if (prom) {
            mb_prom_reset(prom);
            if (mb_monitor_prom(snap, prom, &err) != MB_OK ||
                mb_prom_write(prom, o.prom, &err) != MB_OK) {
                mb_cli_error(CMD, "--prometheus: %s", err.msg);
                code = MB_EXIT_FAIL;
                break;
            }
        }
    }
    if (screen) {
        fputs("\033[?25h", stdout);
        fflush(stdout);
    }
out:
    mb_prom_destroy(prom);
    mb_monitor_destroy(mon);
    free(snap);
    return code;
}

const struct mb_cmd mb_cmd_monitor = {
    .name = "monitor",
    .summary = "Live telemetry per GPU and per MIG instance, with the runs on them.",
    .usage = "migbench monitor [--device SPEC]... [--interval D] [--count N] [--plain | --json]\n"
             "                        [--prometheus FILE] [--runtime-dir DIR]",
    .help = "Reads only: the monitor never changes a GPU. On a terminal the view refreshes in\n"
            "place; piped, or with --plain, it prints one line per device per sample.\n\n"
            "options:\n"
            "  -d, --device SPEC     auto (every NVIDIA GPU, else the host), host, nvml:N,\n"
            "                        nvml:UUID or emu:MODEL[:option=value...] (repeatable)\n"
            "  -i, --interval D      time between samples, 100ms .. 1h (default 1s)\n"
            "  -n, --count N         stop after N samples (default: until interrupted)\n"
            "  -p, --plain           one key=value line per device per sample; '-' is unknown\n"
            "  -j, --json            one JSON object per sample on one line; unknown is null\n"
            "      --prometheus FILE keep FILE as a node_exporter textfile (dcgm-exporter names\n"
            "                        for whole-GPU values, migbench_* for the rest)\n"
            "      --runtime-dir DIR where running 'migbench run' commands keep their live files\n"
            "                        (default $MIGBENCH_RUNTIME_DIR, $XDG_RUNTIME_DIR/migbench\n"
            "                        or /tmp/migbench-UID)\n"
            "\nexit status: 0 stopped (count reached or interrupted), 1 a device or file error,\n"
            "2 bad option or device spec. See docs/monitor.md and docs/prometheus.md.\n",
    .run = monitor_run,
};
