/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The library's one YAML reader, private to src/: a YAML document (loaded through yaml_load's
 * bounded path) becomes a small tree of scalars, lists and mappings that keeps each node's line,
 * and typed getters read it with errors that name the file, the line and the field:
 *
 *   FILE:LINE: field 'F': message     (a node of the file)
 *   --set K=V: field 'F': message     (a node made from an override; origin is the override)
 *
 * Duplicate mapping keys, NUL characters and non-scalar keys are refused while the tree is built.
 * Used by experiment.c (experiment files), migcfg.c (mig-parted files) and plan_input.c (job
 * sets).
 */
#ifndef MIGBENCH_YAML_READ_H
#define MIGBENCH_YAML_READ_H

#include <stdbool.h>
#include <stddef.h>

#include <yaml.h>

#include "migbench/status.h"

enum mb__ykind { MB__Y_SCALAR, MB__Y_SEQ, MB__Y_MAP };

struct mb__ynode {
    enum mb__ykind kind;
    unsigned line;      /* 1-based; 0 for override values */
    const char *origin; /* NULL for the file; the override text otherwise */
    char *str;          /* scalar */
    bool quoted;        /* scalar written in quotes or as a block ("1" is text, 1 a number) */
    size_t n;
    struct mb__ynode **items; /* sequence items or mapping values */
    char **keys;              /* mapping keys */
    unsigned *key_lines;
};

/* A reader: the file's name for messages, where errors go, and the limits of the tree. */
struct mb__yread {
    const char *path;
    struct mb_error *err;
    size_t n_nodes; /* nodes built so far */
    int max_depth;
    size_t max_nodes;
};

/* Parses YAML text into a tree (origin: NULL for a file, else the override's text); an empty
 * document yields *out NULL with MB_OK. Returns MB_OK, MB_EPARSE or MB_ENOMEM. */
int mb__yread_load(struct mb__yread *r, const char *text, size_t len, const char *origin,
                   struct mb__ynode **out);
void mb__ynode_free(struct mb__ynode *n);

/* The tree of a document already loaded with mb__yaml_load (for a reader that words load errors
 * itself); a document without a root yields *out NULL with MB_OK. */
int mb__yread_tree(struct mb__yread *r, yaml_document_t *doc, struct mb__ynode **out);

/* Appends v (and key, for a mapping) to m; MB_ENOMEM without touching the reader's error. */
int mb__ynode_append(struct mb__ynode *m, const char *key, unsigned key_line, struct mb__ynode *v);

/* The value of key in mapping m (and its key's line), or NULL. */
struct mb__ynode *mb__ymap_get(const struct mb__ynode *m, const char *key, unsigned *key_line);

/* Sets the reader's error (MB_EPARSE) at line/origin, as in the header comment; field may be
 * NULL or "". Returns MB_EPARSE. */
int mb__yread_fail(struct mb__yread *r, unsigned line, const char *origin, const char *field,
                   const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* mb__yread_fail at node `at`; without a node (NULL) the message says line 0. */
int mb__yread_failn(struct mb__yread *r, const struct mb__ynode *at, const char *field,
                    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* The text of a scalar node; NULL for a list, a mapping or NULL. */
const char *mb__yread_scalar(const struct mb__ynode *n);

/* "a value", "a list" or "a mapping". */
const char *mb__ykind_word(enum mb__ykind k);

/* Typed getters: each checks n's kind and value and fails with the field named. */
int mb__yread_want(struct mb__yread *r, const struct mb__ynode *n, enum mb__ykind k,
                   const char *field, const char *what);
int mb__yread_string(struct mb__yread *r, const struct mb__ynode *n, const char *field, char *out,
                     size_t cap);
/* true or false only */
int mb__yread_bool(struct mb__yread *r, const struct mb__ynode *n, const char *field, bool *out);
int mb__yread_number(struct mb__yread *r, const struct mb__ynode *n, const char *field, double lo,
                     double hi, double *out);
/* "10%" or "0.1", within 0..1 */
int mb__yread_fraction(struct mb__yread *r, const struct mb__ynode *n, const char *field,
                       double *out);
/* An unquoted whole number 0..max ("expected a whole number"). */
int mb__yread_uint(struct mb__yread *r, const struct mb__ynode *n, const char *field, unsigned max,
                   unsigned *out);
/* YAML 1.1 booleans, unquoted: true/yes/on, false/no/off in any case. */
int mb__yread_yesno(struct mb__yread *r, const struct mb__ynode *n, const char *field, bool *out);
int mb__yread_int(struct mb__yread *r, const struct mb__ynode *n, const char *field, long lo,
                  long hi, long *out);

/* The job sets' getters (plan_input.c): a non-empty string; a number >= lo; a positive number with
 * an optional unit (s, m, min, h, d / J, kJ, MJ, Wh, kWh) scaled to seconds or joules; an argv
 * vector of at most max strings (strdup'd into argv, *argc counting them as they come). */
int mb__yread_text(struct mb__yread *r, const struct mb__ynode *n, const char *field, char *out,
                   size_t cap);
int mb__yread_number_min(struct mb__yread *r, const struct mb__ynode *n, const char *field,
                         double lo, double *out);
int mb__yread_scaled(struct mb__yread *r, const struct mb__ynode *n, const char *field,
                     const char *const *units, const double *factors, size_t n_units, double *out);
int mb__yread_seconds(struct mb__yread *r, const struct mb__ynode *n, const char *field,
                      double *out);
int mb__yread_joules(struct mb__yread *r, const struct mb__ynode *n, const char *field,
                     double *out);
int mb__yread_argv(struct mb__yread *r, const struct mb__ynode *n, const char *field, size_t max,
                   char **argv, size_t *argc);

#endif
