/* SPDX-License-Identifier: Apache-2.0 */
/* The live monitor: read-only sampling of devices, rendering, and Prometheus series. */
#include "base/json_io.h"
#include "migbench/monitor.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "migbench/clock.h"
#include "monitor/live_internal.h"

#define AUTO_MAX_NVML 16

struct dev_state {
    struct mb_device *dev;
    char spec[MB_MONITOR_SPEC_MAX];
    struct mb_device_info info;
    uint32_t caps; /* MB_CAP_* */
    struct mb_sensor_info sensor;
    bool have_last;
    struct mb_telemetry last;
    bool energy_ok;
    double energy_j;
    const char *energy_source;
};

struct mb_monitor {
    size_t n;
    struct dev_state d[MB_MONITOR_MAX_DEVICES];
    char live_dir[MB_LIVE_PATH_MAX];
    uint64_t seq;
    int64_t t0_ns;
    struct mb_live_cell cells[MB_MONITOR_MAX_DEVICES * MB_MONITOR_MAX_CELLS];
};

static int add_device(struct mb_monitor *m, const char *spec, struct mb_device *dev,
                      struct mb_error *err)
{
    if (m->n == MB_MONITOR_MAX_DEVICES) {
        mb_device_close(dev);
        return mb_error_set(err, MB_ERANGE, "monitor: more than %d devices",
                            MB_MONITOR_MAX_DEVICES);
    }
    struct dev_state *s = &m->d[m->n];
    memset(s, 0, sizeof(*s));
    s->dev = dev;
    snprintf(s->spec, sizeof(s->spec), "%s", spec);
    s->caps = mb_device_caps(dev);
    int rc = mb_device_info(dev, &s->info, err);
    if (rc == MB_OK)
        rc = mb_device_sensor(dev, &s->sensor, err);
    if (rc != MB_OK) {
        mb_device_close(dev);
        return mb_error_prefix(err, "device %s: ", spec);
    }
    m->n++;
    return MB_OK;
}

int mb_monitor_create(const struct mb_monitor_opts *opts, struct mb_monitor **out,
                      struct mb_error *err)
{
    *out = NULL;
    struct mb_monitor *m = calloc(1, sizeof(*m));
    if (!m)
        return mb_error_set(err, MB_ENOMEM, "monitor: out of memory");
    int rc = MB_OK;
    if (!opts->live_dir)
        rc = mb_live_dir(m->live_dir, sizeof(m->live_dir), err);
    else if (opts->live_dir[0]) {
        snprintf(m->live_dir, sizeof(m->live_dir), "%s", opts->live_dir);
        rc = mb__live_dir_check(m->live_dir, err); /* another user's files are not shown */
    }
    if (rc)
        goto fail;
    if (opts->n_specs == 0 || (opts->n_specs == 1 && strcmp(opts->specs[0], "auto") == 0)) {
        for (unsigned i = 0; i < AUTO_MAX_NVML; i++) {
            char spec[32];
            snprintf(spec, sizeof(spec), "nvml:%u", i);
            struct mb_device *dev = NULL;
            if (mb_device_open(spec, &dev, NULL) != MB_OK)
                break;
            if ((rc = add_device(m, spec, dev, err)) != MB_OK)
                goto fail;
        }
        if (m->n == 0) {
            struct mb_device *dev = NULL;
            if ((rc = mb_device_open("host", &dev, err)) != MB_OK ||
                (rc = add_device(m, "host", dev, err)) != MB_OK)
                goto fail;
        }
    } else {
        for (size_t i = 0; i < opts->n_specs; i++) {
            struct mb_device *dev = NULL;
            if ((rc = mb_device_open(opts->specs[i], &dev, err)) != MB_OK ||
                (rc = add_device(m, opts->specs[i], dev, err)) != MB_OK)
                goto fail;
        }
    }
    *out = m;
    return MB_OK;
fail:
    mb_monitor_destroy(m);
    return rc;
}

void mb_monitor_destroy(struct mb_monitor *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->n; i++)
        mb_device_close(m->d[i].dev);
    free(m);
}

/*
 * Energy since start: the counter's steps (with its wrap) where there is a counter, else the
 * trapezoid of the power readings. A counter that goes backwards without a known wrap (a driver
 * reload) has its stretch filled from power, as the meter does.
 */
static void account_energy(struct dev_state *s, const struct mb_telemetry *t)
{
    if (!s->have_last) {
        s->energy_ok = (t->valid & (MB_TEL_ENERGY | MB_TEL_POWER)) != 0;
        s->energy_j = 0;
        s->energy_source = (t->valid & MB_TEL_ENERGY) ? "counter" : "integrated";
        return;
    }
    const struct mb_telemetry *l = &s->last;
    double dt = (double)(t->t_ns - l->t_ns) / 1e9;
    bool power = (t->valid & MB_TEL_POWER) && (l->valid & MB_TEL_POWER);
    double trap = power ? dt * ((double)t->power_mw + (double)l->power_mw) / 2000.0 : 0;
    if ((t->valid & MB_TEL_ENERGY) && (l->valid & MB_TEL_ENERGY)) {
        if (t->energy_mj >= l->energy_mj)
            s->energy_j += (double)(t->energy_mj - l->energy_mj) / 1000.0;
        else if (s->sensor.energy_wrap_mj)
            s->energy_j +=
                (double)(t->energy_mj + s->sensor.energy_wrap_mj - l->energy_mj) / 1000.0;
        else if (power)
            s->energy_j += trap;
        else
            s->energy_ok = false;
    } else if (power && strcmp(s->energy_source, "integrated") == 0) {
        s->energy_j += trap;
    } else {
        s->energy_ok = false; /* a gap in the readings: no honest total any more */
    }
}

