#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs the Debian 12 packages migbench needs to build and run its reference workloads
# (and, with --test, to run its tests).
# Only calls apt-get when something is missing. Needs root (or sudo) in that case.
#
# On a fresh machine apt is often busy (unattended-upgrades, apt-daily): before calling apt-get
# it waits for the apt and dpkg locks to be free, says who holds them, and gives up after
# MIGBENCH_APT_LOCK_TIMEOUT seconds (default 900) with a message. MIGBENCH_APT_LOCKS (a
# space-separated list of files) replaces the locks it watches; the tests use it.
set -euo pipefail

# What building and running migbench needs (the quickstart), and with --test what the test suite
# needs too: cmocka, clang-format for the format check, python3-yaml for the examples check,
# prometheus (promtool) for the textfile check, tmux for the monitor test, man-db for the man page
# test, chromium, in which the tests open the HTML report, and clang with its libFuzzer runtime
# (libclang-rt-14-dev) for the fuzz targets (scripts/fuzz.sh), and a real Slurm (slurmctld,
# slurmd, slurm-client, munge) that the slurm tests start on loopback (tests/slurm/slurm-up.sh),
# abigail-tools (abidw/abidiff) for the ABI check (scripts/abi-check.sh) and python3-pytest and
# python3-setuptools, python3-pip and python3-venv for the Python package's tests (python/tests)
# and the offline `pip install ./python`, with python3-pandas and python3-matplotlib so its
# DataFrame and plotting helpers are tested too (they stay optional for users),
# python3-kubernetes, whose API models check the emitted Kubernetes objects
# (tests/cli/k8s_validate.py), and python3-pulp with coinor-cbc, the exact MILP the planner is
# checked against (tests/cli/plan_cbc.sh), and zsh, which runs the zsh completion in
# tests/cli/completion_zsh.sh.
pkgs=(build-essential cmake pkg-config libyaml-dev libcjson-dev python3 python3-torch
      python3-torchvision)
if [ "${1:-}" = "--test" ]; then
    pkgs+=(libcmocka-dev clang-format python3-yaml chromium prometheus tmux man-db clang
           libclang-rt-14-dev slurmctld slurmd slurm-client munge abigail-tools python3-pytest
           python3-setuptools python3-pip python3-venv python3-pandas python3-matplotlib
           python3-kubernetes python3-pulp coinor-cbc zsh)
fi

missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

locks=${MIGBENCH_APT_LOCKS:-/var/lib/dpkg/lock-frontend /var/lib/dpkg/lock /var/lib/apt/lists/lock
/var/cache/apt/archives/lock}
timeout=${MIGBENCH_APT_LOCK_TIMEOUT:-900}
poll=${MIGBENCH_APT_LOCK_POLL:-2}

# lock_holder FILE: prints "PID (command)" of a process holding a POSIX or flock lock on FILE,
# read from /proc/locks (no lsof or fuser on a fresh machine); prints nothing when it is free.
lock_holder() {
    [ -e "$1" ] || return 0
    local dev ino maj min pid
    dev=$(stat -L -c %d "$1") && ino=$(stat -L -c %i "$1") || return 0
    maj=$(( (dev >> 8) & 0xfff ))
    min=$(( (dev & 0xff) | ((dev >> 12) & 0xfff00) ))
    # Lines: "1: POSIX  ADVISORY  WRITE 1234 08:01:131 0 EOF" ("->" marks a blocked waiter).
    pid=$(awk -v id="$(printf '%02x:%02x:%s' "$maj" "$min" "$ino")" \
        '$2 != "->" && $6 == id { print $5; exit }' /proc/locks)
    [ -n "$pid" ] || return 0
    echo "$pid ($(cat "/proc/$pid/comm" 2>/dev/null || echo gone))"
}

# Waits until no watched lock is held, at most $timeout seconds; says what it waits for.
wait_for_apt() {
    local waited=0 said= f who
    while :; do
        who=
        for f in $locks; do
            who=$(lock_holder "$f")
            [ -z "$who" ] || break
        done
        [ -n "$who" ] || break
        if [ "$waited" -ge "$timeout" ]; then
            echo "install-deps: gave up after ${waited} s: $f is still held by process $who;" \
                "wait for it to finish (or set MIGBENCH_APT_LOCK_TIMEOUT) and run again" >&2
            exit 1
        fi
        if [ -z "$said" ]; then
            echo "install-deps: apt is busy: $f is held by process $who (unattended-upgrades" \
                "or apt-daily on a fresh machine); waiting up to ${timeout} s" >&2
            said=1
        fi
        sleep "$poll"
        waited=$((waited + poll))
    done
    [ -z "$said" ] || echo "install-deps: the apt lock is free after ${waited} s; going on" >&2
    # apt itself waits out the rest of the bound should another apt start in between.
    apt_lock_opt=(-o "DPkg::Lock::Timeout=$((timeout > waited ? timeout - waited : 1))")
}

echo "install-deps: installing ${missing[*]}" >&2
sudo=()
if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "install-deps: need root to install ${missing[*]}" >&2; exit 1; }
    sudo=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
apt_lock_opt=()
wait_for_apt
"${sudo[@]}" apt-get "${apt_lock_opt[@]}" update -qq
wait_for_apt
"${sudo[@]}" apt-get "${apt_lock_opt[@]}" install -y -qq "${missing[@]}"
