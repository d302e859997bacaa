# SPDX-License-Identifier: Apache-2.0
# Every Kubernetes object migbench writes passes the Kubernetes API models (python3-kubernetes)
# and the API server's name rules (tests/cli/k8s_validate.py), and the mig-parted configs pass
# mig-parted's format: a plan with a 1g.10gb+me instance (resource nvidia.com/mig-1g.10gb.me, as
# the device plugin names it), a plan under a power limit (which travels into the Jobs, the
# node labels and Slurm's rollout and job scripts), and `k8s submit`'s Indexed Job over an
# experiment's cells, whose results `k8s status` reads as `slurm status` does. No emitted file
# holds a path of this machine (the build or source directory).
. "$MB_SOURCE_DIR/tests/cli/lib.sh"
PY=/usr/bin/python3
V() { "$PY" "$MB_SOURCE_DIR/tests/cli/k8s_validate.py" --forbid "$MB_BINARY_DIR" \
    --forbid "$MB_SOURCE_DIR" "$@"; }
"$PY" -c 'import kubernetes' || { fail "python3-kubernetes is missing (scripts/install-deps.sh --test)"; finish; }

cat >"$TMP/prof.csv" <<'CSV'
workload,gpu,partition,throughput,unit,power_w,idle_power_w,peak_mem_mib,source,proxy,power_limit_w
small,H100-80GB,1g.10gb+me,500,images,120,70,4000,example,false,
small,H100-80GB,1g.10gb+me,450,images,100,70,4000,example,false,300
CSV
cat >"$TMP/jobs.yaml" <<'YAML'
gpu: H100-80GB
count: 1
objective: energy
jobs:
  - {name: a, workload: small, work: 1.0e6}
  - {name: b, workload: small, work: 1.0e6}
workloads:
  small: {command: ["{python}", "{workloads}/vision.py", --model, resnet18], unit: images}
YAML

# +me: the device plugin's resource name, migbench from the image's PATH.
run 0 "$MIGBENCH" plan --jobs "$TMP/jobs.yaml" --profiles "$TMP/prof.csv" --emit-k8s "$TMP/k" \
    --emit-slurm "$TMP/s" --nodes n1
run 0 V "$TMP/k/mig-parted-configmap.yaml" "$TMP/k/jobs.yaml" "$TMP/s/n1/mig-parted.yaml"
grep -q '^              nvidia.com/mig-1g.10gb.me: 1$' "$TMP/k/jobs.yaml" ||
    fail "no nvidia.com/mig-1g.10gb.me request: $(grep nvidia.com "$TMP/k/jobs.yaml")"
grep -q '"1g.10gb+me": 1' "$TMP/k/mig-parted-configmap.yaml" || fail "the layout lacks 1g.10gb+me"
grep -q 'exec migbench measure --json --' "$TMP/k/jobs.yaml" || fail "not migbench on PATH"
grep -q "migbench=\${MIGBENCH:-migbench}" "$TMP/s/n1/rollout.sh" || fail "rollout: migbench path"
grep -q "^j[0-9]*=.*--wrap='migbench measure" "$TMP/s/jobs.sh" || fail "jobs.sh: migbench path"
run 0 "$MIGBENCH" plan --jobs "$TMP/jobs.yaml" --profiles "$TMP/prof.csv" --emit-k8s "$TMP/k2" \
    --nodes n1 --migbench /opt/mb/bin/migbench --image reg.example/mb:2
grep -q 'exec /opt/mb/bin/migbench measure' "$TMP/k2/jobs.yaml" || fail "--migbench not used"
run 0 V "$TMP/k2/jobs.yaml"
# The validator refuses what an API server refuses: the old '+' name, an unknown field, a
# mig-parted entry that is not one.
sed 's/mig-1g.10gb.me: 1/mig-1g.10gb+me: 1/' "$TMP/k/jobs.yaml" >"$TMP/bad1.yaml"
run 1 V "$TMP/bad1.yaml"
expect_out "mig-1g.10gb\+me"
sed 's/^  completionMode: Indexed/  completionMode: Indexed\n  completionz: 1/' "$TMP/k/jobs.yaml" >"$TMP/bad2.yaml"
run 1 V "$TMP/bad2.yaml"
expect_out "field 'completionz' is not part of V1JobSpec"
sed 's/- devices: \[0\]/- devices: some/' "$TMP/s/n1/mig-parted.yaml" >"$TMP/bad3.yaml"
run 1 V "$TMP/bad3.yaml"
expect_out "devices must be 'all' or a list"
run 1 V --forbid /opt/mb "$TMP/k2/jobs.yaml"

# A power limit goes with the plan: Jobs (annotation, env), node labels, rollout, jobs.sh.
run 0 "$MIGBENCH" plan --jobs "$TMP/jobs.yaml" --profiles "$TMP/prof.csv" --power-limits all \
    --emit-k8s "$TMP/kp" --emit-slurm "$TMP/sp" --nodes n1
