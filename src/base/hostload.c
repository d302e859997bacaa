/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Outside load from /proc (hostload.h). Steal and busy time come from the "cpu" line of stat;
 * our own CPU time is that of migbench and its descendants (the jobs, their workers), from each
 * process's stat: utime, stime and the ticks of children it has waited for, so a worker that
 * exited inside the window still counts as ours. Busy time less ours is the other processes'.
 */
#define _GNU_SOURCE
#include "migbench/hostload.h"

#include <ctype.h>
#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HL_PATH_MAX 600
#define HL_LINE_MAX 2048
#define HL_PROCS_MAX 65536

struct hl_proc {
    int pid, ppid;
    unsigned long long ticks;
};

static void read_stat(const char *root, struct mb_hostload_snap *s)
{
    char p[HL_PATH_MAX];
    snprintf(p, sizeof(p), "%s/stat", root);
    FILE *f = fopen(p, "r");
    if (!f)
        return;
    char line[HL_LINE_MAX];
    while (fgets(line, sizeof(line), f)) {
        if (strncmp(line, "cpu ", 4) == 0) {
            unsigned long long v[8] = {0};
            int n = sscanf(line + 4, "%llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
                           &v[3], &v[4], &v[5], &v[6], &v[7]);
            if (n >= 4) {
                s->total = 0;
                for (int i = 0; i < n; i++)
                    s->total += v[i];
                s->idle = v[3] + v[4]; /* idle and iowait */
                s->steal = v[7];       /* 0 where the kernel does not report it */
                s->stat_ok = true;
            }
        } else if (strncmp(line, "cpu", 3) == 0 && isdigit((unsigned char)line[3])) {
            s->cpus++;
        }
    }
    fclose(f);
}

static void read_loadavg(const char *root, struct mb_hostload_snap *s)
{
    char p[HL_PATH_MAX];
    snprintf(p, sizeof(p), "%s/loadavg", root);
    FILE *f = fopen(p, "r");
    if (!f)
        return;
    s->load_ok = fscanf(f, "%lf", &s->load1) == 1 && s->load1 >= 0;
    fclose(f);
}

/* One process's stat: pid, ppid and its ticks (fields 14-17); false when unreadable. */
static bool read_proc(const char *root, const char *name, struct hl_proc *out)
{
    char p[HL_PATH_MAX], line[HL_LINE_MAX];
    snprintf(p, sizeof(p), "%s/%s/stat", root, name);
    FILE *f = fopen(p, "r");
    if (!f)
        return false;
    bool ok = fgets(line, sizeof(line), f) != NULL;
    fclose(f);
    /* The command name is in parentheses and may hold spaces or ')': fields follow the last. */
    const char *rp = ok ? strrchr(line, ')') : NULL;
    if (!rp)
        return false;
    char state;
    unsigned long long u, st, cu, cs;
    int ppid;
    if (sscanf(rp + 1, " %c %d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %llu %llu", &state,
               &ppid, &u, &st, &cu, &cs) != 6)
        return false;
    out->pid = atoi(name);
    out->ppid = ppid;
    out->ticks = u + st + cu + cs;
    return true;
}

static int cmp_pid(const void *a, const void *b)
{
    int x = ((const struct hl_proc *)a)->pid, y = ((const struct hl_proc *)b)->pid;
    return (x > y) - (x < y);
}

static struct hl_proc *find(struct hl_proc *ps, size_t n, int pid)
{
    struct hl_proc key = {.pid = pid};
    return bsearch(&key, ps, n, sizeof(*ps), cmp_pid);
}

/* Whether p is self_pid or descends from it: up the ppid chain (at most 256 steps, so a cycle in
 * a damaged tree ends), each step a binary search over ps sorted by pid. */
static bool descends(struct hl_proc *ps, size_t n, const struct hl_proc *p, int self_pid)
{
    for (int depth = 0; p && depth < 256; depth++) {
        if (p->pid == self_pid)
            return true;
        if (p->ppid <= 0 || p->ppid == p->pid)
            return false;
        p = find(ps, n, p->ppid);
    }
    return false;
}

