#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The speed-up of running one experiment on 4 emulated GPUs over 1: the same 16 cells (4 runs x 4
# repetitions, whole-GPU and MIG runs, with MIG-mode phases) on emu:H100-80GB:count=1 and
# count=4, each job the fx_steady fixture (a steady job that takes no CPU to speak of), fixed
# 1 s windows. Prints the wall time of each and their ratio; a run's own overheads (cool-downs
# off, MIG changes, journal fsyncs, process start-up) are in both.
# Usage: bench/multigpu.sh [BUILD_DIR] [REPEATS]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
repeats=${2:-3}
mb=$build/migbench
fx=$PWD/$build/fixtures/fx_steady
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/exp.yaml" <<YAML
version: 1
name: bench-multigpu
manage_mig_mode: true
workloads:
  a: {command: ["$fx", --rate, "20", --duration, "600"], unit: images}
  b: {command: ["$fx", --rate, "10", --duration, "600"], unit: tokens}
runs:
  - {name: alone, mode: exclusive, jobs: [a]}
  - {name: ts, mode: timeslice, jobs: [a, b]}
  - {name: mix, mode: mig, layout: [4g.40gb, 3g.40gb], jobs: [a, b]}
  - {name: small, mode: mig, layout: [1g.10gb, 1g.10gb], jobs: [a, b]}
measure: {warmup: 200ms, duration: 1s, sample_interval: 100ms, grace: 1s, progress_timeout: 10s, repetitions: 4}
YAML
wall() { # wall GPUS RESULTS: seconds for one run
    local t0 t1
    t0=$(date +%s.%N)
    "$mb" -q run "$tmp/exp.yaml" --device "emu:H100-80GB:count=$1,state=$tmp/gpu-$1.json" \
        --results "$2" >/dev/null
    t1=$(date +%s.%N)
    awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.2f", b-a}'
}
for i in $(seq "$repeats"); do
    one=$(wall 1 "$tmp/one-$i")
    four=$(wall 4 "$tmp/four-$i")
    printf 'repeat %d: 16 cells on 1 GPU %6.2f s, on 4 GPUs %6.2f s, speed-up %.2fx\n' "$i" "$one" \
        "$four" "$(awk -v a="$one" -v b="$four" 'BEGIN{print a/b}')"
done
