# migbench devices: the host, an emulated MIG GPU (text and JSON), a shared state file, bad specs.
. "$MB_SOURCE_DIR/tests/cli/lib.sh"
PY=/usr/bin/python3

run 0 "$MIGBENCH" devices --help
expect_out 'usage: migbench devices'

# Without --device: NVIDIA GPUs if NVML has any, else the host; never an emulated device.
run 0 "$MIGBENCH" devices
expect_out '^device 0: '
if grep -q EMULATED "$TMP/out"; then fail "auto listed an emulated device"; fi

run 0 "$MIGBENCH" devices --device host --json
$PY -m json.tool "$TMP/out" >/dev/null || fail "host --json is not JSON"
$PY - "$TMP/out" <<'PYEOF' || fail "host JSON fields"
import json, sys
d = json.load(open(sys.argv[1]))["devices"][0]
assert d["backend"] == "host" and d["emulated"] is False, d
assert d["cpu_count"] >= 1
# A CPU has no MIG and no SM clock: null, never 0.
assert d["mig_mode"] is None and d["telemetry"]["clock_sm_mhz"] is None
if not d["sensor"]["has_energy_counter"]:
    assert d["telemetry"]["energy_mj"] is None and d["telemetry"]["power_mw"] is None
PYEOF

run 0 "$MIGBENCH" devices --device emu:H100-80GB:mig=on
expect_out 'EMULATED'
expect_out 'backend +emu'
expect_out '1g\.10gb +19 '
expect_out 'MIG mode +enabled'

run 0 "$MIGBENCH" devices --device emu:H100-80GB:mig=on --json
$PY -m json.tool "$TMP/out" >/dev/null || fail "emu --json is not JSON"
$PY - "$TMP/out" <<'PYEOF' || fail "emu JSON fields"
import json, sys
d = json.load(open(sys.argv[1]))["devices"][0]
assert d["backend"] == "emu" and d["emulated"] is True
assert d["model"] == "H100-SXM5-80GB" and d["uuid"].startswith("GPU-")
assert d["mig_mode"] == {"current": True, "pending": True}
assert d["sensor"]["power_kind"] == "averaged" and d["sensor"]["power_update_period_ms"] == 100
assert "emulated" in d["sensor"]["source"]
names = [p["name"] for p in d["mig_profiles"]]
assert "7g.80gb" in names and "1g.10gb" in names, names
assert all(p["remaining"] == p["max_count"] or p["name"].endswith("+me") for p in d["mig_profiles"])
assert d["mig_instances"] == [] and d["processes"] == []
# MIG enabled: utilisation is unsupported (null), power is there.
assert d["telemetry"]["util_gpu_pct"] is None and d["telemetry"]["power_mw"] > 0
PYEOF

# MIG disabled by default, and the pending state is shown.
run 0 "$MIGBENCH" devices --device emu:A100-40GB
expect_out 'MIG mode +disabled'
expect_out 'MIG profiles +n/a'

# Two devices in one call; the state file lets separate processes see the same GPU.
run 0 "$MIGBENCH" devices --device emu:A30:mig=on:state=$TMP/gpu.json --device emu:H100-80GB --json
$PY -c 'import json,sys; d=json.load(open(sys.argv[1]))["devices"]; assert len(d)==2' "$TMP/out" \
    || fail "two devices expected"
[ -s "$TMP/gpu.json" ] || fail "state file not written"
$PY -m json.tool "$TMP/gpu.json" >/dev/null || fail "state file is not JSON"

# Bad specs and options: exit 2 with a message naming the problem, nothing on stdout.
run 2 "$MIGBENCH" devices --device bogus:1
expect_err "migbench: devices: .*unknown backend 'bogus'"
expect_no_out
run 2 "$MIGBENCH" devices --device emu:NoSuchGPU
expect_err 'NoSuchGPU'
expect_no_out
run 2 "$MIGBENCH" devices --device emu:H100-80GB:frob=1
expect_err "unknown emu option 'frob'"
run 2 "$MIGBENCH" devices --device host:powercap
expect_err 'key=value'
run 2 "$MIGBENCH" devices --device
expect_err 'needs an argument'
run 2 "$MIGBENCH" devices --frobnicate
expect_err "unknown option '--frobnicate'"
run 2 "$MIGBENCH" devices extra
expect_err "unexpected argument 'extra'"

finish
