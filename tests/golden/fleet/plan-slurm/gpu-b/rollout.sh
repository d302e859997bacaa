#!/bin/bash
# Written by migbench plan --emit-slurm: moves node gpu-b to its planned MIG layout.
# Run it on the node as root: it drains the node, waits until no job runs, applies
# mig-parted.yaml, sets the node's Gres= in slurm.conf, restarts slurmctld and
# slurmd, resumes the node and checks what sinfo shows.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
node=gpu-b
gres=gpu:2g.20gb:3,gpu:1g.10gb:1
migbench=${MIGBENCH:-/usr/bin/migbench}
slurm_conf=${SLURM_CONF:-/etc/slurm/slurm.conf}
wait_s=${MB_ROLLOUT_WAIT_S:-3600}

# Site hooks: MB_ROLLOUT_HOOKS may name a bash file that redefines any of these.
apply_layout() {
    "$migbench" mig apply "$here/mig-parted.yaml" -c migbench-plan \
        ${MIGBENCH_DEVICE:+--device "$MIGBENCH_DEVICE"}
}
after_apply() { :; }
restart_slurmctld() { systemctl restart slurmctld; }
restart_slurmd() { systemctl restart slurmd; }
if [ -n "${MB_ROLLOUT_HOOKS:-}" ]; then
    . "$MB_ROLLOUT_HOOKS"
fi

say() { echo "rollout $node: $*" >&2; }
# until_state REGEX: waits (bounded) until the node's state matches.
until_state() {
    local deadline=$((SECONDS + wait_s)) st
    while :; do
        st=$(sinfo -h -N -n "$node" -o %T 2>/dev/null | head -n 1)
        [[ $st =~ ^($1)$ ]] && return 0
        [ "$SECONDS" -lt "$deadline" ] || { say "state '$st' after ${wait_s}s"; return 1; }
        sleep 2
    done
}

say "draining"
scontrol update NodeName="$node" State=DRAIN Reason="migbench MIG layout rollout"
until_state 'drained'
say "applying the layout"
apply_layout
after_apply
# The node's Gres= in slurm.conf (the same file on every node and the controller).
tmp=$(mktemp "$slurm_conf.XXXXXX")
awk -v node="$node" -v gres="$gres" '
    $1 == "NodeName=" node {
        done = 0
        for (i = 2; i <= NF; i++) if ($i ~ /^Gres=/) { $i = "Gres=" gres; done = 1 }
        if (!done) $0 = $0 " Gres=" gres
        found = 1
    }
    { print }
    END { if (!found) exit 3 }' "$slurm_conf" >"$tmp" ||
    { rm -f "$tmp"; say "no NodeName=$node line in $slurm_conf"; exit 1; }
cat "$tmp" >"$slurm_conf"
rm -f "$tmp"
# Slurm 22.05 takes a changed GRES count only from a restarted slurmctld and slurmd.
say "restarting slurmctld and slurmd"
restart_slurmctld
restart_slurmd
until_state 'drained|idle|mixed|allocated'
scontrol update NodeName="$node" State=RESUME
until_state 'idle|mixed|allocated'
have=$(sinfo -h -N -n "$node" -o %G | head -n 1)
IFS=, read -r -a want <<<"$gres"
for g in "${want[@]}"; do
    [[ ",$have," == *",$g"[,\(]* ]] || { say "sinfo shows '$have', not $g"; exit 1; }
done
say "resumed with $have"
