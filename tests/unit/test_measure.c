/* SPDX-License-Identifier: Apache-2.0 */
/* measure as a library call (measure.h): the command's exit status, and what each failure is. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "migbench/measure.h"
#include "migbench/proc.h"

static struct mb_measure_opts opts(char **argv)
{
    return (struct mb_measure_opts){
        .device = "emu:H100-80GB", .argv = argv, .interval_ns = 10000000, .stdout_to_stderr = true};
}

static int readies;

static int count_ready(void *ctx, const struct mb_measure_report *r, struct mb_error *err)
{
    (void)ctx;
    (void)err;
    assert_true(r->info.name[0] != '\0');
    readies++;
    return MB_OK;
}

static void test_exit_status(void **state)
{
    (void)state;
    char *argv[] = {"/bin/sh", "-c", "echo step=1 >&\"$MIGBENCH_PROGRESS_FD\"; exit 3", NULL};
    struct mb_measure_opts o = opts(argv);
    o.ready = count_ready;
    struct mb_measure_report r;
    enum mb_measure_stage stage;
    struct mb_error err;
    readies = 0;
    int rc = mb_measure_run(&o, &r, &stage, &err);
    if (rc != MB_OK)
        fail_msg("measure: %s", err.msg);
    assert_int_equal(stage, MB_MEASURE_DONE);
    assert_int_equal(r.exit_code, 3);
    assert_int_equal(readies, 1);
    assert_true(r.have_progress);
    assert_string_equal(r.unit, "steps");
    assert_true(r.wall_s >= 0);
}

static void test_failures(void **state)
{
    (void)state;
    struct mb_measure_report r;
    enum mb_measure_stage stage;
    struct mb_error err;
    char *missing[] = {"/no/such/program", NULL};
    struct mb_measure_opts o = opts(missing);
    int rc = mb_measure_run(&o, &r, &stage, &err);
    assert_int_equal(stage, MB_MEASURE_SPAWN);
    assert_int_equal(mb_proc_spawn_exit_code(rc), 127);

    char *ok[] = {"/bin/true", NULL};
    o = opts(ok);
    o.regex = "(";
    assert_int_not_equal(mb_measure_run(&o, &r, &stage, &err), MB_OK);
    assert_int_equal(stage, MB_MEASURE_USAGE);

    /* A signal before the command started ends the idle window: nothing is run. */
    volatile sig_atomic_t sig = 2;
    o = opts(ok);
    o.idle_ns = 1000000000;
    o.signal = &sig;
    assert_int_equal(mb_measure_run(&o, &r, &stage, &err), MB_EINTR);
    assert_int_equal(stage, MB_MEASURE_INTERRUPTED);
    assert_non_null(strstr(err.msg, "signal 2"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exit_status),
        cmocka_unit_test(test_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
