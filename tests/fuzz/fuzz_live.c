/* SPDX-License-Identifier: Apache-2.0 */
/* A live file (run-PID.json) from a shared runtime directory: another user's input. */
#include <math.h>

#include "fuzz_common.h"
#include "monitor/live_internal.h"

/* No byte a terminal or a textfile would act on: C0, DEL, and C1 (UTF-8 C2 80..C2 9F). */
static void printable(const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p < 0x20 || *p == 0x7f || (*p == 0xc2 && p[1] >= 0x80 && p[1] < 0xa0))
            abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_str(data, size);
    struct mb_live_cell c;
    struct mb_error err;
    if (mb__live_parse(text, size, "run-1.json", &c, &err) == MB_OK) {
        if (c.pid < 1 || (c.n_cells && c.cell_index >= c.n_cells) || c.n_jobs > MB_LIVE_JOBS_MAX)
            abort();
        const double v[] = {c.elapsed_s, c.window_s, c.window_target_s, c.power_w};
        for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
            if (!isfinite(v[i]) || v[i] < 0)
                abort();
        const char *s[] = {c.experiment, c.results_dir, c.device_spec, c.device_uuid,
                           c.run,        c.mode,        c.phase};
        for (size_t i = 0; i < sizeof(s) / sizeof(s[0]); i++)
            printable(s[i]);
        for (size_t j = 0; j < c.n_jobs; j++) {
            printable(c.jobs[j].name);
            printable(c.jobs[j].unit);
            if (c.jobs[j].rate_valid && !(c.jobs[j].rate >= 0 && isfinite(c.jobs[j].rate)))
                abort();
        }
    }
    free(text);
    return 0;
}
