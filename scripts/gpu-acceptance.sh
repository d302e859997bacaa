#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The GPU acceptance check: one command, for the day a machine with an NVIDIA GPU is lent, that
# checks migbench's NVML path against the real driver and writes OUTDIR/summary.json (fields in
# docs/nvml.md, "GPU acceptance script") plus one log per check under OUTDIR/logs/.
#
#   scripts/gpu-acceptance.sh OUTDIR [--gpu N] [--migbench PATH] [--python PATH]
#   scripts/gpu-acceptance.sh OUTDIR --fake BUILD_DIR    # against the fake libnvidia-ml.so.1
#
# It never changes MIG mode, power limit, clocks, persistence mode or compute mode: it calls no
# nvidia-smi option that sets anything, gives migbench no --manage-mig-mode and no power axis,
# and compares those settings before and after (check "settings_unchanged"). Where MIG is already
# enabled it measures on the existing instances and never creates or destroys one. An MPS daemon
# it starts (through `migbench run`) is stopped before it ends (check "mps_stopped"). Sized to
# finish in under 8 minutes on one H100/H200.
#
# --fake BUILD_DIR runs every check it can against BUILD_DIR's fake NVML on an emulated H100
# (tests/cli/gpu_acceptance.sh): the workloads are the fixture programs, nvidia-smi checks are
# "skip", three processes are attached to the fake GPU instead of started with CUDA.
#
# Exit status: 0 every check passed or was skipped, 1 a check failed, 2 usage.
set -uo pipefail
cd "$(dirname "$0")/.."
src=$PWD

usage() {
    sed -n '6,8p' "$0" | sed 's/^# //' >&2
    exit 2
}
[ $# -ge 1 ] || usage
out=$1
shift
gpu=0
mb=$src/build/migbench
py=python3
fake=""
while [ $# -gt 0 ]; do
    case $1 in
    --gpu) gpu=$2; shift 2 ;;
    --migbench) mb=$2; shift 2 ;;
    --python) py=$2; shift 2 ;;
    --fake) fake=$2; shift 2 ;;
    *) usage ;;
    esac
done
case $gpu in '' | *[!0-9]*) echo "gpu-acceptance: --gpu takes an index" >&2; exit 2 ;; esac
mkdir -p "$out/logs" || exit 2
out=$(cd "$out" && pwd)
[ -x "$mb" ] || { echo "gpu-acceptance: no migbench at $mb (build it, or give --migbench)" >&2; exit 2; }
dev="nvml:$gpu"
started=$(date +%s)
checks="$out/checks.jsonl"
: >"$checks"

if [ -n "$fake" ]; then
    export MIGBENCH_NVML_LIBRARY="$fake/tests/fake-nvml/libnvidia-ml.so.1"
    export MIGBENCH_FAKE_NVML_SPEC="H100-80GB,state=$out/fake-gpu.json"
    [ -r "$MIGBENCH_NVML_LIBRARY" ] || { echo "gpu-acceptance: no fake NVML in $fake" >&2; exit 2; }
    dev=nvml:0
fi
export MIGBENCH_RUNTIME_DIR="$out/runtime"

# record NAME STATUS DETAIL SECONDS: one line of checks.jsonl.
record() {
    "$py" -c 'import json,sys; print(json.dumps({"name": sys.argv[1], "status": sys.argv[2],
        "detail": sys.argv[3], "seconds": float(sys.argv[4]), "log": "logs/" + sys.argv[1] + ".log"}))' \
        "$1" "$2" "$3" "$4" >>"$checks"
    printf 'gpu-acceptance: %-20s %-4s %s\n' "$1" "$2" "$3" >&2
}

# check NAME FUNCTION: runs FUNCTION with its output in logs/NAME.log; FUNCTION prints its
# detail as the last line and returns 0 pass, 1 fail, 77 skip.
check() {
    local name=$1 fn=$2 t0 rc detail
    t0=$(date +%s.%N)
    "$fn" >"$out/logs/$name.log" 2>&1
    rc=$?
    detail=$(tail -n 1 "$out/logs/$name.log")
    local secs
    secs=$("$py" -c "import sys; print(round($(date +%s.%N) - $t0, 2))")
    case $rc in
    0) record "$name" pass "$detail" "$secs" ;;
    77) record "$name" skip "$detail" "$secs" ;;
    *) record "$name" fail "$detail" "$secs" ;;
    esac
}

have_smi() { [ -z "$fake" ] && command -v nvidia-smi >/dev/null; }

