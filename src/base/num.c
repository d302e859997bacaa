/* SPDX-License-Identifier: Apache-2.0 */
/* Decimal numbers from outside text, and guarded double-to-integer conversion. */
#include "migbench/num.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "migbench/status.h"

/* Length of the decimal number at s by the grammar in num.h; 0 when there is none. */
static size_t scan_decimal(const char *s)
{
    size_t i = 0, digits = 0;
    if (s[i] == '+' || s[i] == '-')
        i++;
    while (s[i] >= '0' && s[i] <= '9') {
        i++;
        digits++;
    }
    if (s[i] == '.') {
        i++;
        while (s[i] >= '0' && s[i] <= '9') {
            i++;
            digits++;
        }
    }
    if (!digits)
        return 0;
    if (s[i] == 'e' || s[i] == 'E') {
        size_t j = i + 1;
        if (s[j] == '+' || s[j] == '-')
            j++;
        if (s[j] >= '0' && s[j] <= '9') {
            while (s[j] >= '0' && s[j] <= '9')
                j++;
            i = j;
        }
        /* "2e" or "5em": the number ends before the 'e', which the caller sees as the rest */
    }
    return i;
}

int mb_num_parse(const char *s, double *out, const char **rest)
{
    size_t n = scan_decimal(s);
    if (!n || (!rest && s[n] != '\0'))
        return MB_EPARSE;
    /* strtod on a copy of exactly the scanned text: it cannot wander into hex or inf. */
    char buf[128];
    char *heap = NULL;
    char *p = buf;
    if (n >= sizeof(buf)) {
        heap = malloc(n + 1);
        if (!heap)
            return MB_ENOMEM;
        p = heap;
    }
    memcpy(p, s, n);
    p[n] = '\0';
    errno = 0;
    char *end;
    double v = strtod(p, &end);
    int e = errno;
    bool whole = (size_t)(end - p) == n;
    free(heap);
    if (!whole)
        return MB_EPARSE;
    /* ERANGE also flags results in the denormal range; a nonzero value there is refused too. */
    if (!isfinite(v) || e == ERANGE) {
        bool all_zero = true;
        for (size_t i = 0; i < n && s[i] != 'e' && s[i] != 'E'; i++)
            if (s[i] >= '1' && s[i] <= '9')
                all_zero = false;
        if (!all_zero || !isfinite(v))
            return MB_ERANGE;
        v = 0; /* "0e-400" is zero */
    }
    *out = v;
    if (rest)
        *rest = s + n;
    return MB_OK;
}

bool mb_num_fits_i64(double v)
{
    return isfinite(v) && v >= -9223372036854775808.0 && v < 9223372036854775808.0;
}

bool mb_num_fits_u64(double v)
{
    return isfinite(v) && v > -1.0 && v < 18446744073709551616.0;
}

int mb_num_to_i64(double v, int64_t lo, int64_t hi, int64_t *out)
{
    if (!mb_num_fits_i64(v) || v != floor(v))
        return MB_ERANGE;
    int64_t i = (int64_t)v;
    if (i < lo || i > hi)
        return MB_ERANGE;
    *out = i;
    return MB_OK;
}

char *mb_num_fmt_sig(char *buf, size_t cap, double v, int sig)
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

uint64_t mb_fnv1a64(uint64_t h, const void *data, size_t len)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}
