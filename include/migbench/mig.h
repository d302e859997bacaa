/* SPDX-License-Identifier: Apache-2.0 */
/*
 * MIG instances over the device layer, and the one ledger of what migbench created.
 *
 * Both `migbench mig` and `migbench run` record every GPU instance they create in the ledger of
 * that GPU, before creating it (an intent: profile and placement) and again once it exists (its
 * GI/CI ids and MIG UUID). Each entry names its creator (command "mig" or "run"), the creating
 * process's pid, the experiment's results directory (runs) and the time. So `mig clear --ours`
 * finds every instance migbench made, a killed run's too, and `run --resume` removes exactly the
 * dead run's.
 *
 * Where the ledger lives: an emulated GPU with state=FILE keeps it in FILE.owned.json; any other
 * GPU with a UUID in $MIGBENCH_STATE_DIR/owned-<uuid>.json (default /var/lib/migbench). A device
 * with neither has no ledger (mb_mig_ledger_path returns ""), and every operation on it is a
 * no-op. The file is replaced atomically and removed once empty; every read-modify-write holds
 * an exclusive flock on the ledger's directory, so concurrent processes do not lose entries.
 *
 * Threads: a ledger handle belongs to one thread.
 */
#ifndef MIGBENCH_MIG_H
#define MIGBENCH_MIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "migbench/catalog.h"
#include "migbench/device.h"
#include "migbench/layout.h"
#include "migbench/status.h"

#define MB_MIG_MAX_GIS 16
#define MB_MIG_MAX_CIS 8
#define MB_MIG_PATH_MAX 4096

/* A GPU instance as the device reports it, with its compute instances and processes. */
struct mb_mig_gi {
    unsigned id;
    unsigned profile_id;
    char profile_name[MB_PROFILE_NAME_MAX];
    struct mb_placement placement;
    size_t n_ci;
    unsigned ci[MB_MIG_MAX_CIS];
    char uuid[MB_UUID_MAX]; /* of the first compute instance; "" without one */
    size_t n_procs;
    unsigned first_pid;
};

/* Who created a ledger entry. */
enum mb_mig_creator {
    MB_MIG_BY_MIG = 0, /* migbench mig apply */
    MB_MIG_BY_RUN,     /* migbench run (a cell's layout) */
};

/* One instance migbench created (or is about to create: confirmed false). */
struct mb_mig_owned {
    bool confirmed; /* false: an intent written before the create call */
    bool has_gi;    /* gi_id known (always when confirmed) */
    unsigned gi_id;
    bool has_ci;
    unsigned ci_id;
    unsigned profile_id; /* driver id */
    char profile[MB_PROFILE_NAME_MAX];
    struct mb_placement placement;
    char mig_uuid[MB_UUID_MAX]; /* "" until known */
    enum mb_mig_creator creator;
    long pid;                         /* the creating process */
    char experiment[MB_MIG_PATH_MAX]; /* run: its results directory; else "" */
    double time_unix;                 /* when the entry was written */
};

struct mb_mig_ledger;

/*
 * Opens the ledger of an open device (no file is read yet). device_spec is the spec the device
 * was opened with. *out is always set on MB_OK, also for a device without a ledger.
 */
int mb_mig_ledger_open(struct mb_device *dev, const char *device_spec, struct mb_mig_ledger **out,
                       struct mb_error *err);
void mb_mig_ledger_close(struct mb_mig_ledger *l);

/* The ledger file's path; "" when this device has none. */
const char *mb_mig_ledger_path(const struct mb_mig_ledger *l);

/*
 * Reads the ledger into memory (under the lock). A record that is not a ledger, or is for
 * another GPU, is refused (MB_EPARSE / MB_EINVAL, the file named) and nothing is changed.
 */
int mb_mig_ledger_load(struct mb_mig_ledger *l, struct mb_error *err);

/* The entries read by the last load or update. */
size_t mb_mig_ledger_count(const struct mb_mig_ledger *l);
const struct mb_mig_owned *mb_mig_ledger_entry(const struct mb_mig_ledger *l, size_t i);

/* Before anything is created: the ledger's directory must be writable (MB_EIO when not). */
int mb_mig_ledger_check_writable(struct mb_mig_ledger *l, struct mb_error *err);

