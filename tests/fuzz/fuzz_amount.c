/* SPDX-License-Identifier: Apache-2.0 */
/* Durations and amounts ("20s", "50 steps", "stable") and the number parser under them. */
#include <math.h>

#include "fuzz_common.h"
#include "migbench/experiment.h"
#include "migbench/num.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = fuzz_str(data, size);
    struct mb_amount a;
    struct mb_error err;
    for (int m = 0; m < 4; m++)
        if (mb_amount_parse(s, m & 1, (m & 2) != 0, &a, &err) == MB_OK &&
            a.kind == MB_AMOUNT_TIME && a.ns < 0)
            abort(); /* a duration is never negative */
    double v;
    const char *rest;
    if (mb_num_parse(s, &v, NULL) == MB_OK && !isfinite(v))
        abort();
    if (mb_num_parse(s, &v, &rest) == MB_OK && (rest <= s || rest > s + size))
        abort();
    int64_t i;
    if (mb_num_parse(s, &v, NULL) == MB_OK)
        (void)mb_num_to_i64(v, INT64_MIN, INT64_MAX, &i);
    free(s);
    return 0;
}
