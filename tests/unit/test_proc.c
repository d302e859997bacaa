/* SPDX-License-Identifier: Apache-2.0 */
/* Child processes: exit codes, exec failures, capture, bounded logs, progress pipe, stopping. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "migbench/proc.h"

#define FX(name) MB_BINARY_DIR "/fixtures/" name

struct capture {
    char out[1 << 16];
    size_t out_len;
    char prog[1 << 16];
    size_t prog_len;
    size_t err_len;
    int64_t last_t;
    int t_monotonic; /* timestamps never go backwards */
};

static void on_data(void *ctx, enum mb_proc_stream s, const char *buf, size_t n, int64_t t)
{
    struct capture *c = ctx;
    if (c->last_t && t < c->last_t)
        c->t_monotonic = 0;
    c->last_t = t;
    char *dst = s == MB_PROC_STDOUT ? c->out : s == MB_PROC_PROGRESS ? c->prog : NULL;
    size_t *len = s == MB_PROC_STDOUT ? &c->out_len : s == MB_PROC_PROGRESS ? &c->prog_len : NULL;
    if (!dst) {
        c->err_len += n;
        return;
    }
    size_t room = sizeof(c->out) - 1 - *len;
    if (n > room)
        n = room;
    memcpy(dst + *len, buf, n);
    *len += n;
    dst[*len] = '\0';
}

static int run_argv(char *const *argv, struct capture *c, struct mb_proc_spec *extra)
{
    struct mb_proc_spec spec = {0};
    if (extra)
        spec = *extra;
    spec.argv = argv;
    spec.capture = true;
    spec.tee_stdout_fd = spec.tee_stderr_fd = -1;
    spec.on_data = on_data;
    spec.ctx = c;
    spec.stdin_null = true;
    struct mb_proc *p = NULL;
    struct mb_error err;
    int rc = mb_proc_spawn(&spec, &p, &err);
    if (rc != MB_OK)
        return -rc;
    assert_int_equal(mb_proc_exit_code(p), -1);
    assert_int_equal(mb_proc_wait(p, 30000, &err), MB_OK);
    int code = mb_proc_exit_code(p);
    mb_proc_destroy(p);
    return code;
}

static void test_exit_codes(void **state)
{
    (void)state;
    static struct capture c;
    memset(&c, 0, sizeof(c));
    char *ok[] = {FX("fx_steady"), "--stdout", "--rate", "100", "--duration", "0.05", NULL};
    assert_int_equal(run_argv(ok, &c, NULL), 0);
    char *three[] = {FX("fx_steady"), "--stdout", "--duration", "0", "--exit", "3", NULL};
    assert_int_equal(run_argv(three, &c, NULL), 3);
    char *segv[] = {FX("fx_crash"), "11", NULL};
    memset(&c, 0, sizeof(c));
    assert_int_equal(run_argv(segv, &c, NULL), 128 + SIGSEGV);
    assert_non_null(strstr(c.out, "about to die"));
    assert_true(c.err_len > 0);
    /* PATH search, as execvp does it. */
    char *sh[] = {"sh", "-c", "exit 7", NULL};
    assert_int_equal(run_argv(sh, &c, NULL), 7);
}

static void test_exec_failures(void **state)
{
    (void)state;
    struct mb_error err;
    struct mb_proc *p = (struct mb_proc *)1;
    char *missing[] = {"migbench-no-such-command-xyz", NULL};
    struct mb_proc_spec spec = {.argv = missing, .tee_stdout_fd = -1, .tee_stderr_fd = -1};
    assert_int_equal(mb_proc_spawn(&spec, &p, &err), MB_ENOTFOUND);
    assert_null(p);
    assert_int_equal(mb_proc_spawn_exit_code(MB_ENOTFOUND), 127);
    assert_non_null(strstr(err.msg, "migbench-no-such-command-xyz"));

    char path[] = "/tmp/mb-test-noexec-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "#!/bin/sh\nexit 0\n", 17), 17);
    close(fd);
    chmod(path, 0644);
    char *noexec[] = {path, NULL};
    spec.argv = noexec;
    assert_int_equal(mb_proc_spawn(&spec, &p, &err), MB_EPERM);
    assert_int_equal(mb_proc_spawn_exit_code(MB_EPERM), 126);
    unlink(path);

    char *dir[] = {"/tmp", NULL};
    spec.argv = dir;
    assert_int_equal(mb_proc_spawn(&spec, &p, &err), MB_EPERM);

    char *empty[] = {NULL};
    spec.argv = empty;
    assert_int_equal(mb_proc_spawn(&spec, &p, &err), MB_EINVAL);

    /* A missing working directory is the child's setup failing, not "not found". */
    char *ok[] = {FX("fx_probe"), NULL};
    spec.argv = ok;
    spec.cwd = "/nonexistent-dir-for-mb";
    assert_int_equal(mb_proc_spawn(&spec, &p, &err), MB_ECHILD);
    assert_int_equal(mb_proc_spawn_exit_code(MB_ECHILD), 125);
}

