# SPDX-License-Identifier: Apache-2.0
# migbench run on an emulated H100 with MIG on and a state file: exclusive, timeslice and mig
# cells; instances are created, given to the jobs and removed; mps runs without a daemon (the
# emulated GPU has none to serve) and is refused on the host before anything runs.
. "$MB_SOURCE_DIR/tests/cli/lib.sh"
FX="$MB_BINARY_DIR/fixtures"
[ -x "$FX/fx_steady" ] || { echo "FAIL: fixtures not built in $FX" >&2; exit 1; }
DEV="emu:H100-80GB:mig=on:state=$TMP/gpu.json"

cat >"$TMP/exp.yaml" <<YAML
version: 1
name: emutest
workloads:
  a: {command: ["$FX/fx_steady", --rate, "20", --duration, "60"], unit: images, memory_mib: 9000}
  b: {command: ["$FX/fx_steady", --rate, "10", --duration, "60"], unit: tokens}
runs:
  - {name: alone, mode: exclusive, jobs: [a, b]}
  - {name: ts, mode: timeslice, jobs: [a, b]}
  - {name: mix, mode: mig, layout: [4g.40gb, 1g.10gb, 2g.20gb], jobs: [a, b, b]}
  - {name: cpu, mode: partition, jobs: [a, b]}
measure: {warmup: 200ms, duration: 5200ms, sample_interval: 50ms, grace: 1s, progress_timeout: 10s, repetitions: 2}
YAML

run 0 "$MIGBENCH" run "$TMP/exp.yaml" --device "$DEV" --results "$TMP/res" --only mix
expect_out '^mix +mig +2/2 +a'
expect_err "run 'cpu' skipped|created 4g.40gb at memory slices 0-3"
run 0 "$MIGBENCH" run "$TMP/exp.yaml" --device "$DEV" --results "$TMP/res1" --only alone,ts \
    --set measure.duration=1s --set measure.repetitions=1
expect_out '^alone +exclusive +1/1 +a'
expect_out '^ts +timeslice +1/1 +a'
python3 - "$TMP/res" "$TMP/gpu.json" <<'PY' || fail "cell.json checks"
import json, sys
res, state = sys.argv[1], sys.argv[2]
bad = []
for rep in (0, 1):
    c = json.load(open(f"{res}/mix/{rep}/cell.json"))
    d = c["device"]
    if not (d["backend"] == "emu" and d["emulated"] is True and d["gpu"] is True):
        bad.append(f"device {d['backend']} {d['emulated']}")
    inst = d["mig"]["instances"]
    if [i["profile"] for i in inst] != ["4g.40gb", "1g.10gb", "2g.20gb"]:
        bad.append(f"instances {inst}")
    starts = sorted((i["placement"]["start"], i["placement"]["size"]) for i in inst)
    if starts != [(0, 4), (4, 2), (6, 1)]:
        bad.append(f"placements {starts}")
    if c["reconfigure_seconds"] is None:
        bad.append("no reconfigure time")
    for j, i in zip(c["jobs"], inst):
        env = j["env"].get("CUDA_VISIBLE_DEVICES", "")
        if not env.startswith("MIG-") or j["instance"]["uuid"] != i["uuid"] or env != i["uuid"]:
            bad.append(f"job {j['name']} env {env} instance {j['instance']} vs {i['uuid']}")
    e = c["energy"]
    # The emulator has a counter and power: a 5.2 s window gives both figures.
    if e["counter_j"] is None or e["integrated_j"] is None or e["gap_pct"] is None:
        bad.append(f"energy {e}")
    # The emulator's counter is exact and its 1 s average only smears the steps at the window's
    # edges, which the gap rule allows for (src/power/meter_gap.c): no flag.
    if e["flag"] != "ok":
        bad.append(f"energy flag {e['flag']} (gap {e['gap_pct']} %)")
ev = [json.loads(l) for l in open(f"{res}/journal.jsonl")]
made = [e for e in ev if e["event"] == "mig_created"]
gone = [e for e in ev if e["event"] == "mig_destroyed"]
if len(made) != 12 or len(gone) != 12:
    bad.append(f"journal: {len(made)} created, {len(gone)} destroyed (12 each expected)")
a = json.load(open(f"{res}1/alone/0/cell.json"))
if a["device"]["mig"]["instances"] != []:
    bad.append("exclusive cell lists instances")
if a["energy"]["flag"] != "too_short" or a["energy"]["counter_j"] is not None:
    bad.append(f"1 s windows must be refused: {a['energy']}")
if not all(j["env"]["CUDA_VISIBLE_DEVICES"].startswith("GPU-") for j in a["jobs"]):
    bad.append("exclusive jobs are not pointed at the whole GPU")
if bad:
    print("\n".join(bad), file=sys.stderr)
    sys.exit(1)
