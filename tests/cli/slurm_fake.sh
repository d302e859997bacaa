# SPDX-License-Identifier: Apache-2.0
# `slurm submit` and `slurm status` against stand-ins for sbatch and scontrol (on PATH; no
# cluster): a failed cell is resubmitted until --max-attempts, and its task (`run --cells`)
# runs it again, keeping the failed record; a requeued task is told from a queued one; a second
# submitter on the same results directory is refused while the first holds the lock (the first
# is held inside sbatch on a FIFO); the by-hand path (--emit, then bash submit.sh) records its
# submission so that status and a later submit know it, in a line from the same encoder as
# submit's; the report job's script exits 0 when
# cells failed but the report was written. The interrupted task's message says to resubmit.
. "$MB_SOURCE_DIR/tests/cli/lib.sh"
PY=/usr/bin/python3
FX="$MB_BINARY_DIR/fixtures"
BIN="$TMP/bin"
mkdir -p "$BIN"
# sbatch: logs its arguments and answers the next job id; with the FIFO $TMP/hold-sbatch there,
# it says it has started (a line in held.log), waits until the FIFO is written, and removes it.
cat >"$BIN/sbatch" <<EOF
#!/bin/bash
n=\$(( \$(wc -l <"$TMP/sbatch.log" 2>/dev/null || echo 0) + 100 ))
echo "\$*" >>"$TMP/sbatch.log"
if [ -p "$TMP/hold-sbatch" ]; then
    echo "held \$\$" >>"$TMP/held.log"
    cat "$TMP/hold-sbatch" >/dev/null
    rm -f "$TMP/hold-sbatch"
