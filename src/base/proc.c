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
    bool own_group; /* signals go to its process group; else to the child alone */
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

/* A job's whole process group, or a helper that shares ours alone. */
static pid_t signal_target(const struct mb_proc *p)
{
    return p->own_group ? -p->pid : p->pid;
}

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

/* ---- spawning: one mechanism for jobs and helpers ---- */

/* The one environment merge: ours, then each extra entry in order, replacing a variable of the
 * same name in place (so a later entry wins over an earlier one and over ours). */
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
        size_t name_len = (size_t)(strchr(kv, '=') - kv); /* check_env made sure of the '=' */
        size_t i = 0;
        for (; i < k; i++)
            if (strncmp(env[i], kv, name_len + 1) == 0)
                break;
        env[i] = kv;
        if (i == k)
            k++;
    }
    env[k] = NULL;
    return env;
}

/* Every extra entry must be NAME=value with a non-empty NAME. */
static int check_env(char *const *extra, struct mb_error *err)
{
    for (size_t j = 0; extra && extra[j]; j++) {
        const char *eq = strchr(extra[j], '=');
        if (!eq || eq == extra[j])
            return mb_error_set(err, MB_EINVAL, "environment entry '%.80s' is not NAME=value",
                                extra[j]);
    }
    return MB_OK;
}

/*
 * The exec candidates for argv[0], resolved in the parent so that the child needs no allocation:
 * the PATH search of execvp, done ahead of time.
 */
