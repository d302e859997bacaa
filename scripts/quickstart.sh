#!/usr/bin/env bash
# The README's main command: installs what is needed, builds, and runs the quickstart.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
./scripts/build.sh
./build/migbench layouts --gpu H100-80GB
