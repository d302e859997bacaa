# SPDX-License-Identifier: Apache-2.0
# `migbench slurm submit` against a real slurmctld/slurmd: every cell of a small emulated
# experiment runs exactly once as an array task into one results directory, each cell records
# its job, and the report job (--dependency=afterany) writes the report. The by-hand path
# (submit --emit DIR, then bash DIR/submit.sh) records its submission: status is right and a
# second submit submits nothing.
. "$MB_SOURCE_DIR/tests/slurm/lib.sh"
FX="$MB_BINARY_DIR/fixtures"
slurm_up

cat >"$TMP/exp.yaml" <<YAML
version: 1
name: slurmtest
device: emu:H100-80GB
workloads:
  a: {command: ["$FX/fx_steady", --rate, "20", --duration, "60"], unit: images}
  b: {command: ["$FX/fx_steady", --rate, "10", --duration, "60"], unit: tokens}
runs:
  - {name: solo, mode: exclusive, jobs: [a]}
  - {name: pair, mode: timeslice, jobs: [a, b]}
measure: {warmup: 100ms, duration: 1s, sample_interval: 50ms, repetitions: 2}
YAML
RES="$TMP/res"

run 2 "$MIGBENCH" slurm submit "$TMP/exp.yaml" --results "$RES" --partition 'debug --x'
expect_err "partition 'debug --x'"
run 0 "$MIGBENCH" slurm submit "$TMP/exp.yaml" --results "$RES" --max-concurrent 2 \
    --partition debug --time 10:00 --sbatch-line=--comment=migbench-test
expect_out '^array job [0-9]+ \(4 cells, 0-3\), report job [0-9]+$'
ARRAY=$(sed -n 's/^array job \([0-9]*\).*/\1/p' "$TMP/out")
REPORT=$(sed -n 's/.*report job \([0-9]*\)$/\1/p' "$TMP/out")
grep -qx '#SBATCH --array=0-3%2' "$RES/slurm/array.sbatch" || fail "array line"
grep -qx '#SBATCH --comment=migbench-test' "$RES/slurm/array.sbatch" || fail "extra line"

wait_job "$REPORT" 240
[ "$(job_state "$REPORT")" = COMPLETED ] || fail "report job $REPORT: $(job_state "$REPORT")"
for i in 0 1 2 3; do
    st=$(job_state "${ARRAY}_$i")
    [ "$st" = COMPLETED ] || { fail "task ${ARRAY}_$i: $st"; cat "$RES"/slurm/cell-$i-*.out >&2; }
done
[ -s "$RES/report.md" ] && [ -s "$RES/report.html" ] || fail "the report job wrote no report"
grep -q 'solo' "$RES/report.md" || fail "report.md lacks the runs"

$PY - "$RES" "$ARRAY" <<'PYEOF' || fail "each cell once, with its job"
import csv, glob, json, sys
res, array = sys.argv[1], sys.argv[2]
rows = list(csv.DictReader(open(f"{res}/slurm/cells.tsv"), delimiter="\t"))
assert [(r["run"], r["repetition"]) for r in rows] == [
    ("solo", "0"), ("solo", "1"), ("pair", "0"), ("pair", "1")], rows
events = []
for j in glob.glob(f"{res}/journal*.jsonl"):
    events += [json.loads(l) for l in open(j) if l.strip()]
for r in rows:
    c = json.load(open(f"{res}/{r['run']}/{r['repetition']}/cell.json"))
    assert c["status"] == "ok", (r, c["status"], c.get("failure"))
    assert c["slurm"]["job"] == f"{array}_{r['index']}", (r, c["slurm"])
    assert c["slurm"]["array_task_id"] == r["index"], c["slurm"]
    starts = [e for e in events if e["event"] == "cell_started" and e["run"] == r["run"]
              and e["rep"] == int(r["repetition"])]
    assert len(starts) == 1, (r, starts)
    assert starts[0]["slurm"]["job"] == f"{array}_{r['index']}", starts[0]
PYEOF

run 0 "$MIGBENCH" slurm status "$RES"
[ "$(grep -c $'\tdone\t' "$TMP/out")" = 4 ] || fail "status: 4 cells done expected"
expect_err '4 cells: 4 done, 0 failed'
grep -q $'\tdone\t' "$RES/slurm-status.txt" || fail "the report job wrote no slurm-status.txt"

# Submitting again submits nothing: every cell is recorded.
run 0 "$MIGBENCH" slurm submit "$TMP/exp.yaml" --results "$RES"
expect_err 'nothing to submit'
[ "$(wc -l <"$RES/slurm/submissions.jsonl")" = 1 ] || fail "a second submission was recorded"

# By hand: --emit DIR, then bash DIR/submit.sh: it records what it submits, so status knows the
# cells and a later submit submits nothing more.
R2="$TMP/res2"
run 0 "$MIGBENCH" slurm submit "$TMP/exp.yaml" --results "$R2" --emit "$TMP/byhand"
run 0 bash "$TMP/byhand/submit.sh"
expect_out '^array job [0-9]+$'
A2=$(sed -n 's/^array job \([0-9]*\)$/\1/p' "$TMP/out")
R2J=$(sed -n 's/^report job \([0-9]*\)$/\1/p' "$TMP/out")
wait_job "$R2J" 240
[ "$(job_state "$R2J")" = COMPLETED ] || fail "by-hand report job: $(job_state "$R2J")"
run 0 "$MIGBENCH" slurm status "$R2"
[ "$(grep -c $'\tdone\t'"${A2}_" "$TMP/out")" = 4 ] || fail "by hand: 4 cells done under $A2"
run 0 "$MIGBENCH" slurm submit "$TMP/exp.yaml" --results "$R2"
expect_err 'nothing to submit'
finish
