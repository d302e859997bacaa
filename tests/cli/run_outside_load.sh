# SPDX-License-Identifier: Apache-2.0
# Outside load (docs/run.md, "Outside load"): migbench run records, per window, what the host saw
# from outside the jobs, from the /proc that MIGBENCH_PROC_ROOT names (here fake stat and loadavg
# files, so the machine's own load cannot change the verdict). A load average of 10000 on 2 CPUs
# is "loaded" whatever cores the jobs got; 0.00 is "quiet". The stat file does not change during
# the window, so steal and other processes' CPU time are unmeasured: null, never 0. A loaded
# window is said at the end of the run and flagged by the report in every format.
# MB_TEST_THREADS: migbench run samples telemetry on the meter thread.
. "$MB_SOURCE_DIR/tests/cli/lib.sh"
FX="$MB_BINARY_DIR/fixtures"
cat >"$TMP/exp.yaml" <<YAML
version: 1
name: loadtest
device: host
workloads:
  fast: {command: ["$FX/fx_steady", --rate, "40", --duration, "120"], unit: images}
runs:
  - {name: alone, mode: exclusive, jobs: [fast]}
measure: {warmup: 2 steps, duration: 20 steps, sample_interval: 50ms}
YAML
fake() { # fake DIR LOADAVG: a /proc with two CPUs
    mkdir -p "$1"
    printf 'cpu  100 0 50 1000 0 0 0 0 0 0\ncpu0 50 0 25 500 0 0 0 0 0 0\ncpu1 50 0 25 500 0 0 0 0 0 0\n' >"$1/stat"
    printf '%s 0.10 0.05 1/100 4242\n' "$2" >"$1/loadavg"
}
fake "$TMP/busy" 10000.00
fake "$TMP/calm" 0.00

MIGBENCH_PROC_ROOT="$TMP/busy" run 0 "$MIGBENCH" run "$TMP/exp.yaml" --results "$TMP/loaded"
expect_err 'alone 0: window taken under outside load \(load average 10000\.00 with the jobs given [0-9]+ core\(s\) of 2\)'
expect_out '^outside load: alone rep 0: load average 10000\.00'
expect_out '^outside load: 1 cell\(s\) measured while other work loaded the host .*may be affected'
python3 - "$TMP/loaded/alone/0/cell.json" "$TMP/busy" <<'PY' || fail "loaded cell.json"
import json, sys
o = json.load(open(sys.argv[1]))["outside_load"]
assert o["loaded"] is True and o["load1"] == 10000 and o["cpus"] == 2, o
assert o["steal_pct"] is None and o["other_cpu_pct"] is None, o
assert o["source"] == sys.argv[2] and len(o["windows"]) == 1, o
assert o["windows"][0]["loaded"] is True and "load average" in o["why"], o
PY

MIGBENCH_PROC_ROOT="$TMP/calm" run 0 "$MIGBENCH" run "$TMP/exp.yaml" --results "$TMP/quiet"
! grep -q 'outside load' "$TMP/out" "$TMP/err" || fail "a quiet run mentions outside load"
python3 - "$TMP/quiet/alone/0/cell.json" <<'PY' || fail "quiet cell.json"
import json, sys
o = json.load(open(sys.argv[1]))["outside_load"]
assert o["loaded"] is False and o["why"] is None and o["load1"] == 0, o
PY

# The report flags the loaded window in every format and says the answer may be affected.
run 0 "$MIGBENCH" report "$TMP/loaded"
expect_out 'under outside load: 1'
expect_out 'alone rep 0: window taken under outside load \(load average 10000\.00'
# The text wraps at 80 columns: the sentence is read with its lines joined.
tr -s '\n ' '  ' <"$TMP/out" | grep -q 'measured under outside load: the answer may be affected' ||
    fail "the text answers do not say the answer may be affected"
run 0 "$MIGBENCH" report --format md "$TMP/loaded"
expect_out '^- cells: 1, .*under outside load: 1'
run 0 "$MIGBENCH" report --format html "$TMP/loaded"
expect_out '<li class="warn">1 cell\(s\) measured under outside load'
run 0 "$MIGBENCH" report --format json "$TMP/loaded"
python3 - "$TMP/out" <<'PY' || fail "report JSON"
import json, sys
e = json.load(open(sys.argv[1]))["experiments"][0]
assert e["quality"]["cells_outside_load"] == 1, e["quality"]
assert any("under outside load" in n for n in e["quality"]["notes"]), e["quality"]["notes"]
assert all("may be affected" in a["sentence"] for a in e["answers"] if a["winner"]), e["answers"]
PY
run 0 "$MIGBENCH" report --format json "$TMP/quiet"
grep -q '"cells_outside_load":[[:space:]]*0' "$TMP/out" || fail "quiet report JSON count"
! grep -q 'may be affected' "$TMP/out" || fail "a quiet report warns"
finish
