# SPDX-License-Identifier: Apache-2.0
# Hostile input, third round (issue 26): what another user or a damaged file hands `run`,
# `monitor`, `report --merge`, `plan`, `measure` and the emulator, refused with exit 2 (or never
# used) and a message naming what and why.
. "$MB_SOURCE_DIR/tests/cli/lib.sh"
M="$MIGBENCH"
EX="$MB_SOURCE_DIR/examples/quickstart.yaml"
FX="$MB_BINARY_DIR/fixtures"
cat >"$TMP/exp.yaml" <<YAML
version: 1
name: tiny
workloads:
  a: {command: ["$FX/fx_steady", --rate, "20", --duration, "60"], unit: images}
runs:
  - {name: one, mode: exclusive, jobs: [a]}
  - {name: two, mode: exclusive, jobs: [a]}
measure: {warmup: 100ms, duration: 1s, sample_interval: 50ms, repetitions: 1}
YAML

# --- power limits: one check for the dry run and the run; messages that say what is wrong -------
run 2 "$M" run "$EX" --dry-run --set 'power_limits=[1e400W]'
expect_err "power limit '1e400W': out of range"
run 2 "$M" run "$EX" --dry-run --set 'power_limits=[80%,80%]'
expect_err "^migbench: run: --set power_limits=\[80%,80%\]: field 'power_limits\[1\]': '80%' is listed twice"
grep -q 'yaml:0' "$TMP/err" && fail "a --set list blamed on line 0 of the file"
run 2 "$M" run "$TMP/exp.yaml" --dry-run --device "emu:H100-80GB:state=$TMP/pw.json" \
    --set 'power_limits=[20%]'
expect_err "--set power_limits: 20%: power limit 140 W is outside the device's range 210..700 W"
run 2 "$M" run "$TMP/exp.yaml" --device "emu:H100-80GB:state=$TMP/pw.json" --results "$TMP/pw" \
    --set 'power_limits=[20%]'
expect_err "--set power_limits: 20%: power limit 140 W is outside the device's range 210..700 W"

# --- a restore record with numbers no integer holds: refused by field, nothing run ------------
for field in pid_start:1e300 time_unix_s:1e300 time_unix_s:-1e300; do
    printf '{"uuid": "GPU-x", "original_mw": 700000, "set_mw": 350000, "pid": 1, "%s": %s}\n' \
        "${field%%:*}" "${field#*:}" >"$TMP/pw.json.powercap.json"
    run 1 "$M" run "$TMP/exp.yaml" --device "emu:H100-80GB:state=$TMP/pw.json" \
        --results "$TMP/pw-$field" --set 'power_limits=[80%]'
    expect_err "pw.json.powercap.json: field '${field%%:*}': expected .*; nothing was run"
    [ -z "$(find "$TMP/pw-$field" -name cell.json)" ] || fail "a cell ran past a damaged record"
done
rm -f "$TMP/pw.json.powercap.json"

# --- selections ------------------------------------------------------------------------------------
sed 's/name: two,/name: "1",/' "$TMP/exp.yaml" >"$TMP/one.yaml"
run 2 "$M" run "$TMP/one.yaml" --dry-run
expect_err "one.yaml:7: field 'runs\[1\].name': '1' reads as a cell index or range"
sed 's/name: two,/name: "0-1",/' "$TMP/exp.yaml" >"$TMP/range.yaml"
run 2 "$M" run "$TMP/range.yaml" --dry-run
expect_err "'0-1' reads as a cell index or range"
run 2 "$M" run "$TMP/exp.yaml" --device emu:H100-80GB --results "$TMP/sel" --cells 9999999999
expect_err "--cells: '9999999999' is past the last cell \(2 cells: 0-1\)"
# --only is the selection --cells is: both join a results directory of the same experiment.
run 0 "$M" run "$TMP/exp.yaml" --device emu:H100-80GB --results "$TMP/sel" --cells one
run 0 "$M" run "$TMP/exp.yaml" --device emu:H100-80GB --results "$TMP/sel" --only two
[ -f "$TMP/sel/two/0/cell.json" ] || fail "--only did not join the directory"
run 2 "$M" run "$TMP/exp.yaml" --device emu:H100-80GB --results "$TMP/sel"
expect_err "already holds results"

# --- report --merge: the same cell twice, different experiments ------------------------------------
cp -r "$TMP/sel" "$TMP/copy"
run 2 "$M" report "$TMP/sel" "$TMP/sel" --merge
expect_err "cannot merge: cell one#0 of .*/sel is also in .*/sel \(the same measurement twice"
run 2 "$M" report "$TMP/sel" "$TMP/copy" --merge
expect_err "cannot merge: cell one#0 of .*/copy is also in .*/sel"
sed 's/^name: tiny/name: other/' "$TMP/exp.yaml" >"$TMP/other.yaml"
run 0 "$M" run "$TMP/other.yaml" --device emu:H100-80GB --results "$TMP/other" --cells one
run 2 "$M" report "$TMP/sel" "$TMP/other" --merge
expect_err "different experiments \(tiny vs other\); --force merges anyway"
run 0 "$M" report "$TMP/sel" "$TMP/other" --merge --force
expect_out "merged with --force despite different experiments"

# --- an energy counter that does not advance is no measurement (never 0 J) --------------------------
# (a run's energy window is at least 5 s: 6 s here, and a counter that ticks every 30 s)
sed 's/duration: 1s/duration: 6s/' "$TMP/exp.yaml" >"$TMP/six.yaml"
run 0 "$M" run "$TMP/six.yaml" --device "emu:H100-80GB:load=0.5:energy_update_ms=30000" \
    --results "$TMP/slow" --cells one
