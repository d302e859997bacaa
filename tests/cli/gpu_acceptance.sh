# SPDX-License-Identifier: Apache-2.0
# scripts/gpu-acceptance.sh in its fake mode: every check it can make runs against the fake
# libnvidia-ml.so.1 on an emulated H100, summary.json has the documented fields (docs/nvml.md),
# and a broken reading (the energy counter NOT_SUPPORTED) fails its check and the whole run.
. "$MB_SOURCE_DIR/tests/cli/lib.sh"
[ -r "$MB_BINARY_DIR/tests/fake-nvml/libnvidia-ml.so.1" ] || { echo "FAIL: fake NVML not built" >&2; exit 1; }
ACC="$MB_SOURCE_DIR/scripts/gpu-acceptance.sh"

run 0 "$ACC" "$TMP/a" --fake "$MB_BINARY_DIR" --migbench "$MIGBENCH"
expect_err 'PASSED in'
python3 - "$TMP/a" <<'PY' || fail "summary.json"
import json, os, sys
s = json.load(open(os.path.join(sys.argv[1], "summary.json")))
bad = []
for k in ("schema", "device_spec", "fake", "device", "started_unix", "seconds", "passed", "checks"):
    if k not in s:
        bad.append(f"no {k}")
st = {c["name"]: c["status"] for c in s["checks"]}
want = {"environment": "pass", "devices_vs_smi": "skip", "power_vs_energy": "pass",
        "three_processes": "pass", "runs": "pass", "monitor": "pass", "settings_unchanged": "pass"}
for k, v in want.items():
    if st.get(k) != v:
        bad.append(f"{k}: {st.get(k)}, expected {v}")
if "mps_stopped" not in st or not s["passed"] or not s["fake"]:
    bad.append(f"mps_stopped {st.get('mps_stopped')}, passed {s['passed']}, fake {s['fake']}")
for c in s["checks"]:
    if not os.path.exists(os.path.join(sys.argv[1], c["log"])):
        bad.append(f"no log {c['log']}")
if bad:
    print("\n".join(bad), file=sys.stderr)
    sys.exit(1)
PY

# The energy counter NOT_SUPPORTED (NVML 3, by both calls that read it): the power/energy check
# fails, and so does the whole check.
MIGBENCH_FAKE_NVML_FAIL='nvmlDeviceGetTotalEnergyConsumption:*:3,nvmlDeviceGetFieldValues:*:3' \
    run 1 "$ACC" "$TMP/b" --fake "$MB_BINARY_DIR" --migbench "$MIGBENCH"
expect_err 'power_vs_energy +fail'
expect_err 'FAILED in'
python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); sys.exit(s["passed"])' "$TMP/b/summary.json" ||
    fail "summary says passed"
run 2 "$ACC"
finish
