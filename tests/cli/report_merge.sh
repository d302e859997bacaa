# SPDX-License-Identifier: Apache-2.0
# migbench report --merge: two results directories of one experiment (the MIG-off and MIG-on
# phases run separately) report as the whole experiment does, cells' origins stated; different
# GPU models are refused unless --force, which the report says; --baseline picks the baseline.
. "$MB_SOURCE_DIR/tests/cli/lib.sh"
G=$MB_SOURCE_DIR/tests/golden
H100=$G/results-h100

# The golden H100 experiment split as the two phases would write it, under a 150-character
# directory name: the report must not depend on where the repository or the results are.
LONG=$TMP/$(printf 'p%.0s' $(seq 150))
mkdir -p "$LONG/off" "$LONG/on"
ln -s "$H100" "$LONG/h100"
for r in exclusive mps timeslice; do ln -s "$H100/$r" "$LONG/off/$r"; done
ln -s "$H100/mig" "$LONG/on/mig"
TMP_REAL=$TMP
trap 'rm -rf "$TMP_REAL"' EXIT
TMP=$LONG

# What differs from the whole experiment's report: the header, the journal's notes (the split
# directories have no journal), and the merged notes. Wrapped lines (indented continuations)
# are joined first, so that a long path cannot leave half a line behind.
strip() {
    awk 'NR > 1 && /^    / { sub(/^ +/, " "); printf "%s", $0; next } NR > 1 { print "" }
         { printf "%s", $0 } END { print "" }' "$1" |
        grep -Ev '^results: |^cells: |journal|interruption|^merged: '
}
run 0 "$MIGBENCH" report "$TMP/h100"
strip "$TMP/out" >"$TMP/whole"
run 0 "$MIGBENCH" report "$TMP/off" "$TMP/on" --merge
expect_out "^merged: 9 cells of 3 runs from $TMP/off\$"
expect_out "^merged: 3 cells of 1 runs from $TMP/on\$"
expect_out 'EMULATED'
strip "$TMP/out" >"$TMP/merged"
cmp -s "$TMP/whole" "$TMP/merged" || {
    fail "the merged report differs from the whole experiment's"
    diff -u "$TMP/whole" "$TMP/merged" | head -30 >&2
}
# Without --merge the two directories are two experiments, side by side.
run 0 "$MIGBENCH" report "$TMP/off" "$TMP/on"
grep -q '^merged: ' "$TMP/out" && fail "separate report says merged"

# JSON too: one experiment with every run.
run 0 "$MIGBENCH" report "$TMP/off" "$TMP/on" --merge --format json
python3 - "$TMP/out" <<'PY' || fail "merged JSON is not one experiment with four runs"
import json, sys
d = json.load(open(sys.argv[1]))
exps = d["experiments"] if isinstance(d, dict) and "experiments" in d else d
assert len(exps) == 1, len(exps)
assert sorted(r["name"] for r in exps[0]["runs"]) == ["exclusive", "mig", "mps", "timeslice"]
PY

# --baseline DIR:RUN: an exclusive run of a merged directory, else refused with exit 2.
run 0 "$MIGBENCH" report "$TMP/off" "$TMP/on" --merge --baseline "$TMP/off:exclusive"
expect_out "baseline: run exclusive only"
run 2 "$MIGBENCH" report "$TMP/off" "$TMP/on" --merge --baseline "$TMP/on:mig"
expect_err "run 'mig' is mig, not exclusive"
run 2 "$MIGBENCH" report "$TMP/off" "$TMP/on" --merge --baseline "$TMP/elsewhere:exclusive"
expect_err 'is not one of the merged directories'
run 2 "$MIGBENCH" report "$TMP/off" "$TMP/on" --merge --baseline exclusive
expect_err 'expected DIR:RUN'
run 2 "$MIGBENCH" report "$TMP/off" --baseline "$TMP/off:exclusive"
expect_err 'go with --merge'
run 2 "$MIGBENCH" report "$TMP/off" --merge
expect_err '2 to 16 results directories'

# Another GPU model: refused, named; --force merges and says so.
run 2 "$MIGBENCH" report "$TMP/off" "$G/results-a100" --merge
expect_err 'different GPU models \(H100-80GB vs A100-80GB\); --force'
expect_no_out
run 0 "$MIGBENCH" report "$TMP/off" "$G/results-a100" --merge --force
expect_out 'merged with --force despite different GPU models'
expect_out 'merged: run exclusive pools cells from several directories'

# Another workload definition under the same name: refused.
mkdir -p "$TMP/other/exclusive"
cp -r "$H100/exclusive/0" "$TMP/other/exclusive/0"
python3 - "$TMP/other/exclusive/0/cell.json" <<'PY'
import json, sys
p = sys.argv[1]
d = json.load(open(p))
for j in d["jobs"]:
    j["argv"] = ["python3", "other.py"]
json.dump(d, open(p, "w"))
PY
run 2 "$MIGBENCH" report "$TMP/off" "$TMP/other" --merge
expect_err 'different workload definitions'
finish
