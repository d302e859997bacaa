# SPDX-License-Identifier: Apache-2.0
# MIG-mode phases on an emulated GPU (migbench run --manage-mig-mode / manage_mig_mode: true):
# MIG-off runs, one switch, MIG-on runs, the original mode back; refusals (busy GPU, a reset the
# driver cannot do) leave the GPU as found; without the opt-in the two-phase commands are printed;
# killed during the mode switch and resumed: original mode restored, no instance left, no
# finished cell lost.
. "$MB_SOURCE_DIR/tests/cli/lib.sh"
FX="$MB_BINARY_DIR/fixtures"
[ -x "$FX/fx_steady" ] || { echo "FAIL: fixtures not built in $FX" >&2; exit 1; }

cat >"$TMP/exp.yaml" <<YAML
version: 1
name: phases
workloads:
  a: {command: ["$FX/fx_steady", --rate, "20", --duration, "60"], unit: images}
  b: {command: ["$FX/fx_steady", --rate, "10", --duration, "60"], unit: tokens}
runs:
  - {name: alone, mode: exclusive, jobs: [a]}
  - {name: ts, mode: timeslice, jobs: [a, b]}
  - {name: mix, mode: mig, layout: [4g.40gb, 3g.40gb], jobs: [a, b]}
measure: {warmup: 100ms, duration: 300ms, sample_interval: 50ms, grace: 1s, progress_timeout: 10s, repetitions: 2}
YAML

# state FILE FIELD: a field of an emulated GPU's state file.
state() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); v=d[sys.argv[2]]; print(len(v) if isinstance(v, list) else v)' "$1" "$2"; }
# events DIR: the journal's event names, one a line.
events() { python3 -c 'import json,sys; [print(json.loads(l)["event"]) for l in open(sys.argv[1]) if l.strip()]' "$1/journal.jsonl"; }

# 1. Phases: the whole-GPU runs with MIG off (as found), a switch, the mig runs, MIG off again.
S="$TMP/gpu.json"
run 0 "$MIGBENCH" run "$TMP/exp.yaml" --device "emu:H100-80GB:state=$S" --results "$TMP/r1" --manage-mig-mode
expect_err 'MIG mode disabled -> enabled: the driver unbinds and resets the idle GPU'
expect_err 'MIG mode restored to disabled'
expect_out '^mix +mig +2/2'
expect_out '^alone +exclusive +2/2'
[ "$(state "$S" mig_current)$(state "$S" mig_pending)$(state "$S" gpu_instances)" = 000 ] ||
    fail "GPU not left as found: $(cat "$S")"
events "$TMP/r1" >"$TMP/ev"
[ "$(grep -c '^mig_mode_original$' "$TMP/ev")" = 1 ] || fail "original mode journaled $(grep -c original "$TMP/ev") times"
# The order: every whole-GPU cell, then the switch, the mig cells, the restore.
python3 - "$TMP/r1/journal.jsonl" <<'PY' || fail "phase order in the journal"
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
names = [(e["event"], e.get("run")) for e in ev]
sw = names.index(("mig_mode_switched", None))
started = [(i, r) for i, (n, r) in enumerate(names) if n == "cell_started"]
assert all(r != "mix" for i, r in started if i < sw), names
assert all(r == "mix" for i, r in started if i > sw), names
assert names[-2][0] == "mig_mode_restored", names[-3:]
PY
python3 - "$TMP/r1" <<'PY' || fail "mix cells ran on MIG instances"
import json, sys
for rep in (0, 1):
    c = json.load(open(f"{sys.argv[1]}/mix/{rep}/cell.json"))
    assert [i["profile"] for i in c["device"]["mig"]["instances"]] == ["4g.40gb", "3g.40gb"], c["device"]["mig"]
PY

# The file's manage_mig_mode: true is the same opt-in.
sed 's/^name: phases$/name: phases\nmanage_mig_mode: true/' "$TMP/exp.yaml" >"$TMP/exp-opt.yaml"
run 0 "$MIGBENCH" run "$TMP/exp-opt.yaml" --device "emu:H100-80GB:state=$TMP/gpu-opt.json" --results "$TMP/r1b" --only mix
expect_err 'MIG mode restored to disabled'

