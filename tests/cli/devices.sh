# SPDX-License-Identifier: Apache-2.0
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

# A layout in a state file: instances with MIG UUIDs and the process on them.
cat >"$TMP/h100.json" <<'JSON'
{"version": 1, "model": "H100-SXM5-80GB", "mig_current": 1, "mig_pending": 1,
 "gpu_instances": [{"id": 2, "profile_id": 9, "start": 4, "size": 4,
                    "compute_instances": [{"id": 0, "profile_id": 2, "start": 0, "slices": 3}]},
                   {"id": 7, "profile_id": 19, "start": 0, "size": 1, "compute_instances": []}],
 "processes": [{"pid": 4242, "gi": 2, "ci": 0, "mem_bytes": 1073741824, "name": "python3"}]}
JSON
run 0 "$MIGBENCH" devices --device "emu:H100-80GB:state=$TMP/h100.json" --json
$PY - "$TMP/out" <<'PYEOF' || fail "state-file layout in JSON"
import json, sys
d = json.load(open(sys.argv[1]))["devices"][0]
inst = d["mig_instances"]
assert [(i["gi_id"], i["ci_id"]) for i in inst] == [(2, 0), (7, None)], inst
assert inst[0]["uuid"].startswith("MIG-") and inst[1]["uuid"] is None
assert (inst[0]["placement_start"], inst[0]["placement_size"]) == (4, 4)
assert inst[0]["mem_used_bytes"] == 1073741824
p = d["processes"][0]
assert (p["pid"], p["gi_id"], p["ci_id"], p["name"]) == (4242, 2, 0, "python3")
free = {x["name"]: x["remaining"] for x in d["mig_profiles"]}
assert free["3g.40gb"] == 0 and free["1g.10gb"] == 3 and free["7g.80gb"] == 0, free
# 3 of 7 compute slices have a process: the automatic load raises power above idle.
assert d["telemetry"]["power_mw"] > 70000
PYEOF
run 0 "$MIGBENCH" devices --device "emu:H100-80GB:state=$TMP/h100.json"
expect_out 'GI 2 +CI 0 +3g\.40gb +placement 4:4 +MIG-'
expect_out 'pid 4242 python3, GI 2 CI 0'

# A state file that describes an impossible GPU is bad input, and it is left as it was.
cp "$TMP/h100.json" "$TMP/bad.json"
sed -i 's/"start": 0, "size": 1/"start": 6, "size": 1/' "$TMP/bad.json"
cp "$TMP/bad.json" "$TMP/bad.orig"
run 2 "$MIGBENCH" devices --device "emu:H100-80GB:state=$TMP/bad.json"
expect_err 'bad\.json: gpu_instances: GIs 2 and .* overlap'
cmp -s "$TMP/bad.json" "$TMP/bad.orig" || fail "a bad state file was changed"

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

# The documented --json shape (docs/devices.md) is what devices --json prints: same keys, nested
# the same way, on an emulated H100 with MIG instances (processes: none run here, so that list's
# entries are compared only when there are some). The host names its utilisation util_cpu_pct.
export MIGBENCH_STATE_DIR="$TMP/state-doc"
run 0 "$MIGBENCH" mig apply "$MB_SOURCE_DIR/examples/mig/mix.yaml" -c mix-3-2-1 \
    --device "emu:H100-80GB:mig=on:state=$TMP/doc-gpu.json"
run 0 "$MIGBENCH" devices --device "emu:H100-80GB:mig=on:state=$TMP/doc-gpu.json" --json
cp "$TMP/out" "$TMP/emu.json"
run 0 "$MIGBENCH" devices --device host --json
cp "$TMP/out" "$TMP/host.json"
python3 - "$MB_SOURCE_DIR/docs/devices.md" "$TMP/emu.json" "$TMP/host.json" <<'PY' || fail "docs/devices.md's JSON shape"
import json, re, sys
doc = json.loads(re.search(r'```json\n(\{\n  "devices".*?\n\})\n```', open(sys.argv[1]).read(), re.S).group(1))
real = json.load(open(sys.argv[2]))
host = json.load(open(sys.argv[3]))
def keys(o, p=""):
    out = set()
    if isinstance(o, dict):
        for k, v in o.items():
            out |= {p + "/" + k} | keys(v, p + "/" + k)
    elif isinstance(o, list) and o:
        out |= keys(o[0], p + "[]")
    return out
d, r = keys(doc), keys(real)
if not real["devices"][0]["processes"]:
    d = {k for k in d if not k.startswith("/devices[]/processes[]")}
bad = sorted(d ^ r)
t = host["devices"][0]["telemetry"]
if "util_gpu_pct" in t or "util_cpu_pct" not in t:
    bad.append("host telemetry: %s" % sorted(t))
if bad:
    print("differs:", bad, file=sys.stderr)
    sys.exit(1)
PY
run 0 "$MIGBENCH" devices --device host
expect_out '^ +CPU utilisation (n/a|[0-9]+%)'
! grep -q '^ *utilisation' "$TMP/out" || fail "host devices: a GPU utilisation line"

# Several GPUs in one spec: each shown, with its own index and UUID.
run 0 "$MIGBENCH" devices --device emu:H100-80GB:count=3,index=2 --json
$PY - "$TMP/out" <<'PYEOF' || fail "emu count=3: three devices"
import json, sys
d = json.load(open(sys.argv[1]))["devices"]
assert [x["index"] for x in d] == [2, 3, 4], [x["index"] for x in d]
assert len({x["uuid"] for x in d}) == 3
PYEOF
run 2 "$MIGBENCH" devices --device emu:H100-80GB:count=0
expect_err "count=0: expected 1..64"

# An NVML library named in MIGBENCH_NVML_LIBRARY that does not exist is an error naming it, not
# a silent fallback to the host.
run 1 env MIGBENCH_NVML_LIBRARY="$TMP/no-such/libnvidia-ml.so.1" "$MIGBENCH" devices
expect_err "cannot load $TMP/no-such/libnvidia-ml.so.1 \(from MIGBENCH_NVML_LIBRARY\)"
expect_no_out
run 0 env -u MIGBENCH_NVML_LIBRARY "$MIGBENCH" devices --device host
finish