static void read_device(struct dev_state *s, struct mb_monitor_gpu *g,
                        const struct mb_live_cell *cells, size_t n_cells)
{
    memset(g, 0, sizeof(*g));
    snprintf(g->spec, sizeof(g->spec), "%s", s->spec);
    g->info = s->info;
    g->caps = s->caps;
    g->sensor = s->sensor;
    struct mb_error err;
    mb_error_clear(&err);
    if (mb_device_telemetry(s->dev, &g->tel, &err) == MB_OK) {
        g->tel_ok = true;
        account_energy(s, &g->tel);
        s->last = g->tel;
        s->have_last = true;
    } else {
        /* The counter bridges a failed read; the next good sample accounts for the gap. */
        snprintf(g->error, sizeof(g->error), "%s", err.msg);
    }
    g->energy_ok = s->energy_ok && s->have_last;
    g->energy_j = s->energy_j;
    g->energy_source = s->energy_source ? s->energy_source : "";
    g->mig_ok = mb_device_mig_mode(s->dev, &g->mig, NULL) == MB_OK;
    struct mb_mig_instance inst[MB_MAX_MIG_INSTANCES];
    size_t n_inst = 0;
    if (g->mig_ok && g->mig.current &&
        mb_device_mig_instances(s->dev, inst, MB_MAX_MIG_INSTANCES, &n_inst, NULL) == MB_OK) {
        for (size_t i = 0; i < n_inst; i++) {
            g->inst[i].mig = inst[i];
            if (mb_device_mig_activity(s->dev, inst[i].gi_id, &g->inst[i].activity, NULL) != MB_OK)
                g->inst[i].activity.valid = 0;
        }
        g->n_inst = n_inst;
    }
    g->procs_ok =
        mb_device_processes(s->dev, g->procs, MB_MAX_PROCESSES, &g->n_procs, NULL) == MB_OK;
    if (!g->procs_ok)
        g->n_procs = 0;
    for (size_t p = 0; p < g->n_procs; p++)
        for (size_t i = 0; i < g->n_inst; i++)
            if (g->procs[p].gi_id >= 0 && (unsigned)g->procs[p].gi_id == g->inst[i].mig.gi_id)
                g->inst[i].n_procs++;
    /* A run is on this device when its UUID matches, or, without UUIDs, its spec does. */
    for (size_t c = 0; c < n_cells && g->n_cells < MB_MONITOR_MAX_CELLS; c++) {
        bool match = s->info.uuid[0] ? strcmp(cells[c].device_uuid, s->info.uuid) == 0
                                     : strcmp(cells[c].device_spec, s->spec) == 0;
        if (match)
            g->cells[g->n_cells++] = cells[c];
    }
}

int mb_monitor_sample(struct mb_monitor *m, struct mb_monitor_snapshot *out, struct mb_error *err)
{
    if (!out)
        return mb_error_set(err, MB_EINVAL, "monitor: no snapshot to fill");
    size_t n_cells = 0;
    if (m->live_dir[0] &&
        mb_live_scan(m->live_dir, m->cells, sizeof(m->cells) / sizeof(m->cells[0]), &n_cells,
                     NULL) != MB_OK)
        n_cells = 0;
    out->t_ns = mb_clock_monotonic_ns();
    if (m->seq == 0)
        m->t0_ns = out->t_ns;
    out->seq = ++m->seq;
    out->elapsed_s = (double)(out->t_ns - m->t0_ns) / 1e9;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    out->unix_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    if (gethostname(out->hostname, sizeof(out->hostname)) != 0)
        snprintf(out->hostname, sizeof(out->hostname), "unknown");
    out->hostname[sizeof(out->hostname) - 1] = '\0';
    out->n_gpus = m->n;
    for (size_t i = 0; i < m->n; i++)
        read_device(&m->d[i], &out->gpus[i], m->cells, n_cells);
    return MB_OK;
}

/* ---- rendering ---------------------------------------------------------------------------- */

#define MIB_F(b) ((double)(b) / (1024.0 * 1024.0))

static bool has(const struct mb_monitor_gpu *g, uint32_t bit)
{
    return g->tel_ok && (g->tel.valid & bit);
}

/* "123.4 W" or "-" into buf. */
static const char *watts(char *buf, size_t cap, bool ok, uint32_t mw)
{
    if (ok)
        snprintf(buf, cap, "%.1f W", (double)mw / 1000.0);
    else
        snprintf(buf, cap, "-");
    return buf;
}

/* "123.4W" or "-": a key=value token without a space. */
static const char *watts_tok(char *buf, size_t cap, bool ok, uint32_t mw)
{
    if (ok)
        snprintf(buf, cap, "%.1fW", (double)mw / 1000.0);
    else
        snprintf(buf, cap, "-");
    return buf;
}

static const char *uval(char *buf, size_t cap, bool ok, unsigned long long v, const char *unit)
{
    if (ok)
        snprintf(buf, cap, "%llu%s", v, unit);
    else
        snprintf(buf, cap, "-");
    return buf;
}

