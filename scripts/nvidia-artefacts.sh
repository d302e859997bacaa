#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Fetches NVIDIA's own artefacts from Debian 12's non-free component into a private cache, for
# the checks that use them as the oracle (tests/nvidia/, docs/nvml.md): NVIDIA's nvml.h
# (libnvidia-ml-dev), the real libnvidia-ml.so.1 (libnvidia-ml1) and the real MPS control
# daemon and server (nvidia-cuda-mps).
#
# Nothing system-wide changes: apt runs with its own sources list, lists and archive directories
# under the cache (-o Dir::Etc::sourcelist=... -o Dir::Etc::sourceparts=- ...), `apt-get download`
# only fetches .deb files, and `dpkg-deb -x` unpacks them into CACHE/root. The machine's apt
# sources, package database and /usr are never touched.
#
# Usage: scripts/nvidia-artefacts.sh [CACHE_DIR]
#   CACHE_DIR defaults to ${XDG_CACHE_HOME:-$HOME/.cache}/migbench/nvidia.
# Prints the unpacked root on stdout (the value for MB_NVIDIA_ARTEFACTS); everything else goes
# to stderr. Exits 0 when the root holds nvml.h, libnvidia-ml.so.1 and nvidia-cuda-mps-control
# (already there or freshly fetched), 1 otherwise.
set -euo pipefail

cache=${1:-${XDG_CACHE_HOME:-$HOME/.cache}/migbench/nvidia}
root="$cache/root"
pkgs=(libnvidia-ml-dev libnvidia-ml1 nvidia-cuda-mps)
suite=bookworm
mirror=${MB_DEBIAN_MIRROR:-http://deb.debian.org/debian}

complete() {
    [ -r "$root/usr/include/nvml.h" ] &&
        [ -r "$root/usr/lib/x86_64-linux-gnu/nvidia/current/libnvidia-ml.so.1" ] &&
        [ -x "$root/usr/bin/nvidia-cuda-mps-control" ]
}

if complete; then
    echo "$root"
    exit 0
fi
[ "$(dpkg --print-architecture 2>/dev/null)" = amd64 ] || {
    echo "nvidia-artefacts: only amd64 is fetched (this is $(dpkg --print-architecture))" >&2
    exit 1
}

mkdir -p "$cache/apt/lists/partial" "$cache/apt/archives/partial" "$cache/debs"
cat >"$cache/apt/sources.list" <<LIST
deb $mirror $suite main non-free non-free-firmware
deb $mirror $suite-updates main non-free non-free-firmware
LIST
apt_opts=(
    -o "Dir::Etc::sourcelist=$cache/apt/sources.list"
    -o "Dir::Etc::sourceparts=-"
    -o "Dir::State::Lists=$cache/apt/lists"
    -o "Dir::Cache::archives=$cache/apt/archives"
    -o "Dir::Cache::pkgcache="
    -o "Dir::Cache::srcpkgcache="
    -o "APT::Sandbox::User=root"
)
echo "nvidia-artefacts: apt-get update (private lists in $cache/apt)" >&2
apt-get "${apt_opts[@]}" -q update >&2
# apt-get download writes into the current directory.
(cd "$cache/debs" && apt-get "${apt_opts[@]}" -q download "${pkgs[@]}" >&2)
rm -rf "$root.new"
mkdir -p "$root.new"
for deb in "$cache"/debs/*.deb; do
    dpkg-deb -x "$deb" "$root.new"
done
rm -rf "$root"
mv "$root.new" "$root"
# Versions, for the logs of whoever runs the checks.
for deb in "$cache"/debs/*.deb; do
    dpkg-deb -f "$deb" Package Version | paste -sd' ' >&2
done
complete || {
    echo "nvidia-artefacts: $root lacks nvml.h, libnvidia-ml.so.1 or nvidia-cuda-mps-control" >&2
    exit 1
}
echo "$root"
