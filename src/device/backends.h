/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Private to the device layer: the backends' operation tables and the spec-option tokenizer they
 * share (device_spec.c, below the dispatcher and the backends). Backends are listed in one static
 * array in device.c (no self-registration).
 */
#ifndef MIGBENCH_DEVICE_BACKENDS_H
#define MIGBENCH_DEVICE_BACKENDS_H

#include <stddef.h>

#include "migbench/device.h"

extern const struct mb_device_ops mb__host_ops;
extern const struct mb_device_ops mb__emu_ops;
/* Written in src/device/nvml.c; device.c lists it once that file exists (MB__HAVE_NVML). */
extern const struct mb_device_ops mb__nvml_ops;

/* Longest option key and value in a spec ("state=PATH" can be a path). */
#define MB__SPEC_KEY_MAX 32
#define MB__SPEC_VAL_MAX 1024

/*
 * Reads the next "key=value" option from *p (options are separated by ':' or ','; a piece
 * without '=' continues the previous value, so "fail=create_gi:2:noresources" is one option).
 * Returns MB_OK with key and val filled and *p advanced, MB_ENOTFOUND at the end of the string,
 * or MB_EINVAL (err names `what`, the spec) for an empty key or an over-long key or value.
 */
int mb__spec_next(const char **p, const char *what, char *key, char *val, struct mb_error *err);

/*
 * spec as messages show it: itself when short, else its head and tail around "..." (in buf), so
 * that a 5,000-character spec leaves room in the message for the reason.
 */
const char *mb__spec_short(const char *spec, char *buf, size_t cap);

/*
 * A file option's path (trace=, catalog=, state=): MB_EINVAL naming key when it exists and is not
 * a regular file (a directory, FIFO, /dev/zero, /dev/null); a missing file passes.
 */
int mb__spec_path(const char *key, const char *path, struct mb_error *err);

/* Parses a whole non-negative decimal number into *out; MB_EINVAL naming key on anything else. */
int mb__spec_u64(const char *key, const char *val, unsigned long long *out, struct mb_error *err);

/* Parses a finite decimal floating-point number; MB_EINVAL naming key on anything else. */
int mb__spec_double(const char *key, const char *val, double *out, struct mb_error *err);

/* Opens a device with an explicit ops table (what mb_device_open does after choosing one); for
 * tests of the dispatcher's checks. spec is only used in error messages. */
int mb__device_open_ops(const struct mb_device_ops *ops, const char *args, const char *spec,
                        struct mb_device **out, struct mb_error *err);

#endif
