# SPDX-License-Identifier: Apache-2.0
# migbench run --cells / --shard on an emulated H100: an experiment run as two invocations into
# one results directory (cells 0-2, then 3-5; or shards 0/2 and 1/2) reports the same as one
# invocation, measured values aside; two selections run at the same time into one directory
# (a running cell is skipped elsewhere, --resume is refused meanwhile); bad selections are usage
# errors.
. "$MB_SOURCE_DIR/tests/cli/lib.sh"
M="$MIGBENCH"
FX="$MB_BINARY_DIR/fixtures"
[ -x "$FX/fx_steady" ] || { echo "FAIL: fixtures not built in $FX" >&2; exit 1; }
DEV="emu:H100-80GB:mig=on:state=$TMP/gpu.json"
quiet_proc

cat >"$TMP/exp.yaml" <<YAML
version: 1
name: splittest
workloads:
  a: {command: ["$FX/fx_steady", --rate, "50", --duration, "60"], unit: images}
  b: {command: ["$FX/fx_steady", --rate, "40", --duration, "60"], unit: tokens}
runs:
  - {name: alone, mode: exclusive, jobs: [a, b]}
  - {name: mix, mode: mig, layout: [3g.40gb, 2g.20gb], jobs: [a, b]}
measure: {warmup: 2 steps, duration: 400ms, sample_interval: 50ms, grace: 1s, progress_timeout: 20s, repetitions: 3, idle: 0s, cooldown: 0s}
YAML

# The report as JSON with what differs between two runs of the same cells masked: measured
# values (every estimate's mean, ci95 and n: a loaded machine can leave one job of a cell
# without a rate; every non-integer number, sample counts, numbers
# inside texts, the headline and answer sentences and whether an answer is clear of the noise:
# their wording follows the measured CIs) and the results directory's name.
report() {
    "$M" report "$1" --format json >"$TMP/report.json" || { fail "report $1"; return; }
    python3 - "$TMP/report.json" "$1" <<'PY'
import json, re, sys
rep = json.load(open(sys.argv[1]))
def mask(v, key=""):
    if isinstance(v, dict):
        return {k: mask(x, k) for k, x in v.items()}
    if isinstance(v, list):
        return [mask(x, key) for x in v]
    if v is None and key == "ci95":
        return "<num>"  # a CI needs two rates: null when load left a job of a cell without one
    if key == "clear_of_noise":
        return "<measured verdict>"
    if isinstance(v, bool) or v is None:
        return v
    if isinstance(v, (int, float)):
        if key in ("mean", "ci95", "n", "samples", "missed_updates", "steps", "units") or v != int(v) or key.endswith(("_j", "_w", "_s", "_mj", "_pct")):
            return "<num>"
        return v
    if isinstance(v, str) and key in ("headline", "sentence"):
        return "<measured text>"  # its wording follows the measured CI
    if isinstance(v, str):
        v = v.replace(sys.argv[2], "<dir>")
        return re.sub(r"[0-9]+(\.[0-9]+)?", "<n>", v)
    return v
print(json.dumps(mask(rep), indent=1, sort_keys=True))
PY
}

run 0 "$M" run "$TMP/exp.yaml" --device "$DEV" --results "$TMP/one"
expect_out '^alone +exclusive +3/3 +a'
expect_out '^mix +mig +3/3 +a'
report "$TMP/one" >"$TMP/one.txt"

run 0 "$M" run "$TMP/exp.yaml" --device "$DEV" --results "$TMP/two" --cells 0-2
expect_out '^alone +exclusive +3/3 +a'
if grep -q '^mix' "$TMP/out"; then fail "--cells 0-2 ran mix"; fi
run 0 "$M" run "$TMP/exp.yaml" --device "$DEV" --results "$TMP/two" --cells 3-5
expect_out '^mix +mig +3/3 +a'
report "$TMP/two" >"$TMP/two.txt"
diff -u "$TMP/one.txt" "$TMP/two.txt" >&2 || fail "cells 0-2 + 3-5 report differently from one run"

# Shards interleave: 0/2 runs cells 0, 2, 4 and 1/2 runs 1, 3, 5.
run 0 "$M" run "$TMP/exp.yaml" --device "$DEV" --results "$TMP/shard" --shard 0/2
[ "$(grep -c '"cell_started"' "$TMP/shard/journal.jsonl")" = 3 ] || fail "shard 0/2: not 3 cells"
run 0 "$M" run "$TMP/exp.yaml" --device "$DEV" --results "$TMP/shard" --shard 1/2
report "$TMP/shard" >"$TMP/shard.txt"
diff -u "$TMP/one.txt" "$TMP/shard.txt" >&2 || fail "shards 0/2 + 1/2 report differently"
# A selection of cells already done runs nothing again.
run 0 "$M" run "$TMP/exp.yaml" --device "$DEV" --results "$TMP/shard" --cells mix
[ "$(grep -c '"cell_started"' "$TMP/shard/journal.jsonl")" = 6 ] || fail "done cells ran again"

