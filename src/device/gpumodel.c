/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The model of a GPU running training jobs (gpumodel.h, docs/devices.md "The GPU model"): the
 * compiled-in data/gpumodel.json, read once, and the equations.
 */
#include "device/gpumodel.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

extern const char mb__gpumodel_json[];
extern const size_t mb__gpumodel_json_len;

#define GM_MAX_WORKLOADS 32
#define GM_MAX_GPUS 32
#define GM_MAX_MEASUREMENTS 96

struct gm_gpu_row {
    char name[MB_GM_NAME_MAX];
    double sm_full, sm_rate, bw_gbs, tdp_w;
    bool calibration;
    double static_w, knee, kappa; /* fitted, calibration GPUs */
};

static struct {
    int rc;
    char msg[256];
    double p, q, gamma, ts_loss, mps_interf, ref_bw, knee;
    size_t n_w, n_g, n_m;
    struct mb_gm_workload w[GM_MAX_WORKLOADS];
    struct gm_gpu_row g[GM_MAX_GPUS];
    struct mb_gm_measurement m[GM_MAX_MEASUREMENTS];
} gm;

static pthread_once_t gm_once = PTHREAD_ONCE_INIT;

/* ---- reading the data -------------------------------------------------------------------- */

static int bad(const char *what)
{
    snprintf(gm.msg, sizeof(gm.msg), "data/gpumodel.json (compiled in): %s", what);
    return MB_EPARSE;
}

static int num(const cJSON *o, const char *field, double *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, field);
    if (!cJSON_IsNumber(v))
        return -1;
    *out = v->valuedouble;
    return 0;
}

static void str(const cJSON *o, const char *field, char *out, size_t cap)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, field);
    if (cJSON_IsString(v))
        snprintf(out, cap, "%s", v->valuestring);
}

static int read_constants(const cJSON *root)
{
    const cJSON *k = cJSON_GetObjectItemCaseSensitive(root, "constants");
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(root, "fitted");
    if (num(k, "p_demand", &gm.p) || num(k, "q_bandwidth", &gm.q) ||
        num(k, "gamma_activity", &gm.gamma) || num(k, "timeslice_loss", &gm.ts_loss) ||
        num(k, "mps_interference", &gm.mps_interf) || num(k, "reference_bw_gbs", &gm.ref_bw))
        return bad("a field of 'constants' is missing");
    if (num(f, "knee", &gm.knee) || gm.knee <= 0 || gm.knee >= 1)
        return bad("'fitted.knee' is missing (run scripts/gpumodel-fit.py)");
    return MB_OK;
}

static int read_workload(const cJSON *it)
{
    if (gm.n_w == GM_MAX_WORKLOADS)
        return bad("too many workloads");
    struct mb_gm_workload *w = &gm.w[gm.n_w];
    memset(w, 0, sizeof(*w));
    snprintf(w->name, sizeof(w->name), "%s", it->string);
    str(it, "unit", w->unit, sizeof(w->unit));
    double batch;
    if (num(it, "batch", &batch) || num(it, "c", &w->c) || num(it, "m", &w->m) ||
        num(it, "w0_units", &w->w0) || num(it, "t_launch_s", &w->t_launch_s) ||
        num(it, "demand_sm_per_unit", &w->demand) || num(it, "kappa", &w->kappa) ||
        num(it, "mem_base_mib", &w->mem_base_mib) ||
        num(it, "mem_per_unit_mib", &w->mem_per_unit_mib) || batch < 1 || w->c <= 0 || w->m <= 0 ||
        w->demand <= 0)
        return bad("a workload lacks a fitted or stated parameter (run scripts/gpumodel-fit.py)");
    w->batch = (unsigned)batch;
    const cJSON *cal = cJSON_GetObjectItemCaseSensitive(it, "calibrated");
    const cJSON *der = cJSON_GetObjectItemCaseSensitive(it, "derived");
    const cJSON *from = cJSON_GetObjectItemCaseSensitive(der, "from");
    if (cJSON_IsString(cal))
        snprintf(w->basis, sizeof(w->basis), "calibrated: %.100s", cal->valuestring);
    else if (cJSON_IsString(from))
        snprintf(w->basis, sizeof(w->basis), "derived from %.60s", from->valuestring);
    gm.n_w++;
    return MB_OK;
}

