# SPDX-License-Identifier: Apache-2.0
# The shared library's ABI (docs/api.md): it exports exactly the MB_API functions, each documented,
# its ABI matches the committed baseline abi/libmigbench.abi, and the check fails when a field is
# added to a struct of the stable API (scripts/abi-check.sh --self-test). Needs abigail-tools.
. "$MB_SOURCE_DIR/tests/cli/lib.sh"
command -v abidiff >/dev/null || { echo "FAIL: abidiff is needed (scripts/install-deps.sh --test)" >&2; exit 1; }
run 0 "$MB_SOURCE_DIR/scripts/abi-check.sh" "$MB_BINARY_DIR"
expect_out 'ABI unchanged|sanitizer build: symbols checked'
abi=$(sed -n 's/^set(MB_ABI_VERSION \([0-9]*\)).*/\1/p' "$MB_SOURCE_DIR/CMakeLists.txt")
# No internal symbol, whatever the headers say.
nm -D --defined-only "$MB_BINARY_DIR/libmigbench.so.$abi" | awk '{print $3}' >"$TMP/syms"
grep -q '^mb__' "$TMP/syms" && fail "an mb__ internal is exported"
grep -qx 'mb_wmeter_open' "$TMP/syms" || fail "mb_wmeter_open is not exported"
grep -qx 'mb_meter_create' "$TMP/syms" && fail "mb_meter_create (static-library API) is exported"
# The check itself must fail on a break.
got=0
"$MB_SOURCE_DIR/scripts/abi-check.sh" --self-test "$MB_BINARY_DIR" >"$TMP/out" 2>"$TMP/err" || got=$?
case $got in
0) expect_out 'self-test passed' ;;
77) echo "note: self-test skipped in a sanitizer build" ;;
*) fail "abi-check --self-test exited $got"; cat "$TMP/out" "$TMP/err" >&2 ;;
esac
finish
