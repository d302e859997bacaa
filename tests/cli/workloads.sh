# SPDX-License-Identifier: Apache-2.0
# The reference workloads (workloads/*.py): published parameter counts, a few real training steps
# per workload on the CPU with a real progress pipe, SIGTERM, closed pipes, bad arguments,
# checkpoints and fine-tuning. The checks themselves are in workloads_harness.py.
# MB_TEST_TIMEOUT: 900 (one Python process after another; minutes on a loaded 2-core machine)
. "$MB_SOURCE_DIR/tests/cli/lib.sh"

# Debian's /usr/bin/python3 has python3-torch; the python3 first on PATH may be another one.
py=""
for cand in /usr/bin/python3 $(type -ap python3 || true); do
    if "$cand" -c 'import torch, torchvision' >/dev/null 2>&1; then
        py=$cand
        break
    fi
done
if [ -z "$py" ]; then
    fail "no python3 that can 'import torch, torchvision' (tried /usr/bin/python3 and python3 on PATH);" \
        "install python3-torch python3-torchvision (scripts/install-deps.sh)"
    finish
fi
echo "using $py"

run 0 "$py" "$MB_SOURCE_DIR/tests/cli/workloads_harness.py" "$MB_SOURCE_DIR/workloads"
cat "$TMP/out"
finish