static void test_environment_cwd_fds_affinity(void **state)
{
    (void)state;
    static struct capture c;
    memset(&c, 0, sizeof(c));
    char *env[] = {"MB_TEST_A=alpha", "HOME=/replaced", NULL};
    struct mb_cpuset cpus = {.n = 1, .cpus = {0}};
    struct mb_proc_spec spec = {.env = env, .cwd = "/", .cpus = &cpus, .progress_pipe = true};
    char *argv[] = {FX("fx_probe"), "MB_TEST_A", "HOME", MB_PROGRESS_FD_ENV, NULL};
    assert_int_equal(run_argv(argv, &c, &spec), 0);
    assert_non_null(strstr(c.out, "cwd=/\n"));
    assert_non_null(strstr(c.out, "env:MB_TEST_A=alpha\n"));
    assert_non_null(strstr(c.out, "env:HOME=/replaced\n"));
    assert_non_null(strstr(c.out, "cpus=0,\n"));
    /* The only descriptor above 2 is the progress pipe, and the variable names it. */
    const char *e = strstr(c.out, "env:" MB_PROGRESS_FD_ENV "=");
    assert_non_null(e);
    int pfd = atoi(e + strlen("env:" MB_PROGRESS_FD_ENV "="));
    assert_true(pfd > 2);
    char want[64];
    snprintf(want, sizeof(want), "fds=%d,\n", pfd);
    assert_non_null(strstr(c.out, want));

    /* Without a progress pipe the variable is absent and no descriptor leaks. */
    memset(&c, 0, sizeof(c));
    struct mb_proc_spec plain = {0};
    assert_int_equal(run_argv(argv, &c, &plain), 0);
    assert_non_null(strstr(c.out, "env:" MB_PROGRESS_FD_ENV "=(unset)"));
    assert_non_null(strstr(c.out, "fds=\n"));
}

static void test_progress_pipe(void **state)
{
    (void)state;
    static struct capture c;
    memset(&c, 0, sizeof(c));
    c.t_monotonic = 1;
    struct mb_proc_spec spec = {.progress_pipe = true};
    char *argv[] = {FX("fx_steady"),      "--rate", "200", "--duration", "0.05",
                    "--samples-per-step", "8",      NULL};
    assert_int_equal(run_argv(argv, &c, &spec), 0);
    assert_non_null(strstr(c.prog, "step=1 samples=8 "));
    assert_non_null(strstr(c.prog, "step=10 samples=80 "));
    assert_true(c.t_monotonic);
    assert_int_equal(c.out_len, 0);
}

static void test_bounded_log(void **state)
{
    (void)state;
    char log[] = "/tmp/mb-test-log-XXXXXX";
    int fd = mkstemp(log);
    assert_true(fd >= 0);
    close(fd);
    char *argv[] = {FX("fx_flood"), "1000000", NULL};
    struct mb_proc_spec spec = {.argv = argv,
                                .capture = true,
                                .log_path = log,
                                .log_head_bytes = 1000,
                                .log_tail_bytes = 3000,
                                .tee_stdout_fd = -1,
                                .tee_stderr_fd = -1};
    struct mb_proc *p;
    struct mb_error err;
    assert_int_equal(mb_proc_spawn(&spec, &p, &err), MB_OK);
    assert_int_equal(mb_proc_wait(p, 30000, &err), MB_OK);
    assert_int_equal(mb_proc_exit_code(p), 0);
    uint64_t total = mb_proc_output_bytes(p);
    assert_true(total >= 1000000 + 4);
    assert_int_equal(mb_proc_log_omitted_bytes(p), total - 4000);
    mb_proc_destroy(p);

    FILE *f = fopen(log, "r");
    assert_non_null(f);
    static char buf[8192];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    char note[96];
    snprintf(note, sizeof(note), "\n[migbench: %llu bytes omitted]\n",
             (unsigned long long)(total - 4000));
    assert_int_equal(n, 4000 + strlen(note));
    assert_memory_equal(buf, "flood line 00000000", 19);
    assert_memory_equal(buf + 1000, note, strlen(note));
    assert_string_equal(buf + n - 4, "END\n");
    unlink(log);
}

static void count_out(void *ctx, enum mb_proc_stream s, const char *buf, size_t n, int64_t t)
{
    (void)buf;
    (void)t;
    if (s == MB_PROC_STDOUT)
        *(size_t *)ctx += n;
}

