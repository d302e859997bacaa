#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The ABI check of libmigbench.so (docs/api.md), run by .ci/run and by ctest (abi_check):
#
#   scripts/abi-check.sh [BUILD_DIR]             check BUILD_DIR's library (default build)
#   scripts/abi-check.sh --update [BUILD_DIR]    rewrite the baseline abi/libmigbench.abi
#   scripts/abi-check.sh --self-test [BUILD_DIR] show the check fails on an added struct field
#
# The check: (1) `nm -D --defined-only` lists exactly the functions the public headers mark
# MB_API, each named in docs/api.md, none an internal mb__ one; (2) libabigail's abidiff finds no
# change against the committed baseline, other than added functions. A deliberate break bumps
# MB_ABI_VERSION in CMakeLists.txt (the SOVERSION) and then runs --update; adding a function
# needs no bump, --update records it. Needs abigail-tools (scripts/install-deps.sh --test) and a
# build with debug info (the default RelWithDebInfo).
set -euo pipefail
cd "$(dirname "$0")/.."
mode=check
case "${1:-}" in
--update | --self-test) mode=${1#--}; shift ;;
esac
build=${1:-build}
baseline=abi/libmigbench.abi
# The headers of the stable API: types outside them are not part of the exported ABI.
stable_headers=(export.h status.h api.h)

die() { echo "abi-check: $*" >&2; exit 1; }
for tool in abidw abidiff nm; do
    command -v "$tool" >/dev/null || die "$tool is needed (apt-get install abigail-tools binutils)"
done
abi=$(sed -n 's/^set(MB_ABI_VERSION \([0-9]*\)).*/\1/p' CMakeLists.txt)
lib="$build/libmigbench.so.$abi"
[ -f "$lib" ] || die "no $lib (build first: cmake --build $build)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

headers_dir() { # $1: the directory to fill; the stable headers of the tree, version.h from build
    mkdir -p "$1/migbench"
    for h in "${stable_headers[@]}"; do cp "include/migbench/$h" "$1/migbench/"; done
    cp "$build/include/migbench/version.h" "$1/migbench/"
}

dump() { # $1: library, $2: output
    headers_dir "$tmp/hd"
    abidw --no-corpus-path --no-comp-dir-path --no-show-locs --drop-private-types \
        --exported-interfaces-only \
        --headers-dir "$tmp/hd/migbench" --out-file "$2" "$1"
    # A translation unit's path is where this tree was built: kept relative to the tree, so the
    # baseline names no machine's directories.
    sed -i "s|path='$PWD/|path='|g" "$2"
}

# (1) The dynamic symbol table against the headers and the documentation.
check_symbols() { # $1: library
    # Sanitizer builds add their runtime's hooks; they are not the library's.
    nm -D --defined-only "$1" | awk '$2 ~ /^[TWDBR]$/ && $3 !~ /^__(asan|ubsan|odr_asan|tsan)/ {print $3}' |
        sort >"$tmp/exported"
    grep -h '^MB_API ' include/migbench/*.h include/migbench/version.h.in | grep -o '^[^(]*(' |
        sed 's/($//; s/.*[ *]//' | sort -u >"$tmp/declared"
    local bad=0
    if ! diff -u "$tmp/declared" "$tmp/exported" >"$tmp/symdiff"; then
        echo "abi-check: the exported symbols differ from the MB_API declarations" \
            "(- declared only, + exported only):" >&2
        tail -n +3 "$tmp/symdiff" | grep '^[-+]' >&2 || true
        bad=1
    fi
    while read -r s; do
        grep -q "\`$s\`" docs/api.md || { echo "abi-check: $s is exported but not in docs/api.md" >&2; bad=1; }
    done <"$tmp/exported"
    return $bad
}

case $mode in
update)
    check_symbols "$lib" || die "fix the symbols before recording a baseline"
    dump "$lib" "$baseline"
    echo "abi-check: wrote $baseline ($(wc -l <"$tmp/exported") functions, ABI version $abi)"
    exit 0
    ;;
check)
    check_symbols "$lib" || die "FAILED: symbols"
    if [ -n "$(sed -n 's/^MB_SANITIZE:STRING=//p' "$build/CMakeCache.txt" 2>/dev/null)" ]; then
        # Instrumented code is not what ships; the plain build (build-test in CI) runs abidiff.
        echo "abi-check: sanitizer build: symbols checked, abidiff left to the plain build"
        exit 0
    fi
    dump "$lib" "$tmp/current.abi"
    set +e
    abidiff --no-added-syms "$baseline" "$tmp/current.abi" >"$tmp/report"
    rc=$?
    set -e
    if [ $rc -ne 0 ]; then
        cat "$tmp/report" >&2
        die "FAILED: libmigbench.so.$abi changed its ABI against $baseline (abidiff exit $rc). A" \
            "deliberate break: bump MB_ABI_VERSION in CMakeLists.txt, rebuild, then" \
            "scripts/abi-check.sh --update (docs/api.md)."
    fi
    abidiff "$baseline" "$tmp/current.abi" >"$tmp/report" || true
    grep -q 'Added function' "$tmp/report" &&
        echo "abi-check: note: functions were added; record them with scripts/abi-check.sh --update"
    echo "abi-check: libmigbench.so.$abi: $(wc -l <"$tmp/exported") exported functions, ABI unchanged"
    ;;
self-test)
    # Two copies of the library whose stable objects are rebuilt from the tree: one as is, which
    # must pass, and one against a status.h in which struct mb_error gained a field, which the
    # check must call a break.
    [ -z "$(sed -n 's/^MB_SANITIZE:STRING=//p' "$build/CMakeCache.txt")" ] ||
        { echo "abi-check: self-test skipped: a sanitizer build"; exit 77; }
    copy() { # $1: name, $2: patch status.h (yes/no); prints the copy's check status
        local d="$tmp/$1"
        headers_dir "$d/hdr"
        if [ "$2" = yes ]; then
            sed -i 's/^    char msg\[MB_ERROR_MSG_MAX\];$/&\n    int added_field;/' "$d/hdr/migbench/status.h"
            grep -q added_field "$d/hdr/migbench/status.h" || die "self-test: status.h not patched"
        fi
        mkdir -p "$d/obj" "$d/b/include/migbench"
        for src in src/base/status.c src/api/*.c; do
            cc -std=c11 -g -O2 -fPIC -fvisibility=hidden -D_POSIX_C_SOURCE=200809L \
                -I"$d/hdr" -Iinclude -I"$build/include" -Isrc \
                -c "$src" -o "$d/obj/$(basename "$src" .c).o"
        done
        cc -shared -o "$d/b/libmigbench.so.$abi" -Wl,-soname,"libmigbench.so.$abi" "$d"/obj/*.o \
            "$build/libmigbench.a" -lyaml -lcjson -lpthread -ldl -lm
        cp "$build/include/migbench/version.h" "$d/b/include/migbench/"
        touch "$d/b/CMakeCache.txt"
        local rc=0
        "$0" "$d/b" >"$d/out" 2>&1 || rc=$?
        echo "$rc"
    }
    rc=$(copy plain no)
    [ "$rc" = 0 ] || { cat "$tmp/plain/out" >&2; die "self-test: the unpatched copy fails (exit $rc)"; }
    rc=$(copy patched yes)
    if [ "$rc" = 0 ] || ! grep -q 'mb_error' "$tmp/patched/out"; then
        cat "$tmp/patched/out" >&2
        die "self-test FAILED: an added field in struct mb_error was not reported"
    fi
    grep -E 'size changed|added_field' "$tmp/patched/out" | head -3
    echo "abi-check: self-test passed: the unpatched copy passes, the added field fails (exit $rc)"
    ;;
esac
