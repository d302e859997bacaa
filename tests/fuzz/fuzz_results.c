/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A results directory as report and plan read it: cell.json, telemetry.csv and journal.jsonl,
 * the three parts of the input split at "\n%%\n".
 */
#include "fuzz_common.h"
#include "results/results_json.h"
#include "migbench/analysis.h"
#include "migbench/results.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *parts[3];
    size_t lens[3] = {0, 0, 0};
    size_t n = fuzz_split(data, size, parts, lens, 3);
    char dir[256], sub[300];
    snprintf(dir, sizeof(dir), "%s/res", fuzz_dir());
    mkdir(dir, 0700);
    snprintf(sub, sizeof(sub), "%s/r", dir);
    mkdir(sub, 0700);
    snprintf(sub, sizeof(sub), "%s/r/0", dir);
    mkdir(sub, 0700);
    fuzz_file("res/r/0/cell.json", parts[0], lens[0]);
    fuzz_file("res/r/0/telemetry.csv", n > 1 ? parts[1] : data, n > 1 ? lens[1] : 0);
    const char *journal =
        fuzz_file("res/journal.jsonl", n > 2 ? parts[2] : data, n > 2 ? lens[2] : 0);
    struct mb_error err;
    struct mb_analysis *a = NULL;
    const char *dirs[] = {dir};
    if (mb_analysis_load(&a, dirs, 1, &err) == MB_OK)
        mb_analysis_destroy(a);
    cJSON *events = NULL;
    size_t skipped = 0;
    if (mb_journal_read(journal, &events, &skipped, &err) == MB_OK) {
        struct mb_leftovers left;
        (void)mb_journal_leftovers(events, &left, &err);
        cJSON_Delete(events);
    }
    return 0;
}
