/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The host backend: the CPU as a device. Package and DRAM energy come from the RAPL powercap
 * tree where it is readable; the counters wrap at max_energy_range_uj and are unwrapped here into
 * monotonic counters. Power is the energy delta between two readings, so it is an average over
 * the interval since the previous call. Utilisation comes from /proc/stat deltas.
 */
#define _GNU_SOURCE /* sched_getaffinity, CPU_ISSET */
#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "device/backends.h"
#include "migbench/clock.h"

#define HOST_PATH_MAX 512
#define HOST_MAX_DOMAINS 16
#define HOST_LINE_MAX 1024
/* Below this interval a new power figure would be noise; the previous one is kept. */
#define HOST_MIN_POWER_INTERVAL_NS 10000000LL

struct rapl_domain {
    char path[HOST_PATH_MAX]; /* .../energy_uj */
    bool dram;
    unsigned long long max_range_uj;
    unsigned long long last_raw_uj;
    unsigned long long total_uj; /* unwrapped: first raw value plus every delta since */
};

struct host {
    struct mb_device base;
    char powercap[HOST_PATH_MAX];
    char proc[HOST_PATH_MAX];
    size_t n_domains;
    struct rapl_domain domains[HOST_MAX_DOMAINS];
    bool rapl_ok;
    bool has_dram;
    char rapl_why[HOST_PATH_MAX + 128];
    /* Power: energy and time of the previous reading. */
    bool have_prev;
    long long prev_t_ns;
    unsigned long long prev_pkg_uj;
    bool have_power;
    uint32_t power_mw;
    /* Utilisation: /proc/stat totals of the previous reading. */
    bool have_stat;
    unsigned long long stat_total, stat_idle;
    bool have_util;
    uint32_t util_pct;
};

static struct host *as_host(struct mb_device *dev)
{
    return (struct host *)dev;
}

/* snprintf that reports truncation instead of warning about it. */
static bool fmt(char *buf, size_t cap, const char *f, ...) __attribute__((format(printf, 3, 4)));
static bool fmt(char *buf, size_t cap, const char *f, ...)
{
    va_list ap;
    va_start(ap, f);
    int n = vsnprintf(buf, cap, f, ap);
    va_end(ap);
    return n >= 0 && (size_t)n < cap;
}

static int read_u64_file(const char *path, unsigned long long *out)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return errno ? errno : EIO;
    unsigned long long v = 0;
    int ok = fscanf(f, "%llu", &v);
    fclose(f);
    if (ok != 1)
        return EIO;
    *out = v;
    return 0;
}

static void read_line_file(const char *path, char *buf, size_t cap)
{
    buf[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    if (fgets(buf, (int)cap, f))
        buf[strcspn(buf, "\r\n")] = '\0';
    fclose(f);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp((const char *)a, (const char *)b);
}

/* Finds the RAPL domains: intel-rapl:N (package) and intel-rapl:N:M named "dram". */
static void rapl_discover(struct host *h)
{
    DIR *d = opendir(h->powercap);
    if (!d) {
        fmt(h->rapl_why, sizeof(h->rapl_why), "no powercap (%s: %s)", h->powercap, strerror(errno));
        return;
    }
    char names[HOST_MAX_DOMAINS][64];
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && n < HOST_MAX_DOMAINS) {
        if (strncmp(e->d_name, "intel-rapl:", 11) != 0 || strlen(e->d_name) >= sizeof(names[0]))
            continue;
        memcpy(names[n++], e->d_name, strlen(e->d_name) + 1);
    }
    closedir(d);
    qsort(names, n, sizeof(names[0]), cmp_str);
    if (n == 0) {
        fmt(h->rapl_why, sizeof(h->rapl_why), "no powercap RAPL domains under %s", h->powercap);
        return;
    }
    int first_errno = 0;
    for (size_t i = 0; i < n; i++) {
        char p[HOST_PATH_MAX + 80], name[64];
        fmt(p, sizeof(p), "%s/%s/name", h->powercap, names[i]);
        read_line_file(p, name, sizeof(name));
        bool top = strchr(names[i] + 11, ':') == NULL;
        bool dram = strcmp(name, "dram") == 0;
        /* Package energy is the top-level domains; subdomains other than DRAM are inside it. */
        if (!(top && strncmp(name, "package", 7) == 0) && !dram)
            continue;
        struct rapl_domain *dom = &h->domains[h->n_domains];
        int w = snprintf(dom->path, sizeof(dom->path), "%s/%s/energy_uj", h->powercap, names[i]);
        if (w < 0 || (size_t)w >= sizeof(dom->path))
            continue;
        fmt(p, sizeof(p), "%s/%s/max_energy_range_uj", h->powercap, names[i]);
        unsigned long long range = 0, raw = 0;
        int rc = read_u64_file(p, &range);
        if (rc == 0)
            rc = read_u64_file(dom->path, &raw);
        if (rc != 0 || range == 0) {
            if (!first_errno)
                first_errno = rc ? rc : EIO;
            continue;
        }
        dom->dram = dram;
        dom->max_range_uj = range;
        dom->last_raw_uj = raw;
        dom->total_uj = raw;
        h->n_domains++;
    }
    bool have_pkg = false;
    for (size_t i = 0; i < h->n_domains; i++) {
        if (h->domains[i].dram)
            h->has_dram = true;
        else
            have_pkg = true;
    }
    if (have_pkg) {
        h->rapl_ok = true;
        return;
    }
    h->has_dram = false;
    h->n_domains = 0;
    if (first_errno == EACCES || first_errno == EPERM)
        fmt(h->rapl_why, sizeof(h->rapl_why),
            "RAPL not readable: permission denied (energy_uj is root-only)");
    else if (first_errno)
        fmt(h->rapl_why, sizeof(h->rapl_why), "RAPL not readable: %s", strerror(first_errno));
    else
        fmt(h->rapl_why, sizeof(h->rapl_why), "no RAPL package domain under %s", h->powercap);
}

