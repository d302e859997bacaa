#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The CPU time migbench itself takes while it measures a real workload: runs each reference
# workload for 20 s under `migbench measure --device host` (100 ms sampling, progress pipe, log
# capture) and reads the migbench process's own utime+stime from /proc just before the job ends
# (children are not included there). That CPU is all the tool can take from the job.
# Usage: bench/tool_cpu.sh [BUILD_DIR] [PYTHON]
set -euo pipefail
cd "$(dirname "$0")/.."
mb=${1:-build}/migbench
py=${2:-/usr/bin/python3}
tck=$(getconf CLK_TCK)
for wl in "workloads/vision.py --model resnet18 --image-size 64 --batch-size 8" \
          "workloads/gpt.py --size tiny --seq-len 64 --batch-size 8"; do
    # shellcheck disable=SC2086  # wl is a fixed argument list, split on purpose
    "$mb" measure --device host -- "$py" $wl --device cpu --threads 1 --log-every 0 --duration 20 \
        >/dev/null 2>&1 &
    pid=$!
    sleep 18
    read -r ut st < <(awk '{print $14, $15}' "/proc/$pid/stat")
    ms=$(( (ut + st) * 1000 / tck ))
    printf '%-60s migbench CPU %4d ms in 18 s = %s%% of one core\n' "$wl" "$ms" \
        "$(awk -v m="$ms" 'BEGIN{printf "%.2f", m/180}')"
    wait "$pid" || true
done
