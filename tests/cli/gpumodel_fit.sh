# SPDX-License-Identifier: Apache-2.0
# data/gpumodel.json's fitted parameters and docs/devices.md's fidelity table are what
# scripts/gpumodel-fit.py writes from the shipped measurements (a refit changes neither).
. "$MB_SOURCE_DIR/tests/cli/lib.sh"
run 0 python3 "$MB_SOURCE_DIR/scripts/gpumodel-fit.py" --check
finish
