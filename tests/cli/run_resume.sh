# SPDX-License-Identifier: Apache-2.0
# Interruptions on an emulated H100 with a state file: SIGINT mid-cell tears everything down and
# exits 130; after kill -9, --resume removes exactly what the dead run left on the GPU and runs
# only the unfinished cells, keeping the finished ones.
#
# Nothing here races a timer: the jobs (fx_steady --release-dir) run until the test releases them
# by pid, and every "during" check waits on a journal entry first.
. "$MB_SOURCE_DIR/tests/cli/lib.sh"
FX="$MB_BINARY_DIR/fixtures"
[ -x "$FX/fx_steady" ] || { echo "FAIL: fixtures not built in $FX" >&2; exit 1; }
DEV="emu:H100-80GB:mig=on:state=$TMP/gpu.json"

cat >"$TMP/exp.yaml" <<YAML
version: 1
name: resumetest
workloads:
  a: {command: ["$FX/fx_steady", --rate, "20", --release-dir, "$TMP/release"]}
runs:
  - {name: mix, mode: mig, layout: [3g.40gb, 2g.20gb], jobs: [a, a]}
measure: {warmup: 2 steps, duration: completion, sample_interval: 50ms, grace: 1s, progress_timeout: 60s, repetitions: 3}
YAML
mkdir -p "$TMP/release"

# Process groups of the jobs a run started (the journal records each job's pid = pgid).
job_pids() {
    python3 -c 'import json,sys
for l in open(sys.argv[1]):
    try: e = json.loads(l)
    except ValueError: continue
    if e.get("event") == "job_started": print(int(e["pid"]))' "$1" 2>/dev/null || true
}
cleanup_jobs() {
    for p in $(job_pids "$1"); do kill -KILL -- "-$p" 2>/dev/null || true; done
}
# release JOURNAL: lets every job the journal has started so far finish its cell.
release() {
    for p in $(job_pids "$1"); do : >"$TMP/release/$p"; done
}
releaser=
# Stops the journal watcher below: its tail, whose end also ends the reading loop.
stop_releaser() {
    [ ! -s "$TMP/releaser.tail" ] || kill "$(cat "$TMP/releaser.tail")" 2>/dev/null || true
    [ -z "$releaser" ] || kill "$releaser" 2>/dev/null || true
}
trap 'stop_releaser; cleanup_jobs "$TMP/r1/journal.jsonl"; cleanup_jobs "$TMP/r2/journal.jsonl"; rm -rf "$TMP"' EXIT

instances() {
    python3 -c 'import json,sys
s = json.load(open(sys.argv[1]))
print(" ".join(sorted("%s@%s" % (g["profile_id"], g["start"]) for g in s.get("gpu_instances", []))))' "$1"
}

# Someone else's instance is on the GPU before we start; it must be there, alone, afterwards.
mkdir -p "$TMP/state"
export MIGBENCH_STATE_DIR="$TMP/state"
printf 'version: v1\nmig-configs:\n  one:\n    - devices: all\n      mig-enabled: true\n      mig-devices: {"1g.10gb": 1}\n' >"$TMP/other.yaml"
run 0 "$MIGBENCH" mig apply "$TMP/other.yaml" --device "$DEV"
before=$(instances "$TMP/gpu.json")
[ -n "$before" ] || fail "setup: no foreign instance"

# --- SIGINT in the middle of a cell.
"$MIGBENCH" run "$TMP/exp.yaml" --device "$DEV" --results "$TMP/r1" >"$TMP/out1" 2>"$TMP/err1" &
pid=$!
wait_line "$TMP/r1/journal.jsonl" '"job_started"' 2
# A --resume while the run is alive must not touch its instances.
during=$(instances "$TMP/gpu.json")
run 1 "$MIGBENCH" run "$TMP/exp.yaml" --device "$DEV" --results "$TMP/r1" --resume
expect_err 'in use by another migbench run'
[ "$(instances "$TMP/gpu.json")" = "$during" ] || fail "a concurrent --resume changed the GPU"
kill -INT $pid
rc=0
wait $pid || rc=$?
[ "$rc" = 130 ] || fail "SIGINT: exit $rc, expected 130"
grep -q 'interrupted by signal 2' "$TMP/err1" || fail "SIGINT: no message"
grep -q '"event":"interrupted"' "$TMP/r1/journal.jsonl" || fail "SIGINT: not journaled"
[ "$(instances "$TMP/gpu.json")" = "$before" ] || fail "SIGINT: GPU has $(instances "$TMP/gpu.json"), had $before"
[ ! -e "$TMP/r1/mix/0/cell.json" ] || fail "SIGINT: the interrupted cell was written"
for p in $(job_pids "$TMP/r1/journal.jsonl"); do
    kill -0 "$p" 2>/dev/null && fail "SIGINT: job $p still runs"
done
[ "$(grep -c '"mig_created"' "$TMP/r1/journal.jsonl")" = "$(grep -c '"mig_destroyed"' "$TMP/r1/journal.jsonl")" ] ||
    fail "SIGINT: created and destroyed do not match"

# --- kill -9 during the second cell, then --resume.
"$MIGBENCH" run "$TMP/exp.yaml" --device "$DEV" --results "$TMP/r2" >"$TMP/out2" 2>"$TMP/err2" &
pid=$!
wait_line "$TMP/r2/journal.jsonl" '"job_started"' 2
release "$TMP/r2/journal.jsonl"
wait_line "$TMP/r2/journal.jsonl" '"cell_finished"' 1
wait_line "$TMP/r2/journal.jsonl" '"job_started"' 4
kill -KILL $pid
wait $pid 2>/dev/null || true
cleanup_jobs "$TMP/r2/journal.jsonl"
left=$(instances "$TMP/gpu.json")
[ "$left" != "$before" ] || fail "kill -9: expected the dead run's instances on the GPU"
[ -f "$TMP/r2/mix/0/cell.json" ] || fail "kill -9: first cell missing"
[ ! -f "$TMP/r2/mix/1/cell.json" ] || fail "kill -9: second cell should be unfinished"
sum0=$(md5sum <"$TMP/r2/mix/0/cell.json")

# The resumed cells' jobs are released as they start (a watcher on the journal).
# `tail -F` follows the journal with inotify; each job_started entry releases the jobs started.
(
    exec {fd}< <(exec tail -n +1 -F "$TMP/r2/journal.jsonl" 2>/dev/null)
    echo $! >"$TMP/releaser.tail"
    while IFS= read -r -u "$fd" line; do
        case $line in *'"job_started"'*) release "$TMP/r2/journal.jsonl" ;; esac
    done
) &
releaser=$!
run 0 "$MIGBENCH" run "$TMP/exp.yaml" --device "$DEV" --results "$TMP/r2" --resume
stop_releaser
wait "$releaser" 2>/dev/null || true
releaser=
expect_err 'resume: removing 2 MIG instances'
[ "$(instances "$TMP/gpu.json")" = "$before" ] || fail "resume: GPU has $(instances "$TMP/gpu.json"), had $before"
[ "$(md5sum <"$TMP/r2/mix/0/cell.json")" = "$sum0" ] || fail "resume: the finished cell changed"
for r in 1 2; do
    [ -f "$TMP/r2/mix/$r/cell.json" ] || fail "resume: cell $r not run"
done
grep -q '"event":"cleanup"' "$TMP/r2/journal.jsonl" || fail "resume: cleanup not journaled"
[ "$(grep -c '"cell_started"' "$TMP/r2/journal.jsonl")" = 4 ] || fail "resume: ran finished cells again"

finish
