/* SPDX-License-Identifier: Apache-2.0 */
/* Plan inputs: the part before "\n%%\n" is a profile CSV, the part after a jobs YAML file. */
#include "fuzz_common.h"
#include "migbench/catalog.h"
#include "migbench/plan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct mb_catalog *cat;
    struct mb_error err;
    if (!cat && mb_catalog_create(&cat, &err) != MB_OK)
        abort();
    const uint8_t *parts[2];
    size_t lens[2];
    size_t n = fuzz_split(data, size, parts, lens, 2);
    struct mb_plan_profiles *p = NULL;
    if (mb_plan_profiles_create(&p, &err) != MB_OK)
        abort();
    (void)mb_plan_profiles_load_csv(p, cat, fuzz_file("profiles.csv", parts[0], lens[0]), &err);
    mb_plan_profiles_destroy(p);
    if (n > 1) {
        struct mb_plan_jobset *js = NULL;
        if (mb_plan_jobset_load(fuzz_file("jobs.yaml", parts[1], lens[1]), &js, &err) == MB_OK)
            mb_plan_jobset_destroy(js);
    }
    return 0;
}