PY
# The emulated GPU is empty again.
python3 - "$TMP/gpu.json" <<'PY' || fail "instances left on the emulated GPU"
import json, sys
s = json.load(open(sys.argv[1]))
gis = s.get("gpu_instances", s.get("gis", []))
sys.exit(1 if gis else 0)
PY

# MPS on an emulated GPU: no daemon to start; the jobs get the MPS environment and cell.json says
# there was no daemon.
cat >"$TMP/mps.yaml" <<YAML
version: 1
name: mpstest
workloads:
  a: {command: ["$FX/fx_steady", --rate, "20", --duration, "60"]}
runs:
  - {name: m, mode: mps, jobs: [a, a], thread_percentage: [70, 30]}
measure: {warmup: 100ms, duration: 300ms, sample_interval: 50ms, grace: 1s, progress_timeout: 10s}
YAML
run 0 "$MIGBENCH" run "$TMP/mps.yaml" --device "emu:H100-80GB:state=$TMP/mpsgpu.json" --results "$TMP/mpsres"
expect_err 'emulated GPU: no MPS daemon; the jobs get its environment'
python3 - "$TMP/mpsres/m/0/cell.json" <<'PY' || fail "emulated MPS cell"
import json, sys
c = json.load(open(sys.argv[1]))
assert c["mps"]["daemon"] == "none (emulated GPU)", c["mps"]
assert c["mps"]["thread_percentage"] == [70, 30], c["mps"]
assert [j["env"]["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] for j in c["jobs"]] == ["70", "30"], c["jobs"]
assert c["device"]["emulated"] is True
PY
grep -q '"mps_started"' "$TMP/mpsres/journal.jsonl" && fail "a daemon was journaled on an emulated GPU"
# The host still refuses it before anything runs.
run 2 "$MIGBENCH" run "$TMP/mps.yaml" --device host --results "$TMP/mpshost"
expect_err "run 'm' skipped: mode mps needs a GPU"
[ ! -e "$TMP/mpshost" ] || fail "a refused run created its results directory"

# A baseline on the largest MIG instance (exclusive, on: mig-7g), for a GPU that cannot leave MIG
# mode: one instance, every job on it in turn, labelled in cell.json and the report.
cat >"$TMP/on7g.yaml" <<YAML
version: 1
name: on7g
workloads:
  a: {command: ["$FX/fx_steady", --rate, "20", --duration, "60"], unit: images}
  b: {command: ["$FX/fx_steady", --rate, "10", --duration, "60"], unit: tokens}
runs:
  - {name: base7g, mode: exclusive, on: mig-7g, jobs: [a, b]}
measure: {warmup: 100ms, duration: 300ms, sample_interval: 50ms, grace: 1s, progress_timeout: 10s}
YAML
run 0 "$MIGBENCH" run "$TMP/on7g.yaml" --device "emu:A100-80GB:mig=on:state=$TMP/a100.json" --results "$TMP/on7g"
python3 - "$TMP/on7g/base7g/0/cell.json" <<'PY' || fail "exclusive on mig-7g: cell.json"
import json, sys
c = json.load(open(sys.argv[1]))
assert c["mode"] == "exclusive" and c["on"] == "7g.80gb", (c["mode"], c.get("on"))
inst = c["device"]["mig"]["instances"]
assert [i["profile"] for i in inst] == ["7g.80gb"], inst
envs = {j["env"]["CUDA_VISIBLE_DEVICES"] for j in c["jobs"]}
assert envs == {inst[0]["uuid"]}, (envs, inst)
PY
python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); assert s["gpu_instances"] == []' "$TMP/a100.json" ||
    fail "exclusive on mig-7g: the instance was left behind"
run 0 "$MIGBENCH" report "$TMP/on7g"
expect_out 'base7g \(exclusive on 7g\.80gb\)'
run 0 "$MIGBENCH" report --format json "$TMP/on7g"
expect_out "base7g: exclusive on a 7g.80gb MIG instance, not the whole GPU: 98 of the GPU's 108 SMs, 80896 of 81920 MiB \\(catalog\\)"
# MIG off: it needs MIG on (skipped, or a phase with --manage-mig-mode).
run 2 "$MIGBENCH" run "$TMP/on7g.yaml" --device "emu:A100-80GB" --results "$TMP/on7g-off"
expect_err "run 'base7g' skipped: MIG mode is disabled"
sed 's/mode: exclusive, on: mig-7g/mode: timeslice, on: mig-7g/' "$TMP/on7g.yaml" >"$TMP/bad-on.yaml"
run 2 "$MIGBENCH" run "$TMP/bad-on.yaml" --device "emu:A100-80GB" --dry-run
expect_err "field 'runs\[0\]\.on': only for mode: exclusive"
sed 's/on: mig-7g/on: seven/' "$TMP/on7g.yaml" >"$TMP/bad-on2.yaml"
run 2 "$MIGBENCH" run "$TMP/bad-on2.yaml" --device "emu:A100-80GB" --dry-run
expect_err "expected gpu or mig-SIZE"

finish
