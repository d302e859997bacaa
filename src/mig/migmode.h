/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Safe MIG-mode switching, for an experiment whose runs need MIG off and MIG on (phases).
 *
 * A switch is planned first (mb_migmode_plan): the GPU must be able to change mode, no compute
 * process may run on it (else MB_EBUSY naming the PIDs), and no MIG instance may exist that
 * migbench does not own (else MB_EBUSY naming them; ownership comes from a caller's hook, the
 * ownership ledger). mb_migmode_describe gives the one line a user reads before it happens.
 * mb_migmode_switch journals the original mode through a hook before anything changes, removes
 * migbench's own leftover instances, sets the mode through the device's switch operation (the
 * driver unbinds and resets the idle GPU; migbench never resets one itself), and verifies it. A
 * refused activation (busy GPU, a reset the driver cannot do) re-stages the original mode, so the
 * GPU is left as it was found. mb_migmode_restore puts the journaled original mode back, at the
 * end of an experiment or on --resume after a crash (mb_migmode_outstanding finds what a crashed
 * run left switched).
 *
 * Journal events (JSON objects, one per line, see results.h):
 *   {"event": "mig_mode_original", "gpu_uuid", "device", "original_current", "original_pending"}
 *   {"event": "mig_mode_switched", "gpu_uuid", "mode"}
 *   {"event": "mig_mode_restored", "gpu_uuid", "mode"}
 *
 * Threads: one device, one thread, as for the device layer.
 */
#ifndef MIGBENCH_MIGMODE_H
#define MIGBENCH_MIGMODE_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "migbench/device.h"
#include "migbench/experiment.h"
#include "migbench/status.h"

/* The mode a GPU had before migbench first switched it. */
struct mb_migmode_record {
    char gpu_uuid[MB_UUID_MAX];
    char device[MB_DEVICE_NAME_MAX + 32]; /* "nvml:0 (NVIDIA H100 80GB HBM3)" for messages */
    int original_current;                 /* 0 or 1 */
    int original_pending;                 /* 0 or 1 */
};

/* Hooks a caller passes; every member may be NULL. ctx is handed back unchanged. */
struct mb_migmode_hooks {
    /* True when migbench made this instance (the ownership ledger). NULL: none is migbench's. */
    bool (*owns)(void *ctx, const struct mb_mig_instance *inst);
    /* Called after migbench destroyed one of its own instances (so the ledger can drop it). */
    void (*released)(void *ctx, const struct mb_mig_instance *inst);
    /*
     * Writes the event (a cJSON object owned by the caller of the hook) durably before the mode
     * changes. A failure stops the switch before anything changed.
     */
    int (*journal)(void *ctx, const cJSON *event, struct mb_error *err);
    void *ctx;
};

/* What a switch to `target` will do. */
struct mb_migmode_plan {
    struct mb_migmode_record rec; /* the GPU and the mode found now */
    int target;                   /* 0 or 1 */
    bool needed;                  /* false: the GPU already is (and stays) in target mode */
    size_t n_owned;               /* migbench's own instances that go first */
};

/*
 * Checks that dev can be switched to MIG mode `target` (0 or 1) now and fills out. MB_EBUSY when
 * compute processes run on it (err lists their PIDs) or MIG instances exist that hooks->owns does
 * not claim (err lists them); MB_EUNSUPPORTED when the device cannot change MIG mode; device
 * errors as the device layer reports them. Changes nothing.
 */
int mb_migmode_plan(struct mb_device *dev, int target, const struct mb_migmode_hooks *hooks,
                    struct mb_migmode_plan *out, struct mb_error *err);

/* One line, no newline, of what mb_migmode_switch will do with plan. */
void mb_migmode_describe(const struct mb_migmode_plan *plan, char *buf, size_t cap);

/*
 * Carries out plan: plans again (the GPU may have changed since), journals "mig_mode_original"
 * (unless journal_original is false: the original is already journaled) and then
 * "mig_mode_switched", destroys migbench's own instances, switches and verifies. On a refused
 * activation (MB_EBUSY, MB_ERESET_REQUIRED) the original pending mode is staged again and err says
 * what the user must do. A plan that is not needed succeeds without touching the device.
 */
int mb_migmode_switch(struct mb_device *dev, const struct mb_migmode_plan *plan,
                      bool journal_original, const struct mb_migmode_hooks *hooks,
                      struct mb_error *err);

/*
 * Puts the GPU back in rec's original mode (current, then pending as it was) and journals
 * "mig_mode_restored". MB_EINVAL when dev is not rec's GPU (UUID); the plan's refusals otherwise.
 */
int mb_migmode_restore(struct mb_device *dev, const struct mb_migmode_record *rec,
                       const struct mb_migmode_hooks *hooks, struct mb_error *err);

/*
 * From journal events (mb_journal_read), the GPUs whose "mig_mode_original" has no later
 * "mig_mode_restored": what a crashed run must restore. Fills up to cap records; *n is the count
 * found. MB_ERANGE when more than cap.
 */
int mb_migmode_outstanding(const cJSON *events, struct mb_migmode_record *out, size_t cap,
                           size_t *n, struct mb_error *err);

/* A new journal event object for rec (name: one of the three above); NULL when out of memory. */
cJSON *mb_migmode_event(const char *name, const struct mb_migmode_record *rec, int mode);

/* mb_migmode_run_needs (the MIG mode a run needs) is declared in migbench/experiment.h. */

/*
 * Orders n cells into MIG-mode phases for a GPU whose mode is `current` (0 or 1) now: first the
 * cells that run in the current mode (and those that run in either), then the others, keeping
 * the order within each phase. mode_of (n entries, may be NULL) receives the mode each ordered
 * cell needs (-1 either). Returns the number of switches the order needs before the restore (0
 * or 1). MB_ENOMEM is reported as 0 switches with cells unchanged: callers pass small arrays.
 */
size_t mb_migmode_order_cells(const struct mb_experiment *exp, struct mb_cell *cells, size_t n,
                              int current, int *mode_of);

#endif
