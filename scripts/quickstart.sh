#!/usr/bin/env bash
# The README's main command: installs what is needed, builds, and runs the quickstart experiment
# (on the first NVIDIA GPU when NVML finds one, else on the host CPU), then prints its report.
# Extra arguments go to `migbench run` (e.g. --device host, --set measure.duration=60s).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
./scripts/build.sh -DMB_BUILD_TESTS=OFF
./build/migbench run examples/quickstart.yaml "$@"
