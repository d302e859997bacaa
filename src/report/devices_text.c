/* SPDX-License-Identifier: Apache-2.0 */
/* The text of `migbench devices`: one block per device report. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "migbench/report_verbs.h"

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

static void print_sensor(FILE *out, const struct mb_device_report *r)
{
    char a[32], b[32];
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
}

static void print_telemetry(FILE *out, const struct mb_device_report *r)
{
    char a[32], b[32], c[32];
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
}

static void print_mig(FILE *out, const struct mb_device_report *r)
{
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
}

static void print_processes(FILE *out, const struct mb_device_report *r)
{
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

void mb_device_report_text_write(FILE *out, size_t i, const struct mb_device_report *r)
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
    print_sensor(out, r);
    print_telemetry(out, r);
    print_power_limit(out, r);
    print_mig(out, r);
    print_processes(out, r);
}
