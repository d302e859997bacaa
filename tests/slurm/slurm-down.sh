#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Stops the daemons slurm-up.sh DIR started, by the PIDs it recorded (newest first): SIGTERM,
# then SIGKILL for any still there after a bounded wait. A PID is signalled only while its
# command line still names the daemon, so a reused PID is never hit. Safe to run twice.
set -u
dir=${1:?usage: slurm-down.sh DIR}
[ -f "$dir/pids" ] || exit 0
# alive PID NAME: the process exists, is not a zombie, and is still that daemon.
alive() {
    [ -r "/proc/$1/cmdline" ] || return 1
    local state
    state=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 1
    [ "$state" != Z ] || return 1
    tr '\0' ' ' <"/proc/$1/cmdline" | grep -q -- "$2"
}
tac "$dir/pids" | while read -r name pid; do
    [ -n "$pid" ] || continue
    alive "$pid" "$name" || continue
    kill -TERM "$pid" 2>/dev/null || continue
    for _ in $(seq 1 100); do
        alive "$pid" "$name" || break
        sleep 0.1
    done
    if alive "$pid" "$name"; then
        echo "slurm-down: $name ($pid) ignored SIGTERM; killing it" >&2
        kill -KILL "$pid" 2>/dev/null || true
    fi
done
# Job steps slurmd started (slurmstepd) outlive it briefly; stop the ones of this cluster.
for p in $(pgrep -x slurmstepd 2>/dev/null); do
    if { tr '\0' '\n' <"/proc/$p/environ"; } 2>/dev/null | grep -qx "SLURM_CONF=$dir/etc/slurm.conf"; then
        kill -TERM "$p" 2>/dev/null || true
    fi
done
: >"$dir/pids"
exit 0
