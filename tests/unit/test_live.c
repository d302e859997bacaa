/* SPDX-License-Identifier: Apache-2.0 */
/* Live status files: round trip, dead writers and temporary files ignored, a missing directory. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "migbench/live.h"

static void cell(struct mb_live_cell *c, long pid)
{
    memset(c, 0, sizeof(*c));
    c->pid = pid;
    snprintf(c->experiment, sizeof(c->experiment), "exp");
    snprintf(c->device_uuid, sizeof(c->device_uuid), "GPU-1");
    snprintf(c->run, sizeof(c->run), "mix");
    snprintf(c->mode, sizeof(c->mode), "mig");
    snprintf(c->phase, sizeof(c->phase), "window");
    c->rep = 1;
    c->cell_index = 2;
    c->n_cells = 4;
    c->window_s = 3.5;
    c->window_target_s = 10;
    c->n_jobs = 2;
    snprintf(c->jobs[0].name, sizeof(c->jobs[0].name), "a");
    snprintf(c->jobs[0].unit, sizeof(c->jobs[0].unit), "images");
    c->jobs[0].rate_valid = true;
    c->jobs[0].rate = 123.5;
    snprintf(c->jobs[1].name, sizeof(c->jobs[1].name), "b");
}

static void test_round_trip(void **state)
{
    (void)state;
    char dir[] = "/tmp/mb-test-live-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char sub[64];
    snprintf(sub, sizeof(sub), "%s/rt", dir); /* created by the writer */
    struct mb_live_cell c, out[4];
    cell(&c, (long)getpid());
    assert_int_equal(mb_live_write(sub, &c, NULL), MB_OK);
    /* a process that has exited: its file is ignored */
    pid_t child = fork();
    if (child == 0)
        _exit(0);
    assert_true(child > 0);
    assert_int_equal(waitpid(child, NULL, 0), child);
    struct mb_live_cell dead;
    cell(&dead, (long)child);
    assert_int_equal(mb_live_write(sub, &dead, NULL), MB_OK);
    /* a temporary file of a writer in progress is not a live file */
    char tmp[128];
    snprintf(tmp, sizeof(tmp), "%s/run-%ld.json.tmp.1.0", sub, (long)getpid());
    FILE *f = fopen(tmp, "w");
    assert_non_null(f);
    fputs("{", f);
    fclose(f);
    size_t n = 99;
    assert_int_equal(mb_live_scan(sub, out, 4, &n, NULL), MB_OK);
    assert_int_equal(n, 1);
    assert_int_equal(out[0].pid, (long)getpid());
    assert_string_equal(out[0].run, "mix");
    assert_string_equal(out[0].phase, "window");
    assert_string_equal(out[0].device_uuid, "GPU-1");
    assert_int_equal(out[0].rep, 1);
    assert_int_equal(out[0].cell_index, 2);
    assert_int_equal(out[0].n_cells, 4);
    assert_int_equal(out[0].n_jobs, 2);
    assert_true(out[0].jobs[0].rate_valid);
    assert_true(out[0].jobs[0].rate == 123.5);
    assert_false(out[0].jobs[1].rate_valid); /* unknown stays unknown */
    assert_false(out[0].power_valid);
    mb_live_remove(sub, (long)getpid());
    mb_live_remove(sub, (long)child);
    assert_int_equal(mb_live_scan(sub, out, 4, &n, NULL), MB_OK);
    assert_int_equal(n, 0);
    assert_int_equal(unlink(tmp), 0);
    assert_int_equal(rmdir(sub), 0);
    /* no directory: nothing running, not an error */
    assert_int_equal(mb_live_scan(sub, out, 4, &n, NULL), MB_OK);
    assert_int_equal(n, 0);
    assert_int_equal(rmdir(dir), 0);
}

static void test_dir_from_environment(void **state)
{
    (void)state;
    char buf[256];
    setenv("MIGBENCH_RUNTIME_DIR", "/x/y", 1);
    assert_int_equal(mb_live_dir(buf, sizeof(buf), NULL), MB_OK);
    assert_string_equal(buf, "/x/y");
    unsetenv("MIGBENCH_RUNTIME_DIR");
    setenv("XDG_RUNTIME_DIR", "/run/user/7", 1);
    assert_int_equal(mb_live_dir(buf, sizeof(buf), NULL), MB_OK);
    assert_string_equal(buf, "/run/user/7/migbench");
    unsetenv("XDG_RUNTIME_DIR");
    assert_int_equal(mb_live_dir(buf, sizeof(buf), NULL), MB_OK);
    char want[64];
    snprintf(want, sizeof(want), "/tmp/migbench-%lu", (unsigned long)getuid());
    assert_string_equal(buf, want);
    assert_int_equal(mb_live_dir(buf, 4, NULL), MB_ERANGE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_dir_from_environment),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
