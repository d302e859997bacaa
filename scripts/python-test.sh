#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The Python package's tests (python/tests, pytest) against a built tree: the package from
# python/, the library BUILD_DIR/libmigbench.so.ABI, the command BUILD_DIR/migbench.
#   scripts/python-test.sh [BUILD_DIR] [pytest arguments...]
# Uses Debian's python3 with python3-pytest (scripts/install-deps.sh --test); PYTHON overrides.
# Fails when pytest collects no test (its exit 5), so a broken collection cannot pass.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
[ $# -gt 0 ] && shift
py=${PYTHON:-}
if [ -z "$py" ]; then
    for cand in python3 /usr/bin/python3; do
        if "$cand" -c 'import pytest' 2>/dev/null; then py=$cand; break; fi
    done
fi
[ -n "$py" ] || { echo "python-test: pytest is needed (apt-get install python3-pytest)" >&2; exit 1; }
abi=$(sed -n 's/^set(MB_ABI_VERSION \([0-9]*\)).*/\1/p' CMakeLists.txt)
export MIGBENCH_LIBRARY=$PWD/$build/libmigbench.so.$abi MIGBENCH=$PWD/$build/migbench
export MB_SOURCE_DIR=$PWD PYTHON_FOR_JOBS=$py
for f in "$MIGBENCH_LIBRARY" "$MIGBENCH"; do
    [ -e "$f" ] || { echo "python-test: no $f (build first)" >&2; exit 1; }
done
rc=0
"$py" -m pytest -q -p no:cacheprovider python/tests "$@" || rc=$?
if [ $rc -eq 5 ]; then
    echo "python-test: pytest collected no tests" >&2
    exit 1
fi
exit $rc
