/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The emulated GPU's link to the GPU model (gpumodel.h): the attached processes become jobs on
 * their MIG instance, MPS share or time-sliced whole GPU; the model gives the clock under the
 * power limit, the power, and each modelled job's rate. A process attached with a workload
 * preset (mb__emu_attach_job: what the modelled workload fx_model does) is modelled; one
 * attached without (tests, the fake NVML) keeps every SM of its instance busy at kappa 1.
 */
#include "device/emu_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

const struct mb_gi_profile *mb__emu_profile_by_id(const struct emu *e, unsigned driver_id)
{
    if (driver_id > 0x7fffffffu)
        return NULL;
    return mb_model_profile_by_driver_id(e->model, (int)driver_id);
}

/* SMs of a process's MIG compute instance and its bandwidth share. */
static void mig_place(const struct emu *e, const struct emu_proc *p, double *n_sm, double *beta)
{
    *n_sm = 0;
    *beta = 0;
    if (p->gi < 0 || p->gi >= EMU_MAX_GI || !e->st.gi[p->gi].used)
        return;
    const struct emu_gi *gi = &e->st.gi[p->gi];
    const struct mb_gi_profile *prof = mb__emu_profile_by_id(e, gi->profile_id);
    if (!prof || prof->compute_slices == 0)
        return;
    double sms = prof->sm_count > 0
                     ? (double)prof->sm_count
                     : e->gm.sm_full * prof->compute_slices / e->model->compute_slices;
    unsigned ci_slices = p->ci >= 0 && p->ci < EMU_MAX_CI && gi->ci[p->ci].used
                             ? gi->ci[p->ci].slices
                             : prof->compute_slices;
    *n_sm = sms * ci_slices / prof->compute_slices;
    *beta = (double)prof->memory_slices / (double)e->model->memory_slices;
}

/* Processes sharing p's place by time-slicing: the same compute instance (MIG), or the whole
 * GPU's non-MPS processes plus one turn for the MPS server when it has clients (MIG off). */
static size_t turns(const struct emu *e, const struct emu_proc *p)
{
    size_t k = 0;
    bool mps = false;
    for (size_t i = 0; i < e->st.n_procs; i++) {
        const struct emu_proc *q = &e->st.procs[i];
        if (e->st.mig_current)
            k += q->gi == p->gi && q->ci == p->ci;
        else if (q->mps_pct > 0)
            mps = true;
        else
            k++;
    }
    return k + (!e->st.mig_current && mps ? 1 : 0);
}

static void place(const struct emu *e, const struct emu_proc *p, struct mb_gm_job *j,
                  double mps_sms)
{
    const struct mb_gm_workload *w = p->workload[0] ? mb__gm_workload(p->workload) : NULL;
    double batch = p->batch > 0 ? p->batch : (w ? w->batch : 0);
    double n_sm = e->gm.sm_full, beta = 1.0;
    if (e->st.mig_current)
        mig_place(e, p, &n_sm, &beta);
    else if (p->mps_pct > 0) {
        n_sm = e->gm.sm_full * p->mps_pct / 100.0;
        beta = mps_sms > 0 ? n_sm / mps_sms : 1.0;
        if (mps_sms > e->gm.sm_full) /* oversubscribed: the SMs are shared in proportion */
            n_sm *= e->gm.sm_full / mps_sms;
    }
    mb__gm_job_init(j, w, batch, n_sm, beta);
    size_t k = turns(e, p);
    if (k > 1) {
        j->power_share = 1.0 / (double)k;
        j->time_share = (1.0 - mb__gm_timeslice_loss()) / (double)k;
    }
}

size_t mb__emu_jobs(const struct emu *e, struct mb_gm_job *jobs, bool from_procs)
{
    if (e->load_fixed && !from_procs) {
        /* load=X: an unmodelled job on that share of the SMs (the stated model of load=). */
        mb__gm_job_init(&jobs[0], NULL, 0, e->load * e->gm.sm_full, 1.0);
        return e->load > 0 ? 1 : 0;
    }
    double mps_sms = 0;
    size_t n_mps = 0;
    for (size_t i = 0; i < e->st.n_procs && !e->st.mig_current; i++)
        if (e->st.procs[i].mps_pct > 0) {
            mps_sms += e->gm.sm_full * e->st.procs[i].mps_pct / 100.0;
            n_mps++;
        }
    for (size_t i = 0; i < e->st.n_procs; i++) {
        place(e, &e->st.procs[i], &jobs[i], mps_sms);
        if (!e->st.mig_current && e->st.procs[i].mps_pct > 0 && n_mps > 1)
            jobs[i].interference = 1.0 - mb__gm_mps_interference();
    }
    return e->st.n_procs;
}

double mb__emu_limit_w(const struct emu *e)
{
    return e->st.limit_mw ? (double)e->st.limit_mw / 1000.0 : e->max_w;
}

size_t mb__emu_solve(const struct emu *e, struct mb_gm_job *jobs, bool from_procs,
                     struct mb_gm_result *r)
{
    size_t n = mb__emu_jobs(e, jobs, from_procs);
    struct mb_gm_gpu g = e->gm;
    g.static_w = e->idle_w;
    g.max_w = e->max_w;
    mb__gm_solve(&g, jobs, n, mb__emu_limit_w(e), r);
    return n;
}

/* Utilisation (NVML: the share of time a kernel runs): the jobs' duty, by their turns, capped. */
double mb__emu_jobs_util(const struct emu *e, const struct mb_gm_job *jobs, size_t n)
{
    double u = 0;
    for (size_t i = 0; i < n; i++)
        u += jobs[i].duty * jobs[i].power_share * fmin(1.0, jobs[i].n_sm / e->gm.sm_full);
    return u > 1 ? 1 : u;
}
