# SPDX-License-Identifier: Apache-2.0
# The power-limit axis end to end on an emulated H100 whose site limit is 650 W: 3 limits x 2
# layouts x 2 repetitions of the modelled workload (fx_model, whose rate follows its MIG share
# and the clock under the limit). The run is killed (SIGKILL) in the middle of a capped cell,
# synchronised on the journal; --resume restores the dead run's limit first, runs the rest, and
# the GPU ends at its original 650 W with no record left. Then the report names the
# energy-optimal limit of each run, and the planner's limit beats the default limit in predicted
# energy. A SIGINT while a limit is set restores it before run exits. Nothing here waits on a
# timer: every "during" check follows a journal entry.
. "$MB_SOURCE_DIR/tests/cli/lib.sh"
FX="$MB_BINARY_DIR/fixtures"
[ -x "$FX/fx_model" ] || { echo "FAIL: fixtures not built in $FX" >&2; exit 1; }
DEV="emu:H100-80GB:mig=on:state=$TMP/gpu.json:limit_w=650"
LEDGER="$TMP/gpu.json.powercap.json"

cat >"$TMP/exp.yaml" <<YAML
version: 1
name: powertest
workloads:
  m: {command: ["$FX/fx_model", --device, "$DEV", --rate, "40", --duration, "600"], unit: samples}
power_limits: [default, 60%, 40%]
runs:
  - {name: one, mode: mig, layout: [7g.80gb], jobs: [m]}
  - {name: mix, mode: mig, layout: [4g.40gb, 3g.40gb], jobs: [m, m]}
measure: {warmup: 2 steps, duration: 5s, idle: 5s, sample_interval: 50ms, grace: 1s, repetitions: 2}
YAML

job_pids() {
    python3 -c 'import json,sys
for l in open(sys.argv[1]):
    try: e = json.loads(l)
    except ValueError: continue
    if e.get("event") == "job_started": print(int(e["pid"]))' "$1" 2>/dev/null || true
}
cleanup_jobs() {
    for p in $(job_pids "$1"); do kill -KILL -- "-$p" 2>/dev/null || true; done
}
# Blocks until the journal's jobs have exited (gone, or zombies waiting for init): the killed run
# cannot detach them, and the emulated GPU forgets a process only once it has exited. Woken by
# the exit itself: a pidfd becomes readable when its process terminates (the 120 s is only a
# bound on a hung test, not a wait).
jobs_exited() {
    python3 - $(job_pids "$1") <<'PY'
import os, select, sys
fds = []
for pid in sys.argv[1:]:
    try:
        fds.append(os.pidfd_open(int(pid)))
    except ProcessLookupError:
        pass  # already gone
while fds:
    ready, _, _ = select.select(fds, [], [], 120)
    if not ready:
        sys.exit(1)
    for fd in ready:
        os.close(fd)
        fds.remove(fd)
PY
}
trap 'cleanup_jobs "$TMP/r/journal.jsonl"; rm -rf "$TMP"' EXIT
# state FIELD: the emulated GPU's power limit in mW (the default 700000 when absent), or its GIs.
limit_mw() {
    python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("power_limit_mw", 700000))' "$TMP/gpu.json"
}
instances() {
    python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1])).get("gpu_instances", [])))' "$TMP/gpu.json"
}

# The site's limit is 650 W before migbench runs.
run 0 "$MIGBENCH" devices --device "$DEV"
[ "$(limit_mw)" = 650000 ] || fail "setup: limit $(limit_mw), expected 650000"

# --- A limit outside the GPU's range is bad input: exit 2 with the file and line, nothing changed.
sed 's/^power_limits: .*/power_limits: [default, 20%]/' "$TMP/exp.yaml" >"$TMP/bad.yaml"
run 2 "$MIGBENCH" run "$TMP/bad.yaml" --device "$DEV" --results "$TMP/r-bad"
expect_err "bad.yaml:5: field 'power_limits': 20%: power limit 140 W is outside the device's range 210..700 W"
[ "$(limit_mw)" = 650000 ] || fail "bad limit: the GPU's limit changed"
[ ! -e "$TMP/r-bad" ] || fail "bad limit: a results directory was made"

