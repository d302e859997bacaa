/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The results directory of an experiment (docs/results.md):
 *
 *   results/<experiment>/journal.jsonl         append-only event log, fsync'd line by line
 *   results/<experiment>/<run>/<rep>/cell.json  one finished cell, written atomically
 *
 * The journal records every MPS daemon a run starts before the run goes on, so that a later
 * `--resume` can stop exactly what a dead run left behind. MIG instances have one record, the
 * ledger of mig.h; the journal's MIG events only name it (and are read for cleanup only when an
 * older migbench wrote them without that reference).
 *
 * Threads: a struct mb_journal may be shared by threads (the workers of a multi-GPU run): each
 * mb_journal_append writes and fsyncs its line whole, under the journal's lock.
 */
#ifndef MIGBENCH_RESULTS_H
#define MIGBENCH_RESULTS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "migbench/catalog.h"
#include "migbench/status.h"

#define MB_RESULTS_SCHEMA 1
#define MB_JOURNAL_LINE_MAX (64 * 1024)
#define MB_JOURNAL_MAX_BYTES (64L * 1024 * 1024)

struct mb_journal;

/*
 * Opens (creating, mode 0644) the journal file at path for appending. When the file ends in a
 * torn line (a crash mid-write), a newline is written first so that the next event starts on a
 * line of its own. The journal is locked (flock) until closed: a second open of the same file,
 * from this or another process, fails with MB_EBUSY. *out is owned by the caller
 * (mb_journal_close). MB_EIO on other failures.
 */
int mb_journal_open(const char *path, struct mb_journal **out, struct mb_error *err);

/*
 * Opens the journal at path shared with other invocations that each run a selection of the same
 * experiment's cells (Slurm array tasks, several shells): the file is locked shared (LOCK_SH)
 * until closed and every append is serialised on "<path>.lock", so lines never interleave. Fails
 * with MB_EBUSY while an owner (mb_journal_open) holds it, and makes an owner's open fail while
 * held.
 */
int mb_journal_open_shared(const char *path, struct mb_journal **out, struct mb_error *err);

/*
 * Claims the cell <dir>/<run>/<rep> for this process: an exclusive lock on
 * "<dir>/<run>/<rep>.claim", held on *fd until mb_results_cell_release. MB_EBUSY when another
 * invocation holds it (the cell is running there); MB_EIO otherwise.
 */
int mb_results_cell_claim(const char *dir, const char *run, unsigned rep, int *fd,
                          struct mb_error *err);

/* Releases a claim from mb_results_cell_claim; fd < 0 is a no-op. */
void mb_results_cell_release(int fd);

/* Closes a journal; NULL is a no-op. */
void mb_journal_close(struct mb_journal *j);

/* A MIG instance a run created and did not record as destroyed. */
struct mb_leftover_mig {
    char gpu_uuid[96];
    unsigned gi_id;
    bool has_ci;
    unsigned ci_id;
    char profile[MB_PROFILE_NAME_MAX];
    struct mb_placement placement;
};

/* An MPS control daemon a run started and did not record as stopped. */
struct mb_leftover_mps {
    long pid; /* -1 when unknown */
    char pipe_dir[1024];
    char log_dir[1024];
};

#define MB_MAX_LEFTOVERS 64

struct mb_leftovers {
    size_t n_mig;
    struct mb_leftover_mig mig[MB_MAX_LEFTOVERS];
    size_t n_mps;
    struct mb_leftover_mps mps[MB_MAX_LEFTOVERS];
};

/* Creates directory path and its parents with mode (existing directories are fine). */
int mb_results_mkdirs(const char *path, mode_t mode, struct mb_error *err);

/* Writes "<dir>/<run>/<rep>" into out (cap bytes); MB_ERANGE when too long. */
int mb_results_cell_dir(const char *dir, const char *run, unsigned rep, char *out, size_t cap,
                        struct mb_error *err);

/* True when "<dir>/<run>/<rep>/cell.json" exists (the cell finished, failed or not). */
bool mb_results_cell_done(const char *dir, const char *run, unsigned rep);

#endif
