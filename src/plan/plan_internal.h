/* SPDX-License-Identifier: Apache-2.0 */
/* Internal helpers shared by the planner's source files: the model, its search and its bounds. */
#ifndef MIGBENCH_PLAN_INTERNAL_H
#define MIGBENCH_PLAN_INTERNAL_H

#include <math.h>
#include <stdint.h>

#include "migbench/plan.h"

#define MAXI MB_LAYOUT_MAX
/* Relative tolerance for ties between objective values. */
#define TIE 1e-9

/* Removes the last row added (no-op when empty): undoes a partial load. */
void mb__plan_profiles_pop(struct mb_plan_profiles *p);

/* True when row was measured under the power limit cap_w (W; 0 or NaN on either side: default). */
bool mb__plan_cap_match(const struct mb_plan_profile *row, double cap_w);

struct config {
    bool mig;
    size_t n;
    unsigned size[MAXI]; /* size index: a profile index, or n_profiles for the whole GPU */
    unsigned cs[MAXI];   /* compute slices */
    unsigned csum;
    struct mb_layout layout;
};

struct prob {
    const struct mb_gpu_model *model;
    const struct mb_plan_profiles *profiles;
    double cap_w; /* rows measured under this power limit (W); 0 or NaN: the default */
    const struct mb_plan_job *jobs;
    size_t nj;
    unsigned ns;             /* sizes: model profiles plus the whole GPU */
    unsigned full;           /* size index of the whole GPU */
    double *t;               /* nj x ns: time on that size, INFINITY where not allowed */
    double *d;               /* nj x ns: dynamic energy (J) or, continuous, dynamic power (W) */
    double *norm;            /* nj x ns: normalised throughput (continuous jobs) */
    size_t *row;             /* nj x ns: profile row, SIZE_MAX where none */
    size_t *rank;            /* queue order: rank[k] is the k-th job to run */
    double *base_t, *base_d; /* alone on the whole GPU (baseline), NaN where not possible */
    double idle;
    size_t idle_rows;
    unsigned count;
    bool continuous;
    enum mb_plan_objective obj;
    double mcap, ecap; /* INFINITY when unused */
    struct config *cfg;
    size_t ncfg;
    size_t nodes;
    /* mb__plan_bounds' answer once computed (bounded), for G = bounded_G */
    bool bounded;
    unsigned bounded_G;
    double b_mlb, b_elb, b_sub;
};

struct metrics {
    double M, D, S, P;
    bool ok; /* caps and deadlines met */
};

static inline double T(const struct prob *P, size_t j, unsigned s)
{
    return P->t[j * P->ns + s];
}
static inline double Dy(const struct prob *P, size_t j, unsigned s)
{
    return P->d[j * P->ns + s];
}
static inline bool allowed(const struct prob *P, size_t j, unsigned s)
{
    return P->row[j * P->ns + s] != SIZE_MAX;
}

/* plan_model.c: the problem (times, energies, configurations) and the model's evaluation. */
int mb__plan_prob_init(struct prob *P, const struct mb_gpu_model *model,
                       const struct mb_plan_profiles *profiles, const struct mb_plan_job *jobs,
                       size_t nj, const struct mb_plan_options *opt, struct mb_error *err);
/* partial: a job without a usable row is no error (it cannot run on this problem's limit). */
int mb__plan_prob_init_ex(struct prob *P, const struct mb_gpu_model *model,
                          const struct mb_plan_profiles *profiles, const struct mb_plan_job *jobs,
                          size_t nj, const struct mb_plan_options *opt, bool partial,
                          struct mb_error *err);
int mb__plan_prob_min(struct prob *out, const struct prob *Pk, size_t n, struct mb_error *err);
void mb__plan_prob_free(struct prob *P);
unsigned mb__plan_size_cs(const struct prob *P, unsigned s);
/*
 * Full evaluation of an assignment: asg[j] = g * MAXI + i on configuration cfg[g]. Queue order
 * follows P->rank; deadlines are checked; start[] (optional) gets each job's start time.
 */