# 2. Without the opt-in: MIG off, the mig run is skipped and the two phases are spelled out.
run 0 "$MIGBENCH" run "$TMP/exp.yaml" --device "emu:H100-80GB:state=$TMP/gpu2.json" --results "$TMP/r2"
expect_err "run 'mix' skipped"
expect_err '2 runs need MIG mode off and 1 run need it on'
expect_err "nvidia-smi -i 0 -mig 1"
expect_err "migbench run $TMP/exp.yaml --device emu:H100-80GB:state=$TMP/gpu2.json --only mix --results $TMP/r2-mig-on"
expect_err "migbench report $TMP/r2-mig-off $TMP/r2-mig-on --merge"
grep -q '"event":"mig_mode' "$TMP/r2/journal.jsonl" && fail "switched without the opt-in"
[ "$(state "$TMP/gpu2.json" mig_current)$(state "$TMP/gpu2.json" mig_pending)" = 00 ] || fail "mode changed without the opt-in"

# 3. Refused switches: the finished MIG-off cells are kept, the GPU is left as found, and the
#    message says why and what to do.
run 1 "$MIGBENCH" run "$TMP/exp.yaml" --device "emu:H100-80GB:busy=4242:state=$TMP/gpu3.json" --results "$TMP/r3" --manage-mig-mode
expect_err 'in use by PIDs 4242; stop them'
expect_err 'left in its original mode'
[ "$(state "$TMP/gpu3.json" mig_current)$(state "$TMP/gpu3.json" mig_pending)" = 00 ] || fail "busy: not as found"
[ -f "$TMP/r3/ts/1/cell.json" ] || fail "busy: a finished MIG-off cell is missing"
run 1 "$MIGBENCH" run "$TMP/exp.yaml" --device "emu:H100-80GB:reset=unavailable:state=$TMP/gpu4.json" --results "$TMP/r4" --manage-mig-mode --only mix
expect_err 'needs a GPU reset that cannot be done here'
expect_err 'reset the GPU from the host or reboot'
[ "$(state "$TMP/gpu4.json" mig_current)$(state "$TMP/gpu4.json" mig_pending)" = 00 ] || fail "reset-required: not as found"

# 4. Killed during the switch (after the new mode is staged, before it is active), then resumed.
S5="$TMP/gpu5.json"
run 137 "$MIGBENCH" run "$TMP/exp.yaml" --device "emu:H100-80GB:crash=mig_switch_mode:1:state=$S5" --results "$TMP/r5" --manage-mig-mode
[ "$(state "$S5" mig_current)$(state "$S5" mig_pending)" = 01 ] || fail "crash: the switch was not halfway"
grep -q '"mig_mode_original"' "$TMP/r5/journal.jsonl" || fail "crash: original mode not journaled before the switch"
done_before=$(ls "$TMP"/r5/*/*/cell.json | wc -l)
[ "$done_before" = 4 ] || fail "crash: $done_before cells finished before the switch, expected 4"
cp "$TMP/r5/alone/0/cell.json" "$TMP/alone0.json"
run 0 "$MIGBENCH" run "$TMP/exp.yaml" --device "emu:H100-80GB:state=$S5" --results "$TMP/r5" --manage-mig-mode --resume
expect_err 'MIG mode restored to disabled'
expect_out '^mix +mig +2/2'
expect_out '^alone +exclusive +2/2'
cmp -s "$TMP/alone0.json" "$TMP/r5/alone/0/cell.json" || fail "resume: a finished cell was rewritten"
[ "$(state "$S5" mig_current)$(state "$S5" mig_pending)$(state "$S5" gpu_instances)" = 000 ] ||
    fail "resume: GPU not restored: $(cat "$S5")"
events "$TMP/r5" >"$TMP/ev5"
[ "$(grep -c '^mig_mode_original$' "$TMP/ev5")" = 1 ] || fail "resume journaled another original"
tail -2 "$TMP/ev5" | grep -q '^mig_mode_restored$' || fail "resume: the restore is not journaled last"

# --dry-run states the phases.
run 0 "$MIGBENCH" run "$TMP/exp.yaml" --device emu:H100-80GB --dry-run --manage-mig-mode
expect_out 'MIG-mode phases: 4 cells with MIG off, 2 with MIG on'
run 0 "$MIGBENCH" run "$TMP/exp.yaml" --device emu:H100-80GB --dry-run
expect_out 'without --manage-mig-mode only those of the GPU'
finish
