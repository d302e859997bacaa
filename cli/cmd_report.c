/* SPDX-License-Identifier: Apache-2.0 */
/* migbench report: parses options, loads the results, hands them to a renderer (report.h). */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "migbench/analysis.h"
#include "migbench/report.h"

static int report_run(int argc, char **argv);

const struct mb_cmd mb_cmd_report = {
    .name = "report",
    .summary = "Analyse results: tables, CSV, JSON, Markdown or a self-contained HTML page.",
    .usage = "migbench report RESULTS_DIR... [--format table|csv|json|html|md] [-o FILE]\n"
             "                      [--power-rule energy|time|cost:ETA|slowdown:S]\n"
             "       migbench report DIR1 DIR2... --merge [--baseline DIR:RUN] [--force]",
    .help = "Reads one or more results directories written by 'migbench run' (an experiment\n"
            "directory, or a folder of them) and reports per-job throughput with 95% CIs,\n"
            "throughput normalised to the exclusive run, energy per unit of work, system\n"
            "throughput, energy and throughput against running the jobs one after another,\n"
            "per-job energy attribution (equal, compute-share, activity, static-dynamic,\n"
            "interval) and measurement quality. Several directories are compared side by side.\n"
            "\n"
            "  -f, --format FMT  table (default), csv, json, html or md\n"
            "  -o, --output FILE write to FILE instead of standard output\n"
            "  --power-rule R    power-limit axis: the rule that picks a limit besides the\n"
            "                    energy-optimal one: energy, time, cost:ETA, slowdown:S\n"
            "                    (docs/power.md)\n"
            "      --merge       treat the directories as ONE experiment (e.g. the MIG-off and\n"
            "                    MIG-on phases run separately): runs of the same name pool their\n"
            "                    cells, the notes say which cells came from where; refused for\n"
            "                    different GPU models, drivers or workload definitions\n"
            "      --baseline DIR:RUN  with --merge: normalise to this exclusive run only\n"
            "      --force       with --merge: merge despite those differences (noted)\n"
            "  -h, --help        show this help\n",
    .run = report_run,
};

static int report_run(int argc, char **argv)
{
    static const struct option opts[] = {
        {"format", required_argument, NULL, 'f'},
        {"output", required_argument, NULL, 'o'},
        {"power-rule", required_argument, NULL, 'p'},
        {"merge", no_argument, NULL, 'M'},
        {"baseline", required_argument, NULL, 'B'},
        {"force", no_argument, NULL, 'F'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    enum mb_report_format fmt = MB_REPORT_TABLE;
    const char *outpath = NULL;
    struct mb_power_rule_opts rule = {.rule = MB_PSEL_ENERGY};
    bool merge = false;
    struct mb_analysis_merge mopts = {0, NULL};
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":f:o:h", opts, NULL)) != -1) {
        switch (c) {
        case 'f':
            if (mb_report_format_parse(optarg, &fmt) != MB_OK)
                return mb_cli_usage_error(&mb_cmd_report, "unknown format '%s'", optarg);
            break;
        case 'o':
            outpath = optarg;
            break;
        case 'p': {
            struct mb_error perr;
            if (mb_power_rule_parse(optarg, &rule, &perr) != MB_OK)
                return mb_cli_usage_error(&mb_cmd_report, "--power-rule: %s", perr.msg);
            break;
        }
        case 'M':
            merge = true;
            break;
        case 'B':
            mopts.baseline = optarg;
            break;
        case 'F':
            mopts.force = 1;
            break;
        case 'h':
            mb_cli_print_help(&mb_cmd_report, stdout);
            return MB_EXIT_OK;
        case ':':
            return mb_cli_usage_error(&mb_cmd_report, "option '%s' needs an argument",
                                      argv[optind - 1]);
        default:
            return mb_cli_usage_error(&mb_cmd_report, "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind >= argc)
        return mb_cli_usage_error(&mb_cmd_report, "expected at least one RESULTS_DIR");
    if (!merge && (mopts.baseline || mopts.force))
        return mb_cli_usage_error(&mb_cmd_report, "--baseline and --force go with --merge");

    struct mb_error err;
    mb_error_clear(&err);
    struct mb_analysis *a = NULL;
    const char *const *dirs = (const char *const *)(argv + optind);
    size_t ndirs = (size_t)(argc - optind);
    int st = merge ? mb_analysis_load_merged(&a, dirs, ndirs, &mopts, &err)
                   : mb_analysis_load(&a, dirs, ndirs, &err);
    if (st != MB_OK) {
        mb_cli_error("report", "%s", err.msg);
        return mb_cli_exit_for(st);
    }

    /* -o FILE is written whole at the end: no half-written reports. */
    struct mb_cli_outfile file;
    FILE *out = stdout;
    if (outpath) {
        if (mb_cli_outfile_open(&file, "report", outpath) != MB_EXIT_OK) {
            mb_analysis_destroy(a);
            return MB_EXIT_FAIL;
        }
        out = file.f;
    }
    st = mb_report_write_rule(out, a, fmt, &rule);
    mb_analysis_destroy(a);
    if (st == MB_EIO) /* a stream error: the outfile commit or the check below reports it */
        st = MB_OK;
    if (outpath) {
        if (st == MB_OK)
            return mb_cli_outfile_commit(&file, "report");
        mb_cli_outfile_abort(&file);
    } else if (st == MB_OK && (ferror(out) || fflush(out) != 0)) {
        mb_cli_error("report", "cannot write standard output: %s", strerror(errno));
        return MB_EXIT_FAIL;
    }
    if (st != MB_OK) {
        mb_cli_error("report", "cannot write %s: %s", outpath ? outpath : "standard output",
                     mb_status_str(st));
        return MB_EXIT_FAIL;
    }
    return MB_EXIT_OK;
}