fi
echo "\$n;cluster"
EOF
# scontrol -o show job ID: the line in $TMP/jobs/ID, else "Invalid job id".
cat >"$BIN/scontrol" <<EOF
#!/bin/bash
id=\${@: -1}
[ -f "$TMP/jobs/\$id" ] && { cat "$TMP/jobs/\$id"; exit 0; }
echo "slurm_load_jobs error: Invalid job id specified" >&2
exit 1
EOF
printf '#!/bin/sh\nexit 1\n' >"$BIN/sacct"
chmod +x "$BIN"/*
mkdir -p "$TMP/jobs"
export PATH="$BIN:$PATH"

# Cell 0 fails (exit 3) until $TMP/fixed exists; cell 1 blocks until its task is stopped.
cat >"$TMP/exp.yaml" <<YAML
version: 1
name: fake
device: emu:H100-80GB
workloads:
  flaky: {command: [/bin/sh, -c, 'test -e "\$0" || exit 3; exec "\$1" --rate 50 --duration 1', "$TMP/fixed", "$FX/fx_steady"], unit: images}
  block: {command: ["$FX/fx_steady", --rate, "20", --release-dir, /nonexistent], unit: images}
runs:
  - {name: flaky, mode: exclusive, jobs: [flaky]}
  - {name: block, mode: exclusive, jobs: [block]}
measure: {warmup: 100ms, duration: completion, sample_interval: 50ms, repetitions: 1, progress_timeout: 300s}
YAML
R="$TMP/res"
# task EXIT ARRAY INDEX: array task INDEX of ARRAY as array.sbatch runs it, in Slurm's environment.
task() {
    SLURM_JOB_ID=$((9000 + $3)) SLURM_ARRAY_JOB_ID=$2 SLURM_ARRAY_TASK_ID=$3 run "$1" \
        "$MIGBENCH" run "$TMP/exp.yaml" --cells "$3" --results "$R" --journal "journal-$2_$3.jsonl"
}
run 0 "$MIGBENCH" slurm submit "$TMP/exp.yaml" --results "$R" --max-attempts 2
expect_out '^array job 100 \(2 cells, 0-1\), report job 101$'
# Task 0 runs its cell: it fails (recorded).
task 1 100 0
# Task 1 is requeued after it started: pending again with a restart count.
echo "JobId=102 ArrayJobId=100 ArrayTaskId=1 JobState=PENDING Reason=BeginTime Restarts=1" \
    >"$TMP/jobs/100_1"
run 1 "$MIGBENCH" slurm status "$R"
expect_out $'^0\tflaky\t0\tfailed\t100_0\t'
expect_out $'^1\tblock\t0\trequeued\t100_1'
expect_err '2 cells: 0 done, 1 failed, 0 running, 0 queued, 1 requeued, 0 not run'
echo "JobId=102 ArrayJobId=100 ArrayTaskId=1 JobState=PENDING Reason=Priority Restarts=0" \
    >"$TMP/jobs/100_1"
run 1 "$MIGBENCH" slurm status "$R"
expect_out $'^1\tblock\t0\tqueued\t100_1'

# Submitting again: the failed cell (the queued one is left alone), attempt 2 of 2.
run 0 "$MIGBENCH" slurm submit "$TMP/exp.yaml" --results "$R" --max-attempts 2
expect_out '^array job 102 \(1 cells, 0-0\), report job 103$'
grep -qx '#SBATCH --array=0' "$R/slurm/array.sbatch" || fail "resubmitted array is not cell 0"
# Until its new task starts, the failed cell is queued under the new job.
echo "JobId=104 ArrayJobId=102 JobState=PENDING Reason=Priority Restarts=0" >"$TMP/jobs/102_0"
run 1 "$MIGBENCH" slurm status "$R"
expect_out $'^0\tflaky\t0\tqueued\t102_0'
run 0 "$MIGBENCH" slurm submit "$TMP/exp.yaml" --results "$R" --max-attempts 2
expect_err 'nothing to submit'
rm "$TMP/jobs/102_0"
# Its task fails again: the failed record is kept aside, and the cap is reached.
task 1 102 0
expect_err 'flaky 0: failed before \(kept as cell.failed-1.json\); running it again'
expect_err '0 cells ok, 1 failed; results'
[ -s "$R/flaky/0/cell.failed-1.json" ] || fail "the first failed attempt was not kept"
run 1 "$MIGBENCH" slurm status "$R"
expect_out $'^0\tflaky\t0\tfailed\t102_0\t.*2 of 2 attempts: not resubmitted'
run 0 "$MIGBENCH" slurm submit "$TMP/exp.yaml" --results "$R" --max-attempts 2
expect_err '1 failed cell had 2 attempts and is not resubmitted'
# A third attempt allowed: the cell runs again and ends ok.
run 0 "$MIGBENCH" slurm submit "$TMP/exp.yaml" --results "$R" --max-attempts 3
expect_out '^array job 104 \(1 cells, 0-0\)'
touch "$TMP/fixed"
task 0 104 0
expect_err '1 cell ok, 0 failed; results'
run 1 "$MIGBENCH" slurm status "$R"
expect_out $'^0\tflaky\t0\tdone\t104_0'
"$PY" - "$R" <<'PYEOF' || fail "submissions.jsonl: cells and caps"
import json, sys
subs = [json.loads(l) for l in open(f"{sys.argv[1]}/slurm/submissions.jsonl")]
assert [s["cells"] for s in subs] == [[0, 1], [0], [0]], subs
assert [s["max_attempts"] for s in subs] == [2, 2, 3], subs
PYEOF
# A done cell is skipped by its task, and the message does not speak of --resume.
run 0 "$MIGBENCH" run "$TMP/exp.yaml" --cells 0 --results "$R" --journal journal-x.jsonl
expect_err '1 skipped \(already done, or running in another invocation\)'
grep -q -- '--resume' "$TMP/err" && fail "a run without --resume mentions --resume"

# An interrupted task (its --journal): resubmit, not --resume.
J="$R/journal-100_1.jsonl"
"$MIGBENCH" run "$TMP/exp.yaml" --cells 1 --results "$R" --journal journal-100_1.jsonl \
    >"$TMP/task.out" 2>"$TMP/task.err" &
task=$!
wait_line "$J" '"event":"cell_started","run":"block"' || exit 1
kill -TERM "$task"
wait "$task" || true
grep -q 'submit again (migbench slurm submit EXP.yaml)' "$TMP/task.err" ||
    fail "interrupted task: $(cat "$TMP/task.err")"
grep -q -- 'continue with --resume' "$TMP/task.err" && fail "interrupted task says --resume"

# The report job's script: status exits 1 (not all done), the report is written: exit 0.
sed -i 's/^#SBATCH.*//' "$R/slurm/report.sbatch"
run 0 bash "$R/slurm/report.sbatch"
[ -s "$R/report.md" ] && [ -s "$R/slurm-status.txt" ] || fail "report job wrote no report"