struct metrics mb__plan_evaluate(const struct prob *P, const size_t *cfg, const size_t *asg,
                                 unsigned G, double *start);
double mb__plan_energy(const struct prob *P, unsigned G, double M, double D);
/* Primary and secondary objective values, smaller is better. */
void mb__plan_objective(const struct prob *P, unsigned G, const struct metrics *m, double *pri,
                        double *sec);
/* a < b beyond the tie tolerance. */
bool mb__plan_lt(double a, double b);
/* Whether (pa, sa) beats (pb, sb) lexicographically, with ties on the primary value. */
bool mb__plan_better(double pa, double sa, double pb, double sb);

/*
 * plan_exact.c: branch and bound on one GPU, and plain enumeration for tests. With *found on
 * entry, best_cfg[0] / best_asg hold a plan the search must beat. node_limit (0: none) stops it,
 * deterministically; *complete says whether it finished (then the answer is optimal).
 */
int mb__plan_solve_exact(struct prob *P, size_t *best_cfg, size_t *best_asg, bool *found,
                         size_t node_limit, bool *complete, struct mb_error *err);
int mb__plan_solve_brute(struct prob *P, size_t *best_cfg, size_t *best_asg, bool *found,
                         struct mb_error *err);

/* plan_cover.c: whether G layouts can give every job a partition (a proof either way). */
enum cover_result { COVER_FOUND, COVER_NONE, COVER_UNKNOWN };
enum cover_result mb__plan_cover(const struct prob *P, unsigned G, size_t *cfg_out, size_t *n_used);
/* Explains a COVER_NONE answer in err (MB_EINFEASIBLE) with the jobs that make it so. */
int mb__plan_cover_explain(const struct prob *P, unsigned G, struct mb_error *err);

/* What the fleet search did. */
struct mb_plan_search {
    double t0; /* when the solve began (mb_clock seconds; 0: when the search begins) */
    size_t nodes;
    bool stopped; /* by the time limit */
    unsigned threads;
    double seconds;
    enum cover_result cover; /* COVER_NONE: proven that no plan runs every job */
};

/* plan_heur.c / plan_search.c: the fleet search for finite jobs. */
int mb__plan_solve_heuristic(struct prob *P, unsigned G, const struct mb_plan_options *opt,
                             size_t *cfg_out, size_t *asg_out, bool *found,
                             struct mb_plan_search *info, struct mb_error *err);

/* plan_cont.c: continuous jobs on a fleet. */
int mb__plan_solve_cont(struct prob *P, unsigned G, size_t *cfg_out, size_t *asg_out, bool *found,
                        struct mb_error *err);

/* plan.c: each GPU's modelled peak power against its pl->gpus[].power_limit_w (MB_ENOMEM). */
int mb__plan_peak_power(const struct prob *P, struct mb_plan *pl);

/*
 * plan_pergpu.c: one power limit per GPU. From each plan of starts[] (a shared-limit plan, NULL
 * where that limit gave none) a local search over each GPU's limit and the jobs' instances. *best
 * (one of starts[], owned by the caller) is replaced by the best plan found when that beats it
 * under the objective; its bounds become those of any plan with one candidate limit per GPU.
 */
int mb__plan_per_gpu(const struct mb_gpu_model *model, const struct mb_plan_profiles *profiles,
                     const struct mb_plan_job *jobs, size_t nj, const struct mb_plan_options *opt,
                     const double *caps_w, size_t n_caps, struct mb_plan *const *starts,
                     struct mb_plan **best, struct mb_error *err);

/* plan_bound.c: lower bounds valid for every plan, and the study's baseline. */
double mb__plan_min_all(const struct prob *P, size_t j, int what);
void mb__plan_bounds(const struct prob *P, unsigned G, double *mlb, double *elb, double *sub);
void mb__plan_baseline(const struct prob *P, unsigned G, double *M, double *E);

#endif
