#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs the Debian 12 packages migbench needs to build and run its reference workloads
# (and, with --test, to run its tests).
# Only calls apt-get when something is missing. Needs root (or sudo) in that case.
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
# checked against (tests/cli/plan_cbc.sh).
pkgs=(build-essential cmake pkg-config libyaml-dev libcjson-dev python3 python3-torch
      python3-torchvision)
if [ "${1:-}" = "--test" ]; then
    pkgs+=(libcmocka-dev clang-format python3-yaml chromium prometheus tmux man-db clang
           libclang-rt-14-dev slurmctld slurmd slurm-client munge abigail-tools python3-pytest
           python3-setuptools python3-pip python3-venv python3-pandas python3-matplotlib
           python3-kubernetes python3-pulp coinor-cbc)
fi

missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "install-deps: installing ${missing[*]}" >&2
sudo=()
if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "install-deps: need root to install ${missing[*]}" >&2; exit 1; }
    sudo=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq "${missing[@]}"