/* The MIG state and one line per instance. */
static void screen_mig(FILE *f, const struct mb_monitor_gpu *g)
{
    if (!g->mig_ok)
        return;
    fprintf(f, "  MIG      %s%s, %zu instance%s\n", g->mig.current ? "on" : "off",
            g->mig.pending != g->mig.current ? " (change pending)" : "", g->n_inst,
            g->n_inst == 1 ? "" : "s");
    if (g->n_inst)
        fprintf(f, "    %-4s %-4s %-12s %-10s %-20s %-8s %s\n", "GI", "CI", "profile", "placement",
                "memory", "SM util", "procs");
    for (size_t i = 0; i < g->n_inst; i++) {
        const struct mb_monitor_instance *in = &g->inst[i];
        char ci[16], pl[24], im[48], sm[24];
        snprintf(ci, sizeof(ci), in->mig.has_ci ? "%u" : "-", in->mig.ci_id);
        snprintf(pl, sizeof(pl), "%u+%u", in->mig.placement.start, in->mig.placement.size);
        if (in->mig.mem_valid)
            snprintf(im, sizeof(im), "%.0f / %.0f MiB", MIB_F(in->mig.mem_used_bytes),
                     MIB_F(in->mig.mem_total_bytes));
        else
            snprintf(im, sizeof(im), "-");
        if (in->activity.valid & MB_ACT_SM_UTIL)
            snprintf(sm, sizeof(sm), "%.0f%%", in->activity.sm_util_pct);
        else
            snprintf(sm, sizeof(sm), "-");
        fprintf(f, "    %-4u %-4s %-12s %-10s %-20s %-8s %zu\n", in->mig.gi_id, ci,
                in->mig.profile_name, pl, im, sm, in->n_procs);
    }
}

/* The processes on the GPU (at most 16 lines). */
static void screen_procs(FILE *f, const struct mb_monitor_gpu *g)
{
    if (!g->procs_ok)
        fprintf(f, "  processes -\n");
    else {
        fprintf(f, "  processes %zu\n", g->n_procs);
        for (size_t p = 0; p < g->n_procs && p < 16; p++) {
            const struct mb_process *pr = &g->procs[p];
            char gi[16], pm[32];
            if (pr->gi_id >= 0)
                snprintf(gi, sizeof(gi), "%d/%d", pr->gi_id, pr->ci_id);
            else
                snprintf(gi, sizeof(gi), "gpu");
            if (pr->used_mem_valid)
                snprintf(pm, sizeof(pm), "%.0f MiB", MIB_F(pr->used_mem_bytes));
            else
                snprintf(pm, sizeof(pm), "-");
            fprintf(f, "    pid %-8u on %-6s %-10s %s\n", pr->pid, gi, pm, pr->name);
        }
    }
}

/* The migbench runs on this GPU and their jobs' rates. */
static void screen_cells(FILE *f, const struct mb_monitor_gpu *g)
{
    for (size_t c = 0; c < g->n_cells; c++) {
        const struct mb_live_cell *lc = &g->cells[c];
        fprintf(f, "  run      %s: %s rep %u (%s, cell %zu/%zu, pid %ld), %s", lc->experiment,
                lc->run, lc->rep, lc->mode, lc->cell_index + 1, lc->n_cells, lc->pid, lc->phase);
        if (lc->window_s > 0 && lc->window_target_s > 0)
            fprintf(f, " %.0f/%.0f s", lc->window_s, lc->window_target_s);
        fputc('\n', f);
        for (size_t j = 0; j < lc->n_jobs; j++) {
            if (lc->jobs[j].rate_valid)
                fprintf(f, "    job %-24s %.4g %s/s\n", lc->jobs[j].name, lc->jobs[j].rate,
                        lc->jobs[j].unit);
            else
                fprintf(f, "    job %-24s -\n", lc->jobs[j].name);
        }
    }
}

static void screen_gpu(FILE *f, const struct mb_monitor_gpu *g, size_t idx)
{
    char a[48], b[48], w3[48], d[48];
    fprintf(f, "GPU %zu  %s%s  [%s]%s%s\n", idx, g->info.name[0] ? g->info.name : g->info.backend,
            g->info.emulated ? " (emulated: modelled numbers)" : "", g->spec,
            g->info.uuid[0] ? "  " : "", g->info.uuid);
    if (!g->tel_ok)
        fprintf(f, "  telemetry unavailable: %s\n", g->error);
    char win[64] = "";
    if (g->sensor.power_avg_window_ms)
        snprintf(win, sizeof(win), ", %u ms window", g->sensor.power_avg_window_ms);
    fprintf(f, "  power    %-10s (%s%s)  instant %s  average %s  limit %s\n",
            watts(a, sizeof(a), has(g, MB_TEL_POWER), g->tel.power_mw),
            mb_power_kind_str(g->sensor.power_kind), win,
            watts(b, sizeof(b), has(g, MB_TEL_POWER_INSTANT), g->tel.power_instant_mw),
            watts(w3, sizeof(w3), has(g, MB_TEL_POWER_AVG), g->tel.power_avg_mw),
            watts(d, sizeof(d), has(g, MB_TEL_POWER_LIMIT), g->tel.power_limit_mw));
    if (g->energy_ok)
        fprintf(f, "  energy   %.3f J since start (%s)\n", g->energy_j, g->energy_source);
    else
        fprintf(f, "  energy   - (no energy counter or power reading)\n");
    char mem[64];
    if (has(g, MB_TEL_MEM_USED) && g->info.mem_total_valid)
        snprintf(mem, sizeof(mem), "%.0f / %.0f MiB", MIB_F(g->tel.mem_used_bytes),
                 MIB_F(g->info.mem_total_bytes));
    else if (has(g, MB_TEL_MEM_USED))
        snprintf(mem, sizeof(mem), "%.0f MiB", MIB_F(g->tel.mem_used_bytes));
    else
        snprintf(mem, sizeof(mem), "-");
    fprintf(f, "  util     gpu %s  memory %s   memory used %s\n",
            uval(a, sizeof(a), has(g, MB_TEL_UTIL_GPU), g->tel.util_gpu_pct, "%"),
            uval(b, sizeof(b), has(g, MB_TEL_UTIL_MEM), g->tel.util_mem_pct, "%"), mem);
    char thr[160];
    if (has(g, MB_TEL_THROTTLE) && g->tel.throttle_reasons)
        mb_throttle_reasons_str(g->tel.throttle_reasons, thr, sizeof(thr));
    else if (has(g, MB_TEL_THROTTLE))
        snprintf(thr, sizeof(thr), "none");
    else
        snprintf(thr, sizeof(thr), "-");
    char temp[32];
    if (has(g, MB_TEL_TEMP))
        snprintf(temp, sizeof(temp), "%d C", (int)g->tel.temp_c);
    else
        snprintf(temp, sizeof(temp), "-");
    fprintf(f, "  clocks   sm %s  memory %s   temperature %s   throttle %s\n",
            uval(a, sizeof(a), has(g, MB_TEL_CLOCK_SM), g->tel.clock_sm_mhz, " MHz"),
            uval(b, sizeof(b), has(g, MB_TEL_CLOCK_MEM), g->tel.clock_mem_mhz, " MHz"), temp, thr);
    screen_mig(f, g);
    screen_procs(f, g);
    screen_cells(f, g);
}

