# SPDX-License-Identifier: Apache-2.0
# plan --power-limits on a fleet chooses a limit per GPU (issue 29): two GPUs, jobs that barely
# slow under 280 W together on one GPU at 280 W, jobs that need the default on the other. The text
# names each GPU's limit, --json has per-GPU limits and a null shared one, --emit-experiment gives
# each run its GPU's limit (and the runner takes it), and the fleet scripts refuse clearly.
. "$MB_SOURCE_DIR/tests/cli/lib.sh"

cat >"$TMP/p.csv" <<'EOF'
workload,gpu,partition,throughput,unit,power_w,idle_power_w,peak_mem_mib,source,proxy,power_limit_w
lite,H100-80GB,full,1.0,steps,400,70,,t,false,
lite,H100-80GB,full,0.97,steps,250,70,,t,false,280
heavy,H100-80GB,full,1.0,steps,650,70,,t,false,
heavy,H100-80GB,full,0.5,steps,280,70,,t,false,280
EOF
cat >"$TMP/jobs.yaml" <<'EOF'
gpu: H100-80GB
count: 2
workloads:
  lite: {command: [python3, lite.py]}
  heavy: {command: [python3, heavy.py]}
jobs:
  - {name: h, workload: heavy, work: 100, replicas: 2}
  - {name: l, workload: lite, work: 50, replicas: 4}
EOF

run 0 "$MIGBENCH" plan --jobs "$TMP/jobs.yaml" --profiles "$TMP/p.csv" --power-limits default,280W \
    --makespan-cap 210
expect_out '^GPU [01]: MIG off \(whole GPU\), default power limit$'
expect_out '^GPU [01]: MIG off \(whole GPU\), power limit 280 W$'
expect_out '^  per GPU .* <- chosen'
if grep -Eq '^  default .* <- chosen' "$TMP/out"; then fail "no shared limit is chosen"; fi

run 0 "$MIGBENCH" plan --jobs "$TMP/jobs.yaml" --profiles "$TMP/p.csv" --power-limits default,280W \
    --makespan-cap 210 --json --emit-experiment "$TMP/exp.yaml"
/usr/bin/python3 - "$TMP/out" <<'PY' || fail "per-GPU json"
import json, sys
p = json.load(open(sys.argv[1]))
assert p["power_limit_w"] is None, p["power_limit_w"]
lims = sorted(str(g["power_limit_w"]) for g in p["gpus"])
assert lims == ["280", "None"] or lims == ["280.0", "None"], lims
by_gpu = {g["gpu"] if "gpu" in g else i: g["power_limit_w"] for i, g in enumerate(p["gpus"])}
for j in p["jobs"]:
    want = 280 if j["name"].startswith("l") else None
    assert by_gpu[j["gpu"]] == want, (j, by_gpu)
shared = [x for x in p["power_limits"] if x["status"] == "ok"]
assert all(p["predicted"]["energy_j"] < x["energy_j"] for x in shared), shared
assert p["bound"]["energy_j"] <= p["predicted"]["energy_j"] * (1 + 1e-9)
PY
grep -q 'power_limits: \[280W\]}' "$TMP/exp.yaml" || fail "the 280 W GPU's runs carry it"
grep -q 'power_limits: \[default\]}' "$TMP/exp.yaml" || fail "the default GPU's runs carry it"
if grep -q '^power_limits:' "$TMP/exp.yaml"; then fail "no experiment-wide limit"; fi
run 0 "$MIGBENCH" run --dry-run --device emu:H100-80GB "$TMP/exp.yaml"
expect_out 'g[01]-r1\.cap-280W'
expect_out 'g[01]-r1\.cap-default'

# One limit per node is all a fleet script sets: refused, naming why.
run 2 "$MIGBENCH" plan --jobs "$TMP/jobs.yaml" --profiles "$TMP/p.csv" --power-limits default,280W \
    --makespan-cap 210 --emit-slurm "$TMP/slurm" --nodes n1
expect_err "different power limits"
finish