# The settings this script must never change, one "key=value" a line.
settings() {
    if have_smi; then
        nvidia-smi -i "$gpu" --format=csv,noheader \
            --query-gpu=mig.mode.current,mig.mode.pending,power.limit,persistence_mode,compute_mode,clocks.applications.graphics,clocks.applications.memory
    else
        "$mb" devices --device "$dev" --json | "$py" -c 'import json,sys
d = json.load(sys.stdin)["devices"][0]
print(d.get("mig_mode"), d.get("power_limit"))'
    fi
}

# ---- checks -------------------------------------------------------------------------------------

c_environment() {
    "$mb" --version
    have_smi && nvidia-smi -q -i "$gpu" >"$out/logs/nvidia-smi-q.txt"
    "$mb" devices --device "$dev" --json >"$out/devices.json" || { echo "devices failed"; return 1; }
    "$py" -c 'import json,sys; d=json.load(open(sys.argv[1]))["devices"][0]
print(d["name"], d["uuid"], "driver", d.get("driver_version"))' "$out/devices.json"
}

# devices against nvidia-smi -q: name, UUID, total memory, MIG mode, power limit.
c_devices_vs_smi() {
    have_smi || { echo "no nvidia-smi (fake NVML)"; return 77; }
    nvidia-smi -q -x -i "$gpu" >"$out/logs/nvidia-smi-q.xml" || { echo "nvidia-smi -q -x failed"; return 1; }
    "$py" - "$out/devices.json" "$out/logs/nvidia-smi-q.xml" <<'PY'
import json, sys, xml.etree.ElementTree as ET
d = json.load(open(sys.argv[1]))["devices"][0]
g = ET.parse(sys.argv[2]).getroot().find("gpu")
bad = []
def num(s):
    return float(s.split()[0]) if s and s.split()[0].replace(".", "", 1).isdigit() else None
if g.findtext("product_name") != d["name"]:
    bad.append(f"name {d['name']!r} vs {g.findtext('product_name')!r}")
if g.findtext("uuid") != d["uuid"]:
    bad.append(f"uuid {d['uuid']} vs {g.findtext('uuid')}")
fb = num(g.findtext("fb_memory_usage/total"))
mine = d.get("memory", {}).get("total_bytes") if isinstance(d.get("memory"), dict) else d.get("mem_total_bytes")
if fb is not None and mine is not None and abs(mine / 2**20 - fb) > 1024:
    bad.append(f"memory {mine / 2**20:.0f} MiB vs {fb:.0f} MiB")
mig = (g.findtext("mig_mode/current_mig") or "").lower()
print("nvidia-smi:", g.findtext("product_name"), g.findtext("uuid"), "mig", mig, "fb", fb)
print("; ".join(bad) if bad else "name, uuid, memory agree")
sys.exit(1 if bad else 0)
PY
}

# Power against energy: 15 s of 100 ms samples while idle; the counter's increase against the
# integral of the reported power, and how often the power value changes (the sensor's period).
c_power_vs_energy() {
    "$mb" monitor --device "$dev" --json --interval 100ms --count 150 >"$out/logs/power-samples.jsonl" ||
        { echo "monitor failed"; return 1; }
    "$py" - "$out/logs/power-samples.jsonl" <<'PY'
import json, sys
rows = [json.loads(l)["gpus"][0] for l in open(sys.argv[1])]
t = [json.loads(l)["elapsed_s"] for l in open(sys.argv[1])]
p = [r.get("power_w") for r in rows]
e = [r.get("energy_counter_mj") for r in rows]
if None in p or None in e:
    print("power or energy counter not reported (null)")
    sys.exit(1)
integ = sum((t[i] - t[i - 1]) * (p[i] + p[i - 1]) / 2 for i in range(1, len(t)))
counter = (e[-1] - e[0]) / 1000.0
changes = [t[i] for i in range(1, len(p)) if p[i] != p[i - 1]]
period = (changes[-1] - changes[0]) / (len(changes) - 1) if len(changes) > 1 else None
gap = abs(counter - integ) / counter if counter > 0 else None
print(json.dumps({"counter_j": round(counter, 2), "integrated_j": round(integ, 2),
                  "gap": gap, "power_update_period_s": period, "samples": len(t)}))
print(f"counter {counter:.1f} J, integrated {integ:.1f} J, gap {100 * gap:.1f}%, "
      f"power updates every {period if period is None else round(period, 3)} s")
sys.exit(0 if gap is not None and gap < 0.15 else 1)
PY
}

