#!/usr/bin/env bash
# The README's test command: installs what is needed, builds with warnings as errors, and runs
# the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh --test
BUILD_DIR=${BUILD_DIR:-build} ./scripts/build.sh -DMB_WERROR=ON "$@"
ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure -j "$(nproc)"
