# SPDX-License-Identifier: Apache-2.0
# A window sampled every 8 s (measure.sample_interval allows up to 10 s) still gets its energy:
# the runner waits for the covering sample by the same rule as `measure` (power/window_wait.c,
# three sample periods past the sensor's averaging). With the runner's old fixed 5 s wait the
# cell's energy was refused as "energy window 0 is not covered yet". The emulated GPU samples
# on the meter's clock; nothing here depends on how long the machine takes.
. "$MB_SOURCE_DIR/tests/cli/lib.sh"
FX="$MB_BINARY_DIR/fixtures"
[ -x "$FX/fx_steady" ] || { echo "FAIL: fixtures not built in $FX" >&2; exit 1; }

cat >"$TMP/exp.yaml" <<YAML
version: 1
name: slowsampling
workloads:
  m: {command: ["$FX/fx_steady", --rate, "40", --duration, "600"], unit: samples}
runs:
  - {name: ex, mode: exclusive, jobs: [m]}
measure: {warmup: 2 steps, duration: 10s, sample_interval: 8s, grace: 1s, repetitions: 1}
YAML
run 0 "$MIGBENCH" run "$TMP/exp.yaml" --device emu:H100-80GB --results "$TMP/res"
python3 - "$TMP/res/ex/0/cell.json" <<'PY' || fail "the slowly sampled window has no energy"
import json, sys
e = json.load(open(sys.argv[1]))["energy"]
ok = e["flag"] == "ok" and e["counter_j"] is not None and e["refused_reason"] is None
if not ok:
    print(e, file=sys.stderr)
sys.exit(0 if ok else 1)
PY
finish
