# SPDX-License-Identifier: Apache-2.0
# `migbench devices` through the real nvml backend, loaded from the fake libnvidia-ml.so.1 that
# tests/fake-nvml builds on the emulator.
. "$MB_SOURCE_DIR/tests/cli/lib.sh"
PY=/usr/bin/python3
FAKE="$MB_BINARY_DIR/tests/fake-nvml/libnvidia-ml.so.1"
LEGACY="$MB_BINARY_DIR/tests/fake-nvml/legacy/libnvidia-ml.so.1"
[ -r "$FAKE" ] && [ -r "$LEGACY" ] || { echo "FAIL: fake NVML not built at $FAKE" >&2; exit 1; }
export MIGBENCH_NVML_LIBRARY="$FAKE"
export MIGBENCH_FAKE_NVML_SPEC="H100-80GB:mig=on"

# auto picks the NVIDIA GPU when NVML loads.
run 0 "$MIGBENCH" devices
expect_out 'NVIDIA H100 80GB HBM3'
expect_out 'backend +nvml'
expect_out 'H100-SXM5-80GB'
expect_out '1g\.10gb +19 +0 '
expect_out '1g\.20gb +15 +9 '

run 0 "$MIGBENCH" devices --device nvml:0 --json
$PY - "$TMP/out" <<'PYEOF' || fail "JSON check"
import json, sys
d = json.load(open(sys.argv[1]))["devices"][0]
assert d["backend"] == "nvml", d["backend"]
assert d["model"] == "H100-SXM5-80GB"
assert d["uuid"].startswith("GPU-")
assert d["sensor"]["power_kind"] == "averaged"
assert d["sensor"]["has_instant"] is True
# MIG on: NVML has no utilisation, which must be null, never 0.
assert d["telemetry"]["util_gpu_pct"] is None
ids = {p["name"]: p["driver_id"] for p in d["mig_profiles"]}
assert ids["1g.10gb"] == 19 and ids["7g.80gb"] == 0 and ids["3g.40gb"] == 9, ids
PYEOF

# Two GPUs, one by UUID.
export MIGBENCH_FAKE_NVML_SPEC="H100-80GB:mig=on;A100-40GB"
run 0 "$MIGBENCH" devices --json
uuid=$($PY -c 'import json,sys; d=json.load(open(sys.argv[1]))["devices"]; assert len(d)==2, d; print(d[1]["uuid"])' "$TMP/out") || fail "two GPUs expected"
run 0 "$MIGBENCH" devices --device "nvml:$uuid"
expect_out 'A100'
expect_out 'power instant'
# nvml:all and a list name every GPU the driver reports, in the order given.
run 0 "$MIGBENCH" devices --device nvml:all --json
$PY -c 'import json,sys; d=json.load(open(sys.argv[1]))["devices"]; assert [x["index"] for x in d]==[0,1], d' "$TMP/out" || fail "nvml:all: two GPUs expected"
run 0 "$MIGBENCH" devices --device nvml:1,0 --json
$PY -c 'import json,sys; d=json.load(open(sys.argv[1]))["devices"]; assert [x["index"] for x in d]==[1,0], d' "$TMP/out" || fail "nvml:1,0: two GPUs expected"
run 2 "$MIGBENCH" devices --device nvml:0,0
expect_err 'named twice'

# An old driver (the legacy fake): fallbacks, and no separate instant/averaged readings.
export MIGBENCH_NVML_LIBRARY="$LEGACY" MIGBENCH_FAKE_NVML_SPEC="H100-80GB:mig=on"
run 0 "$MIGBENCH" devices --device nvml:0 --json
$PY - "$TMP/out" <<'PYEOF' || fail "legacy JSON check"
import json, sys
d = json.load(open(sys.argv[1]))["devices"][0]
assert d["backend"] == "nvml"
assert d["sensor"]["has_instant"] is False and d["sensor"]["has_average"] is False
assert d["telemetry"]["power_instant_mw"] is None
assert d["telemetry"]["power_mw"] is not None
assert len(d["mig_profiles"]) == 7
PYEOF

# Errors name the problem; nothing on stdout.
export MIGBENCH_NVML_LIBRARY="$FAKE"
run 2 "$MIGBENCH" devices --device nvml:7
expect_err 'nvml:7: no such GPU'
expect_no_out
MIGBENCH_FAKE_NVML_INIT_FAIL=4 run 1 "$MIGBENCH" devices --device nvml:0
expect_err 'run as root or grant the mig/config capability'
MIGBENCH_NVML_LIBRARY=/nonexistent/libnvidia-ml.so.1 run 1 "$MIGBENCH" devices --device nvml:0
expect_err 'cannot load /nonexistent/libnvidia-ml.so.1'

# A library named in MIGBENCH_NVML_LIBRARY that does not load is an error, also for auto (issue
# 28: it used to show the host silently); without the variable and without a driver, auto falls
# back to the host.
MIGBENCH_NVML_LIBRARY=/nonexistent/libnvidia-ml.so.1 run 1 "$MIGBENCH" devices
expect_err 'cannot load /nonexistent/libnvidia-ml.so.1 \(from MIGBENCH_NVML_LIBRARY\)'
expect_no_out
if ! ldconfig -p 2>/dev/null | grep -q 'libnvidia-ml\.so\.1'; then
    run 0 env -u MIGBENCH_NVML_LIBRARY "$MIGBENCH" devices
    expect_out 'backend +host'
fi

finish
