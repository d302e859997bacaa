# SPDX-License-Identifier: Apache-2.0
# migbench run on the host CPU: exclusive, timeslice and partition with steady fixture jobs;
# results layout, journal, cell.json fields, summary; re-running needs --resume.
# MB_TEST_THREADS: migbench run samples telemetry on the meter thread.
. "$MB_SOURCE_DIR/tests/cli/lib.sh"
FX="$MB_BINARY_DIR/fixtures"
[ -x "$FX/fx_steady" ] || { echo "FAIL: fixtures not built in $FX" >&2; exit 1; }

cat >"$TMP/exp.yaml" <<YAML
version: 1
name: hosttest
device: host
workloads:
  fast:
    command: ["$FX/fx_steady", --rate, "40", --duration, "120", --samples-per-step, "8"]
    unit: images
  slow:
    command: ["$FX/fx_steady", --rate, "20", --duration, "120", --stdout]
    unit: samples
    progress_regex: 'iter ([0-9]+)'
    samples_per_step: 4
runs:
  - {name: alone, mode: exclusive, jobs: [fast, slow]}
  - {name: shared, mode: timeslice, jobs: [fast, slow]}
  - {name: split, mode: partition, jobs: [fast, slow]}
  - {name: gpu-only, mode: mig, layout: [1g.10gb], jobs: [fast]}
measure: {warmup: 300ms, duration: 1500ms, sample_interval: 50ms, grace: 2s, progress_timeout: 10s}
YAML

run 0 "$MIGBENCH" run "$TMP/exp.yaml" --results "$TMP/res"
expect_err "run 'gpu-only' skipped: mode mig needs a GPU"
expect_out '^run +mode +ok +job'
expect_out '^alone +exclusive +1/1 +fast +[0-9.]+ .*images/s'
expect_out '^split +partition +1/1 +fast'
for r in alone shared split; do
    [ -f "$TMP/res/$r/0/cell.json" ] || fail "no cell.json for $r"
    [ -f "$TMP/res/$r/0/telemetry.csv" ] || fail "no telemetry.csv for $r"
    [ -f "$TMP/res/$r/0/jobs/fast.log" ] || fail "no log for $r/fast"
done
[ ! -e "$TMP/res/gpu-only" ] || fail "a skipped run left a directory"

python3 - "$TMP/res" <<'PY' || fail "cell.json checks"
import json, os, sys
res = sys.argv[1]
def cell(r):
    return json.load(open(f"{res}/{r}/0/cell.json"))
bad = []
def check(cond, what):
    if not cond:
        bad.append(what)
for r, mode in (("alone", "exclusive"), ("shared", "timeslice"), ("split", "partition")):
    c = cell(r)
    check(c["schema"] == 1 and c["run"] == r and c["mode"] == mode and c["rep"] == 0, f"{r}: ids")
    check(c["status"] == "ok" and c["failure"] is None, f"{r}: status {c['status']} {c['failure']}")
    check(c["device"]["backend"] == "host" and c["device"]["emulated"] is False
          and c["device"]["gpu"] is False, f"{r}: device")
    check(c["mps"] is None and c["reconfigure_seconds"] is None, f"{r}: mode fields")
    e = c["energy"]
    # 1.5 s windows are shorter than any sensor allows: energy refused, never 0.
    check(e["counter_j"] is None and e["integrated_j"] is None and e["flag"] in ("too_short", "no_sensor"),
          f"{r}: energy {e}")
    check(e["refused_reason"], f"{r}: no refusal reason")
    for j in c["jobs"]:
        tp = j["throughput"]
        check(tp["mean"] is not None and tp["mean"] > 0, f"{r}/{j['name']}: throughput {tp}")
        check(j["exit"]["signal"] == 15 or j["exit"]["code"] == 0, f"{r}/{j['name']}: exit {j['exit']}")
        check(j["argv"][0].endswith("fx_steady"), f"{r}/{j['name']}: argv")
        check(j["log"] == f"jobs/{j['name']}.log", f"{r}/{j['name']}: log")
        check(j["window"]["seconds"] is not None and j["window"]["seconds"] >= 1.5, f"{r}: window")
    fast, slow = c["jobs"]
    check(fast["throughput"]["unit_per_s"] == "images/s", f"{r}: unit {fast['throughput']}")
    check(slow["throughput"]["unit_per_s"] == "samples/s", f"{r}: regex unit {slow['throughput']}")
    check(fast["units"] is not None and fast["units"] % 8 == 0, f"{r}: units {fast['units']}")
