# SPDX-License-Identifier: Apache-2.0
# Progress from unmodified jobs whose output is buffered (issue 11): measure's throughput is
# within 1% of the job's own clock, or refused with the reason "progress arrived in bursts
# (output buffered?)" -- never a wrong number. Jobs: a real Python job printing to a pipe (with
# migbench's default PYTHONUNBUFFERED=1 and without it), and a C job whose stdout is fully
# buffered by stdio (fx_steady --buffered), through a pipe and on a pseudo-terminal (--pty).
. "$MB_SOURCE_DIR/tests/cli/lib.sh"
: "${MB_BINARY_DIR:?}"
FX="$MB_BINARY_DIR/fixtures"
[ -x "$FX/fx_steady" ] || { echo "FAIL: fixtures not built in $FX" >&2; exit 1; }
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
PYJOB="$MB_SOURCE_DIR/tests/fixtures/py_steady.py"
M=("$MIGBENCH" measure --device emu:H100-80GB:load=0.5 --interval 50ms --json)

# own_rate: the job's own steps/s from its last words on stderr.
own_rate() {
    sed -n 's/.*(\([0-9.]*\) steps\/s by its own clock).*/\1/p' "$TMP/err" | tail -1
}
# tput: measure's throughput (steps/s), or "None" when refused.
tput() {
    "$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["throughput"]["per_s"])' "$TMP/out"
}
reason() {
    "$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["throughput"]["reason"])' "$TMP/out"
}
# expect_close WHAT: measure's throughput within 1% of the job's own clock.
expect_close() {
    local got own
    got=$(tput)
    own=$(own_rate)
    [ -n "$own" ] || { fail "$1: the job did not report its own rate"; return; }
    echo "$1: measured $got steps/s, job's own clock $own steps/s" >&2
    "$PY" -c 'import sys; g, o = sys.argv[1], float(sys.argv[2]); sys.exit(0 if g != "None" and abs(float(g) / o - 1) < 0.01 else 1)' "$got" "$own" ||
        fail "$1: throughput $got, the job's own clock says $own (more than 1% apart)"
}
# expect_refused WHAT: no throughput, and the buffering reason.
expect_refused() {
    local got
    got=$(tput)
    echo "$1: throughput $got; $(reason)" >&2
    [ "$got" = None ] || fail "$1: throughput $got from buffered progress, expected a refusal"
    reason | grep -q 'progress arrived in bursts (output buffered?)' ||
        fail "$1: reason '$(reason)' lacks the buffering explanation"
}

# A real Python job printing through a pipe. migbench sets PYTHONUNBUFFERED=1: arrival timing holds.
env -u PYTHONUNBUFFERED "${M[@]}" --progress-regex '^iter ([0-9]+)' -- "$PY" "$PYJOB" 100 500 \
    >"$TMP/out" 2>"$TMP/err" || fail "python, unbuffered: exit $?"
expect_close "python, PYTHONUNBUFFERED=1 (default)"
# Without it (--python-buffered) the 500 lines arrive in one 8 KiB burst at the end: refused.
env -u PYTHONUNBUFFERED "${M[@]}" --python-buffered --progress-regex '^iter ([0-9]+)' -- \
    "$PY" "$PYJOB" 100 500 >"$TMP/out" 2>"$TMP/err" || fail "python, buffered: exit $?"
expect_refused "python, buffered"
# Buffered, but the regex captures the job's own clock: right.
env -u PYTHONUNBUFFERED "${M[@]}" --python-buffered --progress-regex '^iter ([0-9]+) t=([0-9.]+)' \
    -- "$PY" "$PYJOB" 100 500 >"$TMP/out" 2>"$TMP/err" || fail "python, buffered, own clock: exit $?"
expect_close "python, buffered, its own clock"

# A C job with stdio full buffering (8 KiB), 500 steps at 100/s: two or three bursts. Refused.
"${M[@]}" --progress-regex '^iter ([0-9]+)' -- "$FX/fx_steady" --stdout --buffered --rate 100 \
    --duration 5 >"$TMP/out" 2>"$TMP/err" || fail "C, buffered: exit $?"
expect_refused "C, buffered pipe"
# The same job on a pseudo-terminal: stdio line-buffers it, arrival timing holds.
"${M[@]}" --pty --progress-regex '^iter ([0-9]+)' -- "$FX/fx_steady" --stdout --buffered \
    --rate 100 --duration 5 >"$TMP/out" 2>"$TMP/err" || fail "C, --pty: exit $?"
expect_close "C, buffered, --pty"
# Through the pipe again, with its own clock in the lines: right.
"${M[@]}" --progress-regex '^iter ([0-9]+) t=([0-9.]+)' -- "$FX/fx_steady" --stdout --buffered \
    --clock --rate 100 --duration 5 >"$TMP/out" 2>"$TMP/err" || fail "C, buffered, own clock: exit $?"
expect_close "C, buffered, its own clock"

# migbench run: a workload with pty: true gets its regex progress line by line; the cell has a
# throughput, and its job ran with PYTHONUNBUFFERED=1 in its environment.
cat >"$TMP/exp.yaml" <<YAML
version: 1
name: ptytest
workloads:
  c: {command: ["$FX/fx_steady", --stdout, --buffered, --rate, "100", --duration, "600"],
      progress_regex: '^iter ([0-9]+)', unit: steps, pty: true}
  py: {command: ["$PY", -c, "import os; print(os.environ.get('PYTHONUNBUFFERED')); import sys; sys.argv = ['x', '100', '100000']; exec(open('$PYJOB').read())"],
       progress_regex: '^iter ([0-9]+)', unit: steps}
runs:
  - {name: both, mode: timeslice, jobs: [c, py]}
measure: {warmup: 5 steps, duration: 100 steps, sample_interval: 50ms, grace: 2s, progress_timeout: 60s}
YAML
run 0 "$MIGBENCH" run "$TMP/exp.yaml" --device emu:H100-80GB --results "$TMP/res"
"$PY" - "$TMP/res/both/0" <<'PYCHECK' || fail "run with pty: true: no throughput"
import json, os, sys
cell = json.load(open(os.path.join(sys.argv[1], "cell.json")))
assert cell["status"] == "ok", cell.get("failure")
for j in cell["jobs"]:
    assert j["throughput"]["mean"] is not None, (j["name"], j["throughput"])
log = open(os.path.join(sys.argv[1], "jobs", "py.log")).read()
assert log.splitlines()[0] == "1", log[:80]
PYCHECK
run 2 "$MIGBENCH" run "$TMP/exp.yaml" --device emu:H100-80GB --results "$TMP/res2" --set workloads.c.pty=maybe
expect_err "workloads.c.pty.*neither true nor false"
finish