/* Reads every domain and unwraps it. Returns 0 or an errno value. */
static int rapl_update(struct host *h, unsigned long long *pkg_uj, unsigned long long *dram_uj)
{
    unsigned long long pkg = 0, dram = 0;
    for (size_t i = 0; i < h->n_domains; i++) {
        struct rapl_domain *dom = &h->domains[i];
        unsigned long long raw = 0;
        int rc = read_u64_file(dom->path, &raw);
        if (rc)
            return rc;
        unsigned long long delta = raw >= dom->last_raw_uj
                                       ? raw - dom->last_raw_uj
                                       : dom->max_range_uj - dom->last_raw_uj + raw;
        dom->total_uj += delta;
        dom->last_raw_uj = raw;
        if (dom->dram)
            dram += dom->total_uj;
        else
            pkg += dom->total_uj;
    }
    *pkg_uj = pkg;
    *dram_uj = dram;
    return 0;
}

/* Opens <proc root>/name for reading; NULL when it cannot. */
static FILE *open_proc(const struct host *h, const char *name)
{
    char p[HOST_PATH_MAX + 16];
    snprintf(p, sizeof(p), "%s/%s", h->proc, name);
    return fopen(p, "r");
}

static int read_stat(const struct host *h, unsigned long long *total, unsigned long long *idle)
{
    FILE *f = open_proc(h, "stat");
    if (!f)
        return -1;
    char line[HOST_LINE_MAX];
    int rc = -1;
    if (fgets(line, sizeof(line), f) && strncmp(line, "cpu ", 4) == 0) {
        unsigned long long v[10] = {0};
        int n = sscanf(line + 4, "%llu %llu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1],
                       &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9]);
        if (n >= 4) {
            /* guest and guest_nice (8, 9) are already counted in user and nice. */
            unsigned long long t = 0;
            for (int i = 0; i < n && i < 8; i++)
                t += v[i];
            *total = t;
            *idle = v[3] + (n > 4 ? v[4] : 0);
            rc = 0;
        }
    }
    fclose(f);
    return rc;
}

static int read_meminfo(const struct host *h, unsigned long long *total_kb,
                        unsigned long long *avail_kb)
{
    FILE *f = open_proc(h, "meminfo");
    if (!f)
        return -1;
    char line[HOST_LINE_MAX];
    bool t = false, a = false;
    while (fgets(line, sizeof(line), f)) {
        if (sscanf(line, "MemTotal: %llu kB", total_kb) == 1)
            t = true;
        else if (sscanf(line, "MemAvailable: %llu kB", avail_kb) == 1)
            a = true;
    }
    fclose(f);
    return t && a ? 0 : (t ? 1 : -1);
}