static void plain_gpu(FILE *f, const struct mb_monitor_snapshot *s, const struct mb_monitor_gpu *g,
                      size_t idx)
{
    char a[48], b[48], w3[48], d[48];
    fprintf(f, "t=%.3f gpu=%zu device=%s backend=%s%s", s->elapsed_s, idx, g->spec, g->info.backend,
            g->info.emulated ? " emulated=yes" : "");
    if (!g->tel_ok)
        fprintf(f, " error=\"%s\"", g->error);
    fprintf(f, " power=%s", watts_tok(a, sizeof(a), has(g, MB_TEL_POWER), g->tel.power_mw));
    fprintf(f, " power_instant=%s power_avg=%s",
            watts_tok(b, sizeof(b), has(g, MB_TEL_POWER_INSTANT), g->tel.power_instant_mw),
            watts_tok(w3, sizeof(w3), has(g, MB_TEL_POWER_AVG), g->tel.power_avg_mw));
    if (g->sensor.power_avg_window_ms)
        fprintf(f, " avg_window=%ums", g->sensor.power_avg_window_ms);
    else
        fprintf(f, " avg_window=-");
    if (g->energy_ok)
        fprintf(f, " energy=%.3fJ energy_source=%s", g->energy_j, g->energy_source);
    else
        fprintf(f, " energy=-");
    fprintf(f, " util=%s mem_util=%s",
            uval(a, sizeof(a), has(g, MB_TEL_UTIL_GPU), g->tel.util_gpu_pct, "%"),
            uval(b, sizeof(b), has(g, MB_TEL_UTIL_MEM), g->tel.util_mem_pct, "%"));
    if (has(g, MB_TEL_MEM_USED))
        fprintf(f, " mem_used=%.0fMiB", MIB_F(g->tel.mem_used_bytes));
    else
        fprintf(f, " mem_used=-");
    fprintf(f, " sm_clock=%s mem_clock=%s",
            uval(a, sizeof(a), has(g, MB_TEL_CLOCK_SM), g->tel.clock_sm_mhz, "MHz"),
            uval(b, sizeof(b), has(g, MB_TEL_CLOCK_MEM), g->tel.clock_mem_mhz, "MHz"));
    if (has(g, MB_TEL_TEMP))
        fprintf(f, " temp=%dC", (int)g->tel.temp_c);
    else
        fprintf(f, " temp=-");
    fprintf(f, " limit=%s",
            watts_tok(d, sizeof(d), has(g, MB_TEL_POWER_LIMIT), g->tel.power_limit_mw));
    char thr[160];
    if (has(g, MB_TEL_THROTTLE) && g->tel.throttle_reasons)
        fprintf(f, " throttle=%s",
                mb_throttle_reasons_str(g->tel.throttle_reasons, thr, sizeof(thr)));
    else if (has(g, MB_TEL_THROTTLE))
        fprintf(f, " throttle=none");
    else
        fprintf(f, " throttle=-");
    if (g->mig_ok)
        fprintf(f, " mig=%s instances=%zu", g->mig.current ? "on" : "off", g->n_inst);
    else
        fprintf(f, " mig=-");
    for (size_t i = 0; i < g->n_inst; i++) {
        const struct mb_monitor_instance *in = &g->inst[i];
        fprintf(f, " gi%u=%s", in->mig.gi_id, in->mig.profile_name);
        if (in->mig.mem_valid)
            fprintf(f, ",mem=%.0fMiB", MIB_F(in->mig.mem_used_bytes));
        if (in->activity.valid & MB_ACT_SM_UTIL)
            fprintf(f, ",sm=%.0f%%", in->activity.sm_util_pct);
        fprintf(f, ",procs=%zu", in->n_procs);
    }
    if (g->procs_ok)
        fprintf(f, " procs=%zu", g->n_procs);
    else
        fprintf(f, " procs=-");
    for (size_t c = 0; c < g->n_cells; c++) {
        const struct mb_live_cell *lc = &g->cells[c];
        fprintf(f, " run=%s/%s#%u phase=%s", lc->experiment, lc->run, lc->rep, lc->phase);
        for (size_t j = 0; j < lc->n_jobs; j++) {
            if (lc->jobs[j].rate_valid)
                fprintf(f, " job=%s:%.4g%s/s", lc->jobs[j].name, lc->jobs[j].rate,
                        lc->jobs[j].unit);
            else
                fprintf(f, " job=%s:-", lc->jobs[j].name);
        }
    }
    fputc('\n', f);
}

static void num_or_null(cJSON *o, const char *k, bool ok, double v)
{
    if (ok)
        cJSON_AddNumberToObject(o, k, v);
    else
        cJSON_AddNullToObject(o, k);
}