static int resolve_candidates(const char *file, char ***out, size_t *n_out)
{
    *out = NULL;
    *n_out = 0;
    const char *path = getenv("PATH");
    if (!path)
        path = "/usr/local/bin:/usr/bin:/bin";
    bool direct = strchr(file, '/') != NULL;
    char **c = calloc(direct ? 1 : MAX_CANDIDATES, sizeof(*c));
    if (!c)
        return MB_ENOMEM;
    size_t n = 0;
    const char *p = path;
    while (n < (direct ? 1 : MAX_CANDIDATES)) {
        const char *colon = direct ? NULL : strchr(p, ':');
        size_t dlen = colon ? (size_t)(colon - p) : strlen(p);
        size_t len = (dlen ? dlen : 1) + 1 + strlen(file) + 1;
        char *s = malloc(len);
        if (!s)
            goto fail;
        if (direct)
            snprintf(s, len, "%s", file);
        else if (dlen)
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

/* The parent's descriptors for one spawn: [0] our end, [1] the child's (-1 when unused). */
struct spawn_fds {
    int out[2], err[2], prog[2];
    int in;     /* the child's stdin: /dev/null or the read end holding stdin_text; -1 ours */
    int sink;   /* append_path, for the child's stdout and stderr; -1 none */
    int rep[2]; /* exec-failure report: CLOEXEC, so a successful exec closes it */
};

static void fds_init(struct spawn_fds *f)
{
    f->out[0] = f->out[1] = f->err[0] = f->err[1] = f->prog[0] = f->prog[1] = -1;
    f->in = f->sink = f->rep[0] = f->rep[1] = -1;
}

/* The child's ends: closed in the parent once the child has them. */
static void fds_close_child(struct spawn_fds *f)
{
    close_fd(&f->out[1]);
    close_fd(&f->err[1]);
    close_fd(&f->prog[1]);
    close_fd(&f->in);
    close_fd(&f->sink);
    close_fd(&f->rep[1]);
}

static void fds_close_all(struct spawn_fds *f)
{
    fds_close_child(f);
    close_fd(&f->out[0]);
    close_fd(&f->err[0]);
    close_fd(&f->prog[0]);
    close_fd(&f->rep[0]);
}

/* Opens path (a file of ours, above stdio, CLOEXEC); -1 with errno on failure. */
static int open_high(const char *path, int flags, mode_t mode)
{
    int fd = open(path, flags | O_CLOEXEC, mode);
    return fd < 0 ? -1 : high_cloexec(fd);
}

/* A pipe already holding text, its write end closed: the child reads the text, then EOF. */
static int stdin_text_pipe(const char *text, int *in, struct mb_error *err)
{
    int p[2];
    if (make_pipe(p) != 0)
        return mb_error_set(err, MB_EIO, "cannot create pipe: %s", strerror(errno));
    /* Non-blocking, so a text longer than the pipe holds is refused, not a hang. */
    fcntl(p[1], F_SETFL, fcntl(p[1], F_GETFL) | O_NONBLOCK);
    size_t n = strlen(text);
    ssize_t w = n ? write(p[1], text, n) : 0;
    close(p[1]);
    if (w < 0 || (size_t)w != n) {
        close(p[0]);
        return mb_error_set(err, MB_EINVAL,
                            "the text for the command's stdin (%zu bytes) is "
                            "longer than a pipe holds",
                            n);
    }
    *in = p[0];
    return MB_OK;
}

/* The child's stdin: spec->stdin_text, /dev/null, or ours. */
static int open_stdin(const struct mb_proc_spec *spec, struct spawn_fds *f, struct mb_error *err)
{
    if (spec->stdin_text)
        return stdin_text_pipe(spec->stdin_text, &f->in, err);
    if (spec->stdin_null && (f->in = open_high("/dev/null", O_RDONLY, 0)) < 0)
        return mb_error_set(err, MB_EIO, "cannot open /dev/null: %s", strerror(errno));
    return MB_OK;
}

/* The child's stdout/stderr: capture pipes (or a terminal), a file to append to, or ours. */
static int open_output(const struct mb_proc_spec *spec, struct spawn_fds *f, struct mb_error *err)
{
    if (spec->capture) {
        if ((spec->pty ? make_pty(f->out) : make_pipe(f->out)) != 0 || make_pipe(f->err) != 0)
            return mb_error_set(err, MB_EIO, "cannot create pipe: %s", strerror(errno));
    } else if (spec->append_path) {
        f->sink = open_high(spec->append_path, O_WRONLY | O_CREAT | O_APPEND, 0600);
        if (f->sink < 0)
            return mb_error_set(err, MB_EIO, "cannot open '%s' for the output of '%s': %s",
                                spec->append_path, spec->argv[0], strerror(errno));
    }
    return MB_OK;
}

static int open_fds(const struct mb_proc_spec *spec, struct spawn_fds *f, struct mb_error *err)
{
    int rc = open_stdin(spec, f, err);
    if (rc == MB_OK)
        rc = open_output(spec, f, err);
    if (rc == MB_OK && ((spec->progress_pipe && make_pipe(f->prog) != 0) || make_pipe(f->rep)))
        rc = mb_error_set(err, MB_EIO, "cannot create pipe: %s", strerror(errno));
    return rc;
}

/* Everything the child needs, prepared in the parent: after fork the child may not allocate. */
struct launch {
    const struct mb_proc_spec *spec;
    char **cand;
    size_t n_cand;
    char **env;
    cpu_set_t cpus;
    bool use_cpus;
    int in, out, err, prog, rep; /* the child's descriptors; -1: keep ours / none */
    char progress_kv[64];
};

static int launch_cpus(const struct mb_proc_spec *spec, struct launch *l, struct mb_error *err)
{
    l->use_cpus = false;
    if (!spec->cpus || spec->cpus->n == 0)
        return MB_OK;
    CPU_ZERO(&l->cpus);
    for (unsigned i = 0; i < spec->cpus->n && i < MB_CPUSET_MAX / 8; i++) {
        if (spec->cpus->cpus[i] >= CPU_SETSIZE)
            return mb_error_set(err, MB_EINVAL, "CPU %u is out of range", spec->cpus->cpus[i]);
        CPU_SET(spec->cpus->cpus[i], &l->cpus);
    }
    l->use_cpus = true;
    return MB_OK;
}

static int launch_prepare(const struct mb_proc_spec *spec, const struct spawn_fds *f,
                          struct launch *l, struct mb_error *err)
{
    l->spec = spec;
    l->in = f->in;
    l->out = spec->capture ? f->out[1] : f->sink;
    l->err = spec->capture ? f->err[1] : f->sink;
    l->prog = f->prog[1];
    l->rep = f->rep[1];
    l->progress_kv[0] = '\0';
    if (l->prog >= 0)
        snprintf(l->progress_kv, sizeof(l->progress_kv), "%s=%d", MB_PROGRESS_FD_ENV, l->prog);
    l->env = build_env(spec->env, l->progress_kv[0] ? l->progress_kv : NULL);
    if (!l->env || resolve_candidates(spec->argv[0], &l->cand, &l->n_cand) != MB_OK)
        return mb_error_set(err, MB_ENOMEM, "out of memory");
    return MB_OK;
}

static void launch_free(struct launch *l)
{
    free(l->env);
    l->env = NULL;
    free_candidates(l->cand, l->n_cand);
    l->cand = NULL;
    l->n_cand = 0;
}

/* ---- in the child, between fork and exec: async-signal-safe calls only ---- */

/* Handlers we installed must not survive; SIG_IGN would (SIGPIPE), so reset the common ones. */
static void child_reset_signals(void)
{
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    static const int sigs[] = {SIGPIPE, SIGINT,  SIGTERM, SIGQUIT, SIGHUP,
                               SIGCHLD, SIGUSR1, SIGUSR2, SIGALRM};
    struct sigaction dfl;
    memset(&dfl, 0, sizeof(dfl));
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
        sigaction(sigs[i], &dfl, NULL); /* sigaction, unlike signal, is async-signal-safe */
}

/* stdin/stdout/stderr and the progress pipe in place, every other descriptor closed at exec. */
static int child_fds(const struct launch *l)
{
    if ((l->in >= 0 && dup2(l->in, 0) < 0) || (l->out >= 0 && dup2(l->out, 1) < 0) ||
        (l->err >= 0 && dup2(l->err, 2) < 0))
        return errno;
    if (l->prog >= 0 && fcntl(l->prog, F_SETFD, 0) < 0)
        return errno;
    /* Close whatever else we might have inherited (all of ours are CLOEXEC anyway). */
    if (l->prog >= 0) {
        if (l->prog > 3)
            close_range(3, (unsigned)l->prog - 1, CLOSE_RANGE_CLOEXEC);
        close_range((unsigned)l->prog + 1, ~0u, CLOSE_RANGE_CLOEXEC);
    } else {
        close_range(3, ~0u, CLOSE_RANGE_CLOEXEC);
    }
    /* The report pipe stays open until exec, and closes with it. */
    fcntl(l->rep, F_SETFD, FD_CLOEXEC);
    return 0;
}

/* execvp's rules over the candidates: EACCES remembered but the search goes on; ENOENT skips. */
static int child_exec_candidates(const struct launch *l)
{
    bool saw_eacces = false;
    for (size_t i = 0; i < l->n_cand; i++) {
        execve(l->cand[i], l->spec->argv, l->env);
        if (errno == EACCES)
            saw_eacces = true;
        else if (errno == ENOEXEC)
            return ENOEXEC;
        else if (errno != ENOENT && errno != ENOTDIR && errno != ESTALE && errno != ENODEV &&
                 errno != ETIMEDOUT)
            return errno;
    }
    return saw_eacces ? EACCES : ENOENT;
}

/* Sets up and execs; on failure writes {errno, 0 at exec / 1 in setup} to the report pipe. */
static void child_main(const struct launch *l)
{
    child_reset_signals();
    if (!l->spec->same_group)
        setpgid(0, 0);
    int e = child_fds(l);
    if (!e && l->use_cpus && sched_setaffinity(0, sizeof(l->cpus), &l->cpus) != 0)
        e = errno;
    if (!e && l->spec->cwd && chdir(l->spec->cwd) != 0)
        e = errno;
    int at_exec = !e;
    if (!e)
        e = child_exec_candidates(l);
    int msg[2] = {e, at_exec ? 0 : 1};
    ssize_t w = write(l->rep, msg, sizeof(msg));
    (void)w;
    _exit(e == ENOENT ? MB_PROC_EXIT_NOT_FOUND : MB_PROC_EXIT_NOT_EXECUTABLE);
}

/* ---- back in the parent ---- */

int mb_proc_spawn_exit_code(int status)
{
    if (status == MB_ENOTFOUND)
        return MB_PROC_EXIT_NOT_FOUND;
    if (status == MB_EPERM)
        return MB_PROC_EXIT_NOT_EXECUTABLE;
    return 125;
}

/*
 * Waits for the child's exec: EOF on the report pipe means it ran; a report means it did not, and
 * the child (already exiting) is reaped and the reason named.
 */
static int exec_report(struct mb_proc *p, int rep, const char *cmd, struct mb_error *err)
{
    int msg[2];
    ssize_t r;
    do
        r = read(rep, msg, sizeof(msg));
    while (r < 0 && errno == EINTR);
    if (r != (ssize_t)sizeof(msg))
        return MB_OK;
    int st;
    while (waitpid(p->pid, &st, 0) < 0 && errno == EINTR)
        ;
    p->pid = -1;
    if (msg[1] == 0 && msg[0] == ENOENT)
        return mb_error_set(err, MB_ENOTFOUND, "cannot run '%s': %s", cmd, strerror(msg[0]));
    if (msg[1] == 0)
        return mb_error_set(err, MB_EPERM, "cannot run '%s': %s", cmd, strerror(msg[0]));
    return mb_error_set(err, MB_ECHILD, "cannot prepare '%s': %s", cmd, strerror(msg[0]));
}

static int start_child(const struct launch *l, struct mb_proc *p, struct spawn_fds *f,
                       struct mb_error *err)
{
    pid_t pid = fork();
    if (pid < 0)
        return mb_error_set(err, MB_EIO, "cannot fork: %s", strerror(errno));
    if (pid == 0)
        child_main(l);
    /* Both sides call setpgid so that a signal sent right after spawn reaches the group. */
    if (!l->spec->same_group)
        setpgid(pid, pid);
    p->pid = pid;
    fds_close_child(f);
    int rc = exec_report(p, f->rep[0], l->spec->argv[0], err);
    close_fd(&f->rep[0]);
    return rc;
}

static struct mb_proc *proc_new(const struct mb_proc_spec *spec)
{
    struct mb_proc *p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    p->pid = -1;
    p->own_group = !spec->same_group;
    for (int i = 0; i < NFDS; i++)
        p->fds[i] = -1;
    p->log_fd = -1;
    p->tee_fd[0] = spec->capture ? spec->tee_stdout_fd : -1;
    p->tee_fd[1] = spec->capture ? spec->tee_stderr_fd : -1;
    p->on_data = spec->on_data;
    p->ctx = spec->ctx;
    p->head_max = spec->log_head_bytes ? spec->log_head_bytes : MB_PROC_LOG_HEAD_DEFAULT;
    p->tail_max = spec->log_tail_bytes ? spec->log_tail_bytes : MB_PROC_LOG_TAIL_DEFAULT;
    return p;
}

static int open_log(struct mb_proc *p, const struct mb_proc_spec *spec, struct mb_error *err)
{
    if (!spec->capture || !spec->log_path)
        return MB_OK;
    p->log_fd = open_high(spec->log_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (p->log_fd < 0)
        return mb_error_set(err, MB_EIO, "cannot create log '%s': %s", spec->log_path,
                            strerror(errno));
    p->tail = malloc(p->tail_max);
    if (!p->tail)
        return mb_error_set(err, MB_ENOMEM, "out of memory");
    return MB_OK;
}

/* Our ends of the capture and progress pipes become the child's streams, non-blocking. */
static void adopt_fds(struct mb_proc *p, struct spawn_fds *f)
{
    p->fds[MB_PROC_STDOUT] = f->out[0];
    p->fds[MB_PROC_STDERR] = f->err[0];
    p->fds[MB_PROC_PROGRESS] = f->prog[0];
    f->out[0] = f->err[0] = f->prog[0] = -1;
    for (int i = 0; i < NFDS; i++)
        if (p->fds[i] >= 0) {
            fcntl(p->fds[i], F_SETFL, fcntl(p->fds[i], F_GETFL) | O_NONBLOCK);
            p->had_pipes = true;
        }
}

/* A command that never ran leaves its reason in its log, not an empty file; then p goes. */
static void discard(struct mb_proc *p, const struct mb_error *err)
{
    if (!p)
        return;
    if (p->log_fd >= 0 && err)
        (void)(write_all(p->log_fd, err->msg, strlen(err->msg)) && write_all(p->log_fd, "\n", 1));
    close_fd(&p->log_fd);
    free(p->tail);
    free(p);
}

int mb_proc_spawn(const struct mb_proc_spec *spec, struct mb_proc **out, struct mb_error *err)
{
    *out = NULL;
    if (!spec || !spec->argv || !spec->argv[0] || !spec->argv[0][0])
        return mb_error_set(err, MB_EINVAL, "no command to run");
    struct launch l = {0};
    int rc = launch_cpus(spec, &l, err);
    if (rc == MB_OK)
        rc = check_env(spec->env, err);
    if (rc != MB_OK)
        return rc;
    struct mb_proc *p = proc_new(spec);
    if (!p)
        return mb_error_set(err, MB_ENOMEM, "out of memory");
    struct spawn_fds f;
    fds_init(&f);
    rc = open_log(p, spec, err);
    if (rc == MB_OK)
        rc = open_fds(spec, &f, err);
    if (rc == MB_OK)
        rc = launch_prepare(spec, &f, &l, err);
    if (rc == MB_OK)
        rc = start_child(&l, p, &f, err);
    launch_free(&l);
    if (rc == MB_OK)
        adopt_fds(p, &f);
    fds_close_all(&f);
    if (rc != MB_OK) {
        discard(p, err);
        return rc;
    }
    *out = p;
    return MB_OK;
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
    bool any_exited = false, any_closed = false, any_unpiped = false;
    for (size_t i = 0; i < n; i++) {
        struct mb_proc *p = procs[i];
        if (!p || p->done)
            continue;
        if (p->kill_at_ns && !p->exited && now >= p->kill_at_ns && !p->killed) {
            kill(signal_target(p), SIGKILL);
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
        /* A child with no pipes (a helper) has only its exit to wait for. */
        any_unpiped = any_unpiped || (!p->had_pipes && !p->exited);
    }
    /* Exit is noticed by waitpid, not by an fd: do not sleep past it for long. */
    int cap_ms = any_closed ? 2 : any_unpiped ? 10 : 50;
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
    if (kill(signal_target(p), sig) != 0 && errno != ESRCH)
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
        kill(signal_target(p), SIGKILL);
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

/* ---- short helper commands: mb_proc_spawn, waited for here ---- */

int mb_proc_run_helper(char *const argv[], char *const extra_env[], const char *stdin_text,
                       const char *log_path, int timeout_ms, char *why, size_t cap)
{
    struct mb_proc_spec spec = {
        .argv = argv,
        .env = extra_env,
        .stdin_text = stdin_text,
        .stdin_null = !stdin_text,
        .append_path = log_path ? log_path : "/dev/null",
        .same_group = true,
        .tee_stdout_fd = -1,
        .tee_stderr_fd = -1,
    };
    struct mb_error e = {0};
    struct mb_proc *p = NULL;
    if (!argv || !argv[0]) {
        snprintf(why, cap, "no command to run");
        return MB_PROC_HELPER_FAILED;
    }
    if (mb_proc_spawn(&spec, &p, &e) != MB_OK) {
        snprintf(why, cap, "%s", e.msg);
        return MB_PROC_HELPER_FAILED;
    }
    int64_t end = mb_proc_now_ns() + (int64_t)(timeout_ms < 0 ? 0 : timeout_ms) * 1000000;
    int rc = MB_OK;
    while (!mb_proc_done(p) && rc != MB_EIO) {
        int64_t left = (end - mb_proc_now_ns()) / 1000000;
        if (left <= 0)
            break;
        rc = mb_proc_wait(p, left > INT_MAX ? INT_MAX : (int)left, &e);
    }
    if (!mb_proc_done(p)) {
        mb_proc_destroy(p); /* kills and reaps it */
        if (rc == MB_EIO) {
            snprintf(why, cap, "%s", e.msg);
            return MB_PROC_HELPER_FAILED;
        }
        snprintf(why, cap, "%s did not finish within %d ms", argv[0], timeout_ms);
        return MB_PROC_HELPER_TIMEOUT;
    }
    int status = mb_proc_wait_status(p);
    mb_proc_destroy(p);
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    snprintf(why, cap, "%s was killed by signal %d", argv[0], WTERMSIG(status));
    return MB_PROC_HELPER_SIGNAL;
}
