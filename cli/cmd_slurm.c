/* SPDX-License-Identifier: Apache-2.0 */
/*
 * migbench slurm: the bridge to Slurm. `gres` describes a device's GPUs and MIG instances as
 * Slurm's GRES (and, for tests, as the fake_gpus.conf Slurm reads in place of NVML).
 */
#define _DEFAULT_SOURCE /* realpath */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <limits.h>
#include <unistd.h>

#include "cli.h"
#include "fleet_cli.h"
#include "migbench/catalog.h"
#include "migbench/device.h"
#include "migbench/experiment.h"
#include "migbench/fleet.h"
#include "migbench/report_verbs.h"
#include "migbench/session.h"

#define NAME "slurm"

struct opts {
    const char *sub;
    struct mb_cli_fleet_exp fe;
    const char *results;
    const char *emit;
    const char *migbench;
    struct mb_slurm_array_opts array;
    const char *node;
    const char *out;
    const char *dev_prefix;
    unsigned cpus;
    bool fake;
};

static int cmd_gres(const struct opts *o)
{
    if (!o->out)
        return mb_cli_usage_error(&mb_cmd_slurm, "gres: --out DIR is needed");
    struct mb_error err;
    mb_error_clear(&err);
    struct mb_device *dev = NULL;
    int rc = mb_device_open(o->fe.device, &dev, &err);
    struct mb_slurm_gres_dev devs[MB_MAX_MIG_INSTANCES * 2];
    size_t n = 0;
    if (rc == MB_OK)
        rc = mb_slurm_device_gres(dev, devs, sizeof(devs) / sizeof(devs[0]), &n, &err);
    mb_device_close(dev);
    struct mb_slurm_node_opts no = {
        .node = o->node, .cpus = o->cpus, .fake = o->fake, .dev_prefix = o->dev_prefix};
    if (rc == MB_OK)
        rc = mb_slurm_write_node_gres(devs, n, &no, o->out, &err);
    if (rc != MB_OK) {
        if (rc == MB_EINVAL)
            return mb_cli_usage_error(&mb_cmd_slurm, "%s", err.msg);
        mb_cli_error(NAME, "%s", err.msg);
        return mb_cli_exit_for(rc);
    }
    for (size_t i = 0; i < n; i++)
        printf("%s\t%s\t%s\n", devs[i].short_type, devs[i].type, devs[i].uuid);
    return MB_EXIT_OK;
}

/* status RESULTS: one line per cell; exit 0 when every cell is done, 1 otherwise. */
static int cmd_status(const char *results)
{
    struct mb_error err;
    mb_error_clear(&err);
    struct mb_slurm_cell *cells = NULL;
    size_t n = 0;
    int rc = mb_slurm_status(results, mb_slurm_squeue_state, NULL, &cells, &n, &err);
    if (rc != MB_OK) {
        mb_cli_error(NAME, "status: %s", err.msg);
        return rc == MB_ENOTFOUND || rc == MB_EPARSE ? MB_EXIT_USAGE : MB_EXIT_FAIL;
    }
    int code = mb_cli_fleet_status_print(NAME, cells, n);
    free(cells);
    return code;
}

/* An absolute path for p (which need not exist yet): cwd/p when p is relative. */
static bool absolute(const char *p, char *out, size_t cap)
{
    if (p[0] == '/')
        return (size_t)snprintf(out, cap, "%s", p) < cap;
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof(cwd)))
        return false;
    return (size_t)snprintf(out, cap, "%s/%s", cwd, p) < cap;
}

/* The experiment's slurm: block, where the command line says nothing. */
static void slurm_block(struct opts *o, const struct mb_experiment *exp)
{
    const struct mb_exp_slurm *es = &exp->slurm;
    if (!o->array.partition && es->partition[0])
        o->array.partition = es->partition;
    if (!o->array.account && es->account[0])
        o->array.account = es->account;
    if (!o->array.time_limit && es->time[0])
        o->array.time_limit = es->time;
    if (!o->array.max_concurrent)
        o->array.max_concurrent = es->max_concurrent;
    for (size_t i = 0; i < es->n_sbatch && o->array.n_extra < MB_FLEET_MAX_EXTRA; i++)
        o->array.extra[o->array.n_extra++] = es->sbatch[i];
}

