/* SPDX-License-Identifier: Apache-2.0 */
#include "migbench/status.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *mb_status_str(int s)
{
    switch (s) {
#define MB__STATUS_STR(name, num, desc)                                                            \
    case num:                                                                                      \
        return desc;
        MB_STATUS_LIST(MB__STATUS_STR)
#undef MB__STATUS_STR
    }
    return "unknown status";
}

const char *mb_status_name(int s)
{
    switch (s) {
#define MB__STATUS_NAME(name, num, desc)                                                           \
    case num:                                                                                      \
        return #name;
        MB_STATUS_LIST(MB__STATUS_NAME)
#undef MB__STATUS_NAME
    }
    return "MB_UNKNOWN";
}

void mb_error_clear(struct mb_error *err)
{
    if (!err)
        return;
    err->status = MB_OK;
    err->msg[0] = '\0';
}

int mb_error_set(struct mb_error *err, int status, const char *fmt, ...)
{
    if (!err)
        return status;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
    va_end(ap);
    err->status = status;
    return status;
}

int mb_error_prefix(struct mb_error *err, const char *fmt, ...)
{
    if (!err)
        return MB_OK;
    char prefix[MB_ERROR_MSG_MAX];
    char old[MB_ERROR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof(prefix), fmt, ap);
    va_end(ap);
    memcpy(old, err->msg, sizeof(old));
    size_t n = strlen(prefix);
    memcpy(err->msg, prefix, n + 1);
    if (n < sizeof(err->msg) - 1) {
        size_t room = sizeof(err->msg) - 1 - n;
        size_t m = strnlen(old, room);
        memcpy(err->msg + n, old, m);
        err->msg[n + m] = '\0';
    }
    return err->status;
}

int mb_error_restatus(struct mb_error *err, int status)
{
    if (err)
        err->status = status;
    return status;
}
