/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Every symbol the nvml backend resolves (its one table, MB_NVML_SYMBOLS), looked up in a real
 * libnvidia-ml.so.1 given as argv[1]: each name, or its older fallback, must be there. Loading the
 * library needs no driver. Exit 0: all found; 1: one is missing; 2: usage or load failure.
 */
#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>

#include "device/nvml_internal.h"

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: nvml_symbols LIBNVIDIA-ML\n");
        return 2;
    }
    void *dl = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!dl) {
        fprintf(stderr, "nvml_symbols: %s\n", dlerror());
        return 2;
    }
    int missing = 0;
    size_t n = mb__nvml_symbol_count();
    for (size_t i = 0; i < n; i++) {
        const char *name, *fallback;
        bool required;
        mb__nvml_symbol(i, &name, &fallback, &required);
        bool have = dlsym(dl, name) != NULL;
        bool have_fb = fallback && dlsym(dl, fallback) != NULL;
        printf("%-8s %s%s%s\n",
               have      ? "found"
               : have_fb ? "fallback"
                         : "MISSING",
               name, fallback ? " / " : "", fallback ? fallback : "");
        missing += !have && !have_fb;
    }
    printf("%zu symbols, %d missing\n", n, missing);
    dlclose(dl);
    return missing ? 1 : 0;
}
