/* SPDX-License-Identifier: Apache-2.0 */
/* The library's one YAML reader: a bounded tree with lines, and typed getters (see yaml_read.h). */
#include "base/yaml_read.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "migbench/num.h"
#include "base/yaml_internal.h"

void mb__ynode_free(struct mb__ynode *n)
{
    if (!n)
        return;
    free(n->str);
    for (size_t i = 0; i < n->n; i++) {
        mb__ynode_free(n->items[i]);
        if (n->keys)
            free(n->keys[i]);
    }
    free(n->items);
    free(n->keys);
    free(n->key_lines);
    free(n);
}

/* Formats "FILE:LINE: field 'F': message" (or "--set K=V: ..." for overrides). */
int mb__yread_fail(struct mb__yread *c, unsigned line, const char *origin, const char *field,
                   const char *fmt, ...)
{
    char msg[MB_ERROR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    char where[MB_ERROR_MSG_MAX];
    if (origin)
        snprintf(where, sizeof(where), "--set %s", origin);
    else if (line)
        snprintf(where, sizeof(where), "%s:%u", c->path, line);
    else
        snprintf(where, sizeof(where), "%s", c->path);
    if (field && field[0])
        return mb_error_set(c->err, MB_EPARSE, "%s: field '%s': %s", where, field, msg);
    return mb_error_set(c->err, MB_EPARSE, "%s: %s", where, msg);
}

int mb__ynode_append(struct mb__ynode *m, const char *key, unsigned key_line, struct mb__ynode *v)
{
    struct mb__ynode **items = realloc(m->items, (m->n + 1) * sizeof(*items));
    if (!items)
        return MB_ENOMEM;
    m->items = items;
    if (m->kind == MB__Y_MAP) {
        char **keys = realloc(m->keys, (m->n + 1) * sizeof(*keys));
        if (!keys)
            return MB_ENOMEM;
        m->keys = keys;
        unsigned *kl = realloc(m->key_lines, (m->n + 1) * sizeof(*kl));
        if (!kl)
            return MB_ENOMEM;
        m->key_lines = kl;
        m->keys[m->n] = strdup(key);
        if (!m->keys[m->n])
            return MB_ENOMEM;
        m->key_lines[m->n] = key_line;
    }
    m->items[m->n++] = v;
    return MB_OK;
}

struct key_ref {
    const char *key;
    size_t index;
};

static int key_ref_cmp(const void *a, const void *b)
{
    const struct key_ref *x = a, *y = b;
    int d = strcmp(x->key, y->key);
    if (d)
        return d;
    return (x->index > y->index) - (x->index < y->index);
}

/*
 * Refuses a key that appears twice in mapping m, naming the first repeat in file order. Sorting
 * keeps this O(n log n): a file of 50,000 keys took 20 s with the pairwise check.
 */
static int check_duplicates(struct mb__yread *c, const struct mb__ynode *m, const char *origin)
{
    if (m->n < 2)
        return MB_OK;
    struct key_ref *refs = malloc(m->n * sizeof(*refs));
    if (!refs)
        return mb_error_set(c->err, MB_ENOMEM, "out of memory");
    for (size_t i = 0; i < m->n; i++)
        refs[i] = (struct key_ref){m->keys[i], i};
    qsort(refs, m->n, sizeof(*refs), key_ref_cmp);
    size_t first = 0, repeat = SIZE_MAX;
    for (size_t i = 1; i < m->n; i++)
        if (strcmp(refs[i].key, refs[i - 1].key) == 0 && refs[i].index < repeat) {
            repeat = refs[i].index;
            first = refs[i - 1].index;
        }
    free(refs);
    if (repeat == SIZE_MAX)
        return MB_OK;
    /* A run of equal keys sorts by index, so refs[i - 1] may itself be a repeat: find the first. */
    for (size_t i = 0; i < first; i++)
        if (strcmp(m->keys[i], m->keys[repeat]) == 0) {
            first = i;
            break;
        }
    return mb__yread_fail(c, m->key_lines[repeat], origin, NULL,
                          "duplicate key '%s' (first on line %u)", m->keys[repeat],
                          m->key_lines[first]);
}

static int convert(struct mb__yread *c, yaml_document_t *doc, yaml_node_t *yn, const char *origin,
                   int depth, struct mb__ynode **out)
{
    *out = NULL;
    unsigned line = origin ? 0 : (unsigned)yn->start_mark.line + 1;
    if (depth > c->max_depth)
        return mb__yread_fail(c, line, origin, NULL, "nesting deeper than %d levels", c->max_depth);
    if (++c->n_nodes > c->max_nodes)
        return mb__yread_fail(c, line, origin, NULL, "more than %zu YAML nodes", c->max_nodes);
    struct mb__ynode *n = calloc(1, sizeof(*n));
    if (!n)
        return mb_error_set(c->err, MB_ENOMEM, "out of memory");
    n->line = line;
    n->origin = origin;
    int rc = MB_OK;
    switch (yn->type) {
    case YAML_SCALAR_NODE:
        n->kind = MB__Y_SCALAR;
        n->str = strndup((const char *)yn->data.scalar.value, yn->data.scalar.length);
        n->quoted = yn->data.scalar.style != YAML_PLAIN_SCALAR_STYLE &&
                    yn->data.scalar.style != YAML_ANY_SCALAR_STYLE;
        if (!n->str)
            rc = mb_error_set(c->err, MB_ENOMEM, "out of memory");
        else if (strlen(n->str) != yn->data.scalar.length)
            rc = mb__yread_fail(c, line, origin, NULL, "NUL character in a value");
        break;
    case YAML_SEQUENCE_NODE:
        n->kind = MB__Y_SEQ;
        for (yaml_node_item_t *it = yn->data.sequence.items.start;
             rc == MB_OK && it < yn->data.sequence.items.top; it++) {
            struct mb__ynode *child;
            rc = convert(c, doc, yaml_document_get_node(doc, *it), origin, depth + 1, &child);
            if (rc == MB_OK && mb__ynode_append(n, NULL, 0, child) != MB_OK) {
                mb__ynode_free(child);
                rc = mb_error_set(c->err, MB_ENOMEM, "out of memory");
            }
        }
        break;
    case YAML_MAPPING_NODE:
        n->kind = MB__Y_MAP;
        for (yaml_node_pair_t *p = yn->data.mapping.pairs.start;
             rc == MB_OK && p < yn->data.mapping.pairs.top; p++) {
            yaml_node_t *k = yaml_document_get_node(doc, p->key);
            unsigned kline = origin ? 0 : (unsigned)k->start_mark.line + 1;
            if (k->type != YAML_SCALAR_NODE) {
                rc = mb__yread_fail(c, kline, origin, NULL, "a mapping key must be a plain string");
                break;
            }
            const char *key = (const char *)k->data.scalar.value;
            struct mb__ynode *child;
            rc = convert(c, doc, yaml_document_get_node(doc, p->value), origin, depth + 1, &child);
            if (rc == MB_OK && mb__ynode_append(n, key, kline, child) != MB_OK) {
                mb__ynode_free(child);
                rc = mb_error_set(c->err, MB_ENOMEM, "out of memory");
            }
        }
        break;
    default:
        rc = mb__yread_fail(c, line, origin, NULL, "empty YAML node");
    }
    if (rc == MB_OK && n->kind == MB__Y_MAP)
        rc = check_duplicates(c, n, origin);
    if (rc != MB_OK) {
        mb__ynode_free(n);
        return rc;
    }
    *out = n;
    return MB_OK;
}

int mb__yread_tree(struct mb__yread *c, yaml_document_t *doc, struct mb__ynode **out)
{
    *out = NULL;
    yaml_node_t *root = yaml_document_get_root_node(doc);
    return root ? convert(c, doc, root, NULL, 0, out) : MB_OK;
}

/* Parses YAML text into a tree; an empty document yields NULL with MB_OK. */
int mb__yread_load(struct mb__yread *c, const char *text, size_t len, const char *origin,
                   struct mb__ynode **out)
{
    *out = NULL;
    yaml_document_t doc;
    bool loaded;
    struct mb__yaml_fail f;
    int rc = mb__yaml_load(text, len, c->max_depth, c->max_nodes, &doc, &loaded, &f);
    if (rc == MB_ENOMEM)
        return mb_error_set(c->err, MB_ENOMEM, "out of memory");
    if (rc != MB_OK)
        return mb__yread_fail(c, origin ? 0 : f.line, origin, NULL, "%s", f.msg);
    if (!loaded)
        return MB_OK;
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    if (root)
        rc = convert(c, &doc, root, origin, 0, out);
    yaml_document_delete(&doc);
    return rc;
}

struct mb__ynode *mb__ymap_get(const struct mb__ynode *m, const char *key, unsigned *key_line)
{
    if (!m || m->kind != MB__Y_MAP)
        return NULL;
    for (size_t i = 0; i < m->n; i++)
        if (strcmp(m->keys[i], key) == 0) {
            if (key_line)
                *key_line = m->key_lines[i];
            return m->items[i];
        }
    return NULL;
}

const char *mb__ykind_word(enum mb__ykind k)
{
    return k == MB__Y_SCALAR ? "a value" : k == MB__Y_SEQ ? "a list" : "a mapping";
}

int mb__yread_want(struct mb__yread *c, const struct mb__ynode *n, enum mb__ykind k,
                   const char *field, const char *what)
{
    if (n->kind != k)
        return mb__yread_fail(c, n->line, n->origin, field, "expected %s, got %s", what,
                              mb__ykind_word(n->kind));
    return MB_OK;
}

int mb__yread_string(struct mb__yread *c, const struct mb__ynode *n, const char *field, char *out,
                     size_t cap)
{
    int rc = mb__yread_want(c, n, MB__Y_SCALAR, field, "a string");
    if (rc)
        return rc;
    if (strlen(n->str) >= cap)
        return mb__yread_fail(c, n->line, n->origin, field, "longer than %zu characters", cap - 1);
    memcpy(out, n->str, strlen(n->str) + 1);
    return MB_OK;
}

int mb__yread_bool(struct mb__yread *c, const struct mb__ynode *n, const char *field, bool *out)
{
    int rc = mb__yread_want(c, n, MB__Y_SCALAR, field, "true or false");
    if (rc)
        return rc;
    if (strcmp(n->str, "true") == 0)
        *out = true;
    else if (strcmp(n->str, "false") == 0)
        *out = false;
    else
        return mb__yread_fail(c, n->line, n->origin, field, "'%s' is neither true nor false",
                              n->str);
    return MB_OK;
}

int mb__yread_number(struct mb__yread *c, const struct mb__ynode *n, const char *field, double lo,
                     double hi, double *out)
{
    int rc = mb__yread_want(c, n, MB__Y_SCALAR, field, "a number");
    if (rc)
        return rc;
    double v;
    int nrc = mb_num_parse(n->str, &v, NULL);
    if (nrc == MB_ERANGE)
        return mb__yread_fail(c, n->line, n->origin, field, "%s is out of range %g..%g", n->str, lo,
                              hi);
    if (nrc != MB_OK)
        return mb__yread_fail(c, n->line, n->origin, field, "'%s' is not a number", n->str);
    if (v < lo || v > hi)
        return mb__yread_fail(c, n->line, n->origin, field, "%s is out of range %g..%g", n->str, lo,
                              hi);
    *out = v;
    return MB_OK;
}

/* A fraction written as "10%" or "0.1", within 0..1. */
int mb__yread_fraction(struct mb__yread *c, const struct mb__ynode *n, const char *field,
                       double *out)
{
    int rc = mb__yread_want(c, n, MB__Y_SCALAR, field, "a fraction such as 10% or 0.1");
    if (rc)
        return rc;
    const char *end;
    double v;
    int nrc = mb_num_parse(n->str, &v, &end);
    bool pct = nrc == MB_OK && *end == '%' && end[1] == '\0';
    if (nrc == MB_ERANGE)
        return mb__yread_fail(c, n->line, n->origin, field, "%s is out of range 0..1 (0%%..100%%)",
                              n->str);
    if (nrc != MB_OK || (*end && !pct))
        return mb__yread_fail(c, n->line, n->origin, field,
                              "'%s' is not a fraction (write 10%% or 0.1)", n->str);
    if (pct)
        v /= 100.0;
    if (v < 0 || v > 1)
        return mb__yread_fail(c, n->line, n->origin, field, "%s is out of range 0..1 (0%%..100%%)",
                              n->str);
    *out = v;
    return MB_OK;
}

int mb__yread_int(struct mb__yread *c, const struct mb__ynode *n, const char *field, long lo,
                  long hi, long *out)
{
    int rc = mb__yread_want(c, n, MB__Y_SCALAR, field, "an integer");
    if (rc)
        return rc;
    char *end;
    errno = 0;
    long v = strtol(n->str, &end, 10);
    if (end == n->str || *end || errno)
        return mb__yread_fail(c, n->line, n->origin, field, "'%s' is not an integer", n->str);
    if (v < lo || v > hi)
        return mb__yread_fail(c, n->line, n->origin, field, "%ld is out of range %ld..%ld", v, lo,
                              hi);
    *out = v;
    return MB_OK;
}

int mb__yread_failn(struct mb__yread *c, const struct mb__ynode *at, const char *field,
                    const char *fmt, ...)
{
    char msg[MB_ERROR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (!at) /* no node at all (an empty document): line 0, as the readers always said */
        return mb_error_set(c->err, MB_EPARSE, "%s:0: %s%s%s%s", c->path, field ? "field '" : "",
                            field ? field : "", field ? "': " : "", msg);
    return mb__yread_fail(c, at->line, at->origin, field, "%s", msg);
}

const char *mb__yread_scalar(const struct mb__ynode *n)
{
    return n && n->kind == MB__Y_SCALAR ? n->str : NULL;
}

int mb__yread_uint(struct mb__yread *c, const struct mb__ynode *n, const char *field, unsigned max,
                   unsigned *out)
{
    const char *s = mb__yread_scalar(n);
    if (!s || n->quoted || !*s)
        return mb__yread_failn(c, n, field, "expected a whole number");
    for (const char *p = s; *p; p++)
        if (!isdigit((unsigned char)*p))
            return mb__yread_failn(c, n, field, "expected a whole number, got '%.40s'", s);
    errno = 0;
    unsigned long v = strtoul(s, NULL, 10);
    if (errno || v > max)
        return mb__yread_failn(c, n, field, "%.40s is out of range 0..%u", s, max);
    *out = (unsigned)v;
    return MB_OK;
}

int mb__yread_yesno(struct mb__yread *c, const struct mb__ynode *n, const char *field, bool *out)
{
    const char *s = mb__yread_scalar(n);
    static const char *const yes[] = {"true", "yes", "on"}, *const no[] = {"false", "no", "off"};
    if (s && !n->quoted)
        for (size_t i = 0; i < 3; i++) {
            if (strcasecmp(s, yes[i]) == 0) {
                *out = true;
                return MB_OK;
            }
            if (strcasecmp(s, no[i]) == 0) {
                *out = false;
                return MB_OK;
            }
        }
    return mb__yread_failn(c, n, field, "expected true or false");
}

/* ---- getters of the planner's job sets ---- */

int mb__yread_text(struct mb__yread *c, const struct mb__ynode *n, const char *field, char *out,
                   size_t cap)
{
    const char *s = mb__yread_scalar(n);
    if (!s)
        return mb__yread_failn(c, n, field, "expected a string");
    if (strlen(s) >= cap)
        return mb__yread_failn(c, n, field, "longer than %zu characters", cap - 1);
    if (!*s)
        return mb__yread_failn(c, n, field, "empty");
    memcpy(out, s, strlen(s) + 1);
    return MB_OK;
}

int mb__yread_number_min(struct mb__yread *c, const struct mb__ynode *n, const char *field,
                         double lo, double *out)
{
    const char *s = mb__yread_scalar(n);
    double v = 0;
    int nrc = s && *s ? mb_num_parse(s, &v, NULL) : MB_EINVAL;
    if (nrc == MB_ERANGE)
        return mb__yread_failn(c, n, field, "'%s': the number is out of range", s);
    if (nrc != MB_OK)
        return mb__yread_failn(c, n, field, "expected a number");
    if (v < lo)
        return mb__yread_failn(c, n, field, "must be at least %g", lo);
    *out = v;
    return MB_OK;
}

/* A number with an optional unit suffix, scaled by the unit's factor. */
int mb__yread_scaled(struct mb__yread *c, const struct mb__ynode *n, const char *field,
                     const char *const *units, const double *factors, size_t n_units, double *out)
{
    const char *s = mb__yread_scalar(n);
    if (!s)
        return mb__yread_failn(c, n, field, "expected a number");
    const char *end;
    double v;
    int nrc = mb_num_parse(s, &v, &end);
    if (nrc == MB_ERANGE)
        return mb__yread_failn(c, n, field, "'%s': the number is out of range", s);
    if (nrc != MB_OK || v <= 0)
        return mb__yread_failn(c, n, field, "'%s' is not a positive number", s);
    while (*end == ' ')
        end++;
    if (!*end) {
        *out = v;
        return MB_OK;
    }
    for (size_t i = 0; i < n_units; i++)
        if (strcmp(end, units[i]) == 0) {
            *out = v * factors[i];
            return MB_OK;
        }
    return mb__yread_failn(c, n, field, "unknown unit '%s'", end);
}

int mb__yread_seconds(struct mb__yread *c, const struct mb__ynode *n, const char *field,
                      double *out)
{
    static const char *const u[] = {"s", "m", "min", "h", "d"};
    static const double f[] = {1, 60, 60, 3600, 86400};
    return mb__yread_scaled(c, n, field, u, f, 5, out);
}

int mb__yread_joules(struct mb__yread *c, const struct mb__ynode *n, const char *field, double *out)
{
    static const char *const u[] = {"J", "kJ", "MJ", "Wh", "kWh"};
    static const double f[] = {1, 1e3, 1e6, 3600, 3.6e6};
    return mb__yread_scaled(c, n, field, u, f, 5, out);
}

int mb__yread_argv(struct mb__yread *c, const struct mb__ynode *n, const char *field, size_t max,
                   char **argv, size_t *argc)
{
    if (!n || n->kind != MB__Y_SEQ)
        return mb__yread_failn(c, n, field, "expected a list of strings (an argv vector)");
    size_t k = 0;
    for (size_t i = 0; i < n->n; i++) {
        const struct mb__ynode *e = n->items[i];
        const char *s = mb__yread_scalar(e);
        if (!s)
            return mb__yread_failn(c, e, field, "item %zu is not a string", k);
        if (k == max)
            return mb__yread_failn(c, e, field, "more than %zu words", max);
        argv[k] = strdup(s);
        if (!argv[k])
            return mb_error_set(c->err, MB_ENOMEM, "out of memory");
        *argc = ++k;
    }
    return MB_OK;
}
