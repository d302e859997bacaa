/* SPDX-License-Identifier: Apache-2.0 */
/* The one YAML loading path of the library: bounded while parsing, one document only. */
#ifndef MIGBENCH_YAML_INTERNAL_H
#define MIGBENCH_YAML_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <yaml.h>

#define MB__YAML_MSG_MAX 200

/* Where and why a load failed; line and column are 1-based (0 when unknown). */
struct mb__yaml_fail {
    unsigned line;
    unsigned column;
    char msg[MB__YAML_MSG_MAX];
};

/*
 * Parses the len bytes at text as a single YAML document into *doc, building it from libyaml's
 * events so that the limits hold while parsing: more than max_depth nested collections or more
 * than max_nodes nodes stop the parser at once, whatever follows. A second document (after
 * '---'), an alias (*name) and a NUL byte are refused. On MB_OK *loaded says whether there was a
 * document (an empty stream has none); when it is true the caller owns *doc and frees it with
 * yaml_document_delete, and each node's start_mark is where its text begins. Returns MB_OK,
 * MB_EPARSE (fail says where and why) or MB_ENOMEM; on failure nothing is left to free.
 */
int mb__yaml_load(const char *text, size_t len, int max_depth, size_t max_nodes,
                  yaml_document_t *doc, bool *loaded, struct mb__yaml_fail *fail);

#endif
