/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Child processes: spawn a command from an argv vector (never a shell), capture its output into a
 * bounded log, hand it a progress pipe, and supervise many children from one poll loop.
 *
 * A child runs in its own process group (signals go to the whole group), with every descriptor
 * of ours closed except stdin/stdout/stderr and, when asked for, the write end of a progress pipe
 * whose number it finds in MIGBENCH_PROGRESS_FD.
 *
 * Output log: stdout and stderr are interleaved as they arrive into one file. The file keeps the
 * first `log_head_bytes` and the last `log_tail_bytes` of the output; what lies between is
 * replaced by one line "[migbench: N bytes omitted]". The tail is held in a fixed ring until the
 * child's pipes close, so memory is bounded by log_tail_bytes per child.
 *
 * Threads: a struct mb_proc belongs to one thread. mb_proc_poll may be called for many children at
 * once. Spawning is safe while other threads run (the child calls only async-signal-safe
 * functions between fork and exec).
 */
#ifndef MIGBENCH_PROC_H
#define MIGBENCH_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "migbench/device.h"
#include "migbench/status.h"

/* The environment variable that carries the progress pipe's descriptor number. */
#define MB_PROGRESS_FD_ENV "MIGBENCH_PROGRESS_FD"

/* Default log bounds (bytes). */
#define MB_PROC_LOG_HEAD_DEFAULT (256u * 1024u)
#define MB_PROC_LOG_TAIL_DEFAULT (256u * 1024u)

/* Exit codes for children that could not be started, as timeout(1) and env(1) use them. */
#define MB_PROC_EXIT_NOT_FOUND 127
#define MB_PROC_EXIT_NOT_EXECUTABLE 126

/* Which stream a chunk of child data came from. */
enum mb_proc_stream {
    MB_PROC_STDOUT = 0,
    MB_PROC_STDERR = 1,
    MB_PROC_PROGRESS = 2,
};

/*
 * Receives a chunk of child output as it is read. t_ns is CLOCK_MONOTONIC taken right after the
 * read returned (the meter's clock). The buffer is only valid during the call.
 */
typedef void (*mb_proc_data_fn)(void *ctx, enum mb_proc_stream stream, const char *buf, size_t n,
                                int64_t t_ns);

/* What to run and how. Zero-initialise and fill what you need; the spec is not kept. */
struct mb_proc_spec {
    char *const *argv; /* required; argv[0] is looked up in PATH unless it contains '/' */
    /* Extra "NAME=value" entries (NULL-terminated) added to our environment in order; an entry
     * replaces a variable of the same name, so a later entry wins. An entry without '=' or with
     * an empty name is refused (MB_EINVAL). NULL: none. */
    char *const *env;
    const char *cwd;              /* NULL: ours */
    const struct mb_cpuset *cpus; /* NULL or empty: inherit our affinity */
    bool stdin_null;              /* stdin from /dev/null instead of ours */
    /* stdin reads this text and then EOF (it must fit in a pipe's buffer, 64 KiB on Linux; a
     * longer one is refused with MB_EINVAL). NULL: stdin_null decides. */
    const char *stdin_text;
    /* Not capture: the child's stdout and stderr are appended to this file (created 0600).
     * NULL: they are ours. */
    const char *append_path;
    /* Stay in our process group (a helper, not a job): signals, termination and mb_proc_destroy
     * then reach the child alone, not what it leaves behind. false: a group of its own. */
    bool same_group;
    bool progress_pipe; /* create the progress pipe (MIGBENCH_PROGRESS_FD) */
    /* Capture stdout/stderr through pipes. When false the child writes to our stdout/stderr
     * directly and log_path/tee/on_data see nothing of it. */
    bool capture;
    /* capture: the child's stdout is a pseudo-terminal (raw mode, so no "\r\n"), which makes
     * programs that block-buffer a pipe (C stdio, Python) write it line by line; stderr stays a
     * pipe. */
    bool pty;
    const char
        *log_path; /* capture: also write to this file (created/truncated, 0644); NULL none */
    size_t log_head_bytes;   /* 0: MB_PROC_LOG_HEAD_DEFAULT */
    size_t log_tail_bytes;   /* 0: MB_PROC_LOG_TAIL_DEFAULT */
    int tee_stdout_fd;       /* capture: copy the child's stdout to this fd; -1 none */
    int tee_stderr_fd;       /* capture: copy the child's stderr to this fd; -1 none */
    mb_proc_data_fn on_data; /* NULL: none; progress data is delivered only here */
    void *ctx;
};

