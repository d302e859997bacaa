# SPDX-License-Identifier: Apache-2.0
# Jobs that crash, exit non-zero, hang, run out of memory, ignore SIGTERM or flood their output
# each fail their own cell with a reason and a log tail; the other cells still run; exit 1.
# The window is counted in steps that no failing job reaches (fx_alloc reports 16 before its
# kill), so a slow, loaded machine cannot let a window close before the failure: no timing.
. "$MB_SOURCE_DIR/tests/cli/lib.sh"
FX="$MB_BINARY_DIR/fixtures"
[ -x "$FX/fx_steady" ] || { echo "FAIL: fixtures not built in $FX" >&2; exit 1; }

cat >"$TMP/exp.yaml" <<YAML
version: 1
name: failtest
device: host
workloads:
  good: {command: ["$FX/fx_steady", --rate, "20", --duration, "60"]}
  crash: {command: ["$FX/fx_crash"]}
  early: {command: ["$FX/fx_steady", --rate, "20", --duration, "0.3", --exit, "3"]}
  hang: {command: ["$FX/fx_hang", "3"]}
  oom: {command: ["$FX/fx_alloc", "128"]}
  deaf: {command: ["$FX/fx_ignore_term", "60"]}
  flood: {command: ["$FX/fx_flood", "8000000"]}
  missing: {command: ["$TMP/no-such-program"]}
runs:
  - {name: crash, mode: timeslice, jobs: [good, crash]}
  - {name: early, mode: timeslice, jobs: [early]}
  - {name: hang, mode: timeslice, jobs: [hang]}
  - {name: oom, mode: timeslice, jobs: [oom]}
  - {name: deaf, mode: timeslice, jobs: [deaf]}
  - {name: flood, mode: timeslice, jobs: [flood]}
  - {name: missing, mode: timeslice, jobs: [missing]}
  - {name: fine, mode: exclusive, jobs: [good]}
measure: {warmup: 2 steps, duration: 40 steps, grace: 500ms, progress_timeout: 3s, sample_interval: 100ms}
YAML

run 1 "$MIGBENCH" run "$TMP/exp.yaml" --results "$TMP/res"
expect_out '^fine +exclusive +1/1 +good'
expect_out '^crash +timeslice +0/1'

python3 - "$TMP/res" <<'PY' || fail "cell.json checks"
import json, os, sys
res = sys.argv[1]
bad = []
def cell(r):
    return json.load(open(f"{res}/{r}/0/cell.json"))
def failed(r, job, *words):
    c = cell(r)
    if c["status"] != "failed" or not c["failure"]:
        bad.append(f"{r}: status {c['status']}")
        return c
    f = c["failure"]
    if f["job"] != job:
        bad.append(f"{r}: failure job {f['job']}")
    for w in words:
        if w not in f["reason"]:
            bad.append(f"{r}: reason {f['reason']!r} lacks {w!r}")
    return c
c = failed("crash", "crash", "signal 11")
if "fx_crash: stderr line" not in (c["failure"]["log_tail"] or ""):
    bad.append(f"crash: log tail {c['failure']['log_tail']!r}")
failed("early", "early", "exited with status 3")
failed("hang", "hang", "no progress")
failed("oom", "oom", "SIGKILL", "out of memory")
c = failed("deaf", "deaf", "no progress")
if c["jobs"][0]["exit"]["signal"] != 9:
    bad.append(f"deaf: exit {c['jobs'][0]['exit']} (SIGKILL after the grace period expected)")
failed("flood", "flood")
size = os.path.getsize(f"{res}/flood/0/jobs/flood.log")
if size > 1 << 20:
    bad.append(f"flood: log of {size} bytes is not bounded")
failed("missing", "missing", "cannot start")
if cell("fine")["status"] != "ok":
    bad.append("fine: the cell after the failures did not run")
ev = [json.loads(l) for l in open(f"{res}/journal.jsonl")]
if sum(e["event"] == "cell_failed" for e in ev) != 7:
    bad.append("journal: cell_failed count")
if bad:
    print("\n".join(bad), file=sys.stderr)
    sys.exit(1)
PY

finish
