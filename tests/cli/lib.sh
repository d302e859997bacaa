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

finish() {
    if [ "$FAILS" -ne 0 ]; then
        echo "$FAILS expectation(s) failed" >&2
        exit 1
    fi
    echo "ok"
}
