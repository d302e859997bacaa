/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Progress lines from a job: the first byte picks protocol or regex mode and how the bytes are
 * cut into reads; the rest is the job's output.
 */
#include "fuzz_common.h"
#include "migbench/progress.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t ctl = data[0];
    data++;
    size--;
    struct mb_progress_opts o = {0};
    if (ctl & 1) {
        o.regex = "iter ([0-9]+)";
        o.samples_per_step = 64;
    }
    o.max_line_bytes = (ctl & 2) ? 64 : 0;
    o.max_points = (ctl & 4) ? 8 : 0;
    struct mb_progress *p = NULL;
    struct mb_error err;
    if (mb_progress_create(&o, &p, &err) != MB_OK)
        abort();
    size_t chunk = (size_t)(ctl >> 3) + 1;
    int64_t t = 1000;
    for (size_t off = 0; off < size; off += chunk) {
        size_t n = size - off < chunk ? size - off : chunk;
        mb_progress_feed(p, (const char *)data + off, n, t);
        t += 1000000 * (int64_t)((ctl >> 4) + 1);
    }
    mb_progress_end(p);
    struct mb_throughput tp;
    mb_progress_throughput(p, 0, 0, 0, 0, &tp);
    mb_progress_throughput(p, 1000, 5000000, 2, 3, &tp);
    mb_progress_destroy(p);
    return 0;
}
