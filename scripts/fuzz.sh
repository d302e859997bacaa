#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the libFuzzer targets (tests/fuzz/) with clang, ASan and UBSan, runs each for SECONDS
# (default 30) on a scratch copy of its committed corpus, then replays the committed corpus and
# every crash regression. Any crash, leak or sanitizer report fails the script.
#
#   scripts/fuzz.sh [-t SECONDS] [-j JOBS] [TARGET...]     TARGET: experiment, migcfg, ...
#
# Environment: BUILD_DIR (default build-fuzz), CC (default clang), FUZZ_OUT (where new corpus
# entries and crash files go; default a temporary directory that is removed, crash files are
# copied to tests/fuzz/crashes/ first so they are not lost).
set -euo pipefail
cd "$(dirname "$0")/.."
secs=30
jobs=1
while getopts "t:j:h" opt; do
    case $opt in
    t) secs=$OPTARG ;;
    j) jobs=$OPTARG ;;
    *) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
case $secs in '' | *[!0-9]*) echo "fuzz.sh: -t needs whole seconds" >&2; exit 2 ;; esac

dir=${BUILD_DIR:-build-fuzz}
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    for f in tests/fuzz/fuzz_*.c; do
        n=${f#tests/fuzz/fuzz_}
        targets+=("${n%.c}")
    done
fi
CC=${CC:-clang} cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Debug -DMB_FUZZ=ON -DMB_BUILD_TESTS=OFF >/dev/null
cmake --build "$dir" -j "$jobs" --target "${targets[@]/#/fuzz_}"

out=${FUZZ_OUT:-}
keep=1
if [ -z "$out" ]; then
    out=$(mktemp -d)
    keep=0
fi
# The targets write their input files here, in memory where /dev/shm exists.
scratch=$(mktemp -d -p /dev/shm mb-fuzz.XXXXXX 2>/dev/null || mktemp -d)
export MB_FUZZ_SCRATCH=$scratch
cleanup() {
    rm -rf "$scratch"
    [ "$keep" = 1 ] || rm -rf "$out"
}
trap cleanup EXIT
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

status=0
for t in "${targets[@]}"; do
    bin="$dir/tests/fuzz/fuzz_$t"
    seeds="tests/fuzz/corpus/$t"
    regs="tests/fuzz/regressions/$t"
    dict=()
    [ -f "tests/fuzz/$t.dict" ] && dict=(-dict="tests/fuzz/$t.dict")
    mkdir -p "$out/$t/corpus" "$out/$t/crashes"
    if [ "$secs" -gt 0 ]; then
        echo "== fuzz_$t: ${secs}s"
        # New inputs go to the scratch corpus; the committed seeds are read only.
        if ! "$bin" "${dict[@]}" -max_total_time="$secs" -max_len=65536 -timeout=10 \
            -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$out/$t/crashes/" \
            "$out/$t/corpus" "$seeds" 2>"$out/$t/log"; then
            tail -n 60 "$out/$t/log" >&2
            mkdir -p tests/fuzz/crashes/"$t"
            cp "$out/$t/crashes/"* tests/fuzz/crashes/"$t"/ 2>/dev/null || true
            echo "fuzz_$t: FAILED; the input is in tests/fuzz/crashes/$t/" >&2
            status=1
            continue
        fi
        grep -E '^stat::(number_of_executed_units|average_exec_per_sec|new_units_added|peak_rss_mb)' \
            "$out/$t/log" | sed "s/^/  fuzz_$t /"
    fi
    echo "== fuzz_$t: replay of the committed corpus and regressions"
    inputs=("$seeds")
    [ -d "$regs" ] && [ -n "$(ls -A "$regs")" ] && inputs+=("$regs")
    if ! "$bin" -runs=0 -timeout=10 "${inputs[@]}" >"$out/$t/replay" 2>&1; then
        tail -n 60 "$out/$t/replay" >&2
        echo "fuzz_$t: replay FAILED" >&2
        status=1
    fi
done
[ "$status" = 0 ] && echo "fuzz: all passed"
exit "$status"
