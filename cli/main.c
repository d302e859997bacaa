/* SPDX-License-Identifier: Apache-2.0 */
/* migbench: measure and plan deep-learning training on shared GPUs. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

/* Every subcommand, in the order `migbench help` lists them; one per line to keep merges easy. */
/* clang-format off */
static const struct mb_cmd *const commands[] = {
    &mb_cmd_devices,
    &mb_cmd_layouts,
    &mb_cmd_measure,
    &mb_cmd_run,
    &mb_cmd_report,
    &mb_cmd_plan,
    &mb_cmd_mig,
    &mb_cmd_monitor,
    &mb_cmd_slurm,
    &mb_cmd_k8s,
    &mb_cmd_help,
};
/* clang-format on */

const struct mb_cmd *mb_cli_find(const char *name)
{
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        if (strcmp(commands[i]->name, name) == 0)
            return commands[i];
    return NULL;
}

static void print_main_usage(FILE *out)
{
    fprintf(out, "usage: migbench [-v|-q] COMMAND [ARGS...]\n"
                 "       migbench --version | --help\n\n"
                 "Measure and plan deep-learning training on shared GPUs.\n\ncommands:\n");
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        fprintf(out, "  %-10s %s\n", commands[i]->name, commands[i]->summary);
    fprintf(out, "\nRun 'migbench help COMMAND' for a command's options.\n");
}

static int help_run(int argc, char **argv)
{
    if (argc == 1) {
        print_main_usage(stdout);
        return MB_EXIT_OK;
    }
    if (argc > 2 || argv[1][0] == '-') {
        if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
            mb_cli_print_help(&mb_cmd_help, stdout);
            return MB_EXIT_OK;
        }
        return mb_cli_usage_error(&mb_cmd_help, "expected one command name");
    }
    const struct mb_cmd *cmd = mb_cli_find(argv[1]);
    if (!cmd) {
        mb_cli_error("help", "unknown command '%s'", argv[1]);
        print_main_usage(stderr);
        return MB_EXIT_USAGE;
    }
    mb_cli_print_help(cmd, stdout);
    return MB_EXIT_OK;
}

const struct mb_cmd mb_cmd_help = {
    .name = "help",
    .summary = "Show the commands, or one command's options.",
    .usage = "migbench help [COMMAND]",
    .help = "",
    .run = help_run,
};

int main(int argc, char **argv)
{
    int i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--version") == 0 || strcmp(a, "-V") == 0) {
            printf("migbench %s\n", MB_VERSION_STRING);
            return MB_EXIT_OK;
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            print_main_usage(stdout);
            return MB_EXIT_OK;
        } else if (strcmp(a, "-v") == 0 || strcmp(a, "--verbose") == 0) {
            mb_cli_set_verbosity(2);
        } else if (strcmp(a, "-q") == 0 || strcmp(a, "--quiet") == 0) {
            mb_cli_set_verbosity(0);
        } else {
            mb_cli_error(NULL, "unknown option '%s'", a);
            print_main_usage(stderr);
            return MB_EXIT_USAGE;
        }
    }
    if (i == argc) {
        print_main_usage(stderr);
        return MB_EXIT_USAGE;
    }
    const struct mb_cmd *cmd = mb_cli_find(argv[i]);
    if (!cmd) {
        mb_cli_error(NULL, "unknown command '%s'", argv[i]);
        print_main_usage(stderr);
        return MB_EXIT_USAGE;
    }
    return cmd->run(argc - i, argv + i);
}
