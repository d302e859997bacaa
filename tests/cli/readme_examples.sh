# SPDX-License-Identifier: Apache-2.0
# Every `$ migbench ...` line of README.md and docs/*.md runs as written after the quickstart
# (tests/cli/readme_examples.py says how; lines that need a real GPU are marked and skipped).
# MB_TEST_TIMEOUT: 900 (one Python process after another; minutes on a loaded 2-core machine)
. "$MB_SOURCE_DIR/tests/cli/lib.sh"
: "${MB_BINARY_DIR:?}"
python3 "$MB_SOURCE_DIR/tests/cli/readme_examples.py" "$MB_SOURCE_DIR" "$MB_BINARY_DIR" \
    "$MIGBENCH" "$TMP/repo" || fail "README/docs examples"
finish
