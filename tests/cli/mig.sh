# SPDX-License-Identifier: Apache-2.0
# migbench mig apply/show/clear on an emulated H100 whose state lives in a file.
. "$MB_SOURCE_DIR/tests/cli/lib.sh"
M="$MIGBENCH"
PY=/usr/bin/python3
D="emu:H100-80GB:mig=on,state=$TMP/gpu.json"
OWNED="$TMP/gpu.json.owned.json"

cat >"$TMP/cfg.yaml" <<'YAML'
version: v1
mig-configs:
  mixed:
    - devices: all
      mig-enabled: true
      mig-devices:
        "1g.10gb": 2
        "3g.40gb": 1
        "2g.20gb": 1
  big:
    - devices: all
      mig-enabled: true
      mig-devices:
        "4g.40gb": 1
        "3g.40gb": 1
  toomuch:
    - devices: all
      mig-enabled: true
      mig-devices:
        "4g.40gb": 2
  typo:
    - devices: all
      mig-enabled: true
      mig-devices:
        "3g.40gb": 1
        "2g.10gb": 1
  one3g:
    - devices: [0]
      mig-enabled: true
      mig-devices: {"3g.40gb": 1}
  more:
    - devices: [0]
      mig-enabled: true
      mig-devices: {"3g.40gb": 1, "2g.20gb": 1, "1g.10gb": 1}
  off:
    - devices: all
      mig-enabled: false
  elsewhere:
    - devices: [3]
      mig-enabled: true
      mig-devices: {"7g.80gb": 1}
  filtered:
    - device-filter: ["0x233010DE"]
      devices: all
      mig-enabled: true
YAML

# Snapshot of the instances (ids, profiles, placements) to prove "nothing changed".
snap() { "$M" mig show --device "$D" | grep -v '^# emu' >"$TMP/$1"; }

run 0 "$M" mig show --device "$D"
expect_out '^# emu 0 \(H100-SXM5-80GB, emulated\)'
expect_out 'no GPU instances'

run 2 "$M" mig apply "$TMP/cfg.yaml" --device "$D"
expect_err 'has 9 configs; choose one with -c \(mixed, big, toomuch'

run 0 "$M" mig apply "$TMP/cfg.yaml" -c mixed --device "$D"
expect_out '^created GPU instance [0-9]+ \(3g\.40gb at 4:4\) with compute instance'
expect_err "config 'mixed' applied and verified \(0 kept, 0 removed, 4 created\)"
[ -f "$OWNED" ] || fail "no ownership record at $OWNED"
run 0 "$M" mig show --device "$D"
expect_out '^# \[2g-+\]\[1g-\]\[1g-\]\[3g-+\]$'
[ "$(grep -c ' migbench  MIG-' "$TMP/out")" = 4 ] || fail "expected 4 instances owned by migbench"

# Round trip: show --yaml is a config that apply accepts and that changes nothing.
run 0 "$M" mig show --yaml --device "$D"
cp "$TMP/out" "$TMP/rt.yaml"
expect_out '^    - devices: \[0\]$'
expect_out '^        "1g\.10gb": 2$'
snap before
run 0 "$M" mig apply "$TMP/rt.yaml" --device "$D"
expect_err "config 'current' applied and verified \(4 kept, 0 removed, 0 created\)"
snap after
cmp -s "$TMP/before" "$TMP/after" || fail "round trip changed the GPU"

# A config that does not fit: clear message, exit 2, GPU unchanged.
run 2 "$M" mig apply "$TMP/cfg.yaml" -c toomuch --device "$D"
expect_err "config 'toomuch' does not fit on emu 0 .*nothing changed"
expect_err 'only one 4g\.40gb fits per GPU'
run 2 "$M" mig apply "$TMP/cfg.yaml" -c typo --device "$D"
expect_err "cfg\.yaml:26: field 'mig-devices': unknown profile '2g\.10gb' for H100-SXM5-80GB"
run 2 "$M" mig apply "$TMP/cfg.yaml" -c filtered --device "$D"
expect_err 'device-filter'
snap after
cmp -s "$TMP/before" "$TMP/after" || fail "a refused config changed the GPU"

