/*
 * Planner profiles from `migbench run` results directories: a small cell.json reader (schema 1,
 * docs/results.md) that keeps only the cells whose whole-GPU power belongs to one job.
 */
#include "migbench/plan.h"
#include "plan_internal.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CELL_MAX_BYTES (64u << 20)
#define PATH_LEN 4096

struct sample {
    char workload[MB_PLAN_NAME_MAX];
    char gpu[MB_MODEL_NAME_MAX];
    char partition[MB_PROFILE_NAME_MAX];
    char unit[MB_PLAN_UNIT_MAX];
    char run[MB_PLAN_NAME_MAX];
    bool proxy, emulated;
    double thr, power, idle;
    size_t n, n_idle;
};

struct acc {
    struct sample *v;
    size_t n, cap;
    size_t cells, used;
};

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 8192, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        if (n + 1 >= cap) {
            char *nb = cap < CELL_MAX_BYTES ? realloc(buf, cap * 2) : NULL;
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
        size_t got = fread(buf + n, 1, cap - 1 - n, f);
        n += got;
        if (got == 0) {
            buf[n] = '\0';
            break;
        }
    }
    fclose(f);
    return buf;
}

static const char *str(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static double num(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

static void copy(char *dst, size_t cap, const char *src)
{
    size_t n = strnlen(src, cap - 1);
    memcpy(dst, src, n);
    dst[n] = '\0';
}

/* The MIG profile whose compute share matches an MPS thread percentage (within 3 points). */
static const struct mb_gi_profile *proxy_profile(const struct mb_gpu_model *m, double pct)
{
    const struct mb_gi_profile *best = NULL;
    double bd = 3.0;
    for (size_t i = 0; i < m->n_profiles; i++) {
        const struct mb_gi_profile *p = &m->profiles[i];
        if (p->media_extension)
            continue;
        double share = 100.0 * p->compute_slices / m->compute_slices;
        double d = fabs(share - pct);
        /* Among equal shares, the profile with the most memory (the MPS job had it all). */
        if (d < bd || (best && d == bd && p->memory_mib > best->memory_mib)) {
            bd = d;
            best = p;
        }
    }
    return best;
}

static int take_cell(struct acc *a, const struct mb_catalog *cat, const char *run_name,
                     const cJSON *root)
{
    const cJSON *dev = cJSON_GetObjectItemCaseSensitive(root, "device");
    const cJSON *jobs = cJSON_GetObjectItemCaseSensitive(root, "jobs");
    const cJSON *energy = cJSON_GetObjectItemCaseSensitive(root, "energy");
    const char *status = str(root, "status"), *mode = str(root, "mode");
    if (!status || strcmp(status, "ok") != 0 || !mode || !cJSON_IsArray(jobs) ||
        cJSON_GetArraySize(jobs) != 1)
        return MB_OK;
    const struct mb_gpu_model *m = NULL;
    const char *names[] = {str(dev, "model"), str(dev, "name")};
    for (size_t i = 0; i < 2 && !m; i++)
        if (names[i] && names[i][0] && mb_catalog_find(cat, names[i], &m, NULL) != MB_OK)
            m = NULL;
    if (!m)
        return MB_OK; /* the host, or a GPU without MIG: nothing for the planner */
    const cJSON *job = cJSON_GetArrayItem(jobs, 0);
    const char *workload = str(job, "workload");
    double thr = num(cJSON_GetObjectItemCaseSensitive(job, "throughput"), "mean");
    double power = num(energy, "mean_power_w");
    if (!workload || !isfinite(thr) || thr <= 0 || !isfinite(power))
        return MB_OK;
    const char *part = NULL;
    bool proxy = false;
    if (strcmp(mode, "exclusive") == 0) {
        part = MB_PLAN_FULL;
    } else if (strcmp(mode, "mig") == 0) {
        part = str(cJSON_GetObjectItemCaseSensitive(job, "instance"), "profile");
    } else if (strcmp(mode, "mps") == 0) {
        const struct mb_gi_profile *p = proxy_profile(m, num(job, "thread_percentage"));
        part = p ? p->name : NULL;
        proxy = true;
    }
    if (!part || !mb_model_profile(m, part)) {
        if (!part || strcmp(part, MB_PLAN_FULL) != 0)
            return MB_OK;
    }
    a->used++;
    const char *unit = str(job, "unit");
    for (size_t i = 0; i < a->n; i++) {
        struct sample *s = &a->v[i];
        if (strcmp(s->workload, workload) == 0 && strcmp(s->gpu, m->name) == 0 &&
            strcmp(s->partition, part) == 0 && s->proxy == proxy) {
            s->emulated |= cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(dev, "emulated"));
            s->thr += thr;
            s->power += power;
            s->n++;
            double idle = num(energy, "idle_power_w");
            if (isfinite(idle)) {
                s->idle += idle;
                s->n_idle++;
            }
            return MB_OK;
        }
    }
    if (a->n == a->cap) {
        size_t nc = a->cap ? a->cap * 2 : 16;
        struct sample *v = realloc(a->v, nc * sizeof(*v));
        if (!v)
            return MB_ENOMEM;
        a->v = v;
        a->cap = nc;
    }
    struct sample *s = &a->v[a->n++];
    memset(s, 0, sizeof(*s));
    copy(s->workload, sizeof(s->workload), workload);
    copy(s->gpu, sizeof(s->gpu), m->name);
    copy(s->partition, sizeof(s->partition), part);
    copy(s->unit, sizeof(s->unit), unit ? unit : "units");
    copy(s->run, sizeof(s->run), run_name);
    s->proxy = proxy;
    s->emulated = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(dev, "emulated"));
    s->thr = thr;
    s->power = power;
    s->n = 1;
    double idle = num(energy, "idle_power_w");
    if (isfinite(idle)) {
        s->idle = idle;
        s->n_idle = 1;
    }
    return MB_OK;
}

