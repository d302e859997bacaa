/* SPDX-License-Identifier: Apache-2.0 */
/* Internal pieces of experiment.c exposed for its unit tests. */
#ifndef MIGBENCH_EXPERIMENT_INTERNAL_H
#define MIGBENCH_EXPERIMENT_INTERNAL_H

#include <stddef.h>

#include "migbench/status.h"

/*
 * mb_experiment_resolve_python with the fallback interpreter (after `python3` on path_env) and
 * the per-candidate time limit given, so that tests can use fake interpreters.
 */
int mb__experiment_resolve_python(const char *spec, const char *path_env, const char *fallback,
                                  int timeout_s, char *out, size_t cap, struct mb_error *err);

#endif