/* The GPU's MIG instances, its processes and the migbench runs on it, into o. */
static void json_instances(cJSON *o, const struct mb_monitor_gpu *g)
{
    cJSON *arr = cJSON_AddArrayToObject(o, "instances");
    for (size_t i = 0; arr && i < g->n_inst; i++) {
        const struct mb_monitor_instance *in = &g->inst[i];
        cJSON *x = cJSON_CreateObject();
        if (!x)
            break;
        cJSON_AddNumberToObject(x, "gi_id", in->mig.gi_id);
        num_or_null(x, "ci_id", in->mig.has_ci, in->mig.ci_id);
        cJSON_AddStringToObject(x, "profile", in->mig.profile_name);
        cJSON_AddNumberToObject(x, "start", in->mig.placement.start);
        cJSON_AddNumberToObject(x, "size", in->mig.placement.size);
        cJSON_AddStringToObject(x, "uuid", in->mig.uuid);
        num_or_null(x, "mem_used_bytes", in->mig.mem_valid, (double)in->mig.mem_used_bytes);
        num_or_null(x, "mem_total_bytes", in->mig.mem_valid, (double)in->mig.mem_total_bytes);
        num_or_null(x, "sm_util_pct", in->activity.valid & MB_ACT_SM_UTIL,
                    in->activity.sm_util_pct);
        num_or_null(x, "tensor_util_pct", in->activity.valid & MB_ACT_TENSOR,
                    in->activity.tensor_util_pct);
        num_or_null(x, "dram_bw_util_pct", in->activity.valid & MB_ACT_DRAM_BW,
                    in->activity.dram_bw_util_pct);
        cJSON_AddNumberToObject(x, "processes", (double)in->n_procs);
        cJSON_AddItemToArray(arr, x);
    }
}

static void json_procs(cJSON *o, const struct mb_monitor_gpu *g)
{
    cJSON *arr;
    if (!g->procs_ok)
        cJSON_AddNullToObject(o, "processes");
    else if ((arr = cJSON_AddArrayToObject(o, "processes")) != NULL) {
        for (size_t p = 0; p < g->n_procs; p++) {
            cJSON *x = cJSON_CreateObject();
            if (!x)
                break;
            cJSON_AddNumberToObject(x, "pid", g->procs[p].pid);
            num_or_null(x, "gi_id", g->procs[p].gi_id >= 0, g->procs[p].gi_id);
            num_or_null(x, "ci_id", g->procs[p].ci_id >= 0, g->procs[p].ci_id);
            num_or_null(x, "used_mem_bytes", g->procs[p].used_mem_valid,
                        (double)g->procs[p].used_mem_bytes);
            cJSON_AddStringToObject(x, "name", g->procs[p].name);
            cJSON_AddItemToArray(arr, x);
        }
    }
}

static void json_runs(cJSON *o, const struct mb_monitor_gpu *g)
{
    cJSON *arr = cJSON_AddArrayToObject(o, "runs");
    for (size_t c = 0; arr && c < g->n_cells; c++) {
        const struct mb_live_cell *lc = &g->cells[c];
        cJSON *x = cJSON_CreateObject();
        if (!x)
            break;
        cJSON_AddNumberToObject(x, "pid", (double)lc->pid);
        cJSON_AddStringToObject(x, "experiment", lc->experiment);
        cJSON_AddStringToObject(x, "results_dir", lc->results_dir);
        cJSON_AddStringToObject(x, "run", lc->run);
        cJSON_AddStringToObject(x, "mode", lc->mode);
        cJSON_AddNumberToObject(x, "rep", lc->rep);
        cJSON_AddNumberToObject(x, "cell", (double)lc->cell_index + 1);
        cJSON_AddNumberToObject(x, "cells", (double)lc->n_cells);
        cJSON_AddStringToObject(x, "phase", lc->phase);
        cJSON_AddNumberToObject(x, "window_s", lc->window_s);
        num_or_null(x, "window_target_s", lc->window_target_s > 0, lc->window_target_s);
        cJSON *jobs = cJSON_AddArrayToObject(x, "jobs");
        for (size_t j = 0; jobs && j < lc->n_jobs; j++) {
            cJSON *jo = cJSON_CreateObject();
            if (!jo)
                break;
            cJSON_AddStringToObject(jo, "name", lc->jobs[j].name);
            num_or_null(jo, "rate", lc->jobs[j].rate_valid, lc->jobs[j].rate);
            cJSON_AddStringToObject(jo, "unit", lc->jobs[j].unit);
            cJSON_AddItemToArray(jobs, jo);
        }
        cJSON_AddItemToArray(arr, x);
    }
}

