/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the dispatcher and the backends share, below both: the spec-option tokenizer and its
 * number and path checks (device/backends.h), and the list an expanded spec fills. It calls no
 * other file of the device layer, so the dispatcher calls the backends and never the reverse.
 */
#include "migbench/device.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "device/backends.h"
#include "migbench/fileio.h"
#include "migbench/num.h"

const char *mb__spec_short(const char *spec, char *buf, size_t cap)
{
    size_t n = strlen(spec);
    if (n < 80 || cap < 80)
        return spec;
    /* The head names the backend and model, the tail the option that was being read. */
    snprintf(buf, cap, "%.40s...%s", spec, spec + n - 32);
    return buf;
}

int mb__spec_path(const char *key, const char *path, struct mb_error *err)
{
    struct stat st;
    if (!path[0])
        return mb_error_set(err, MB_EINVAL, "option %s=: empty path", key);
    if (stat(path, &st) != 0 || S_ISREG(st.st_mode))
        return MB_OK; /* missing: the reader says so (or, for state=, creates it) */
    return mb_error_set(err, MB_EINVAL, "option %s=%.200s: %s, not a regular file", key, path,
                        mb_file_kind_str(st.st_mode));
}

int mb__spec_next(const char **p, const char *what, char *key, char *val, struct mb_error *err)
{
    const char *s = *p;
    while (*s == ':' || *s == ',')
        s++;
    if (!*s) {
        *p = s;
        return MB_ENOTFOUND;
    }
    const char *eq = s;
    while (*eq && *eq != '=' && *eq != ':' && *eq != ',')
        eq++;
    if (*eq != '=' || eq == s) {
        size_t n = strcspn(s, ":,");
        char sb[96];
        return mb_error_set(err, MB_EINVAL, "device spec '%s': option '%.*s' is not key=value",
                            mb__spec_short(what, sb, sizeof(sb)), (int)(n > 64 ? 64 : n), s);
    }
    size_t klen = (size_t)(eq - s);
    char sb[96];
    if (klen >= MB__SPEC_KEY_MAX)
        return mb_error_set(err, MB_EINVAL, "device spec '%s': option name too long",
                            mb__spec_short(what, sb, sizeof(sb)));
    memcpy(key, s, klen);
    key[klen] = '\0';
    /* The value runs to the next separator that starts another key=value piece. */
    const char *v = eq + 1;
    const char *end = v;
    for (;;) {
        end += strcspn(end, ":,");
        if (!*end)
            break;
        const char *next = end + 1;
        size_t piece = strcspn(next, ":,");
        if (piece == 0 || memchr(next, '=', piece))
            break;
        end = next + piece;
        if (!*end)
            break;
    }
    size_t vlen = (size_t)(end - v);
    if (vlen >= MB__SPEC_VAL_MAX)
        return mb_error_set(err, MB_EINVAL,
                            "device spec '%s': value of '%s' too long (%zu bytes; at most %d)",
                            mb__spec_short(what, sb, sizeof(sb)), key, vlen, MB__SPEC_VAL_MAX - 1);
    memcpy(val, v, vlen);
    val[vlen] = '\0';
    *p = end;
    return MB_OK;
}

int mb__spec_u64(const char *key, const char *val, unsigned long long *out, struct mb_error *err)
{
    if (!val[0] || val[0] < '0' || val[0] > '9')
        return mb_error_set(err, MB_EINVAL, "option %s=%s: expected a whole number", key, val);
    errno = 0;
    char *end = NULL;
    unsigned long long v = strtoull(val, &end, 10);
    if (errno || *end)
        return mb_error_set(err, MB_EINVAL, "option %s=%s: expected a whole number", key, val);
    *out = v;
    return MB_OK;
}

int mb__spec_double(const char *key, const char *val, double *out, struct mb_error *err)
{
    double v;
    int nrc = mb_num_parse(val, &v, NULL);
    if (nrc == MB_ERANGE)
        return mb_error_set(err, MB_EINVAL, "option %s=%s: number out of range", key, val);
    if (nrc != MB_OK)
        return mb_error_set(err, MB_EINVAL, "option %s=%s: expected a number", key, val);
    *out = v;
    return MB_OK;
}

void mb_device_spec_list_free(struct mb_device_spec_list *list)
{
    if (!list)
        return;
    for (size_t i = 0; i < list->n; i++)
        free(list->specs[i]);
    list->n = 0;
}

int mb_device_spec_list_add(struct mb_device_spec_list *list, const char *spec,
                            struct mb_error *err)
{
    if (list->n == MB_MAX_DEVICES)
        return mb_error_set(err, MB_ERANGE, "more than %d devices in one spec", MB_MAX_DEVICES);
    char *copy = strdup(spec);
    if (!copy)
        return mb_error_set(err, MB_ENOMEM, "out of memory");
    list->specs[list->n++] = copy;
    return MB_OK;
}
