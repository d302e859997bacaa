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

int mb__yaml_load(const char *text, size_t len, int max_depth, size_t max_nodes,
                  yaml_document_t *doc, bool *loaded, struct mb__yaml_fail *fail)
{
    *loaded = false;
    memset(fail, 0, sizeof(*fail));
    memset(doc, 0, sizeof(*doc));
    if (memchr(text, '\0', len)) {
        size_t line = 1;
        for (const char *p = text; *p; p++)
            line += *p == '\n';
        fail->line = (unsigned)(line < UINT_MAX ? line : UINT_MAX);
        snprintf(fail->msg, sizeof(fail->msg), "a NUL byte; not a YAML text file");
        return MB_EPARSE;
    }
    if (max_depth < 1)
        max_depth = 1;
    struct level *stack = calloc((size_t)max_depth, sizeof(*stack));
    yaml_parser_t parser;
    if (!stack || !yaml_parser_initialize(&parser)) {
        free(stack);
        return MB_ENOMEM;
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    int depth = 0, docs = 0;
    size_t nodes = 0;
    bool have_doc = false, done = false;
    int rc = MB_OK;
    while (!done && rc == MB_OK) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&parser, &ev)) {
            if (parser.error == YAML_MEMORY_ERROR) {
                rc = MB_ENOMEM;
                break;
            }
            rc = fail_at(fail, parser.problem_mark, "not valid YAML: %s%s%s",
                         parser.problem ? parser.problem : "syntax error",
                         parser.context ? " " : "", parser.context ? parser.context : "");
            break;
        }
        int id = 0;
        bool nested = false;
        switch (ev.type) {
        case YAML_STREAM_END_EVENT:
            done = true;
            break;
        case YAML_DOCUMENT_START_EVENT:
            if (++docs > 1) {
                rc = fail_at(fail, ev.start_mark,
                             "a second YAML document ('---'); one document per file");
                break;
            }
            if (!yaml_document_initialize(doc, NULL, NULL, NULL, 1, 1))
                rc = MB_ENOMEM;
            else
                have_doc = true;
            break;
        case YAML_ALIAS_EVENT:
            rc = fail_at(fail, ev.start_mark, "YAML aliases (*%s) are not supported",
                         (const char *)ev.data.alias.anchor);
            break;
        case YAML_SCALAR_EVENT:
            if (ev.data.scalar.length > INT_MAX) {
                rc = fail_at(fail, ev.start_mark, "a value too long");
                break;
            }
            id = yaml_document_add_scalar(doc, tag_of(ev.data.scalar.tag), ev.data.scalar.value,
                                          (int)ev.data.scalar.length, ev.data.scalar.style);
            break;
        case YAML_SEQUENCE_START_EVENT:
        case YAML_MAPPING_START_EVENT:
            if (depth >= max_depth) {
                rc = fail_at(fail, ev.start_mark, "nesting deeper than %d levels", max_depth);
                break;
            }
            nested = true;
            if (ev.type == YAML_SEQUENCE_START_EVENT)
                id = yaml_document_add_sequence(doc, tag_of(ev.data.sequence_start.tag),
                                                ev.data.sequence_start.style);
            else
                id = yaml_document_add_mapping(doc, tag_of(ev.data.mapping_start.tag),
                                               ev.data.mapping_start.style);
            break;
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT:
            if (depth > 0) /* libyaml pairs them; the check keeps the stack safe regardless */
                mb__strmap_clear(&stack[--depth].keys);
            break;
        default:
            break;
        }
        bool is_node = ev.type == YAML_SCALAR_EVENT || nested;
        if (rc == MB_OK && is_node) {
            if (!id) {
                rc = MB_ENOMEM;
            } else if (++nodes > max_nodes) {
                rc = fail_at(fail, ev.start_mark, "more than %zu YAML nodes", max_nodes);
            } else {
                set_marks(doc, id, &ev);
                rc = attach(doc, stack, depth, id, &ev, fail);
                if (rc == MB_OK && nested)
                    stack[depth++] =
                        (struct level){.id = id, .is_map = ev.type == YAML_MAPPING_START_EVENT};
            }
        }
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&parser);
    for (int i = 0; i < depth; i++)
        mb__strmap_clear(&stack[i].keys);
    free(stack);
    if (rc != MB_OK) {
        if (have_doc)
            yaml_document_delete(doc);
        memset(doc, 0, sizeof(*doc));
        return rc;
    }
    /* A stream with only "---" holds a document without a node; readers treat it as empty. */
    if (have_doc && !yaml_document_get_root_node(doc)) {
        yaml_document_delete(doc);
        memset(doc, 0, sizeof(*doc));
        have_doc = false;
    }
    *loaded = have_doc;
    return MB_OK;
}
