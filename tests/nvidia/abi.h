/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The two tables abi_check compares (abi_list.h compiled against our header and NVIDIA's) and
 * the list of function types checked against NVIDIA's prototypes.
 */
#ifndef MIGBENCH_ABI_H
#define MIGBENCH_ABI_H

#include <stddef.h>

struct abi_entry {
    const char *what;         /* "sizeof(T)", "offsetof(T, f)", or a constant's name */
    unsigned long long value; /* the size, offset or value */
    unsigned long long size;  /* a field's size; 0 otherwise */
    int present;              /* 0: the vendor header predates it (ours stood in) */
    int ours_may_exceed;      /* a count or array NVIDIA grew: ours >= vendor's */
};

/* One entry per symbol of MB_NVML_SYMBOLS: checked (our type assigned from NVIDIA's prototype,
 * so the compiler compared them) or skipped (the vendor header does not declare it). */
struct abi_fn {
    const char *name;
    int checked;
};

extern const struct abi_entry mb_abi_ours[];
extern const size_t mb_abi_ours_n;
extern const struct abi_entry mb_abi_vendor[];
extern const size_t mb_abi_vendor_n;
extern const struct abi_fn mb_abi_fns[];
extern const size_t mb_abi_fns_n;
extern const char mb_abi_vendor_version[];

/* ABI_GATE(g, name, value, size, ge) is the entry where group g is present, else a placeholder
 * row that keeps the two tables aligned (and whose expressions are never compiled). */
#define ABI_ROW_1(name, value, size, ge)                                                           \
    {                                                                                              \
        name, value, size, 1, ge                                                                   \
    }
#define ABI_ROW_0(name, value, size, ge)                                                           \
    {                                                                                              \
        name, 0, 0, 0, 0                                                                           \
    }
#define ABI_ROW_(v, ...) ABI_ROW_##v(__VA_ARGS__)
#define ABI_ROW(v, ...) ABI_ROW_(v, __VA_ARGS__)
#define ABI_GATE(g, ...) ABI_ROW(ABI_PRESENT(g), __VA_ARGS__),

#define ABI_ST(g, t) ABI_GATE(g, "sizeof(" #t ")", sizeof(t), 0, 0)
#define ABI_GS(g, t) ABI_GATE(g, "sizeof(" #t ")", sizeof(t), 0, 1)
#define ABI_FI(g, t, f)                                                                            \
    ABI_GATE(g, "offsetof(" #t ", " #f ")", offsetof(t, f), sizeof(((t *)0)->f), 0)
#define ABI_CO(g, n) ABI_GATE(g, #n, (unsigned long long)(n), 0, 0)
#define ABI_GE(g, n) ABI_GATE(g, #n, (unsigned long long)(n), 0, 1)

#endif
