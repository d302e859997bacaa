/* SPDX-License-Identifier: Apache-2.0 */
/* User MIG catalogs (layouts --catalog): loaded over the built-in one, then every model listed. */
#include "fuzz_common.h"
#include "migbench/catalog.h"
#include "migbench/layout.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /*
     * Building the built-in catalog costs far more than most inputs: keep it while inputs are
     * refused (a refused file leaves the catalog unchanged, which this also checks), and start
     * afresh after one that loaded.
     */
    static struct mb_catalog *cat;
    struct mb_error err;
    if (!cat && mb_catalog_create(&cat, &err) != MB_OK)
        abort();
    size_t before = mb_catalog_count(cat);
    const char *path = fuzz_file("catalog.json", data, size);
    if (mb_catalog_load_file(cat, path, &err) != MB_OK) {
        if (mb_catalog_count(cat) != before)
            abort();
        return 0;
    }
    const struct mb_gpu_model *m = NULL;
    (void)mb_catalog_find(cat, "fuzz", &m, &err);
    for (size_t i = 0; i < mb_catalog_count(cat); i++)
        (void)mb_catalog_model(cat, i);
    mb_catalog_destroy(cat);
    cat = NULL;
    return 0;
}
