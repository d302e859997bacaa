/* SPDX-License-Identifier: Apache-2.0 */
/*
 * migbench k8s: an experiment's matrix as a Kubernetes Indexed Job (written, never applied: no
 * cluster is talked to), and what became of each cell from the results directory.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "fleet_cli.h"
#include "migbench/fleet.h"

#define NAME "k8s"

struct opts {
    struct mb_cli_fleet_exp fe;
    struct mb_k8s_array_opts k;
    const char *emit;
};

static int cmd_submit(struct opts *o, const char *path)
{
    if (!o->emit)
        return mb_cli_usage_error(&mb_cmd_k8s,
                                  "submit writes files only: give --emit DIR, then `kubectl "
                                  "apply -f DIR/experiment.yaml -f DIR/job.yaml`");
    struct mb_error err;
    mb_error_clear(&err);
    struct mb_experiment *exp = NULL;
    int rc = mb_cli_fleet_load(&o->fe, path, &exp, &err);
    if (rc != MB_OK) {
        mb_cli_error(NAME, "%s", err.msg);
        return MB_EXIT_USAGE;
    }
    o->k.overrides = o->fe.sets;
    o->k.n_overrides = o->fe.n_sets;
    o->k.device = o->fe.device_given ? o->fe.device : NULL;
    struct mb_cell *cells = NULL;
    size_t n = 0;
    rc = mb_cli_fleet_numbered(&o->fe, exp, &cells, &n, &err);
    if (rc == MB_OK)
        rc = mb_k8s_write_array(exp, cells, n, &o->k, o->emit, &err);
    free(cells);
    mb_experiment_destroy(exp);
    if (rc != MB_OK) {
        if (rc == MB_EINVAL || rc == MB_EPARSE)
            return mb_cli_usage_error(&mb_cmd_k8s, "%s", err.msg);
        mb_cli_error(NAME, "%s", err.msg);
        return MB_EXIT_FAIL;
    }
    printf("%s/experiment.yaml\n%s/job.yaml\n%s/cells.tsv\n", o->emit, o->emit, o->emit);
    return MB_EXIT_OK;
}

static int cmd_status(const char *results)
{
    struct mb_error err;
    mb_error_clear(&err);
    struct mb_slurm_cell *cells = NULL;
    size_t n = 0;
    int rc = mb_k8s_status(results, &cells, &n, &err);
    if (rc != MB_OK) {
        mb_cli_error(NAME, "status: %s", err.msg);
        return rc == MB_ENOTFOUND || rc == MB_EPARSE ? MB_EXIT_USAGE : MB_EXIT_FAIL;
    }
    int code = mb_cli_fleet_status_print(NAME, cells, n);
    free(cells);
    return code;
}

static const struct option long_opts[] = {
    {"emit", required_argument, NULL, 'e'},
    {"image", required_argument, NULL, 'I'},
    {"migbench", required_argument, NULL, 'M'},
    {"namespace", required_argument, NULL, 'n'},
    {"pvc", required_argument, NULL, 'p'},
    {"results", required_argument, NULL, 'r'},
    {"parallelism", required_argument, NULL, 'P'},
    {"gpu", required_argument, NULL, 'G'},
    {"device", required_argument, NULL, 'D'},
    {"set", required_argument, NULL, 'S'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* k8s's own options (fleet_cli.c parses --device, --gpu, --set and --help). */
static int parse_opt(void *ctx, int ch)
{
    struct opts *o = ctx;
    char *end = NULL;
    switch (ch) {
    case 'e':
        o->emit = optarg;
        break;
    case 'I':
        o->k.image = optarg;
        break;
    case 'M':
        o->k.migbench = optarg;
        break;
    case 'n':
        o->k.k8s_namespace = optarg;
        break;
    case 'p':
        o->k.pvc = optarg;
        break;
    case 'r':
        o->k.results = optarg;
        break;
    case 'P': {
        unsigned long v = strtoul(optarg, &end, 10);
        if (!optarg[0] || *end || optarg[0] == '-' || v == 0 || v > 100000)
            return mb_cli_usage_error(&mb_cmd_k8s, "--parallelism %s: expected 1..100000", optarg);
        o->k.parallelism = (unsigned)v;
        break;
    }
    default:
        return MB_CLI_FLEET_UNKNOWN;
    }
    return MB_EXIT_OK;
}

static int k8s_run(int argc, char **argv)
{
    static const char *const subs[] = {"submit", "status"};
    const char *sub = NULL;
    int code = mb_cli_fleet_sub(&mb_cmd_k8s, argc, argv, subs, 2, &sub);
    if (code >= 0)
        return code;
    struct opts o = {.fe = {.device = "auto", .cmd = NAME}};
    char **av = argv + 1;
    code = mb_cli_fleet_getopt(&mb_cmd_k8s, argc - 1, av, ":h", long_opts, &o.fe, parse_opt, &o);
    if (code >= 0)
        return code;
    if (argc - 1 - optind != 1)
        return mb_cli_usage_error(&mb_cmd_k8s, "%s: expected one %s", sub,
                                  strcmp(sub, "submit") == 0 ? "EXP.yaml" : "RESULTS directory");
    return strcmp(sub, "submit") == 0 ? cmd_submit(&o, av[optind]) : cmd_status(av[optind]);
}

const struct mb_cmd mb_cmd_k8s = {
    .name = NAME,
    .summary = "Kubernetes: an experiment's cells as an Indexed Job; what became of them",
    .usage = "migbench k8s submit EXP.yaml --emit DIR [--image IMAGE] [--migbench PATH]\n"
             "                           [--namespace NS] [--pvc CLAIM] [--results PATH]\n"
             "                           [--parallelism N] [--gpu MODEL] [--device SPEC]\n"
             "                           [--set KEY=VALUE]...\n"
             "       migbench k8s status RESULTS",
    .help =
        "submit writes the experiment's matrix as Kubernetes objects, the analogue of `slurm\n"
        "submit`'s job array (nothing is applied; no cluster is asked):\n"
        "  DIR/experiment.yaml  ConfigMap migbench-<name>: the experiment file and cells.tsv\n"
        "  DIR/job.yaml         Indexed Job migbench-<name>: completions = the cells; pod i\n"
        "                       (JOB_COMPLETION_INDEX) runs 'migbench run EXP --cells i' on one\n"
        "                       whole GPU (nvidia.com/gpu: 1) into the results volume, with its\n"
        "                       own journal, after copying cells.tsv to RESULTS/k8s/\n"
        "  DIR/cells.tsv        the cells: index, run, repetition, mode, jobs, power limit\n"
        "Cells are numbered as `slurm submit` numbers them (--gpu MODEL, --device SPEC).\n"
        "  --image IMAGE       the container image (default migbench:latest)\n"
        "  --migbench PATH     migbench in the image (default: migbench on its PATH)\n"
        "  --namespace NS      the objects' namespace (default default)\n"
        "  --pvc CLAIM         the shared results volume (default migbench-results)\n"
        "  --results PATH      the results directory in the pod, where the volume is mounted\n"
        "                      (default /results/<name>)\n"
        "  --parallelism N     pods at once (default: every cell)\n"
        "\n"
        "status says what became of each cell of an experiment run into RESULTS (the volume,\n"
        "mounted here): done or failed (cell.json), running (started, per the journal), or\n"
        "not run; the table of `slurm status`. Exit status 0 when every cell is done, else 1.\n"
        "See docs/kubernetes.md.\n",
    .run = k8s_run,
};
