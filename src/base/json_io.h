/* SPDX-License-Identifier: Apache-2.0 */
/*
 * JSON through cJSON, private to the library: cJSON stays out of the public headers, and the CLI
 * gets finished documents (text) from library functions instead of cJSON trees.
 */
#ifndef MIGBENCH_JSON_IO_H
#define MIGBENCH_JSON_IO_H

#include <stddef.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

#include "migbench/status.h"

/*
 * Writes obj as formatted JSON with a final newline to path through mb_file_write_atomic.
 * Returns its statuses, or MB_ENOMEM when the text cannot be made.
 */
int mb_file_write_json_atomic(const char *path, const cJSON *obj, mode_t mode,
                              struct mb_error *err);

/*
 * Parses the len bytes at text (NUL-terminated at text[len]) as JSON into a new tree at *out that
 * the caller frees with cJSON_Delete. Refuses, with source in the message: text that is not JSON
 * ("SOURCE:LINE:COLUMN: not valid JSON"), JSON nested deeper than cJSON's limit of
 * CJSON_NESTING_LIMIT levels ("SOURCE: JSON nested deeper than 1000 levels"), and a string
 * holding \u0000, which every C string reader would silently cut short. Returns MB_OK,
 * MB_EPARSE or MB_ENOMEM; on failure *out is NULL.
 */
int mb_json_parse(const char *text, size_t len, const char *source, cJSON **out,
                  struct mb_error *err);

#endif
