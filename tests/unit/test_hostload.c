/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Outside load from fake /proc trees (base/hostload.c): steal, other processes' CPU time (busy
 * less migbench and its descendants, found through each process's ppid) and the load average,
 * with the "quiet" and "loaded" verdicts at their stated thresholds. Nothing here reads the
 * machine's own /proc, so the machine's load cannot change a result.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "migbench/hostload.h"

static char root[64];

static void put(const char *rel, const char *text)
{
    char p[256];
    snprintf(p, sizeof(p), "%s/%s", root, rel);
    char *slash = strrchr(p, '/');
    *slash = '\0';
    mkdir(p, 0755);
    *slash = '/';
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* A process's stat line: pid (comm) state ppid ... utime stime cutime cstime. */
static void put_proc(int pid, int ppid, unsigned ticks)
{
    char rel[64], text[256];
    snprintf(rel, sizeof(rel), "%d/stat", pid);
    snprintf(text, sizeof(text), "%d (a (b) c) S %d 1 1 0 -1 0 0 0 0 0 %u 0 0 0 20 0 1 0 100 0 0\n",
             pid, ppid, ticks);
    put(rel, text);
}

/* The "cpu" line: user nice system idle iowait irq softirq steal, and two cpuN lines. */
static void put_stat(unsigned user, unsigned idle, unsigned steal)
{
    char text[256];
    snprintf(text, sizeof(text),
             "cpu  %u 0 0 %u 0 0 0 %u 0 0\ncpu0 0 0 0 0 0 0 0 0 0 0\ncpu1 0 0 0 0 0 0 0 0 0 0\n"
             "intr 0\n",
             user, idle, steal);
    put("stat", text);
}

static int setup(void **state)
{
    (void)state;
    snprintf(root, sizeof(root), "/tmp/mb-hostload-XXXXXX");
    return mkdtemp(root) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    /* The tree is this test's own scratch directory (mkdtemp above). */
    snprintf(cmd, sizeof(cmd), "%s/stat", root);
    unlink(cmd);
    snprintf(cmd, sizeof(cmd), "%s/loadavg", root);
    unlink(cmd);
    static const int pids[] = {100, 200, 300, 400, 500, 600};
    for (size_t i = 0; i < sizeof(pids) / sizeof(pids[0]); i++) {
        snprintf(cmd, sizeof(cmd), "%s/%d/stat", root, pids[i]);
        unlink(cmd);
        snprintf(cmd, sizeof(cmd), "%s/%d", root, pids[i]);
        rmdir(cmd);
    }
    return rmdir(root);
}

/* migbench is 100; its job 200 and the job's worker 300 are ours; 400, 500 and 600 are someone
 * else's (500 and 600 never change: no CPU time in any window). */
static void snap(unsigned user, unsigned idle, unsigned steal, unsigned ours_each, unsigned other,
                 const char *loadavg, struct mb_hostload_snap *s)
{
    put_stat(user, idle, steal);
    put("loadavg", loadavg);
    put_proc(100, 1, ours_each);
    put_proc(200, 100, ours_each);
    put_proc(300, 200, ours_each);
    put_proc(400, 1, other);
    /* A damaged tree (each the other's parent) must neither hang the walk nor count as ours. */
    put_proc(500, 600, 7);
    put_proc(600, 500, 7);
    mb_hostload_snap(root, 100, s);
}

static void test_quiet(void **state)
{
    (void)state;
    struct mb_hostload_snap a, b;
    struct mb_hostload w;
    snap(1000, 5000, 0, 100, 50, "1.00 0.5 0.2 2/100 999\n", &a);
    assert_true(a.stat_ok && a.load_ok && a.ours_ok);
    assert_int_equal(a.cpus, 2);
    assert_int_equal(a.ours, 300);
    /* 200 ticks: 150 busy, all of it ours (3 processes x 50), 50 idle, no steal. */
    snap(1150, 5050, 0, 150, 50, "1.50 0.5 0.2 2/100 999\n", &b);
    mb_hostload_window(&a, &b, 2, &w);
    assert_true(w.verdict_ok && w.steal_ok && w.other_ok && w.load_ok);
    assert_false(w.loaded);
    assert_string_equal(w.why, "");
    assert_float_equal(w.steal_pct, 0, 1e-9);
    assert_float_equal(w.other_pct, 0, 1e-9);
    assert_float_equal(w.load1, 1.5, 1e-9);
}

static void test_loaded_by_other_processes(void **state)
{
    (void)state;
    struct mb_hostload_snap a, b;
    struct mb_hostload w;
    snap(1000, 5000, 0, 100, 50, "1.00 0.5 0.2 2/100 999\n", &a);
    /* 200 ticks: 180 busy, 60 ours (3 x 20), 120 by process 400: 60 %. */
    snap(1180, 5020, 0, 120, 170, "2.00 0.5 0.2 2/100 999\n", &b);
    mb_hostload_window(&a, &b, 2, &w);
    assert_true(w.loaded);
    assert_float_equal(w.other_pct, 60.0, 1e-9);
    assert_non_null(strstr(w.why, "other processes used 60.0 % of the CPU time"));
    assert_null(strstr(w.why, "load average"));
}

static void test_loaded_by_steal_and_load(void **state)
{
    (void)state;
    struct mb_hostload_snap a, b;
    struct mb_hostload w;
    snap(1000, 5000, 10, 100, 50, "0.50 0.5 0.2 2/100 999\n", &a);
    /* 200 ticks: 20 stolen (10 %), 80 idle, 100 busy: 90 ours (3 x 30), 10 (5 %) by process
     * 400, under its threshold; load 5 with 1 job core of 2. */
    snap(1100, 5080, 30, 130, 60, "5.00 0.5 0.2 2/100 999\n", &b);
    mb_hostload_window(&a, &b, 1, &w);
    assert_true(w.loaded);
    assert_float_equal(w.steal_pct, 10.0, 1e-9);
    assert_float_equal(w.other_pct, 5.0, 1e-9);
    assert_null(strstr(w.why, "other processes"));
    assert_non_null(strstr(w.why, "CPU steal 10.0 %"));
    assert_non_null(strstr(w.why, "load average 5.00 with the jobs given 1 core(s) of 2"));
    /* Just under each threshold: 4 % steal, load 2.9 with 1 core of 2. */
    snap(1000, 5000, 10, 100, 50, "0.50 0.5 0.2 2/100 999\n", &a);
    snap(1100, 5092, 18, 132, 50, "2.90 0.5 0.2 2/100 999\n", &b);
    mb_hostload_window(&a, &b, 1, &w);
    assert_float_equal(w.steal_pct, 4.0, 1e-9);
    assert_false(w.loaded);
}

static void test_unmeasured(void **state)
{
    (void)state;
    struct mb_hostload_snap a, b;
    struct mb_hostload w;
    mb_hostload_snap("/nonexistent-proc-root", 100, &a);
    assert_false(a.stat_ok || a.load_ok || a.ours_ok);
    mb_hostload_window(&a, &a, 2, &w);
    assert_false(w.verdict_ok || w.steal_ok || w.other_ok || w.load_ok);
    assert_false(w.loaded);
    /* The same stat twice (no time passed in its ticks): no steal or other figure. */
    snap(1000, 5000, 0, 100, 50, "9.00 0.5 0.2 2/100 999\n", &b);
    mb_hostload_window(&b, &b, 1, &w);
    assert_false(w.steal_ok || w.other_ok);
    assert_true(w.load_ok && w.verdict_ok && w.loaded); /* 9 - 1 >= 2 CPUs */
    /* Without the jobs' cores the load average is not judged. */
    mb_hostload_window(&b, &b, 0, &w);
    assert_false(w.verdict_ok || w.loaded);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quiet),
        cmocka_unit_test(test_loaded_by_other_processes),
        cmocka_unit_test(test_loaded_by_steal_and_load),
        cmocka_unit_test(test_unmeasured),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
