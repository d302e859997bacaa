/* SPDX-License-Identifier: Apache-2.0 */
/* Child processes: fork + execve, process groups, bounded logs, one poll loop for many children. */
#define _GNU_SOURCE /* sched_setaffinity, CPU_SET, close_range, pipe2 */
#include "migbench/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pty.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "migbench/clock.h"

extern char **environ;

#define NFDS 3           /* stdout, stderr, progress */
#define READ_CHUNK 16384 /* one read per fd per poll round keeps children fair */
#define MAX_CANDIDATES 64

struct mb_proc {
    pid_t pid;
    int fds[NFDS]; /* read ends, -1 when closed */
    bool had_pipes;
    int tee_fd[2];
    mb_proc_data_fn on_data;
    void *ctx;
    bool exited;
    bool done;
    int wait_status;
    int64_t kill_at_ns; /* 0: no pending SIGKILL */
    bool killed;
    /* Log: head written straight to the file, tail kept in a ring until the end. */
    int log_fd;
    size_t head_max;
    size_t head_len;
    char *tail;
    size_t tail_max;
    size_t tail_len;
    size_t tail_pos; /* next write position in the ring */
    uint64_t total;
    uint64_t omitted;
};

int64_t mb_proc_now_ns(void)
{
    return mb_clock_monotonic_ns();
}

/* Moves fd above 2 (so dup2 onto 0..2 in the child never clobbers it) and makes it CLOEXEC. */
static int high_cloexec(int fd)
{
    if (fd > 2) {
        fcntl(fd, F_SETFD, FD_CLOEXEC);
        return fd;
    }
    int nfd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    close(fd);
    return nfd;
}

/* Moves both ends of a new pipe or terminal pair above stdio; closes both on failure. */
static int raise_pair(int p[2])
{
    p[0] = high_cloexec(p[0]);
    p[1] = high_cloexec(p[1]);
    if (p[0] < 0 || p[1] < 0) {
        if (p[0] >= 0)
            close(p[0]);
        if (p[1] >= 0)
            close(p[1]);
        return -1;
    }
    return 0;
}

static int make_pipe(int p[2])
{
    if (pipe2(p, O_CLOEXEC) != 0)
        return -1;
    return raise_pair(p);
}

/*
 * A pseudo-terminal for the child's stdout: p[0] the master (ours), p[1] the slave (the
 * child's). Raw mode, so the terminal neither adds '\r' nor echoes.
 */
static int make_pty(int p[2])
{
    if (openpty(&p[0], &p[1], NULL, NULL, NULL) != 0)
        return -1;
    struct termios tio;
    if (tcgetattr(p[1], &tio) == 0) {
        cfmakeraw(&tio);
        tcsetattr(p[1], TCSANOW, &tio);
    }
    return raise_pair(p);
}

static void close_fd(int *fd)
{
    if (*fd >= 0) {
        close(*fd);
        *fd = -1;
    }
}

static bool write_all(int fd, const char *buf, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, buf, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return false;
        }
        buf += w;
        n -= (size_t)w;
    }
    return true;
}

/* The environment for the child: ours with spec->env and the progress variable applied. */
static char **build_env(char *const *extra, const char *progress_kv)
{
    size_t n_env = 0, n_extra = 0;
    while (environ && environ[n_env])
        n_env++;
    while (extra && extra[n_extra])
        n_extra++;
    char **env = calloc(n_env + n_extra + 2, sizeof(*env));
    if (!env)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n_env; i++)
        env[k++] = environ[i];
    for (size_t j = 0; j <= n_extra; j++) {
        char *kv = j < n_extra ? extra[j] : (char *)(uintptr_t)progress_kv;
        if (!kv)
            continue;
        const char *eq = strchr(kv, '=');
        size_t name_len = eq ? (size_t)(eq - kv) : strlen(kv);
        size_t i = 0;
        for (; i < k; i++)
            if (strncmp(env[i], kv, name_len) == 0 && env[i][name_len] == '=')
                break;
        env[i] = kv;
        if (i == k)
            k++;
    }
    env[k] = NULL;
    return env;
}

