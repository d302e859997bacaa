# SPDX-License-Identifier: Apache-2.0
# One MIG ownership ledger for `mig` and `run` on an emulated H100 with a state file:
#  - a run killed with SIGKILL leaves its instances in the ledger (creator run, its pid, its
#    results directory), and `mig clear --ours` removes them and a `mig apply`'s, but not an
#    instance made by someone else (here: through the fake NVML library, recorded elsewhere);
#  - `run --resume` removes exactly the dead run's instances, never a `mig apply`'s, reading the
#    ledger alone; an older migbench's journal (instances named there only) is still cleaned.
# Nothing races a timer: the jobs block until released, every check waits on a journal line.
. "$MB_SOURCE_DIR/tests/cli/lib.sh"
M="$MIGBENCH"
FX="$MB_BINARY_DIR/fixtures"
FAKE="$MB_BINARY_DIR/tests/fake-nvml/libnvidia-ml.so.1"
[ -x "$FX/fx_steady" ] || { echo "FAIL: fixtures not built in $FX" >&2; exit 1; }
[ -r "$FAKE" ] || { echo "FAIL: fake NVML not built at $FAKE" >&2; exit 1; }
DEV="emu:H100-80GB:mig=on:state=$TMP/gpu.json"
LEDGER="$TMP/gpu.json.owned.json"
mkdir -p "$TMP/release" "$TMP/elsewhere"

cat >"$TMP/exp.yaml" <<YAML
version: 1
name: ledgertest
workloads:
  a: {command: ["$FX/fx_steady", --rate, "20", --release-dir, "$TMP/release"]}
runs:
  - {name: mix, mode: mig, layout: [2g.20gb, 2g.20gb], jobs: [a, a]}
measure: {warmup: 2 steps, duration: completion, sample_interval: 50ms, grace: 1s, progress_timeout: 60s, repetitions: 1}
YAML
printf 'version: v1\nmig-configs:\n  one:\n    - devices: all\n      mig-enabled: true\n      mig-devices: {"1g.10gb": 1}\n' >"$TMP/one.yaml"
# Two 1g instances: apply keeps the foreign one and makes one of its own.
printf 'version: v1\nmig-configs:\n  two:\n    - devices: all\n      mig-enabled: true\n      mig-devices: {"1g.10gb": 2}\n' >"$TMP/two.yaml"

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
trap 'for r in r1 r2 r4; do cleanup_jobs "$TMP/$r/journal.jsonl"; done; rm -rf "$TMP"' EXIT

# "profile@start" of every GPU instance in the emulator's state.
instances() {
    python3 -c 'import json,sys
s = json.load(open(sys.argv[1]))
print(" ".join(sorted("%s@%s" % (g["profile_id"], g["start"]) for g in s.get("gpu_instances", []))))' "$1"
}
# "creator:profile" of every ledger entry (an absent ledger is empty).
ledger() {
    [ -f "$LEDGER" ] || { echo; return; }
    python3 -c 'import json,sys
s = json.load(open(sys.argv[1]))
print(" ".join(sorted("%s:%s" % (e["creator"], e["profile"]) for e in s["gpu_instances"])))' "$LEDGER"
}

# Someone else's instance: made through another tool path (the nvml backend over the fake
# library, on the same emulated GPU), whose record lives elsewhere.
(
    export MIGBENCH_NVML_LIBRARY="$FAKE" MIGBENCH_STATE_DIR="$TMP/elsewhere"
    export MIGBENCH_FAKE_NVML_SPEC="H100-80GB:mig=on,state=$TMP/gpu.json"
    run 0 "$M" mig apply "$TMP/one.yaml" --device nvml:0
    finish >/dev/null
) || fail "setup: the foreign instance"
foreign=$(instances "$TMP/gpu.json")
[ -n "$foreign" ] || fail "setup: no foreign instance"
[ -z "$(ledger)" ] || fail "setup: the foreign instance is in our ledger"

# --- a mig apply, a run killed with SIGKILL, then mig clear --ours.
run 0 "$M" mig apply "$TMP/two.yaml" --device "$DEV"
expect_err '\(1 kept, 0 removed, 1 created\)'
[ "$(ledger)" = "mig:1g.10gb" ] || fail "apply: ledger holds '$(ledger)'"
"$M" run "$TMP/exp.yaml" --device "$DEV" --results "$TMP/r1" >"$TMP/out1" 2>"$TMP/err1" &
pid=$!
wait_line "$TMP/r1/journal.jsonl" '"job_started"' 2
kill -KILL $pid
wait $pid 2>/dev/null || true
cleanup_jobs "$TMP/r1/journal.jsonl"
[ "$(ledger)" = "mig:1g.10gb run:2g.20gb run:2g.20gb" ] || fail "kill -9: ledger holds '$(ledger)'"
python3 - "$LEDGER" "$pid" "$TMP/r1" <<'PY' || fail "kill -9: ledger entries lack pid/experiment/ids"
import json, os, sys
s = json.load(open(sys.argv[1]))
for e in s["gpu_instances"]:
    if e["creator"] != "run":
        continue
    assert e["state"] == "confirmed" and e["pid"] == int(sys.argv[2]), e
    assert os.path.realpath(e["experiment"]) == os.path.realpath(sys.argv[3]), e
    assert isinstance(e["gi_id"], int) and isinstance(e["ci_id"], int), e
    assert e["mig_uuid"].startswith("MIG-") and e["time"] > 0, e
