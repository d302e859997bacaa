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
/* ---- text --------------------------------------------------------------------------------- */

static const char *na(const char *s)
{
    return s && s[0] ? s : "n/a";
}

static void fmt_mw(char *buf, size_t cap, bool valid, uint32_t mw)
{
    if (valid)
        snprintf(buf, cap, "%.1f W", mw / 1000.0);
    else
        snprintf(buf, cap, "n/a");
}

static void fmt_ms(char *buf, size_t cap, uint32_t ms)
{
    if (ms)
        snprintf(buf, cap, "%u ms", ms);
    else
        snprintf(buf, cap, "unknown");
}

/* The power limit with its range and default (docs/power.md); nothing when there is none. */
static void print_power_limit(FILE *out, const struct mb_device_report *r)
{
    if (r->pl_rc != MB_OK)
        return;
    const struct mb_power_limit *pl = &r->pl;
    char lim[32], lo[32], hi[32], def[32];
    fmt_mw(lim, sizeof(lim), pl->valid & MB_PL_LIMIT, pl->limit_mw);
    fmt_mw(lo, sizeof(lo), pl->valid & MB_PL_RANGE, pl->min_mw);
    fmt_mw(hi, sizeof(hi), pl->valid & MB_PL_RANGE, pl->max_mw);
    fmt_mw(def, sizeof(def), pl->valid & MB_PL_DEFAULT, pl->default_mw);
    fprintf(out, "  %-14s %s (range %s .. %s, default %s; %s)\n", "power limit", lim, lo, hi, def,
            (r->caps & MB_CAP_SET_POWER_LIMIT) ? "settable" : "not settable here");
}

