/* SPDX-License-Identifier: Apache-2.0 */
/*
 * YAML from libyaml's event API. yaml_parser_load builds the whole document before a reader can
 * look at its depth, and libyaml's scanner slows down with every open level, so a deeply nested
 * file under the size limit took minutes; here the limits stop the parser at the first event
 * past them.
 */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "migbench/status.h"
#include "base/text_internal.h"
#include "base/yaml_internal.h"

struct level {
    int id;  /* the collection's node id */
    int key; /* a mapping's key waiting for its value; 0 when none */
    bool is_map;
    struct mb__strmap keys; /* a mapping's scalar keys so far, each with its line */
};

static int fail_at(struct mb__yaml_fail *f, yaml_mark_t m, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail_at(struct mb__yaml_fail *f, yaml_mark_t m, const char *fmt, ...)
{
    f->line = (unsigned)(m.line < UINT_MAX ? m.line + 1 : UINT_MAX);
    f->column = (unsigned)(m.column < UINT_MAX ? m.column + 1 : UINT_MAX);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->msg, sizeof(f->msg), fmt, ap);
    va_end(ap);
    return MB_EPARSE;
}

static void set_marks(yaml_document_t *doc, int id, const yaml_event_t *ev)
{
    doc->nodes.start[id - 1].start_mark = ev->start_mark;
    doc->nodes.start[id - 1].end_mark = ev->end_mark;
}

/* A tag the document API accepts: the event's own, or the default for "!" and none. */
static const yaml_char_t *tag_of(const yaml_char_t *tag)
{
    if (!tag || strcmp((const char *)tag, "!") == 0)
        return NULL;
    return tag;
}

/*
 * Hangs node id (made from ev) under the innermost open collection, or makes it the root.
 * A key a mapping already has is refused here, for every reader: two 'workloads:' in a plan
 * file once made its reader write past an array sized for the first.
 */
static int attach(yaml_document_t *doc, struct level *stack, int depth, int id,
                  const yaml_event_t *ev, struct mb__yaml_fail *fail)
{
    if (depth == 0)
        return MB_OK; /* the first node added is the document's root */
    struct level *top = &stack[depth - 1];
    if (!top->is_map)
        return yaml_document_append_sequence_item(doc, top->id, id) ? MB_OK : MB_ENOMEM;
    if (!top->key) {
        if (ev->type == YAML_SCALAR_EVENT) {
            size_t line = ev->start_mark.line + 1;
            int put = mb__strmap_put(&top->keys, (const char *)ev->data.scalar.value, &line);
            if (put < 0)
                return MB_ENOMEM;
            if (put > 0)
                return fail_at(fail, ev->start_mark, "duplicate key '%.60s' (first on line %zu)",
                               (const char *)ev->data.scalar.value, line);
        }
        top->key = id;
        return MB_OK;
    }
    int key = top->key;
    top->key = 0;
    return yaml_document_append_mapping_pair(doc, top->id, key, id) ? MB_OK : MB_ENOMEM;
}

/* One load's state: the parser's position in the tree and the limits. */
struct loader {
    yaml_document_t *doc;
    struct mb__yaml_fail *fail;
    struct level *stack;
    int max_depth, depth, docs;
    size_t max_nodes, nodes;
    bool have_doc, done;
};

/* A text with a NUL byte is no YAML text file: the line of the first one. */
static int refuse_nul(const char *text, size_t len, struct mb__yaml_fail *fail)
{
    if (!memchr(text, '\0', len))
        return MB_OK;
    size_t line = 1;
    for (const char *p = text; *p; p++)
        line += *p == '\n';
    fail->line = (unsigned)(line < UINT_MAX ? line : UINT_MAX);
    snprintf(fail->msg, sizeof(fail->msg), "a NUL byte; not a YAML text file");
    return MB_EPARSE;
}

static int start_document(struct loader *ld, const yaml_event_t *ev)
{
    if (++ld->docs > 1)
        return fail_at(ld->fail, ev->start_mark,
                       "a second YAML document ('---'); one document per file");
    if (!yaml_document_initialize(ld->doc, NULL, NULL, NULL, 1, 1))
        return MB_ENOMEM;
    ld->have_doc = true;
    return MB_OK;
}