/*
 * The exec candidates for argv[0], resolved in the parent so that the child needs no allocation:
 * the PATH search of execvp, done ahead of time.
 */
static int resolve_candidates(const char *file, char ***out, size_t *n_out)
{
    *out = NULL;
    *n_out = 0;
    if (strchr(file, '/')) {
        char **c = calloc(1, sizeof(*c));
        if (!c || !(c[0] = strdup(file))) {
            free(c);
            return MB_ENOMEM;
        }
        *out = c;
        *n_out = 1;
        return MB_OK;
    }
    const char *path = getenv("PATH");
    if (!path)
        path = "/usr/local/bin:/usr/bin:/bin";
    char **c = calloc(MAX_CANDIDATES, sizeof(*c));
    if (!c)
        return MB_ENOMEM;
    size_t n = 0;
    const char *p = path;
    while (n < MAX_CANDIDATES) {
        const char *colon = strchr(p, ':');
        size_t dlen = colon ? (size_t)(colon - p) : strlen(p);
        size_t len = (dlen ? dlen : 1) + 1 + strlen(file) + 1;
        char *s = malloc(len);
        if (!s)
            goto fail;
        if (dlen)
            snprintf(s, len, "%.*s/%s", (int)dlen, p, file);
        else
            snprintf(s, len, "./%s", file);
        c[n++] = s;
        if (!colon)
            break;
        p = colon + 1;
    }
    *out = c;
    *n_out = n;
    return MB_OK;
fail:
    for (size_t i = 0; i < n; i++)
        free(c[i]);
    free(c);
    return MB_ENOMEM;
}

static void free_candidates(char **c, size_t n)
{
    for (size_t i = 0; c && i < n; i++)
        free(c[i]);
    free(c);
}

/* In the child after fork: only async-signal-safe calls. Reports errno on errpipe and exits. */
static void child_exec(const struct mb_proc_spec *spec, char **cand, size_t n_cand, char **env,
                       int out_w, int err_w, int prog_w, int errpipe, const cpu_set_t *cpus)
{
    int e = 0;
    int at_exec = 0; /* tells the parent "not found/not executable" from a setup failure */
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    /* Handlers we installed must not survive; SIG_IGN would (SIGPIPE), so reset the common ones. */
    static const int sigs[] = {SIGPIPE, SIGINT,  SIGTERM, SIGQUIT, SIGHUP,
                               SIGCHLD, SIGUSR1, SIGUSR2, SIGALRM};
    struct sigaction dfl;
    memset(&dfl, 0, sizeof(dfl));
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
        sigaction(sigs[i], &dfl, NULL); /* sigaction, unlike signal, is async-signal-safe */
    setpgid(0, 0);
    if (spec->stdin_null) {
        int fd = open("/dev/null", O_RDONLY);
        if (fd < 0 || dup2(fd, 0) < 0) {
            e = errno;
            goto fail;
        }
        if (fd != 0)
            close(fd);
    }
    if (out_w >= 0 && (dup2(out_w, 1) < 0 || dup2(err_w, 2) < 0)) {
        e = errno;
        goto fail;
    }
    if (prog_w >= 0 && fcntl(prog_w, F_SETFD, 0) < 0) {
        e = errno;
        goto fail;
    }
    /* Close whatever else we might have inherited (all of ours are CLOEXEC anyway). */
    if (prog_w >= 0) {
        if (prog_w > 3)
            close_range(3, (unsigned)prog_w - 1, CLOSE_RANGE_CLOEXEC);
        close_range((unsigned)prog_w + 1, ~0u, CLOSE_RANGE_CLOEXEC);
    } else {
        close_range(3, ~0u, CLOSE_RANGE_CLOEXEC);
    }
    /* close_range must not take errpipe down with it before exec reports. */
    fcntl(errpipe, F_SETFD, FD_CLOEXEC);
    if (cpus && sched_setaffinity(0, sizeof(*cpus), cpus) != 0) {
        e = errno;
        goto fail;
    }
    if (spec->cwd && chdir(spec->cwd) != 0) {
        e = errno;
        goto fail;
    }
    /* execvp's rules: EACCES remembered but the search goes on; ENOENT/ENOTDIR skip. */
    bool saw_eacces = false;
    e = ENOENT;
    for (size_t i = 0; i < n_cand; i++) {
        execve(cand[i], spec->argv, env);
        if (errno == EACCES) {
            saw_eacces = true;
        } else if (errno == ENOEXEC) {
            e = ENOEXEC;
            break;
        } else if (errno != ENOENT && errno != ENOTDIR && errno != ESTALE && errno != ENODEV &&
                   errno != ETIMEDOUT) {
            e = errno;
            break;
        }
    }
    if (e == ENOENT && saw_eacces)
        e = EACCES;
    at_exec = 1;
fail:;
    int msg[2] = {e, at_exec ? 0 : 1};
    ssize_t w = write(errpipe, msg, sizeof(msg));
    (void)w;
    _exit(e == ENOENT ? MB_PROC_EXIT_NOT_FOUND : MB_PROC_EXIT_NOT_EXECUTABLE);
}

