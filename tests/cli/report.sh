# SPDX-License-Identifier: Apache-2.0
# migbench report: every format compared byte-for-byte with tests/golden/report.*, and bad input.
# MB_UPDATE_GOLDEN=1 rewrites the golden files instead of comparing (review the diff!).
. "$MB_SOURCE_DIR/tests/cli/lib.sh"
cd "$MB_SOURCE_DIR"
G=tests/golden
H100=$G/results-h100
A100=$G/results-a100

golden() { # golden NAME ARGS...: runs migbench report ARGS and compares stdout with $G/NAME
    local name=$1
    shift
    run 0 "$MIGBENCH" report "$@"
    if [ "${MB_UPDATE_GOLDEN:-0}" = 1 ]; then
        cp "$TMP/out" "$G/$name"
        echo "updated $G/$name"
    elif ! cmp -s "$TMP/out" "$G/$name"; then
        fail "report $* differs from $G/$name"
        diff -u "$G/$name" "$TMP/out" | head -40 >&2 || true
    fi
}

golden report-h100.txt "$H100"
golden report.txt "$H100" "$A100"
golden report.csv --format csv "$H100" "$A100"
golden report.json --format json "$H100" "$A100"
golden report.md --format md "$H100" "$A100"
golden report.html --format=html "$H100" "$A100"

# The terminal table fits in 80 columns (the comparison across devices included).
width=$(LC_ALL=C.UTF-8 wc -L <"$G/report.txt")
[ "$width" -le 80 ] || fail "report.txt is $width columns wide, more than 80"

# Deterministic: a second run is identical.
run 0 "$MIGBENCH" report --format json "$H100" "$A100"
cmp -s "$TMP/out" "$G/report.json" || fail "second JSON run differs"

# Honest numbers: emulated is said, unmeasured is null / n/a, never a made-up zero.
grep -q 'EMULATED' "$G/report.txt" || fail "table lacks the EMULATED label"
grep -q 'EMULATED DEVICE' "$G/report.html" || fail "HTML lacks the EMULATED banner"
grep -Eq '"energy_j":[[:space:]]+null' "$G/report.json" || fail "JSON: the refused window's energy is not null"
grep -q 'compute-share: not defined for' "$G/report.txt" || fail "timeslice compute-share not explained"
grep -q 'mig rep 1 failed: densenet121' "$G/report.txt" || fail "failed cell not shown"
# Self-contained HTML: no scripts, no external resources.
if grep -Eq '<script|https?://|<link |@import|url\(http' "$G/report.html"; then
    fail "report.html is not self-contained"
fi

# -o FILE: written atomically, nothing on stdout.
run 0 "$MIGBENCH" report -f md -o "$TMP/r.md" "$H100" "$A100"
expect_no_out
cmp -s "$TMP/r.md" "$G/report.md" || fail "-o output differs from stdout output"
ls "$TMP" | grep -q 'tmp' && fail "temporary file left behind"

# A folder of experiments (results/) is read like its experiments given one by one.
mkdir -p "$TMP/all"
ln -s "$MB_SOURCE_DIR/$H100" "$TMP/all/h100"
ln -s "$MB_SOURCE_DIR/$A100" "$TMP/all/a100"
run 0 "$MIGBENCH" report --format csv "$TMP/all"
[ "$(grep -c ',A100-80GB,' "$TMP/out")" = 9 ] || fail "folder of experiments: A100 rows missing"
[ "$(grep -c ',H100-80GB,' "$TMP/out")" = 12 ] || fail "folder of experiments: H100 rows missing"

# Bad input: clear message naming the file, exit 2, nothing on stdout.
run 2 "$MIGBENCH" report "$TMP/nonexistent"
expect_err "migbench: report: .*nonexistent"
expect_no_out
mkdir -p "$TMP/empty/sub"
run 2 "$MIGBENCH" report "$TMP/empty"
expect_err "not a results directory"
mkdir -p "$TMP/corrupt/mig/0"
: >"$TMP/corrupt/journal.jsonl"
printf '{"run": "mig", "mode": "mig", "jobs": [{"name": "a"' >"$TMP/corrupt/mig/0/cell.json"
run 2 "$MIGBENCH" report "$TMP/corrupt"
expect_err "corrupt/mig/0/cell.json:1:[0-9]+: not valid JSON"
expect_no_out
run 2 "$MIGBENCH" report --format pdf "$H100"
expect_err "unknown format 'pdf'"
run 2 "$MIGBENCH" report
expect_err "expected at least one RESULTS_DIR"
run 2 "$MIGBENCH" report --bogus "$H100"
expect_err "unknown option '--bogus'"
run 2 "$MIGBENCH" report "$H100" -o
expect_err "needs an argument"
run 0 "$MIGBENCH" report --help
expect_out "usage: migbench report"

finish
