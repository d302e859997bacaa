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

#define HEAD_KEEP 160 /* what the message is about: the command, file or spec */
#define LONG_MSG 16384

/*
 * Copies text into msg; a text that does not fit keeps its head and its tail around " ... ",
 * because the tail holds the reason (a long path or device spec in the middle would otherwise
 * push it out).
 */
static void fit(char msg[MB_ERROR_MSG_MAX], const char *text)
{
    size_t n = strlen(text);
    if (n < MB_ERROR_MSG_MAX) {
        memcpy(msg, text, n + 1);
        return;
    }
    static const char gap[] = " ... ";
    size_t tail = MB_ERROR_MSG_MAX - 1 - HEAD_KEEP - (sizeof(gap) - 1);
    memcpy(msg, text, HEAD_KEEP);
    memcpy(msg + HEAD_KEEP, gap, sizeof(gap) - 1);
    memcpy(msg + HEAD_KEEP + sizeof(gap) - 1, text + n - tail, tail + 1);
}

int mb_error_set(struct mb_error *err, int status, const char *fmt, ...)
{
    if (!err)
        return status;
    char text[LONG_MSG];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    fit(err->msg, text);
    err->status = status;
    return status;
}

int mb_error_prefix(struct mb_error *err, const char *fmt, ...)
{
    if (!err)
        return MB_OK;
    char text[LONG_MSG];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(text, sizeof(text) - MB_ERROR_MSG_MAX, fmt, ap);
    va_end(ap);
    if (n < 0)
        n = 0;
    if ((size_t)n >= sizeof(text) - MB_ERROR_MSG_MAX)
        n = (int)(sizeof(text) - MB_ERROR_MSG_MAX - 1);
    snprintf(text + n, MB_ERROR_MSG_MAX, "%s", err->msg);
    fit(err->msg, text);
    return err->status;
}

int mb_error_restatus(struct mb_error *err, int status)
{
    if (err)
        err->status = status;
    return status;
}