expect_out '300 W .*<- chosen'
run 0 V "$TMP/kp/mig-parted-configmap.yaml" "$TMP/kp/jobs.yaml" "$TMP/sp/n1/mig-parted.yaml"
grep -q 'migbench/power-limit-w: "300"' "$TMP/kp/jobs.yaml" || fail "k8s Job: no power limit"
grep -A1 'name: MB_PLAN_POWER_LIMIT_W' "$TMP/kp/jobs.yaml" | grep -q 'value: "300"' ||
    fail "k8s container: no power limit"
grep -q 'migbench/power-limit-w=300' "$TMP/kp/label-nodes.sh" || fail "node label: no power limit"
grep -qx 'power_w=300' "$TMP/sp/n1/rollout.sh" || fail "rollout.sh: no power limit"
[ "$(grep -c -- '^j[0-9]*=.*--comment=migbench-power-limit-300W' "$TMP/sp/jobs.sh")" = 2 ] ||
    fail "jobs.sh: every job carries the limit"
bash -n "$TMP/sp/n1/rollout.sh" || fail "rollout.sh is not valid bash"
grep -qx 'power_w=' "$TMP/s/n1/rollout.sh" || fail "no limit: power_w empty"

# k8s submit: the experiment's cells as one Indexed Job with the experiment in a ConfigMap.
FX="$MB_BINARY_DIR/fixtures"
cat >"$TMP/exp.yaml" <<YAML
version: 1
name: K8s_Exp
device: emu:H100-80GB
workloads:
  w: {command: ["$FX/fx_steady", --rate, "50", --duration, "1"], unit: images}
runs:
  - {name: solo, mode: exclusive, jobs: [w]}
measure: {warmup: 100ms, duration: completion, sample_interval: 50ms, repetitions: 2}
YAML
run 2 "$MIGBENCH" k8s submit "$TMP/exp.yaml"
expect_err 'give --emit DIR'
run 0 "$MIGBENCH" k8s submit "$TMP/exp.yaml" --emit "$TMP/e" --image reg.example/mb:2 \
    --pvc results-claim --results /data/k8s-exp --parallelism 1
run 0 V "$TMP/e/job.yaml" --forbid "$TMP"
# The ConfigMap holds the experiment file as written (its fixtures' paths included).
run 0 "$PY" "$MB_SOURCE_DIR/tests/cli/k8s_validate.py" "$TMP/e/experiment.yaml"
"$PY" - "$TMP/e" <<'PY' || fail "k8s submit objects"
import csv, sys, yaml
d = sys.argv[1]
cm = yaml.safe_load(open(f"{d}/experiment.yaml"))
job = yaml.safe_load(open(f"{d}/job.yaml"))
rows = list(csv.DictReader(open(f"{d}/cells.tsv"), delimiter="\t"))
assert [(r["run"], r["repetition"]) for r in rows] == [("solo", "0"), ("solo", "1")], rows
assert cm["data"]["cells.tsv"] == open(f"{d}/cells.tsv").read()
assert "name: K8s_Exp" in cm["data"]["experiment.yaml"]
assert job["metadata"]["name"] == "migbench-k8s-exp" == cm["metadata"]["name"]
s = job["spec"]
assert s["completionMode"] == "Indexed" and s["completions"] == 2 and s["parallelism"] == 1
pod = s["template"]["spec"]
c = pod["containers"][0]
assert c["resources"]["limits"] == {"nvidia.com/gpu": 1}
assert '--cells "$JOB_COMPLETION_INDEX" --results /data/k8s-exp' in c["args"][0], c["args"]
assert c["args"][0].count("migbench run ") == 1
assert pod["volumes"][0]["persistentVolumeClaim"]["claimName"] == "results-claim"
PY
# What each pod does, here: cells.tsv into RESULTS/k8s, then its cell with its own journal.
R="$TMP/res"
mkdir -p "$R/k8s"
cp "$TMP/e/cells.tsv" "$R/k8s/cells.tsv"
run 1 "$MIGBENCH" k8s status "$R"
expect_out $'^0\tsolo\t0\tnot run\t'
expect_err '2 cells: 0 done, 0 failed, 0 running, 0 queued, 0 requeued, 2 not run'
run 0 "$MIGBENCH" run "$TMP/exp.yaml" --cells 1 --results "$R" --journal journal-k8s-1.jsonl
run 1 "$MIGBENCH" k8s status "$R"
expect_out $'^1\tsolo\t1\tdone\t'
expect_err '2 cells: 1 done'
run 0 "$MIGBENCH" run "$TMP/exp.yaml" --cells 0 --results "$R" --journal journal-k8s-0.jsonl
run 0 "$MIGBENCH" k8s status "$R"
expect_err '2 cells: 2 done'
finish
