/* SPDX-License-Identifier: Apache-2.0 */
/*
 * MB_API marks a function that the shared library libmigbench.so exports. The library is compiled
 * with -fvisibility=hidden, so everything else stays inside it: `nm -D --defined-only
 * libmigbench.so` lists exactly the functions declared with MB_API (docs/api.md lists them). The
 * static library libmigbench.a, which the migbench program and the tests link, keeps every
 * function.
 *
 * A function marked MB_API is part of the ABI that scripts/abi-check.sh compares against the
 * committed baseline abi/libmigbench.abi: changing its signature or a type it reaches is a break
 * that fails CI until MB_ABI_VERSION (CMakeLists.txt, the SOVERSION) is bumped and the baseline
 * regenerated. Mark only functions whose arguments are opaque handles, scalars, strings and
 * struct mb_error (frozen): never a public value struct whose layout grows (docs/api.md).
 */
#ifndef MIGBENCH_EXPORT_H
#define MIGBENCH_EXPORT_H

#if defined(__GNUC__) || defined(__clang__)
#define MB_API __attribute__((visibility("default")))
#else
#define MB_API
#endif

#endif