static int read_gpus(const cJSON *root)
{
    const cJSON *gpus = cJSON_GetObjectItemCaseSensitive(root, "gpus");
    const cJSON *power =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, "fitted"), "power");
    const cJSON *it;
    cJSON_ArrayForEach(it, gpus)
    {
        if (gm.n_g == GM_MAX_GPUS)
            return bad("too many GPUs");
        struct gm_gpu_row *g = &gm.g[gm.n_g];
        memset(g, 0, sizeof(*g));
        snprintf(g->name, sizeof(g->name), "%s", it->string);
        if (num(it, "sm_rate", &g->sm_rate) || num(it, "bw_gbs", &g->bw_gbs))
            return bad("a GPU lacks sm_rate or bw_gbs");
        g->calibration = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(it, "calibration_only"));
        if (g->calibration) {
            const cJSON *fp = cJSON_GetObjectItemCaseSensitive(power, it->string);
            if (num(it, "sm_full", &g->sm_full) || num(it, "tdp_w", &g->tdp_w) ||
                num(fp, "static_w", &g->static_w) || num(fp, "knee", &g->knee) ||
                num(fp, "kappa_resnet50", &g->kappa))
                return bad("a calibration GPU lacks sm_full, tdp_w or fitted power");
        }
        gm.n_g++;
    }
    return MB_OK;
}

static int add_measurement(const char *source, const char *gpu, const char *workload,
                           unsigned batch, const cJSON *r)
{
    if (gm.n_m == GM_MAX_MEASUREMENTS)
        return bad("too many measurements");
    struct mb_gm_measurement *m = &gm.m[gm.n_m];
    memset(m, 0, sizeof(*m));
    snprintf(m->source, sizeof(m->source), "%s", source);
    snprintf(m->gpu, sizeof(m->gpu), "%s", gpu);
    snprintf(m->workload, sizeof(m->workload), "%s", workload);
    str(r, "gpu", m->gpu, sizeof(m->gpu));
    str(r, "workload", m->workload, sizeof(m->workload));
    str(r, "profile", m->profile, sizeof(m->profile));
    str(r, "quantity", m->quantity, sizeof(m->quantity));
    double b = batch;
    num(r, "batch", &b);
    m->batch = (unsigned)b;
    num(r, "limit_w", &m->limit_w);
    m->oom = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "oom"));
    if (!m->quantity[0]) {
        char units[32] = "";
        str(r, "units", units, sizeof(units));
        snprintf(m->quantity, sizeof(m->quantity), "%s",
                 strcmp(units, "ms/step") == 0 ? "step_ms" : "throughput");
    }
    if (!m->oom && (num(r, "value", &m->value) || m->value <= 0))
        return bad("a measurement has no value");
    gm.n_m++;
    return MB_OK;
}

static int read_measurements(const cJSON *root)
{
    static const char *const sets[] = {"migperf", "zeus"};
    static const char *const names[] = {"MIGPerf", "Zeus"};
    const cJSON *ms = cJSON_GetObjectItemCaseSensitive(root, "measurements");
    for (size_t k = 0; k < 2; k++) {
        const cJSON *set = cJSON_GetObjectItemCaseSensitive(ms, sets[k]);
        char gpu[MB_GM_NAME_MAX] = "", workload[MB_GM_NAME_MAX] = "";
        double batch = 0;
        str(set, "gpu", gpu, sizeof(gpu));
        str(set, "workload", workload, sizeof(workload));
        num(set, "batch", &batch);
        const cJSON *r;
        cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(set, "rows"))
        {
            int rc = add_measurement(names[k], gpu, workload, (unsigned)batch, r);
            if (rc != MB_OK)
                return rc;
        }
    }
    return MB_OK;
}