static void print_text(FILE *out, size_t i, const struct mb_device_report *r)
{
    const struct mb_device_info *in = &r->info;
    fprintf(out, "%sdevice %zu: %s%s\n", i ? "\n" : "", i, na(in->name),
            in->emulated ? "  [EMULATED: modelled numbers, not measurements]" : "");
    fprintf(out, "  %-14s %s (spec %s, index %u)\n", "backend", in->backend, r->spec, in->index);
    fprintf(out, "  %-14s %s\n", "model", in->model[0] ? in->model : "n/a (not in the catalog)");
    fprintf(out, "  %-14s %s\n", "uuid", na(in->uuid));
    fprintf(out, "  %-14s driver %s, NVML %s, PCI %s\n", "versions", na(in->driver_version),
            na(in->nvml_version), na(in->pci_bus_id));
    if (in->mem_total_valid)
        fprintf(out, "  %-14s %llu MiB\n", "memory",
                (unsigned long long)(in->mem_total_bytes / (1024u * 1024u)));
    else
        fprintf(out, "  %-14s n/a\n", "memory");
    if (in->cpu_count)
        fprintf(out, "  %-14s %u online\n", "cpus", in->cpu_count);

    char a[32], b[32], c[32];
    if (r->sensor_rc == MB_OK && r->sensor.power_kind == MB_POWER_NONE &&
        !r->sensor.has_energy_counter) {
        fprintf(out, "  %-14s no power or energy reading (%s)\n", "sensor", na(r->sensor.source));
    } else if (r->sensor_rc == MB_OK) {
        const struct mb_sensor_info *s = &r->sensor;
        fmt_ms(a, sizeof(a), s->power_avg_window_ms);
        fmt_ms(b, sizeof(b), s->power_update_period_ms);
        fprintf(out,
                "  %-14s power %s (window %s, updated every %s); instant reading %s, "
                "averaged reading %s\n",
                "sensor", mb_power_kind_str(s->power_kind), a, b, s->has_instant ? "yes" : "no",
                s->has_average ? "yes" : "no");
        if (s->has_energy_counter) {
            fmt_ms(a, sizeof(a), s->energy_update_period_ms);
            fprintf(out, "  %-14s energy counter yes (update %s, wraps %s)\n", "", a,
                    s->energy_wrap_mj ? "yes" : "never");
        } else {
            fprintf(out, "  %-14s energy counter n/a\n", "");
        }
        fprintf(out, "  %-14s scope %s; %s\n", "", na(s->scope), na(s->source));
    } else {
        fprintf(out, "  %-14s n/a\n", "sensor");
    }

    if (r->tel_rc == MB_OK) {
        const struct mb_telemetry *t = &r->tel;
        uint32_t v = t->valid;
        fmt_mw(a, sizeof(a), v & MB_TEL_POWER, t->power_mw);
        fmt_mw(b, sizeof(b), v & MB_TEL_POWER_INSTANT, t->power_instant_mw);
        fmt_mw(c, sizeof(c), v & MB_TEL_POWER_AVG, t->power_avg_mw);
        fprintf(out, "  %-14s power %s (instant %s, averaged %s)\n", "telemetry", a, b, c);
        if (v & MB_TEL_ENERGY)
            fprintf(out, "  %-14s energy counter %.3f J", "", (double)t->energy_mj / 1000.0);
        else
            fprintf(out, "  %-14s energy counter n/a", "");
        if (v & MB_TEL_ENERGY_DRAM)
            fprintf(out, ", DRAM %.3f J", (double)t->energy_dram_mj / 1000.0);
        fmt_mw(a, sizeof(a), v & MB_TEL_POWER_LIMIT, t->power_limit_mw);
        fprintf(out, "; power limit %s\n", a);
        const char *what = r->caps & MB_CAP_GPU ? "utilisation" : "CPU utilisation";
        if (v & MB_TEL_UTIL_GPU)
            fprintf(out, "  %-14s %s %u%%", "", what, t->util_gpu_pct);
        else
            fprintf(out, "  %-14s %s n/a", "", what);
        if (v & MB_TEL_MEM_USED)
            fprintf(out, ", memory used %llu MiB",
                    (unsigned long long)(t->mem_used_bytes / (1024u * 1024u)));
        else
            fprintf(out, ", memory used n/a");
        if (v & MB_TEL_CLOCK_SM)
            fprintf(out, ", SM clock %u MHz", t->clock_sm_mhz);
        if (v & MB_TEL_CLOCK_MEM)
            fprintf(out, ", memory clock %u MHz", t->clock_mem_mhz);
        if (v & MB_TEL_TEMP)
            fprintf(out, ", %d C", t->temp_c);
        fputc('\n', out);
    } else {
        fprintf(out, "  %-14s n/a\n", "telemetry");
    }

    print_power_limit(out, r);

    if (r->mode_rc == MB_OK)
        fprintf(out, "  %-14s %s%s\n", "MIG mode", r->mode.current ? "enabled" : "disabled",
                r->mode.pending != r->mode.current
                    ? (r->mode.pending ? " (pending enable: needs a GPU reset)"
                                       : " (pending disable: needs a GPU reset)")
                    : "");
    else
        fprintf(out, "  %-14s n/a\n", "MIG mode");

    if (r->prof_rc == MB_OK) {
        fprintf(out, "  %-14s %-12s %4s %6s %7s %4s %5s %5s %10s\n", "MIG profiles", "name", "id",
                "enum", "slices", "max", "free", "SMs", "memory");
        for (size_t k = 0; k < r->n_prof; k++) {
            const struct mb_device_profile *p = &r->prof[k];
            char sm[16], mem[24], sl[16];
            snprintf(sl, sizeof(sl), "%u/%u", p->compute_slices, p->memory_slices);
            if (p->sm_count >= 0)
                snprintf(sm, sizeof(sm), "%d", p->sm_count);
            else
                snprintf(sm, sizeof(sm), "n/a");
            if (p->memory_mib >= 0)
                snprintf(mem, sizeof(mem), "%lld MiB", (long long)p->memory_mib);
            else
                snprintf(mem, sizeof(mem), "n/a");
            fprintf(out, "  %-14s %-12s %4u %6d %7s %4u %5u %5s %10s\n", "", p->name, p->driver_id,
                    p->nvml_enum, sl, p->max_count, p->remaining, sm, mem);
        }
    } else if (r->mode_rc == MB_OK) {
        fprintf(out, "  %-14s n/a (%s)\n", "MIG profiles", na(r->prof_msg));
    }

    if (r->inst_rc == MB_OK) {
        if (r->n_inst == 0)
            fprintf(out, "  %-14s none\n", "MIG instances");
        for (size_t k = 0; k < r->n_inst; k++) {
            const struct mb_mig_instance *m = &r->inst[k];
            char ci[16];
            if (m->has_ci)
                snprintf(ci, sizeof(ci), "CI %u", m->ci_id);
            else
                snprintf(ci, sizeof(ci), "no CI");
            fprintf(out, "  %-14s GI %-2u %-5s %-12s placement %u:%u  %s\n",
                    k ? "" : "MIG instances", m->gi_id, ci, m->profile_name, m->placement.start,
                    m->placement.size, na(m->uuid));
        }
    }

    if (r->proc_rc == MB_OK) {
        if (r->n_proc == 0)
            fprintf(out, "  %-14s none\n", "processes");
        for (size_t k = 0; k < r->n_proc; k++) {
            const struct mb_process *p = &r->proc[k];
            char where[32], mem[32];
            if (p->gi_id >= 0)
                snprintf(where, sizeof(where), "GI %d CI %d", p->gi_id, p->ci_id);
            else
                snprintf(where, sizeof(where), "whole device");
            if (p->used_mem_valid)
                snprintf(mem, sizeof(mem), "%llu MiB",
                         (unsigned long long)(p->used_mem_bytes / (1024u * 1024u)));
            else
                snprintf(mem, sizeof(mem), "n/a");
            fprintf(out, "  %-14s pid %u %s, %s, memory %s\n", k ? "" : "processes", p->pid,
                    na(p->name), where, mem);
        }
    } else {
        fprintf(out, "  %-14s n/a\n", "processes");
    }
}

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
        print_text(stdout, index, r);
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
