/* SPDX-License-Identifier: Apache-2.0 */
/* The library's one YAML reader (src/base/yaml_read.h): the tree with lines, the typed getters and
 * their FILE:LINE: field 'F' messages, override origins, and what the tree refuses. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/yaml_read.h"

static struct mb_error err;

static struct mb__ynode *load(struct mb__yread *r, const char *text, const char *origin)
{
    *r = (struct mb__yread){.path = "t.yaml", .err = &err, .max_depth = 8, .max_nodes = 100};
    struct mb__ynode *root = NULL;
    mb_error_clear(&err);
    int rc = mb__yread_load(r, text, strlen(text), origin, &root);
    if (rc != MB_OK)
        return NULL;
    return root;
}

static void test_tree_and_getters(void **state)
{
    (void)state;
    struct mb__yread r;
    struct mb__ynode *root = load(&r,
                                  "name: job\n"
                                  "n: 12\n"
                                  "q: \"12\"\n"
                                  "f: 25%\n"
                                  "on: yes\n"
                                  "b: true\n"
                                  "list: [a, b]\n",
                                  NULL);
    assert_non_null(root);
    assert_int_equal(root->kind, MB__Y_MAP);
    assert_int_equal(root->n, 7);
    unsigned kl = 0;
    const struct mb__ynode *n = mb__ymap_get(root, "n", &kl);
    assert_int_equal(kl, 2);
    assert_int_equal(n->line, 2);
    assert_false(n->quoted);
    assert_true(mb__ymap_get(root, "q", NULL)->quoted);
    assert_null(mb__ymap_get(root, "absent", NULL));

    char s[8];
    assert_int_equal(mb__yread_string(&r, mb__ymap_get(root, "name", NULL), "name", s, sizeof(s)),
                     MB_OK);
    assert_string_equal(s, "job");
    long l;
    assert_int_equal(mb__yread_int(&r, n, "n", 0, 100, &l), MB_OK);
    assert_int_equal(l, 12);
    unsigned u;
    assert_int_equal(mb__yread_uint(&r, n, "n", 100, &u), MB_OK);
    assert_int_equal(u, 12);
    double d;
    assert_int_equal(mb__yread_fraction(&r, mb__ymap_get(root, "f", NULL), "f", &d), MB_OK);
    assert_true(d > 0.2499 && d < 0.2501);
    bool b = false;
    assert_int_equal(mb__yread_yesno(&r, mb__ymap_get(root, "on", NULL), "on", &b), MB_OK);
    assert_true(b);
    b = false;
    assert_int_equal(mb__yread_bool(&r, mb__ymap_get(root, "b", NULL), "b", &b), MB_OK);
    assert_true(b);
    const struct mb__ynode *list = mb__ymap_get(root, "list", NULL);
    assert_int_equal(list->kind, MB__Y_SEQ);
    assert_int_equal(list->n, 2);
    assert_string_equal(mb__yread_scalar(list->items[1]), "b");

    /* Errors name the file, the line and the field. */
    assert_int_equal(mb__yread_int(&r, n, "n", 0, 10, &l), MB_EPARSE);
    assert_string_equal(err.msg, "t.yaml:2: field 'n': 12 is out of range 0..10");
    assert_int_equal(mb__yread_uint(&r, mb__ymap_get(root, "q", NULL), "q", 100, &u), MB_EPARSE);
    assert_string_equal(err.msg, "t.yaml:3: field 'q': expected a whole number");
    assert_int_equal(mb__yread_bool(&r, mb__ymap_get(root, "on", NULL), "on", &b), MB_EPARSE);
    assert_string_equal(err.msg, "t.yaml:5: field 'on': 'yes' is neither true nor false");
    assert_int_equal(mb__yread_string(&r, list, "list", s, sizeof(s)), MB_EPARSE);
    assert_string_equal(err.msg, "t.yaml:7: field 'list': expected a string, got a list");
    assert_int_equal(mb__yread_string(&r, mb__ymap_get(root, "name", NULL), "name", s, 3),
                     MB_EPARSE);
    assert_string_equal(err.msg, "t.yaml:1: field 'name': longer than 2 characters");
    mb__ynode_free(root);
}

