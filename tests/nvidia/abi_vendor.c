/* SPDX-License-Identifier: Apache-2.0 */
/*
 * abi_list.h compiled against NVIDIA's own nvml.h (device/nvml_types.h with
 * MB_NVML_VENDOR_HEADER), and every function type of MB_NVML_SYMBOLS compared with NVIDIA's
 * prototype of that name: a parameter or return type that differs is a compile error here.
 */
#include "abi.h"
#include "abi_list.h"
#include "device/nvml_fns.h"

#ifndef MB_NVML_VENDOR_HEADER
#error "abi_vendor.c is compiled against NVIDIA's nvml.h (MB_NVML_VENDOR_HEADER)"
#endif

#define MB_NVML_VENDOR_HAS_BASE 1
#define ABI_PRESENT(g) MB_NVML_VENDOR_HAS_##g
const struct abi_entry mb_abi_vendor[] = {MB_ABI_LIST(ABI_ST, ABI_FI, ABI_CO, ABI_GE, ABI_GS)};
const size_t mb_abi_vendor_n = sizeof(mb_abi_vendor) / sizeof(mb_abi_vendor[0]);

#define STR_(x) #x
#define STR(x) STR_(x)
const char mb_abi_vendor_version[] = "NVML_API_VERSION " STR(NVML_API_VERSION);

/* The check: our function type and the type of a pointer to NVIDIA's declaration of that name
 * must be the same type (GCC's and Clang's builtin; nothing is linked or called). */
#define FN_S(field, type, req, name)                                                               \
    _Static_assert(__builtin_types_compatible_p(type, __typeof__(&name)),                          \
                   #name ": our " #type " differs from NVIDIA's prototype");
#define FN_F(field, type, req, name, fb)                                                           \
    FN_S(field, type, req, name)                                                                   \
    _Static_assert(__builtin_types_compatible_p(type, __typeof__(&fb)),                            \
                   #fb ": our " #type " differs from NVIDIA's prototype");
#define WHEN_1(x) x
#define WHEN_0(x)
#define WHEN_(v, x) WHEN_##v(x)
#define WHEN(v, x) WHEN_(v, x)
#define FN_N1(flag, ...) WHEN(MB_NVML_VENDOR_HAS_##flag, FN_S(__VA_ARGS__))
#define FN_N2(flag, ...) WHEN(MB_NVML_VENDOR_HAS_##flag, FN_F(__VA_ARGS__))
/* Where the newer name is missing, its older fallback is still checked. */
#define FN_FB_ONLY(field, type, req, name, fb)                                                     \
    _Static_assert(__builtin_types_compatible_p(type, __typeof__(&fb)),                            \
                   #fb ": our " #type " differs from NVIDIA's prototype");
#define NOT_1 0
#define NOT_0 1
#define NOT_(v) NOT_##v
#define NOT(v) NOT_(v)
#define FN_N2_OLD(flag, ...) WHEN(NOT(MB_NVML_VENDOR_HAS_##flag), FN_FB_ONLY(__VA_ARGS__))
MB_NVML_SYMBOLS(FN_S, FN_F, FN_N1, FN_N2)
#define NONE(...)
MB_NVML_SYMBOLS(NONE, NONE, NONE, FN_N2_OLD)

#define ROW_S(field, type, req, name) {#name, 1},
#define ROW_F(field, type, req, name, fb) {#name, 1}, {#fb, 1},
#define ROW_N1(flag, field, type, req, name) {#name, MB_NVML_VENDOR_HAS_##flag},
#define ROW_N2(flag, field, type, req, name, fb) {#name, MB_NVML_VENDOR_HAS_##flag}, {#fb, 1},
const struct abi_fn mb_abi_fns[] = {MB_NVML_SYMBOLS(ROW_S, ROW_F, ROW_N1, ROW_N2)};
const size_t mb_abi_fns_n = sizeof(mb_abi_fns) / sizeof(mb_abi_fns[0]);
