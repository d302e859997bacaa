#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The planner against CBC's proven optimum on the issue's random small fleets (issue 29): 2-4
# H100s, 6-20 jobs (tests/cli/plan_milp.py --large), CBC under a time limit per solve instead of
# the CI test's node limit; only fleets CBC decides are compared (which ones depends on the
# machine's speed and load). Not run in CI (tests/cli/plan_cbc.sh runs a small version); the
# results go to BENCHMARKS.md. Needs python3-pulp and coinor-cbc (scripts/install-deps.sh --test).
# Usage: bench/plan_cbc.sh [BUILD_DIR] [FLEETS] [CBC_SECONDS]
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
fleets=${2:-30}
secs=${3:-30}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "# $(date -u +%FT%TZ) load: $(cut -d' ' -f1-3 /proc/loadavg) cores: $(nproc)"
nice /usr/bin/python3 tests/cli/plan_milp.py "$build/migbench" "$tmp" "$fleets" --large \
    --cbc-seconds "$secs"
rc=$?
echo "# $(date -u +%FT%TZ) load: $(cut -d' ' -f1-3 /proc/loadavg)"
exit $rc