/*
 * Writes an intent for an instance about to be created (confirmed false; creator, pid,
 * experiment and time as given in *e, time and pid filled in when 0).
 */
int mb_mig_ledger_intend(struct mb_mig_ledger *l, const struct mb_mig_owned *e,
                         struct mb_error *err);

/*
 * Confirms this process's intent at the same placement: the GI (and CI when has_ci) now exist,
 * mig_uuid may be "" when not known yet (a later confirm fills it in).
 */
int mb_mig_ledger_confirm(struct mb_mig_ledger *l, struct mb_placement placement, unsigned gi_id,
                          bool has_ci, unsigned ci_id, const char *mig_uuid, struct mb_error *err);

/* Drops the entries for this placement (the instance was destroyed or never made). */
int mb_mig_ledger_forget(struct mb_mig_ledger *l, struct mb_placement placement,
                         struct mb_error *err);

/*
 * The ledger entry (of the last load) that owns this live instance, or NULL: a confirmed entry
 * with the same GI id, profile and placement, or an intent with the same profile and placement.
 */
const struct mb_mig_owned *mb_mig_ledger_owner(const struct mb_mig_ledger *l,
                                               const struct mb_mig_gi *g);

/* Drops (under the lock) the entries that match none of the live instances gis[0..n). */
int mb_mig_ledger_prune(struct mb_mig_ledger *l, const struct mb_mig_gi *gis, size_t n,
                        struct mb_error *err);

/* The GPU instances, with their compute instances and processes; largest first, then by start. */
int mb_mig_list(struct mb_device *dev, struct mb_mig_gi *out, size_t cap, size_t *n,
                struct mb_error *err);

/* The instances on the GPU now as a layout of the model (profiles matched by name). */
int mb_mig_current_layout(struct mb_device *dev, const struct mb_gpu_model *m,
                          struct mb_layout *out, struct mb_error *err);

/*
 * The MIG lifecycle: mb_mig_create is the one function in migbench that creates MIG instances,
 * and mb_mig_destroy the one that destroys them (`mig apply`, `run`'s cells, the resume cleanup
 * and the MIG-mode switch all call them). Both keep the ledger: an intent is written before the
 * GPU instance is created and confirmed after each step, and an instance is forgotten once it is
 * destroyed. So the ledger alone says what migbench made, whenever the process dies.
 */

/* The steps of a create or destroy, as hooks and failures name them. */
enum mb_mig_step {
    MB_MIG_STEP_NONE = 0,
    MB_MIG_STEP_LEDGER, /* the ledger refused the intent: nothing was created */
    MB_MIG_STEP_GI,     /* the GPU instance */
    MB_MIG_STEP_CI,     /* its compute instance */
};

/* Called after each step that changed the GPU (ctx as given; every member may be NULL). */
struct mb_mig_hooks {
    /* A step of a create is done (MB_MIG_STEP_GI, then MB_MIG_STEP_CI); non-MB_OK stops it. */
    int (*made)(void *ctx, enum mb_mig_step step, unsigned gi_id, unsigned ci_id,
                struct mb_error *err);
    /* A step of a destroy is done (the compute instance ci_id, then the GPU instance). */
    int (*destroyed)(void *ctx, enum mb_mig_step step, unsigned gi_id, unsigned ci_id,
                     struct mb_error *err);
    void *ctx;
};

/* What to create: a GPU instance of a profile at a placement, with one compute instance. */
struct mb_mig_new {
    unsigned profile_id; /* the driver's id */
    const char *profile; /* its name (for the ledger and messages) */
    struct mb_placement placement;
    enum mb_mig_creator creator;
    const char *experiment; /* a run's results directory (recorded absolute); NULL otherwise */
};

/* What mb_mig_create made (also on failure: what exists). */
struct mb_mig_made {
    bool gi_made, ci_made;
    unsigned gi_id, ci_id;
    char uuid[MB_UUID_MAX];             /* of the compute instance; "" when the device names none */
    enum mb_mig_step failed;            /* the step that failed; MB_MIG_STEP_NONE on MB_OK */
    char ledger_note[MB_ERROR_MSG_MAX]; /* a confirmation the ledger refused; "" when none */
};

