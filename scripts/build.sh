#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Configures and builds migbench into BUILD_DIR (default: build). Extra arguments go to cmake.
# CMake keeps options from an earlier configure of the same directory: a caller that depends on
# one (MB_BUILD_TESTS, MB_WERROR, MB_SANITIZE) states it, as quickstart.sh and test.sh do.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${BUILD_DIR:-build}
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=${BUILD_TYPE:-RelWithDebInfo} "$@" >/dev/null
cmake --build "$dir" -j "$(nproc)"
