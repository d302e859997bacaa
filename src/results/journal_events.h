/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The journal's events as types (library-private): one encoder and one decoder per event kind
 * that migbench reads back (docs/results.md, "journal.jsonl"). Every reader of the journal
 * decodes an event with mb_jev_decode and switches on its kind; every writer of those kinds
 * fills a struct mb_jev and encodes it with mb_jev_encode, so a field is named in one place.
 * Every kind migbench writes has its codec here, those nobody reads back (job_started,
 * cooldown, power_limit_*) included; a name not listed decodes as MB_JEV_OTHER.
 */
#ifndef MIGBENCH_JOURNAL_EVENTS_H
#define MIGBENCH_JOURNAL_EVENTS_H

#include <cjson/cJSON.h>
#include <stdbool.h>

#include "migbench/layout.h"
#include "results/cell_record.h"

enum mb_jev_kind {
    MB_JEV_OTHER = 0, /* a well-formed event of a kind not listed (decoded: event, run, rep) */
    MB_JEV_EXPERIMENT_STARTED,
    MB_JEV_EXPERIMENT_FINISHED,
    MB_JEV_INTERRUPTED,
    MB_JEV_CELL_STARTED,
    MB_JEV_CELL_FINISHED,
    MB_JEV_CELL_FAILED,
    MB_JEV_MIG_CREATED,
    MB_JEV_MIG_DESTROYED,
    MB_JEV_MPS_STARTED,
    MB_JEV_MPS_STOPPED,
    MB_JEV_MIG_MODE_ORIGINAL,
    MB_JEV_MIG_MODE_SWITCHED,
    MB_JEV_MIG_MODE_RESTORED,
    MB_JEV_CLEANUP,
    MB_JEV_JOB_STARTED, /* written for people: no reader needs them back */
    MB_JEV_COOLDOWN,
    MB_JEV_POWER_LIMIT_SET,
    MB_JEV_POWER_LIMIT_RESTORED,
    MB_JEV_KINDS
};

/*
 * One event. Strings point into the cJSON it was decoded from (or are the writer's own); absent
 * values are NULL, -1 or false. Which fields a kind carries is the table in journal_events.c.
 */
struct mb_jev {
    enum mb_jev_kind kind;
    const char *event;     /* its name ("cell_started") */
    const char *run;       /* cell events */
    int rep;               /* cell events; -1 none */
    const char *slurm_job; /* "slurm": {"job"} of a cell event in a Slurm job; NULL outside */
    bool with_slurm;       /* encoding: add the "slurm" block of this process's environment */
    const char *gpu_uuid;
    /* experiment_started (read back: experiment_sha; the rest is written for people) */
    const char *experiment_sha;
    const char *experiment, *file, *backend; /* and device: the --device spec as given */
    char *const *overrides;                  /* n_overrides "key=value" */
    size_t n_overrides;
    char *const *gpus; /* n_gpus device specs, one per GPU */
    size_t n_gpus;
    bool manage_mig_mode, resume;
    double cells;
    const size_t *cell_indices; /* a selection's cell numbers (n_cells_given); NULL: the whole */
    size_t n_cell_indices;
    const char *version; /* migbench_version */
    /* cell_started */
    const char *mode_name;
    /* experiment_finished */
    double n_ok, n_failed, n_skipped;
    /* cell_finished / cell_failed */
    double seconds;
    const char *reason; /* cell_failed, cleanup */
    /* mig_created / mig_destroyed */
    bool has_gi, has_ci;
    unsigned gi_id, ci_id;
    const char *profile;           /* mig_created of a GPU instance */
    struct mb_placement placement; /* size 0: not recorded */
    const char *ledger;            /* the MIG ledger that records it; NULL: an older journal */
    /* mps_started / mps_stopped / cleanup */
    long pid; /* -1 unknown */
    const char *pipe_dir, *log_dir;
    bool ok;
    /* mig_mode_*, experiment_started */
    const char *device;
    int original_current, original_pending, mode; /* 0/1; -1 when absent */
    /* interrupted */
    int signal;
    /* cleanup */
    const char *what;
    double removed; /* mig_ledger: instances removed; -1 absent */
    /* job_started (and pid), cooldown */
    const char *job; /* job_started: the job; cooldown: before_job (exclusive runs), or NULL */
    struct mb_cell_cooldown cooldown;
    /* power_limit_set (and ledger) / power_limit_restored */
    const char *requested, *outcome;
    double limit_mw;
};

/* An event of kind k with every field absent (rep -1, pid -1, limit_mw -1, ...). */
struct mb_jev mb_jev_init(enum mb_jev_kind k);

/* The kind named name (MB_JEV_OTHER for a name not listed); its name. */
enum mb_jev_kind mb_jev_kind_of(const char *name);
const char *mb_jev_name(enum mb_jev_kind k);

/*
 * Decodes a journal line's object: false when it is not an object with a string "event" (a torn
 * or foreign line). The strings stay owned by obj.
 */
bool mb_jev_decode(const cJSON *obj, struct mb_jev *out);

/*
 * The "slurm" block of this process (the Slurm job it runs in: "<array job>_<task>" for an array
 * task, else the job id, as `slurm status` names it) added to o; nothing outside Slurm. Cell
 * events and cell.json carry it.
 */
void mb_jev_add_slurm(cJSON *o);

/* The event as a new cJSON object (the caller's; mb_journal_append stamps it); NULL when out of
 * memory. */
cJSON *mb_jev_encode(const struct mb_jev *ev);

#endif
