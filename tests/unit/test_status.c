/* SPDX-License-Identifier: Apache-2.0 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "migbench/status.h"

static void test_strings(void **state)
{
    (void)state;
    assert_string_equal(mb_status_str(MB_OK), "success");
    assert_string_equal(mb_status_name(MB_EPARSE), "MB_EPARSE");
    assert_string_equal(mb_status_str(-42), "unknown status");
    assert_string_equal(mb_status_name(9999), "MB_UNKNOWN");
    /* Every code in the list has its own description. */
    for (int s = MB_OK; s <= MB_EINFEASIBLE; s++)
        assert_string_not_equal(mb_status_str(s), "unknown status");
}

static void test_error_set_and_prefix(void **state)
{
    (void)state;
    struct mb_error err;
    mb_error_clear(&err);
    assert_int_equal(err.status, MB_OK);
    assert_int_equal(mb_error_set(&err, MB_EINVAL, "field '%s' is %d", "size", 3), MB_EINVAL);
    assert_string_equal(err.msg, "field 'size' is 3");
    assert_int_equal(mb_error_prefix(&err, "%s:%d: ", "exp.yaml", 7), MB_EINVAL);
    assert_string_equal(err.msg, "exp.yaml:7: field 'size' is 3");
    /* NULL error pointers are allowed everywhere. */
    assert_int_equal(mb_error_set(NULL, MB_EIO, "x"), MB_EIO);
    assert_int_equal(mb_error_prefix(NULL, "y"), MB_OK);
    mb_error_clear(NULL);
}

static void test_error_restatus(void **state)
{
    (void)state;
    struct mb_error err;
    mb_error_set(&err, MB_ERANGE, "f: larger than 9 bytes");
    assert_int_equal(mb_error_restatus(&err, MB_EIO), MB_EIO);
    assert_int_equal(err.status, MB_EIO);
    assert_string_equal(err.msg, "f: larger than 9 bytes");
    assert_int_equal(mb_error_restatus(NULL, MB_EPARSE), MB_EPARSE);
}

static void test_error_truncates(void **state)
{
    (void)state;
    struct mb_error err;
    char big[2 * MB_ERROR_MSG_MAX];
    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    mb_error_set(&err, MB_EIO, "%s", big);
    assert_int_equal(strlen(err.msg), MB_ERROR_MSG_MAX - 1);
    mb_error_prefix(&err, "prefix: ");
    assert_int_equal(strlen(err.msg), MB_ERROR_MSG_MAX - 1);
    assert_memory_equal(err.msg, "prefix: aaa", 11);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_strings),
        cmocka_unit_test(test_error_set_and_prefix),
        cmocka_unit_test(test_error_restatus),
        cmocka_unit_test(test_error_truncates),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
