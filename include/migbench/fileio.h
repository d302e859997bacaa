/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Whole-file input and output shared by the library and the CLI: an atomic replace for files
 * that readers must never see half-written (results, state, records, emitted configurations,
 * reports), and a bounded reader for files that come from outside.
 *
 * Threads: both functions are safe to call from several threads at once, also on one path.
 */
#ifndef MIGBENCH_FILEIO_H
#define MIGBENCH_FILEIO_H

#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

#include "migbench/status.h"

/*
 * Replaces the file at path with the len bytes at data, so that a reader sees either the old
 * file or the complete new one: the bytes go to a new temporary file in the same directory
 * (created with mode, less the umask), which is fsync'd and renamed over path, and then the
 * directory is fsync'd so the rename survives a crash. On failure the temporary file is
 * removed and path is left as it was. Returns MB_OK, MB_ERANGE (path too long) or MB_EIO with
 * the path and the reason in err.
 */
int mb_file_write_atomic(const char *path, const void *data, size_t len, mode_t mode,
                         struct mb_error *err);

/*
 * Opens path for reading as an input file from outside: without blocking (a FIFO with no writer
 * cannot hold the caller) and only when it is a regular file. On MB_OK *fd_out is a descriptor
 * (close-on-exec, blocking) that the caller closes. Returns MB_ENOTFOUND when path does not
 * exist, MB_EIO when it cannot be opened or is not a regular file ("PATH: cannot read: a FIFO,
 * not a regular file"); *fd_out is then -1.
 */
int mb_file_open_input(const char *path, int *fd_out, struct mb_error *err);

/* What a file of mode m is when it is not a regular file, for messages: "a directory", "a FIFO",
 * "a character device", "a block device", "a socket" or "something else". */
const char *mb_file_kind_str(mode_t m);

/*
 * mb_file_open_input as a stdio stream for line readers: on MB_OK *out is open for reading and
 * the caller fcloses it; otherwise *out is NULL and the statuses are mb_file_open_input's.
 */
int mb_file_fopen_input(const char *path, FILE **out, struct mb_error *err);

/*
 * Reads the whole file at path, at most max_bytes of it, into a new NUL-terminated buffer at
 * *out that the caller frees with free(); *len_out (may be NULL) gets its length without the
 * terminator. Returns MB_OK; MB_ENOTFOUND when path does not exist; MB_ERANGE when the file is
 * larger than max_bytes; MB_EIO when it cannot be opened or read or is not a regular file
 * (see mb_file_open_input, which it uses); MB_ENOMEM. On failure *out is
 * NULL and err says "PATH: cannot open: REASON", "PATH: larger than N bytes" or
 * "PATH: read error: REASON".
 */
int mb_file_read(const char *path, size_t max_bytes, char **out, size_t *len_out,
                 struct mb_error *err);

#endif