static void test_terminate(void **state)
{
    (void)state;
    struct mb_error err;
    size_t out_a = 0, out_b = 0;
    /* A job that handles SIGTERM stops by itself. */
    char *steady[] = {FX("fx_steady"), "--stdout", "--duration", "60", NULL};
    struct mb_proc_spec spec = {.argv = steady,
                                .capture = true,
                                .tee_stdout_fd = -1,
                                .tee_stderr_fd = -1,
                                .on_data = count_out,
                                .ctx = &out_a};
    struct mb_proc *a, *b;
    assert_int_equal(mb_proc_spawn(&spec, &a, &err), MB_OK);
    /* One that ignores it gets SIGKILL after the grace period. */
    char *stubborn[] = {FX("fx_ignore_term"), "60", NULL};
    spec.argv = stubborn;
    spec.ctx = &out_b;
    assert_int_equal(mb_proc_spawn(&spec, &b, &err), MB_OK);
    struct mb_proc *both[] = {a, NULL, b};
    /* Both print only after installing their handlers: wait for that, however slow the machine. */
    while (out_a == 0 || out_b == 0)
        assert_int_equal(mb_proc_poll(both, 3, 100, &err), MB_OK);
    assert_false(mb_proc_done(a));
    assert_false(mb_proc_done(b));
    assert_int_equal(mb_proc_terminate(a, 30000), MB_OK);
    assert_int_equal(mb_proc_terminate(b, 200), MB_OK);
    while (!(mb_proc_done(a) && mb_proc_done(b)))
        assert_int_equal(mb_proc_poll(both, 3, 100, &err), MB_OK);
    assert_int_equal(mb_proc_exit_code(a), 0);
    assert_int_equal(mb_proc_exit_code(b), 128 + SIGKILL);
    assert_true(WIFSIGNALED(mb_proc_wait_status(b)));
    mb_proc_destroy(a);
    mb_proc_destroy(b);

    /* Destroying a running child kills and reaps it. */
    spec.ctx = &out_b;
    assert_int_equal(mb_proc_spawn(&spec, &b, &err), MB_OK);
    pid_t pid = mb_proc_pid(b);
    mb_proc_destroy(b);
    assert_int_equal(kill(pid, 0), -1);
}

/* Short helper commands: stdin text, extra environment, the log, exit codes, the timeout. */
static void test_run_helper(void **state)
{
    (void)state;
    char dir[] = "/tmp/mb-test-helper-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char log[128], why[256];
    snprintf(log, sizeof(log), "%s/log", dir);
    char *cat[] = {"cat", NULL};
    assert_int_equal(mb_proc_run_helper(cat, NULL, "quit\n", log, 5000, why, sizeof(why)), 0);
    char *env_argv[] = {"printenv", "MB_HELPER_TEST", NULL};
    char *env[] = {"MB_HELPER_TEST=seen", NULL};
    assert_int_equal(mb_proc_run_helper(env_argv, env, NULL, log, 5000, why, sizeof(why)), 0);
    FILE *f = fopen(log, "r");
    assert_non_null(f);
    char buf[64] = "";
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    assert_string_equal(buf, "quit\nseen\n");
    char *no[] = {"false", NULL};
    assert_int_equal(mb_proc_run_helper(no, NULL, NULL, NULL, 5000, why, sizeof(why)), 1);
    char *slow[] = {"sleep", "10", NULL};
    assert_int_equal(mb_proc_run_helper(slow, NULL, NULL, NULL, 100, why, sizeof(why)),
                     MB_PROC_HELPER_TIMEOUT);
    assert_non_null(strstr(why, "did not finish within 100 ms"));
    char *missing[] = {"/nonexistent/helper", NULL};
    assert_int_equal(mb_proc_run_helper(missing, NULL, NULL, NULL, 1000, why, sizeof(why)),
                     MB_PROC_HELPER_FAILED);
    /* The same named reason as a job's: the helper goes through mb_proc_spawn. */
    assert_non_null(strstr(why, "cannot run '/nonexistent/helper': No such file or directory"));
    unlink(log);
    rmdir(dir);
}

/* Reads a whole small file into buf (NUL-terminated); its length. */
static size_t slurp(const char *path, char *buf, size_t cap)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    size_t n = fread(buf, 1, cap - 1, f);
    fclose(f);
    buf[n] = '\0';
    return n;
}

static size_t count_of(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    return n;
}

/*
 * One environment merge for jobs and helpers: ours, then the extra entries in order, each
 * replacing a variable of the same name (a later entry wins; the name appears once). An entry
 * that is not NAME=value is refused by both.
 */
