# SPDX-License-Identifier: Apache-2.0
# A GPU lost mid-window inside `run` (NVML's GPU_IS_LOST), through the emulator and through the
# fake libnvidia-ml.so.1: the cell fails with NVIDIA's reason, its energy is null (never 0, never
# a part of the window), its jobs are stopped, and the run goes on to the next cell, which fails
# at once with the same reason while the GPU stays lost. (It used to end the cell `ok` with
# "energy window 0 is not covered yet".)
# Nothing races a timer: the jobs run until released (never, here), the test makes the GPU fall
# off the bus (the emulator's lost_when= file) once the run says the window is open, and the
# window could only end by itself after measure.max_duration (20 s).
. "$MB_SOURCE_DIR/tests/cli/lib.sh"
FX="$MB_BINARY_DIR/fixtures"
FAKE="$MB_BINARY_DIR/tests/fake-nvml/libnvidia-ml.so.1"
[ -x "$FX/fx_steady" ] || { echo "FAIL: fixtures not built in $FX" >&2; exit 1; }
[ -r "$FAKE" ] || { echo "FAIL: fake NVML not built at $FAKE" >&2; exit 1; }
mkdir -p "$TMP/release"

job_pids() {
    python3 -c 'import json,sys
for l in open(sys.argv[1]):
    e = json.loads(l)
    if e.get("event") == "job_started": print(int(e["pid"]))' "$1" 2>/dev/null || true
}
trap 'for r in "$TMP"/r*; do for p in $(job_pids "$r/journal.jsonl"); do kill -KILL -- "-$p" 2>/dev/null || true; done; done; rm -rf "$TMP"' EXIT

exp() { # exp DEVICE FILE [mig]
    local first="{name: first, mode: timeslice, jobs: [a, a]}"
    local second="{name: second, mode: exclusive, jobs: [a]}"
    if [ "${3:-}" = mig ]; then
        first="{name: first, mode: mig, layout: [3g.40gb, 3g.40gb], jobs: [a, a]}"
        second="{name: second, mode: mig, layout: [1g.10gb], jobs: [a]}"
    fi
    cat >"$2" <<YAML
version: 1
name: lost
device: "$1"
workloads:
  a: {command: ["$FX/fx_steady", --rate, "20", --release-dir, "$TMP/release"]}
runs:
  - $first
  - $second
measure: {warmup: 2 steps, duration: completion, max_duration: 20s, sample_interval: 50ms, grace: 1s, progress_timeout: 60s, repetitions: 1}
YAML
}

# lost RESULTS LOSTFILE REASON-ERE [ENV...]: runs the experiment in the background, makes the GPU
# fall off the bus once the first cell's window is open, and checks what the run recorded.
lost() {
    local res=$1 file=$2 reason=$3
    shift 3
    env "$@" "$MIGBENCH" run "$TMP/exp.yaml" --results "$res" >"$res.out" 2>"$res.err" &
    local pid=$!
    wait_line "$res.err" 'first 0: warm-up done, measuring' || { kill "$pid"; wait "$pid"; return; }
    : >"$file"
    local rc=0
    wait "$pid" || rc=$?
    [ "$rc" -eq 1 ] || fail "run exited $rc, expected 1 (a failed cell): $(cat "$res.err")"
    grep -Eq "cell failed: .*$reason" "$res.err" || fail "no 'cell failed' with the reason: $(cat "$res.err")"
    python3 - "$res" "$reason" <<'PY' || fail "results in $res"
import json, os, re, sys
res, reason = sys.argv[1], sys.argv[2]
bad = []
for run in ("first", "second"):
    c = json.load(open(f"{res}/{run}/0/cell.json"))
    if c["status"] != "failed" or not re.search(reason, c["failure"]["reason"]):
        bad.append(f"{run}: {c['status']} {c.get('failure')}")
    en = c["energy"]
    if en["counter_j"] is not None or en["integrated_j"] is not None or en["mean_power_w"] is not None:
        bad.append(f"{run}: energy {en}")
first = json.load(open(f"{res}/first/0/cell.json"))["energy"]
if first["flag"] != "device_lost" or not re.search(reason, first["refused_reason"] or ""):
    bad.append(f"first: energy flag {first['flag']} reason {first['refused_reason']}")
if "not covered" in json.dumps(first):
    bad.append("first: the old reason")
ev = [json.loads(l) for l in open(f"{res}/journal.jsonl")]
failed = [e["run"] for e in ev if e["event"] == "cell_failed" and re.search(reason, e.get("reason", ""))]
if failed != ["first", "second"]:
    bad.append(f"cell_failed events with the reason: {failed}")
# The first cell's two jobs were stopped (the run waited for them); none is left running.
pids = [e["pid"] for e in ev if e["event"] == "job_started"]
if len(pids) < 2:
    bad.append(f"jobs started: {pids}")
for p in pids:
    try:
        st = open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()[0]
    except OSError:
        continue
    if st != "Z":
        bad.append(f"job {p} still running")
if bad:
    print("\n".join(bad), file=sys.stderr)
    sys.exit(1)
PY
}

# The emulator: every handle on the GPU (the runner's, the meter's) answers MB_EGONE at once.
exp "emu:H100-80GB:lost_when=$TMP/lost-emu" "$TMP/exp.yaml"
lost "$TMP/r-emu" "$TMP/lost-emu" "the GPU has fallen off the bus"

# Through NVML: GPU_IS_LOST (15) with NVIDIA's own words.
exp "nvml:0" "$TMP/exp.yaml"
lost "$TMP/r-nvml" "$TMP/lost-nvml" "NVML 15: GPU is lost" \
    MIGBENCH_NVML_LIBRARY="$FAKE" MIGBENCH_FAKE_NVML_SPEC="H100-80GB:lost_when=$TMP/lost-nvml"

# MIG: the instances the lost GPU could not destroy stay in the ledger, as found; once the GPU
# answers again `mig clear --ours` removes exactly them.
MIGDEV="emu:H100-80GB:mig=on:state=$TMP/gpu.json"
exp "$MIGDEV:lost_when=$TMP/lost-mig" "$TMP/exp.yaml" mig
lost "$TMP/r-mig" "$TMP/lost-mig" "the GPU has fallen off the bus"
rm -f "$TMP/lost-mig"
run 0 "$MIGBENCH" mig show --device "$MIGDEV"
[ "$(grep -c ' 3g.40gb .* migbench ' "$TMP/out")" = 2 ] || fail "instances after the loss: $(cat "$TMP/out")"
run 0 "$MIGBENCH" mig clear --ours --device "$MIGDEV"
run 0 "$MIGBENCH" mig show --device "$MIGDEV"
expect_out 'no GPU instances'
finish