PY
run 0 "$M" mig show --device "$DEV"
[ "$(grep -c ' migbench  MIG-' "$TMP/out")" = 3 ] || fail "show: expected 3 instances of ours"
run 0 "$M" mig clear --ours --device "$DEV"
[ "$(grep -c '^removed' "$TMP/out")" = 3 ] || fail "clear --ours: expected 3 removals"
[ "$(instances "$TMP/gpu.json")" = "$foreign" ] ||
    fail "clear --ours: GPU has $(instances "$TMP/gpu.json"), expected only $foreign"
[ ! -e "$LEDGER" ] || fail "clear --ours: the ledger should be gone"

# --- run --resume removes the dead run's instances and leaves a mig apply's.
run 0 "$M" mig apply "$TMP/two.yaml" --device "$DEV"
before=$(instances "$TMP/gpu.json")
"$M" run "$TMP/exp.yaml" --device "$DEV" --results "$TMP/r2" >"$TMP/out2" 2>"$TMP/err2" &
pid=$!
wait_line "$TMP/r2/journal.jsonl" '"job_started"' 2
kill -KILL $pid
wait $pid 2>/dev/null || true
cleanup_jobs "$TMP/r2/journal.jsonl"
[ "$(ledger)" = "mig:1g.10gb run:2g.20gb run:2g.20gb" ] || fail "kill -9 (2): ledger holds '$(ledger)'"
# The resumed cell's jobs are released as soon as they start.
(
    wait_line "$TMP/r2/journal.jsonl" '"job_started"' 4 &&
        for p in $(job_pids "$TMP/r2/journal.jsonl"); do : >"$TMP/release/$p"; done
) &
releaser=$!
run 0 "$M" run "$TMP/exp.yaml" --device "$DEV" --results "$TMP/r2" --resume
wait "$releaser" || fail "resume: the releaser failed"
expect_err 'resume: removing 2 MIG instances'
[ "$(instances "$TMP/gpu.json")" = "$before" ] ||
    fail "resume: GPU has $(instances "$TMP/gpu.json"), had $before"
[ "$(ledger)" = "mig:1g.10gb" ] || fail "resume: ledger holds '$(ledger)'"
[ -f "$TMP/r2/mix/0/cell.json" ] || fail "resume: the cell did not run"
grep -q '"what":"mig_ledger"' "$TMP/r2/journal.jsonl" || fail "resume: ledger cleanup not journaled"

# --- an older migbench's journal: its "mig_created" events name no ledger, and (before the
# ledger existed) nothing else records the instances. --resume still removes exactly those.
"$M" run "$TMP/exp.yaml" --device "$DEV" --results "$TMP/r4" >"$TMP/out4" 2>"$TMP/err4" &
pid=$!
wait_line "$TMP/r4/journal.jsonl" '"job_started"' 2
kill -KILL $pid
wait $pid 2>/dev/null || true
cleanup_jobs "$TMP/r4/journal.jsonl"
grep -q '"event":"mig_created".*"ledger":' "$TMP/r4/journal.jsonl" ||
    fail "journal: mig_created names no ledger"
python3 - "$TMP/r4/journal.jsonl" "$LEDGER" <<'PY' || fail "legacy: rewriting the records"
import json, sys
lines = []
for l in open(sys.argv[1]):
    try:
        e = json.loads(l)
    except ValueError:  # a line torn by the kill stays as it is
        lines.append(l.rstrip("\n"))
        continue
    e.pop("ledger", None)
    lines.append(json.dumps(e, separators=(",", ":")))
open(sys.argv[1], "w").write("\n".join(lines) + "\n")
s = json.load(open(sys.argv[2]))
s["gpu_instances"] = [e for e in s["gpu_instances"] if e["creator"] != "run"]
json.dump(s, open(sys.argv[2], "w"))
PY
[ "$(ledger)" = "mig:1g.10gb" ] || fail "legacy: ledger holds '$(ledger)'"
(
    wait_line "$TMP/r4/journal.jsonl" '"job_started"' 4 &&
        for p in $(job_pids "$TMP/r4/journal.jsonl"); do : >"$TMP/release/$p"; done
) &
releaser=$!
run 0 "$M" run "$TMP/exp.yaml" --device "$DEV" --results "$TMP/r4" --resume
wait "$releaser" || fail "legacy resume: the releaser failed"
expect_err 'resume: removing 2 MIG instances'
[ "$(instances "$TMP/gpu.json")" = "$before" ] ||
    fail "legacy resume: GPU has $(instances "$TMP/gpu.json"), had $before"
[ "$(ledger)" = "mig:1g.10gb" ] || fail "legacy resume: ledger holds '$(ledger)'"
[ -f "$TMP/r4/mix/0/cell.json" ] || fail "legacy resume: the cell did not run"

# A run that could not record its instances creates none: refused before anything changes.
(
    export MIGBENCH_NVML_LIBRARY="$FAKE" MIGBENCH_STATE_DIR="$TMP/no/such/dir"
    export MIGBENCH_FAKE_NVML_SPEC="H100-80GB:mig=on,state=$TMP/nv.json"
    run 1 "$M" run "$TMP/exp.yaml" --device nvml:0 --results "$TMP/r3"
    expect_err "run 'mix': cannot write the record of instances migbench makes"
    [ ! -e "$TMP/r3" ] || fail "unwritable ledger: the run wrote results"
    run 0 "$M" mig show --device nvml:0
    expect_out 'no GPU instances'
    finish >/dev/null
) || fail "a run without a writable ledger"

finish