static void test_env_merge_order(void **state)
{
    (void)state;
    setenv("MB_ORDER_TEST", "ours", 1);
    char *env[] = {"MB_ORDER_TEST=first", "MB_ORDER_TEST=second", NULL};
    static struct capture c;
    memset(&c, 0, sizeof(c));
    char *printenv[] = {"printenv", "MB_ORDER_TEST", NULL};
    struct mb_proc_spec x = {.env = env};
    assert_int_equal(run_argv(printenv, &c, &x), 0);
    assert_string_equal(c.out, "second\n");

    char dir[] = "/tmp/mb-test-envorder-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char log[128], why[256];
    snprintf(log, sizeof(log), "%s/log", dir);
    char *envcmd[] = {"env", NULL};
    assert_int_equal(mb_proc_run_helper(envcmd, env, NULL, log, 5000, why, sizeof(why)), 0);
    static char text[1 << 16];
    slurp(log, text, sizeof(text));
    assert_int_equal(count_of(text, "MB_ORDER_TEST="), 1);
    assert_non_null(strstr(text, "MB_ORDER_TEST=second\n"));

    char *bad[] = {"MB_ORDER_TEST", NULL};
    x.env = bad;
    memset(&c, 0, sizeof(c));
    assert_int_equal(run_argv(printenv, &c, &x), -MB_EINVAL);
    assert_int_equal(mb_proc_run_helper(envcmd, bad, NULL, log, 5000, why, sizeof(why)),
                     MB_PROC_HELPER_FAILED);
    assert_non_null(strstr(why, "environment entry 'MB_ORDER_TEST' is not NAME=value"));
    char *noname[] = {"=x", NULL};
    assert_int_equal(mb_proc_run_helper(envcmd, noname, NULL, log, 5000, why, sizeof(why)),
                     MB_PROC_HELPER_FAILED);
    unsetenv("MB_ORDER_TEST");
    unlink(log);
    rmdir(dir);
}

/* Field 5 of /proc/self/stat (the process group) as `cat` saw it. */
static long stat_pgrp(const char *stat)
{
    const char *p = strrchr(stat, ')');
    assert_non_null(p);
    char st;
    long ppid = 0, pgrp = 0;
    assert_int_equal(sscanf(p + 1, " %c %ld %ld", &st, &ppid, &pgrp), 3);
    return pgrp;
}

/* A job leads a process group of its own; a helper stays in ours. Both read stdin text. */
static void test_groups_and_stdin_text(void **state)
{
    (void)state;
    static struct capture c;
    memset(&c, 0, sizeof(c));
    char *cat_stat[] = {"cat", "/proc/self/stat", NULL};
    struct mb_proc_spec spec = {.argv = cat_stat,
                                .capture = true,
                                .stdin_null = true,
                                .tee_stdout_fd = -1,
                                .tee_stderr_fd = -1,
                                .on_data = on_data,
                                .ctx = &c};
    struct mb_proc *p = NULL;
    struct mb_error err;
    assert_int_equal(mb_proc_spawn(&spec, &p, &err), MB_OK);
    assert_int_equal(mb_proc_wait(p, 30000, &err), MB_OK);
    assert_int_equal(stat_pgrp(c.out), (long)mb_proc_pid(p));
    mb_proc_destroy(p);

    char dir[] = "/tmp/mb-test-group-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char log[128], why[256];
    snprintf(log, sizeof(log), "%s/log", dir);
    assert_int_equal(mb_proc_run_helper(cat_stat, NULL, NULL, log, 5000, why, sizeof(why)), 0);
    char text[4096];
    slurp(log, text, sizeof(text));
    assert_int_equal(stat_pgrp(text), (long)getpgrp());

    /* stdin text reaches a job as well; one longer than a pipe holds is refused, not a hang. */
    memset(&c, 0, sizeof(c));
    char *cat[] = {"cat", NULL};
    spec.argv = cat;
    spec.stdin_text = "hello\n";
    assert_int_equal(mb_proc_spawn(&spec, &p, &err), MB_OK);
    assert_int_equal(mb_proc_wait(p, 30000, &err), MB_OK);
    assert_string_equal(c.out, "hello\n");
    mb_proc_destroy(p);
    size_t big = 8u << 20;
    char *huge = malloc(big + 1);
    assert_non_null(huge);
    memset(huge, 'x', big);
    huge[big] = '\0';
    spec.stdin_text = huge;
    assert_int_equal(mb_proc_spawn(&spec, &p, &err), MB_EINVAL);
    assert_null(p);
    assert_non_null(strstr(err.msg, "longer than a pipe holds"));
    assert_int_equal(mb_proc_run_helper(cat, NULL, huge, log, 5000, why, sizeof(why)),
                     MB_PROC_HELPER_FAILED);
    free(huge);
    unlink(log);
    rmdir(dir);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exit_codes),
        cmocka_unit_test(test_exec_failures),
        cmocka_unit_test(test_environment_cwd_fds_affinity),
        cmocka_unit_test(test_progress_pipe),
        cmocka_unit_test(test_bounded_log),
        cmocka_unit_test(test_terminate),
        cmocka_unit_test(test_run_helper),
        cmocka_unit_test(test_env_merge_order),
        cmocka_unit_test(test_groups_and_stdin_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
