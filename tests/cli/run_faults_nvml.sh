# SPDX-License-Identifier: Apache-2.0
# NVML answers inside `run`, through the fake libnvidia-ml.so.1's fault switch:
#  - NOT_SUPPORTED for the energy counter (older GPUs, some vGPU): the cell is measured from the
#    integrated power, cell.json names the method (energy.method "power_integral") and carries
#    NVIDIA's answer as a note, not as a refusal, and the report uses that energy; with power
#    NOT_SUPPORTED as well, energy is null and the reason quotes NVIDIA's answer.
#  - ARGUMENT_VERSION_MISMATCH for the versioned profile-info struct the MIG path uses
#    (nvmlDeviceGetGpuInstanceProfileInfoV, v3 and v2): the backend falls back to the unversioned
#    call and the instances are made with the right profiles; when that call refuses too, the run
#    is refused before anything is made, with NVIDIA's reason, and the GPU is left as found. From
#    the versioned GPM call (optional per-instance activity) the cell runs, those columns stay
#    empty and the run names NVIDIA's reason.
. "$MB_SOURCE_DIR/tests/cli/lib.sh"
FX="$MB_BINARY_DIR/fixtures"
FAKE="$MB_BINARY_DIR/tests/fake-nvml/libnvidia-ml.so.1"
[ -x "$FX/fx_steady" ] || { echo "FAIL: fixtures not built in $FX" >&2; exit 1; }
[ -r "$FAKE" ] || { echo "FAIL: fake NVML not built at $FAKE" >&2; exit 1; }
export MIGBENCH_NVML_LIBRARY="$FAKE"

# A window of 5.5 s: energy is refused below 5 s (docs/run.md), and this is about energy.
cat >"$TMP/energy.yaml" <<YAML
version: 1
name: energy
device: "nvml:0"
workloads:
  a: {command: ["$FX/fx_steady", --rate, "20", --duration, "60"]}
runs:
  - {name: solo, mode: exclusive, jobs: [a]}
measure: {warmup: 100ms, duration: 5500ms, sample_interval: 100ms, grace: 1s, progress_timeout: 10s, repetitions: 1}
YAML

energy() { # energy RESULTS PYTHON-CHECKS (on en = cell.json's energy, rep = report --json)
    run 0 "$MIGBENCH" report "$1" --format json
    cp "$TMP/out" "$1.report.json"
    python3 - "$1" "$2" <<'PY' || fail "energy in $1"
import json, re, sys
res, checks = sys.argv[1], sys.argv[2]
c = json.load(open(f"{res}/solo/0/cell.json"))
en = c["energy"]
def cells(o):
    if isinstance(o, dict):
        if "energy_source" in o:
            yield o
        for v in o.values():
            yield from cells(v)
    elif isinstance(o, list):
        for v in o:
            yield from cells(v)
rep = list(cells(json.load(open(f"{res}.report.json"))))
bad = [] if c["status"] == "ok" else [f"status {c['status']} {c.get('failure')}"]
for line in checks.strip().split("\n"):
    if not eval(line):
        bad.append(f"{line}: energy {en}; report cells {rep}")
if bad:
    print("\n".join(bad), file=sys.stderr)
    sys.exit(1)
PY
}

# The counter answers NOT_SUPPORTED (3), through both calls that read it.
MIGBENCH_FAKE_NVML_FAIL="nvmlDeviceGetTotalEnergyConsumption:*:3,nvmlDeviceGetFieldValues:*:3" \
    run 0 "$MIGBENCH" run "$TMP/energy.yaml" --results "$TMP/e1"
energy "$TMP/e1" '
en["method"] == "power_integral"
en["counter_j"] is None and en["integrated_j"] > 0 and en["mean_power_w"] > 0
en["refused_reason"] is None and en["flag"] == "ok"
re.search(r"no energy counter \(nvmlDeviceGetTotalEnergyConsumption answered NVML 3: Not Supported\)", en["note"])
len(rep) == 1 and rep[0]["energy_source"] == "integrated" and abs(rep[0]["energy_j"] - en["integrated_j"]) < 0.01
'

# Power answers NOT_SUPPORTED too: nothing to measure with, and the reason says NVIDIA's words.
MIGBENCH_FAKE_NVML_FAIL="nvmlDeviceGetTotalEnergyConsumption:*:3,nvmlDeviceGetFieldValues:*:3,nvmlDeviceGetPowerUsage:*:3" \
    run 0 "$MIGBENCH" run "$TMP/energy.yaml" --results "$TMP/e2"