# One submitter at a time: the first is held inside sbatch; the second is refused.
R2="$TMP/res2"
mkfifo "$TMP/hold-sbatch"
"$MIGBENCH" slurm submit "$TMP/exp.yaml" --results "$R2" >"$TMP/first.out" 2>&1 &
first=$!
wait_line "$TMP/held.log" '^held' || exit 1
run 1 "$MIGBENCH" slurm submit "$TMP/exp.yaml" --results "$R2"
expect_err "another submitter \(pid $first\) is submitting into $R2/slurm"
echo >"$TMP/hold-sbatch" # releases the array's sbatch
wait "$first" || fail "the first submitter failed: $(cat "$TMP/first.out")"
[ "$(wc -l <"$R2/slurm/submissions.jsonl")" = 1 ] || fail "two submissions recorded"

# By hand: --emit DIR, then bash DIR/submit.sh records what it submitted.
R3="$TMP/res3"
run 0 "$MIGBENCH" slurm submit "$TMP/exp.yaml" --results "$R3" --emit "$TMP/byhand"
[ ! -e "$R3/slurm" ] || fail "--emit wrote into the results"
run 0 bash "$TMP/byhand/submit.sh"
expect_out '^array job [0-9]+$'
cmp -s "$TMP/byhand/cells.tsv" "$R3/slurm/cells.tsv" || fail "submit.sh did not record cells.tsv"
ARR=$(sed -n 's/^array job //p' "$TMP/out")
run 1 "$MIGBENCH" slurm status "$R3"
expect_out $'^0\tflaky\t0\tnot run\t'"${ARR}_0"
echo "JobId=1 JobState=RUNNING Restarts=0" >"$TMP/jobs/${ARR}_1"
run 1 "$MIGBENCH" slurm status "$R3"
expect_out $'^1\tblock\t0\trunning\t'"${ARR}_1"
run 0 "$MIGBENCH" slurm submit "$TMP/exp.yaml" --results "$R3"
expect_out '^array job [0-9]+ \(1 cells, 0-0\)'
# The line submit.sh printed and the one `slurm submit` wrote come from the one encoder: the
# same keys in the same order, submit.sh's line saying so in "by" (status read both above).
"$PY" - "$R3" <<'PYEOF' || fail "submissions.jsonl: two encoders"
import json, sys
lines = open(f"{sys.argv[1]}/slurm/submissions.jsonl").read().splitlines()
assert len(lines) == 2, lines
by_hand, submit = (json.loads(l) for l in lines)
assert list(by_hand) == ["array_job", "report_job", "submitted_unix", "max_attempts", "by",
                         "cells"], lines
assert by_hand["by"] == "submit.sh" and "by" not in submit, lines
assert list(submit) == [k for k in by_hand if k != "by"], lines
assert by_hand["cells"] == [0, 1] and submit["cells"] == [0], lines
PYEOF
# submit.sh takes the same lock.
exec 9>>"$R3/slurm/submit.lock"
flock -n 9 || fail "cannot take the lock"
run 1 bash "$TMP/byhand/submit.sh"
expect_err 'another submitter'
exec 9>&-
finish