python3 - "$TMP/slow/one/0/cell.json" <<'PY' || fail "a counter that did not tick was recorded"
import json, sys
e = json.load(open(sys.argv[1]))["energy"]
assert e["counter_j"] is None, e
# The integral measures the cell; the counter's failure is a note, not a refusal (docs/results.md).
assert "energy counter" in e["note"], e
assert e["refused_reason"] is None and e["method"] == "power_integral", e
assert e["integrated_j"], e
PY
run 0 "$M" measure --device "emu:H100-80GB:load=0.5:wrap_mj=1" --idle 0s --warmup 0s -- \
    "$FX/fx_steady" --rate 20 --duration 1
expect_err "n/a counter"
expect_err "the energy counter did not advance"
grep -Eq '(^| )0\.000 J counter|mean power +0\.00 W' "$TMP/err" && fail "0 J from a stuck counter"

# --- a job's own clock in ms, or a per-iteration time, is no clock ---------------------------------
cat >"$TMP/clock.py" <<'PY'
import sys, time
t0 = time.monotonic()
for i in range(1, 31):
    time.sleep(0.02)
    t = (time.monotonic() - t0) * 1000 if sys.argv[1] == "ms" else 20 + (i * 7 % 10)
    print(f"iter {i} clock {t:.3f}", flush=True)
PY
for kind in ms iter; do
    run 0 "$M" measure --device emu:H100-80GB --idle 0s --warmup 0s --samples-per-step 1 \
        --progress-regex 'iter ([0-9]+) clock ([0-9.]+)' -- python3 "$TMP/clock.py" "$kind"
    expect_err "throughput +n/a \("
done
expect_err "progress records were rejected"

# --- exit 2 for bad input ----------------------------------------------------------------------
sed 's/^measure:/slurm: {gpu: Z9000}\nmeasure:/' "$TMP/exp.yaml" >"$TMP/z.yaml"
run 2 "$M" slurm submit "$TMP/z.yaml" --emit "$TMP/emit"
expect_err "z.yaml:[0-9]+: field 'slurm.gpu': 'Z9000'"
mkfifo "$TMP/fifo"
for opt in trace=/dev/zero "catalog=$TMP/fifo" "state=$TMP" state=/dev/null; do
    run 2 timeout 60 "$M" run "$TMP/exp.yaml" --dry-run --device "emu:H100-80GB:$opt"
    expect_err "option ${opt%%=*}=.*not a regular file"
done
long=$(python3 -c 'print("a" * 5000)')
run 2 "$M" run "$TMP/exp.yaml" --dry-run --device "emu:H100-80GB:x=$long"
expect_err "value of 'x' too long \(5000 bytes"
python3 - "$MB_SOURCE_DIR/tests/cli/plan-data/profiles.csv" "$TMP/mem.csv" <<'PY'
import sys
lines = open(sys.argv[1]).read().splitlines()
head = [l for l in lines if l and not l.startswith("#")]
cols = head[0].split(",")
rows = [l.split(",") for l in head[1:]]
rows[0][cols.index("peak_mem_mib")] = "1e30"
open(sys.argv[2], "w").write("\n".join([head[0]] + [",".join(r) for r in rows]) + "\n")
PY
run 2 "$M" plan --jobs "$MB_SOURCE_DIR/tests/cli/plan-data/jobs.yaml" --profiles "$TMP/mem.csv"
expect_err "field 'peak_mem_mib'"

# --- live files: another user's runtime directory, forged lines, values out of range -------------
mkdir -m 0777 "$TMP/rt"
chmod 0777 "$TMP/rt"
run 1 "$M" monitor --device emu:H100-80GB --count 1 --plain --runtime-dir "$TMP/rt"
expect_err "runtime directory .*/rt: mode 0777 lets others write to it"
mkdir -m 0700 "$TMP/rt2"
uuid=$("$M" monitor --device emu:H100-80GB --count 1 --json |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["gpus"][0]["uuid"])')
live() { # the fields after pid, device and device_uuid of a live file of this shell (alive)
    printf '{"pid": %d, "device": "emu:H100-80GB", "device_uuid": "%s", %s}\n' $$ "$uuid" "$1" \
        >"$TMP/rt2/run-$$.json"
}
live '"run": "good", "phase": "window", "cell_index": 1, "cells": 2, "jobs": []'
run 0 "$M" monitor --device emu:H100-80GB --count 1 --plain --runtime-dir "$TMP/rt2"
expect_out " run=/good#0 phase=window" # shown: so would the cases below be, but for the checks
live '"run": "r\ndevice=FAKE power=9999.0W", "jobs": []'
run 0 "$M" monitor --device emu:H100-80GB --count 1 --plain --runtime-dir "$TMP/rt2"
grep -q FAKE "$TMP/out" && fail "a forged line from a live file reached the terminal"
live '"run": "r", "cell_index": 5, "cells": 2, "window_s": -5, "jobs": []'
run 0 "$M" monitor --device emu:H100-80GB --count 1 --plain --runtime-dir "$TMP/rt2" \
    --prometheus "$TMP/prom.txt"
grep -q 'migbench_cell_progress_ratio\|migbench_cell_window_seconds' "$TMP/prom.txt" &&
    fail "out-of-range live values were exported"

finish
