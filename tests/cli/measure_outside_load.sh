# SPDX-License-Identifier: Apache-2.0
# measure records the host's outside load over the job's window (docs/measure.md, "Outside
# load"), from the /proc that MIGBENCH_PROC_ROOT names. The job itself rewrites the fake stat
# file, so the snapshot before the spawn and the one after the exit differ by exactly what it
# wrote: no timing is involved. 50 ticks of steal in 200 is 25 % (flagged, threshold 5 %); none
# in 250 is quiet. A stat that does not change gives no CPU figure: n/a, and null in JSON, never 0.
. "$MB_SOURCE_DIR/tests/cli/lib.sh"
fake() { # fake DIR: a /proc with two CPUs and a quiet load average
    mkdir -p "$1"
    printf 'cpu  100 0 50 1000 0 0 0 0 0 0\ncpu0 50 0 25 500 0 0 0 0 0 0\ncpu1 50 0 25 500 0 0 0 0 0 0\n' >"$1/stat"
    printf '0.25 0.10 0.05 1/100 4242\n' >"$1/loadavg"
}
# job DIR CPU_LINE: a command that puts CPU_LINE as the aggregate line of DIR/stat, then exits.
job() {
    printf '%s\n' "$2" >"$TMP/line.$3"
    echo cp "$TMP/line.$3" "$1/stat"
}

fake "$TMP/steal"
MIGBENCH_PROC_ROOT="$TMP/steal" run 0 "$MIGBENCH" measure --device emu:H100-80GB:load=0.5 \
    --json -- $(job "$TMP/steal" 'cpu  150 0 50 1100 0 0 0 50 0 0' a)
python3 - "$TMP/out" <<'PY' || fail "stolen window in JSON"
import json, sys
o = json.load(open(sys.argv[1]))["outside_load"]
assert o["loaded"] is True and o["steal_pct"] == 25 and o["cpus"] == 2, o
assert "CPU steal 25.0 %" in o["why"] and o["load1"] == 0.25, o
assert o["other_cpu_pct"] is None and o["job_cores"] is None, o
PY
fake "$TMP/steal"
MIGBENCH_PROC_ROOT="$TMP/steal" run 0 "$MIGBENCH" measure --device emu:H100-80GB:load=0.5 \
    -- $(job "$TMP/steal" 'cpu  150 0 50 1100 0 0 0 50 0 0' b)
expect_err '^  outside load  FLAGGED: CPU steal 25\.0 % \(threshold 5 %\); the throughput may be affected$'

fake "$TMP/calm"
MIGBENCH_PROC_ROOT="$TMP/calm" run 0 "$MIGBENCH" measure --device host \
    -- $(job "$TMP/calm" 'cpu  150 0 50 1250 0 0 0 0 0 0' c)
expect_err '^  outside load  none seen \(steal 0\.0 %, load average 0\.25, 2 CPUs\)$'

# An unchanged stat: no CPU figure, so no verdict; the JSON says null.
fake "$TMP/still"
MIGBENCH_PROC_ROOT="$TMP/still" run 0 "$MIGBENCH" measure --device host --json -- true
python3 - "$TMP/out" <<'PY' || fail "unjudged window in JSON"
import json, sys
o = json.load(open(sys.argv[1]))["outside_load"]
assert o["loaded"] is None and o["steal_pct"] is None and o["why"] is None, o
PY
MIGBENCH_PROC_ROOT="$TMP/still" run 0 "$MIGBENCH" measure --device host -- true
expect_err '^  outside load  n/a \(no CPU figures in /proc\)$'

# The real /proc: a verdict either way, with figures.
run 0 "$MIGBENCH" measure --device host --json -- true
python3 - "$TMP/out" <<'PY' || fail "real /proc"
import json, sys
o = json.load(open(sys.argv[1]))["outside_load"]
assert o["cpus"] is None or o["cpus"] >= 1, o
assert o["load1"] is not None and o["load1"] >= 0, o
PY
finish