# Three concurrent CUDA processes (a tiny torch script each), listed with the right PIDs.
c_three_processes() {
    local pids=() ready="$out/logs/procs" i
    mkdir -p "$ready"
    if [ -n "$fake" ]; then
        for i in 1 2 3; do sleep 600 & pids+=($!); done
        MIGBENCH_FAKE_NVML_PROCS="${pids[0]}:-1:-1:100,${pids[1]}:-1:-1:100,${pids[2]}:-1:-1:100" \
            "$mb" devices --device "$dev" --json >"$out/logs/procs.json"
    else
        local visible=""
        [ -n "${MIG_UUID:-}" ] && visible=$MIG_UUID
        for i in 1 2 3; do
            CUDA_VISIBLE_DEVICES=${visible:-$gpu} "$py" -c 'import os, sys, time, torch
x = torch.ones(1 << 20, device="cuda")
torch.cuda.synchronize()
open(sys.argv[1], "w").write(str(os.getpid()))
sys.stdin.read()' "$ready/$i" < <(sleep 120) &
            pids+=($!)
        done
        for i in 1 2 3; do
            inotifywait -qq -t 60 -e close_write "$ready" 2>/dev/null || true
        done
        "$mb" devices --device "$dev" --json >"$out/logs/procs.json"
    fi
    kill "${pids[@]}" 2>/dev/null
    wait "${pids[@]}" 2>/dev/null
    "$py" - "$out/logs/procs.json" "${pids[@]}" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))["devices"][0]
listed = {p["pid"] for p in (d.get("processes") or [])}
want = {int(x) for x in sys.argv[2:]}
print("listed", sorted(listed), "started", sorted(want))
missing = want - listed
print(f"missing {sorted(missing)}" if missing else "all three PIDs listed")
sys.exit(1 if missing else 0)
PY
}

