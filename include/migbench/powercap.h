/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The power-limit restore ledger. migbench changes a GPU's power limit only through here, and
 * every change is recorded BEFORE it is made: one record per GPU (a small JSON file, replaced
 * atomically) holding the GPU's UUID, the limit it had before migbench touched it (the original),
 * the limit asked for, and the owner (pid, the pid's start time, the boot id, the time).
 *
 * The original limit comes back at the end of each cell (mb_powercap_restore), on SIGINT/SIGTERM
 * (the caller's interrupt path calls mb_powercap_restore) and, after a crash, at the next start
 * (mb_powercap_recover: a record whose owner is dead is restored). A GPU without a record is
 * never touched. A limit that someone else changed after migbench set it is left alone (and
 * reported), and a record from an earlier boot is dropped without touching the GPU, because the
 * driver reloaded its default limit at boot.
 *
 * Where the limit cannot be set by this user, a site may name a privileged helper (mb_powercap's
 * `helper`): migbench runs it as the argv vector {helper, "set", GPU-UUID, LIMIT_MW}, never
 * through a shell, and reads the limit back.
 *
 * Threads: one thread per GPU; two processes are kept apart by the record's owner.
 */
#ifndef MIGBENCH_POWERCAP_H
#define MIGBENCH_POWERCAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "migbench/device.h"
#include "migbench/status.h"

#define MB_POWERCAP_PATH_MAX 1024

/* One GPU's record. */
struct mb_powercap_record {
    char uuid[MB_UUID_MAX];
    uint32_t original_mw; /* the limit before migbench changed it */
    uint32_t set_mw;      /* the limit migbench asked for last */
    uint32_t prev_mw;     /* the limit migbench had set before that (0: none): a crash between the
                             record and the change leaves the GPU at this one, still migbench's */
    long pid;             /* the owner */
    unsigned long long pid_start; /* the owner's start time (clock ticks since boot) */
    char boot_id[40];
    long long t_unix_s; /* when the record was written */
};

/* Where to keep a GPU's record and how to change its limit. Borrowed pointers. */
struct mb_powercap {
    struct mb_device *dev;
    const char *ledger_path; /* the record file of this GPU (mb_powercap_ledger_path) */
    const char *helper;      /* NULL or "": set through the device; else the helper's path */
};

/* What a restore or a recovery found and did. */
enum mb_powercap_outcome {
    MB_PC_NONE = 0,  /* no record: migbench had not changed this GPU; nothing touched */
    MB_PC_RESTORED,  /* the original limit was set again; record removed */
    MB_PC_UNCHANGED, /* the limit already was the original; record removed */
    MB_PC_FOREIGN,   /* someone else changed the limit since; left alone, record removed */
    MB_PC_STALE,     /* the record is from an earlier boot; dropped, GPU not touched */
    MB_PC_HELD,      /* another live migbench owns the record; nothing touched */
};

/* "none", "restored", "unchanged", "foreign", "stale", "held". */
const char *mb_powercap_outcome_str(enum mb_powercap_outcome o);

/*
 * The record file of a GPU: for an emulated GPU with a state file ("emu:...:state=PATH"),
 * PATH.powercap.json, beside the GPU it describes; for any other GPU,
 * STATE_DIR/powercap-UUID.json (state_dir NULL: /var/lib/migbench). MB_EUNSUPPORTED for an
 * emulated GPU without a state file (its limit lives in one process and cannot be shared with the
 * meter or outlive a crash); MB_ERANGE when the path does not fit in cap.
 */
int mb_powercap_ledger_path(const char *device_spec, const char *uuid, const char *state_dir,
                            char *out, size_t cap, struct mb_error *err);

/*
 * Sets the limit to limit_mw after recording the original: the first change of a GPU records its
 * limit now as the original; a later change by the same owner keeps that original. A record left
 * by a dead owner is recovered first. *enforced_mw (may be NULL) gets the enforced limit read
 * back. MB_EBUSY when another live migbench holds the GPU's record; MB_ERANGE / MB_EPERM /
 * MB_EUNSUPPORTED from the device (or the helper), in which case a record this call created is
 * removed again and nothing changed.
 */
int mb_powercap_set(const struct mb_powercap *pc, uint32_t limit_mw, uint32_t *enforced_mw,
                    struct mb_error *err);

/*
 * Puts the original limit back when this process (or a dead one) owns the record, and removes
 * the record; see the outcomes. Safe to call when nothing was set (MB_PC_NONE). On a device error
 * the record stays, so that a later start tries again.
 */
int mb_powercap_restore(const struct mb_powercap *pc, enum mb_powercap_outcome *out,
                        struct mb_error *err);

/*
 * At start: restores a record whose owner is dead (a crashed run); a record of a live owner is
 * left (MB_PC_HELD), one from an earlier boot dropped (MB_PC_STALE).
 */
int mb_powercap_recover(const struct mb_powercap *pc, enum mb_powercap_outcome *out,
                        struct mb_error *err);

/*
 * At the start of an experiment on dev (opened from device_spec): when the device can set its
 * limit and has a place for its record (mb_powercap_ledger_path with state_dir), writes that path
 * into ledger and recovers what a dead run left (mb_powercap_recover; *recovered says what it
 * did, may be NULL). Otherwise ledger is "" and MB_OK: the caller skips the axis
 * (mb_experiment_power_filter) and why (may be NULL, cap bytes) says why. Errors of the recovery
 * are returned (a record that cannot be restored: do not start).
 */
int mb_powercap_begin(struct mb_device *dev, const char *device_spec, const char *state_dir,
                      const char *helper, char *ledger, size_t cap, char *why, size_t why_cap,
                      enum mb_powercap_outcome *recovered, struct mb_error *err);

/* Reads a record file. MB_ENOTFOUND when there is none, MB_EPARSE naming the field when bad. */
int mb_powercap_read(const char *path, struct mb_powercap_record *out, struct mb_error *err);

/*
 * A power limit as an experiment, a --set option or `plan --power-limits` asks for it, parsed
 * once where it is written (mb_power_setting_parse) and passed as this type below that: the
 * device resolves it to mW (mb_powercap_resolve), names and messages format it
 * (mb_power_setting_format). `text` keeps the user's spelling ("250" stays "250", not "250W")
 * for the records that echo the request (cell.json's power_limit.requested, cells.tsv); nothing
 * parses it again.
 */
#define MB_POWER_SETTING_TEXT_MAX 24
enum mb_power_setting_kind {
    MB_PSET_NONE = 0, /* no limit asked for (a run without the power-limit axis) */
    MB_PSET_DEFAULT,  /* "default": the device's default limit */
    MB_PSET_PERCENT,  /* "N%": N percent of the default limit, N in (0, 100] */
    MB_PSET_WATTS,    /* "NW", "Nw" or "N": N watts, in (0, 100000) */
};
struct mb_power_setting {
    enum mb_power_setting_kind kind;
    double value;                         /* PERCENT: the percentage; WATTS: the watts; else 0 */
    char text[MB_POWER_SETTING_TEXT_MAX]; /* as written; "" for MB_PSET_NONE */
};

/*
 * Parses "default", "N%", "NW"/"Nw" or "N" (watts). MB_EINVAL naming the text when it is none of
 * these, out of range, or longer than MB_POWER_SETTING_TEXT_MAX - 1; *out is then MB_PSET_NONE.
 */
int mb_power_setting_parse(const char *text, struct mb_power_setting *out, struct mb_error *err);

/* How mb_power_setting_format writes a setting. */
enum mb_power_setting_style {
    MB_PSET_CANONICAL, /* "default", "80%", "250W", "212.5W"; "" for none */
    MB_PSET_SLUG,      /* for a run name: "default", "80pct", "250W"; "default" for none */
};
void mb_power_setting_format(const struct mb_power_setting *s, enum mb_power_setting_style style,
                             char *out, size_t cap);

/* Whether two settings ask for the same limit ("250" and "250W" do). */
bool mb_power_setting_same(const struct mb_power_setting *a, const struct mb_power_setting *b);

/*
 * Resolves a setting against a device's limit range: default -> default_mw; N% -> N% of
 * default_mw; watts -> mW. MB_ERANGE (naming the range) outside [min_mw, max_mw];
 * MB_EUNSUPPORTED when pl lacks the range or default; MB_EINVAL for MB_PSET_NONE.
 */
int mb_powercap_resolve(const struct mb_power_setting *s, const struct mb_power_limit *pl,
                        uint32_t *out_mw, struct mb_error *err);

#endif
