# SPDX-License-Identifier: Apache-2.0
# NVIDIA's real libnvidia-ml.so.1 (driver 535 in Debian 12), on a machine with no NVIDIA driver:
# every symbol the backend resolves exists in it, and migbench run against it fails cleanly for
# nvml:N and nvml:all (the driver message, no crash), while auto falls back to the host with a
# note that -v shows.
. "$MB_SOURCE_DIR/tests/nvidia/lib.sh"
[ -r "$NV_LIB" ] || nv_unavailable "no libnvidia-ml.so.1 under $NV_ROOT"
if [ -e /proc/driver/nvidia/version ]; then
    echo "SKIP: this machine has an NVIDIA driver; the no-driver checks need one without" >&2
    exit 77
fi

run 0 "$MB_BINARY_DIR/tests/nvidia/nvml_symbols" "$NV_LIB"
tail -1 "$TMP/out"
expect_out ' 0 missing$'
! grep -q '^MISSING' "$TMP/out" || fail "symbols missing: $(grep '^MISSING' "$TMP/out")"

export MIGBENCH_NVML_LIBRARY="$NV_LIB"
DRIVER='the NVIDIA driver is not loaded or does not match libnvidia-ml \(NVML 9: Driver Not Loaded\)'
run 1 "$MIGBENCH" devices --device nvml:0
expect_err "nvml:0: initialise NVML: $DRIVER"
run 1 "$MIGBENCH" devices --device nvml:all
expect_err "initialise NVML: $DRIVER"
run 1 "$MIGBENCH" mig show --device nvml:0
expect_err "$DRIVER"

# auto: the host, quietly by default, with NVML's reason under -v.
run 0 "$MIGBENCH" devices --device auto
expect_out 'backend +host'
! grep -q 'using the host' "$TMP/err" || fail "the note shows without -v"
run 0 "$MIGBENCH" -v devices --device auto
expect_out 'backend +host'
expect_err "no NVIDIA GPU through NVML, using the host: nvml:0: initialise NVML: $DRIVER"
run 0 "$MIGBENCH" -v devices
expect_err "using the host: .*Driver Not Loaded"
finish
