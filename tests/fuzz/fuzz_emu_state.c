/* SPDX-License-Identifier: Apache-2.0 */
/* The emulator's state file: opened, read, and one change tried (nothing changes when refused). */
#include "fuzz_common.h"
#include "migbench/device.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_file("emu-state.json", data, size);
    char spec[256];
    snprintf(spec, sizeof(spec), "emu:A100-80GB,state=%s", path);
    struct mb_device *dev = NULL;
    struct mb_error err;
    if (mb_device_open(spec, &dev, &err) != MB_OK)
        return 0;
    struct mb_mig_mode mode;
    struct mb_mig_instance inst[64];
    size_t n = 0;
    if (mb_device_mig_mode(dev, &mode, &err) == MB_OK &&
        mb_device_mig_instances(dev, inst, 64, &n, &err) == MB_OK && n > 0)
        (void)mb_device_mig_destroy_gi(dev, inst[0].gi_id, &err);
    mb_device_close(dev);
    return 0;
}