struct mb_proc;

/*
 * Starts the child. On success *out is owned by the caller (mb_proc_destroy). When the command
 * cannot be executed, returns MB_ENOTFOUND (not found: exit code 127) or MB_EPERM (found but not
 * executable: 126) with the reason in err and *out NULL; see mb_proc_spawn_exit_code. Other
 * failures (pipes, fork, log file): MB_EIO / MB_ENOMEM / MB_EINVAL.
 */
int mb_proc_spawn(const struct mb_proc_spec *spec, struct mb_proc **out, struct mb_error *err);

/* Maps an mb_proc_spawn status to timeout(1)'s exit code: 127, 126, or 125 for anything else. */
int mb_proc_spawn_exit_code(int status);

/* The child's pid (also its process group id). */
pid_t mb_proc_pid(const struct mb_proc *p);

/*
 * Services up to n children: waits at most timeout_ms (0 = do not wait, -1 = until something
 * happens) for output on any of them, reads and dispatches what is there (log, tee, on_data),
 * sends SIGKILL to those whose termination grace period has run out, and reaps those that exited.
 * NULL entries and finished children are skipped. Returns MB_OK, or MB_EINTR when a signal
 * interrupted the wait (nothing lost; call again), or MB_EIO.
 */
int mb_proc_poll(struct mb_proc *const *procs, size_t n, int timeout_ms, struct mb_error *err);

/* True once the child has exited and its output has been drained and the log closed. */
bool mb_proc_done(const struct mb_proc *p);

/*
 * The exit code in the shell's convention: 0..255 for a normal exit, 128+N when killed by signal
 * N. -1 while the child still runs.
 */
int mb_proc_exit_code(const struct mb_proc *p);

/* The raw wait status (for WIFSIGNALED etc.); valid once mb_proc_done. */
int mb_proc_wait_status(const struct mb_proc *p);

/* Sends sig to the child's process group (no-op once it has exited). Returns MB_OK or MB_EIO. */
int mb_proc_signal(struct mb_proc *p, int sig);

/*
 * Asks the child's group to stop: SIGTERM now, SIGKILL when grace_ms have passed and it still
 * runs (enforced by mb_proc_poll / mb_proc_wait). Calling it again does not extend the deadline.
 */
int mb_proc_terminate(struct mb_proc *p, int grace_ms);

/*
 * Polls this one child until it is done or timeout_ms pass (-1: no limit). Returns MB_OK when
 * done, MB_ETIMEDOUT otherwise; MB_EINTR when interrupted by a signal.
 */
int mb_proc_wait(struct mb_proc *p, int timeout_ms, struct mb_error *err);

/* Bytes of output captured (stdout+stderr) and bytes left out of the log. */
uint64_t mb_proc_output_bytes(const struct mb_proc *p);
uint64_t mb_proc_log_omitted_bytes(const struct mb_proc *p);

/*
 * Frees the child's resources. A child that still runs is killed (SIGKILL to its group) and
 * reaped first so nothing is left behind. NULL is a no-op.
 */
void mb_proc_destroy(struct mb_proc *p);

/* CLOCK_MONOTONIC now, in ns (mb_clock_monotonic_ns). */
int64_t mb_proc_now_ns(void);

/* What mb_proc_run_helper returns when the helper gave no exit status. */
#define MB_PROC_HELPER_FAILED (-1)  /* it could not be started or waited for */
#define MB_PROC_HELPER_TIMEOUT (-2) /* killed after timeout_ms */
#define MB_PROC_HELPER_SIGNAL (-3)  /* killed by a signal */

/*
 * Runs a short helper command to completion in this thread, through mb_proc_spawn (so the same
 * PATH search, environment merge and exec-failure reasons as a job): extra_env is spec.env;
 * stdin reads stdin_text (NULL: /dev/null); stdout and stderr are appended to log_path (NULL:
 * /dev/null); SIGKILL after timeout_ms. Returns the exit status (0..255), or an MB_PROC_HELPER_*
 * code with the reason in why ("cannot run 'X': ..." when it could not be started). It is not a
 * job: it stays in our process group, with no capture and no progress pipe.
 */
int mb_proc_run_helper(char *const argv[], char *const extra_env[], const char *stdin_text,
                       const char *log_path, int timeout_ms, char *why, size_t cap);

#endif
