/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The results directory's JSON side, private to the library (cJSON stays out of the public
 * headers): journal events as cJSON objects, and JSON files read and written atomically.
 * The public half is include/migbench/results.h.
 */
#ifndef MIGBENCH_RESULTS_JSON_H
#define MIGBENCH_RESULTS_JSON_H

#include "base/json_io.h"
#include "migbench/results.h"

/*
 * Appends obj (a JSON object that must hold a string "event") as one line, adding "t_unix"
 * (wall-clock seconds) when absent, and fsyncs the file before returning. obj stays owned by the
 * caller (a "t_unix" member may have been added to it). MB_EINVAL for a bad object or a line over
 * MB_JOURNAL_LINE_MAX; MB_EIO when the write or fsync fails.
 */
int mb_journal_append(struct mb_journal *j, cJSON *obj, struct mb_error *err);

/*
 * Reads every event of the journal at path into *events (a cJSON array owned by the caller,
 * cJSON_Delete). Lines that are not JSON objects with an "event" (a line torn by a crash) are
 * skipped and counted in *skipped. MB_ENOTFOUND when there is no journal; MB_EIO otherwise.
 */
int mb_journal_read(const char *path, cJSON **events, size_t *skipped, struct mb_error *err);

/*
 * From journal events (as read by mb_journal_read), the MIG instances that only an older
 * migbench's journal records ("mig_created" without a "ledger" reference and without a later
 * "mig_destroyed" of the same gpu and gi_id/ci_id; a current run's instances are the ledger's to
 * clean, mig.h) and MPS daemons ("mps_started" without
 * "mps_stopped" of the same pipe_dir) still outstanding, in creation order. MB_ERANGE when more
 * than MB_MAX_LEFTOVERS.
 */
int mb_journal_leftovers(const cJSON *events, struct mb_leftovers *out, struct mb_error *err);

/*
 * Writes obj as formatted JSON to path atomically (mb_file_write_atomic: a temporary file next to
 * it, fsync, rename over path, fsync the directory). A crash leaves either the old file or the
 * new one, never a part.
 */
int mb_results_write_json(const char *path, const cJSON *obj, struct mb_error *err);

/*
 * Reads a JSON file of at most max_bytes into *out (owned by the caller, cJSON_Delete).
 * MB_ENOTFOUND when absent, MB_EPARSE when not JSON, MB_EIO otherwise.
 */
int mb_results_read_json(const char *path, size_t max_bytes, cJSON **out, struct mb_error *err);

#endif