/* A node made from ev (*id; 0 when ev makes none), or the end of a collection or the stream. */
static int make_node(struct loader *ld, const yaml_event_t *ev, int *id)
{
    *id = 0;
    switch (ev->type) {
    case YAML_STREAM_END_EVENT:
        ld->done = true;
        return MB_OK;
    case YAML_DOCUMENT_START_EVENT:
        return start_document(ld, ev);
    case YAML_ALIAS_EVENT:
        return fail_at(ld->fail, ev->start_mark, "YAML aliases (*%s) are not supported",
                       (const char *)ev->data.alias.anchor);
    case YAML_SCALAR_EVENT:
        if (ev->data.scalar.length > INT_MAX)
            return fail_at(ld->fail, ev->start_mark, "a value too long");
        *id = yaml_document_add_scalar(ld->doc, tag_of(ev->data.scalar.tag), ev->data.scalar.value,
                                       (int)ev->data.scalar.length, ev->data.scalar.style);
        return *id ? MB_OK : MB_ENOMEM;
    case YAML_SEQUENCE_START_EVENT:
    case YAML_MAPPING_START_EVENT:
        if (ld->depth >= ld->max_depth)
            return fail_at(ld->fail, ev->start_mark, "nesting deeper than %d levels",
                           ld->max_depth);
        if (ev->type == YAML_SEQUENCE_START_EVENT)
            *id = yaml_document_add_sequence(ld->doc, tag_of(ev->data.sequence_start.tag),
                                             ev->data.sequence_start.style);
        else
            *id = yaml_document_add_mapping(ld->doc, tag_of(ev->data.mapping_start.tag),
                                            ev->data.mapping_start.style);
        return *id ? MB_OK : MB_ENOMEM;
    case YAML_SEQUENCE_END_EVENT:
    case YAML_MAPPING_END_EVENT:
        if (ld->depth > 0) /* libyaml pairs them; the check keeps the stack safe regardless */
            mb__strmap_clear(&ld->stack[--ld->depth].keys);
        return MB_OK;
    default:
        return MB_OK;
    }
}

/* Counts node id against the limit, hangs it in the tree and opens it when a collection. */
static int place_node(struct loader *ld, const yaml_event_t *ev, int id)
{
    if (++ld->nodes > ld->max_nodes)
        return fail_at(ld->fail, ev->start_mark, "more than %zu YAML nodes", ld->max_nodes);
    set_marks(ld->doc, id, ev);
    int rc = attach(ld->doc, ld->stack, ld->depth, id, ev, ld->fail);
    if (rc == MB_OK && ev->type != YAML_SCALAR_EVENT)
        ld->stack[ld->depth++] =
            (struct level){.id = id, .is_map = ev->type == YAML_MAPPING_START_EVENT};
    return rc;
}

/* Parses and places one event; MB_OK until the stream ends or something is refused. */
static int next_event(struct loader *ld, yaml_parser_t *parser)
{
    yaml_event_t ev;
    if (!yaml_parser_parse(parser, &ev)) {
        if (parser->error == YAML_MEMORY_ERROR)
            return MB_ENOMEM;
        return fail_at(ld->fail, parser->problem_mark, "not valid YAML: %s%s%s",
                       parser->problem ? parser->problem : "syntax error",
                       parser->context ? " " : "", parser->context ? parser->context : "");
    }
    int id;
    int rc = make_node(ld, &ev, &id);
    if (rc == MB_OK && id)
        rc = place_node(ld, &ev, id);
    yaml_event_delete(&ev);
    return rc;
}

int mb__yaml_load(const char *text, size_t len, int max_depth, size_t max_nodes,
                  yaml_document_t *doc, bool *loaded, struct mb__yaml_fail *fail)
{
    *loaded = false;
    memset(fail, 0, sizeof(*fail));
    memset(doc, 0, sizeof(*doc));
    int rc = refuse_nul(text, len, fail);
    if (rc != MB_OK)
        return rc;
    struct loader ld = {.doc = doc,
                        .fail = fail,
                        .max_depth = max_depth < 1 ? 1 : max_depth,
                        .max_nodes = max_nodes};
    ld.stack = calloc((size_t)ld.max_depth, sizeof(*ld.stack));
    yaml_parser_t parser;
    if (!ld.stack || !yaml_parser_initialize(&parser)) {
        free(ld.stack);
        return MB_ENOMEM;
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    while (!ld.done && rc == MB_OK)
        rc = next_event(&ld, &parser);
    yaml_parser_delete(&parser);
    for (int i = 0; i < ld.depth; i++)
        mb__strmap_clear(&ld.stack[i].keys);
    free(ld.stack);
    /* A stream with only "---" holds a document without a node; readers treat it as empty. */
    bool empty = rc == MB_OK && ld.have_doc && !yaml_document_get_root_node(doc);
    if (rc != MB_OK || empty) {
        if (ld.have_doc)
            yaml_document_delete(doc);
        memset(doc, 0, sizeof(*doc));
        return rc;
    }
    *loaded = ld.have_doc;
    return MB_OK;
}