# --- SIGINT while a limit is set: the cell's teardown restores it before run exits 130.
"$MIGBENCH" run "$TMP/exp.yaml" --device "$DEV" --results "$TMP/r-int" --only one.cap-60pct \
    >"$TMP/out0" 2>"$TMP/err0" &
pid=$!
wait_line "$TMP/r-int/journal.jsonl" '"power_limit_set"'
rc=0
kill -INT $pid
wait $pid || rc=$?
[ "$rc" = 130 ] || fail "SIGINT: exit $rc, expected 130"
[ "$(limit_mw)" = 650000 ] || fail "SIGINT: the GPU holds $(limit_mw) mW, not its original 650000"
[ ! -f "$LEDGER" ] || fail "SIGINT: a restore record is left"
grep -q '"outcome":"restored"' "$TMP/r-int/journal.jsonl" || fail "SIGINT: the restore was not journaled"

# --- SIGKILL in the fifth cell (one at 40%: 280 W), once its job runs.
"$MIGBENCH" run "$TMP/exp.yaml" --device "$DEV" --results "$TMP/r" >"$TMP/out1" 2>"$TMP/err1" &
pid=$!
wait_line "$TMP/r/journal.jsonl" '"power_limit_set"' 5
wait_line "$TMP/r/journal.jsonl" '"job_started"' 5
kill -KILL $pid
wait $pid 2>/dev/null || true
cleanup_jobs "$TMP/r/journal.jsonl"
jobs_exited "$TMP/r/journal.jsonl" || fail "kill -9: the dead run's jobs did not exit"
[ "$(limit_mw)" = 280000 ] || fail "kill -9: the GPU should hold the dead run's 280 W, has $(limit_mw)"
[ -f "$LEDGER" ] || fail "kill -9: no restore record"
python3 -c 'import json,sys; r = json.load(open(sys.argv[1])); sys.exit(0 if r["original_mw"] == 650000 and r["set_mw"] == 280000 else 1)' "$LEDGER" ||
    fail "kill -9: the record does not hold the original 650 W and the 280 W set"
[ ! -f "$TMP/r/one.cap-40pct/0/cell.json" ] || fail "kill -9: the killed cell was recorded"
sum0=$(md5sum <"$TMP/r/one.cap-default/0/cell.json")

# --- --resume: the dead run's limit comes back first, then the rest runs.
run 0 "$MIGBENCH" run "$TMP/exp.yaml" --device "$DEV" --results "$TMP/r" --resume
expect_err 'restored the power limit that an interrupted run had set'
expect_err 'resume: removing 1 MIG instance'
[ "$(limit_mw)" = 650000 ] || fail "resume: the GPU ends at $(limit_mw) mW, not its original 650000"
[ ! -f "$LEDGER" ] || fail "resume: a restore record is left"
[ "$(instances)" = 0 ] || fail "resume: MIG instances left"
[ "$(md5sum <"$TMP/r/one.cap-default/0/cell.json")" = "$sum0" ] || fail "resume: a finished cell changed"
n=0
for run in one mix; do
    for cap in default:700000 60pct:420000 40pct:280000; do
        for rep in 0 1; do
            f="$TMP/r/$run.cap-${cap%%:*}/$rep/cell.json"
            if [ ! -f "$f" ]; then
                fail "missing $f"
                continue
            fi
            n=$((n + 1))
            python3 - "$f" "${cap#*:}" <<'PY' || fail "$f: power_limit wrong"
import json, sys
c = json.load(open(sys.argv[1]))
pl = c["power_limit"]
assert c["status"] == "ok", c["status"]
assert pl["enforced_mw"] == int(sys.argv[2]), pl
assert pl["base_run"] in ("one", "mix"), pl
# Both layouts keep all 7 compute slices busy (700 W of demand): the limit binds below 700 W.
capped = "sw_power_cap" in pl["throttle_reason_names"]
assert capped == (int(sys.argv[2]) < 700000), pl
PY
        done
    done
done
[ "$n" = 12 ] || fail "expected 12 cells, found $n"
[ "$(grep -c '"power_limit_restored"' "$TMP/r/journal.jsonl")" = 12 ] ||
    fail "expected 12 restores in the journal (4 before the kill, 8 after --resume)"

