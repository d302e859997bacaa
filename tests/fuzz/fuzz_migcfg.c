/* SPDX-License-Identifier: Apache-2.0 */
/* mig-parted style configuration files (migbench mig apply). */
#include "fuzz_common.h"
#include "migbench/migcfg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct mb_migcfg *cfg = NULL;
    struct mb_error err;
    if (mb_migcfg_parse((const char *)data, size, "fuzz.yaml", &cfg, &err) == MB_OK)
        mb_migcfg_destroy(cfg);
    return 0;
}