static void cpu_model(const struct host *h, char *out, size_t cap)
{
    snprintf(out, cap, "unknown CPU");
    FILE *f = open_proc(h, "cpuinfo");
    if (!f)
        return;
    char line[HOST_LINE_MAX];
    while (fgets(line, sizeof(line), f)) {
        /* x86 says "model name"; some Arm kernels only say "Hardware" or "CPU part". */
        if (strncmp(line, "model name", 10) == 0 || strncmp(line, "Hardware", 8) == 0) {
            const char *colon = strchr(line, ':');
            if (!colon)
                continue;
            colon++;
            while (*colon == ' ' || *colon == '\t')
                colon++;
            size_t n = strcspn(colon, "\r\n");
            if (n >= cap)
                n = cap - 1;
            memcpy(out, colon, n);
            out[n] = '\0';
            break;
        }
    }
    fclose(f);
}

static int host_open(const char *args, struct mb_device **out, struct mb_error *err)
{
    struct host *h = calloc(1, sizeof(*h));
    if (!h)
        return mb_error_set(err, MB_ENOMEM, "host: out of memory");
    snprintf(h->powercap, sizeof(h->powercap), "/sys/class/powercap");
    snprintf(h->proc, sizeof(h->proc), "/proc");
    const char *p = args ? args : "";
    char key[MB__SPEC_KEY_MAX], val[MB__SPEC_VAL_MAX];
    int rc;
    while ((rc = mb__spec_next(&p, "host", key, val, err)) == MB_OK) {
        char *dst = NULL;
        if (strcmp(key, "powercap") == 0)
            dst = h->powercap;
        else if (strcmp(key, "proc") == 0)
            dst = h->proc;
        if (!dst) {
            rc = mb_error_set(err, MB_EINVAL,
                              "device spec 'host': unknown option '%s' (known: powercap, proc)",
                              key);
            goto fail;
        }
        if (strlen(val) >= HOST_PATH_MAX || !val[0]) {
            rc = mb_error_set(err, MB_EINVAL, "device spec 'host': bad path for %s", key);
            goto fail;
        }
        memcpy(dst, val, strlen(val) + 1);
    }
    if (rc != MB_ENOTFOUND)
        goto fail;
    rapl_discover(h);
    /* Baselines, so that the first telemetry call already has a power and utilisation figure. */
    unsigned long long pkg, dram;
    if (h->rapl_ok && rapl_update(h, &pkg, &dram) == 0) {
        h->have_prev = true;
        h->prev_t_ns = mb_clock_monotonic_ns();
        h->prev_pkg_uj = pkg;
    }
    if (read_stat(h, &h->stat_total, &h->stat_idle) == 0)
        h->have_stat = true;
    *out = &h->base;
    return MB_OK;
fail:
    free(h);
    return rc;
}

static void host_close(struct mb_device *dev)
{
    free(as_host(dev));
}

static unsigned online_cpus(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (unsigned)n : 0;
}

static int host_info(struct mb_device *dev, struct mb_device_info *out, struct mb_error *err)
{
    (void)err;
    struct host *h = as_host(dev);
    memset(out, 0, sizeof(*out));
    snprintf(out->backend, sizeof(out->backend), "host");
    cpu_model(h, out->name, sizeof(out->name));
    out->cpu_count = online_cpus();
    unsigned long long total_kb = 0, avail_kb = 0;
    if (read_meminfo(h, &total_kb, &avail_kb) >= 0) {
        out->mem_total_bytes = (uint64_t)total_kb * 1024u;
        out->mem_total_valid = true;
    }
    return MB_OK;
}

