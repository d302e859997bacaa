#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The meter on a real NVIDIA GPU, as one prepared run (issue 4, "On a real GPU"):
#   1. NVML sampling cost: bench_meter on nvml:0 at 10/100/1000 Hz (µs per sample = NVML calls)
#   2. the sensor's real update period: 1 ms sampling of a load step, then the gaps between
#      changes of power_mw and energy_mj in the CSV
#   3. a steady PyTorch matmul loop measured at 10, 100 and 1000 Hz: counter vs integrated gap
# Usage: scripts/gpu-meter-check.sh [OUTDIR] (default: $OUT or ./gpu-meter-check); needs a build
# in ./build with the nvml backend, and python3 with torch+CUDA (PYTHON overrides).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-${OUT:-gpu-meter-check}}
mkdir -p "$out"
mb=./build/migbench
py=${PYTHON:-python3}
dev=${DEVICE:-nvml:0}

"$mb" devices --device "$dev" --json >"$out/devices.json" 2>"$out/devices.err" || true
./build/bench_meter --device "$dev" --seconds 5 --reps 5 >"$out/bench_meter.txt" 2>&1 || true

# A steady GPU load that reports progress through MIGBENCH_PROGRESS_FD.
cat >"$out/matmul.py" <<'PY'
import os, sys, time, torch
secs = float(sys.argv[1]); idle = float(sys.argv[2]) if len(sys.argv) > 2 else 0.0
fd = os.environ.get("MIGBENCH_PROGRESS_FD")
prog = os.fdopen(int(fd), "w", buffering=1) if fd else None
time.sleep(idle)  # an idle stretch first, so the load step is visible
a = torch.randn(8192, 8192, device="cuda", dtype=torch.float16)
b = torch.randn(8192, 8192, device="cuda", dtype=torch.float16)
t0 = time.monotonic(); step = 0
while time.monotonic() - t0 < secs:
    for _ in range(10):
        c = a @ b
    torch.cuda.synchronize()
    step += 1
    if prog:
        prog.write(f"step={step} samples={step * 10}\n")
PY

# 2. update period: 1 ms sampling across an idle -> load step.
"$mb" measure --device "$dev" --interval 1ms --min-window 1s --csv "$out/step_1ms.csv" --json \
    -- "$py" "$out/matmul.py" 6 2 >"$out/step_1ms.json" 2>"$out/step_1ms.err" || true
"$py" - "$out/step_1ms.csv" >"$out/update_period.txt" 2>&1 <<'PY' || true
import csv, sys, statistics
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["read_ok"] == "1"]
for col in ("power_mw", "power_instant_mw", "power_avg_mw", "energy_mj"):
    ts = [int(r["t_ns"]) for r in rows if r[col] != ""]
    vs = [r[col] for r in rows if r[col] != ""]
    ch = [ts[i] for i in range(1, len(vs)) if vs[i] != vs[i - 1]]
    gaps = [(b - a) / 1e6 for a, b in zip(ch, ch[1:])]
    if gaps:
        print(f"{col}: {len(ch)} changes, gap ms median {statistics.median(gaps):.1f} "
              f"p10 {sorted(gaps)[len(gaps)//10]:.1f} p90 {sorted(gaps)[9*len(gaps)//10]:.1f}")
    else:
        print(f"{col}: no changes seen ({len(vs)} readings)")
PY

# 3. steady load at three rates: both energy figures and their gap.
for iv in 100ms 10ms 1ms; do
    "$mb" measure --device "$dev" --interval "$iv" --warmup 5s --idle 3s --json \
        --csv "$out/steady_$iv.csv" -- "$py" "$out/matmul.py" 30 \
        >"$out/steady_$iv.json" 2>"$out/steady_$iv.err" || true
done
"$py" - "$out" >"$out/summary.txt" 2>&1 <<'PY' || true
import json, sys, os
d = sys.argv[1]
for iv in ("100ms", "10ms", "1ms"):
    p = os.path.join(d, f"steady_{iv}.json")
    try:
        j = json.load(open(p))
    except Exception as e:
        print(iv, "no result:", e); continue
    e = j["energy"]; t = j["throughput"]
    print(f"{iv}: counter {e['counter_j']} J integral {e['integral_j']} J gap {e['gap_rel']} "
          f"flag {e['gap_flag']} mean {e['mean_power_w']} W samples {j['sampling']['samples']} "
          f"missed {j['sampling']['missed_updates']} overruns {j['sampling']['overruns']} "
          f"tput {t['per_s']} +- {t['ci95_half']} idle {j['idle'] and j['idle']['mean_power_w']} W")
PY
cat "$out/bench_meter.txt" "$out/update_period.txt" "$out/summary.txt"
