# SPDX-License-Identifier: Apache-2.0
# migbench run's cool-down: before each cell after the first (and between the jobs of an exclusive
# run) it waits, at most measure.cooldown, until the device's power reading is back within
# measure.cooldown_margin of the idle reference. Emulated H100 (1 s averaged reading) whose power
# follows a trace file, so the power really falls; the host without a power reading falls back to
# the fixed wait. No assertion on how long anything takes beyond what the rules imply (an averaged
# reading is never trusted before one averaging window).
# MB_TEST_THREADS: migbench run samples telemetry on the meter thread.
. "$MB_SOURCE_DIR/tests/cli/lib.sh"
FX="$MB_BINARY_DIR/fixtures"
[ -x "$FX/fx_steady" ] || { echo "FAIL: fixtures not built in $FX" >&2; exit 1; }

# 1. Power high after the first cell, then falling back to idle: the cool-down ends near idle.
# The trace's clock starts when a handle opens: the meter's (opened at each cell) sees 80 W in
# its idle window (5 s: shorter windows give no energy figure, hence no baseline); migbench's own
# handle, which the cool-down polls, sees 600 W after 5.6 s falling to 80 W at 9 s.
cat >"$TMP/fall.csv" <<CSV
# t_seconds,watts
0,80
5.5,80
5.6,600
7,600
9,80
CSV
cat >"$TMP/fall.yaml" <<YAML
version: 1
name: cooltest
workloads:
  a: {command: ["$FX/fx_steady", --rate, "20", --duration, "60"], unit: images}
runs:
  - {name: ts, mode: timeslice, jobs: [a]}
measure: {idle: 5s, warmup: 200ms, duration: 1s, sample_interval: 50ms, grace: 1s,
          progress_timeout: 10s, repetitions: 2, cooldown: 30s, cooldown_margin: 10%}
YAML
run 0 "$MIGBENCH" run "$TMP/fall.yaml" --device "emu:H100-80GB:trace=$TMP/fall.csv" \
    --results "$TMP/res"
expect_err "cool-down: .* ended near_idle"
python3 - "$TMP/res" <<'PY' || fail "near-idle cool-down"
import json, sys
res = sys.argv[1]
bad = []
c0 = json.load(open(f"{res}/ts/0/cell.json"))
if c0["cooldown"] != {"seconds": None, "ended": None, "reference": None, "reference_w": None,
                      "power_w": None}:
    bad.append(f"the first cell has no cool-down: {c0['cooldown']}")
cd = json.load(open(f"{res}/ts/1/cell.json"))["cooldown"]
if cd["ended"] != "near_idle":
    bad.append(f"ended {cd}")
if cd["reference"] != "idle_baseline" or not 75 <= cd["reference_w"] <= 85:
    bad.append(f"reference {cd}")
if cd["power_w"] is None or cd["power_w"] > cd["reference_w"] * 1.1 + 1e-9:
    bad.append(f"ended above the margin: {cd}")
# An averaged (1 s) reading is not trusted before one window after the load stops.
if not 1.0 <= cd["seconds"] < 30:
    bad.append(f"seconds {cd}")
ev = [json.loads(l) for l in open(f"{res}/journal.jsonl")]
j = [e for e in ev if e["event"] == "cooldown"]
if len(j) != 1 or j[0]["rep"] != 1 or j[0]["ended"] != "near_idle":
    bad.append(f"journal cooldown events {j}")
if bad:
    print("\n".join(bad), file=sys.stderr)
    sys.exit(1)
PY

# 2. Power stays high: the cool-down ends at the cap. No idle baseline: the reference is the
# lowest reading seen (80 W early in the first cell). Exclusive: the second job cools down too.
cat >"$TMP/high.csv" <<CSV
0,80
2.5,80
2.6,600
CSV
sed -e 's/mode: timeslice, jobs: \[a\]/mode: exclusive, jobs: [a, a]/' \
    -e 's/idle: 5s, //' -e 's/cooldown: 30s/cooldown: 1500ms/' \
    -e 's/cooldown_margin: 10%/cooldown_margin: 0.05/' "$TMP/fall.yaml" >"$TMP/high.yaml"
run 0 "$MIGBENCH" run "$TMP/high.yaml" --device "emu:H100-80GB:trace=$TMP/high.csv" \
    --results "$TMP/res2"
python3 - "$TMP/res2" <<'PY' || fail "cool-down at the cap"
import json, sys
res = sys.argv[1]
bad = []
c0 = json.load(open(f"{res}/ts/0/cell.json"))
if c0["jobs"][0]["cooldown"]["ended"] is not None:
    bad.append(f"first job: {c0['jobs'][0]['cooldown']}")
jb = c0["jobs"][1]["cooldown"]
if jb["ended"] not in ("near_idle", "cap") or jb["seconds"] < 1.0:
    bad.append(f"second job: {jb}")
cd = json.load(open(f"{res}/ts/1/cell.json"))["cooldown"]
if cd["ended"] != "cap" or not 1.5 <= cd["seconds"] < 5:
    bad.append(f"cell 1: {cd}")
if cd["reference"] != "lowest_seen" or cd["reference_w"] is None or cd["reference_w"] > 100:
    bad.append(f"reference {cd}")
if cd["power_w"] is None or cd["power_w"] < 500:
    bad.append(f"last reading {cd}")
if bad:
    print("\n".join(bad), file=sys.stderr)
    sys.exit(1)
PY

# 3. The host without a power reading: the fixed wait, said once.
mkdir -p "$TMP/nopower"
sed -e 's/cooldown: 30s/cooldown: 300ms/' -e 's/repetitions: 2/repetitions: 3/' -e 's/idle: 5s, //' \
    "$TMP/fall.yaml" >"$TMP/host.yaml"
run 0 "$MIGBENCH" run "$TMP/host.yaml" --device "host:powercap=$TMP/nopower" --results "$TMP/res3"
[ "$(grep -c 'no power reading; waiting the fixed' "$TMP/err")" = 1 ] ||
    fail "the fallback is not said exactly once"
python3 - "$TMP/res3" <<'PY' || fail "host fallback"
import json, sys
res = sys.argv[1]
bad = []
for rep in (1, 2):
    cd = json.load(open(f"{res}/ts/{rep}/cell.json"))["cooldown"]
    if cd["ended"] != "no_power_reading" or cd["seconds"] < 0.3 or cd["power_w"] is not None:
        bad.append(f"rep {rep}: {cd}")
if bad:
    print("\n".join(bad), file=sys.stderr)
    sys.exit(1)
PY

# 4. The margin is checked.
sed -e 's/cooldown_margin: 10%/cooldown_margin: 150%/' "$TMP/fall.yaml" >"$TMP/bad.yaml"
run 2 "$MIGBENCH" run "$TMP/bad.yaml" --device emu:H100-80GB --dry-run
expect_err "bad.yaml:[0-9]+.*measure.cooldown_margin.*out of range"
run 2 "$MIGBENCH" run "$TMP/fall.yaml" --device emu:H100-80GB --dry-run \
    --set measure.cooldown_margin=lots
expect_err "measure.cooldown_margin.*not a fraction"
finish
