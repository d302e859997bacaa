/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The fleet search's state (private to plan_heur.c and plan_search.c): an assignment of jobs to
 * instances with each instance's load, per-instance job lists, a min-heap of the instances of each
 * partition size (the least-loaded one of a size is where a job of that size ends first) and a
 * max-heap of all instances (the makespan, and the makespan without one or two instances).
 */
#ifndef MIGBENCH_PLAN_HEUR_H
#define MIGBENCH_PLAN_HEUR_H

#include "plan/plan_internal.h"

#define NONE SIZE_MAX

struct hs {
    const struct prob *P;
    unsigned G;
    enum mb_plan_objective obj;
    size_t *cfg;           /* per GPU */
    size_t *asg;           /* per job: g * MAXI + i, NONE while unplaced */
    double *B;             /* per instance: load (s) */
    unsigned *cnt;         /* per instance: jobs */
    size_t *head;          /* per instance: first job, NONE */
    size_t *next, *prev;   /* per job: the instance's list */
    size_t **sh, *sn;      /* per size: min-heap of instances by load, its length */
    size_t *spos;          /* per instance: position in its size heap */
    size_t *mh, mn, *mpos; /* max-heap of every instance */
    const size_t *order;   /* jobs, longest first (shared) */
    const size_t *rk;      /* rk[j]: j's position in order (shared) */
    double D;
    /* mb__hs_place under the makespan objective: when > 0 and the job can end within it, the
       size where it takes the least area among those ending within it (else the earliest end) */
    double target;
    double *min_dy; /* per job: its least dynamic energy on any size */
    double *rest;   /* scratch, nj + 1: mb__hs_configs' least energy still to add */
    size_t nodes;
    uint64_t rng;
    /* Undo log of puts, takes and layout changes while logging is on (mb__hs_undo). */
    struct hs_op *log;
    size_t nlog, caplog;
    bool logging;
    bool log_overflow;
};

struct hs_op {
    unsigned char kind; /* 0 put, 1 take, 2 layout change */
    size_t a, b;        /* job and instance, or GPU and the previous configuration */
};

int mb__hs_init(struct hs *h, const struct prob *P, unsigned G, enum mb_plan_objective obj,
                const size_t *order, const size_t *rk);
void mb__hs_free(struct hs *h);
/* Empties every instance and sets the configurations (cfg may be h->cfg). */
void mb__hs_reset(struct hs *h, const size_t *cfg);
/* Loads a complete assignment (asg[j] for every job) on configurations cfg. */
void mb__hs_load(struct hs *h, const size_t *cfg, const size_t *asg);
double mb__hs_makespan(const struct hs *h);
/* The search's cost of makespan M and dynamic energy D (smaller is better; caps as penalties). */
double mb__hs_cost(const struct hs *h, double M, double D);
double mb__hs_cur(const struct hs *h);
unsigned mb__hs_size(const struct hs *h, size_t inst);
void mb__hs_put(struct hs *h, size_t j, size_t inst);
void mb__hs_take(struct hs *h, size_t j);
/* Puts job j on the fleet where the objective's greedy rule says (and h->target); false if it
   fits nowhere. */
bool mb__hs_place(struct hs *h, size_t j);
/* Changes GPU g's configuration (g must hold no job). */
void mb__hs_set_cfg(struct hs *h, unsigned g, size_t c);
/* The largest load among instances for which skip() is false (bounded walk of the max-heap). */
double mb__hs_max_without(const struct hs *h, size_t a, size_t b);
double mb__hs_max_without_gpu(const struct hs *h, unsigned g);

/* Improvement steps; each returns how many changes it made. */
size_t mb__hs_moves(struct hs *h, const size_t *jobs, size_t n);
size_t mb__hs_critical(struct hs *h, size_t max_steps, double deadline);
size_t mb__hs_configs(struct hs *h, size_t *buf, double deadline);

uint64_t mb__hs_rand(struct hs *h);

/* Starts logging changes; mb__hs_undo reverts them all, false if the log overflowed (then the
   caller reloads the state). */
void mb__hs_mark(struct hs *h);
bool mb__hs_undo(struct hs *h);

#endif
