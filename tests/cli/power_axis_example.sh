# SPDX-License-Identifier: Apache-2.0
# examples/run/power-axis.yaml adapted with --device (another state file, as a user copying it
# would): its jobs learn the run's device from MIGBENCH_DEVICE, so every cell runs. Before, the
# jobs hard-coded their own state file and every cell failed with "cannot attach to the
# emulated GPU: " and an empty reason.
. "$MB_SOURCE_DIR/tests/cli/lib.sh"
mkdir -p "$TMP/w/build"
ln -s "$MB_BINARY_DIR/fixtures" "$TMP/w/build/fixtures"
cd "$TMP/w"
run 0 "$MIGBENCH" run "$MB_SOURCE_DIR/examples/run/power-axis.yaml" --only whole.cap-default \
    --device "emu:H100-80GB:mig=on:state=$TMP/other-gpu.json" --results "$TMP/r" \
    --set 'measure.duration=10 steps'
expect_err '1 cells? ok, 0 failed'
[ -e "$TMP/w/power-axis-gpu.json" ] && fail "the example's own state file was used"
grep -Eq '"status":[[:space:]]*"ok"' "$TMP/r/whole.cap-default/0/cell.json" || fail "cell not ok"
finish
