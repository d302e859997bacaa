/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The selection syntax of run --cells / --only ("0-2,5,RUN") and --shard ("I/N"): the first
 * line is the list, the second the shard, over six cells of three runs ("r", "mix", "a.b") and a
 * run skipped on this device ("cpu").
 */
#include "fuzz_common.h"
#include "run/selection.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_str(data, size);
    char *nl = strchr(text, '\n');
    const char *shard = NULL;
    if (nl) {
        *nl = '\0';
        shard = nl + 1;
    }
    static const char *const names[] = {"r", "r", "mix", "mix", "a.b", "a.b"};
    static const char *const runs[] = {"r", "mix", "a.b", "cpu"};
    struct mb__selection_cells sc = {names, 6, runs, 4};
    bool keep[6] = {false};
    struct mb_error err;
    if (mb__selection_mark(text, "--cells", &sc, keep, &err) == MB_OK && !text[0])
        abort(); /* an empty list is refused */
    (void)mb__selection_is_index(text, strlen(text));
    size_t i = 0, n = 0;
    if (shard && mb__selection_shard(shard, &i, &n, &err) == MB_OK && !(n > 0 && i < n))
        abort();
    free(text);
    return 0;
}