energy "$TMP/e2" '
en["method"] is None and en["counter_j"] is None and en["integrated_j"] is None and en["mean_power_w"] is None
en["flag"] == "no_sensor" and re.search(r"NVML 3: Not Supported", en["refused_reason"])
len(rep) == 1 and rep[0]["energy_j"] is None
'

# Both readings there: the counter is the measurement, nothing to note.
run 0 "$MIGBENCH" run "$TMP/energy.yaml" --results "$TMP/e3"
energy "$TMP/e3" '
en["method"] == "counter" and en["counter_j"] > 0 and en["integrated_j"] > 0
en["note"] is None and en["refused_reason"] is None
len(rep) == 1 and rep[0]["energy_source"] == "counter"
'

# ARGUMENT_VERSION_MISMATCH (25) from the versioned profile-info call, v3 and v2.
cat >"$TMP/mig.yaml" <<YAML
version: 1
name: vm
device: "nvml:0"
workloads:
  a: {command: ["$FX/fx_steady", --rate, "20", --duration, "60"]}
runs:
  - {name: first, mode: mig, layout: [3g.40gb, 1g.10gb], jobs: [a, a]}
measure: {warmup: 100ms, duration: 300ms, grace: 1s, progress_timeout: 10s, repetitions: 1}
YAML
MIGBENCH_FAKE_NVML_SPEC="H100-80GB:mig=on:state=$TMP/g1.json" \
    MIGBENCH_FAKE_NVML_FAIL="nvmlDeviceGetGpuInstanceProfileInfoV:*:25" \
    run 0 "$MIGBENCH" run "$TMP/mig.yaml" --results "$TMP/v1"
python3 - "$TMP/v1" <<'PY' || fail "version mismatch: the fallback"
import json, sys
c = json.load(open(f"{sys.argv[1]}/first/0/cell.json"))
profiles = sorted(j["instance"]["profile"] for j in c["jobs"])
if c["status"] != "ok" or profiles != ["1g.10gb", "3g.40gb"]:
    print(c["status"], c.get("failure"), profiles, file=sys.stderr)
    sys.exit(1)
PY
# ... and from the versioned GPM call (optional per-instance activity): the cell runs, the gi*_
# activity columns stay empty (never 0), and the run says why in NVIDIA's words.
MIGBENCH_FAKE_NVML_SPEC="H100-80GB:mig=on:state=$TMP/g3.json" \
    MIGBENCH_FAKE_NVML_FAIL="nvmlGpmMetricsGet:*:25" \
    run 0 "$MIGBENCH" run "$TMP/mig.yaml" --results "$TMP/v3"
expect_err "first 0: per-instance activity \(telemetry.csv gi\*_ columns\) left empty: nvml:0: compute GPM metrics: .*\(NVML 25: "
python3 - "$TMP/v3/first/0/telemetry.csv" <<'PY' || fail "GPM columns"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
cols = [k for k in rows[0] if k.startswith("gi") and k.endswith("_pct")]
filled = [(k, r[k]) for r in rows for k in cols if r[k] != ""]
if len(cols) != 8 or filled:
    print(cols, filled[:4], file=sys.stderr)
    sys.exit(1)
PY
# Without the fault the same columns are filled (the check above can fail).
MIGBENCH_FAKE_NVML_SPEC="H100-80GB:mig=on:state=$TMP/g4.json" \
    run 0 "$MIGBENCH" run "$TMP/mig.yaml" --results "$TMP/v4"
grep -q "left empty" "$TMP/err" && fail "activity note without a fault"
python3 - "$TMP/v4/first/0/telemetry.csv" <<'PY' || fail "GPM columns without the fault"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
if not any(r[k] != "" for r in rows for k in r if k.startswith("gi") and k.endswith("sm_util_pct")):
    sys.exit(1)
PY
# ... and from the unversioned call as well: refused before anything is made.
MIGBENCH_FAKE_NVML_SPEC="H100-80GB:mig=on:state=$TMP/g2.json" \
    MIGBENCH_FAKE_NVML_FAIL="nvmlDeviceGetGpuInstanceProfileInfoV:*:25,nvmlDeviceGetGpuInstanceProfileInfo:*:25" \
    run 1 "$MIGBENCH" run "$TMP/mig.yaml" --results "$TMP/v2"
expect_err "run 'first': cannot read the GPU's MIG state: .*NVML 25: "
grep -q "does not fit" "$TMP/err" && fail "a version mismatch reported as a layout that does not fit"
run 0 "$MIGBENCH" mig show --device "emu:H100-80GB:mig=on:state=$TMP/g2.json"
expect_out 'no GPU instances'
finish
