/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Where a device keeps state between processes, as the device layer reads its spec (private to
 * the library, above the backends): the records kept beside a device (the MIG ledger in mig.c,
 * the power-limit record in powercap.c) ask here instead of parsing a backend's spec options.
 */
#ifndef MIGBENCH_DEVICE_STATE_H
#define MIGBENCH_DEVICE_STATE_H

#include <stdbool.h>
#include <stddef.h>

/* Longest state-file path a spec can name. */
#define MB__STATE_PATH_MAX 1024

/*
 * Whether the spec's backend keeps a device's state in a file the spec names (an emulated GPU:
 * without "state=PATH" its state lives and dies with the process); false for real GPUs, whose
 * records are keyed by UUID.
 */
bool mb__device_state_in_file(const char *spec);

/*
 * The state file a device spec names (an emulated GPU's "state=PATH"): true with PATH in out
 * (cap bytes); false when the spec names none or the path does not fit.
 */
bool mb__device_state_file(const char *spec, char *out, size_t cap);

#endif
