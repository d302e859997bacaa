/* SPDX-License-Identifier: Apache-2.0 */
/* What the experiment files (experiment*.c) share, and pieces exposed for their unit tests. */
#ifndef MIGBENCH_EXPERIMENT_INTERNAL_H
#define MIGBENCH_EXPERIMENT_INTERNAL_H

#include <stddef.h>

#include "migbench/status.h"

/* The YAML reader's bounds for experiment files, and the longest field path in a message. */
#define MB__EXP_YAML_MAX_DEPTH 32
#define MB__EXP_YAML_MAX_NODES 100000
#define MB__EXP_FIELD_MAX 160

/*
 * mb_experiment_resolve_python with the fallback interpreter (after `python3` on path_env) and
 * the per-candidate time limit given, so that tests can use fake interpreters.
 */
int mb__experiment_resolve_python(const char *spec, const char *path_env, const char *fallback,
                                  int timeout_s, char *out, size_t cap, struct mb_error *err);

#endif
