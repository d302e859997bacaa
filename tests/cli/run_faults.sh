# SPDX-License-Identifier: Apache-2.0
# Faults NVIDIA returns, inside `run`: a GPU instance that cannot be created (INSUFFICIENT_RESOURCES,
# from the emulator and through the fake libnvidia-ml.so.1 as NVML code 23) or is IN_USE, and a
# compute instance that cannot be created. Each fails its cell with the reason, leaves no instance
# behind, and the next cell runs. (A failed creation used to crash migbench in job_json, exit 139.)
. "$MB_SOURCE_DIR/tests/cli/lib.sh"
FX="$MB_BINARY_DIR/fixtures"
FAKE="$MB_BINARY_DIR/tests/fake-nvml/libnvidia-ml.so.1"
[ -x "$FX/fx_steady" ] || { echo "FAIL: fixtures not built in $FX" >&2; exit 1; }

exp() { # exp DEVICE FILE
    cat >"$2" <<YAML
version: 1
name: faults
device: "$1"
workloads:
  a: {command: ["$FX/fx_steady", --rate, "20", --duration, "60"]}
runs:
  - {name: first, mode: mig, layout: [3g.40gb, 3g.40gb], jobs: [a, a]}
  - {name: second, mode: mig, layout: [1g.10gb], jobs: [a]}
measure: {warmup: 100ms, duration: 300ms, grace: 1s, progress_timeout: 10s, repetitions: 1}
YAML
}

check() { # check RESULTS REASON-ERE
    python3 - "$1" "$2" <<'PY' || fail "results in $1"
import json, re, sys
res, reason = sys.argv[1], sys.argv[2]
bad = []
c = json.load(open(f"{res}/first/0/cell.json"))
if c["status"] != "failed" or not re.search(reason, json.dumps(c["failure"])):
    bad.append(f"first: {c['status']} {c['failure']}")
if c["jobs"] != []:
    bad.append(f"first: jobs {c['jobs']}")
s = json.load(open(f"{res}/second/0/cell.json"))
if s["status"] != "ok":
    bad.append(f"second: {s['status']} {s.get('failure')}")
ev = [json.loads(l) for l in open(f"{res}/journal.jsonl")]
names = [e["event"] for e in ev]
if names.count("mig_created") != names.count("mig_destroyed"):
    bad.append("instances left behind")
if not any(e["event"] == "cell_failed" and re.search(reason, e.get("reason", "")) for e in ev):
    bad.append("no cell_failed with the reason")
if bad:
    print("\n".join(bad), file=sys.stderr)
    sys.exit(1)
PY
}

# The emulator: GPU-instance creation refused.
exp "emu:H100-80GB:mig=on:state=$TMP/e1.json:fail=create_gi:1:insufficient_resources" "$TMP/e1.yaml"
run 1 "$MIGBENCH" run "$TMP/e1.yaml" --results "$TMP/r1"
expect_err "cell failed: cannot create GPU instance 3g.40gb .*insufficient resources"
check "$TMP/r1" "insufficient resources"
run 0 "$MIGBENCH" mig show --device "emu:H100-80GB:mig=on:state=$TMP/e1.json"
expect_out 'no GPU instances'

# The emulator: compute-instance creation refused; the GPU instance made for it goes again.
exp "emu:H100-80GB:mig=on:state=$TMP/e2.json:fail=create_ci:1:insufficient_resources" "$TMP/e2.yaml"
run 1 "$MIGBENCH" run "$TMP/e2.yaml" --results "$TMP/r2"
check "$TMP/r2" "insufficient resources"
run 0 "$MIGBENCH" mig show --device "emu:H100-80GB:mig=on:state=$TMP/e2.json"
expect_out 'no GPU instances'

# Through NVML: INSUFFICIENT_RESOURCES (23) and IN_USE (19) with NVIDIA's own words.
if [ -r "$FAKE" ]; then
    exp "nvml:0" "$TMP/n.yaml"
    for code in "23:Insufficient Resources" "19:In use by another client"; do
        MIGBENCH_NVML_LIBRARY="$FAKE" MIGBENCH_FAKE_NVML_SPEC="H100-80GB:mig=on,state=$TMP/n${code%%:*}.json" \
            MIGBENCH_FAKE_NVML_FAIL="nvmlDeviceCreateGpuInstanceWithPlacement:1:${code%%:*}" \
            run 1 "$MIGBENCH" run "$TMP/n.yaml" --results "$TMP/rn${code%%:*}"
        check "$TMP/rn${code%%:*}" "NVML ${code%%:*}: ${code#*:}"
    done
else
    fail "fake NVML not built at $FAKE"
fi
finish
