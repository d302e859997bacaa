/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Plan inputs, split at "\n%%\n": a profile CSV, a jobs YAML file, then a plan JSON (the --plan
 * file of --verify).
 */
#include "fuzz_common.h"
#include "migbench/catalog.h"
#include "migbench/plan.h"
#include "migbench/plan_io.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct mb_catalog *cat;
    struct mb_error err;
    if (!cat && mb_catalog_create(&cat, &err) != MB_OK)
        abort();
    const uint8_t *parts[3];
    size_t lens[3];
    size_t n = fuzz_split(data, size, parts, lens, 3);
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
    if (n > 2) {
        struct mb_plan_record r;
        if (mb_plan_record_read(fuzz_file("plan.json", parts[2], lens[2]), &r, &err) == MB_OK)
            mb_plan_record_free(&r);
    }
    return 0;
}