a = cell("alone")["jobs"]
check(a[0]["ended_ns"] <= a[1]["started_ns"], "exclusive jobs overlapped")
s = cell("shared")["jobs"]
check(s[0]["started_ns"] < s[1]["ended_ns"] and s[1]["started_ns"] < s[0]["ended_ns"], "timeslice jobs did not overlap")
check(s[0]["window"]["start_ns"] == s[1]["window"]["start_ns"], "timeslice windows differ")
p = cell("split")["jobs"]
check(p[0]["cpus"] and p[1]["cpus"] and not set(p[0]["cpus"]) & set(p[1]["cpus"]), f"partition cpus {p[0]['cpus']} {p[1]['cpus']}")
check(cell("shared")["jobs"][0]["cpus"] is None, "timeslice has cpus")
# Each job's CPU threads match the cores it may use: all online CPUs, or its own set.
online = os.sysconf("SC_NPROCESSORS_ONLN")
for r in ("alone", "shared", "split"):
    for j in cell(r)["jobs"]:
        want = len(j["cpus"]) if r == "split" else online
        check(j["cores"] == want and j["omp_num_threads"] == want, f"{r}/{j['name']}: cores {j['cores']} threads {j['omp_num_threads']}, expected {want}")
        check(j["env"].get("OMP_NUM_THREADS") == str(want), f"{r}/{j['name']}: env {j['env']}")
        check(j["env"].get("PYTHONUNBUFFERED") == "1", f"{r}/{j['name']}: env {j['env']}")
        if "OMP_WAIT_POLICY" not in os.environ:
            check(j["env"].get("OMP_WAIT_POLICY") == "PASSIVE", f"{r}/{j['name']}: env {j['env']}")
ev = [json.loads(l) for l in open(f"{res}/journal.jsonl")]
names = [e["event"] for e in ev]
check(names[0] == "experiment_started" and names[-1] == "experiment_finished", f"journal ends {names}")
check(names.count("cell_started") == 3 and names.count("cell_finished") == 3, f"journal cells {names}")
check(all("t_unix" in e for e in ev), "journal timestamps")
if bad:
    print("\n".join(bad), file=sys.stderr)
    sys.exit(1)
PY

# The report on the host: the cores each job had; and, when the host has no energy sensor (no
# RAPL, as in CI), one sentence saying so and no energy tables or charts of n/a.
run 0 "$MIGBENCH" report "$TMP/res"
expect_out "^CPU cores per job \\(its OMP_NUM_THREADS and torch threads\\): alone fast [0-9]+, slow"
cp "$TMP/out" "$TMP/report.txt"
run 0 "$MIGBENCH" report "$TMP/res" --format html
cp "$TMP/out" "$TMP/report.html"
if python3 -c 'import json,sys; sys.exit(json.load(open(sys.argv[1]))["energy"]["flag"] != "no_sensor")' \
    "$TMP/res/alone/0/cell.json"; then
    [ "$(grep -c 'has no energy sensor' "$TMP/report.txt")" = 1 ] || fail "text report: no-sensor note not once"
    ! grep -q 'Energy attribution' "$TMP/report.txt" || fail "text report: attribution table without energy"
    [ "$(grep -c 'No energy sensor' "$TMP/report.html")" = 1 ] || fail "html report: no-sensor note not once"
    ! grep -q 'Energy attribution\|Energy per unit of work\|Power timelines' "$TMP/report.html" ||
        fail "html report: energy charts without energy"
else
    ! grep -q 'has no energy sensor' "$TMP/report.txt" || fail "text report: no-sensor note with a sensor"
fi

# Windows counted in steps, and "stable" windows that stop once the CI is tight.
cat >"$TMP/steps.yaml" <<YAML
version: 1
name: stepstest
device: host
workloads:
  a: {command: ["$FX/fx_steady", --rate, "50", --duration, "120"]}
runs:
  - {name: steps, mode: timeslice, jobs: [a, a]}
