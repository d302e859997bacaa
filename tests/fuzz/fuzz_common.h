/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers shared by the libFuzzer targets: inputs that the library reads from files. */
#ifndef MIGBENCH_FUZZ_COMMON_H
#define MIGBENCH_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * A per-process scratch directory under $MB_FUZZ_SCRATCH (scripts/fuzz.sh makes one in /dev/shm
 * and removes it), else under /dev/shm or /tmp; made once, kept for the process.
 */
static inline const char *fuzz_dir(void)
{
    static char dir[256];
    if (!dir[0]) {
        const char *base = getenv("MB_FUZZ_SCRATCH");
        if (!base || !base[0])
            base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
        snprintf(dir, sizeof(dir), "%s/mb-fuzz-%ld", base, (long)getpid());
        mkdir(dir, 0700);
    }
    return dir;
}

/* Writes n bytes to DIR/name (replacing it) and returns the path in a static buffer. */
static inline const char *fuzz_file(const char *name, const void *data, size_t n)
{
    static char path[4][192];
    static unsigned turn;
    char *p = path[turn++ % 4];
    snprintf(p, sizeof(path[0]), "%s/%s", fuzz_dir(), name);
    FILE *f = fopen(p, "wb");
    if (!f)
        abort();
    if (n && fwrite(data, 1, n, f) != n)
        abort();
    if (fclose(f) != 0)
        abort();
    return p;
}

/*
 * Splits data at the separator line "\n%%\n" into up to max parts; returns the count. Parts
 * point into data (not NUL-terminated); lens gets their lengths.
 */
static inline size_t fuzz_split(const uint8_t *data, size_t size, const uint8_t **parts,
                                size_t *lens, size_t max)
{
    static const char sep[] = "\n%%\n";
    size_t n = 0, start = 0;
    for (size_t i = 0; i + 4 <= size && n + 1 < max; i++)
        if (memcmp(data + i, sep, 4) == 0) {
            parts[n] = data + start;
            lens[n++] = i - start + 1; /* keeps the part's last newline */
            start = i + 4;
            i += 3;
        }
    parts[n] = data + start;
    lens[n++] = size - start;
    return n;
}

/* A NUL-terminated copy of n bytes; the caller frees it. */
static inline char *fuzz_str(const uint8_t *p, size_t n)
{
    char *s = malloc(n + 1);
    if (!s)
        abort();
    memcpy(s, p, n);
    s[n] = '\0';
    return s;
}

#endif
