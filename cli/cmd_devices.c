/* SPDX-License-Identifier: Apache-2.0 */
/* migbench devices: what each device is, how its sensor behaves, and its MIG layout. */
#include <cjson/cJSON.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "migbench/device.h"

#define DEVICES_MAX_SPECS 16
#define DEVICES_MAX_NVML 64
#define DEVICES_MAX_INSTANCES 64

/* Everything shown for one device; each part keeps its own status (unsupported is not fatal). */
struct dev_report {
    char spec[128];
    struct mb_device_info info;
    int sensor_rc;
    struct mb_sensor_info sensor;
    int tel_rc;
    struct mb_telemetry tel;
    int mode_rc;
    struct mb_mig_mode mode;
    int prof_rc;
    char prof_msg[MB_ERROR_MSG_MAX];
    size_t n_prof;
    struct mb_device_profile prof[MB_MAX_PROFILES];
    int inst_rc;
    size_t n_inst;
    struct mb_mig_instance inst[DEVICES_MAX_INSTANCES];
    int proc_rc;
    size_t n_proc;
    struct mb_process proc[MB_MAX_PROCESSES];
};

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

/* Collects a report; fails only when the device cannot say what it is. */
static int collect(struct mb_device *dev, struct dev_report *r, struct mb_error *err)
{
    int rc = mb_device_info(dev, &r->info, err);
    if (rc != MB_OK)
        return rc;
    struct mb_error e2;
    r->sensor_rc = mb_device_sensor(dev, &r->sensor, &e2);
    r->tel_rc = mb_device_telemetry(dev, &r->tel, &e2);
    if (r->tel_rc == MB_OK && strcmp(r->info.backend, "host") == 0) {
        /* Host power and utilisation are deltas: give them an interval to cover. */
        sleep_ms(200);
        r->tel_rc = mb_device_telemetry(dev, &r->tel, &e2);
    }
    r->mode_rc = mb_device_mig_mode(dev, &r->mode, &e2);
    r->prof_rc = MB_EUNSUPPORTED;
    r->inst_rc = MB_EUNSUPPORTED;
    if (r->mode_rc == MB_OK) {
        r->prof_rc = mb_device_mig_profiles(dev, r->prof, MB_MAX_PROFILES, &r->n_prof, &e2);
        if (r->prof_rc != MB_OK)
            snprintf(r->prof_msg, sizeof(r->prof_msg), "%s", e2.msg);
        if (r->mode.current)
            r->inst_rc =
                mb_device_mig_instances(dev, r->inst, DEVICES_MAX_INSTANCES, &r->n_inst, &e2);
    }
    r->proc_rc = mb_device_processes(dev, r->proc, MB_MAX_PROCESSES, &r->n_proc, &e2);
    if (r->n_prof > MB_MAX_PROFILES)
        r->n_prof = MB_MAX_PROFILES;
    if (r->n_inst > DEVICES_MAX_INSTANCES)
        r->n_inst = DEVICES_MAX_INSTANCES;
    if (r->n_proc > MB_MAX_PROCESSES)
        r->n_proc = MB_MAX_PROCESSES;
    return MB_OK;
}

/* ---- JSON --------------------------------------------------------------------------------- */

static void add_str_or_null(cJSON *o, const char *k, const char *v)
{
    if (v && v[0])
        cJSON_AddStringToObject(o, k, v);
    else
        cJSON_AddNullToObject(o, k);
}

static void add_num_if(cJSON *o, const char *k, bool valid, double v)
{
    if (valid)
        cJSON_AddNumberToObject(o, k, v);
    else
        cJSON_AddNullToObject(o, k);
}

