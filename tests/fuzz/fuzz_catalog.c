/* SPDX-License-Identifier: Apache-2.0 */
/* User MIG catalogs (layouts --catalog): loaded over the built-in one, then every model listed. */
#include "fuzz_common.h"
#include "migbench/catalog.h"
#include "migbench/layout.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct mb_error err;
    struct mb_catalog *cat = NULL;
    if (mb_catalog_create(&cat, &err) != MB_OK)
        abort();
    const char *path = fuzz_file("catalog.json", data, size);
    if (mb_catalog_load_file(cat, path, &err) == MB_OK) {
        const struct mb_gpu_model *m = NULL;
        (void)mb_catalog_find(cat, "fuzz", &m, &err);
        for (size_t i = 0; i < mb_catalog_count(cat); i++)
            (void)mb_catalog_model(cat, i);
    }
    mb_catalog_destroy(cat);
    return 0;
}
