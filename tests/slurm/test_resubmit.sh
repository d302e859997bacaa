# SPDX-License-Identifier: Apache-2.0
# Against a real slurmctld/slurmd: a cell whose task records a failure is resubmitted by a second
# `slurm submit` and ends ok (the failed record kept beside it); a task requeued after its cell
# started shows as requeued, not running, then ends ok; a second `slurm submit` while the first
# holds the results directory is refused. The first submitter is held inside sbatch (a wrapper
# that waits on a FIFO); everything else waits on journal lines or on Slurm's own job states.
. "$MB_SOURCE_DIR/tests/slurm/lib.sh"
FX="$MB_BINARY_DIR/fixtures"
slurm_up

FIXED="$TMP/fixed"
REL="$TMP/release"
# flaky: exits 3 until $FIXED exists. block: runs until its task is stopped, unless $REL exists.
cat >"$TMP/exp.yaml" <<YAML
version: 1
name: slurmresubmit
device: emu:H100-80GB
workloads:
  flaky: {command: [/bin/sh, -c, 'test -e "\$0" || exit 3; exec "\$1" --rate 50 --duration 1', "$FIXED", "$FX/fx_steady"], unit: images}
  block: {command: [/bin/sh, -c, 'test -e "\$0" && exec "\$1" --rate 20 --duration 1; exec "\$1" --rate 20 --release-dir /nonexistent', "$REL", "$FX/fx_steady"], unit: images}
runs:
  - {name: flaky, mode: exclusive, jobs: [flaky]}
  - {name: block, mode: exclusive, jobs: [block]}
measure: {warmup: 100ms, duration: completion, sample_interval: 50ms, repetitions: 1, progress_timeout: 300s}
YAML
RES="$TMP/res"

run 0 "$MIGBENCH" slurm submit "$TMP/exp.yaml" --results "$RES"
expect_out '^array job [0-9]+ \(2 cells, 0-1\)'
A=$(sed -n 's/^array job \([0-9]*\).*/\1/p' "$TMP/out")
RA=$(sed -n 's/.*report job \([0-9]*\)$/\1/p' "$TMP/out")
wait_job "${A}_0" 120
wait_line "$RES/journal-${A}_1.jsonl" '"event":"cell_started","run":"block"' || exit 1
run 1 "$MIGBENCH" slurm status "$RES"
expect_out $'^0\tflaky\t0\tfailed\t'"${A}_0"
expect_out $'^1\tblock\t0\trunning\t'"${A}_1"

# Requeued (and held, so that it stays queued): requeued, not running.
run 0 scontrol requeuehold "${A}_1"
deadline=$((SECONDS + 60))
until "$MIGBENCH" slurm status "$RES" 2>/dev/null | grep -q $'^1\tblock\t0\trequeued\t'"${A}_1"; do
    [ "$SECONDS" -lt "$deadline" ] || { fail "cell 1 never showed requeued"; break; }
    sleep 0.2
done
run 1 "$MIGBENCH" slurm status "$RES"
expect_err '2 cells: 0 done, 1 failed, 0 running, 0 queued, 1 requeued, 0 not run'

# Resubmit the failed cell. The first submitter is held in sbatch; a second one is refused.
touch "$FIXED" "$REL"
mkdir -p "$TMP/bin"
cat >"$TMP/bin/sbatch" <<SH
#!/bin/bash
if [ -p "$TMP/hold" ]; then
    echo held >>"$TMP/held.log"
    cat "$TMP/hold" >/dev/null
    rm -f "$TMP/hold"
fi
exec "$(command -v sbatch)" "\$@"
SH
chmod +x "$TMP/bin/sbatch"
mkfifo "$TMP/hold"
PATH="$TMP/bin:$PATH" "$MIGBENCH" slurm submit "$TMP/exp.yaml" --results "$RES" \
    >"$TMP/first.out" 2>"$TMP/first.err" &
first=$!
wait_line "$TMP/held.log" '^held' || exit 1
run 1 "$MIGBENCH" slurm submit "$TMP/exp.yaml" --results "$RES"
expect_err "another submitter \(pid $first\) is submitting into $RES/slurm"
echo >"$TMP/hold"
wait "$first" || fail "first submitter: $(cat "$TMP/first.err")"
grep -Eq '^array job [0-9]+ \(1 cells, 0-0\)' "$TMP/first.out" ||
    fail "the resubmission is not cell 0 alone: $(cat "$TMP/first.out" "$TMP/first.err")"
B=$(sed -n 's/^array job \([0-9]*\).*/\1/p' "$TMP/first.out")
RB=$(sed -n 's/.*report job \([0-9]*\)$/\1/p' "$TMP/first.out")
[ "$(wc -l <"$RES/slurm/submissions.jsonl")" = 2 ] || fail "not two submissions"

# The requeued task runs again and ends ok; so does the resubmitted cell.
run 0 scontrol release "${A}_1"
wait_job "$RB" 240
wait_job "$RA" 240
[ "$(job_state "$RA")" = COMPLETED ] || fail "report job $RA: $(job_state "$RA")"
run 0 "$MIGBENCH" slurm status "$RES"
expect_out $'^0\tflaky\t0\tdone\t'"${B}_0"
expect_out $'^1\tblock\t0\tdone\t'"${A}_1"
[ -s "$RES/flaky/0/cell.failed-1.json" ] || fail "the failed attempt was not kept"
$PY - "$RES" <<'PYEOF' || fail "cell.json files"
import json, sys
r = sys.argv[1]
assert json.load(open(f"{r}/flaky/0/cell.json"))["status"] == "ok"
assert json.load(open(f"{r}/flaky/0/cell.failed-1.json"))["status"] == "failed"
subs = [json.loads(l) for l in open(f"{r}/slurm/submissions.jsonl")]
assert [s["cells"] for s in subs] == [[0, 1], [0]], subs
PYEOF
finish