static void test_refusals_and_origin(void **state)
{
    (void)state;
    struct mb__yread r;
    assert_null(load(&r, "a: 1\nb: 2\na: 3\n", NULL));
    assert_string_equal(err.msg, "t.yaml:3: duplicate key 'a' (first on line 1)");
    assert_null(load(&r, "a: [[[[[[[[[[1]]]]]]]]]]\n", NULL));
    assert_non_null(strstr(err.msg, "t.yaml:1"));
    /* An empty document is no tree and no error. */
    struct mb__ynode *root = load(&r, "", NULL);
    assert_null(root);
    assert_int_equal(err.status, 0);
    /* A node made from an override names the override, not a line of the file. */
    root = load(&r, "5", "repetitions=5");
    assert_non_null(root);
    long l;
    assert_int_equal(mb__yread_int(&r, root, "repetitions", 1, 3, &l), MB_EPARSE);
    assert_string_equal(err.msg,
                        "--set repetitions=5: field 'repetitions': 5 is out of range 1..3");
    mb__ynode_free(root);
}

/* The job sets' getters: argv vectors with a limit, numbers with units, non-empty text. */
static void test_jobset_getters(void **state)
{
    (void)state;
    struct mb__yread r;
    struct mb__ynode *root =
        load(&r, "cmd: [python3, train.py, -x]\nt: 2 h\ne: 1.5 kWh\nu: 3 weeks\nw: ''\n", NULL);
    assert_non_null(root);
    char *argv[4] = {0};
    size_t argc = 0;
    const struct mb__ynode *cmd = mb__ymap_get(root, "cmd", NULL);
    assert_int_equal(mb__yread_argv(&r, cmd, "cmd", 4, argv, &argc), MB_OK);
    assert_int_equal(argc, 3);
    assert_string_equal(argv[2], "-x");
    for (size_t i = 0; i < argc; i++)
        free(argv[i]);
    argc = 0;
    assert_int_equal(mb__yread_argv(&r, cmd, "cmd", 2, argv, &argc), MB_EPARSE);
    assert_string_equal(err.msg, "t.yaml:1: field 'cmd': more than 2 words");
    for (size_t i = 0; i < argc; i++)
        free(argv[i]);
    double d;
    assert_int_equal(mb__yread_seconds(&r, mb__ymap_get(root, "t", NULL), "t", &d), MB_OK);
    assert_true(d == 7200);
    assert_int_equal(mb__yread_joules(&r, mb__ymap_get(root, "e", NULL), "e", &d), MB_OK);
    assert_true(d == 5.4e6);
    assert_int_equal(mb__yread_seconds(&r, mb__ymap_get(root, "u", NULL), "u", &d), MB_EPARSE);
    assert_string_equal(err.msg, "t.yaml:4: field 'u': unknown unit 'weeks'");
    char s[8];
    assert_int_equal(mb__yread_text(&r, mb__ymap_get(root, "w", NULL), "w", s, sizeof(s)),
                     MB_EPARSE);
    assert_string_equal(err.msg, "t.yaml:5: field 'w': empty");
    assert_int_equal(mb__yread_number_min(&r, mb__ymap_get(root, "t", NULL), "t", 0, &d),
                     MB_EPARSE);
    assert_string_equal(err.msg, "t.yaml:2: field 't': expected a number");
    /* No node at all: the message says line 0. */
    assert_int_equal(mb__yread_failn(&r, NULL, "(top)", "expected a mapping"), MB_EPARSE);
    assert_string_equal(err.msg, "t.yaml:0: field '(top)': expected a mapping");
    mb__ynode_free(root);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tree_and_getters),
        cmocka_unit_test(test_refusals_and_origin),
        cmocka_unit_test(test_jobset_getters),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