measure: {warmup: 5 steps, duration: 30 steps, grace: 2s}
YAML
run 0 "$MIGBENCH" run "$TMP/steps.yaml" --results "$TMP/steps"
run 0 "$MIGBENCH" run "$TMP/steps.yaml" --results "$TMP/stable" \
    --set measure.duration=stable --set measure.ci_target=0.2 --set measure.max_duration=60s
python3 - "$TMP/steps" "$TMP/stable" <<'PY' || fail "steps/stable windows"
import json, sys
bad = []
c = json.load(open(f"{sys.argv[1]}/steps/0/cell.json"))
for j in c["jobs"]:
    # 30 steps at 50/s: the window holds at least 30 steps' worth of samples (64 per step).
    tp, w = j["throughput"], j["window"]["seconds"]
    if tp["mean"] is None or tp["mean"] * w < 29 * 64:
        bad.append(f"steps: {tp} over {w}s")
s = json.load(open(f"{sys.argv[2]}/steps/0/cell.json"))
w = s["window"]["seconds"]
if not (2 <= w < 60):
    bad.append(f"stable: window {w}s (should stop on the CI target, after 2 s, before the cap)")
if bad:
    print("\n".join(bad), file=sys.stderr)
    sys.exit(1)
PY

# Time-to-completion: jobs run until they exit by themselves; exiting non-zero still fails.
cat >"$TMP/done.yaml" <<YAML
version: 1
name: donetest
device: host
workloads:
  short: {command: ["$FX/fx_steady", --rate, "20", --duration, "1.5"]}
  long: {command: ["$FX/fx_steady", --rate, "20", --duration, "2.5"]}
  bad: {command: ["$FX/fx_steady", --rate, "20", --duration, "1", --exit, "3"]}
runs:
  - {name: both, mode: timeslice, jobs: [short, long]}
  - {name: each, mode: exclusive, jobs: [short, long]}
  - {name: bad, mode: timeslice, jobs: [bad]}
measure: {warmup: 200ms, duration: completion, max_duration: 60s, grace: 2s}
YAML
run 1 "$MIGBENCH" run "$TMP/done.yaml" --results "$TMP/done"
expect_out '^both +timeslice +1/1'
expect_out '^bad +timeslice +0/1'
python3 - "$TMP/done" <<'PY' || fail "completion cells"
import json, sys
bad = []
for run in ("both", "each"):
    c = json.load(open(f"{sys.argv[1]}/{run}/0/cell.json"))
    s, l = c["jobs"]
    if c["status"] != "ok" or s["exit"]["code"] != 0 or l["exit"]["code"] != 0:
        bad.append(f"{run}: {c['status']} {s['exit']} {l['exit']}")
    if s["completion_s"] is None or l["completion_s"] is None or not s["completion_s"] < l["completion_s"]:
        bad.append(f"{run}: completion {s['completion_s']} {l['completion_s']}")
    if s["window"]["end_ns"] is None or s["window"]["end_ns"] > l["window"]["end_ns"]:
        bad.append(f"{run}: windows {s['window']} {l['window']}")
b = json.load(open(f"{sys.argv[1]}/bad/0/cell.json"))
if b["status"] != "failed" or "exited with status 3" not in b["failure"]["reason"]:
    bad.append(f"bad: {b['status']} {b['failure']}")
if bad:
    print("\n".join(bad), file=sys.stderr)
    sys.exit(1)
PY

# Progress lines are plain log lines when stderr is not a terminal.
run 2 "$MIGBENCH" run "$TMP/exp.yaml" --results "$TMP/res"
expect_err 'already holds results; add --resume'
# --resume with everything done runs nothing and keeps the cells.
before=$(stat -c %Y "$TMP/res/alone/0/cell.json")
run 0 "$MIGBENCH" run "$TMP/exp.yaml" --results "$TMP/res" --resume
[ "$(stat -c %Y "$TMP/res/alone/0/cell.json")" = "$before" ] || fail "--resume rewrote a finished cell"
# --resume with a changed file is refused.
run 2 "$MIGBENCH" run "$TMP/exp.yaml" --results "$TMP/res" --resume --set measure.duration=2s
expect_err 'different experiment file'

finish