static void gm_init(void)
{
    cJSON *root = cJSON_ParseWithLength(mb__gpumodel_json, mb__gpumodel_json_len);
    if (!root) {
        gm.rc = bad("not JSON");
        return;
    }
    int rc = read_constants(root);
    const cJSON *it;
    /* The fit writes its numbers into each preset (fitted.workloads repeats them). */
    cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(root, "workloads"))
    {
        if (rc == MB_OK)
            rc = read_workload(it);
    }
    if (rc == MB_OK)
        rc = read_gpus(root);
    if (rc == MB_OK)
        rc = read_measurements(root);
    gm.rc = rc;
    cJSON_Delete(root);
}

const char *mb__gm_calibration(void)
{
    return "data/gpumodel.json: throughput fitted to MIGPerf (A100-SXM4-80GB: ResNet-50, BERT), "
           "power-limit curve to Zeus sweeps (V100, RTX 6000; ResNet-50)";
}

int mb__gm_load(struct mb_error *err)
{
    pthread_once(&gm_once, gm_init);
    if (gm.rc != MB_OK)
        return mb_error_set(err, gm.rc, "%s", gm.msg);
    return MB_OK;
}

const struct mb_gm_workload *mb__gm_workload(const char *name)
{
    if (mb__gm_load(NULL) != MB_OK || !name)
        return NULL;
    for (size_t i = 0; i < gm.n_w; i++)
        if (strcmp(gm.w[i].name, name) == 0)
            return &gm.w[i];
    return NULL;
}

const struct mb_gm_workload *mb__gm_workload_at(size_t i)
{
    if (mb__gm_load(NULL) != MB_OK || i >= gm.n_w)
        return NULL;
    return &gm.w[i];
}

double mb__gm_knee(void)
{
    return mb__gm_load(NULL) == MB_OK ? gm.knee : 0.85;
}

double mb__gm_timeslice_loss(void)
{
    return mb__gm_load(NULL) == MB_OK ? gm.ts_loss : 0.0;
}

double mb__gm_mps_interference(void)
{
    return mb__gm_load(NULL) == MB_OK ? gm.mps_interf : 0.0;
}

size_t mb__gm_n_measurements(void)
{
    return mb__gm_load(NULL) == MB_OK ? gm.n_m : 0;
}

const struct mb_gm_measurement *mb__gm_measurement(size_t i)
{
    return i < mb__gm_n_measurements() ? &gm.m[i] : NULL;
}

static const struct gm_gpu_row *gpu_row(const char *name)
{
    for (size_t i = 0; i < gm.n_g; i++)
        if (strcmp(gm.g[i].name, name) == 0)
            return &gm.g[i];
    return NULL;
}

void mb__gm_gpu_for(struct mb_gm_gpu *g, const struct mb_gpu_model *model, double static_w,
                    double max_w, double s_min)
{
    bool ok = mb__gm_load(NULL) == MB_OK;
    memset(g, 0, sizeof(*g));
    snprintf(g->name, sizeof(g->name), "%s", model->name);
    const struct gm_gpu_row *r = ok ? gpu_row(model->name) : NULL;
    g->sm_full = model->sm_full_gpu > 0 ? model->sm_full_gpu : 100;
    g->sm_rate = r ? r->sm_rate : 1.0;
    g->bw_rel = r && ok ? r->bw_gbs / gm.ref_bw : 1.0;
    g->static_w = static_w;
    g->max_w = max_w;
    g->knee = ok ? gm.knee : 0.85;
    g->s_min = s_min;
}

int mb__gm_calibration_gpu(const char *name, struct mb_gm_gpu *g, double *kappa_resnet50)
{
    if (mb__gm_load(NULL) != MB_OK)
        return MB_EPARSE;
    const struct gm_gpu_row *r = gpu_row(name);
    if (!r || !r->calibration)
        return MB_ENOTFOUND;
    memset(g, 0, sizeof(*g));
    snprintf(g->name, sizeof(g->name), "%s", r->name);
    g->sm_full = r->sm_full;
    g->sm_rate = r->sm_rate;
    g->bw_rel = r->bw_gbs / gm.ref_bw;
    g->static_w = r->static_w;
    g->max_w = r->tdp_w;
    g->knee = r->knee;
    g->s_min = 0.15;
    *kappa_resnet50 = r->kappa;
    return MB_OK;
}