int mb_proc_spawn_exit_code(int status)
{
    if (status == MB_ENOTFOUND)
        return MB_PROC_EXIT_NOT_FOUND;
    if (status == MB_EPERM)
        return MB_PROC_EXIT_NOT_EXECUTABLE;
    return 125;
}

int mb_proc_spawn(const struct mb_proc_spec *spec, struct mb_proc **out, struct mb_error *err)
{
    int out_p[2] = {-1, -1}, err_p[2] = {-1, -1}, prog_p[2] = {-1, -1}, ep[2] = {-1, -1};
    char **cand = NULL, **env = NULL;
    size_t n_cand = 0;
    char progress_kv[64];
    int rc;
    cpu_set_t cpus;
    bool use_cpus = false;
    struct mb_proc *p = NULL;

    *out = NULL;
    if (!spec || !spec->argv || !spec->argv[0] || !spec->argv[0][0])
        return mb_error_set(err, MB_EINVAL, "no command to run");
    if (spec->cpus && spec->cpus->n > 0) {
        CPU_ZERO(&cpus);
        for (unsigned i = 0; i < spec->cpus->n && i < MB_CPUSET_MAX / 8; i++) {
            if (spec->cpus->cpus[i] >= CPU_SETSIZE)
                return mb_error_set(err, MB_EINVAL, "CPU %u is out of range", spec->cpus->cpus[i]);
            CPU_SET(spec->cpus->cpus[i], &cpus);
        }
        use_cpus = true;
    }
    p = calloc(1, sizeof(*p));
    if (!p)
        return mb_error_set(err, MB_ENOMEM, "out of memory");
    p->pid = -1;
    for (int i = 0; i < NFDS; i++)
        p->fds[i] = -1;
    p->log_fd = -1;
    p->tee_fd[0] = spec->capture ? spec->tee_stdout_fd : -1;
    p->tee_fd[1] = spec->capture ? spec->tee_stderr_fd : -1;
    p->on_data = spec->on_data;
    p->ctx = spec->ctx;
    p->head_max = spec->log_head_bytes ? spec->log_head_bytes : MB_PROC_LOG_HEAD_DEFAULT;
    p->tail_max = spec->log_tail_bytes ? spec->log_tail_bytes : MB_PROC_LOG_TAIL_DEFAULT;

    if (spec->capture && spec->log_path) {
        p->log_fd = open(spec->log_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (p->log_fd < 0) {
            rc = mb_error_set(err, MB_EIO, "cannot create log '%s': %s", spec->log_path,
                              strerror(errno));
            goto fail;
        }
        p->log_fd = high_cloexec(p->log_fd);
        p->tail = malloc(p->tail_max);
        if (!p->tail) {
            rc = mb_error_set(err, MB_ENOMEM, "out of memory");
            goto fail;
        }
    }
    if ((spec->capture && ((spec->pty ? make_pty(out_p) : make_pipe(out_p)) || make_pipe(err_p))) ||
        (spec->progress_pipe && make_pipe(prog_p)) || make_pipe(ep)) {
        rc = mb_error_set(err, MB_EIO, "cannot create pipe: %s", strerror(errno));
        goto fail;
    }
    progress_kv[0] = '\0';
    if (spec->progress_pipe)
        snprintf(progress_kv, sizeof(progress_kv), "%s=%d", MB_PROGRESS_FD_ENV, prog_p[1]);
    env = build_env(spec->env, progress_kv[0] ? progress_kv : NULL);
    rc = resolve_candidates(spec->argv[0], &cand, &n_cand);
    if (!env || rc != MB_OK) {
        rc = mb_error_set(err, MB_ENOMEM, "out of memory");
        goto fail;
    }

    pid_t pid = fork();
    if (pid < 0) {
        rc = mb_error_set(err, MB_EIO, "cannot fork: %s", strerror(errno));
        goto fail;
    }
    if (pid == 0)
        child_exec(spec, cand, n_cand, env, out_p[1], err_p[1], prog_p[1], ep[1],
                   use_cpus ? &cpus : NULL);
    /* Both sides call setpgid so that a signal sent right after spawn reaches the group. */
    setpgid(pid, pid);
    p->pid = pid;
    close_fd(&out_p[1]);
    close_fd(&err_p[1]);
    close_fd(&prog_p[1]);
    close_fd(&ep[1]);

    int msg[2];
    ssize_t r;
    do
        r = read(ep[0], msg, sizeof(msg));
    while (r < 0 && errno == EINTR);
    close_fd(&ep[0]);
    if (r == (ssize_t)sizeof(msg)) {
        int st;
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
            ;
        p->pid = -1;
        if (msg[1] == 0 && msg[0] == ENOENT)
            rc = mb_error_set(err, MB_ENOTFOUND, "cannot run '%s': %s", spec->argv[0],
                              strerror(msg[0]));
        else if (msg[1] == 0)
            rc =
                mb_error_set(err, MB_EPERM, "cannot run '%s': %s", spec->argv[0], strerror(msg[0]));
        else
            rc = mb_error_set(err, MB_ECHILD, "cannot prepare '%s': %s", spec->argv[0],
                              strerror(msg[0]));
        goto fail;
    }
    p->fds[MB_PROC_STDOUT] = out_p[0];
    p->fds[MB_PROC_STDERR] = err_p[0];
    p->fds[MB_PROC_PROGRESS] = prog_p[0];
    out_p[0] = err_p[0] = prog_p[0] = -1;
    for (int i = 0; i < NFDS; i++)
        if (p->fds[i] >= 0) {
            fcntl(p->fds[i], F_SETFL, fcntl(p->fds[i], F_GETFL) | O_NONBLOCK);
            p->had_pipes = true;
        }
    free(env);
    free_candidates(cand, n_cand);
    *out = p;
    return MB_OK;

fail:
    close_fd(&out_p[0]);
    close_fd(&out_p[1]);
    close_fd(&err_p[0]);
    close_fd(&err_p[1]);
    close_fd(&prog_p[0]);
    close_fd(&prog_p[1]);
    close_fd(&ep[0]);
    close_fd(&ep[1]);
    free(env);
    free_candidates(cand, n_cand);
    if (p && p->log_fd >= 0 && spec->log_path) {
        /* A command that never ran leaves its reason in the log, not an empty file. */
        if (err)
            (void)(write_all(p->log_fd, err->msg, strlen(err->msg)) &&
                   write_all(p->log_fd, "\n", 1));
    }
    if (p) {
        close_fd(&p->log_fd);
        free(p->tail);
        free(p);
    }
    return rc;
}

pid_t mb_proc_pid(const struct mb_proc *p)
{
    return p->pid;
}

static void log_append(struct mb_proc *p, const char *buf, size_t n)
{
    p->total += n;
    if (p->log_fd < 0)
        return;
    if (p->head_len < p->head_max) {
        size_t k = p->head_max - p->head_len;
        if (k > n)
            k = n;
        write_all(p->log_fd, buf, k);
        p->head_len += k;
        buf += k;
        n -= k;
    }
    if (n == 0 || p->tail_max == 0) {
        p->omitted += p->tail_max == 0 ? n : 0;
        return;
    }
    /* Keep only the last tail_max bytes; what falls out of the ring is omitted. */
    if (n >= p->tail_max) {
        p->omitted += p->tail_len + (n - p->tail_max);
        memcpy(p->tail, buf + (n - p->tail_max), p->tail_max);
        p->tail_len = p->tail_max;
        p->tail_pos = 0;
        return;
    }
    size_t overflow = p->tail_len + n > p->tail_max ? p->tail_len + n - p->tail_max : 0;
    p->omitted += overflow;
    size_t first = p->tail_max - p->tail_pos;
    if (first > n)
        first = n;
    memcpy(p->tail + p->tail_pos, buf, first);
    memcpy(p->tail, buf + first, n - first);
    p->tail_pos = (p->tail_pos + n) % p->tail_max;
    p->tail_len = p->tail_len + n - overflow;
}

static void log_close(struct mb_proc *p)
{
    if (p->log_fd < 0)
        return;
    if (p->omitted > 0) {
        char note[96];
        int k = snprintf(note, sizeof(note), "\n[migbench: %llu bytes omitted]\n",
                         (unsigned long long)p->omitted);
        write_all(p->log_fd, note, (size_t)k);
    }
    if (p->tail_len > 0) {
        size_t start = (p->tail_pos + p->tail_max - p->tail_len) % p->tail_max;
        size_t first = p->tail_max - start;
        if (first > p->tail_len)
            first = p->tail_len;
        write_all(p->log_fd, p->tail + start, first);
        write_all(p->log_fd, p->tail, p->tail_len - first);
    }
    close_fd(&p->log_fd);
    free(p->tail);
    p->tail = NULL;
}

/* Reads once from stream s; returns false at EOF or on a hard error (the fd is then closed). */
static bool drain_once(struct mb_proc *p, int s)
{
    char buf[READ_CHUNK];
    ssize_t r = read(p->fds[s], buf, sizeof(buf));
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return true;
    if (r <= 0) {
        close_fd(&p->fds[s]);
        return false;
    }
    int64_t t = mb_proc_now_ns();
    size_t n = (size_t)r;
    if (s != MB_PROC_PROGRESS) {
        log_append(p, buf, n);
        if (p->tee_fd[s] >= 0)
            write_all(p->tee_fd[s], buf, n);
    }
    if (p->on_data)
        p->on_data(p->ctx, (enum mb_proc_stream)s, buf, n, t);
    return r == (ssize_t)sizeof(buf);
}

/* After exit: everything the child wrote is in the pipe buffers; take it and close. */
static void finish(struct mb_proc *p)
{
    for (int s = 0; s < NFDS; s++) {
        /* Bounded: a grandchild that keeps the pipe open and keeps writing must not hold us. */
        for (int round = 0; p->fds[s] >= 0 && round < 256; round++)
            if (!drain_once(p, s))
                break;
        close_fd(&p->fds[s]);
    }
    log_close(p);
    p->done = true;
}

static void reap(struct mb_proc *p)
{
    if (p->exited || p->pid <= 0)
        return;
    int st;
    pid_t r = waitpid(p->pid, &st, WNOHANG);
    if (r == p->pid) {
        p->exited = true;
        p->wait_status = st;
    } else if (r < 0 && errno == ECHILD) {
        /* Someone else reaped it (SIGCHLD set to SIG_IGN): we cannot know its status. */
        p->exited = true;
        p->wait_status = 0x7f00; /* WEXITSTATUS 127 */
    }
}

int mb_proc_poll(struct mb_proc *const *procs, size_t n, int timeout_ms, struct mb_error *err)
{
    struct pollfd stack_fds[64];
    struct pollfd *fds = stack_fds;
    size_t cap = n * NFDS;
    if (cap > sizeof(stack_fds) / sizeof(stack_fds[0])) {
        fds = malloc(cap * sizeof(*fds));
        if (!fds)
            return mb_error_set(err, MB_ENOMEM, "out of memory");
    }
    int64_t now = mb_proc_now_ns();
    size_t k = 0;
    bool any_exited = false, any_closed = false;
    for (size_t i = 0; i < n; i++) {
        struct mb_proc *p = procs[i];
        if (!p || p->done)
            continue;
        if (p->kill_at_ns && !p->exited && now >= p->kill_at_ns && !p->killed) {
            kill(-p->pid, SIGKILL);
            p->killed = true;
        }
        reap(p);
        if (p->exited)
            any_exited = true;
        if (p->kill_at_ns && !p->killed) {
            int64_t left_ms = (p->kill_at_ns - now) / 1000000 + 1;
            if (timeout_ms < 0 || left_ms < timeout_ms)
                timeout_ms = (int)(left_ms < 0 ? 0 : left_ms);
        }
        size_t k0 = k;
        for (int s = 0; s < NFDS; s++)
            if (p->fds[s] >= 0)
                fds[k++] = (struct pollfd){.fd = p->fds[s], .events = POLLIN};
        /* All pipes at EOF usually means the child is exiting: look again soon. */
        if (k == k0 && p->had_pipes && !p->exited)
            any_closed = true;
    }
    /* Exit is noticed by waitpid, not by an fd: do not sleep past it for long. */
    int cap_ms = any_closed ? 2 : 50;
    if (any_exited)
        timeout_ms = 0;
    else if (timeout_ms < 0 || timeout_ms > cap_ms)
        timeout_ms = cap_ms;
    int rc = MB_OK;
    int r = poll(fds, k, timeout_ms);
    if (r < 0) {
        rc = errno == EINTR ? MB_EINTR : mb_error_set(err, MB_EIO, "poll: %s", strerror(errno));
        r = 0;
    }
    for (size_t i = 0; i < n; i++) {
        struct mb_proc *p = procs[i];
        if (!p || p->done)
            continue;
        for (int s = 0; s < NFDS; s++) {
            if (p->fds[s] < 0)
                continue;
            for (size_t j = 0; j < k; j++)
                if (fds[j].fd == p->fds[s] && fds[j].revents) {
                    drain_once(p, s);
                    break;
                }
        }
        reap(p);
        if (p->exited)
            finish(p);
    }
    if (fds != stack_fds)
        free(fds);
    return rc;
}

bool mb_proc_done(const struct mb_proc *p)
{
    return p->done;
}

int mb_proc_exit_code(const struct mb_proc *p)
{
    if (!p->exited)
        return -1;
    if (WIFEXITED(p->wait_status))
        return WEXITSTATUS(p->wait_status);
    if (WIFSIGNALED(p->wait_status))
        return 128 + WTERMSIG(p->wait_status);
    return 125;
}

int mb_proc_wait_status(const struct mb_proc *p)
{
    return p->wait_status;
}

int mb_proc_signal(struct mb_proc *p, int sig)
{
    if (p->exited || p->pid <= 0)
        return MB_OK;
    if (kill(-p->pid, sig) != 0 && errno != ESRCH)
        return MB_EIO;
    return MB_OK;
}

int mb_proc_terminate(struct mb_proc *p, int grace_ms)
{
    if (p->exited)
        return MB_OK;
    if (!p->kill_at_ns)
        p->kill_at_ns = mb_proc_now_ns() + (int64_t)(grace_ms < 0 ? 0 : grace_ms) * 1000000;
    return mb_proc_signal(p, SIGTERM);
}

int mb_proc_wait(struct mb_proc *p, int timeout_ms, struct mb_error *err)
{
    int64_t end = timeout_ms < 0 ? INT64_MAX : mb_proc_now_ns() + (int64_t)timeout_ms * 1000000;
    struct mb_proc *one[1] = {p};
    while (!p->done) {
        int64_t now = mb_proc_now_ns();
        if (now >= end)
            return MB_ETIMEDOUT;
        int64_t left = (end - now) / 1000000 + 1;
        int rc = mb_proc_poll(one, 1, left > 1000 ? 1000 : (int)left, err);
        if (rc != MB_OK)
            return rc;
    }
    return MB_OK;
}

uint64_t mb_proc_output_bytes(const struct mb_proc *p)
{
    return p->total;
}

uint64_t mb_proc_log_omitted_bytes(const struct mb_proc *p)
{
    return p->omitted;
}

void mb_proc_destroy(struct mb_proc *p)
{
    if (!p)
        return;
    if (!p->exited && p->pid > 0) {
        kill(-p->pid, SIGKILL);
        int st;
        while (waitpid(p->pid, &st, 0) < 0 && errno == EINTR)
            ;
        p->exited = true;
        p->wait_status = st;
    }
    if (!p->done)
        finish(p);
    free(p);
}

/* ---- short helper commands ---- */

int mb_proc_run_helper(char *const argv[], char *const extra_env[], const char *stdin_text,
                       const char *log_path, int timeout_ms, char *why, size_t cap)
{
    size_t n_env = 0, n_extra = 0;
    while (environ[n_env])
        n_env++;
    while (extra_env && extra_env[n_extra])
        n_extra++;
    char **env = calloc(n_env + n_extra + 1, sizeof(*env));
    if (!env) {
        snprintf(why, cap, "out of memory");
        return -1;
    }
    size_t k = 0;
    for (size_t i = 0; i < n_env; i++) {
        bool replaced = false;
        for (size_t j = 0; j < n_extra; j++) {
            size_t l = (size_t)(strchr(extra_env[j], '=') - extra_env[j]);
            if (strncmp(environ[i], extra_env[j], l + 1) == 0)
                replaced = true;
        }
        if (!replaced)
            env[k++] = environ[i];
    }
    for (size_t j = 0; j < n_extra; j++)
        env[k++] = extra_env[j];
    env[k] = NULL;

    int pfd[2] = {-1, -1};
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    if (stdin_text) {
        if (pipe(pfd) != 0) {
            snprintf(why, cap, "pipe: %s", strerror(errno));
            free(env);
            posix_spawn_file_actions_destroy(&fa);
            return -1;
        }
        posix_spawn_file_actions_adddup2(&fa, pfd[0], 0);
        posix_spawn_file_actions_addclose(&fa, pfd[0]);
        posix_spawn_file_actions_addclose(&fa, pfd[1]);
    } else {
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    }
    posix_spawn_file_actions_addopen(&fa, 1, log_path ? log_path : "/dev/null",
                                     O_WRONLY | O_CREAT | O_APPEND, 0600);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    pid_t pid;
    int e = posix_spawnp(&pid, argv[0], &fa, NULL, argv, env);
    posix_spawn_file_actions_destroy(&fa);
    free(env);
    if (stdin_text)
        close(pfd[0]);
    if (e != 0) {
        if (stdin_text)
            close(pfd[1]);
        snprintf(why, cap, "cannot run %s: %s", argv[0], strerror(e));
        return -1;
    }
    if (stdin_text) {
        /* A short command fits in the pipe buffer; the child may have died, so
         * ignore EPIPE. */
        struct sigaction ign, old;
        memset(&ign, 0, sizeof(ign));
        ign.sa_handler = SIG_IGN;
        sigaction(SIGPIPE, &ign, &old);
        ssize_t w = write(pfd[1], stdin_text, strlen(stdin_text));
        (void)w;
        close(pfd[1]);
        sigaction(SIGPIPE, &old, NULL);
    }
    int status = 0;
    for (int waited = 0;; waited += 10) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid)
            break;
        if (r < 0 && errno != EINTR) {
            snprintf(why, cap, "waitpid: %s", strerror(errno));
            return -1;
        }
        if (waited >= timeout_ms) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            snprintf(why, cap, "%s did not finish within %d ms", argv[0], timeout_ms);
            return MB_PROC_HELPER_TIMEOUT;
        }
        nanosleep(&(struct timespec){0, 10000000}, NULL);
    }
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    snprintf(why, cap, "%s was killed by signal %d", argv[0], WTERMSIG(status));
    return MB_PROC_HELPER_SIGNAL;
}
