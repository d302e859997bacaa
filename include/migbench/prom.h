/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Prometheus text exposition for node_exporter's textfile collector: a set of samples grouped
 * into metric families, written atomically (temporary file + rename) so the collector never reads
 * half a file. Every family gets its HELP and TYPE lines once, before its samples; no sample
 * carries a timestamp (the collector stamps them at scrape time).
 *
 * Threads: one struct mb_prom is used by one thread at a time.
 */
#ifndef MIGBENCH_PROM_H
#define MIGBENCH_PROM_H

#include <stddef.h>

#include "migbench/status.h"

#define MB_PROM_MAX_LABELS 16
#define MB_PROM_MAX_FAMILIES 128
#define MB_PROM_MAX_BYTES (8u << 20) /* a textfile larger than this is refused */

/* A metric family's type. */
enum mb_prom_type {
    MB_PROM_GAUGE = 0,
    MB_PROM_COUNTER,
};

/* One label; both strings are borrowed for the duration of the call that takes them. */
struct mb_prom_label {
    const char *name;
    const char *value;
};

struct mb_prom;

/* Creates an empty exposition; *out is owned by the caller (mb_prom_destroy). MB_ENOMEM. */
int mb_prom_create(struct mb_prom **out, struct mb_error *err);

/* Frees p; NULL is a no-op. */
void mb_prom_destroy(struct mb_prom *p);

/* Removes every sample and family, keeping the memory for the next round. */
void mb_prom_reset(struct mb_prom *p);

/*
 * Adds one sample of family name (the first sample of a family fixes its type and help; a later
 * sample with another type is MB_EINVAL). Names and label names must match Prometheus' name
 * rules, label values are escaped here. A non-finite value is refused with MB_EINVAL: an unknown
 * value is left out, never written as 0 or NaN. MB_ENOMEM, MB_ERANGE past the limits above.
 */
int mb_prom_add(struct mb_prom *p, const char *name, enum mb_prom_type type, const char *help,
                const struct mb_prom_label *labels, size_t n_labels, double value,
                struct mb_error *err);

/*
 * The exposition text, families in the order of their first sample; *out (NUL-terminated) is
 * owned by the caller (free). MB_ENOMEM.
 */
int mb_prom_text(const struct mb_prom *p, char **out, size_t *len, struct mb_error *err);

/* Writes the exposition to path through mb_file_write_atomic (mode 0644). */
int mb_prom_write(const struct mb_prom *p, const char *path, struct mb_error *err);

#endif
