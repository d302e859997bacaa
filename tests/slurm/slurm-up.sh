#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Starts a one-node Slurm (munged, slurmctld, slurmd) as root from DIR, without systemd, on free
# loopback ports. The node's GPUs are migbench's emulated GPU: its MIG instances (made from
# MB_SLURM_LAYOUT with `migbench mig apply`) become the node's GRES through the fake_gpus.conf
# that `migbench slurm gres --fake` writes, so a job asking --gres=gpu:1g.10gb:1 gets
# CUDA_VISIBLE_DEVICES=MIG-<uuid> as on a real node.
#
#   slurm-up.sh DIR      MIGBENCH=path/to/migbench; optional MB_SLURM_DEVICE (emu spec with a
#                        state file; default emu:H100-80GB:mig=on,state=DIR/gpu.json) and
#                        MB_SLURM_LAYOUT (a mig-parted file with one config)
#
# Writes DIR/etc/{slurm.conf,gres.conf,fake_gpus.conf}, DIR/env (source it: SLURM_CONF,
# MB_SLURM_DEVICE) and DIR/pids ("name pid" per daemon). slurm-down.sh DIR stops every daemon by
# PID; so does this script when it fails part-way. Exit status 77: Slurm is not installed or we
# are not root (the callers skip).
set -euo pipefail
dir=${1:?usage: slurm-up.sh DIR}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/daemons.sh"
: "${MIGBENCH:?MIGBENCH must point at the migbench binary}"
for tool in munged mungekey slurmctld slurmd sinfo scontrol sbatch srun; do
    command -v "$tool" >/dev/null || { echo "slurm-up: $tool not installed" >&2; exit 77; }
done
[ "$(id -u)" = 0 ] || { echo "slurm-up: must run as root (slurmd starts jobs as their user)" >&2; exit 77; }

mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
mkdir -p "$dir/etc" "$dir/state" "$dir/spool" "$dir/log"
: >"$dir/pids"
trap 'rc=$?; [ $rc = 0 ] || "$here/slurm-down.sh" "$dir"; exit $rc' EXIT

device=${MB_SLURM_DEVICE:-emu:H100-80GB:mig=on,state=$dir/gpu.json}
layout=${MB_SLURM_LAYOUT:-$dir/layout.yaml}
if [ -z "${MB_SLURM_LAYOUT:-}" ]; then
    cat >"$layout" <<'YAML'
version: v1
mig-configs:
  slurm-test:
    - devices: all
      mig-enabled: true
      mig-devices:
        "3g.40gb": 1
        "1g.10gb": 2
YAML
fi
"$MIGBENCH" mig apply "$layout" --device "$device" >"$dir/log/mig-apply.out" 2>&1 ||
    { cat "$dir/log/mig-apply.out" >&2; exit 1; }
mb_slurm_fake_gpus "$dir" "$device"

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
ctld_port=$(free_port)
slurmd_port=$(free_port)
[ "$ctld_port" != "$slurmd_port" ] || slurmd_port=$(free_port)

cat >"$dir/etc/slurm.conf" <<EOF2
# A one-node test cluster made by tests/slurm/slurm-up.sh.
ClusterName=migbench
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge.sock
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
ReturnToService=2
SchedulerParameters=sched_interval=1
MinJobAge=300
KillWait=5
$(cat "$dir/etc/slurm-node.conf") NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=1000 State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
EOF2

cat >"$dir/env" <<EOF2
export SLURM_CONF='$dir/etc/slurm.conf'
export MB_SLURM_DEVICE='$device'
EOF2
export SLURM_CONF="$dir/etc/slurm.conf"
node_idle() { [ "$(sinfo -h -N -n localhost -o %T)" = idle ]; }

mungekey --create --keyfile="$dir/munge.key"
chmod 0400 "$dir/munge.key"
mb_slurm_start "$dir" munged munged -F -f --socket="$dir/munge.sock" --key-file="$dir/munge.key" \
    --pid-file="$dir/munged.pid" --log-file="$dir/log/munged.log" --seed-file="$dir/munged.seed"
mb_slurm_until_ok "$dir" 20 test -S "$dir/munge.sock"
mb_slurm_start_ctld "$dir"
mb_slurm_start_slurmd "$dir"
mb_slurm_until_ok "$dir" 60 node_idle
echo "slurm-up: node idle: $(sinfo -h -N -o '%N %T %G')" >&2
