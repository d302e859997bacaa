#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Fails if any C source or header differs from .clang-format's layout, or if a source file,
# script or CMake file lacks its SPDX license line, or if a function in src/, cli/ or
# tests/, bench/ is over 100 lines (scripts/func-length.py; scripts/func-length.allow lists the
# functions still being split).
set -euo pipefail
cd "$(dirname "$0")/.."
files=$(git ls-files '*.c' '*.h')
[ -z "$files" ] && exit 0
bad=0
for f in $files; do
    if ! clang-format --dry-run --Werror "$f" >/dev/null 2>&1; then
        echo "not formatted: $f (run: clang-format -i $f)" >&2
        bad=1
    fi
done
for f in $(git ls-files '*.c' '*.h' '*.sh' '*.py' '*.cmake' 'CMakeLists.txt' '*/CMakeLists.txt' \
    .ci/run); do
    if ! head -n 3 "$f" | grep -q 'SPDX-License-Identifier: Apache-2.0'; then
        echo "no SPDX-License-Identifier line in the first three lines: $f" >&2
        bad=1
    fi
done
if ! python3 scripts/func-length.py --allow scripts/func-length.allow src cli tests bench; then
    echo "functions over 100 lines: split them (scripts/func-length.py)" >&2
    bad=1
fi
exit $bad
