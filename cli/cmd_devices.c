/* SPDX-License-Identifier: Apache-2.0 */
/* migbench devices: what each device is, how its sensor behaves, and its MIG layout. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "migbench/device.h"
#include "migbench/report_verbs.h"

#define DEVICES_MAX_SPECS 16
#define DEVICES_MAX_NVML 64
/* ---- command ------------------------------------------------------------------------------ */

static int show(const char *spec, struct mb_device *dev, struct mb_devices_json *json, size_t index)
{
    struct mb_device_report *r = malloc(sizeof(*r));
    if (!r) {
        mb_cli_error("devices", "out of memory");
        return MB_EXIT_FAIL;
    }
    struct mb_error err;
    mb_error_clear(&err);
    int rc = mb_device_report_collect(dev, spec, r, &err);
    if (rc != MB_OK) {
        mb_cli_error("devices", "%s: %s", spec, err.msg);
        free(r);
        return mb_cli_exit_for(rc) == MB_EXIT_USAGE ? MB_EXIT_USAGE : MB_EXIT_FAIL;
    }
    if (json)
        rc = mb_devices_json_add(json, r, &err);
    else
        mb_device_report_text_write(stdout, index, r);
    free(r);
    if (rc != MB_OK) {
        mb_cli_error("devices", "%s", err.msg);
        return MB_EXIT_FAIL;
    }
    return MB_EXIT_OK;
}

/* Opens spec and shows it; returns the exit status for it. */
static int show_one(const char *spec, struct mb_devices_json *arr, size_t *shown)
{
    struct mb_device *dev = NULL;
    struct mb_error err;
    mb_error_clear(&err);
    int rc = mb_device_open(spec, &dev, &err);
    if (rc != MB_OK) {
        mb_cli_error("devices", "%s", err.msg);
        return mb_cli_exit_for(rc);
    }
    if (strcmp(spec, "auto") == 0 && *mb_device_fallback_note())
        mb_cli_debug("devices", "%s", mb_device_fallback_note());
    int s = show(spec, dev, arr, (*shown)++);
    mb_device_close(dev);
    return s;
}

static int devices_run(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"device", required_argument, NULL, 'd'},
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *specs[DEVICES_MAX_SPECS];
    size_t n_specs = 0;
    bool json = false;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":d:jh", longopts, NULL)) != -1) {
        switch (c) {
        case 'd':
            if (n_specs == DEVICES_MAX_SPECS)
                return mb_cli_usage_error(&mb_cmd_devices, "at most %d --device options",
                                          DEVICES_MAX_SPECS);
            specs[n_specs++] = optarg;
            break;
        case 'j':
            json = true;
            break;
        case 'h':
            mb_cli_print_help(&mb_cmd_devices, stdout);
            return MB_EXIT_OK;
        case ':':
            return mb_cli_usage_error(&mb_cmd_devices, "option '%s' needs an argument",
                                      argv[optind - 1]);
        default:
            return mb_cli_usage_error(&mb_cmd_devices, "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return mb_cli_usage_error(&mb_cmd_devices, "unexpected argument '%s'", argv[optind]);

    struct mb_error err;
    struct mb_devices_json *arr = NULL;
    if (json && mb_devices_json_create(&arr, &err) != MB_OK) {
        mb_cli_error("devices", "%s", err.msg);
        return MB_EXIT_FAIL;
    }
    int status = MB_EXIT_OK;
    size_t shown = 0;
    if (n_specs == 0 || (n_specs == 1 && strcmp(specs[0], "auto") == 0)) {
        /* Every NVIDIA GPU NVML reports; the host when there is none. Never an emulated one. */
        for (size_t i = 0; i < DEVICES_MAX_NVML; i++) {
            char spec[32];
            struct mb_device *dev = NULL;
            int rc = mb_device_open_nth(i, spec, sizeof(spec), &dev, &err);
            if (rc == MB_ENOTFOUND)
                break;
            if (rc != MB_OK) {
                mb_cli_error("devices", "%s", err.msg);
                status = MB_EXIT_FAIL;
                break;
            }
            if (*mb_device_fallback_note())
                mb_cli_debug("devices", "%s", mb_device_fallback_note());
            int s = show(spec, dev, arr, shown++);
            mb_device_close(dev);
            if (s != MB_EXIT_OK)
                status = s;
        }
    } else {
        for (size_t i = 0; i < n_specs; i++) {
            /* nvml:all, nvml:0,1 and emu:MODEL:count=N name several GPUs: each is shown. */
            struct mb_device_spec_list list = {0};
            mb_error_clear(&err);
            int rc = mb_device_spec_expand(specs[i], &list, &err);
            if (rc != MB_OK) {
                mb_cli_error("devices", "%s", err.msg);
                int s = mb_cli_exit_for(rc);
                if (s > status)
                    status = s;
                continue;
            }
            for (size_t k = 0; k < list.n; k++) {
                int s = show_one(list.specs[k], arr, &shown);
                if (s > status)
                    status = s;
            }
            mb_device_spec_list_free(&list);
        }
    }
    if (json && shown > 0) {
        char *text = mb_devices_json_text(arr);
        if (text) {
            fputs(text, stdout);
            fputc('\n', stdout);
            free(text);
        } else {
            mb_cli_error("devices", "out of memory");
            status = MB_EXIT_FAIL;
        }
    }
    mb_devices_json_destroy(arr);
    return status;
}

const struct mb_cmd mb_cmd_devices = {
    .name = "devices",
    .summary = "Show GPUs (or the host CPU): identity, sensor, telemetry, MIG layout.",
    .usage = "migbench devices [--device SPEC]... [--json]",
    .help = "Without --device: every NVIDIA GPU that NVML reports, or the host CPU when there is\n"
            "none. Emulated devices are shown only when asked for.\n\n"
            "  -d, --device SPEC  auto, host[:powercap=DIR], nvml:N, nvml:UUID or\n"
            "                     emu:MODEL[:option=value...] (repeatable)\n"
            "  -j, --json         one JSON document on stdout; unsupported values are null\n\n"
            "Exit status: 0 shown, 1 a device failed, 2 bad spec or option.\n",
    .run = devices_run,
};
