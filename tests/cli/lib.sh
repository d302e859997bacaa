# SPDX-License-Identifier: Apache-2.0
# Helpers sourced by the CLI test scripts. Each script runs with set -eu and exits non-zero on
# the first failed expectation, printing what it expected and what it got.
set -eu
: "${MIGBENCH:?MIGBENCH must point at the migbench binary}"
: "${MB_SOURCE_DIR:?}"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
FAILS=0

fail() {
    echo "FAIL: $*" >&2
    FAILS=$((FAILS + 1))
}

# run EXPECTED_STATUS CMD...: runs CMD, keeps stdout in $TMP/out and stderr in $TMP/err.
run() {
    local want=$1
    shift
    local got=0
    "$@" >"$TMP/out" 2>"$TMP/err" || got=$?
    if [ "$got" != "$want" ]; then
        fail "'$*' exited $got, expected $want"
        sed 's/^/  stdout: /' "$TMP/out" | head -20 >&2
        sed 's/^/  stderr: /' "$TMP/err" | head -20 >&2
    fi
}

# expect_out PATTERN / expect_err PATTERN: grep -E on the last run's stdout / stderr.
expect_out() {
    grep -Eq -- "$1" "$TMP/out" || fail "stdout lacks /$1/"
}
expect_err() {
    grep -Eq -- "$1" "$TMP/err" || fail "stderr lacks /$1/"
}
expect_no_out() {
    [ ! -s "$TMP/out" ] || fail "stdout should be empty"
}

# wait_line FILE ERE [COUNT]: blocks until FILE holds COUNT (default 1) lines matching ERE. It
# reads FILE as it grows through `tail -F`, which GNU tail follows with inotify: the test wakes on
# the write itself, with no polling loop. The 120 s bound only keeps a broken run from hanging the
# suite; no check depends on it. Returns 1 (after fail) when the lines never came.
wait_line() {
    local want=${3:-1} got=0 line fd tailpid
    exec {fd}< <(exec timeout 120 tail -n +1 -F "$1" 2>/dev/null)
    tailpid=$!
    while IFS= read -r -u "$fd" line; do
        if [[ $line =~ $2 ]]; then
            got=$((got + 1))
            [ "$got" -lt "$want" ] || break
        fi
    done
    kill "$tailpid" 2>/dev/null || true
    exec {fd}<&-
    [ "$got" -ge "$want" ] && return 0
    fail "timed out waiting for $want line(s) matching /$2/ in $1"
    return 1
}

# quiet_proc: points migbench run's outside-load check (docs/run.md, "Outside load") at a fake,
# quiet /proc: load average 0 on one CPU and no ticks passing. For tests that compare the outputs
# of separate runs, which the machine's load must not make differ by a note.
quiet_proc() {
    mkdir -p "$TMP/quiet-proc"
    printf 'cpu  100 0 50 1000 0 0 0 0 0 0\ncpu0 100 0 50 1000 0 0 0 0 0 0\n' >"$TMP/quiet-proc/stat"
    printf '0.00 0.00 0.00 1/100 1\n' >"$TMP/quiet-proc/loadavg"
    export MIGBENCH_PROC_ROOT="$TMP/quiet-proc"
}

finish() {
    if [ "$FAILS" -ne 0 ]; then
        echo "$FAILS expectation(s) failed" >&2
        exit 1
    fi
    echo "ok"
}
