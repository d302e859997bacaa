#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The planner at fleet scale (issue 29): bench_plan_fleet on the fleet instances of the issue
# (1,000 jobs / 64 GPUs, 3,000 / 512, 10,000 / 512, 100,000 / 4,096) and on small random fleets
# (2-4 GPUs, 8-20 jobs), both objectives, each run under `timeout LIMIT` (a run killed by it is
# printed as "timeout"). Prints one line per run (see bench_plan_fleet.c) and the load average
# before and after, since the machine is shared.
# TIME_LIMIT_S is the planner's --time-limit for every case; "auto" (default) gives each fleet
# case its budget: 1.5 s for 1,000 jobs, 5 s for 3,000, 8 s for 10,000 and 30 s for 100,000
# (the small fleets converge long before their limit).
# Usage: bench/plan_fleet.sh [BUILD_DIR] [LIMIT_S] [TIME_LIMIT_S|auto] [THREADS] [large|small|all]
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
limit=${2:-180}
tl=${3:-auto}
threads=${4:-0}
which=${5:-all}
b=$build/bench_plan_fleet
echo "# $(date -u +%FT%TZ) load: $(cut -d' ' -f1-3 /proc/loadavg) cores: $(nproc)"
echo "# jobs gpus objective seed wall_s cpu_s makespan_s energy_j bound_makespan_s bound_energy_j gap_makespan_pct gap_energy_pct method"
one() {
    local t=$tl
    if [ "$t" = auto ]; then
        case $1 in 1000) t=1.5 ;; 3000) t=5 ;; 10000) t=8 ;; 100000) t=30 ;; *) t=5 ;; esac
    fi
    timeout "$limit" nice "$b" "$@" "$t" "$threads" || echo "$1 $2 $3 ${4:-1} timeout-or-error"
}
if [ "$which" != small ]; then
    for c in "1000 64" "3000 512" "10000 512" "100000 4096"; do
        for obj in energy makespan; do
            one $c $obj 1
        done
    done
fi
if [ "$which" != large ]; then
    for seed in 1 2 3 4 5 6 7 8; do
        g=$((2 + seed % 3))
        n=$((8 + (seed * 5) % 13))
        for obj in energy makespan; do
            one $n $g $obj $seed
        done
    done
fi
echo "# $(date -u +%FT%TZ) load: $(cut -d' ' -f1-3 /proc/loadavg)"