# Dry run changes nothing.
run 0 "$M" mig apply "$TMP/cfg.yaml" -c big --device "$D" --dry-run
expect_out '^would create 4g\.40gb at 0:4 \(profile id 5\)$'
expect_out '^would keep 1 GPU instance$'
snap after
cmp -s "$TMP/before" "$TMP/after" || fail "--dry-run changed the GPU"

# A running process on an instance that would be removed: refused, nothing changed.
busy_gi=$(awk '$2 == "2g.20gb" {print $1}' "$TMP/before")
$PY - "$TMP/gpu.json" "$busy_gi" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
s["processes"].append({"pid": 4242, "gi": int(sys.argv[2]), "ci": 0, "mem_bytes": 1 << 20,
                       "name": "python"})
json.dump(s, open(sys.argv[1], "w"))
PY
run 1 "$M" mig apply "$TMP/cfg.yaml" -c big --device "$D"
expect_err "GPU instance $busy_gi \(2g\.20gb, memory slices 0-1\) has 1 running process \(pid 4242\)"
expect_err 'nothing changed'
run 1 "$M" mig clear --device "$D"
expect_err 'pid 4242'
snap after
cmp -s "$TMP/before" "$TMP/after" || fail "a busy GPU was changed"
# --force tries, the emulated driver refuses the busy one, the others go.
run 1 "$M" mig clear --device "$D" --force
expect_err 'in use by 1 process'
expect_err '1 GPU instance could not be removed'
$PY - "$TMP/gpu.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
s["processes"] = []
json.dump(s, open(sys.argv[1], "w"))
PY
run 0 "$M" mig clear --device "$D"
expect_out "^removed GPU instance $busy_gi \(2g\.20gb"
[ ! -f "$OWNED" ] || fail "the record should be gone once nothing of ours is left"

# clear --ours removes exactly what migbench made: make a 3g, disown it, then add around it.
run 0 "$M" mig apply "$TMP/cfg.yaml" -c one3g --device "$D"
mv "$OWNED" "$TMP/disowned.json"
run 0 "$M" mig apply "$TMP/cfg.yaml" -c more --device "$D"
expect_err '\(1 kept, 0 removed, 2 created\)'
run 0 "$M" mig show --device "$D"
[ "$(grep -c ' migbench  MIG-' "$TMP/out")" = 2 ] || fail "expected 2 instances of ours"
expect_out '^ +[0-9]+  3g\.40gb .* -  +MIG-'
run 0 "$M" mig clear --ours --device "$D"
[ "$(grep -c '^removed' "$TMP/out")" = 2 ] || fail "clear --ours should remove 2 instances"
run 0 "$M" mig show --device "$D"
expect_out '^ +[0-9]+  3g\.40gb '
if grep -q '2g\.20gb\|1g\.10gb' "$TMP/out"; then fail "clear --ours left ours behind"; fi
run 0 "$M" mig clear --device "$D"

# Configs for other devices, and MIG-off configs on a MIG GPU.
run 0 "$M" mig apply "$TMP/cfg.yaml" -c elsewhere --device "$D"
expect_err 'has no entry for device 0; left alone'
run 1 "$M" mig apply "$TMP/cfg.yaml" -c off --device "$D"
expect_err 'never changes MIG mode to off'

# MIG off: --enable-mig sets it pending and says a reset is needed; apply then still refuses.
D2="emu:A100-40GB:state=$TMP/gpu2.json"
cat >"$TMP/a.yaml" <<'YAML'
version: v1
mig-configs:
  half:
    - devices: [0]
      mig-enabled: true
      mig-devices: {"3g.20gb": 2}
