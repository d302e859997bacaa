/* SPDX-License-Identifier: Apache-2.0 */
/* Atomic writes and bounded reads. Starts threads (MB_TEST_THREADS): two writers race on a path. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "migbench/clock.h"
#include "migbench/fileio.h"

static char dir[64];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof(dir), "/tmp/mb-test-fileio-XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    char p[512];
    for (struct dirent *e; (e = readdir(d));) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
        if (unlink(p) != 0)
            rmdir(p);
    }
    closedir(d);
    return rmdir(dir);
}

/* How many entries the test directory holds: a temporary file left behind shows here. */
static int entries(void)
{
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    if (d)
        closedir(d);
    return n;
}

static void test_write_then_read(void **state)
{
    (void)state;
    char path[128];
    snprintf(path, sizeof(path), "%s/a.json", dir);
    struct mb_error err;
    mb_error_clear(&err);
    assert_int_equal(mb_file_write_atomic(path, "first\n", 6, 0644, &err), MB_OK);
    assert_int_equal(mb_file_write_atomic(path, "second", 6, 0644, &err), MB_OK);
    char *text = NULL;
    size_t len = 99;
    assert_int_equal(mb_file_read(path, 100, &text, &len, &err), MB_OK);
    assert_string_equal(text, "second");
    assert_int_equal(len, 6);
    free(text);
    assert_int_equal(entries(), 1);

    /* An empty file is a file, and the length out-param may be NULL. */
    assert_int_equal(mb_file_write_atomic(path, "", 0, 0644, &err), MB_OK);
    assert_int_equal(mb_file_read(path, 100, &text, NULL, &err), MB_OK);
    assert_string_equal(text, "");
    free(text);
    unlink(path);
}

