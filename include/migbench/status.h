/* SPDX-License-Identifier: Apache-2.0 */
/* Status codes and error detail shared by every migbench module. */
#ifndef MIGBENCH_STATUS_H
#define MIGBENCH_STATUS_H

#include <stddef.h>

#include "migbench/export.h"

/*
 * The status list is stable and append-only: a code's number never changes once released.
 * X(name, number, description).
 */
#define MB_STATUS_LIST(X)                                                                          \
    X(MB_OK, 0, "success")                                                                         \
    X(MB_EINVAL, 1, "invalid argument")                                                            \
    X(MB_ENOMEM, 2, "out of memory")                                                               \
    X(MB_EIO, 3, "input/output error")                                                             \
    X(MB_EPARSE, 4, "malformed input")                                                             \
    X(MB_ENOTFOUND, 5, "not found")                                                                \
    X(MB_EUNSUPPORTED, 6, "not supported by this device")                                          \
    X(MB_EPERM, 7, "permission denied")                                                            \
    X(MB_EBUSY, 8, "in use")                                                                       \
    X(MB_ENORESOURCES, 9, "insufficient resources")                                                \
    X(MB_ERESET_REQUIRED, 10, "a GPU reset is required")                                           \
    X(MB_ELIB, 11, "library could not be loaded")                                                  \
    X(MB_EDEVICE, 12, "device error")                                                              \
    X(MB_EGONE, 13, "device lost")                                                                 \
    X(MB_ETOOSHORT, 14, "window too short to measure")                                             \
    X(MB_ERANGE, 15, "value out of range")                                                         \
    X(MB_ECHILD, 16, "child process failed")                                                       \
    X(MB_ETIMEDOUT, 17, "timed out")                                                               \
    X(MB_EINTR, 18, "interrupted")                                                                 \
    X(MB_ESTATE, 19, "operation not valid in the current state")                                   \
    X(MB_EINFEASIBLE, 20, "no feasible solution")

enum mb_status {
#define MB__STATUS_ENUM(name, num, desc) name = num,
    MB_STATUS_LIST(MB__STATUS_ENUM)
#undef MB__STATUS_ENUM
};

/* Returns a static, never-NULL description of status s ("unknown status" for unknown codes). */
MB_API const char *mb_status_str(int s);

/* Returns the symbolic name of status s ("MB_EINVAL"), or "MB_UNKNOWN". Never NULL. */
MB_API const char *mb_status_name(int s);

#define MB_ERROR_MSG_MAX 512

/*
 * Caller-owned error detail. Functions that take a `struct mb_error *` may pass NULL; when it is
 * not NULL and the function fails, `msg` holds a one-line, user-readable explanation (no trailing
 * newline) and `status` the returned code. Its layout is frozen: it is part of the exported ABI
 * (api.h), so a change is an ABI break (docs/api.md).
 */
struct mb_error {
    int status;
    char msg[MB_ERROR_MSG_MAX];
};

/* Clears err (no-op on NULL). */
MB_API void mb_error_clear(struct mb_error *err);

/*
 * Records status and a printf-style message in err (no-op on NULL) and returns status, so that a
 * caller can write `return mb_error_set(err, MB_EINVAL, "bad %s", x);`. A message longer than
 * MB_ERROR_MSG_MAX - 1 keeps its head and its tail (the reason) around " ... ".
 */
int mb_error_set(struct mb_error *err, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/*
 * Prefixes err's existing message with a printf-style context ("file.yaml:3: " + old message),
 * shortened as mb_error_set shortens. Returns err's status; no-op returning MB_OK on NULL.
 */
int mb_error_prefix(struct mb_error *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/*
 * Changes the status recorded in err (if not NULL) to status, keeping its message, and returns
 * status: for a caller whose contract reports a callee's failure under another code.
 */
int mb_error_restatus(struct mb_error *err, int status);

#endif