static int host_telemetry(struct mb_device *dev, struct mb_telemetry *out, struct mb_error *err)
{
    struct host *h = as_host(dev);
    memset(out, 0, sizeof(*out));
    out->t_ns = mb_clock_monotonic_ns();
    if (h->rapl_ok) {
        unsigned long long pkg = 0, dram = 0;
        int rc = rapl_update(h, &pkg, &dram);
        if (rc)
            return mb_error_set(err, MB_EIO, "host: reading RAPL energy: %s", strerror(rc));
        out->energy_mj = pkg / 1000u;
        out->valid |= MB_TEL_ENERGY;
        if (h->has_dram) {
            out->energy_dram_mj = dram / 1000u;
            out->valid |= MB_TEL_ENERGY_DRAM;
        }
        if (h->have_prev && out->t_ns - h->prev_t_ns >= HOST_MIN_POWER_INTERVAL_NS) {
            double w = (double)(pkg - h->prev_pkg_uj) * 1e3 / (double)(out->t_ns - h->prev_t_ns);
            h->power_mw = (uint32_t)(w * 1e3 + 0.5);
            h->have_power = true;
            h->prev_t_ns = out->t_ns;
            h->prev_pkg_uj = pkg;
        } else if (!h->have_prev) {
            h->have_prev = true;
            h->prev_t_ns = out->t_ns;
            h->prev_pkg_uj = pkg;
        }
        if (h->have_power) {
            out->power_mw = h->power_mw;
            out->power_avg_mw = h->power_mw;
            out->valid |= MB_TEL_POWER | MB_TEL_POWER_AVG;
        }
    }
    unsigned long long total, idle;
    if (read_stat(h, &total, &idle) == 0) {
        if (h->have_stat && total > h->stat_total) {
            unsigned long long dt = total - h->stat_total;
            unsigned long long di = idle >= h->stat_idle ? idle - h->stat_idle : 0;
            if (di > dt)
                di = dt;
            h->util_pct = (uint32_t)((100u * (dt - di) + dt / 2) / dt);
            h->have_util = true;
            h->stat_total = total;
            h->stat_idle = idle;
        } else if (!h->have_stat) {
            h->have_stat = true;
            h->stat_total = total;
            h->stat_idle = idle;
        }
        if (h->have_util) {
            out->util_gpu_pct = h->util_pct;
            out->valid |= MB_TEL_UTIL_GPU;
        }
    }
    unsigned long long total_kb = 0, avail_kb = 0;
    if (read_meminfo(h, &total_kb, &avail_kb) == 0 && avail_kb <= total_kb) {
        out->mem_used_bytes = (uint64_t)(total_kb - avail_kb) * 1024u;
        out->valid |= MB_TEL_MEM_USED;
    }
    return MB_OK;
}

static uint32_t host_caps(struct mb_device *dev)
{
    const struct host *h = (const struct host *)dev;
    uint32_t caps = MB_CAP_CPU_PARTITIONS | MB_CAP_DELTA_TELEMETRY;
    if (h->rapl_ok)
        caps |= MB_CAP_POWER | MB_CAP_ENERGY_COUNTER;
    return caps;
}

static int host_sensor(struct mb_device *dev, struct mb_sensor_info *out, struct mb_error *err)
{
    (void)err;
    struct host *h = as_host(dev);
    memset(out, 0, sizeof(*out));
    if (!h->rapl_ok) {
        out->power_kind = MB_POWER_NONE;
        snprintf(out->scope, sizeof(out->scope), "none");
        fmt(out->source, sizeof(out->source), "%s", h->rapl_why);
        return MB_OK;
    }
    /* Power is the mean over the interval between two telemetry calls: averaged, variable. */
    out->power_kind = MB_POWER_AVERAGED;
    out->has_average = true;
    out->has_energy_counter = true;
    out->energy_resolution_mj = 1;
    out->energy_wrap_mj = 0; /* unwrapped here */
    snprintf(out->scope, sizeof(out->scope), h->has_dram ? "package+dram" : "package");
    snprintf(out->source, sizeof(out->source),
             "RAPL powercap (measured); power = energy delta since the previous reading");
    return MB_OK;
}

static int host_cpu_partitions(struct mb_device *dev, unsigned n, struct mb_cpuset *out,
                               struct mb_error *err)
{
    (void)dev;
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) != 0)
        return mb_error_set(err, MB_EIO, "host: sched_getaffinity: %s", strerror(errno));
    unsigned cpus[CPU_SETSIZE];
    unsigned count = 0;
    for (unsigned c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &set))
            cpus[count++] = c;
    if (n == 0)
        return mb_error_set(err, MB_EINVAL, "host: cannot split the CPUs into 0 partitions");
    if (n > count)
        return mb_error_set(err, MB_ENORESOURCES,
                            "host: %u partitions requested but this process may run on only %u "
                            "CPU%s",
                            n, count, count == 1 ? "" : "s");
    unsigned base = count / n, extra = count % n, next = 0;
    const unsigned set_cap = (unsigned)(sizeof(out[0].cpus) / sizeof(out[0].cpus[0]));
    for (unsigned i = 0; i < n; i++) {
        unsigned size = base + (i < extra ? 1u : 0u);
        if (size > set_cap)
            return mb_error_set(err, MB_ERANGE, "host: a partition of %u CPUs exceeds %u", size,
                                set_cap);
        out[i].n = size;
        for (unsigned k = 0; k < size; k++)
            out[i].cpus[k] = cpus[next++];
    }
    return MB_OK;
}

const struct mb_device_ops mb__host_ops = {
    .version = MB_DEVICE_OPS_VERSION,
    .name = "host",
    .open = host_open,
    .close = host_close,
    .info = host_info,
    .telemetry = host_telemetry,
    .sensor = host_sensor,
    .caps = host_caps,
    .cpu_partitions = host_cpu_partitions,
};
