/* SPDX-License-Identifier: Apache-2.0 */
/* The Prometheus exposition writer: grouping, HELP/TYPE once, escaping, refusals, atomic write. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "migbench/fileio.h"
#include "migbench/prom.h"

static size_t count(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p++)
        n++;
    return n;
}

static void test_families_grouped(void **state)
{
    (void)state;
    struct mb_prom *p = NULL;
    assert_int_equal(mb_prom_create(&p, NULL), MB_OK);
    struct mb_prom_label a[] = {{"gpu", "0"}};
    struct mb_prom_label b[] = {{"gpu", "1"}};
    assert_int_equal(mb_prom_add(p, "x_watts", MB_PROM_GAUGE, "Power.", a, 1, 70, NULL), MB_OK);
    assert_int_equal(mb_prom_add(p, "y_total", MB_PROM_COUNTER, "Count.", NULL, 0, 1.5, NULL),
                     MB_OK);
    assert_int_equal(mb_prom_add(p, "x_watts", MB_PROM_GAUGE, "Power.", b, 1, 0.1, NULL), MB_OK);
    char *text = NULL;
    assert_int_equal(mb_prom_text(p, &text, NULL, NULL), MB_OK);
    assert_string_equal(text, "# HELP x_watts Power.\n"
                              "# TYPE x_watts gauge\n"
                              "x_watts{gpu=\"0\"} 70\n"
                              "x_watts{gpu=\"1\"} 0.1\n"
                              "# HELP y_total Count.\n"
                              "# TYPE y_total counter\n"
                              "y_total 1.5\n");
    free(text);
    /* reset keeps nothing */
    mb_prom_reset(p);
    assert_int_equal(mb_prom_text(p, &text, NULL, NULL), MB_OK);
    assert_string_equal(text, "");
    free(text);
    mb_prom_destroy(p);
    mb_prom_destroy(NULL);
}

static void test_escaping_and_numbers(void **state)
{
    (void)state;
    struct mb_prom *p = NULL;
    assert_int_equal(mb_prom_create(&p, NULL), MB_OK);
    struct mb_prom_label l[] = {{"job", "a\"b\\c\nd"}};
    assert_int_equal(mb_prom_add(p, "j", MB_PROM_GAUGE, "Line\nbreak \\ here", l, 1, 0.025, NULL),
                     MB_OK);
    assert_int_equal(mb_prom_add(p, "k", MB_PROM_GAUGE, "Big.", NULL, 0, 123456789012.0, NULL),
                     MB_OK);
    assert_int_equal(mb_prom_add(p, "m", MB_PROM_GAUGE, "Third.", NULL, 0, 1.0 / 3.0, NULL), MB_OK);
    char *text = NULL;
    assert_int_equal(mb_prom_text(p, &text, NULL, NULL), MB_OK);
    assert_non_null(strstr(text, "# HELP j Line\\nbreak \\\\ here\n"));
    assert_non_null(strstr(text, "j{job=\"a\\\"b\\\\c\\nd\"} 0.025\n"));
    assert_non_null(strstr(text, "k 123456789012\n"));
    /* the shortest text that reads back as the same double */
    const char *m = strstr(text, "\nm ");
    assert_non_null(m);
    assert_true(strtod(m + 3, NULL) == 1.0 / 3.0);
    free(text);
    mb_prom_destroy(p);
}

static void test_refusals(void **state)
{
    (void)state;
    struct mb_prom *p = NULL;
    struct mb_error err;
    assert_int_equal(mb_prom_create(&p, NULL), MB_OK);
    assert_int_equal(mb_prom_add(p, "9bad", MB_PROM_GAUGE, "h", NULL, 0, 1, &err), MB_EINVAL);
    assert_int_equal(mb_prom_add(p, "bad-name", MB_PROM_GAUGE, "h", NULL, 0, 1, &err), MB_EINVAL);
    struct mb_prom_label colon[] = {{"a:b", "x"}};
    assert_int_equal(mb_prom_add(p, "ok", MB_PROM_GAUGE, "h", colon, 1, 1, &err), MB_EINVAL);
    struct mb_prom_label reserved[] = {{"__name__", "x"}};
    assert_int_equal(mb_prom_add(p, "ok", MB_PROM_GAUGE, "h", reserved, 1, 1, &err), MB_EINVAL);
    struct mb_prom_label twice[] = {{"a", "x"}, {"a", "y"}};
    assert_int_equal(mb_prom_add(p, "ok", MB_PROM_GAUGE, "h", twice, 2, 1, &err), MB_EINVAL);
    /* an unknown value is left out, never written as NaN or 0 */
    assert_int_equal(mb_prom_add(p, "ok", MB_PROM_GAUGE, "h", NULL, 0, NAN, &err), MB_EINVAL);
    assert_non_null(strstr(err.msg, "not a finite number"));
    assert_int_equal(mb_prom_add(p, "ok", MB_PROM_GAUGE, "h", NULL, 0, INFINITY, &err), MB_EINVAL);
    assert_int_equal(mb_prom_add(p, "ok", MB_PROM_GAUGE, "h", NULL, 0, 1, &err), MB_OK);
    assert_int_equal(mb_prom_add(p, "ok", MB_PROM_COUNTER, "h", NULL, 0, 1, &err), MB_EINVAL);
    char *text = NULL;
    assert_int_equal(mb_prom_text(p, &text, NULL, NULL), MB_OK);
    assert_string_equal(text, "# HELP ok h\n# TYPE ok gauge\nok 1\n");
    free(text);
    mb_prom_destroy(p);
}

static void test_write_atomic(void **state)
{
    (void)state;
    char dir[] = "/tmp/mb-test-prom-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[128];
    snprintf(path, sizeof(path), "%s/m.prom", dir);
    struct mb_prom *p = NULL;
    assert_int_equal(mb_prom_create(&p, NULL), MB_OK);
    assert_int_equal(mb_prom_add(p, "a", MB_PROM_GAUGE, "h", NULL, 0, 1, NULL), MB_OK);
    assert_int_equal(mb_prom_write(p, path, NULL), MB_OK);
    mb_prom_reset(p);
    assert_int_equal(mb_prom_add(p, "b", MB_PROM_GAUGE, "h", NULL, 0, 2, NULL), MB_OK);
    assert_int_equal(mb_prom_write(p, path, NULL), MB_OK);
    char *text = NULL;
    assert_int_equal(mb_file_read(path, 4096, &text, NULL, NULL), MB_OK);
    assert_string_equal(text, "# HELP b h\n# TYPE b gauge\nb 2\n");
    assert_int_equal(count(text, "# TYPE"), 1);
    free(text);
    /* a path that cannot be written leaves an error, not a partial file */
    char bad[160];
    snprintf(bad, sizeof(bad), "%s/missing/m.prom", dir);
    struct mb_error err;
    assert_int_equal(mb_prom_write(p, bad, &err), MB_EIO);
    mb_prom_destroy(p);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_families_grouped),
        cmocka_unit_test(test_escaping_and_numbers),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_write_atomic),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