YAML
run 1 "$M" mig apply "$TMP/a.yaml" --device "$D2"
expect_err 'MIG mode is disabled; rerun with --enable-mig'
run 1 "$M" mig apply "$TMP/a.yaml" --device "$D2" --enable-mig
expect_out 'now pending enable'
expect_err 'takes effect only after a GPU reset'
run 1 "$M" mig apply "$TMP/a.yaml" --device "$D2"
expect_err 'pending enable'
run 0 "$M" mig show --device "$D2"
expect_out 'MIG disabled \(pending enabled\)'

# Through the real nvml backend (the fake libnvidia-ml.so.1 on two emulated GPUs with state
# files): no --device means every NVIDIA GPU; the record goes to $MIGBENCH_STATE_DIR.
FAKE="$MB_BINARY_DIR/tests/fake-nvml/libnvidia-ml.so.1"
if [ -r "$FAKE" ]; then
    mkdir -p "$TMP/state"
    cat >"$TMP/two.yaml" <<'YAML'
version: v1
mig-configs:
  a:
    - devices: [0]
      mig-enabled: true
      mig-devices: {"3g.40gb": 2}
    - devices: [1]
      mig-enabled: true
      mig-devices: {"4g.20gb": 1, "2g.10gb": 1}
YAML
    (
        export MIGBENCH_NVML_LIBRARY="$FAKE" MIGBENCH_STATE_DIR="$TMP/state"
        export MIGBENCH_FAKE_NVML_SPEC="H100-80GB:mig=on,state=$TMP/nv0.json;A100-40GB:mig=on,index=1,state=$TMP/nv1.json"
        run 0 "$M" mig apply "$TMP/two.yaml"
        expect_err "nvml 0 \(H100-SXM5-80GB\): config 'a' applied and verified"
        expect_err "nvml 1 \(A100-SXM4-40GB\): config 'a' applied and verified"
        [ "$(ls "$TMP/state" | grep -c '^owned-GPU-.*\.json$')" = 2 ] || fail "expected 2 records"
        run 0 "$M" mig show --yaml
        expect_out '^        "4g\.20gb": 1$'
        run 0 "$M" mig clear --ours
        [ "$(grep -c '^removed' "$TMP/out")" = 4 ] || fail "expected 4 removals through nvml"
        [ -z "$(ls "$TMP/state")" ] || fail "records should be gone"
        # An unwritable record directory stops apply before anything changes.
        export MIGBENCH_STATE_DIR="$TMP/no/such/dir"
        run 1 "$M" mig apply "$TMP/two.yaml"
        expect_err 'cannot write the record of instances migbench makes .*nothing changed'
        run 0 "$M" mig show
        [ "$(grep -c 'no GPU instances' "$TMP/out")" = 2 ] || fail "a GPU changed without a record"
        finish >/dev/null
    ) || fail "mig through the nvml backend"
else
    fail "fake NVML not built at $FAKE"
fi

# Bad input.
printf 'version: v1\nmig-configs:\n  a: [\n' >"$TMP/broken.yaml"
run 2 "$M" mig apply "$TMP/broken.yaml" --device "$D"
expect_err 'broken\.yaml:[0-9]+:[0-9]+: not valid YAML'
run 2 "$M" mig apply "$TMP/nope.yaml" --device "$D"
expect_err 'nope\.yaml: cannot open'
run 2 "$M" mig apply "$TMP/cfg.yaml" -c nosuch --device "$D"
expect_err "no config named 'nosuch'"
run 2 "$M" mig apply "$TMP/cfg.yaml" -c mixed --device "emu:NoSuchGPU"
expect_err 'unknown GPU model'
run 2 "$M" mig
expect_err 'expected apply, show or clear'
run 2 "$M" mig frobnicate
expect_err "unknown subcommand 'frobnicate'"
run 2 "$M" mig apply --device "$D"
expect_err 'apply takes one FILE\.yaml'
run 2 "$M" mig show --ours --device "$D"
run 2 "$M" mig clear --bogus
expect_err "unknown option '--bogus'"
run 2 "$M" mig apply "$TMP/cfg.yaml" -c
expect_err "needs a value"
run 0 "$M" mig --help
expect_out 'usage: migbench mig apply'

finish
