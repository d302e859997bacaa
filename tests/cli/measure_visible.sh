# SPDX-License-Identifier: Apache-2.0
# `migbench measure` inside a scheduler's job: CUDA_VISIBLE_DEVICES=MIG-<uuid> (or the legacy
# MIG-GPU-<uuid>/<gi>/<ci>) names the parent GPU and the instance, on emu and on nvml (the fake).
. "$MB_SOURCE_DIR/tests/cli/lib.sh"
M="$MIGBENCH"
PY=/usr/bin/python3
D="emu:H100-80GB:mig=on,state=$TMP/gpu.json"
cat >"$TMP/cfg.yaml" <<'YAML'
version: v1
mig-configs:
  two:
    - devices: all
      mig-enabled: true
      mig-devices:
        "3g.40gb": 1
        "1g.10gb": 1
YAML
run 0 "$M" mig apply "$TMP/cfg.yaml" --device "$D"
run 0 "$M" mig show --device "$D"
uuid_of() { awk -v p="$1" '$0 ~ p { for (i = 1; i <= NF; i++) if ($i ~ /^MIG-/) print $i }' "$TMP/out"; }
U3=$(uuid_of ' 3g\.40gb ')
U1=$(uuid_of ' 1g\.10gb ')
[ -n "$U3" ] && [ -n "$U1" ] || fail "no MIG UUIDs in: $(cat "$TMP/out")"

# check_visible PROFILE UUID: the last run's JSON names this instance and a GPU UUID.
check_visible() {
    $PY - "$TMP/out" "$1" "$2" <<'PYEOF' || fail "visible check ($1)"
import json, sys
d = json.load(open(sys.argv[1]))
v = d["visible"]
assert v is not None, d
assert v["gpu_uuid"] == d["device"]["uuid"], v
assert v["energy_scope"] == "whole GPU", v
m = v["mig_instance"]
assert m["profile"] == sys.argv[2], m
assert m["uuid"] == sys.argv[3], m
PYEOF
}

CUDA_VISIBLE_DEVICES="$U1" run 0 "$M" measure --json --device "$D" -- true
check_visible 1g.10gb "$U1"
CUDA_VISIBLE_DEVICES="$U3,$U1" run 0 "$M" measure --device "$D" -- true
expect_err 'instance +MIG 3g\.40gb \(GI [0-9]+, CI 0\) MIG-'

# The legacy form: MIG-GPU-<uuid>/<gi>/<ci>.
run 0 "$M" measure --json --device "$D" -- true
GPU=$($PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["device"]["uuid"])' "$TMP/out")
$PY -c 'import json,sys; assert json.load(open(sys.argv[1]))["visible"] is None' "$TMP/out" ||
    fail "visible should be null without CUDA_VISIBLE_DEVICES"
GI3=$(awk '/ 3g\.40gb /{print $1; exit}' <("$M" mig show --device "$D"))
CUDA_VISIBLE_DEVICES="MIG-$GPU/$GI3/0" run 0 "$M" measure --json --device "$D" -- true
check_visible 3g.40gb "$U3"

# A UUID that is not this GPU's: refused before CMD runs, never metered as another GPU.
CUDA_VISIBLE_DEVICES=MIG-00000000-0000-0000-0000-000000000000 run 2 "$M" measure --device "$D" \
    -- touch "$TMP/ran"
expect_err 'CUDA_VISIBLE_DEVICES=MIG-00000000-0000-0000-0000-000000000000: no GPU or MIG instance'
[ ! -e "$TMP/ran" ] || fail "CMD ran although the device could not be resolved"

# nvml through the fake library: the instance lives on the second GPU; auto opens GPU 0 and
# the resolution moves the meter to the parent.
FAKE="$MB_BINARY_DIR/tests/fake-nvml/libnvidia-ml.so.1"
export MIGBENCH_NVML_LIBRARY="$FAKE"
export MIGBENCH_FAKE_NVML_SPEC="A100-40GB:mig=on;H100-80GB:mig=on,index=1,state=$TMP/gpu1.json"
run 0 "$M" mig apply "$TMP/cfg.yaml" --device nvml:1
run 0 "$M" mig show --device nvml:1
N3=$(uuid_of ' 3g\.40gb ')
[ -n "$N3" ] || fail "no MIG UUID on nvml:1"
CUDA_VISIBLE_DEVICES="$N3" run 0 "$M" measure --json -- true
check_visible 3g.40gb "$N3"
$PY -c 'import json,sys; d=json.load(open(sys.argv[1]))["device"]; assert d["spec"].startswith("nvml:GPU-") and d["name"].startswith("NVIDIA H100"), d' "$TMP/out" ||
    fail "meter did not move to the parent GPU"
exit "$FAILS"
