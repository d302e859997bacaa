/* SPDX-License-Identifier: Apache-2.0 */
/* The power-limit restore record a crashed run leaves (read at every start), and limit texts. */
#include "fuzz_common.h"
#include "migbench/powercap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_file("powercap.json", data, size);
    struct mb_powercap_record r;
    struct mb_error err;
    if (mb_powercap_read(path, &r, &err) == MB_OK &&
        (r.pid < 1 || r.original_mw == 0 || r.set_mw == 0 || !r.uuid[0] || r.t_unix_s < 0))
        abort();
    /* The same bytes as a limit in the experiment ("80%", "250W", "default"). */
    char *text = fuzz_str(data, size < 64 ? size : 64);
    struct mb_power_setting ps;
    if (mb_power_setting_parse(text, &ps, &err) == MB_OK &&
        !(ps.kind == MB_PSET_DEFAULT ||
          (ps.kind == MB_PSET_PERCENT && ps.value > 0 && ps.value <= 100) ||
          (ps.kind == MB_PSET_WATTS && ps.value > 0 && ps.value < 100000)))
        abort();
    free(text);
    return 0;
}
