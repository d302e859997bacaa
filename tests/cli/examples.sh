# The example experiment files (examples/*.yaml): the study files are what make-study.py writes;
# every job's arguments are accepted by its workload script; and, once `migbench run` is in the
# build, each file passes `migbench run --dry-run` on the devices it is written for.
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

if "$MIGBENCH" run --help >/dev/null 2>&1; then
    for spec in "A100-SXM4-80GB study-a100.yaml" "H100-SXM5-80GB study-h100.yaml" "H200-141GB study-h200.yaml" \
        "A100-SXM4-80GB quickstart.yaml" "H100-SXM5-80GB quickstart.yaml"; do
        set -- $spec
        run 0 "$MIGBENCH" run --dry-run --device "emu:$1" --results "$TMP/results" "$ex/$2"
    done
    run 0 "$MIGBENCH" run --dry-run --device host --results "$TMP/results" "$ex/quickstart.yaml"
    [ ! -e "$TMP/results" ] || fail "--dry-run wrote results"
else
    echo "note: this migbench has no 'run' command yet; the --dry-run checks start once it does"
fi
finish