static cJSON *json_gpu(const struct mb_monitor_gpu *g, size_t idx)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cJSON_AddNumberToObject(o, "gpu", (double)idx);
    cJSON_AddStringToObject(o, "device", g->spec);
    cJSON_AddStringToObject(o, "backend", g->info.backend);
    cJSON_AddBoolToObject(o, "emulated", g->info.emulated);
    cJSON_AddStringToObject(o, "name", g->info.name);
    cJSON_AddStringToObject(o, "model", g->info.model);
    cJSON_AddStringToObject(o, "uuid", g->info.uuid);
    if (g->tel_ok)
        cJSON_AddNullToObject(o, "error");
    else
        cJSON_AddStringToObject(o, "error", g->error);
    cJSON_AddStringToObject(o, "power_kind", mb_power_kind_str(g->sensor.power_kind));
    num_or_null(o, "power_avg_window_ms", g->sensor.power_avg_window_ms > 0,
                g->sensor.power_avg_window_ms);
    num_or_null(o, "power_w", has(g, MB_TEL_POWER), g->tel.power_mw / 1000.0);
    num_or_null(o, "power_instant_w", has(g, MB_TEL_POWER_INSTANT),
                g->tel.power_instant_mw / 1000.0);
    num_or_null(o, "power_avg_w", has(g, MB_TEL_POWER_AVG), g->tel.power_avg_mw / 1000.0);
    num_or_null(o, "energy_counter_mj", has(g, MB_TEL_ENERGY), (double)g->tel.energy_mj);
    num_or_null(o, "energy_since_start_j", g->energy_ok, g->energy_j);
    if (g->energy_ok)
        cJSON_AddStringToObject(o, "energy_source", g->energy_source);
    else
        cJSON_AddNullToObject(o, "energy_source");
    num_or_null(o, "util_gpu_pct", has(g, MB_TEL_UTIL_GPU), g->tel.util_gpu_pct);
    num_or_null(o, "util_mem_pct", has(g, MB_TEL_UTIL_MEM), g->tel.util_mem_pct);
    num_or_null(o, "mem_used_bytes", has(g, MB_TEL_MEM_USED), (double)g->tel.mem_used_bytes);
    num_or_null(o, "mem_total_bytes", g->info.mem_total_valid, (double)g->info.mem_total_bytes);
    num_or_null(o, "clock_sm_mhz", has(g, MB_TEL_CLOCK_SM), g->tel.clock_sm_mhz);
    num_or_null(o, "clock_mem_mhz", has(g, MB_TEL_CLOCK_MEM), g->tel.clock_mem_mhz);
    num_or_null(o, "temp_c", has(g, MB_TEL_TEMP), g->tel.temp_c);
    num_or_null(o, "power_limit_w", has(g, MB_TEL_POWER_LIMIT), g->tel.power_limit_mw / 1000.0);
    num_or_null(o, "throttle_reasons", has(g, MB_TEL_THROTTLE), (double)g->tel.throttle_reasons);
    if (g->mig_ok)
        cJSON_AddBoolToObject(o, "mig", g->mig.current != 0);
    else
        cJSON_AddNullToObject(o, "mig");
    json_instances(o, g);
    json_procs(o, g);
    json_runs(o, g);
    return o;
}

int mb_monitor_format(const struct mb_monitor_snapshot *s, enum mb_monitor_format fmt, char **out,
                      struct mb_error *err)
{
    *out = NULL;
    if (fmt == MB_MONITOR_JSON) {
        cJSON *o = cJSON_CreateObject();
        if (o) {
            cJSON_AddNumberToObject(o, "seq", (double)s->seq);
            cJSON_AddNumberToObject(o, "elapsed_s", s->elapsed_s);
            cJSON_AddNumberToObject(o, "unix_ms", (double)s->unix_ms);
            cJSON_AddStringToObject(o, "hostname", s->hostname);
        }
        cJSON *arr = o ? cJSON_AddArrayToObject(o, "gpus") : NULL;
        if (!arr) {
            cJSON_Delete(o);
            return mb_error_set(err, MB_ENOMEM, "monitor: out of memory");
        }
        for (size_t i = 0; i < s->n_gpus; i++) {
            cJSON *g = json_gpu(&s->gpus[i], i);
            if (g)
                cJSON_AddItemToArray(arr, g);
        }
        char *text = cJSON_PrintUnformatted(o);
        cJSON_Delete(o);
        size_t n = text ? strlen(text) : 0;
        char *buf = text ? malloc(n + 2) : NULL;
        if (!buf) {
            cJSON_free(text);
            return mb_error_set(err, MB_ENOMEM, "monitor: out of memory");
        }
        memcpy(buf, text, n);
        buf[n] = '\n';
        buf[n + 1] = '\0';
        cJSON_free(text);
        *out = buf;
        return MB_OK;
    }
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return mb_error_set(err, MB_ENOMEM, "monitor: out of memory");
    if (fmt == MB_MONITOR_SCREEN) {
        time_t now = (time_t)(s->unix_ms / 1000);
        struct tm tm;
        char clock[32] = "";
        if (localtime_r(&now, &tm))
            strftime(clock, sizeof(clock), "%H:%M:%S", &tm);
        fprintf(f, "migbench monitor  %s  %s  sample %llu  (%.1f s)\n\n", s->hostname, clock,
                (unsigned long long)s->seq, s->elapsed_s);
        for (size_t i = 0; i < s->n_gpus; i++) {
            if (i)
                fputc('\n', f);
            screen_gpu(f, &s->gpus[i], i);
        }
    } else {
        for (size_t i = 0; i < s->n_gpus; i++)
            plain_gpu(f, s, &s->gpus[i], i);
    }
    if (fclose(f) != 0 || !buf) {
        free(buf);
        return mb_error_set(err, MB_ENOMEM, "monitor: out of memory");
    }
    *out = buf;
    return MB_OK;
}

/* ---- Prometheus ---------------------------------------------------------------------------- */

/* Labels of one row: dcgm-exporter's set, plus the MIG pair and migbench's own where they apply. */
struct row {
    struct mb_prom_label l[MB_PROM_MAX_LABELS];
    size_t n;
    char gpu[16], device[64], gi[16];
};

static void row_gpu(struct row *r, const struct mb_monitor_snapshot *s,
                    const struct mb_monitor_gpu *g, size_t idx)
{
    snprintf(r->gpu, sizeof(r->gpu), "%zu", idx);
    /* DCGM names a real NVIDIA GPU nvidiaN; anything else keeps its backend's name. */
    if ((g->caps & MB_CAP_GPU) && !(g->caps & MB_CAP_EMULATED))
        snprintf(r->device, sizeof(r->device), "nvidia%u", g->info.index);
    else
        snprintf(r->device, sizeof(r->device), "%s%u", g->info.backend, g->info.index);
    r->n = 0;
    r->l[r->n++] = (struct mb_prom_label){"gpu", r->gpu};
    r->l[r->n++] = (struct mb_prom_label){"UUID", g->info.uuid};
    r->l[r->n++] = (struct mb_prom_label){"device", r->device};
    r->l[r->n++] = (struct mb_prom_label){"modelName", g->info.name};
    r->l[r->n++] = (struct mb_prom_label){"Hostname", s->hostname};
    /* Emulated numbers are modelled, never measured: the label says so on every row. */
    r->l[r->n++] = (struct mb_prom_label){"backend", g->info.backend};
}