# The quickstart's jobs at GPU sizes under exclusive, time-slicing and MPS (whole-GPU modes);
# with MIG already enabled, on the existing instances instead (migbench measure per instance).
c_runs() {
    local mig
    mig=$("$py" -c 'import json,sys; d=json.load(open(sys.argv[1]))["devices"][0]
m = d.get("mig_mode") or {}
print(1 if (m.get("current") if isinstance(m, dict) else m) else 0)' "$out/devices.json")
    if [ "$mig" = 1 ]; then
        c_runs_on_instances
        return
    fi
    local w_a w_b pyspec=auto want="alone shared mps"
    local mpsrun="  - {name: mps, mode: mps, jobs: [resnet18, gpt2], match_layout: [3g, 4g]}"
    if [ -n "$fake" ] && ! command -v nvidia-cuda-mps-control >/dev/null; then
        mpsrun="" want="alone shared" # the fake GPU without NVIDIA's MPS control program
    fi
    case $py in /*) pyspec=$py ;; esac
    if [ -n "$fake" ]; then
        w_a="command: [\"$fake/fixtures/fx_steady\", --rate, \"40\", --duration, \"60\"]"
        w_b="command: [\"$fake/fixtures/fx_steady\", --rate, \"20\", --duration, \"60\"]"
    else
        w_a="{command: [\"{python}\", \"{workloads}/vision.py\", --model, resnet18], unit: images, gpu_args: [--device, cuda, --batch-size, \"128\", --amp, bf16, --channels-last]}"
        w_b="{command: [\"{python}\", \"{workloads}/gpt.py\"], unit: tokens, gpu_args: [--device, cuda, --size, small, --seq-len, \"1024\", --batch-size, \"8\", --amp, bf16]}"
        w_a=${w_a#\{}; w_a=${w_a%\}}; w_b=${w_b#\{}; w_b=${w_b%\}}
    fi
    cat >"$out/acceptance.yaml" <<YAML
version: 1
name: gpu-acceptance
device: $dev
python: $pyspec
workloads:
  resnet18: {$w_a}
  gpt2: {$w_b}
runs:
  - {name: alone, mode: exclusive, jobs: [resnet18, gpt2]}
  - {name: shared, mode: timeslice, jobs: [resnet18, gpt2]}
$mpsrun
measure: {warmup: 10s, duration: 20s, sample_interval: 100ms, grace: 10s, progress_timeout: 120s, repetitions: 1}
YAML
    if [ -n "$fake" ]; then
        sed -i 's/warmup: 10s, duration: 20s/warmup: 200ms, duration: 1s/' "$out/acceptance.yaml"
    fi
    MIGBENCH_WORKLOADS="$src/workloads" "$mb" run "$out/acceptance.yaml" --results "$out/run"
    local rc=$?
    "$py" - "$out/run" $want <<'PY'
import glob, json, sys
cells = {c.split("/")[-3]: json.load(open(c)) for c in glob.glob(sys.argv[1] + "/*/0/cell.json")}
bad = [f"{k}: {v['status']} {v.get('failure')}" for k, v in cells.items() if v["status"] != "ok"]
for k in sys.argv[2:]:
    if k not in cells:
        bad.append(f"{k}: no cell.json")
print("; ".join(bad) if bad else " and ".join(sys.argv[2:]) + " cells ok")
sys.exit(1 if bad else 0)
PY
    [ $? = 0 ] && [ $rc = 0 ]
}

c_runs_on_instances() {
    local uuids n=0 u
    uuids=$("$py" -c 'import json,sys; d=json.load(open(sys.argv[1]))["devices"][0]
print(" ".join(i["uuid"] for i in d.get("mig_instances") or [] if i.get("uuid")))' "$out/devices.json")
    [ -n "$uuids" ] || { echo "MIG enabled with no instances: nothing to run on (none is created)"; return 77; }
    for u in $uuids; do
        [ $n -lt 2 ] || break
        n=$((n + 1))
        CUDA_VISIBLE_DEVICES=$u "$mb" measure --device "$dev" --warmup 20steps --unit images --json -- \
            "$py" "$src/workloads/vision.py" --model resnet18 --device cuda --batch-size 64 --steps 300 \
            >"$out/logs/measure-$n.json" || { echo "measure on $u failed"; return 1; }
    done
    echo "measured on $n existing MIG instance(s); none created or destroyed"
}

# No MPS daemon left by the run: the control program finds none on the run's pipe directory.
c_mps_stopped() {
    local pipe
    pipe=$(ls -d "$out"/run/mps/*/pipe 2>/dev/null | head -1)
    [ -n "$pipe" ] || { echo "no MPS cell ran"; return 77; }
    if echo get_server_list | CUDA_MPS_PIPE_DIRECTORY=$pipe CUDA_MPS_LOG_DIRECTORY=$pipe \
        nvidia-cuda-mps-control >/dev/null 2>&1; then
        echo "an MPS daemon still answers on $pipe"
        return 1
    fi
    echo "no daemon answers on $pipe"
}

# monitor and its Prometheus textfile.
c_monitor() {
    "$mb" monitor --device "$dev" --plain --interval 500ms --count 4 --prometheus "$out/metrics.prom" ||
        { echo "monitor failed"; return 1; }
    grep -q '^DCGM_FI_DEV_POWER_USAGE{' "$out/metrics.prom" ||
        { echo "no DCGM_FI_DEV_POWER_USAGE in the textfile"; return 1; }
    echo "$(grep -c '^[A-Za-z]' "$out/metrics.prom") samples in metrics.prom"
}

before=$(settings 2>&1)
for c in environment devices_vs_smi power_vs_energy three_processes runs mps_stopped monitor; do
    check "$c" "c_$c"
done
after=$(settings 2>&1)
t0=$(date +%s.%N)
if [ "$before" = "$after" ]; then
    echo "$after" >"$out/logs/settings_unchanged.log"
    record settings_unchanged pass "$after" 0
else
    printf 'before: %s\nafter: %s\n' "$before" "$after" >"$out/logs/settings_unchanged.log"
    record settings_unchanged fail "before '$before', after '$after'" 0
fi

"$py" - "$out" "$checks" "$started" "$dev" "${fake:+fake}" <<'PY'
import json, os, sys, time
out, checks, started, dev, fake = sys.argv[1:6]
cs = [json.loads(l) for l in open(checks)]
dj = os.path.join(out, "devices.json")
device = json.load(open(dj))["devices"][0] if os.path.exists(dj) else None
summary = {
    "schema": "migbench.gpu_acceptance/1",
    "device_spec": dev,
    "fake": fake == "fake",
    "device": {k: device.get(k) for k in ("name", "uuid", "driver_version", "nvml_version")} if device else None,
    "started_unix": int(started),
    "seconds": round(time.time() - int(started), 1),
    "passed": all(c["status"] != "fail" for c in cs),
    "checks": cs,
}
json.dump(summary, open(os.path.join(out, "summary.json"), "w"), indent=2)
print(f"gpu-acceptance: {'PASSED' if summary['passed'] else 'FAILED'} in {summary['seconds']} s; "
      f"{out}/summary.json", file=sys.stderr)
sys.exit(0 if summary["passed"] else 1)
PY
