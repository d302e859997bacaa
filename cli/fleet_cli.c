/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What `slurm submit` and `k8s submit` share (fleet_cli.h): the subcommand and option parsing
 * they have in common, the experiment loaded and its cells numbered, the status table.
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "fleet_cli.h"
#include "migbench/device.h"
#include "migbench/fleet.h"
#include "migbench/report_verbs.h"

int mb_cli_fleet_sub(const struct mb_cmd *cmd, int argc, char **argv, const char *const *subs,
                     size_t n_subs, const char **sub)
{
    char list[128] = "";
    for (size_t i = 0; i < n_subs; i++) {
        size_t len = strlen(list);
        snprintf(list + len, sizeof(list) - len, "%s%s", i ? ", " : "", subs[i]);
    }
    if (argc < 2)
        return mb_cli_usage_error(cmd, "expected a subcommand (%s)", list);
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        mb_cli_print_help(cmd, stdout);
        return MB_EXIT_OK;
    }
    for (size_t i = 0; i < n_subs; i++)
        if (strcmp(argv[1], subs[i]) == 0) {
            *sub = subs[i];
            return -1;
        }
    return mb_cli_usage_error(cmd, "unknown subcommand '%s' (%s)", argv[1], list);
}

int mb_cli_fleet_getopt(const struct mb_cmd *cmd, int argc, char **av, const char *shortopts,
                        const struct option *longopts, struct mb_cli_fleet_exp *fe,
                        int (*own)(void *ctx, int ch), void *ctx)
{
    optind = 0;
    opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, av, shortopts, longopts, NULL)) != -1) {
        int code = MB_EXIT_OK;
        switch (ch) {
        case 'h':
            mb_cli_print_help(cmd, stdout);
            return MB_EXIT_OK;
        case ':':
            return mb_cli_usage_error(cmd, "option '%s' needs a value", av[optind - 1]);
        case 'D':
            fe->device = optarg;
            fe->device_given = true;
            break;
        case 'G':
            fe->gpu = optarg;
            break;
        case 'S':
            if (fe->n_sets >= MB_CLI_FLEET_MAX_SETS)
                return mb_cli_usage_error(cmd, "at most %d --set options", MB_CLI_FLEET_MAX_SETS);
            fe->sets[fe->n_sets++] = optarg;
            break;
        default:
            code = own(ctx, ch);
            if (code == MB_CLI_FLEET_UNKNOWN)
                return mb_cli_usage_error(cmd, "unknown option '%s'", av[optind - 1]);
        }
        if (code != MB_EXIT_OK)
            return code;
    }
    return -1;
}

int mb_cli_fleet_status_print(const char *name, const struct mb_slurm_cell *cells, size_t n)
{
    size_t count[MB_SLURM_CELL_STATES];
    mb_slurm_status_text_write(stdout, cells, n, count);
    fprintf(stderr,
            "migbench: %s: %zu cells: %zu done, %zu failed, %zu running, %zu queued, %zu "
            "requeued, %zu not run\n",
            name, n, count[MB_SLURM_CELL_DONE], count[MB_SLURM_CELL_FAILED],
            count[MB_SLURM_CELL_RUNNING], count[MB_SLURM_CELL_QUEUED],
            count[MB_SLURM_CELL_REQUEUED], count[MB_SLURM_CELL_NOT_RUN]);
    return count[MB_SLURM_CELL_DONE] == n ? MB_EXIT_OK : MB_EXIT_FAIL;
}

void mb_cli_fleet_on_event(void *ctx, const struct mb_session_event *ev)
{
    if (ev->kind == MB_SESSION_NOTE || ev->kind == MB_SESSION_WARN)
        mb_cli_info(ctx ? (const char *)ctx : "slurm", "%s", ev->text);
}

int mb_cli_fleet_cells(const char *cmd, const struct mb_experiment *exp, const char *device,
                       struct mb_cell **cells, size_t *n, struct mb_error *err)
{
    if (strcmp(device, "auto") == 0) {
        struct mb_device *dev = NULL;
        bool gpu =
            mb_device_open(device, &dev, NULL) == MB_OK && (mb_device_caps(dev) & MB_CAP_GPU);
        mb_device_close(dev);
        if (!gpu)
            return mb_error_set(err, MB_EINVAL,
                                "device 'auto' is this machine's CPU, not the nodes' GPU: give "
                                "--gpu MODEL (e.g. --gpu H100-SXM5-80GB) or slurm.gpu in the "
                                "file to number the cells as on the nodes, or --device SPEC");
    }
    volatile sig_atomic_t stop = 0;
    char name[32];
    snprintf(name, sizeof(name), "%s", cmd ? cmd : "slurm");
    struct mb_session_opts so = {
        .device_spec = device, .stop = &stop, .on_event = mb_cli_fleet_on_event, .ctx = name};
    struct mb_session *s = NULL;
    int rc = mb_session_open(exp, &so, &s, err);
    if (rc == MB_OK) {
        const struct mb_cell *c = NULL;
        const size_t *idx = NULL;
        *n = mb_session_cells(s, &c, &idx);
        *cells = malloc((*n ? *n : 1) * sizeof(**cells));
        if (!*cells)
            rc = mb_error_set(err, MB_ENOMEM, "out of memory");
        else
            memcpy(*cells, c, *n * sizeof(**cells));
    }
    mb_session_close(s);
    return rc;
}

int mb_cli_fleet_load(struct mb_cli_fleet_exp *fe, const char *path, struct mb_experiment **exp,
                      struct mb_error *err)
{
    int rc = mb_experiment_load(path, fe->sets, fe->n_sets, exp, err);
    if (rc != MB_OK)
        return rc;
    if (!fe->gpu && !fe->device_given && (*exp)->slurm.gpu[0]) {
        snprintf(fe->gpu_buf, sizeof(fe->gpu_buf), "%s", (*exp)->slurm.gpu);
        fe->gpu = fe->gpu_buf;
    }
    if (!fe->gpu || (*exp)->measure.repetitions >= 0 || fe->n_sets >= MB_CLI_FLEET_MAX_SETS)
        return MB_OK;
    snprintf(fe->reps_buf, sizeof(fe->reps_buf), "measure.repetitions=%u",
             mb_experiment_repetitions(*exp, MB_CAP_GPU | MB_CAP_MIG | MB_CAP_MPS));
    fe->sets[fe->n_sets++] = fe->reps_buf;
    mb_experiment_destroy(*exp);
    *exp = NULL;
    return mb_experiment_load(path, fe->sets, fe->n_sets, exp, err);
}

int mb_cli_fleet_numbered(struct mb_cli_fleet_exp *fe, const struct mb_experiment *exp,
                          struct mb_cell **cells, size_t *n, struct mb_error *err)
{
    char numbering[MB_DEVICE_SPEC_MAX];
    if (fe->gpu)
        snprintf(numbering, sizeof(numbering), "emu:%s:mig=on", fe->gpu);
    else
        snprintf(numbering, sizeof(numbering), "%s", fe->device_given ? fe->device : exp->device);
    return mb_cli_fleet_cells(fe->cmd, exp, numbering, cells, n, err);
}
