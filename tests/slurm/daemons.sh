# SPDX-License-Identifier: Apache-2.0
# Sourced by slurm-up.sh, slurm-down.sh and the tests' rollout hooks: start and stop the test
# cluster's daemons, each recorded by PID in DIR/pids ("name pid" per line).

# mb_slurm_start DIR NAME CMD...: runs CMD (a daemon kept in the foreground) in the background,
# its output in DIR/log/NAME.out, and records its PID.
mb_slurm_start() {
    local dir=$1 name=$2
    shift 2
    "$@" >>"$dir/log/$name.out" 2>&1 </dev/null &
    echo "$name $!" >>"$dir/pids"
}

# mb_slurm_alive PID NAME: the process exists, is not a zombie, and its command line still
# names the daemon (so a reused PID is never taken for it).
mb_slurm_alive() {
    [ -r "/proc/$1/cmdline" ] || return 1
    local state
    state=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 1
    [ "$state" != Z ] || return 1
    { tr '\0' ' ' <"/proc/$1/cmdline"; } 2>/dev/null | grep -q -- "$2"
}

# mb_slurm_stop DIR NAME: SIGTERM to each recorded PID of NAME, SIGKILL after a bounded wait;
# its lines leave DIR/pids.
mb_slurm_stop() {
    local dir=$1 name=$2 pid n
    [ -f "$dir/pids" ] || return 0
    for pid in $(awk -v n="$name" '$1 == n { print $2 }' "$dir/pids"); do
        mb_slurm_alive "$pid" "$name" || continue
        kill -TERM "$pid" 2>/dev/null || continue
        for ((n = 0; n < 100; n++)); do
            mb_slurm_alive "$pid" "$name" || break
            sleep 0.1
        done
        if mb_slurm_alive "$pid" "$name"; then
            echo "slurm: $name ($pid) ignored SIGTERM; killing it" >&2
            kill -KILL "$pid" 2>/dev/null || true
        fi
    done
    awk -v n="$name" '$1 != n' "$dir/pids" >"$dir/pids.new" && mv "$dir/pids.new" "$dir/pids"
}

# mb_slurm_until_ok DIR SECONDS CMD...: polls CMD until it succeeds (waiting on a daemon).
mb_slurm_until_ok() {
    local dir=$1 deadline=$((SECONDS + $2))
    shift 2
    until "$@" >/dev/null 2>&1; do
        if [ "$SECONDS" -ge "$deadline" ]; then
            echo "slurm: timed out waiting for: $*" >&2
            tail -n 20 "$dir"/log/*.out "$dir"/log/*.log >&2 2>/dev/null || true
            return 1
        fi
        sleep 0.2
    done
}

# mb_slurm_start_ctld DIR / mb_slurm_start_slurmd DIR: start one and wait until it answers.
mb_slurm_start_ctld() {
    mb_slurm_start "$1" slurmctld slurmctld -D -i
    mb_slurm_until_ok "$1" 30 scontrol ping
}
mb_slurm_node_up() {
    [[ $(sinfo -h -N -n localhost -o %T) =~ ^(idle|drained|draining|mixed|allocated)$ ]]
}
mb_slurm_start_slurmd() {
    mb_slurm_start "$1" slurmd slurmd -D -N localhost
    mb_slurm_until_ok "$1" 60 mb_slurm_node_up
}

# mb_slurm_fake_gpus DIR DEVICE: fake_gpus.conf and the node's Gres= from the device's MIG
# instances now, with a character device node per device (Slurm stats each one).
mb_slurm_fake_gpus() {
    local dir=$1 device=$2 i
    "$MIGBENCH" slurm gres --device "$device" --node localhost --cpus 1 --fake \
        --dev-prefix "$dir/dev/gpu" --out "$dir/etc" >"$dir/log/gres.out" || return 1
    mkdir -p "$dir/dev"
    # Nodes of the experimental major 240 in DIR: stat'ed by Slurm, never opened.
    for ((i = 0; i < $(wc -l <"$dir/log/gres.out"); i++)); do
        [ -e "$dir/dev/gpu$i" ] || mknod "$dir/dev/gpu$i" c 240 "$i" || return 1
    done
}