/*
 * Creates one GPU instance and its compute instance on dev: the ledger's intent first (l may be
 * NULL or pathless: no record), then the GPU instance, its confirmation, the compute instance,
 * its confirmation with the MIG UUID. err holds the device's (or ledger's) reason on failure and
 * out->failed the step; what was made stays recorded in the ledger. A confirmation the ledger
 * refuses does not stop the create (the intent already names the instance): out->ledger_note.
 */
int mb_mig_create(struct mb_device *dev, struct mb_mig_ledger *l, const struct mb_mig_new *req,
                  const struct mb_mig_hooks *hooks, struct mb_mig_made *out, struct mb_error *err);

/*
 * Destroys a GPU instance's compute instances, then the instance, and forgets it in the ledger
 * (l may be NULL). An instance already gone counts as destroyed. hooks (may be NULL) hear of each
 * step; a hook's failure is returned after the destroy went on.
 */
int mb_mig_destroy(struct mb_device *dev, struct mb_mig_ledger *l, const struct mb_mig_gi *g,
                   const struct mb_mig_hooks *hooks, struct mb_error *err);

/* The device's view of one instance as the GPU instance mb_mig_destroy takes (no processes). */
void mb_mig_gi_of(const struct mb_mig_instance *in, struct mb_mig_gi *out);

/*
 * Removes the instances that a run writing into results_dir created and that its process (not
 * this one) left behind, according to the ledger; leaves every other instance alone.
 * *removed counts removals; the first failure is returned (the others are still tried).
 */
int mb_mig_clear_run(struct mb_device *dev, struct mb_mig_ledger *l, const char *results_dir,
                     size_t *removed, struct mb_error *err);

/* How many live instances mb_mig_clear_run would remove now. */
int mb_mig_run_leftovers(struct mb_device *dev, struct mb_mig_ledger *l, const char *results_dir,
                         size_t *n, struct mb_error *err);

/*
 * Records in the ledger, as the dead run of results_dir's, a live GPU instance that only a
 * journal of an older migbench names (its "mig_created" event has no ledger reference): adopted
 * when the device's GPU instance gi_id still has that profile (name) and placement (size 0: not
 * recorded); *adopted says whether it was. So that record, too, is cleaned by mb_mig_clear_run.
 */
int mb_mig_ledger_adopt(struct mb_device *dev, struct mb_mig_ledger *l, const char *results_dir,
                        unsigned gi_id, const char *profile, struct mb_placement placement,
                        bool *adopted, struct mb_error *err);

/* The catalog profile index of a live instance (by driver id, else name); MB_EDEVICE if none. */
int mb_mig_profile_index(const struct mb_gpu_model *m, const struct mb_mig_gi *g, unsigned *out,
                         struct mb_error *err);

/* What applying a layout changes: which live instances go, what is created, how many stay. */
struct mb_mig_diff {
    size_t remove[MB_MIG_MAX_GIS]; /* indices into the live instances */
    size_t n_remove;
    struct mb_layout create; /* the instances to create, with placements, largest first */
    size_t kept;
    bool replaced_all; /* the kept instances left no room: every instance is replaced */
};

/*
 * The diff from the live instances gis[0..n) to the multiset of profiles want[0..nw) (catalog
 * indices) on model m: instances that match are kept, the others removed, and the missing ones
 * placed beside the kept (when they leave no room: everything is replaced, placed on an empty
 * GPU). MB_EINFEASIBLE when want does not fit on an empty GPU; MB_EDEVICE when a live
 * instance's profile is unknown to the catalog.
 */
int mb_mig_diff(const struct mb_gpu_model *m, const struct mb_mig_gi *gis, size_t n,
                const unsigned *want, size_t nw, struct mb_mig_diff *out, struct mb_error *err);

/* Whether the live instances are exactly the multiset want[0..nw) (MB_EDEVICE as above). */
int mb_mig_matches(const struct mb_gpu_model *m, const struct mb_mig_gi *gis, size_t n,
                   const unsigned *want, size_t nw, bool *match, struct mb_error *err);

const char *mb_mig_creator_str(enum mb_mig_creator c);

#endif