/* The ticks of self_pid and its descendants; *found: self_pid is in ps. */
static unsigned long long sum_ours(struct hl_proc *ps, size_t n, int self_pid, bool *found)
{
    qsort(ps, n, sizeof(*ps), cmp_pid);
    *found = find(ps, n, self_pid) != NULL;
    unsigned long long t = 0;
    for (size_t i = 0; *found && i < n; i++)
        if (descends(ps, n, &ps[i], self_pid))
            t += ps[i].ticks;
    return t;
}

static void read_ours(const char *root, int self_pid, struct mb_hostload_snap *s)
{
    DIR *d = opendir(root);
    if (!d)
        return;
    size_t n = 0, cap = 256;
    struct hl_proc *ps = malloc(cap * sizeof(*ps));
    struct dirent *e;
    while (ps && (e = readdir(d)) != NULL && n < HL_PROCS_MAX) {
        if (!isdigit((unsigned char)e->d_name[0]))
            continue;
        if (n == cap) {
            struct hl_proc *grown = realloc(ps, 2 * cap * sizeof(*ps));
            if (!grown)
                break;
            ps = grown;
            cap *= 2;
        }
        if (read_proc(root, e->d_name, &ps[n]))
            n++;
    }
    closedir(d);
    if (ps) {
        bool found;
        s->ours = sum_ours(ps, n, self_pid, &found);
        s->ours_ok = found;
    }
    free(ps);
}

void mb_hostload_snap(const char *root, int self_pid, struct mb_hostload_snap *out)
{
    memset(out, 0, sizeof(*out));
    if (!root || !root[0])
        root = "/proc";
    read_stat(root, out);
    read_loadavg(root, out);
    read_ours(root, self_pid, out);
}

const char *mb_hostload_root(void)
{
    const char *r = getenv("MIGBENCH_PROC_ROOT");
    return r && r[0] ? r : "/proc";
}

/* Appends one reason to w->why, comma-separated. */
static void add_why(struct mb_hostload *w, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void add_why(struct mb_hostload *w, const char *fmt, ...)
{
    size_t len = strlen(w->why);
    if (len && len + 2 < sizeof(w->why)) {
        memcpy(w->why + len, ", ", 3);
        len += 2;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->why + len, sizeof(w->why) - len, fmt, ap);
    va_end(ap);
}

void mb_hostload_window(const struct mb_hostload_snap *a, const struct mb_hostload_snap *b,
                        double job_cores, struct mb_hostload *out)
{
    memset(out, 0, sizeof(*out));
    out->job_cores = job_cores > 0 ? job_cores : 0;
    out->cpus = b->cpus ? b->cpus : a->cpus;
    bool stat = a->stat_ok && b->stat_ok && b->total > a->total && b->steal >= a->steal &&
                b->idle >= a->idle;
    if (stat) {
        double dt = (double)(b->total - a->total);
        out->steal_ok = true;
        out->steal_pct = 100.0 * (double)(b->steal - a->steal) / dt;
        if (a->ours_ok && b->ours_ok) {
            double busy = dt - (double)(b->idle - a->idle) - (double)(b->steal - a->steal);
            double ours = b->ours >= a->ours ? (double)(b->ours - a->ours) : 0;
            double other = busy > ours ? busy - ours : 0;
            out->other_ok = true;
            out->other_pct = 100.0 * other / dt;
        }
    }
    if (a->load_ok || b->load_ok) {
        out->load_ok = true;
        out->load1 = a->load_ok && (!b->load_ok || a->load1 > b->load1) ? a->load1 : b->load1;
    }
    out->verdict_ok =
        out->steal_ok || out->other_ok || (out->load_ok && out->job_cores > 0 && out->cpus > 0);
    if (out->steal_ok && out->steal_pct >= MB_HOSTLOAD_STEAL_PCT)
        add_why(out, "CPU steal %.1f %% (threshold %.0f %%)", out->steal_pct,
                MB_HOSTLOAD_STEAL_PCT);
    if (out->other_ok && out->other_pct >= MB_HOSTLOAD_OTHER_PCT)
        add_why(out, "other processes used %.1f %% of the CPU time (threshold %.0f %%)",
                out->other_pct, MB_HOSTLOAD_OTHER_PCT);
    if (out->load_ok && out->job_cores > 0 && out->cpus > 0 &&
        out->load1 - out->job_cores >= (double)out->cpus)
        add_why(out, "load average %.2f with the jobs given %.0f core(s) of %u", out->load1,
                out->job_cores, out->cpus);
    out->loaded = out->why[0] != '\0';
}