static void row_mig(struct row *r, const struct mb_monitor_instance *in)
{
    snprintf(r->gi, sizeof(r->gi), "%u", in->mig.gi_id);
    r->l[r->n++] = (struct mb_prom_label){"GPU_I_ID", r->gi};
    r->l[r->n++] = (struct mb_prom_label){"GPU_I_PROFILE", in->mig.profile_name};
}

#define ADD(name, type, help, r, v)                                                                \
    do {                                                                                           \
        int rc_ = mb_prom_add(p, name, type, help, (r)->l, (r)->n, (v), err);                      \
        if (rc_)                                                                                   \
            return rc_;                                                                            \
    } while (0)

/* A GPU's own rows under DCGM's names, as dcgm-exporter writes them. */
static int prom_dcgm(struct mb_prom *p, const struct mb_monitor_gpu *g, const struct row *rp,
                     struct mb_error *err)
{
    struct row r = *rp;
    if (has(g, MB_TEL_POWER))
        ADD("DCGM_FI_DEV_POWER_USAGE", MB_PROM_GAUGE, "Power draw (in W).", &r,
            g->tel.power_mw / 1000.0);
    if (has(g, MB_TEL_ENERGY))
        ADD("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", MB_PROM_COUNTER,
            "Total energy consumption since boot (in mJ).", &r, (double)g->tel.energy_mj);
    if (has(g, MB_TEL_UTIL_GPU))
        ADD("DCGM_FI_DEV_GPU_UTIL", MB_PROM_GAUGE, "GPU utilization (in %).", &r,
            g->tel.util_gpu_pct);
    if (has(g, MB_TEL_UTIL_MEM))
        ADD("DCGM_FI_DEV_MEM_COPY_UTIL", MB_PROM_GAUGE, "Memory utilization (in %).", &r,
            g->tel.util_mem_pct);
    if (has(g, MB_TEL_CLOCK_SM))
        ADD("DCGM_FI_DEV_SM_CLOCK", MB_PROM_GAUGE, "SM clock frequency (in MHz).", &r,
            g->tel.clock_sm_mhz);
    if (has(g, MB_TEL_CLOCK_MEM))
        ADD("DCGM_FI_DEV_MEM_CLOCK", MB_PROM_GAUGE, "Memory clock frequency (in MHz).", &r,
            g->tel.clock_mem_mhz);
    if (has(g, MB_TEL_TEMP))
        ADD("DCGM_FI_DEV_GPU_TEMP", MB_PROM_GAUGE, "GPU temperature (in C).", &r, g->tel.temp_c);
    if (has(g, MB_TEL_POWER_LIMIT))
        ADD("DCGM_FI_DEV_POWER_MGMT_LIMIT", MB_PROM_GAUGE, "Power management limit (in W).", &r,
            g->tel.power_limit_mw / 1000.0);
    if (has(g, MB_TEL_THROTTLE))
        ADD("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", MB_PROM_GAUGE,
            "Clock throttle reasons (bitmask).", &r, (double)g->tel.throttle_reasons);
    if (has(g, MB_TEL_MEM_USED)) {
        ADD("DCGM_FI_DEV_FB_USED", MB_PROM_GAUGE, "Framebuffer memory used (in MiB).", &r,
            MIB_F(g->tel.mem_used_bytes));
        if (g->info.mem_total_valid && g->info.mem_total_bytes >= g->tel.mem_used_bytes)
            ADD("DCGM_FI_DEV_FB_FREE", MB_PROM_GAUGE, "Framebuffer memory free (in MiB).", &r,
                MIB_F(g->info.mem_total_bytes - g->tel.mem_used_bytes));
    }
    return MB_OK;
}

static int prom_mig(struct mb_prom *p, const struct mb_monitor_snapshot *s,
                    const struct mb_monitor_gpu *g, size_t idx, struct mb_error *err)
{
    /* MIG rows: memory, activity, processes -- never the whole GPU's power or energy. */
    for (size_t i = 0; i < g->n_inst; i++) {
        const struct mb_monitor_instance *in = &g->inst[i];
        struct row m;
        row_gpu(&m, s, g, idx);
        row_mig(&m, in);
        if (in->mig.mem_valid)
            ADD("DCGM_FI_DEV_FB_USED", MB_PROM_GAUGE, "Framebuffer memory used (in MiB).", &m,
                MIB_F(in->mig.mem_used_bytes));
        if (in->activity.valid & MB_ACT_SM_UTIL)
            ADD("DCGM_FI_PROF_SM_ACTIVE", MB_PROM_GAUGE,
                "The ratio of cycles an SM has at least 1 warp assigned (in %).", &m,
                in->activity.sm_util_pct / 100.0);
        if (in->activity.valid & MB_ACT_SM_OCCUPANCY)
            ADD("DCGM_FI_PROF_SM_OCCUPANCY", MB_PROM_GAUGE,
                "The ratio of number of warps resident on an SM (in %).", &m,
                in->activity.sm_occupancy_pct / 100.0);
        if (in->activity.valid & MB_ACT_TENSOR)
            ADD("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", MB_PROM_GAUGE,
                "Ratio of cycles the tensor (HMMA) pipe is active (in %).", &m,
                in->activity.tensor_util_pct / 100.0);
        if (in->activity.valid & MB_ACT_DRAM_BW)
            ADD("DCGM_FI_PROF_DRAM_ACTIVE", MB_PROM_GAUGE,
                "Ratio of cycles the device memory interface is active (in %).", &m,
                in->activity.dram_bw_util_pct / 100.0);
        ADD("migbench_mig_instance_processes", MB_PROM_GAUGE,
            "Compute processes on the MIG GPU instance.", &m, (double)in->n_procs);
    }
    return MB_OK;
}

