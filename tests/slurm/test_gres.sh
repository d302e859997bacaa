# SPDX-License-Identifier: Apache-2.0
# A real slurmctld and slurmd whose node's GPUs are migbench's emulated GPU: jobs get its MIG
# instances as CUDA_VISIBLE_DEVICES=MIG-<uuid>, and `migbench measure` inside the job resolves
# that UUID to the parent GPU and the instance.
. "$MB_SOURCE_DIR/tests/slurm/lib.sh"
slurm_up

run 0 sinfo -h -N -o '%N %T %G'
expect_out '^localhost idle gpu:3g\.40gb:1[^,]*,gpu:1g\.10gb:2'

U3=$(uuids_of 3g.40gb)
U1=$(uuids_of 1g.10gb | tr '\n' ' ')
[ -n "$U3" ] && [ -n "$U1" ] || fail "no MIG UUIDs from migbench slurm gres"

run 0 timeout 60 srun --gres=gpu:3g.40gb:1 printenv CUDA_VISIBLE_DEVICES
expect_out "^$U3\$"
run 0 timeout 60 srun --gres=gpu:1g.10gb:2 printenv CUDA_VISIBLE_DEVICES
got=$(tr ',' '\n' <"$TMP/out" | sort | tr '\n' ' ')
want=$(printf '%s\n' $U1 | sort | tr '\n' ' ')
[ "$got" = "$want" ] || fail "gpu:1g.10gb:2 gave '$got', expected '$want'"

# measure inside the job meters the parent GPU and names the job's instance.
run 0 timeout 60 srun --gres=gpu:3g.40gb:1 "$MIGBENCH" measure --json --device "$MB_SLURM_DEVICE" -- true
$PY - "$TMP/out" "$U3" <<'PYEOF' || fail "measure inside the job"
import json, sys
d = json.load(open(sys.argv[1]))
v = d["visible"]
assert v and v["mig_instance"]["profile"] == "3g.40gb", v
assert v["mig_instance"]["uuid"] == sys.argv[2], v
assert v["gpu_uuid"] == d["device"]["uuid"], (v, d["device"])
PYEOF
finish
