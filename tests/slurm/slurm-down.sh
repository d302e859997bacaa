#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Stops the daemons slurm-up.sh DIR started, by the PIDs it recorded (slurmd, slurmctld, munged):
# SIGTERM, then SIGKILL for any still there after a bounded wait. Safe to run twice.
set -u
dir=${1:?usage: slurm-down.sh DIR}
[ -f "$dir/pids" ] || exit 0
. "$(dirname "$0")/daemons.sh"
# Job steps outlive slurmd briefly: stop the ones of this cluster (by its SLURM_CONF).
for p in $(pgrep -x slurmstepd 2>/dev/null); do
    if { tr '\0' '\n' <"/proc/$p/environ"; } 2>/dev/null |
        grep -qx "SLURM_CONF=$dir/etc/slurm.conf"; then
        kill -TERM "$p" 2>/dev/null || true
    fi
done
for name in slurmd slurmctld munged; do
    mb_slurm_stop "$dir" "$name"
done
exit 0