static int submit_said(const struct opts *o, const struct mb_slurm_submission *sub,
                       const char *results)
{
    if (o->emit) {
        printf("%s/array.sbatch\n%s/report.sbatch\n%s/cells.tsv\n%s/submit.sh\n", o->emit, o->emit,
               o->emit, o->emit);
        return MB_EXIT_OK;
    }
    if (sub->n_capped)
        mb_cli_info(NAME,
                    "%zu failed cell%s had %u attempts and %s not resubmitted (--max-attempts; "
                    "see slurm status %s)",
                    sub->n_capped, sub->n_capped == 1 ? "" : "s", sub->max_attempts,
                    sub->n_capped == 1 ? "is" : "are", results);
    if (sub->n == 0)
        mb_cli_info(NAME,
                    "nothing to submit: every cell of %s is done, queued, running, or out of "
                    "attempts",
                    results);
    else
        printf("array job %s (%zu cells, %zu-%zu), report job %s\n", sub->array_job, sub->n,
               sub->first, sub->last, sub->report_job);
    return MB_EXIT_OK;
}

static int cmd_submit(struct opts *o, const char *exp_path)
{
    struct mb_error err;
    mb_error_clear(&err);
    struct mb_experiment *exp = NULL;
    int rc = mb_cli_fleet_load(&o->fe, exp_path, &exp, &err);
    if (rc != MB_OK) {
        mb_cli_error(NAME, "%s", err.msg);
        return MB_EXIT_USAGE; /* an experiment file that cannot be read is bad input, as for run */
    }
    char exp_abs[PATH_MAX], results[PATH_MAX + 128], self[PATH_MAX];
    char default_results[PATH_MAX];
    snprintf(default_results, sizeof(default_results), "results/%s", exp->name);
    if (!realpath(exp_path, exp_abs) ||
        !absolute(o->results ? o->results : default_results, results, sizeof(results))) {
        mb_experiment_destroy(exp);
        mb_cli_error(NAME, "%s: cannot make an absolute path", exp_path);
        return MB_EXIT_FAIL;
    }
    ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
    self[len > 0 ? len : 0] = '\0';
    slurm_block(o, exp);
    o->array.migbench = o->migbench ? o->migbench : self;
    o->array.experiment = exp_abs;
    o->array.results = results;
    o->array.overrides = o->fe.sets;
    o->array.n_overrides = o->fe.n_sets;
    o->array.device = o->fe.device_given ? o->fe.device : NULL;
    struct mb_cell *cells = NULL;
    size_t n_cells = 0;
    rc = mb_cli_fleet_numbered(&o->fe, exp, &cells, &n_cells, &err);
    struct mb_slurm_submission sub;
    if (rc == MB_OK)
        rc = mb_slurm_submit_experiment(exp, cells, n_cells, &o->array, o->emit,
                                        mb_slurm_squeue_state, NULL, &sub, &err);
    free(cells);
    mb_experiment_destroy(exp);
    if (rc != MB_OK) {
        if (rc == MB_EINVAL || rc == MB_EPARSE)
            return mb_cli_usage_error(&mb_cmd_slurm, "%s", err.msg);
        mb_cli_error(NAME, "%s", err.msg);
        return MB_EXIT_FAIL;
    }
    return submit_said(o, &sub, results);
}

/* A whole number 1..max for an option. */
static bool parse_count(const char *s, unsigned max, unsigned *out)
{
    char *end = NULL;
    unsigned long v = strtoul(s, &end, 10);
    if (!s[0] || *end || s[0] == '-' || v == 0 || v > max)
        return false;
    *out = (unsigned)v;
    return true;
}