int mb_plan_profiles_load_results(struct mb_plan_profiles *p, const struct mb_catalog *cat,
                                  const char *dir, struct mb_error *err)
{
    DIR *top = opendir(dir);
    if (!top)
        return mb_error_set(err, MB_EIO, "%s: cannot open results directory: %s", dir,
                            strerror(errno));
    struct acc a;
    memset(&a, 0, sizeof(a));
    int st = MB_OK;
    size_t n_before = mb_plan_profiles_count(p);
    struct dirent *run;
    while (st == MB_OK && (run = readdir(top))) {
        if (run->d_name[0] == '.')
            continue;
        char rpath[PATH_LEN];
        int w = snprintf(rpath, sizeof(rpath), "%s/%s", dir, run->d_name);
        if (w < 0 || (size_t)w >= sizeof(rpath))
            continue;
        DIR *rd = opendir(rpath);
        if (!rd)
            continue;
        struct dirent *rep;
        while (st == MB_OK && (rep = readdir(rd))) {
            if (rep->d_name[0] == '.')
                continue;
            char cpath[PATH_LEN];
            w = snprintf(cpath, sizeof(cpath), "%s/%s/cell.json", rpath, rep->d_name);
            if (w < 0 || (size_t)w >= sizeof(cpath))
                continue;
            char *text = slurp(cpath);
            if (!text)
                continue; /* no cell.json: an unfinished cell */
            cJSON *root = cJSON_Parse(text);
            free(text);
            if (!root) {
                st = mb_error_set(err, MB_EPARSE, "%s: not valid JSON", cpath);
                break;
            }
            double schema = num(root, "schema");
            if (schema != 1) {
                cJSON_Delete(root);
                st = mb_error_set(err, MB_EPARSE, "%s: field 'schema': expected 1", cpath);
                break;
            }
            a.cells++;
            st = take_cell(&a, cat, run->d_name, root);
            if (st == MB_ENOMEM)
                mb_error_set(err, st, "out of memory");
            cJSON_Delete(root);
        }
        closedir(rd);
    }
    closedir(top);
    if (st == MB_OK && a.n == 0)
        st = mb_error_set(err, MB_ENOTFOUND,
                          "%s: none of its %zu cells can profile a workload (the planner needs "
                          "successful cells on a MIG GPU in which one job ran: exclusive with one "
                          "job, mig with one instance, or mps with one job)",
                          dir, a.cells);
    for (size_t i = 0; st == MB_OK && i < a.n; i++) {
        const struct sample *s = &a.v[i];
        struct mb_plan_profile row;
        memset(&row, 0, sizeof(row));
        copy(row.workload, sizeof(row.workload), s->workload);
        copy(row.gpu, sizeof(row.gpu), s->gpu);
        copy(row.partition, sizeof(row.partition), s->partition);
        copy(row.unit, sizeof(row.unit), s->unit);
        row.throughput = s->thr / (double)s->n;
        row.power_w = s->power / (double)s->n;
        row.idle_power_w = s->n_idle ? s->idle / (double)s->n_idle : NAN;
        row.peak_mem_mib = NAN; /* cell.json records no per-job memory peak */
        row.proxy = s->proxy;
        row.emulated = s->emulated;
        snprintf(row.source, sizeof(row.source), "%s/%s (%zu cell%s%s%s)", dir, s->run, s->n,
                 s->n == 1 ? "" : "s", s->proxy ? ", MPS proxy" : "",
                 s->emulated ? ", EMULATED" : "");
        st = mb_plan_profiles_add(p, cat, &row, err);
        if (st != MB_OK)
            mb_error_prefix(err, "%s: ", dir);
    }
    if (st != MB_OK) {
        /* Leave the collection as it was. */
        while (mb_plan_profiles_count(p) > n_before)
            mb__plan_profiles_pop(p);
    }
    free(a.v);
    return st;
}