/* ---- the equations ----------------------------------------------------------------------- */

static double softmin(double a, double b, double p)
{
    if (a <= 0 || b <= 0)
        return 0;
    return pow(pow(a, -p) + pow(b, -p), -1.0 / p);
}

void mb__gm_job_init(struct mb_gm_job *j, const struct mb_gm_workload *w, double batch, double n_sm,
                     double beta)
{
    memset(j, 0, sizeof(*j));
    j->w = w;
    j->batch = batch;
    j->kappa = w ? w->kappa : 1.0;
    j->n_sm = n_sm;
    j->beta = beta;
    j->time_share = j->power_share = j->interference = 1.0;
}

double mb__gm_mem_mib(const struct mb_gm_workload *w, double batch)
{
    return w ? w->mem_base_mib + w->mem_per_unit_mib * batch : 0.0;
}

/* One job's rate, duty and activity on g at clock s. */
static void job_at(const struct mb_gm_gpu *g, struct mb_gm_job *j, double s)
{
    if (!j->w || j->n_sm <= 0) {
        j->rate = 0;
        j->duty = j->n_sm > 0 ? 1.0 : 0.0;
        j->activity = j->duty;
        return;
    }
    const struct mb_gm_workload *w = j->w;
    double used = softmin(j->n_sm, w->demand * j->batch, gm.p);
    double rc = w->c * g->sm_rate * used;
    double rm = w->m * g->bw_rel * j->beta;
    double r = softmin(rc, rm, gm.q) * s; /* L2 and SMs both follow the clock */
    double busy = r > 0 ? (w->w0 + j->batch) / r : 0;
    double t = w->t_launch_s + busy;
    j->rate = t > 0 ? j->batch / t * j->time_share * j->interference : 0;
    j->duty = t > 0 ? busy / t : 0;
    double occ = j->duty * used / j->n_sm;
    j->activity = occ > 0 ? pow(occ, gm.gamma) : 0;
}

static double g_curve(double s, double knee)
{
    return s >= knee ? s * s * s : s * knee * knee;
}

/* The GPU's power with every job evaluated at clock s. */
static double power_at(const struct mb_gm_gpu *g, struct mb_gm_job *jobs, size_t n, double s)
{
    double dyn = 0;
    for (size_t i = 0; i < n; i++) {
        job_at(g, &jobs[i], s);
        dyn += jobs[i].kappa * (jobs[i].n_sm / g->sm_full) * jobs[i].activity * jobs[i].power_share;
    }
    if (dyn > 1)
        dyn = 1; /* more busy SMs than the GPU has (oversubscribed MPS): the GPU's maximum */
    return g->static_w + (g->max_w - g->static_w) * dyn * g_curve(s, g->knee);
}

void mb__gm_solve(const struct mb_gm_gpu *g, struct mb_gm_job *jobs, size_t n, double limit_w,
                  struct mb_gm_result *out)
{
    (void)mb__gm_load(NULL);
    double limit = limit_w > 0 ? limit_w : g->max_w;
    double s = 1.0;
    double p = power_at(g, jobs, n, 1.0);
    out->capped = false;
    if (p > limit + 1e-9) {
        /* Power grows with the clock: bisect for the highest clock that fits. */
        double lo = g->s_min > 0 ? g->s_min : 0.1, hi = 1.0;
        if (power_at(g, jobs, n, lo) <= limit) {
            for (int i = 0; i < 50; i++) {
                double mid = (lo + hi) / 2;
                if (power_at(g, jobs, n, mid) <= limit)
                    lo = mid;
                else
                    hi = mid;
            }
        }
        s = lo; /* where even the lowest clock does not fit, the power stays above the limit */
        p = power_at(g, jobs, n, s);
        out->capped = true;
    }
    out->s = s;
    out->power_w = p;
}