static void test_mode_and_umask(void **state)
{
    (void)state;
    char path[128];
    snprintf(path, sizeof(path), "%s/m", dir);
    mode_t old = umask(027);
    assert_int_equal(mb_file_write_atomic(path, "x", 1, 0666, NULL), MB_OK);
    umask(old);
    struct stat sb;
    assert_int_equal(stat(path, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0640);
    unlink(path);
}

static void test_write_failures_leave_nothing(void **state)
{
    (void)state;
    struct mb_error err;
    char path[128];
    /* The directory does not exist: nothing can be created. */
    snprintf(path, sizeof(path), "%s/no/such/f", dir);
    mb_error_clear(&err);
    assert_int_equal(mb_file_write_atomic(path, "x", 1, 0644, &err), MB_EIO);
    assert_non_null(strstr(err.msg, path));
    /* The target is a non-empty directory: the rename fails and the temporary file goes. */
    snprintf(path, sizeof(path), "%s/d", dir);
    assert_int_equal(mkdir(path, 0755), 0);
    char inner[160];
    snprintf(inner, sizeof(inner), "%s/keep", path);
    assert_int_equal(mb_file_write_atomic(inner, "k", 1, 0644, NULL), MB_OK);
    mb_error_clear(&err);
    assert_int_equal(mb_file_write_atomic(path, "x", 1, 0644, &err), MB_EIO);
    assert_non_null(strstr(err.msg, "cannot rename"));
    assert_int_equal(entries(), 1);
    unlink(inner);
    rmdir(path);
    /* A path longer than the limit is refused before anything is created. */
    char *longp = malloc(5000);
    assert_non_null(longp);
    memset(longp, 'a', 4999);
    longp[4999] = '\0';
    assert_int_equal(mb_file_write_atomic(longp, "x", 1, 0644, NULL), MB_ERANGE);
    free(longp);
    assert_int_equal(entries(), 0);
}

static void test_read_limits(void **state)
{
    (void)state;
    struct mb_error err;
    char path[128];
    char *text = (char *)1;
    snprintf(path, sizeof(path), "%s/missing", dir);
    mb_error_clear(&err);
    assert_int_equal(mb_file_read(path, 10, &text, NULL, &err), MB_ENOTFOUND);
    assert_null(text);
    assert_non_null(strstr(err.msg, "missing: cannot open"));

    /* Larger than several read chunks, to exercise the growth, and exactly at the limit. */
    size_t big = 300000;
    char *data = malloc(big);
    assert_non_null(data);
    for (size_t i = 0; i < big; i++)
        data[i] = (char)('a' + i % 26);
    snprintf(path, sizeof(path), "%s/big", dir);
    assert_int_equal(mb_file_write_atomic(path, data, big, 0644, NULL), MB_OK);
    size_t len = 0;
    assert_int_equal(mb_file_read(path, big, &text, &len, &err), MB_OK);
    assert_int_equal(len, big);
    assert_memory_equal(text, data, big);
    assert_int_equal(text[big], '\0');
    free(text);
    /* One byte over the limit is refused, whether the limit is below or above a chunk. */
    mb_error_clear(&err);
    assert_int_equal(mb_file_read(path, big - 1, &text, &len, &err), MB_ERANGE);
    assert_null(text);
    assert_int_equal(len, 0);
    assert_non_null(strstr(err.msg, "larger than 299999 bytes"));
    assert_int_equal(mb_file_read(path, 100, &text, NULL, NULL), MB_ERANGE);
    assert_int_equal(mb_file_read(path, 0, &text, NULL, NULL), MB_ERANGE);
    assert_int_equal(mb_file_read(path, SIZE_MAX, &text, &len, NULL), MB_OK);
    assert_int_equal(len, big);
    free(text);
    free(data);
    unlink(path);
    /* A directory cannot be read as a file. */
    assert_int_equal(mb_file_read(dir, 100, &text, NULL, NULL), MB_EIO);
}

struct writer {
    const char *path;
    char fill;
    int fails;
};

static void *write_many(void *arg)
{
    struct writer *w = arg;
    char buf[4096];
    memset(buf, w->fill, sizeof(buf));
    for (int i = 0; i < 20; i++)
        if (mb_file_write_atomic(w->path, buf, sizeof(buf), 0644, NULL) != MB_OK)
            w->fails++;
    return NULL;
}

/* Two threads replacing one path: every read sees one writer's whole file, never a mix. */
static void test_concurrent_writers(void **state)
{
    (void)state;
    char path[128];
    snprintf(path, sizeof(path), "%s/race", dir);
    struct writer a = {path, 'a', 0}, b = {path, 'b', 0};
    pthread_t ta, tb;
    assert_int_equal(pthread_create(&ta, NULL, write_many, &a), 0);
    assert_int_equal(pthread_create(&tb, NULL, write_many, &b), 0);
    for (int i = 0; i < 20; i++) {
        char *text = NULL;
        size_t len = 0;
        int st = mb_file_read(path, 8192, &text, &len, NULL);
        if (st == MB_ENOTFOUND)
            continue;
        assert_int_equal(st, MB_OK);
        assert_int_equal(len, 4096);
        for (size_t k = 1; k < len; k++)
            assert_int_equal(text[k], text[0]);
        free(text);
    }
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    assert_int_equal(a.fails + b.fails, 0);
    assert_int_equal(entries(), 1);
    unlink(path);
}

static void test_clock_monotonic(void **state)
{
    (void)state;
    int64_t t0 = mb_clock_monotonic_ns();
    assert_true(t0 > 0);
    for (int i = 0; i < 1000; i++) {
        int64_t t = mb_clock_monotonic_ns();
        assert_true(t >= t0);
        t0 = t;
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_write_then_read),
        cmocka_unit_test(test_mode_and_umask),
        cmocka_unit_test(test_write_failures_leave_nothing),
        cmocka_unit_test(test_read_limits),
        cmocka_unit_test(test_concurrent_writers),
        cmocka_unit_test(test_clock_monotonic),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
