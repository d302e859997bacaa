#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Fails if any C source or header differs from .clang-format's layout.
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
exit $bad
