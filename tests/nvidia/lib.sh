# SPDX-License-Identifier: Apache-2.0
# Shared by tests/nvidia/test_*.sh: the CLI helpers, and the artefacts or a skip (77), which
# becomes a failure where MB_REQUIRE_NVIDIA=1 (.ci/run).
. "$MB_SOURCE_DIR/tests/cli/lib.sh"
NV_ROOT=${MB_NVIDIA_DIR:-}
NV_LIB="$NV_ROOT/usr/lib/x86_64-linux-gnu/nvidia/current/libnvidia-ml.so.1"
NV_MPS="$NV_ROOT/usr/bin/nvidia-cuda-mps-control"

nv_unavailable() {
    if [ "${MB_REQUIRE_NVIDIA:-0}" = 1 ]; then
        echo "FAIL: $* (MB_REQUIRE_NVIDIA=1: run scripts/nvidia-artefacts.sh and configure with" \
            "MB_NVIDIA_ARTEFACTS set)" >&2
        exit 1
    fi
    echo "SKIP: $* (scripts/nvidia-artefacts.sh fetches NVIDIA's artefacts; then reconfigure" \
        "with MB_NVIDIA_ARTEFACTS=<its output>)" >&2
    exit 77
}

[ -n "$NV_ROOT" ] || nv_unavailable "MB_NVIDIA_DIR is not set"
[ -d "$NV_ROOT" ] || nv_unavailable "$NV_ROOT does not exist"
