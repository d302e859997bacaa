/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Experiment YAML with --set overrides: the part before the first "\n%%\n" is the file, each
 * following part one KEY=VALUE override. The cells of what parses are enumerated too, and for
 * a GPU checked against the H100's MIG geometry.
 */
#include "fuzz_common.h"
#include "migbench/catalog.h"
#include "migbench/device.h"
#include "migbench/experiment.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct mb_catalog *cat;
    static const struct mb_gpu_model *h100;
    struct mb_error err;
    if (!cat && (mb_catalog_create(&cat, &err) != MB_OK ||
                 mb_catalog_find(cat, "H100-80GB", &h100, &err) != MB_OK))
        abort();
    const uint8_t *parts[9];
    size_t lens[9];
    size_t n = fuzz_split(data, size, parts, lens, 9);
    char *ov[8];
    for (size_t i = 1; i < n; i++) {
        size_t l = lens[i];
        if (l && parts[i][l - 1] == '\n' && i + 1 < n)
            l--;
        ov[i - 1] = fuzz_str(parts[i], l);
    }
    struct mb_experiment *exp = NULL;
    if (mb_experiment_parse("fuzz.yaml", (const char *)parts[0], lens[0], (const char *const *)ov,
                            n - 1, &exp, &err) == MB_OK) {
        /* The host, an emulated GPU, a measured GPU. */
        static const uint32_t caps[] = {MB_CAP_CPU_PARTITIONS,
                                        MB_CAP_EMULATED | MB_CAP_GPU | MB_CAP_MIG | MB_CAP_MPS,
                                        MB_CAP_GPU | MB_CAP_MIG | MB_CAP_MPS};
        for (size_t kind = 0; kind < sizeof(caps) / sizeof(caps[0]); kind++) {
            struct mb_cell *cells = NULL;
            char **notes = NULL;
            size_t n_cells = 0, n_notes = 0;
            if (mb_experiment_cells(exp, caps[kind], NULL, &cells, &n_cells, &notes, &n_notes,
                                    &err) == MB_OK) {
                free(cells);
                mb_notes_free(notes, n_notes);
            }
        }
        mb_experiment_destroy(exp);
    }
    for (size_t i = 1; i < n; i++)
        free(ov[i - 1]);
    return 0;
}
