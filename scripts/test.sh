#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The README's test command: installs what is needed, builds with warnings as errors and the
# tests on, and runs the whole test suite. It fails when ctest finds no test to run.
#
# It builds into its own directory (BUILD_DIR, default build-test) and states every option it
# depends on, so the quickstart's build/ (tests off) and this one never meet: the two README
# commands work in either order, and twice in a row.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh --test
dir=${BUILD_DIR:-build-test}
BUILD_DIR=$dir ./scripts/build.sh -DMB_BUILD_TESTS=ON -DMB_WERROR=ON -DMB_SANITIZE= "$@"
# At least 4 tests at once, even on 2 cores: no test may depend on timing.
jobs=$(nproc)
[ "$jobs" -ge 4 ] || jobs=4
ctest --test-dir "$dir" --output-on-failure --no-tests=error -j "$jobs"
