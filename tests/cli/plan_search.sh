# SPDX-License-Identifier: Apache-2.0
# plan's fleet search (issue 29): a fleet the old heuristic called infeasible, infeasibility that
# names its proof, the same answer for the same seed and threads, the makespan objective never
# longer than the energy objective's plan, --power-limits all with more than 16 limits, every
# failed limit named, and a GPU whose modelled power exceeds its limit flagged.
. "$MB_SOURCE_DIR/tests/cli/lib.sh"
D="$MB_SOURCE_DIR/tests/cli/plan-data"

# Two A100s hold the four jobs (one 7g.80gb or full GPU, one with 3g/4g instances).
run 0 "$MIGBENCH" plan --jobs "$D/issue29-a100.yaml" --profiles "$D/issue29-a100.csv" --json
/usr/bin/python3 - "$TMP/out" <<'PY' || fail "A100 plan"
import json, sys
p = json.load(open(sys.argv[1]))
assert p["count"] == 2 and len(p["jobs"]) == 4, p["count"]
assert {j["gpu"] for j in p["jobs"]} == {0, 1}, p["jobs"]
PY
# One A100 cannot: the message says why, naming the jobs no layout holds together.
run 1 "$MIGBENCH" plan --jobs "$D/issue29-a100.yaml" --profiles "$D/issue29-a100.csv" --count 1
expect_err "no 1 GPU of A100-SXM4-80GB can run every job"
expect_err "'j3' \(7g\.80gb, full\)"
expect_err "'j5' \(3g\.40gb, 7g\.80gb\)"

# A random fleet: the same seed and thread count give the same plan; the makespan objective's
# plan is never longer than the energy objective's.
/usr/bin/python3 - "$TMP" <<'PY'
import random, sys
r = random.Random(29)
sizes = [("1g.10gb", 1), ("2g.20gb", 2), ("3g.40gb", 3), ("4g.40gb", 4), ("7g.80gb", 7), ("full", 7)]
with open(f"{sys.argv[1]}/p.csv", "w") as f:
    f.write("workload,gpu,partition,throughput,unit,power_w,idle_power_w,peak_mem_mib,source,proxy\n")
    for w in range(5):
        base, a, dyn = r.uniform(100, 1000), r.uniform(0.3, 1), r.uniform(150, 500)
        for name, cs in sizes:
            f.write(f"w{w},H100-80GB,{name},{base * (cs / 7) ** a:.4f},u,{70 + dyn * (cs / 7) ** 0.6:.2f},70,,t,false\n")
with open(f"{sys.argv[1]}/j.yaml", "w") as f:
    f.write("gpu: H100-80GB\ncount: 6\njobs:\n")
    for j in range(60):
        f.write(f"  - {{name: j{j}, workload: w{r.randrange(5)}, work: {r.uniform(2e4, 2e5):.0f}}}\n")
PY
for obj in energy makespan; do
    for k in 1 2; do
        run 0 "$MIGBENCH" plan --jobs "$TMP/j.yaml" --profiles "$TMP/p.csv" --objective $obj \
            --threads 2 --seed 7 --time-limit 600 --json
        cp "$TMP/out" "$TMP/$obj-$k.json"
    done
done
/usr/bin/python3 - "$TMP" <<'PY' || fail "fleet search"
import json, sys
d = sys.argv[1]
def load(n):
    p = json.load(open(f"{d}/{n}.json"))
    assert p["search"]["stopped"] == "converged" and p["search"]["threads"] == 2, p["search"]
    del p["search"]["seconds"]
    return p
for obj in ("energy", "makespan"):
    assert load(f"{obj}-1") == load(f"{obj}-2"), f"{obj}: two runs differ"
e, m = load("energy-1"), load("makespan-1")
assert m["predicted"]["makespan_s"] <= e["predicted"]["makespan_s"] * (1 + 1e-9), (m, e)
for p in (e, m):
    assert p["bound"]["makespan_s"] <= p["predicted"]["makespan_s"] * (1 + 1e-9)
    assert p["bound"]["energy_j"] <= p["predicted"]["energy_j"] * (1 + 1e-9)
PY

# --power-limits all: every one of 17 limits is tried (it kept 16), and when every limit fails
# the message names each of them.
/usr/bin/python3 - "$TMP" <<'PY'
import sys
d = sys.argv[1]
with open(f"{d}/caps.csv", "w") as f:
    f.write("workload,gpu,partition,throughput,unit,power_w,idle_power_w,peak_mem_mib,source,proxy,power_limit_w\n")
    f.write("w,H100-80GB,full,1000,u,500,70,,t,false,\n")
    f.write("w,H100-80GB,1g.10gb,300,u,160,70,,t,false,\n")
    for k in range(17):
        cap = 200 + 10 * k
        f.write(f"w,H100-80GB,full,{1000 * cap / 700:.3f},u,{cap - 5},70,,t,false,{cap}\n")
        f.write(f"w,H100-80GB,1g.10gb,{300 * (0.8 + cap / 2000):.3f},u,150,70,,t,false,{cap}\n")
with open(f"{d}/caps.yaml", "w") as f:
    f.write("gpu: H100-80GB\njobs:\n  - {name: a, workload: w, work: 1e6, replicas: 7}\n")
with open(f"{d}/late.yaml", "w") as f:
    f.write("gpu: H100-80GB\njobs:\n  - {name: a, workload: w, work: 1e6, deadline: 1s}\n")
PY
run 0 "$MIGBENCH" plan --jobs "$TMP/caps.yaml" --profiles "$TMP/caps.csv" --power-limits all --json
/usr/bin/python3 - "$TMP/out" <<'PY' || fail "power limits all"
import json, sys
p = json.load(open(sys.argv[1]))
caps = [x["power_limit_w"] for x in p["power_limits"]]
assert len(caps) == 18 and None in caps and 360 in caps, caps
PY
run 1 "$MIGBENCH" plan --jobs "$TMP/late.yaml" --profiles "$TMP/caps.csv" --power-limits all
expect_err "no power limit gives a plan: default, 200 W, 210 W, .*, 350 W, 360 W: "

# Seven 1g jobs at once under a 200 W limit: the model's peak (70 W + 7 x 80 W) is over it.
run 0 "$MIGBENCH" plan --jobs "$TMP/caps.yaml" --profiles "$TMP/caps.csv" --power-limits 200W \
    --no-full --json
/usr/bin/python3 - "$TMP/out" <<'PY' || fail "over limit"
import json, sys
p = json.load(open(sys.argv[1]))
g = p["gpus"][0]
assert g["power_limit_w"] == 200 and g["over_limit"] is True, g
assert abs(g["peak_power_w"] - (70 + 7 * 80)) < 1e-6, g
assert p["over_limit_gpus"] == 1
PY
expect_err "GPU 0: the model's peak power 630 W .* exceeds its 200 W limit"
finish