static cJSON *json_device(const struct dev_report *r)
{
    const struct mb_device_info *in = &r->info;
    cJSON *d = cJSON_CreateObject();
    cJSON_AddStringToObject(d, "spec", r->spec);
    cJSON_AddStringToObject(d, "backend", in->backend);
    cJSON_AddBoolToObject(d, "emulated", in->emulated);
    cJSON_AddNumberToObject(d, "index", in->index);
    add_str_or_null(d, "name", in->name);
    add_str_or_null(d, "model", in->model);
    add_str_or_null(d, "uuid", in->uuid);
    add_str_or_null(d, "driver_version", in->driver_version);
    add_str_or_null(d, "nvml_version", in->nvml_version);
    add_str_or_null(d, "pci_bus_id", in->pci_bus_id);
    add_num_if(d, "mem_total_bytes", in->mem_total_valid, (double)in->mem_total_bytes);
    add_num_if(d, "cpu_count", in->cpu_count > 0, in->cpu_count);
    cJSON_AddBoolToObject(d, "mig_capable", in->mig_capable);

    if (r->sensor_rc == MB_OK) {
        const struct mb_sensor_info *s = &r->sensor;
        cJSON *o = cJSON_AddObjectToObject(d, "sensor");
        cJSON_AddStringToObject(o, "power_kind", mb_power_kind_str(s->power_kind));
        add_num_if(o, "power_update_period_ms", s->power_update_period_ms > 0,
                   s->power_update_period_ms);
        add_num_if(o, "power_avg_window_ms", s->power_avg_window_ms > 0, s->power_avg_window_ms);
        cJSON_AddBoolToObject(o, "has_instant", s->has_instant);
        cJSON_AddBoolToObject(o, "has_average", s->has_average);
        cJSON_AddBoolToObject(o, "has_energy_counter", s->has_energy_counter);
        add_num_if(o, "energy_update_period_ms", s->energy_update_period_ms > 0,
                   s->energy_update_period_ms);
        add_num_if(o, "energy_resolution_mj", s->energy_resolution_mj > 0, s->energy_resolution_mj);
        add_num_if(o, "energy_wrap_mj", s->energy_wrap_mj > 0, (double)s->energy_wrap_mj);
        add_str_or_null(o, "scope", s->scope);
        add_str_or_null(o, "source", s->source);
    } else {
        cJSON_AddNullToObject(d, "sensor");
    }

    if (r->tel_rc == MB_OK) {
        const struct mb_telemetry *t = &r->tel;
        uint32_t v = t->valid;
        cJSON *o = cJSON_AddObjectToObject(d, "telemetry");
        add_num_if(o, "power_mw", v & MB_TEL_POWER, t->power_mw);
        add_num_if(o, "power_instant_mw", v & MB_TEL_POWER_INSTANT, t->power_instant_mw);
        add_num_if(o, "power_avg_mw", v & MB_TEL_POWER_AVG, t->power_avg_mw);
        add_num_if(o, "energy_mj", v & MB_TEL_ENERGY, (double)t->energy_mj);
        add_num_if(o, "energy_dram_mj", v & MB_TEL_ENERGY_DRAM, (double)t->energy_dram_mj);
        /* The host's "utilisation" is the CPU's: named so, with no GPU field beside it. */
        bool host = strcmp(r->info.backend, "host") == 0;
        add_num_if(o, host ? "util_cpu_pct" : "util_gpu_pct", v & MB_TEL_UTIL_GPU, t->util_gpu_pct);
        add_num_if(o, "util_mem_pct", v & MB_TEL_UTIL_MEM, t->util_mem_pct);
        add_num_if(o, "mem_used_bytes", v & MB_TEL_MEM_USED, (double)t->mem_used_bytes);
        add_num_if(o, "clock_sm_mhz", v & MB_TEL_CLOCK_SM, t->clock_sm_mhz);
        add_num_if(o, "clock_mem_mhz", v & MB_TEL_CLOCK_MEM, t->clock_mem_mhz);
        add_num_if(o, "temp_c", v & MB_TEL_TEMP, t->temp_c);
        add_num_if(o, "throttle_reasons", v & MB_TEL_THROTTLE, (double)t->throttle_reasons);
        add_num_if(o, "power_limit_mw", v & MB_TEL_POWER_LIMIT, t->power_limit_mw);
    } else {
        cJSON_AddNullToObject(d, "telemetry");
    }

    if (r->mode_rc == MB_OK) {
        cJSON *o = cJSON_AddObjectToObject(d, "mig_mode");
        cJSON_AddBoolToObject(o, "current", r->mode.current);
        cJSON_AddBoolToObject(o, "pending", r->mode.pending);
    } else {
        cJSON_AddNullToObject(d, "mig_mode");
    }

    if (r->prof_rc == MB_OK) {
        cJSON *a = cJSON_AddArrayToObject(d, "mig_profiles");
        for (size_t i = 0; i < r->n_prof; i++) {
            const struct mb_device_profile *p = &r->prof[i];
            cJSON *o = cJSON_CreateObject();
            cJSON_AddItemToArray(a, o);
            cJSON_AddStringToObject(o, "name", p->name);
            cJSON_AddNumberToObject(o, "driver_id", p->driver_id);
            cJSON_AddNumberToObject(o, "nvml_enum", p->nvml_enum);
            cJSON_AddNumberToObject(o, "compute_slices", p->compute_slices);
            cJSON_AddNumberToObject(o, "memory_slices", p->memory_slices);
            cJSON_AddNumberToObject(o, "max_count", p->max_count);
            cJSON_AddNumberToObject(o, "remaining", p->remaining);
            add_num_if(o, "sm_count", p->sm_count >= 0, p->sm_count);
            add_num_if(o, "memory_mib", p->memory_mib >= 0, (double)p->memory_mib);
        }
    } else {
        cJSON_AddNullToObject(d, "mig_profiles");
    }

    if (r->inst_rc == MB_OK) {
        cJSON *a = cJSON_AddArrayToObject(d, "mig_instances");
        for (size_t i = 0; i < r->n_inst; i++) {
            const struct mb_mig_instance *m = &r->inst[i];
            cJSON *o = cJSON_CreateObject();
            cJSON_AddItemToArray(a, o);
            cJSON_AddNumberToObject(o, "gi_id", m->gi_id);
            add_num_if(o, "ci_id", m->has_ci, m->ci_id);
            cJSON_AddStringToObject(o, "profile", m->profile_name);
            cJSON_AddNumberToObject(o, "profile_id", m->profile_id);
            cJSON_AddNumberToObject(o, "placement_start", m->placement.start);
            cJSON_AddNumberToObject(o, "placement_size", m->placement.size);
            add_num_if(o, "ci_profile_id", m->has_ci, m->ci_profile_id);
            add_num_if(o, "ci_slices", m->has_ci, m->ci_slices);
            add_str_or_null(o, "uuid", m->uuid);
            add_num_if(o, "mem_total_bytes", m->mem_valid, (double)m->mem_total_bytes);
            add_num_if(o, "mem_used_bytes", m->mem_valid, (double)m->mem_used_bytes);
        }
    } else {
        cJSON_AddNullToObject(d, "mig_instances");
    }

    if (r->proc_rc == MB_OK) {
        cJSON *a = cJSON_AddArrayToObject(d, "processes");
        for (size_t i = 0; i < r->n_proc; i++) {
            const struct mb_process *p = &r->proc[i];
            cJSON *o = cJSON_CreateObject();
            cJSON_AddItemToArray(a, o);
            cJSON_AddNumberToObject(o, "pid", p->pid);
            add_str_or_null(o, "name", p->name);
            add_num_if(o, "used_mem_bytes", p->used_mem_valid, (double)p->used_mem_bytes);
            add_num_if(o, "gi_id", p->gi_id >= 0, p->gi_id);
            add_num_if(o, "ci_id", p->ci_id >= 0, p->ci_id);
        }
    } else {
        cJSON_AddNullToObject(d, "processes");
    }
    return d;
}

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

