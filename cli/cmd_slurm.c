/* SPDX-License-Identifier: Apache-2.0 */
/*
 * migbench slurm: the bridge to Slurm. `gres` describes a device's GPUs and MIG instances as
 * Slurm's GRES (and, for tests, as the fake_gpus.conf Slurm reads in place of NVML).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "migbench/device.h"
#include "migbench/fleet.h"

#define NAME "slurm"

struct opts {
    const char *sub;
    const char *device;
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
    int rc = mb_device_open(o->device, &dev, &err);
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
    size_t count[MB_SLURM_CELL_FAILED + 1] = {0};
    printf("cell\trun\trep\tstate\tjob\twhy\n");
    for (size_t i = 0; i < n; i++) {
        const struct mb_slurm_cell *c = &cells[i];
        printf("%zu\t%s\t%u\t%s\t%s\t%s\n", c->index, c->run, c->rep,
               mb_slurm_cell_state_str(c->state), c->job[0] ? c->job : "-", c->why);
        count[c->state]++;
    }
    fprintf(stderr,
            "migbench: slurm: %zu cells: %zu done, %zu failed, %zu running, %zu queued, %zu not "
            "run\n",
            n, count[MB_SLURM_CELL_DONE], count[MB_SLURM_CELL_FAILED], count[MB_SLURM_CELL_RUNNING],
            count[MB_SLURM_CELL_QUEUED], count[MB_SLURM_CELL_NOT_RUN]);
    free(cells);
    return count[MB_SLURM_CELL_DONE] == n ? MB_EXIT_OK : MB_EXIT_FAIL;
}

static const struct option long_opts[] = {
    {"device", required_argument, NULL, 'D'}, {"node", required_argument, NULL, 'N'},
    {"out", required_argument, NULL, 'o'},    {"cpus", required_argument, NULL, 'c'},
    {"fake", no_argument, NULL, 'F'},         {"dev-prefix", required_argument, NULL, 'P'},
    {"help", no_argument, NULL, 'h'},         {NULL, 0, NULL, 0},
};

static int slurm_run(int argc, char **argv)
{
    struct opts o = {.device = "auto"};
    if (argc < 2)
        return mb_cli_usage_error(&mb_cmd_slurm, "expected a subcommand (gres)");
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        mb_cli_print_help(&mb_cmd_slurm, stdout);
        return MB_EXIT_OK;
    }
    o.sub = argv[1];
    if (strcmp(o.sub, "gres") != 0 && strcmp(o.sub, "status") != 0)
        return mb_cli_usage_error(&mb_cmd_slurm, "unknown subcommand '%s' (gres, status)", o.sub);
    optind = 0;
    opterr = 0;
    int ch;
    char **av = argv + 1;
    while ((ch = getopt_long(argc - 1, av, ":o:h", long_opts, NULL)) != -1) {
        switch (ch) {
        case 'D':
            o.device = optarg;
            break;
        case 'N':
            o.node = optarg;
            break;
        case 'o':
            o.out = optarg;
            break;
        case 'c': {
            char *end = NULL;
            unsigned long v = strtoul(optarg, &end, 10);
            if (!optarg[0] || *end || v == 0 || v > 4096)
                return mb_cli_usage_error(&mb_cmd_slurm, "--cpus %s: expected 1..4096", optarg);
            o.cpus = (unsigned)v;
            break;
        }
        case 'F':
            o.fake = true;
            break;
        case 'P':
            o.dev_prefix = optarg;
            break;
        case 'h':
            mb_cli_print_help(&mb_cmd_slurm, stdout);
            return MB_EXIT_OK;
        case ':':
            return mb_cli_usage_error(&mb_cmd_slurm, "option '%s' needs a value", av[optind - 1]);
        default:
            return mb_cli_usage_error(&mb_cmd_slurm, "unknown option '%s'", av[optind - 1]);
        }
    }
    int rest = argc - 1 - optind;
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
    .summary = "Slurm: what became of submitted cells; a device's GPUs and MIG instances as GRES",
    .usage = "migbench slurm status RESULTS\n"
             "       migbench slurm gres --out DIR [--device SPEC] [--node NAME] [--cpus N]\n"
             "                           [--fake [--dev-prefix PATH]]",
    .help =
        "status says what became of each cell of an experiment submitted into RESULTS:\n"
        "done or failed (its cell.json), running or queued (squeue), failed when its task\n"
        "ended without a result (cancelled, killed), or not run; one tab-separated line per\n"
        "cell with the Slurm job. Exit status 0 when every cell is done, else 1.\n"
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
        "Exit status: 0 written, 1 device error, 2 bad input. See docs/slurm.md.",
    .run = slurm_run,
};