static const struct option long_opts[] = {
    {"device", required_argument, NULL, 'D'},
    {"node", required_argument, NULL, 'N'},
    {"out", required_argument, NULL, 'o'},
    {"cpus", required_argument, NULL, 'c'},
    {"fake", no_argument, NULL, 'F'},
    {"dev-prefix", required_argument, NULL, 'P'},
    {"results", required_argument, NULL, 'r'},
    {"emit", required_argument, NULL, 'e'},
    {"partition", required_argument, NULL, 'p'},
    {"account", required_argument, NULL, 'A'},
    {"time", required_argument, NULL, 't'},
    {"max-concurrent", required_argument, NULL, 'K'},
    {"sbatch-line", required_argument, NULL, 'L'},
    {"set", required_argument, NULL, 'S'},
    {"migbench", required_argument, NULL, 'M'},
    {"gpu", required_argument, NULL, 'G'},
    {"max-attempts", required_argument, NULL, 'X'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* slurm's own options (fleet_cli.c parses --device, --gpu, --set and --help). */
static int parse_opt(void *ctx, int ch)
{
    struct opts *o = ctx;
    switch (ch) {
    case 'r':
        o->results = optarg;
        break;
    case 'e':
        o->emit = optarg;
        break;
    case 'p':
        o->array.partition = optarg;
        break;
    case 'A':
        o->array.account = optarg;
        break;
    case 't':
        o->array.time_limit = optarg;
        break;
    case 'K':
        if (!parse_count(optarg, 1000000, &o->array.max_concurrent))
            return mb_cli_usage_error(&mb_cmd_slurm, "--max-concurrent %s: expected 1 or more",
                                      optarg);
        break;
    case 'L':
        if (o->array.n_extra >= MB_FLEET_MAX_EXTRA)
            return mb_cli_usage_error(&mb_cmd_slurm, "at most %d --sbatch-line options",
                                      MB_FLEET_MAX_EXTRA);
        o->array.extra[o->array.n_extra++] = optarg;
        break;
    case 'M':
        o->migbench = optarg;
        break;
    case 'X':
        if (!parse_count(optarg, 1000, &o->array.max_attempts))
            return mb_cli_usage_error(&mb_cmd_slurm, "--max-attempts %s: expected 1..1000", optarg);
        break;
    case 'N':
        o->node = optarg;
        break;
    case 'o':
        o->out = optarg;
        break;
    case 'c':
        if (!parse_count(optarg, 4096, &o->cpus))
            return mb_cli_usage_error(&mb_cmd_slurm, "--cpus %s: expected 1..4096", optarg);
        break;
    case 'F':
        o->fake = true;
        break;
    case 'P':
        o->dev_prefix = optarg;
        break;
    default:
        return MB_CLI_FLEET_UNKNOWN;
    }
    return MB_EXIT_OK;
}

static int slurm_run(int argc, char **argv)
{
    static const char *const subs[] = {"submit", "status", "gres"};
    struct opts o = {.fe = {.device = "auto", .cmd = NAME}};
    int code = mb_cli_fleet_sub(&mb_cmd_slurm, argc, argv, subs, 3, &o.sub);
    if (code >= 0)
        return code;
    char **av = argv + 1;
    code =
        mb_cli_fleet_getopt(&mb_cmd_slurm, argc - 1, av, ":o:h", long_opts, &o.fe, parse_opt, &o);
    if (code >= 0)
        return code;
    int rest = argc - 1 - optind;
    if (strcmp(o.sub, "submit") == 0) {
        if (rest != 1)
            return mb_cli_usage_error(&mb_cmd_slurm, "submit: expected one EXP.yaml");
        return cmd_submit(&o, av[optind]);
    }
    if (strcmp(o.sub, "status") == 0) {
        if (rest != 1)
            return mb_cli_usage_error(&mb_cmd_slurm, "status: expected one RESULTS directory");
        return cmd_status(av[optind]);
    }
    if (rest > 0)
        return mb_cli_usage_error(&mb_cmd_slurm, "unexpected argument '%s'", av[optind]);
    return cmd_gres(&o);
}

const struct mb_cmd mb_cmd_slurm = {
    .name = NAME,
    .summary =
        "Slurm: submit an experiment as a job array, see what became of its cells, GRES lines",
    .usage = "migbench slurm submit EXP.yaml [--results DIR] [--emit DIR] [--gpu MODEL]\n"
             "                             [--device SPEC]\n"
             "                             [--partition P] [--account A] [--time LIMIT]\n"
             "                             [--max-concurrent K] [--sbatch-line OPTION]...\n"
             "                             [--set KEY=VALUE]... [--migbench PATH]\n"
             "                             [--max-attempts N]\n"
             "       migbench slurm status RESULTS\n"
             "       migbench slurm gres --out DIR [--device SPEC] [--node NAME] [--cpus N]\n"
             "                           [--fake [--dev-prefix PATH]]",
    .help =
        "submit runs the experiment as one Slurm job array: one task per cell, each on one\n"
        "whole GPU (--gres=gpu:1 --exclusive), running 'migbench run EXP --cells INDEX' into\n"
        "the shared results directory, and a report job that waits for the array\n"
        "(--dependency=afterany) and writes slurm-status.txt, report.md and report.html. The\n"
        "files (array.sbatch, report.sbatch, cells.tsv, submit.sh) go to RESULTS/slurm; with\n"
        "--emit DIR only to DIR, and nothing is submitted (DIR/submit.sh submits and records\n"
        "it). A results directory submitted to before gets only the cells that are failed or\n"
        "not run (not done, queued, requeued or running), each at most --max-attempts times\n"
        "in all. One submitter per results directory at a time (RESULTS/slurm/submit.lock).\n"
        "  --results DIR         the shared results directory (default results/<name>)\n"
        "  --gpu MODEL           the nodes' GPU model: cells are numbered as on it (with MIG\n"
        "                        on), here, without one; the tasks still use the file's device\n"
        "  --device SPEC         the device the tasks run the cells on (default: the file's)\n"
        "  --partition, --account, --time   #SBATCH options of every job\n"
        "  --max-concurrent K    at most K tasks at once (--array=...%K)\n"
        "  --sbatch-line OPTION  one more #SBATCH line (--qos=high); repeatable\n"
        "  --set KEY=VALUE       override a setting, for submit and every task\n"
        "  --migbench PATH       the migbench binary on the nodes (default: this one)\n"
        "  --max-attempts N      submissions of one cell before a failed cell is left (3)\n"
        "\n"
        "status says what became of each cell of an experiment submitted into RESULTS:\n"
        "done or failed (its cell.json), running, queued or requeued (scontrol, sacct), failed\n"
        "when its task ended without a result (cancelled, killed), or not run; one\n"
        "tab-separated line per cell with the Slurm job. Exit status 0 when every cell is\n"
        "done, else 1.\n"
        "\n"
        "gres writes what Slurm needs to know about this node's GPUs and MIG instances:\n"
        "  DIR/gres.conf        AutoDetect=nvml (an NVML-enabled Slurm finds them itself)\n"
        "  DIR/slurm-node.conf  NodeName=NAME Gres=gpu:3g.40gb:1,gpu:1g.10gb:2 (the types,\n"
        "                       MIG profile names, are what jobs ask for: --gres=gpu:3g.40gb:1)\n"
        "  DIR/fake_gpus.conf   with --fake: Slurm's stand-in for NVML, one line per device\n"
        "                       with its UUID and nvidia_gpu_env, so that a job gets\n"
        "                       CUDA_VISIBLE_DEVICES=MIG-<uuid> as on a real node (tests)\n"
        "and prints one line per device: type, full type, UUID.\n"
        "\n"
        "options:\n"
        "  --device SPEC   the GPU (auto, nvml:N, emu:MODEL:mig=on,state=PATH)\n"
        "  --node NAME     NodeName in slurm-node.conf (default localhost)\n"
        "  --cpus N        CPUs each fake_gpus.conf device is bound to (default 1)\n"
        "  --fake          also write fake_gpus.conf\n"
        "  --dev-prefix P  its device files are P0, P1, ... (default /dev/nvidia); Slurm\n"
        "                  wants them to be character devices that exist\n"
        "\n"
        "Exit status: 0 written, 1 device error, 2 bad input. See docs/slurm.md.\n",
    .run = slurm_run,
};
