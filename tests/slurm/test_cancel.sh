# SPDX-License-Identifier: Apache-2.0
# A cell whose array task is cancelled (scancel) while it runs is reported failed by `slurm
# status`; submitting again runs only that cell. The blocking job is released by a file, and the
# test waits on the journal's cell_started entry, never on a timer.
. "$MB_SOURCE_DIR/tests/slurm/lib.sh"
FX="$MB_BINARY_DIR/fixtures"
slurm_up

REL="$TMP/release"
# "block": runs until its task is cancelled, unless $REL exists (then one second).
cat >"$TMP/exp.yaml" <<YAML
version: 1
name: slurmcancel
device: emu:H100-80GB
workloads:
  quick: {command: ["$FX/fx_steady", --rate, "20", --duration, "1"], unit: images}
  block: {command: [/bin/sh, -c, 'test -e "\$0" && exec "\$1" --rate 20 --duration 1; exec "\$1" --rate 20 --release-dir /nonexistent', "$REL", "$FX/fx_steady"], unit: images}
runs:
  - {name: quick, mode: exclusive, jobs: [quick]}
  - {name: block, mode: exclusive, jobs: [block]}
measure: {warmup: 100ms, duration: completion, sample_interval: 50ms, repetitions: 1, progress_timeout: 300s}
YAML
RES="$TMP/res"

run 0 "$MIGBENCH" slurm submit "$TMP/exp.yaml" --results "$RES"
expect_out '^array job [0-9]+ \(2 cells, 0-1\)'
ARRAY=$(sed -n 's/^array job \([0-9]*\).*/\1/p' "$TMP/out")
REPORT=$(sed -n 's/.*report job \([0-9]*\)$/\1/p' "$TMP/out")

# The blocking cell has started (its journal entry), then its task is cancelled.
wait_line "$RES/journal-${ARRAY}_1.jsonl" '"event":"cell_started","run":"block"' || exit 1
run 0 scancel "${ARRAY}_1"
wait_job "${ARRAY}_1" 120
wait_job "$REPORT" 120
[ "$(job_state "${ARRAY}_1")" = CANCELLED ] || fail "task 1: $(job_state "${ARRAY}_1")"

run 1 "$MIGBENCH" slurm status "$RES"
expect_out $'^0\tquick\t0\tdone\t'"${ARRAY}_0"
expect_out $'^1\tblock\t0\tfailed\t'"${ARRAY}_1"$'\t.*CANCELLED'
expect_err '2 cells: 1 done, 1 failed'
[ ! -e "$RES/block/0/cell.json" ] || fail "the cancelled cell has a cell.json"
sum_before=$(md5sum <"$RES/quick/0/cell.json")

# Again: only the cancelled cell, now released.
touch "$REL"
run 0 "$MIGBENCH" slurm submit "$TMP/exp.yaml" --results "$RES"
expect_out '^array job [0-9]+ \(1 cells, 1-1\)'
ARRAY2=$(sed -n 's/^array job \([0-9]*\).*/\1/p' "$TMP/out")
REPORT2=$(sed -n 's/.*report job \([0-9]*\)$/\1/p' "$TMP/out")
grep -qx '#SBATCH --array=1' "$RES/slurm/array.sbatch" || fail "resubmitted array is not just cell 1"
wait_job "$REPORT2" 120
run 0 "$MIGBENCH" slurm status "$RES"
expect_out $'^1\tblock\t0\tdone\t'"${ARRAY2}_1"
[ "$(md5sum <"$RES/quick/0/cell.json")" = "$sum_before" ] || fail "the done cell ran again"
$PY - "$RES" <<'PYEOF' || fail "journal: quick started once, block twice"
import glob, json, sys
ev = []
for j in glob.glob(f"{sys.argv[1]}/journal*.jsonl"):
    ev += [json.loads(l) for l in open(j) if l.strip()]
n = lambda run: sum(1 for e in ev if e["event"] == "cell_started" and e["run"] == run)
assert n("quick") == 1 and n("block") == 2, (n("quick"), n("block"))
subs = [json.loads(l) for l in open(f"{sys.argv[1]}/slurm/submissions.jsonl")]
assert [s["cells"] for s in subs] == [[0, 1], [1]], subs
PYEOF
finish
