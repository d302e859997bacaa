# SPDX-License-Identifier: Apache-2.0
# `migbench plan --emit-slurm` on a one-node fleet: the emitted rollout script drains the node,
# applies the planned layout to its (emulated) GPU, changes the node's GRES as sinfo shows,
# resumes it; a job asking for a planned type gets the new instance's MIG UUID, which
# `migbench measure` inside the job resolves to that instance. A node an admin drained is left
# drained with the admin's reason (refused; forced, rolled out and left drained); a second run
# changes nothing; a job queued for a GRES type the rollout removed is named.
. "$MB_SOURCE_DIR/tests/slurm/lib.sh"
. "$MB_SOURCE_DIR/tests/slurm/daemons.sh"
slurm_up
before=$(sinfo -h -N -o %G)

cat >"$TMP/jobs.yaml" <<'YAML'
gpu: H100-80GB
count: 1
objective: energy
jobs:
  - {name: xl, workload: gpt2-xl-ft, work: 3.0e7}
  - {name: r1, workload: resnet50, work: 5.0e6}
  - {name: r2, workload: resnet50, work: 5.0e6}
  - {name: d1, workload: densenet121, work: 2.0e6}
workloads:
  resnet50: {command: ["{python}", "{workloads}/vision.py", --model, resnet50], unit: images}
  densenet121: {command: ["{python}", "{workloads}/vision.py", --model, densenet121], unit: images}
  gpt2-xl-ft: {command: ["{python}", "{workloads}/gpt.py", --size, xl, --finetune], unit: tokens}
YAML
run 0 "$MIGBENCH" plan --jobs "$TMP/jobs.yaml" --profiles "$MB_SOURCE_DIR/tests/cli/plan-data/profiles.csv" \
    --emit-slurm "$TMP/plan" --nodes localhost
N="$TMP/plan/localhost"
for f in mig-parted.yaml gres.conf slurm-node.conf rollout.sh; do
    [ -s "$N/$f" ] || fail "no $f for node localhost"
done
[ -s "$TMP/plan/jobs.sh" ] || fail "no jobs.sh"
planned=$(sed -n 's/^NodeName=localhost Gres=//p' "$N/slurm-node.conf")
[ -n "$planned" ] || fail "no Gres= in slurm-node.conf"

# The test cluster's own ways to restart its daemons and describe its emulated GPU.
cat >"$TMP/hooks.sh" <<EOF2
. '$MB_SOURCE_DIR/tests/slurm/daemons.sh'
after_apply() { mb_slurm_fake_gpus '$SLURM_DIR' "\$MIGBENCH_DEVICE"; }
restart_slurmctld() { mb_slurm_stop '$SLURM_DIR' slurmctld; mb_slurm_start_ctld '$SLURM_DIR'; }
restart_slurmd() { mb_slurm_stop '$SLURM_DIR' slurmd; mb_slurm_start_slurmd '$SLURM_DIR'; }
EOF2
rollout() {
    MIGBENCH="$MIGBENCH" MIGBENCH_DEVICE="$MB_SLURM_DEVICE" MB_ROLLOUT_HOOKS="$TMP/hooks.sh" \
        MB_ROLLOUT_WAIT_S=120 run "$@" bash "$N/rollout.sh"
}
reason() { sinfo -h -N -n localhost -o %E; }
# A job queued for a type the plan removes (held, so that it stays queued).
gone=""
for t in $(echo "$before" | sed 's/([^)]*)//g' | tr ',' '\n' | cut -d: -f2); do
    case ",$planned," in *",gpu:$t:"*) ;; *) gone=$t && break ;; esac
done
[ -n "$gone" ] || fail "the plan removes no type (before: $before, plan: $planned)"
HELD=$(sbatch --parsable --hold --gres=gpu:"$gone":1 --wrap true)

# An admin's drain: the rollout refuses to touch the node, which keeps its state and reason.
run 0 scontrol update NodeName=localhost State=DRAIN Reason=admin-hw-check
rollout 3
expect_err 'is drained \(admin-hw-check\), not by a rollout: left alone'
[ "$(reason)" = admin-hw-check ] || fail "reason now '$(reason)'"
[ "$(sinfo -h -N -o %G)" = "$before" ] || fail "a refused rollout changed the GRES"
run 0 scontrol update NodeName=localhost State=RESUME

rollout 0
expect_err 'rollout localhost: resumed with'
expect_err "rollout localhost: job $HELD waits for gpu:$gone, which no node offers now"

run 0 sinfo -h -N -o '%T %G'
expect_out '^idle '
got=$(sed 's/(S:[^)]*)//g; s/^idle //' "$TMP/out")
[ "$got" = "$planned" ] || fail "sinfo shows '$got', the plan '$planned' (before: $before)"
[ "$got" != "$(echo "$before" | sed 's/(S:[^)]*)//g')" ] || fail "the GRES did not change"
# Run again: nothing to do, and the queued job is named again.
rollout 0
expect_err 'already has the planned GRES .*: nothing to do'
expect_err "job $HELD waits for gpu:$gone"

# A job on a planned type the node did not have before gets the new instance, and measure
# inside the job resolves it.
type=""
for t in $(sed -n 's/.*--gres=gpu:\([^:]*\):1.*/\1/p' "$TMP/plan/jobs.sh"); do
    case $before in *"gpu:$t:"*) ;; *) type=$t && break ;; esac
done
[ -n "$type" ] || fail "jobs.sh plans no job on a type the node did not have (before: $before)"
uuids=$(uuids_of "$type")
run 0 timeout 60 srun --gres=gpu:"$type":1 "$MIGBENCH" measure --json --device "$MB_SLURM_DEVICE" -- true
$PY - "$TMP/out" "$type" "$uuids" <<'PYEOF' || fail "measure inside the job on $type"
import json, sys
d = json.load(open(sys.argv[1]))
m = d["visible"]["mig_instance"]
assert m["profile"] == sys.argv[2], m
assert m["uuid"] in sys.argv[3].split(), (m, sys.argv[3])
PYEOF

# Forced on an admin's drain: rolled out again, and left drained with the admin's reason.
run 0 scontrol update NodeName=localhost State=DRAIN Reason=admin-hw-check
export MB_ROLLOUT_FORCE=1
rollout 0
unset MB_ROLLOUT_FORCE
expect_err 'forced; the node stays drained with that reason'
expect_err 'left drained \(admin-hw-check\) with'
[ "$(reason)" = admin-hw-check ] || fail "forced rollout: reason now '$(reason)'"
[[ $(sinfo -h -N -n localhost -o %T) == drain* ]] || fail "forced rollout resumed the node"
finish
