# SPDX-License-Identifier: Apache-2.0
# The example experiment files (examples/*.yaml): the study files are what make-study.py writes;
# every job's arguments are accepted by its workload script; and, once `migbench run` is in the
# build, each file passes `migbench run --dry-run` on the devices it is written for.
# MB_TEST_TIMEOUT: 900 (one Python process after another; minutes on a loaded 2-core machine)
. "$MB_SOURCE_DIR/tests/cli/lib.sh"
ex=$MB_SOURCE_DIR/examples

py=""
for cand in /usr/bin/python3 $(type -ap python3 || true); do
    if "$cand" -c 'import torch, torchvision, yaml' >/dev/null 2>&1; then
        py=$cand
        break
    fi
done
if [ -z "$py" ]; then
    fail "no python3 that can 'import torch, torchvision, yaml' (tried /usr/bin/python3 and python3 on PATH);" \
        "install python3-torch python3-torchvision python3-yaml (scripts/install-deps.sh)"
    finish
fi

run 0 "$py" "$ex/make-study.py" --check
run 0 "$py" "$MB_SOURCE_DIR/tests/cli/examples_check.py" "$MB_SOURCE_DIR"
cat "$TMP/out"

for spec in "A100-SXM4-80GB study-a100.yaml" "H100-SXM5-80GB study-h100.yaml" "H200-141GB study-h200.yaml"; do
    set -- $spec
    run 0 "$MIGBENCH" run --dry-run --device "emu:$1" --results "$TMP/results" "$ex/$2"
done
# The quickstart is one file for every GPU: its MIG layout names sizes (3g, 4g), resolved per
# model. Every catalog model passes; the A30, which has no 3g, is told why mig-4-3 is skipped.
"$MIGBENCH" layouts --list-gpus | awk '!/^#/ {print $1}' >"$TMP/models"
[ "$(wc -l <"$TMP/models")" -ge 9 ] || fail "layouts --list-gpus listed $(wc -l <"$TMP/models") models"
while read -r model; do
    run 0 "$MIGBENCH" run --dry-run --device "emu:$model:mig=on" --results "$TMP/results" "$ex/quickstart.yaml"
    expect_out "^device: emu:$model:mig=on -> $model \(emulated\)"
    if [ "$model" = A30-24GB ]; then
        expect_out "^note: run 'mig-4-3' skipped: A30-24GB has no 3g \(its sizes: 1g, 1g\+me, 2g, 2g\+me, 4g;"
        grep -q '^layout mig-4-3' "$TMP/out" && fail "A30: mig-4-3 should be skipped"
        expect_out "^note: run 'mps' skipped: A30-24GB has no 3g"
        expect_out '^cells: 2 '
    else
        expect_out "^layout mig-4-3 on $model "
        expect_out '^  resnet18 +3g\.[0-9]+gb \(3g\) +memory slices 4-7 +3 compute slices'
        expect_out '^  gpt2 +4g\.[0-9]+gb \(4g\) +memory slices 0-3 +4 compute slices'
        expect_out '^cells: 4 '
    fi
done <"$TMP/models"
run 0 "$MIGBENCH" run --dry-run --device emu:H200 --results "$TMP/results" "$ex/quickstart.yaml"
expect_out '^  resnet18 +3g\.71gb \(3g\) +memory slices 4-7 '
expect_out '^  gpt2 +4g\.71gb \(4g\) +memory slices 0-3 '
run 0 "$MIGBENCH" run --dry-run --device host --results "$TMP/results" "$ex/quickstart.yaml"
[ ! -e "$TMP/results" ] || fail "--dry-run wrote results"
finish