/* The migbench runs on the GPU: progress, window and each job's throughput. */
static int prom_cells(struct mb_prom *p, const struct mb_monitor_snapshot *s,
                      const struct mb_monitor_gpu *g, size_t idx, struct mb_error *err)
{
    for (size_t c = 0; c < g->n_cells; c++) {
        const struct mb_live_cell *lc = &g->cells[c];
        char rep[16];
        snprintf(rep, sizeof(rep), "%u", lc->rep);
        struct row cr;
        row_gpu(&cr, s, g, idx);
        cr.l[cr.n++] = (struct mb_prom_label){"experiment", lc->experiment};
        cr.l[cr.n++] = (struct mb_prom_label){"run", lc->run};
        cr.l[cr.n++] = (struct mb_prom_label){"rep", rep};
        if (lc->n_cells)
            ADD("migbench_cell_progress_ratio", MB_PROM_GAUGE,
                "Cells of the experiment done before this one, as a ratio of all its cells.", &cr,
                (double)lc->cell_index / (double)lc->n_cells);
        ADD("migbench_cell_window_seconds", MB_PROM_GAUGE,
            "Time in the current cell's measurement window in s.", &cr, lc->window_s);
        if (lc->window_target_s > 0)
            ADD("migbench_cell_window_target_seconds", MB_PROM_GAUGE,
                "Planned length of the current cell's measurement window in s.", &cr,
                lc->window_target_s);
        for (size_t j = 0; j < lc->n_jobs; j++) {
            if (!lc->jobs[j].rate_valid)
                continue;
            struct row jr = cr;
            for (size_t k = 0; k < jr.n; k++) /* the copy's pointers must name its own buffers */
                if (cr.l[k].value == cr.gpu)
                    jr.l[k].value = jr.gpu;
                else if (cr.l[k].value == cr.device)
                    jr.l[k].value = jr.device;
            jr.l[jr.n++] = (struct mb_prom_label){"job", lc->jobs[j].name};
            jr.l[jr.n++] = (struct mb_prom_label){"unit", lc->jobs[j].unit};
            ADD("migbench_job_throughput", MB_PROM_GAUGE,
                "A job's current throughput in its units per second.", &jr, lc->jobs[j].rate);
        }
    }
    return MB_OK;
}

static int prom_gpu(struct mb_prom *p, const struct mb_monitor_snapshot *s,
                    const struct mb_monitor_gpu *g, size_t idx, struct mb_error *err)
{
    struct row r;
    row_gpu(&r, s, g, idx);
    bool gpu = g->caps & MB_CAP_GPU;
    ADD("migbench_device_up", MB_PROM_GAUGE,
        "1 when the device answered the last telemetry read, else 0.", &r, g->tel_ok ? 1 : 0);
    if (!gpu) {
        /* The host's CPU package is no GPU: no DCGM names for it. */
        if (has(g, MB_TEL_POWER))
            ADD("migbench_host_power_watts", MB_PROM_GAUGE, "Host CPU package power in W.", &r,
                g->tel.power_mw / 1000.0);
        if (has(g, MB_TEL_ENERGY))
            ADD("migbench_host_energy_joules_total", MB_PROM_COUNTER,
                "Host CPU package energy counter (RAPL) in J.", &r,
                (double)g->tel.energy_mj / 1000.0);
    } else {
        int rc = prom_dcgm(p, g, &r, err);
        if (rc)
            return rc;
    }
    if (has(g, MB_TEL_POWER_INSTANT))
        ADD("migbench_power_instant_watts", MB_PROM_GAUGE,
            "The device's instant power reading in W.", &r, g->tel.power_instant_mw / 1000.0);
    if (has(g, MB_TEL_POWER_AVG))
        ADD("migbench_power_average_watts", MB_PROM_GAUGE,
            "The device's averaged power reading in W.", &r, g->tel.power_avg_mw / 1000.0);
    if (g->sensor.power_avg_window_ms)
        ADD("migbench_power_average_window_seconds", MB_PROM_GAUGE,
            "Averaging window of the default power reading in s.", &r,
            g->sensor.power_avg_window_ms / 1000.0);
    if (g->energy_ok)
        ADD("migbench_monitor_energy_joules_total", MB_PROM_COUNTER,
            "Energy used by the whole device since this exporter started, in J.", &r, g->energy_j);
    if (g->mig_ok)
        ADD("migbench_mig_mode", MB_PROM_GAUGE, "1 when MIG mode is enabled, else 0.", &r,
            g->mig.current ? 1 : 0);
    if (g->procs_ok)
        ADD("migbench_processes", MB_PROM_GAUGE, "Compute processes on the device.", &r,
            (double)g->n_procs);
    int rc = prom_mig(p, s, g, idx, err);
    if (rc == MB_OK)
        rc = prom_cells(p, s, g, idx, err);
    return rc;
}

int mb_monitor_prom(const struct mb_monitor_snapshot *s, struct mb_prom *p, struct mb_error *err)
{
    for (size_t i = 0; i < s->n_gpus; i++) {
        int rc = prom_gpu(p, s, &s->gpus[i], i, err);
        if (rc)
            return rc;
    }
    return MB_OK;
}