# Bad selections change nothing.
run 2 "$M" run "$TMP/exp.yaml" --device "$DEV" --results "$TMP/bad" --cells 6
expect_err "--cells: '6' is past the last cell \(6 cells: 0-5\)"
run 2 "$M" run "$TMP/exp.yaml" --device "$DEV" --results "$TMP/bad" --cells 3-1
expect_err "empty range"
run 2 "$M" run "$TMP/exp.yaml" --device "$DEV" --results "$TMP/bad" --cells nosuch
expect_err "'nosuch' is neither a cell index"
run 2 "$M" run "$TMP/exp.yaml" --device "$DEV" --results "$TMP/bad" --shard 2/2
expect_err "--shard: expected I/N"
run 2 "$M" run "$TMP/exp.yaml" --device "$DEV" --results "$TMP/bad" --cells 0 --dry-run
[ ! -e "$TMP/bad" ] || fail "a bad selection wrote results"
# Another experiment (other --set options) does not join the directory.
run 2 "$M" run "$TMP/exp.yaml" --device "$DEV" --results "$TMP/two" --cells 0 \
    --set measure.repetitions=2
expect_err "different experiment file or --set options"

# Selections run side by side in one directory (one Slurm array task per cell): both cells'
# jobs run at once; a third invocation naming a cell that is running skips it; a whole run or a
# --resume, which own the directory, are refused meanwhile.
cat >"$TMP/hold.yaml" <<YAML
version: 1
name: holdtest
workloads:
  a: {command: ["$FX/fx_steady", --rate, "20", --release-dir, "$TMP/release"]}
runs:
  - {name: solo, mode: exclusive, jobs: [a]}
measure: {warmup: 2 steps, duration: completion, sample_interval: 50ms, grace: 1s, progress_timeout: 60s, repetitions: 2, idle: 0s, cooldown: 0s}
YAML
mkdir -p "$TMP/release"
"$M" run "$TMP/hold.yaml" --device "$DEV" --results "$TMP/hold" --cells 0 >"$TMP/h0.out" 2>"$TMP/h0.err" &
pid0=$!
wait_line "$TMP/hold/journal.jsonl" '"job_started"' 1
"$M" run "$TMP/hold.yaml" --device "$DEV" --results "$TMP/hold" --cells 1 >"$TMP/h1.out" 2>"$TMP/h1.err" &
pid1=$!
wait_line "$TMP/hold/journal.jsonl" '"job_started"' 2
run 0 "$M" run "$TMP/hold.yaml" --device "$DEV" --results "$TMP/hold" --cells 0
grep -q 'running in another invocation' "$TMP/out" "$TMP/err" ||
    fail "a cell running elsewhere was not reported as skipped"
# ... and counted as skipped, not as a cell this invocation ran.
grep -q '0 cells ok, 0 failed, 1 skipped' "$TMP/out" "$TMP/err" ||
    fail "a cell running elsewhere was counted as run: $(cat "$TMP/err")"
run 1 "$M" run "$TMP/hold.yaml" --device "$DEV" --results "$TMP/hold" --resume
expect_err 'in use by another migbench run'
for jp in $(python3 -c 'import json,sys
for l in open(sys.argv[1]):
    e = json.loads(l)
    if e.get("event") == "job_started": print(e["pid"])' "$TMP/hold/journal.jsonl"); do
    : >"$TMP/release/$jp"
done
rc=0
wait $pid0 || rc=$?
[ "$rc" = 0 ] || fail "the first invocation exited $rc: $(cat "$TMP/h0.err")"
wait $pid1 || rc=$?
[ "$rc" = 0 ] || fail "the second invocation exited $rc: $(cat "$TMP/h1.err")"
python3 - "$TMP/hold/journal.jsonl" <<'PY' || fail "the journal is not one JSON object a line"
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
names = [e["event"] for e in ev]
assert names.count("cell_finished") == 2, names
# Both jobs started before either cell finished: the two selections ran at the same time.
first_done = names.index("cell_finished")
assert [n for n in names[:first_done]].count("job_started") == 2, names
PY
run 0 "$M" report "$TMP/hold" --format json
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); s=json.dumps(d); assert "solo" in s' "$TMP/out" ||
    fail "the report of the shared directory lacks the run"

# A selection reruns its failed cell (kept as cell.failed-1.json) through the one cell step,
# on one GPU and on several (the workers of --device ...:count=2 claim cells the same way).
cat >"$TMP/flaky.yaml" <<YAML
version: 1
name: flakytest
workloads:
  f: {command: [/bin/sh, -c, 'test -e "\$0" || exit 3; exec "\$1" --rate 50 --duration 1', "$TMP/fixed", "$FX/fx_steady"], unit: images}
runs:
  - {name: flaky, mode: exclusive, jobs: [f]}
measure: {warmup: 2 steps, duration: completion, sample_interval: 50ms, grace: 1s, progress_timeout: 20s, repetitions: 2, idle: 0s, cooldown: 0s}
YAML
for dev in emu:H100-80GB emu:H100-80GB:count=2; do
    rm -f "$TMP/fixed"
    rm -rf "$TMP/fl"
    run 1 "$M" run "$TMP/flaky.yaml" --device "$dev" --results "$TMP/fl" --cells 0
    : >"$TMP/fixed"
    run 0 "$M" run "$TMP/flaky.yaml" --device "$dev" --results "$TMP/fl" --cells 0,1
    expect_err 'flaky 0: failed before \(kept as cell.failed-1.json\); running it again'
    expect_err '2 cells ok, 0 failed; results'
    [ -s "$TMP/fl/flaky/0/cell.failed-1.json" ] || fail "$dev: the failed attempt was not kept"
done

finish
