# SPDX-License-Identifier: Apache-2.0
# plan --emit-slurm and --emit-k8s on a two-GPU plan over two nodes: the files per node, the
# node's Gres= line matching its mig-parted config, valid scripts, YAML that parses; refusals.
. "$MB_SOURCE_DIR/tests/cli/lib.sh"
D="$MB_SOURCE_DIR/tests/cli/plan-data"
run 0 "$MIGBENCH" plan --jobs "$D/jobs.yaml" --profiles "$D/profiles.csv" --count 2 \
    --emit-slurm "$TMP/s" --emit-k8s "$TMP/k" --nodes gpu-a,gpu-b --gpus-per-node 1 \
    --image reg.example/migbench:1 --namespace ml
for n in gpu-a gpu-b; do
    for f in mig-parted.yaml gres.conf slurm-node.conf rollout.sh; do
        [ -s "$TMP/s/$n/$f" ] || fail "no $n/$f"
    done
    bash -n "$TMP/s/$n/rollout.sh" || fail "$n/rollout.sh is not valid bash"
    # The node's mig-parted config is one `migbench mig apply` accepts, and its instances are
    # the node's Gres= line.
    run 0 "$MIGBENCH" mig apply "$TMP/s/$n/mig-parted.yaml" --dry-run \
        --device "emu:H100-80GB:mig=on,state=$TMP/$n.json"
    python3 - "$TMP/s/$n" "$n" <<'PY' || fail "$n: Gres= vs mig-parted.yaml"
import sys, yaml
d, node = sys.argv[1], sys.argv[2]
cfg = yaml.safe_load(open(f"{d}/mig-parted.yaml"))["mig-configs"]["migbench-plan"]
want = {}
for e in cfg:
    for p, n in (e.get("mig-devices") or {}).items():
        want[p] = want.get(p, 0) + n * len(e["devices"])
line = open(f"{d}/slurm-node.conf").read().strip()
assert line.startswith(f"NodeName={node} Gres="), line
got = {}
for g in line.split("Gres=", 1)[1].split(","):
    _, t, n = g.split(":")
    got[t] = int(n)
assert got == want, (got, want)
PY
done
bash -n "$TMP/s/jobs.sh" || fail "jobs.sh is not valid bash"
[ "$(grep -c '^j[0-9]*=$(sbatch --parsable --nodelist=gpu-[ab] --gres=gpu:' "$TMP/s/jobs.sh")" = 6 ] ||
    fail "jobs.sh: one sbatch per planned job (6)"
for f in mig-parted-configmap.yaml label-nodes.sh jobs.yaml; do
    [ -s "$TMP/k/$f" ] || fail "no k8s $f"
done
bash -n "$TMP/k/label-nodes.sh" || fail "label-nodes.sh is not valid bash"
python3 - "$TMP/k" <<'PY' || fail "k8s YAML"
import sys, yaml
d = sys.argv[1]
cm = yaml.safe_load(open(f"{d}/mig-parted-configmap.yaml"))
cfg = yaml.safe_load(cm["data"]["config.yaml"])
assert set(cfg["mig-configs"]) == {"migbench-gpu-a", "migbench-gpu-b"}, cfg
jobs = [j for j in yaml.safe_load_all(open(f"{d}/jobs.yaml")) if j]
assert sum(j["spec"]["completions"] for j in jobs) == 6, jobs
for j in jobs:
    assert j["spec"]["completionMode"] == "Indexed" and j["metadata"]["namespace"] == "ml"
    c = j["spec"]["template"]["spec"]["containers"][0]
    assert c["image"] == "reg.example/migbench:1"
    (res,) = c["resources"]["limits"]
    assert res.startswith("nvidia.com/mig-") or res == "nvidia.com/gpu", res
PY

# Refused: too few nodes for the GPUs, and emitters with --pareto.
run 2 "$MIGBENCH" plan --jobs "$D/jobs.yaml" --profiles "$D/profiles.csv" --count 2 \
    --emit-slurm "$TMP/x" --nodes only-one --gpus-per-node 1
expect_err '2 nodes needed, 1 named'
run 2 "$MIGBENCH" plan --jobs "$D/jobs.yaml" --profiles "$D/profiles.csv" --pareto \
    --emit-k8s "$TMP/y"
finish