static void print_text(FILE *out, size_t i, const struct dev_report *r)
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
        const char *what = strcmp(r->info.backend, "host") == 0 ? "CPU utilisation" : "utilisation";
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

static int show(const char *spec, struct mb_device *dev, bool json, cJSON *arr, size_t index)
{
    struct dev_report *r = calloc(1, sizeof(*r));
    if (!r) {
        mb_cli_error("devices", "out of memory");
        return MB_EXIT_FAIL;
    }
    snprintf(r->spec, sizeof(r->spec), "%s", spec);
    struct mb_error err;
    mb_error_clear(&err);
    int rc = collect(dev, r, &err);
    if (rc != MB_OK) {
        mb_cli_error("devices", "%s: %s", spec, err.msg);
        free(r);
        return mb_cli_exit_for(rc) == MB_EXIT_USAGE ? MB_EXIT_USAGE : MB_EXIT_FAIL;
    }
    if (json)
        cJSON_AddItemToArray(arr, json_device(r));
    else
        print_text(stdout, index, r);
    free(r);
    return MB_EXIT_OK;
}

/* Opens spec and shows it; returns the exit status for it. */
static int show_one(const char *spec, bool json, cJSON *arr, size_t *shown)
{
    struct mb_device *dev = NULL;
    struct mb_error err;
    mb_error_clear(&err);
    int rc = mb_device_open(spec, &dev, &err);
    if (rc != MB_OK) {
        mb_cli_error("devices", "%s", err.msg);
        return mb_cli_exit_for(rc);
    }
    int s = show(spec, dev, json, arr, (*shown)++);
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

    cJSON *root = cJSON_CreateObject();
    cJSON *arr = root ? cJSON_AddArrayToObject(root, "devices") : NULL;
    if (!arr) {
        cJSON_Delete(root);
        mb_cli_error("devices", "out of memory");
        return MB_EXIT_FAIL;
    }
    int status = MB_EXIT_OK;
    size_t shown = 0;
    struct mb_error err;
    if (n_specs == 0 || (n_specs == 1 && strcmp(specs[0], "auto") == 0)) {
        /* Every NVIDIA GPU NVML reports; the host when there is none. Never an emulated one. */
        for (unsigned i = 0; i < DEVICES_MAX_NVML; i++) {
            char spec[32];
            snprintf(spec, sizeof(spec), "nvml:%u", i);
            struct mb_device *dev = NULL;
            if (mb_device_open(spec, &dev, &err) != MB_OK)
                break;
            int s = show(spec, dev, json, arr, shown++);
            mb_device_close(dev);
            if (s != MB_EXIT_OK)
                status = s;
        }
        if (shown == 0) {
            struct mb_device *dev = NULL;
            int rc = mb_device_open("host", &dev, &err);
            if (rc != MB_OK) {
                mb_cli_error("devices", "%s", err.msg);
                status = MB_EXIT_FAIL;
            } else {
                status = show("host", dev, json, arr, shown++);
                mb_device_close(dev);
            }
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
                int s = show_one(list.specs[k], json, arr, &shown);
                if (s > status)
                    status = s;
            }
            mb_device_spec_list_free(&list);
        }
    }
    if (json && shown > 0) {
        char *text = cJSON_Print(root);
        if (text) {
            fputs(text, stdout);
            fputc('\n', stdout);
            cJSON_free(text);
        }
    }
    cJSON_Delete(root);
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
