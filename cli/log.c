/* SPDX-License-Identifier: Apache-2.0 */
#include <stdarg.h>
#include <math.h>
#include <stdio.h>

#include "cli.h"

/* CLI-only state: the library itself never prints. */
static int verbosity = 1;

void mb_cli_set_verbosity(int level)
{
    verbosity = level;
}

int mb_cli_verbosity(void)
{
    return verbosity;
}

static void vsay(const char *kind, const char *cmd, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

static void vsay(const char *kind, const char *cmd, const char *fmt, va_list ap)
{
    fputs("migbench: ", stderr);
    if (cmd)
        fprintf(stderr, "%s: ", cmd);
    if (kind)
        fputs(kind, stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

void mb_cli_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsay(NULL, cmd, fmt, ap);
    va_end(ap);
}

void mb_cli_warn(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsay("warning: ", cmd, fmt, ap);
    va_end(ap);
}

void mb_cli_info(const char *cmd, const char *fmt, ...)
{
    if (verbosity < 1)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsay(NULL, cmd, fmt, ap);
    va_end(ap);
}

void mb_cli_debug(const char *cmd, const char *fmt, ...)
{
    if (verbosity < 2)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsay(NULL, cmd, fmt, ap);
    va_end(ap);
}

int mb_cli_usage_error(const struct mb_cmd *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsay(NULL, cmd->name, fmt, ap);
    va_end(ap);
    fprintf(stderr, "usage: %s\nTry 'migbench help %s'.\n", cmd->usage, cmd->name);
    return MB_EXIT_USAGE;
}

void mb_cli_print_help(const struct mb_cmd *cmd, FILE *out)
{
    fprintf(out, "usage: %s\n\n%s\n", cmd->usage, cmd->summary);
    if (cmd->help && cmd->help[0])
        fprintf(out, "\n%s", cmd->help);
}

int mb_cli_exit_for(int status)
{
    switch (status) {
    case MB_OK:
        return MB_EXIT_OK;
    case MB_EINVAL:
    case MB_EPARSE:
    case MB_ENOTFOUND:
    case MB_ERANGE:
        return MB_EXIT_USAGE;
    default:
        return MB_EXIT_FAIL;
    }
}

char *mb_cli_fmt_sig(char *buf, size_t cap, double v, int sig)
{
    if (!isfinite(v) || v == 0) {
        snprintf(buf, cap, "%.0f", v);
        return buf;
    }
    int mag = (int)floor(log10(fabs(v)));
    int dec = sig - 1 - mag;
    if (dec < 0)
        dec = 0;
    if (dec > 9)
        dec = 9;
    /* Round to sig digits first, so 149.6 with 2 digits gives 150, not 149.6 -> "150". */
    double scale = pow(10, mag - sig + 1);
    double r = dec == 0 ? round(v / scale) * scale : v;
    int n = snprintf(buf, cap, "%.*f", dec, r);
    /* Trailing zeros go, as with %g: 0.4, not 0.400. */
    if (dec > 0 && n > 0 && (size_t)n < cap) {
        while (n > 0 && buf[n - 1] == '0')
            buf[--n] = '\0';
        if (n > 0 && buf[n - 1] == '.')
            buf[--n] = '\0';
    }
    return buf;
}
