# SPDX-License-Identifier: Apache-2.0
# NVIDIA's nvml.h as the oracle: abi_check compares every struct size, field offset and constant
# of src/device/nvml_types.h with NVIDIA's (and the compiler compared every function type of
# MB_NVML_SYMBOLS with NVIDIA's prototypes while building it); then the nvml unit tests run
# against the fake libnvidia-ml.so.1 built from NVIDIA's header, which writes NVIDIA's layouts
# (a struct we restate wrongly, such as a 32-byte nvmlProcessInfo_t, garbles what they read).
. "$MB_SOURCE_DIR/tests/nvidia/lib.sh"
[ -r "$NV_ROOT/usr/include/nvml.h" ] || nv_unavailable "no nvml.h under $NV_ROOT"
[ "${MB_NVIDIA_HEADER_BUILD:-OFF}" = ON ] ||
    nv_unavailable "the build was configured without NVIDIA's header (reconfigure with MB_NVIDIA_DIR)"
CHECK="$MB_BINARY_DIR/tests/nvidia/nvml_abi_check"
VFAKE="$MB_BINARY_DIR/tests/fake-nvml/vendor/libnvidia-ml.so.1"
[ -x "$CHECK" ] || { echo "FAIL: $CHECK not built" >&2; exit 1; }
[ -r "$VFAKE" ] || { echo "FAIL: $VFAKE not built" >&2; exit 1; }

run 0 "$CHECK"
cat "$TMP/out"
expect_out 'entries compared, [0-9]+ skipped, all agree'
! grep -q MISMATCH "$TMP/out" || fail "abi_check printed a mismatch"

# The backend against the fake built from NVIDIA's header: every unit test of the nvml backend.
MB_FAKE_NVML="$VFAKE" run 0 "$MB_BINARY_DIR/tests/test_nvml"
tail -3 "$TMP/out"
finish
