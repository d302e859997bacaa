#!/usr/bin/env bash
# Installs the Debian 12 packages migbench needs to build, test and run its reference workloads.
# Only calls apt-get when something is missing. Needs root (or sudo) in that case.
set -euo pipefail

# chromium: the test suite opens the HTML report in headless Chromium (tests/cli/report_chromium.sh),
# so it is a test dependency like cmocka, installed unconditionally.
pkgs=(build-essential cmake pkg-config libyaml-dev libcjson-dev libcmocka-dev
      python3 python3-torch python3-torchvision python3-yaml clang-format chromium)

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
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
