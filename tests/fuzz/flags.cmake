# SPDX-License-Identifier: Apache-2.0
# Compile flags for a fuzzing build, applied to the library and every target: coverage for
# libFuzzer, ASan, UBSan with float-to-integer overflow and the integer checks that are bugs here
# (signed overflow, truncation to a signed type). Unsigned wrap-around is left out on purpose: the
# FNV-1a hashes and the energy counter arithmetic rely on it.
set(MB_FUZZ_SANITIZERS
    address,undefined,float-cast-overflow,integer,implicit-signed-integer-truncation)
set(MB_FUZZ_NO_SANITIZE
    unsigned-integer-overflow,unsigned-shift-base,implicit-integer-sign-change,implicit-unsigned-integer-truncation)
add_compile_options(-fsanitize=fuzzer-no-link,${MB_FUZZ_SANITIZERS}
    -fno-sanitize=${MB_FUZZ_NO_SANITIZE} -fno-sanitize-recover=all -fno-omit-frame-pointer -g)
add_link_options(-fsanitize=${MB_FUZZ_SANITIZERS} -fno-sanitize=${MB_FUZZ_NO_SANITIZE})