# --- The report names the energy-optimal limit of every run and job; on this model (energy per
# unit least at the knee of the DVFS curve fitted to the Zeus sweeps, about 420 W at full load:
# docs/devices.md "The GPU model") that is 60% (420 W), clear of 40% (about 10% more energy per
# unit, the voltage floor) and the default (about 30% more).
run 0 "$MIGBENCH" report "$TMP/r" --format json
python3 - "$TMP/out" <<'PY' || fail "report: the energy-optimal limits are wrong"
import json, sys
d = json.load(open(sys.argv[1]))
p = d["experiments"][0]["power_limits"]
runs = {(r["run"], r["job"]): r for r in p["runs"]}
assert set(runs) == {("one", "m"), ("mix", "m"), ("mix", "m-2")}, sorted(runs)
for (run, job), r in sorted(runs.items()):
    pts = {q["limit"]: q for q in r["points"]}
    assert [q["limit"] for q in r["points"]] == ["default", "60%", "40%"], r["points"]
    # Two repetitions per point; a loaded machine can leave one job of a cell without a rate.
    assert all(1 <= q["repetitions"] <= 2 for q in r["points"]), r["points"]
    assert sum(q["repetitions"] for q in r["points"]) >= 5, r["points"]
    opt = r["energy_optimal"]
    assert opt["limit"] == min(r["points"], key=lambda q: q["j_per_unit"])["limit"], r
    assert opt["limit"] == "60%", r
    assert pts["60%"]["j_per_unit"] < pts["default"]["j_per_unit"], r
    print("report: %s/%s: energy-optimal %s: %.4f J/unit (default %.4f, 40%% %.4f); "
          "throughput %.0f vs %.0f samples/s" % (run, job, opt["limit"], pts["60%"]["j_per_unit"],
          pts["default"]["j_per_unit"], pts["40%"]["j_per_unit"], pts["60%"]["throughput"],
          pts["default"]["throughput"]), file=sys.stderr)
PY
run 0 "$MIGBENCH" report "$TMP/r" --power-rule slowdown:10%
expect_out 'energy-optimal limit: 60%'
expect_out 'slowdown rule: default'
run 0 "$MIGBENCH" report "$TMP/r" --format html
[ "$(grep -c 'Energy-optimal limit: <b>60%</b>' "$TMP/out")" = 3 ] || fail "report html: no energy-optimal limits"
run 2 "$MIGBENCH" report "$TMP/r" --power-rule fastest
expect_err "power rule 'fastest'"

# --- The planner chooses the limit with the layout; on the modelled workload its choice beats
# the default limit in predicted energy, and the experiment it writes sets that limit.
cat >"$TMP/jobs.yaml" <<YAML
gpu: H100-80GB
jobs:
  - {name: a, workload: m, work: 300000}
  - {name: b, workload: m, work: 150000}
  - {name: c, workload: m, work: 150000}
YAML
run 0 "$MIGBENCH" plan --jobs "$TMP/jobs.yaml" --results "$TMP/r" --power-limits all --json \
    --emit-experiment "$TMP/planned.yaml"
python3 - "$TMP/out" <<'PY' || fail "plan: the chosen limit does not beat the default"
import json, sys
d = json.load(open(sys.argv[1]))
cands = {c["power_limit_w"]: c for c in d["power_limits"]}
assert set(cands) == {None, 420, 280}, sorted(cands, key=str)
chosen = d["power_limit_w"]
assert chosen is not None, d["power_limit_w"]
best, default = cands[chosen], cands[None]
assert best["energy_j"] == min(c["energy_j"] for c in cands.values()), cands
assert best["energy_j"] < default["energy_j"], cands
print("plan: %g W: %.0f J in %.0f s; default: %.0f J in %.0f s (%.1f%% less energy)" % (chosen,
      best["energy_j"], best["makespan_s"], default["energy_j"], default["makespan_s"],
      100 * (1 - best["energy_j"] / default["energy_j"])), file=sys.stderr)
PY
grep -q '^power_limits: \[420W\]$' "$TMP/planned.yaml" || fail "plan: the emitted experiment does not set 420 W (the energy-optimal limit)"
run 2 "$MIGBENCH" plan --jobs "$TMP/jobs.yaml" --results "$TMP/r" --power-limits 80%
expect_err 'give watts'

finish
